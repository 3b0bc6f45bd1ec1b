//! The conformance suite every [`Store`] must pass (feature `testing`).
//!
//! ```ignore
//! licensing_core::store_test_suite!(
//!     runner: licensing_core::store::testing::ThreadRunner,
//!     store: async { MyStore::open_temporary().await },
//! );
//! ```
//!
//! expands to one `#[test]` per case. `runner` is anything implementing [`BlockOn`]; it is also
//! used from several threads at once by the concurrency case. An optional third argument,
//! `available: <bool expression>`, lets a suite of a store that needs an outside server return
//! early where none can be had (the expression says why, once).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::*;
use crate::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, LicenseListQuery, ProductListQuery,
    ReleaseListQuery,
};
use crate::crypto::{ApiKeySecret, PlainTeamKeys, StoredTeamKeys};
use crate::model::{
    Address, BlacklistType, ExpirationStart, ExpirationType, MetadataItem, OutboxMessage,
    ReleaseFile, ReleaseStatus, RequestType,
};
use crate::validate::{BranchName, Email, Version};
use crate::verify::RecordChange;
use crate::{FileId, MessageId, UserId};

/// Runs a future to completion on the current thread.
pub trait BlockOn: Sync {
    /// Drives `f` to its output.
    fn block_on<F: Future>(&self, f: F) -> F::Output;
}

/// A minimal executor that parks the thread between polls; enough for stores that do not need
/// a runtime of their own.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadRunner;

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

impl BlockOn for ThreadRunner {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        let mut f = pin!(f);
        let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
            std::thread::park();
        }
    }
}

/// Expands to the whole suite as `#[test]` functions.
#[macro_export]
macro_rules! store_test_suite {
    (runner: $runner:expr, store: $make:expr $(,)?) => {
        $crate::store_test_suite!(runner: $runner, store: $make, available: true);
    };
    (runner: $runner:expr, store: $make:expr, available: $available:expr $(,)?) => {
        $crate::store_test_suite!(@async $runner, $make, $available;
            teams_are_created_read_listed_and_updated,
            api_keys_are_found_by_hash_and_revoked_within_their_team,
            licenses_are_created_and_read_by_id_and_key,
            license_keys_are_unique_within_a_team_only,
            a_key_read_before_names_only_its_license_afterwards,
            license_references_must_exist_in_the_same_team,
            license_updates_replace_and_deletes_cascade,
            license_lists_filter_sort_and_page,
            customers_are_searched_updated_and_detached_on_delete,
            products_delete_with_their_releases_and_branches,
            branches_have_unique_names_and_delete_their_releases,
            releases_check_references_versions_and_the_latest_rule,
            release_lists_filter_sort_and_page,
            device_lists_hide_forgotten_records_unless_asked,
            activity_records_devices_and_ips_within_limits,
            activity_after_the_first_read_is_the_same_atomic_step,
            activity_starts_the_activation_clock_once,
            activity_drops_the_least_recently_seen_records_at_the_cap,
            activity_never_drops_counted_records_and_refuses_at_the_cap,
            activity_without_a_required_hardware_identifier_records_no_device,
            forgetting_by_id_finds_the_record_among_many,
            usage_records_are_restored_as_they_are,
            session_keys_are_taken_once_per_team_within_the_window,
            product_and_release_lists_keep_to_a_product_restriction,
            blacklist_entries_are_unique_and_count_hits,
            statistics_buckets_merge_and_overview_counts,
            license_mail_is_queued_with_the_license_and_limited_per_day,
            outbox_messages_are_rescheduled_and_removed,
            audit_entries_are_written_with_their_change_only,
            audit_lists_filter_order_page_and_prune,
            audit_entries_are_restored_as_they_are,
            webhook_events_fan_out_into_ordered_deliveries,
            client_events_are_written_with_their_records_and_raised_once,
            nothing_crosses_team_boundaries,
            staff_accounts_have_addresses_unique_in_their_team_and_sessions_end_with_them,
        );
        #[test]
        fn concurrent_new_devices_never_exceed_the_limit() {
            if !$available {
                return;
            }
            let runner = $runner;
            let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
            $crate::store::testing::concurrent_new_devices_never_exceed_the_limit(&store, &runner);
        }
    };
    (@async $runner:expr, $make:expr, $available:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                let runner = $runner;
                let store = $crate::store::testing::BlockOn::block_on(&runner, $make);
                $crate::store::testing::BlockOn::block_on(&runner, $crate::store::testing::$name(&store));
            }
        )*
    };
}

// ---- fixtures ----

fn t0() -> Timestamp {
    Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
}

fn at(minutes: u32) -> Timestamp {
    t0().plus_minutes(minutes)
}

/// A team with placeholder keys (stores do not parse them) and its first API key.
pub async fn team<S: Store>(store: &S, name: &str) -> Team {
    let team = Team {
        id: TeamId::new(),
        name: name.into(),
        settings: TeamSettings::default(),
        features: TeamFeatures::default(),
        keys: StoredTeamKeys::Plain(PlainTeamKeys {
            rsa_private_pem: "placeholder".into(),
            ed25519_seed: "placeholder".into(),
        }),
        created_at: t0(),
        updated_at: t0(),
    };
    let key = api_key(team.id, "first");
    store
        .create_team(&team, &key, &Journal::NONE)
        .await
        .unwrap();
    team
}

fn api_key(team: TeamId, name: &str) -> ApiKeyRecord {
    ApiKeyRecord {
        id: ApiKeyId::new(),
        team_id: team,
        name: name.into(),
        hash: ApiKeySecret::generate().hash(),
        expires_at: None,
        created_at: t0(),
        scopes: crate::model::Scopes::All,
        product_ids: None,
        created_by_user_id: Some(crate::UserId::ADMIN),
        last_used_at: None,
    }
}

/// A `NEVER` license without limits, customers or products.
pub fn license(team: TeamId, created: Timestamp) -> License {
    License {
        id: LicenseId::new(),
        license_key: LicenseKey::generate(),
        expiration_type: ExpirationType::Never,
        expiration_start: ExpirationStart::Creation,
        expiration_date: None,
        expiration_days: None,
        suspended: false,
        ip_limit: None,
        hwid_limit: None,
        metadata: Vec::new(),
        team_id: team,
        created_by_user_id: UserId::ADMIN,
        created_at: created,
        updated_at: created,
        last_active_at: None,
        customer_ids: Vec::new(),
        product_ids: Vec::new(),
    }
}

fn customer(team: TeamId, email: &str, name: &str, created: Timestamp) -> Customer {
    Customer {
        id: CustomerId::new(),
        email: Some(Email::parse(email).unwrap()),
        full_name: Some(name.into()),
        username: None,
        metadata: Vec::new(),
        address: Address::default(),
        chat_account: None,
        team_id: team,
        created_by_user_id: UserId::ADMIN,
        created_at: created,
        updated_at: created,
    }
}

fn product(team: TeamId, name: &str) -> Product {
    Product {
        id: ProductId::new(),
        name: name.into(),
        url: None,
        metadata: Vec::new(),
        team_id: team,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
        updated_at: t0(),
    }
}

fn branch(team: TeamId, product: ProductId, name: &str) -> Branch {
    Branch {
        id: BranchId::new(),
        name: BranchName::parse(name).unwrap(),
        product_id: product,
        team_id: team,
        created_at: t0(),
        updated_at: t0(),
    }
}

fn release(
    team: TeamId,
    product: ProductId,
    branch: Option<BranchId>,
    version: &str,
    created: Timestamp,
) -> Release {
    Release {
        id: ReleaseId::new(),
        version: Version::parse(version).unwrap(),
        status: ReleaseStatus::Published,
        latest: false,
        product_id: product,
        branch_id: branch,
        team_id: team,
        created_by_user_id: UserId::ADMIN,
        created_at: created,
        updated_at: created,
        metadata: Vec::new(),
        file: Some(ReleaseFile {
            id: FileId::new(),
            key: "blob".into(),
            size: 3,
            name: "app.jar".into(),
            checksum: "900150983cd24fb0d6963f7d28e17f72".into(),
            main_class_name: Some("com.example.Main".into()),
            created_at: created,
        }),
        allowed_license_ids: Vec::new(),
    }
}

fn activity(device: Option<&str>, last_octet: u8) -> Activity {
    Activity {
        hardware_id: device.map(|d| HardwareId::parse(d).unwrap()),
        ip: IpAddr::V4(Ipv4Addr::new(198, 51, 100, last_octet)),
        country: Some(Country::from_code("FI").unwrap()),
    }
}

fn is_not_found<T: std::fmt::Debug>(r: StoreResult<T>, entity: Entity) -> bool {
    matches!(r, Err(StoreError::NotFound(e)) if e == entity)
}

fn is_conflict<T: std::fmt::Debug>(r: StoreResult<T>, on: &str) -> bool {
    matches!(r, Err(StoreError::Conflict { field, .. }) if field == on)
}

// ---- cases ----

pub async fn teams_are_created_read_listed_and_updated<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    assert_eq!(store.get_team(a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(store.get_team(TeamId::new()).await.unwrap(), None);
    let ids: Vec<TeamId> = store
        .list_teams()
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert!(ids.contains(&a.id) && ids.contains(&b.id));

    let settings = TeamSettings {
        strict_customers: true,
        hwid_timeout: Some(30),
        ..TeamSettings::default()
    };
    let updated = store
        .update_settings(a.id, &settings, at(1), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(updated.settings, settings);
    assert_eq!(
        store.get_team(a.id).await.unwrap().unwrap().settings,
        settings
    );
    let sealed = StoredTeamKeys::Sealed(crate::crypto::SealedTeamKeys {
        key_id: "0011223344556677".into(),
        nonce: "bm9uY2U=".into(),
        sealed: "c2VhbGVk".into(),
    });
    let updated = store.update_team_keys(a.id, &sealed, at(1)).await.unwrap();
    assert_eq!(updated.keys, sealed);
    assert_eq!(store.get_team(a.id).await.unwrap().unwrap().keys, sealed);
    assert!(is_not_found(
        store.update_team_keys(TeamId::new(), &sealed, at(1)).await,
        Entity::Team
    ));
    let updated = store
        .update_features(
            a.id,
            TeamFeatures { classloader: false },
            at(2),
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert!(!updated.features.classloader);
    assert!(
        store
            .get_team(b.id)
            .await
            .unwrap()
            .unwrap()
            .features
            .classloader,
        "other team untouched"
    );
    assert!(is_not_found(
        store
            .update_settings(TeamId::new(), &settings, at(3), &Journal::NONE)
            .await,
        Entity::Team
    ));
}

pub async fn api_keys_are_found_by_hash_and_revoked_within_their_team<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let secret = ApiKeySecret::generate();
    let mut key = api_key(a.id, "ci");
    key.hash = secret.hash();
    key.created_at = at(1);
    // A scoped key restricted to a product keeps its scopes and products.
    key.scopes =
        crate::model::Scopes::parse(&["licenses:read".into(), "releases:*".into()]).unwrap();
    key.product_ids = Some(vec![crate::ProductId::new()]);
    key.created_by_user_id = Some(crate::UserId::from(ApiKeyId::new()));
    store.create_api_key(&key, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.find_api_key(&secret.hash()).await.unwrap(),
        Some(key.clone())
    );
    // Uses move `lastUsedAt` forward only, and only within the key's team.
    store
        .record_api_key_use(&[(a.id, key.id, at(5)), (b.id, key.id, at(9))])
        .await
        .unwrap();
    store
        .record_api_key_use(&[(a.id, key.id, at(3)), (a.id, ApiKeyId::new(), at(4))])
        .await
        .unwrap();
    let used = store.find_api_key(&secret.hash()).await.unwrap().unwrap();
    assert_eq!(used.last_used_at, Some(at(5)));
    key.last_used_at = Some(at(5));
    assert_eq!(
        store
            .find_api_key(&ApiKeySecret::generate().hash())
            .await
            .unwrap(),
        None
    );
    let names: Vec<String> = store
        .list_api_keys(a.id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["first", "ci"]);
    assert!(is_not_found(
        store.delete_api_keys(b.id, &[key.id], &Journal::NONE).await,
        Entity::ApiKey
    ));
    // Several at once, those that exist: a key revoked with the keys it made.
    let made_secret = ApiKeySecret::generate();
    let made = ApiKeyRecord {
        hash: made_secret.hash(),
        created_by_user_id: Some(key.id.into()),
        ..api_key(a.id, "made by ci")
    };
    store.create_api_key(&made, &Journal::NONE).await.unwrap();
    assert_eq!(
        store
            .delete_api_keys(a.id, &[key.id, made.id, ApiKeyId::new()], &Journal::NONE)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.find_api_key(&secret.hash()).await.unwrap(), None);
    assert_eq!(store.find_api_key(&made_secret.hash()).await.unwrap(), None);
    assert!(is_not_found(
        store.delete_api_keys(a.id, &[key.id], &Journal::NONE).await,
        Entity::ApiKey
    ));
}

fn staff(team: TeamId, email: &str, minutes: u32) -> crate::model::StaffUser {
    crate::model::StaffUser {
        id: crate::StaffId::new(),
        team_id: team,
        email: Email::parse(email).unwrap(),
        role: crate::model::Role::Support,
        password_hash: None,
        password_link: Some(crate::model::PasswordLink {
            secret_sha256: "ab".repeat(32),
            expires_at: at(minutes + 60),
        }),
        created_at: at(minutes),
        updated_at: at(minutes),
        two_step: None,
    }
}

fn session(user: &crate::model::StaffUser, id: &str) -> crate::model::StaffSession {
    crate::model::StaffSession {
        id_sha256: id.repeat(64 / id.len()),
        user_id: user.id,
        team_id: user.team_id,
        csrf_token: format!("csrf-{id}"),
        created_at: at(2),
        last_seen_at: at(2),
    }
}

pub async fn staff_accounts_have_addresses_unique_in_their_team_and_sessions_end_with_them<
    S: Store,
>(
    store: &S,
) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let ann = staff(a.id, "ann@example.com", 1);
    let bob = staff(a.id, "bob@example.com", 0);
    store.create_staff(&ann, &Journal::NONE).await.unwrap();
    store.create_staff(&bob, &Journal::NONE).await.unwrap();
    // An address has one account in a team, whatever its case.
    for taken in ["ann@example.com", "ANN@example.com"] {
        let again = staff(a.id, taken, 3);
        assert!(matches!(
            store.create_staff(&again, &Journal::NONE).await,
            Err(StoreError::Conflict { field: "email", .. })
        ));
    }
    // Another team has an account of its own for the same person.
    let ann_in_b = staff(b.id, "Ann@Example.com", 4);
    store.create_staff(&ann_in_b, &Journal::NONE).await.unwrap();
    assert!(is_not_found(
        store
            .create_staff(
                &staff(crate::TeamId::new(), "cy@example.com", 1),
                &Journal::NONE
            )
            .await,
        Entity::Team
    ));
    assert_eq!(store.get_staff(ann.id).await.unwrap(), Some(ann.clone()));
    assert_eq!(
        store.find_staff_by_email("ann@example.com").await.unwrap(),
        [ann.clone(), ann_in_b.clone()],
        "every team's, oldest first"
    );
    assert_eq!(
        store.find_staff_by_email("cy@example.com").await.unwrap(),
        []
    );
    let listed: Vec<_> = store.list_staff(a.id).await.unwrap();
    assert_eq!(listed, [bob.clone(), ann.clone()], "oldest first");
    assert_eq!(
        store.list_staff(b.id).await.unwrap(),
        std::slice::from_ref(&ann_in_b)
    );

    // A change of address frees the old one; taking another account's is a conflict; another
    // team cannot change the account.
    let mut changed = ann.clone();
    changed.email = Email::parse("ann.smith@example.com").unwrap();
    changed.role = crate::model::Role::Admin;
    changed.password_hash = Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    changed.password_link = None;
    changed.updated_at = at(9);
    store.update_staff(&changed, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.get_staff(ann.id).await.unwrap(),
        Some(changed.clone())
    );
    assert_eq!(
        store.find_staff_by_email("ann@example.com").await.unwrap(),
        std::slice::from_ref(&ann_in_b),
        "the other team's account keeps the address"
    );
    assert_eq!(
        store
            .find_staff_by_email("ann.smith@example.com")
            .await
            .unwrap()
            .iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        [ann.id]
    );
    let mut clash = bob.clone();
    clash.email = changed.email.clone();
    assert!(matches!(
        store.update_staff(&clash, &Journal::NONE).await,
        Err(StoreError::Conflict { field: "email", .. })
    ));
    let mut elsewhere = bob.clone();
    elsewhere.team_id = b.id;
    assert!(is_not_found(
        store.update_staff(&elsewhere, &Journal::NONE).await,
        Entity::Staff
    ));
    let cy = staff(a.id, "ann@example.com", 5);
    store.create_staff(&cy, &Journal::NONE).await.unwrap();

    // Sessions: found by their hash, touched forward only, ended one by one or all at once.
    let (one, two, three) = (
        session(&changed, "1"),
        session(&changed, "2"),
        session(&bob, "3"),
    );
    for s in [&one, &two, &three] {
        store.create_session(s, &Journal::NONE).await.unwrap();
    }
    assert!(is_not_found(
        store
            .create_session(
                &session(&staff(a.id, "x@example.com", 1), "4"),
                &Journal::NONE
            )
            .await,
        Entity::Staff
    ));
    assert_eq!(
        store.get_session(&one.id_sha256).await.unwrap(),
        Some(one.clone())
    );
    store.touch_session(&one.id_sha256, at(30)).await.unwrap();
    store.touch_session(&one.id_sha256, at(20)).await.unwrap();
    store.touch_session(&"f".repeat(64), at(20)).await.unwrap();
    assert_eq!(
        store
            .get_session(&one.id_sha256)
            .await
            .unwrap()
            .unwrap()
            .last_seen_at,
        at(30)
    );
    store
        .delete_session(&two.id_sha256, &Journal::NONE)
        .await
        .unwrap();
    store
        .delete_session(&two.id_sha256, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_session(&two.id_sha256).await.unwrap(), None);
    store.create_session(&two, &Journal::NONE).await.unwrap();
    assert_eq!(store.delete_sessions_of(changed.id).await.unwrap(), 2);
    assert_eq!(store.get_session(&one.id_sha256).await.unwrap(), None);
    assert!(store.get_session(&three.id_sha256).await.unwrap().is_some());

    // Deleting an account ends its sessions; only its own team can.
    assert!(is_not_found(
        store.delete_staff(b.id, bob.id, &Journal::NONE).await,
        Entity::Staff
    ));
    store
        .delete_staff(a.id, bob.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_staff(bob.id).await.unwrap(), None);
    assert_eq!(store.get_session(&three.id_sha256).await.unwrap(), None);
    assert_eq!(
        store.find_staff_by_email("bob@example.com").await.unwrap(),
        []
    );

    // Timed-out sessions are purged: idle (last used too long ago) or too old; a session
    // still in time stays.
    let idle = crate::model::StaffSession {
        last_seen_at: at(10),
        created_at: at(9),
        ..session(&changed, "7")
    };
    let old = crate::model::StaffSession {
        last_seen_at: at(50),
        created_at: at(3),
        ..session(&changed, "8")
    };
    let fresh = crate::model::StaffSession {
        last_seen_at: at(50),
        created_at: at(40),
        ..session(&changed, "9")
    };
    for s in [&idle, &old, &fresh] {
        store.create_session(s, &Journal::NONE).await.unwrap();
    }
    assert_eq!(store.delete_stale_sessions(at(20), at(5)).await.unwrap(), 2);
    assert_eq!(store.get_session(&idle.id_sha256).await.unwrap(), None);
    assert_eq!(store.get_session(&old.id_sha256).await.unwrap(), None);
    assert_eq!(
        store.get_session(&fresh.id_sha256).await.unwrap(),
        Some(fresh.clone())
    );
    assert_eq!(store.delete_stale_sessions(at(20), at(5)).await.unwrap(), 0);
    // The account's other index still works: signing out everywhere ends the fresh one only.
    assert_eq!(store.delete_sessions_of(changed.id).await.unwrap(), 1);
    assert_eq!(
        store
            .list_staff(a.id)
            .await
            .unwrap()
            .into_iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        [changed.id, cy.id]
    );
}

pub async fn licenses_are_created_and_read_by_id_and_key<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    l.metadata = vec![MetadataItem {
        key: "tier".into(),
        value: "gold".into(),
        locked: true,
    }];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    assert_eq!(
        store.get_license(t.id, l.id).await.unwrap(),
        Some(l.clone())
    );
    assert_eq!(
        store
            .get_license_by_key(t.id, &l.license_key)
            .await
            .unwrap(),
        Some(l.clone())
    );
    assert_eq!(
        store.get_license(t.id, LicenseId::new()).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .get_license_by_key(t.id, &LicenseKey::generate())
            .await
            .unwrap(),
        None
    );
}

pub async fn license_keys_are_unique_within_a_team_only<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let first = license(a.id, t0());
    store.create_license(&first, &Journal::NONE).await.unwrap();
    let mut same_key = license(a.id, t0());
    same_key.license_key = first.license_key;
    assert!(is_conflict(
        store.create_license(&same_key, &Journal::NONE).await,
        "licenseKey"
    ));
    let mut other_team = license(b.id, t0());
    other_team.license_key = first.license_key;
    store
        .create_license(&other_team, &Journal::NONE)
        .await
        .unwrap();
    // Changing a key to one that is taken is a conflict too; to a free one it is fine.
    let second = license(a.id, t0());
    store.create_license(&second, &Journal::NONE).await.unwrap();
    let mut clash = second.clone();
    clash.license_key = first.license_key;
    assert!(is_conflict(
        store.update_license(&clash, &Journal::NONE).await,
        "licenseKey"
    ));
    let mut fresh = second.clone();
    fresh.license_key = LicenseKey::generate();
    store.update_license(&fresh, &Journal::NONE).await.unwrap();
    assert_eq!(
        store
            .get_license_by_key(a.id, &fresh.license_key)
            .await
            .unwrap()
            .unwrap()
            .id,
        second.id
    );
    assert_eq!(
        store
            .get_license_by_key(a.id, &second.license_key)
            .await
            .unwrap(),
        None
    );
}

/// A key looked up (a store may remember what it named) follows the license's changes: once
/// the key moves to another license, it names that one; once its license is deleted, none.
pub async fn a_key_read_before_names_only_its_license_afterwards<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let by_key = |k: LicenseKey| async move {
        store
            .get_license_by_key(t.id, &k)
            .await
            .unwrap()
            .map(|l| l.id)
    };
    let first = license(t.id, t0());
    store.create_license(&first, &Journal::NONE).await.unwrap();
    let key = first.license_key;
    assert_eq!(by_key(key).await, Some(first.id));
    // The first license takes a new key; the old one names nothing, then the second license.
    let mut renamed = first.clone();
    renamed.license_key = LicenseKey::generate();
    store
        .update_license(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(by_key(key).await, None);
    assert_eq!(by_key(renamed.license_key).await, Some(first.id));
    let mut second = license(t.id, t0());
    second.license_key = key;
    store.create_license(&second, &Journal::NONE).await.unwrap();
    assert_eq!(by_key(key).await, Some(second.id));
    assert_eq!(by_key(key).await, Some(second.id));
    // Deleted, it is found by neither.
    store
        .delete_license(t.id, second.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(by_key(key).await, None);
    assert_eq!(by_key(renamed.license_key).await, Some(first.id));
}

pub async fn license_references_must_exist_in_the_same_team<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let foreign_customer = customer(b.id, "x@example.com", "X", t0());
    store
        .create_customer(&foreign_customer, &Journal::NONE)
        .await
        .unwrap();
    let foreign_product = product(b.id, "P");
    store
        .create_product(&foreign_product, &Journal::NONE)
        .await
        .unwrap();
    let mut l = license(a.id, t0());
    l.customer_ids = vec![foreign_customer.id];
    assert!(is_not_found(
        store.create_license(&l, &Journal::NONE).await,
        Entity::Customer
    ));
    l.customer_ids.clear();
    l.product_ids = vec![foreign_product.id];
    assert!(is_not_found(
        store.create_license(&l, &Journal::NONE).await,
        Entity::Product
    ));
    assert_eq!(
        store.get_license(a.id, l.id).await.unwrap(),
        None,
        "nothing stored"
    );
}

pub async fn license_updates_replace_and_deletes_cascade<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let mut l = license(t.id, t0());
    l.product_ids = vec![p.id];
    l.hwid_limit = Some(5);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let mut r = release(t.id, p.id, None, "1.0.0", t0());
    r.allowed_license_ids = vec![l.id];
    store.create_release(&r, &Journal::NONE).await.unwrap();
    for i in 0..3u8 {
        let dev = format!("device-{i:03}-abcdef");
        store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&dev), i),
                at(1),
            )
            .await
            .unwrap()
            .unwrap();
    }
    let mut changed = store.get_license(t.id, l.id).await.unwrap().unwrap();
    changed.suspended = true;
    changed.updated_at = at(2);
    store
        .update_license(&changed, &Journal::NONE)
        .await
        .unwrap();
    assert!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .suspended
    );

    let missing = license(t.id, t0());
    assert!(is_not_found(
        store.update_license(&missing, &Journal::NONE).await,
        Entity::License
    ));

    let deleted = store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(deleted.id, l.id);
    assert_eq!(store.get_license(t.id, l.id).await.unwrap(), None);
    assert!(is_not_found(
        store
            .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await,
        Entity::License
    ));
    let r_after = store.get_release(t.id, r.id).await.unwrap().unwrap();
    assert!(
        r_after.allowed_license_ids.is_empty(),
        "removed from the release"
    );
    assert!(is_not_found(
        store.delete_license(t.id, l.id, &Journal::NONE).await,
        Entity::License
    ));
    // A new license with the freed key works, and sees none of the old records.
    let mut again = license(t.id, t0());
    again.license_key = l.license_key;
    store.create_license(&again, &Journal::NONE).await.unwrap();
    let page = store
        .list_hwids(
            t.id,
            again.id,
            &DeviceListQuery::parse("showForgotten=true").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.total, 0);
}

pub async fn license_lists_filter_sort_and_page<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let p1 = product(t.id, "One");
    let p2 = product(t.id, "Two");
    store.create_product(&p1, &Journal::NONE).await.unwrap();
    store.create_product(&p2, &Journal::NONE).await.unwrap();
    let c1 = customer(t.id, "c1@example.com", "C1", t0());
    store.create_customer(&c1, &Journal::NONE).await.unwrap();
    let mut all = Vec::new();
    for i in 0..30u32 {
        let mut l = license(t.id, at(i));
        l.updated_at = at(100 - i);
        if i % 2 == 0 {
            l.product_ids.push(p1.id);
        }
        if i % 3 == 0 {
            l.product_ids.push(p2.id);
        }
        if i % 5 == 0 {
            l.customer_ids.push(c1.id);
            l.metadata.push(MetadataItem {
                key: "tier".into(),
                value: format!("gold-{i}"),
                locked: false,
            });
        }
        store.create_license(&l, &Journal::NONE).await.unwrap();
        all.push(l);
    }
    store
        .create_license(&license(other.id, t0()), &Journal::NONE)
        .await
        .unwrap();

    let q = |s: &str| LicenseListQuery::parse(s).unwrap();
    let page = store.list_licenses(t.id, &q("")).await.unwrap();
    assert_eq!(
        (page.items.len(), page.total, page.has_next_page),
        (25, 30, true)
    );
    assert_eq!(page.items[0].id, all[29].id, "newest first by default");
    let page2 = store.list_licenses(t.id, &q("page=2")).await.unwrap();
    assert_eq!((page2.items.len(), page2.has_next_page), (5, false));
    assert_eq!(page2.items[4].id, all[0].id);
    let beyond = store.list_licenses(t.id, &q("page=9")).await.unwrap();
    assert_eq!(
        (beyond.items.len(), beyond.total, beyond.has_next_page),
        (0, 30, false)
    );

    let asc = store
        .list_licenses(t.id, &q("pageSize=10&sortDirection=asc"))
        .await
        .unwrap();
    assert_eq!(
        asc.items.iter().map(|l| l.id).collect::<Vec<_>>(),
        all[..10].iter().map(|l| l.id).collect::<Vec<_>>()
    );
    let by_update = store
        .list_licenses(
            t.id,
            &q("pageSize=10&sortColumn=updatedAt&sortDirection=asc"),
        )
        .await
        .unwrap();
    assert_eq!(by_update.items[0].id, all[29].id);

    let either = store
        .list_licenses(
            t.id,
            &q(&format!("pageSize=100&productIds={},{}", p1.id, p2.id)),
        )
        .await
        .unwrap();
    assert_eq!(
        either.total,
        (0..30).filter(|i| i % 2 == 0 || i % 3 == 0).count() as u64
    );
    let only_p2 = store
        .list_licenses(t.id, &q(&format!("pageSize=100&productIds={}", p2.id)))
        .await
        .unwrap();
    assert_eq!(only_p2.total, 10);
    let by_customer = store
        .list_licenses(t.id, &q(&format!("customerIds={}", c1.id)))
        .await
        .unwrap();
    assert_eq!(by_customer.total, 6);
    let by_meta = store
        .list_licenses(t.id, &q("metadataKey=tier&metadataValue=gold-1"))
        .await
        .unwrap();
    assert_eq!(by_meta.total, 2, "gold-10 and gold-15");
    let key_part = &all[7].license_key.as_str()[6..11].to_lowercase();
    let by_key = store
        .list_licenses(t.id, &q(&format!("search={key_part}")))
        .await
        .unwrap();
    assert!(by_key.items.iter().any(|l| l.id == all[7].id));
    assert!(
        by_key
            .items
            .iter()
            .all(|l| l.license_key.as_str().contains(&key_part.to_uppercase()))
    );
}

pub async fn customers_are_searched_updated_and_detached_on_delete<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let jane = customer(t.id, "jane@example.com", "Jane Doe", at(1));
    let mut john = customer(t.id, "john@example.org", "John Roe", at(2));
    john.username = Some("jroe".into());
    let ann = customer(t.id, "ann@example.com", "ann smith", at(3));
    for c in [&jane, &john, &ann] {
        store.create_customer(c, &Journal::NONE).await.unwrap();
    }
    let q = |s: &str| CustomerListQuery::parse(s).unwrap();
    let found = store
        .list_customers(t.id, &q("search=EXAMPLE.COM"))
        .await
        .unwrap();
    assert_eq!(found.total, 2);
    assert_eq!(
        store
            .list_customers(t.id, &q("search=JROE"))
            .await
            .unwrap()
            .items[0]
            .id,
        john.id
    );
    assert_eq!(
        store
            .list_customers(t.id, &q("search=doe"))
            .await
            .unwrap()
            .items[0]
            .id,
        jane.id
    );
    let by_name: Vec<CustomerId> = store
        .list_customers(t.id, &q("sortColumn=fullName&sortDirection=asc"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(by_name, [ann.id, jane.id, john.id], "case-insensitive");
    assert_eq!(
        store
            .get_customers(t.id, &[john.id, CustomerId::new(), jane.id])
            .await
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        [john.id, jane.id]
    );

    let mut renamed = jane.clone();
    renamed.full_name = Some("Jane Q. Doe".into());
    store
        .update_customer(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.get_customer(t.id, jane.id).await.unwrap(),
        Some(renamed)
    );

    let mut l = license(t.id, t0());
    l.customer_ids = vec![jane.id, john.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    store
        .delete_customer(t.id, jane.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_customer(t.id, jane.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .customer_ids,
        [john.id]
    );
    assert!(is_not_found(
        store.delete_customer(t.id, jane.id, &Journal::NONE).await,
        Entity::Customer
    ));
}

pub async fn products_delete_with_their_releases_and_branches<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let keep = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&keep, &Journal::NONE).await.unwrap();
    let b = branch(t.id, p.id, "beta");
    store.create_branch(&b, &Journal::NONE).await.unwrap();
    let r1 = release(t.id, p.id, None, "1.0.0", t0());
    let r2 = release(t.id, p.id, Some(b.id), "1.1.0", t0());
    let r3 = release(t.id, keep.id, None, "1.0.0", t0());
    for r in [&r1, &r2, &r3] {
        store.create_release(r, &Journal::NONE).await.unwrap();
    }
    let mut l = license(t.id, t0());
    l.product_ids = vec![p.id, keep.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();

    let mut renamed = p.clone();
    renamed.name = "App 2".into();
    store
        .update_product(&renamed, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.get_products(t.id, &[p.id]).await.unwrap()[0].name,
        "App 2"
    );

    let mut removed: Vec<ReleaseId> = store
        .delete_product(t.id, p.id, &Journal::NONE)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    removed.sort();
    let mut expected = vec![r1.id, r2.id];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(store.get_product(t.id, p.id).await.unwrap(), None);
    assert_eq!(store.get_release(t.id, r1.id).await.unwrap(), None);
    assert!(store.get_release(t.id, r3.id).await.unwrap().is_some());
    assert!(is_not_found(
        store.list_branches(t.id, p.id).await,
        Entity::Product
    ));
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .product_ids,
        [keep.id]
    );
    let page = store
        .list_products(t.id, &ProductListQuery::parse("sortColumn=name").unwrap())
        .await
        .unwrap();
    assert_eq!(
        page.items.iter().map(|p| p.id).collect::<Vec<_>>(),
        [keep.id]
    );
}

pub async fn branches_have_unique_names_and_delete_their_releases<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    let beta = branch(t.id, p.id, "beta");
    store.create_branch(&beta, &Journal::NONE).await.unwrap();
    store
        .create_branch(&branch(t.id, p.id, "alpha"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_conflict(
        store
            .create_branch(&branch(t.id, p.id, "beta"), &Journal::NONE)
            .await,
        "name"
    ));
    store
        .create_branch(&branch(t.id, q.id, "beta"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_not_found(
        store
            .create_branch(&branch(t.id, ProductId::new(), "x1"), &Journal::NONE)
            .await,
        Entity::Product
    ));
    let names: Vec<String> = store
        .list_branches(t.id, p.id)
        .await
        .unwrap()
        .iter()
        .map(|b| b.name.to_string())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);

    let on_beta = release(t.id, p.id, Some(beta.id), "2.0.0", t0());
    let main = release(t.id, p.id, None, "2.0.0", t0());
    store
        .create_release(&on_beta, &Journal::NONE)
        .await
        .unwrap();
    store.create_release(&main, &Journal::NONE).await.unwrap();
    assert!(
        is_not_found(
            store
                .delete_branch(t.id, q.id, beta.id, &Journal::NONE)
                .await,
            Entity::Branch
        ),
        "wrong product"
    );
    let removed = store
        .delete_branch(t.id, p.id, beta.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(
        removed.iter().map(|r| r.id).collect::<Vec<_>>(),
        [on_beta.id]
    );
    assert!(store.get_release(t.id, main.id).await.unwrap().is_some());
    assert_eq!(store.list_branches(t.id, p.id).await.unwrap().len(), 1);
}

pub async fn releases_check_references_versions_and_the_latest_rule<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    let beta = branch(t.id, p.id, "beta");
    let q_branch = branch(t.id, q.id, "beta");
    store.create_branch(&beta, &Journal::NONE).await.unwrap();
    store
        .create_branch(&q_branch, &Journal::NONE)
        .await
        .unwrap();

    let mut r1 = release(t.id, p.id, None, "1.0.0", at(1));
    r1.latest = true;
    store.create_release(&r1, &Journal::NONE).await.unwrap();
    let mut r2 = release(t.id, p.id, None, "1.1.0", at(2));
    r2.latest = true;
    let mut rb = release(t.id, p.id, Some(beta.id), "1.0.0", at(3));
    rb.latest = true;
    store.create_release(&rb, &Journal::NONE).await.unwrap();
    store.create_release(&r2, &Journal::NONE).await.unwrap();
    assert!(
        !store
            .get_release(t.id, r1.id)
            .await
            .unwrap()
            .unwrap()
            .latest,
        "only one latest per branch"
    );
    assert!(
        store
            .get_release(t.id, r2.id)
            .await
            .unwrap()
            .unwrap()
            .latest
    );
    assert!(
        store
            .get_release(t.id, rb.id)
            .await
            .unwrap()
            .unwrap()
            .latest,
        "other branch untouched"
    );

    assert!(is_conflict(
        store
            .create_release(&release(t.id, p.id, None, "1.0.0", at(4)), &Journal::NONE)
            .await,
        "version"
    ));
    assert!(is_not_found(
        store
            .create_release(
                &release(t.id, ProductId::new(), None, "9.0.0", at(4)),
                &Journal::NONE
            )
            .await,
        Entity::Product
    ));
    assert!(
        is_not_found(
            store
                .create_release(
                    &release(t.id, p.id, Some(q_branch.id), "9.0.0", at(4)),
                    &Journal::NONE
                )
                .await,
            Entity::Branch
        ),
        "a branch of another product"
    );
    let mut restricted = release(t.id, p.id, None, "9.0.0", at(4));
    restricted.allowed_license_ids = vec![LicenseId::new()];
    assert!(is_not_found(
        store.create_release(&restricted, &Journal::NONE).await,
        Entity::License
    ));

    // Update: making r1 latest again flips r2; changing r1's version to a taken one conflicts.
    let mut r1u = store.get_release(t.id, r1.id).await.unwrap().unwrap();
    r1u.latest = true;
    r1u.status = ReleaseStatus::Deprecated;
    r1u.file = None;
    store.update_release(&r1u, &Journal::NONE).await.unwrap();
    assert!(
        !store
            .get_release(t.id, r2.id)
            .await
            .unwrap()
            .unwrap()
            .latest
    );
    assert_eq!(
        store.get_release(t.id, r1.id).await.unwrap(),
        Some(r1u.clone())
    );
    let mut clash = r1u.clone();
    clash.version = Version::parse("1.1.0").unwrap();
    assert!(is_conflict(
        store.update_release(&clash, &Journal::NONE).await,
        "version"
    ));

    let (branches, releases) = store.catalog(t.id, p.id).await.unwrap();
    assert_eq!(branches.len(), 1);
    assert_eq!(releases.len(), 3);
    let deleted = store
        .delete_release(t.id, r2.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(deleted.id, r2.id);
    assert!(is_not_found(
        store.delete_release(t.id, r2.id, &Journal::NONE).await,
        Entity::Release
    ));
}

pub async fn release_lists_filter_sort_and_page<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p = product(t.id, "App");
    let q = product(t.id, "Other");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    for i in 0..12u32 {
        let mut r = release(t.id, p.id, None, &format!("1.{i}.0"), at(i));
        r.status = if i % 4 == 0 {
            ReleaseStatus::Draft
        } else {
            ReleaseStatus::Published
        };
        r.latest = i == 5;
        store.create_release(&r, &Journal::NONE).await.unwrap();
    }
    store
        .create_release(
            &release(t.id, q.id, None, "1.0.0-other", at(50)),
            &Journal::NONE,
        )
        .await
        .unwrap();
    let list = |s: String| async move {
        store
            .list_releases(t.id, &ReleaseListQuery::parse(&s).unwrap())
            .await
            .unwrap()
    };
    let all = list(String::new()).await;
    assert_eq!((all.total, all.items.len()), (13, 13));
    let of_p = list(format!("productId={}&pageSize=10", p.id)).await;
    assert_eq!(
        (of_p.total, of_p.items.len(), of_p.has_next_page),
        (12, 10, true)
    );
    assert_eq!(
        list(format!("productId={}&status=DRAFT", p.id)).await.total,
        3
    );
    assert_eq!(
        list("search=1.1".into()).await.total,
        3,
        "1.1.0, 1.10.0, 1.11.0"
    );
    assert_eq!(list("search=OTHER".into()).await.total, 1);
    let latest_first = list(format!("productId={}&sortColumn=latest", p.id)).await;
    assert!(latest_first.items[0].latest);
    let by_version = list(format!(
        "productId={}&sortColumn=version&sortDirection=asc",
        p.id
    ))
    .await;
    assert_eq!(by_version.items[0].version.as_str(), "1.0.0");
}

pub async fn device_lists_hide_forgotten_records_unless_asked<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let l = license(t.id, t0());
    let other = license(t.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    store.create_license(&other, &Journal::NONE).await.unwrap();
    for i in 0..3u8 {
        let dev = format!("device-{i:03}-abcdef");
        store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&dev), i),
                at(u32::from(i)),
            )
            .await
            .unwrap()
            .unwrap();
    }
    let q = |s: &str| DeviceListQuery::parse(s).unwrap();
    let hwids = store.list_hwids(t.id, l.id, &q("")).await.unwrap();
    assert_eq!(hwids.total, 3);
    assert_eq!(
        hwids.items[0].identifier.as_str(),
        "device-002-abcdef",
        "last seen first"
    );
    let ips = store
        .list_ips(t.id, l.id, &q("sortDirection=asc"))
        .await
        .unwrap();
    assert_eq!(
        ips.items[0].address,
        IpAddr::V4(Ipv4Addr::new(198, 51, 100, 0))
    );
    assert_eq!(ips.items[0].alpha3.as_deref(), Some("FIN"));

    let target = hwids.items[1].id;
    let h = store
        .set_hwid_forgotten(t.id, l.id, target, true, at(9), &Journal::NONE)
        .await
        .unwrap();
    assert!(h.forgotten);
    assert_eq!(store.list_hwids(t.id, l.id, &q("")).await.unwrap().total, 2);
    assert_eq!(
        store
            .list_hwids(t.id, l.id, &q("showForgotten=true"))
            .await
            .unwrap()
            .total,
        3
    );
    assert!(
        !store
            .set_hwid_forgotten(t.id, l.id, target, false, at(10), &Journal::NONE)
            .await
            .unwrap()
            .forgotten
    );
    assert!(
        is_not_found(
            store
                .set_hwid_forgotten(t.id, other.id, target, true, at(9), &Journal::NONE)
                .await,
            Entity::Hwid
        ),
        "record of another license"
    );
    let ip = ips.items[0].id;
    assert!(
        store
            .set_ip_forgotten(t.id, l.id, ip, true, at(9), &Journal::NONE)
            .await
            .unwrap()
            .forgotten
    );
    assert_eq!(store.list_ips(t.id, l.id, &q("")).await.unwrap().total, 2);
    assert!(is_not_found(
        store
            .set_ip_forgotten(t.id, l.id, IpId::new(), true, at(9), &Journal::NONE)
            .await,
        Entity::Ip
    ));
    assert!(is_not_found(
        store.list_ips(t.id, LicenseId::new(), &q("")).await,
        Entity::License
    ));
}

pub async fn activity_records_devices_and_ips_within_limits<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(2);
    l.ip_limit = Some(2);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rec = |dev: &'static str, ip: u8, minute: u32| {
        let t = &t;
        async move {
            store
                .record_activity(
                    t.id,
                    l.id,
                    &ActivityRules::new(&t.settings),
                    &activity(Some(dev), ip),
                    at(minute),
                )
                .await
                .unwrap()
        }
    };
    let first = rec("device-a-00000", 1, 1).await.unwrap();
    assert_eq!(first.admission.hwid, Some(RecordChange::Create));
    assert_eq!(first.admission.ip, RecordChange::Create);
    assert_eq!(first.license.last_active_at, Some(at(1)));
    let again = rec("device-a-00000", 1, 2).await.unwrap();
    assert!(matches!(
        again.admission.hwid,
        Some(RecordChange::Refresh { .. })
    ));
    rec("device-b-00000", 2, 3).await.unwrap();
    assert_eq!(
        rec("device-c-00000", 2, 4).await.unwrap_err().code,
        crate::api::ResultCode::HwidLimitReached
    );
    assert_eq!(
        rec("device-a-00000", 3, 4).await.unwrap_err().code,
        crate::api::ResultCode::IpLimitReached
    );
    let hwids = store
        .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap();
    assert_eq!(hwids.total, 2, "refusals record nothing");
    assert_eq!(hwids.items[0].last_seen_at, at(3));
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .last_active_at,
        Some(at(3))
    );

    // Forgetting frees a slot; the forgotten device comes back only when there is room.
    let b = hwids
        .items
        .iter()
        .find(|h| h.identifier.as_str() == "device-b-00000")
        .unwrap()
        .id;
    store
        .set_hwid_forgotten(t.id, l.id, b, true, at(5), &Journal::NONE)
        .await
        .unwrap();
    rec("device-c-00000", 2, 6).await.unwrap();
    assert_eq!(
        rec("device-b-00000", 2, 7).await.unwrap_err().code,
        crate::api::ResultCode::HwidLimitReached
    );
    assert!(is_not_found(
        store
            .record_activity(
                t.id,
                LicenseId::new(),
                &ActivityRules::new(&t.settings),
                &activity(None, 1),
                at(8)
            )
            .await,
        Entity::License
    ));
}

/// The client API's first read ([`ActivityStore::read_license_for_activity`]) finds the
/// license by key within its team only, and recording after it
/// ([`ActivityStore::record_activity_after`]) decides and records as `record_activity` does.
pub async fn activity_after_the_first_read_is_the_same_atomic_step<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(1);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = ActivityRules::new(&t.settings);
    let step = |dev: &'static str, minute: u32| {
        let (t, l, rules) = (&t, &l, &rules);
        async move {
            let a = activity(Some(dev), 1);
            let read = store
                .read_license_for_activity(t.id, &l.license_key, &a)
                .await
                .unwrap()
                .expect("the license by its key");
            assert_eq!(read.license.id, l.id);
            if let Some((hwid, _)) = &read.own {
                assert!(hwid.as_ref().is_none_or(|h| h.identifier.as_str() == dev));
            }
            store
                .record_activity_after(&read, rules, &a, at(minute))
                .await
                .unwrap()
        }
    };
    let first = step("device-a-00000", 1).await.unwrap();
    assert_eq!(first.admission.hwid, Some(RecordChange::Create));
    let again = step("device-a-00000", 2).await.unwrap();
    assert!(matches!(
        again.admission.hwid,
        Some(RecordChange::Refresh { .. })
    ));
    assert_eq!(again.license.last_active_at, Some(at(2)));
    assert_eq!(
        step("device-b-00000", 3).await.unwrap_err().code,
        crate::api::ResultCode::HwidLimitReached
    );
    let hwids = store
        .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap();
    assert_eq!(hwids.total, 1);
    assert_eq!(hwids.items[0].last_seen_at, at(2));
    let a = activity(Some("device-a-00000"), 1);
    assert!(
        store
            .read_license_for_activity(other.id, &l.license_key, &a)
            .await
            .unwrap()
            .is_none(),
        "another team's key is not found"
    );
    assert!(
        store
            .read_license_for_activity(t.id, &LicenseKey::generate(), &a)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn activity_starts_the_activation_clock_once<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    l.expiration_type = ExpirationType::Duration;
    l.expiration_start = ExpirationStart::Activation;
    l.expiration_days = Some(7);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let first = store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&t.settings),
            &activity(None, 1),
            at(10),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.license.expiration_date, Some(at(10).plus_days(7)));
    let second = store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&t.settings),
            &activity(None, 1),
            at(20),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.license.expiration_date, Some(at(10).plus_days(7)));
    assert_eq!(
        store
            .get_license(t.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .expiration_date,
        Some(at(10).plus_days(7))
    );
}

fn capped(settings: &TeamSettings, max_records: u32) -> ActivityRules<'_> {
    ActivityRules {
        settings,
        max_records,
        events: crate::model::ClientEvents::NONE,
    }
}

pub async fn activity_drops_the_least_recently_seen_records_at_the_cap<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let l = license(t.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = capped(&t.settings, 10);
    // A license without limits: ten addresses, the first seen again last.
    for i in 0..10u8 {
        store
            .record_activity(t.id, l.id, &rules, &activity(None, i), at(u32::from(i)))
            .await
            .unwrap()
            .unwrap();
    }
    store
        .record_activity(t.id, l.id, &rules, &activity(None, 0), at(20))
        .await
        .unwrap()
        .unwrap();
    // The eleventh drops one (a tenth of the cap): the least recently seen, address 1.
    store
        .record_activity(t.id, l.id, &rules, &activity(None, 10), at(21))
        .await
        .unwrap()
        .unwrap();
    let q = DeviceListQuery::parse("pageSize=100").unwrap();
    let ips = store.list_ips(t.id, l.id, &q).await.unwrap();
    assert_eq!(ips.total, 10);
    let octets: Vec<u8> = ips
        .items
        .iter()
        .map(|r| match r.address {
            IpAddr::V4(v4) => v4.octets()[3],
            IpAddr::V6(_) => 0,
        })
        .collect();
    assert!(!octets.contains(&1), "{octets:?}");
    assert!(octets.contains(&0) && octets.contains(&10), "{octets:?}");
    // Forgotten records go first, whenever they were seen.
    let recent = ips
        .items
        .iter()
        .find(|r| r.address == activity(None, 9).ip)
        .unwrap();
    store
        .set_ip_forgotten(t.id, l.id, recent.id, true, at(22), &Journal::NONE)
        .await
        .unwrap();
    let mut limited = l.clone();
    limited.ip_limit = Some(20);
    store
        .update_license(&limited, &Journal::NONE)
        .await
        .unwrap();
    store
        .record_activity(t.id, l.id, &rules, &activity(None, 11), at(23))
        .await
        .unwrap()
        .unwrap();
    let q = DeviceListQuery::parse("pageSize=100&showForgotten=true").unwrap();
    let ips = store.list_ips(t.id, l.id, &q).await.unwrap();
    assert_eq!(ips.total, 10);
    assert!(ips.items.iter().all(|r| r.address != activity(None, 9).ip));
}

pub async fn activity_never_drops_counted_records_and_refuses_at_the_cap<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    // A limit above the cap: every record counts, so none may be dropped.
    l.hwid_limit = Some(50);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = capped(&t.settings, 3);
    for d in 0..3u8 {
        let device = format!("device-{d:04}-cap");
        store
            .record_activity(t.id, l.id, &rules, &activity(Some(&device), 1), at(1))
            .await
            .unwrap()
            .unwrap();
    }
    let refused = store
        .record_activity(
            t.id,
            l.id,
            &rules,
            &activity(Some("device-9999-cap"), 1),
            at(2),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, crate::api::ResultCode::HwidLimitReached);
    assert!(
        refused.details.contains("keeps per license (3)"),
        "{}",
        refused.details
    );
    let hwids = store
        .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap();
    assert_eq!(hwids.total, 3, "refusals record nothing");
    // A known device still passes.
    store
        .record_activity(
            t.id,
            l.id,
            &rules,
            &activity(Some("device-0000-cap"), 1),
            at(3),
        )
        .await
        .unwrap()
        .unwrap();
}

pub async fn activity_without_a_required_hardware_identifier_records_no_device<S: Store>(
    store: &S,
) {
    let t = team(store, "A").await;
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(1);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let strict = t.settings.clone();
    let refused = store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&strict),
            &activity(None, 1),
            at(1),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, crate::api::ResultCode::BadRequest);
    let lax = TeamSettings {
        require_hardware_identifier: false,
        ..t.settings.clone()
    };
    let passed = store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&lax),
            &activity(None, 1),
            at(2),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(passed.admission.hwid, None);
    let hwids = store
        .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap();
    assert_eq!(hwids.total, 0);
    // The limit still holds for requests that name a device.
    for (device, ok) in [("device-a-00000", true), ("device-b-00000", false)] {
        let outcome = store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&lax),
                &activity(Some(device), 1),
                at(3),
            )
            .await
            .unwrap();
        assert_eq!(outcome.is_ok(), ok, "{device}");
    }
}

/// Restored records keep their ids and times, replace a record of the same identifier or
/// address, and count against the limits as recorded ones do.
pub async fn usage_records_are_restored_as_they_are<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(2);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let hwid = |name: &str, forgotten: bool, seen: u32| Hwid {
        id: HwidId::new(),
        identifier: HardwareId::parse(name).unwrap(),
        forgotten,
        license_id: l.id,
        team_id: t.id,
        last_seen_at: at(seen),
        created_at: at(0),
        updated_at: at(seen),
    };
    let ip = IpRecord {
        id: IpId::new(),
        address: "198.51.100.9".parse().unwrap(),
        forgotten: false,
        country: Some("Finland".into()),
        alpha2: Some("FI".into()),
        alpha3: Some("FIN".into()),
        license_id: l.id,
        team_id: t.id,
        last_seen_at: at(3),
        created_at: at(1),
        updated_at: at(3),
    };
    let first = hwid("restored-device-1", false, 2);
    let replaced = hwid("restored-device-2", false, 1);
    store
        .restore_usage(
            t.id,
            l.id,
            &[first.clone(), replaced],
            std::slice::from_ref(&ip),
        )
        .await
        .unwrap();
    // The same identifier again replaces the record (now forgotten: it counts no more).
    let second = hwid("restored-device-2", true, 4);
    store
        .restore_usage(t.id, l.id, std::slice::from_ref(&second), &[])
        .await
        .unwrap();
    let q = DeviceListQuery::parse("showForgotten=true&sortColumn=createdAt&sortDirection=asc")
        .unwrap();
    let mut listed = store.list_hwids(t.id, l.id, &q).await.unwrap().items;
    listed.sort_by_key(|h| h.identifier.as_str().to_owned());
    assert_eq!(listed, [first, second]);
    assert_eq!(store.list_ips(t.id, l.id, &q).await.unwrap().items, [ip]);
    // One counted device of two allowed: one more new device fits, the next does not.
    let rules = ActivityRules::new(&t.settings);
    let new = |d: &str| activity(Some(d), 9);
    assert!(
        store
            .record_activity(t.id, l.id, &rules, &new("restored-device-3"), at(5))
            .await
            .unwrap()
            .is_ok()
    );
    assert!(
        store
            .record_activity(t.id, l.id, &rules, &new("restored-device-4"), at(5))
            .await
            .unwrap()
            .is_err()
    );
    // Not into another team's license.
    assert!(is_not_found(
        store.restore_usage(other.id, l.id, &[], &[]).await,
        Entity::License
    ));
}

pub async fn forgetting_by_id_finds_the_record_among_many<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let l = license(t.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    for i in 0..40u8 {
        let device = format!("device-{i:04}-many");
        store
            .record_activity(
                t.id,
                l.id,
                &ActivityRules::new(&t.settings),
                &activity(Some(&device), i),
                at(1),
            )
            .await
            .unwrap()
            .unwrap();
    }
    let q = DeviceListQuery::parse("pageSize=100").unwrap();
    let hwids = store.list_hwids(t.id, l.id, &q).await.unwrap();
    let target = hwids
        .items
        .iter()
        .find(|h| h.identifier.as_str() == "device-0017-many")
        .unwrap();
    let forgotten = store
        .set_hwid_forgotten(t.id, l.id, target.id, true, at(2), &Journal::NONE)
        .await
        .unwrap();
    assert!(forgotten.forgotten);
    assert_eq!(store.list_hwids(t.id, l.id, &q).await.unwrap().total, 39);
    let ips = store.list_ips(t.id, l.id, &q).await.unwrap();
    let ip = ips.items[5].clone();
    store
        .set_ip_forgotten(t.id, l.id, ip.id, true, at(2), &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.list_ips(t.id, l.id, &q).await.unwrap().total, 39);
    // Another license's id is not found.
    assert!(is_not_found(
        store
            .set_hwid_forgotten(t.id, l.id, HwidId::new(), true, at(3), &Journal::NONE)
            .await,
        Entity::Hwid
    ));
}

pub async fn session_keys_are_taken_once_per_team_within_the_window<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let window = 15 * 60_000;
    let take = |team: TeamId, print: u8, minute: u32, per_team: u32| async move {
        store
            .use_session_key(team, [print; 16], at(minute), window, per_team)
            .await
            .unwrap()
    };
    assert_eq!(take(a.id, 1, 0, 3).await, Ok(()));
    assert_eq!(take(a.id, 1, 14, 3).await, Err(SessionKeyRefused::Reused));
    // Per team: the same key is another team's own.
    assert_eq!(take(b.id, 1, 14, 3).await, Ok(()));
    assert_eq!(take(a.id, 2, 2, 3).await, Ok(()));
    assert_eq!(take(a.id, 3, 2, 3).await, Ok(()));
    // A team that holds its maximum refuses new keys, without touching other teams.
    assert_eq!(take(a.id, 4, 2, 3).await, Err(SessionKeyRefused::Full));
    assert_eq!(take(b.id, 4, 2, 3).await, Ok(()));
    // Past the window (15 minutes, not counting its last millisecond) the first key is
    // forgotten, and so makes room.
    assert_eq!(take(a.id, 1, 16, 3).await, Ok(()));
    assert_eq!(take(a.id, 4, 16, 3).await, Err(SessionKeyRefused::Full));
    assert_eq!(take(a.id, 4, 17, 3).await, Ok(()));
}

pub async fn product_and_release_lists_keep_to_a_product_restriction<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let p1 = product(t.id, "One");
    let p2 = product(t.id, "Two");
    store.create_product(&p1, &Journal::NONE).await.unwrap();
    store.create_product(&p2, &Journal::NONE).await.unwrap();
    for (p, v) in [(&p1, "1.0.0"), (&p2, "1.0.0"), (&p2, "2.0.0")] {
        store
            .create_release(&release(t.id, p.id, None, v, at(1)), &Journal::NONE)
            .await
            .unwrap();
    }
    let mut products = ProductListQuery::parse("").unwrap();
    products.filter.within = Some(vec![p2.id]);
    let page = store.list_products(t.id, &products).await.unwrap();
    assert_eq!((page.total, page.items[0].id), (1, p2.id));
    let mut releases = ReleaseListQuery::parse("").unwrap();
    releases.filter.within_products = Some(vec![p1.id]);
    let page = store.list_releases(t.id, &releases).await.unwrap();
    assert_eq!(page.total, 1);
    assert!(page.items.iter().all(|r| r.product_id == p1.id));
    releases.filter.within_products = Some(Vec::new());
    assert_eq!(store.list_releases(t.id, &releases).await.unwrap().total, 0);
}

pub async fn blacklist_entries_are_unique_and_count_hits<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let entry = |team: TeamId, kind, value: &str| BlacklistEntry {
        id: BlacklistId::new(),
        team_id: team,
        kind,
        value: value.into(),
        hits: 0,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
    };
    let ip = entry(t.id, BlacklistType::Ip, "203.0.113.0/24");
    store
        .create_blacklist_entry(&ip, &Journal::NONE)
        .await
        .unwrap();
    store
        .create_blacklist_entry(&entry(t.id, BlacklistType::Country, "FI"), &Journal::NONE)
        .await
        .unwrap();
    assert!(is_conflict(
        store
            .create_blacklist_entry(
                &entry(t.id, BlacklistType::Ip, "203.0.113.0/24"),
                &Journal::NONE
            )
            .await,
        "value"
    ));
    store
        .create_blacklist_entry(
            &entry(other.id, BlacklistType::Ip, "203.0.113.0/24"),
            &Journal::NONE,
        )
        .await
        .unwrap();
    store
        .add_blacklist_hits(t.id, &[(ip.id, 3), (ip.id, 2), (BlacklistId::new(), 9)])
        .await
        .unwrap();
    store
        .add_blacklist_hits(other.id, &[(ip.id, 100)])
        .await
        .unwrap();
    let list = store.list_blacklist(t.id).await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list.iter().find(|e| e.id == ip.id).unwrap().hits, 5);
    assert!(is_not_found(
        store
            .delete_blacklist_entry(other.id, ip.id, &Journal::NONE)
            .await,
        Entity::Blacklist
    ));
    store
        .delete_blacklist_entry(t.id, ip.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.list_blacklist(t.id).await.unwrap().len(), 1);
}

pub async fn statistics_buckets_merge_and_overview_counts<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let mut b1 = HourlyStats::new(at(0));
    b1.record(RequestType::Verify, true, Some("FI"));
    let mut b2 = HourlyStats::new(at(30));
    b2.record(RequestType::Heartbeat, false, Some("FI"));
    let mut old = HourlyStats::new(t0().plus_days(0).plus(-chrono::TimeDelta::days(40)));
    old.record(RequestType::Download, true, None);
    for b in [&b1, &b2, &old] {
        store.add_hourly(t.id, b).await.unwrap();
    }
    let since = HourlyStats::hour_of(t0()) - 30 * 24;
    let buckets = store.hourly_since(t.id, since).await.unwrap();
    assert_eq!(buckets.len(), 1, "same hour merged, old one excluded");
    assert_eq!((buckets[0].successful, buckets[0].failed), (1, 1));
    assert_eq!(buckets[0].countries.get("FI"), Some(&2));

    let p = product(t.id, "App");
    let q = product(t.id, "Bpp");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    store.create_product(&q, &Journal::NONE).await.unwrap();
    for i in 0..3u32 {
        let mut l = license(t.id, t0());
        l.product_ids = if i == 0 { vec![p.id, q.id] } else { vec![q.id] };
        store.create_license(&l, &Journal::NONE).await.unwrap();
        if i == 0 {
            store
                .record_activity(
                    t.id,
                    l.id,
                    &ActivityRules::new(&t.settings),
                    &activity(None, 1),
                    at(50),
                )
                .await
                .unwrap()
                .unwrap();
        }
    }
    store
        .create_customer(&customer(t.id, "a@example.com", "A", t0()), &Journal::NONE)
        .await
        .unwrap();
    let o = store.overview(t.id, at(0)).await.unwrap();
    assert_eq!(
        (
            o.total_licenses,
            o.total_customers,
            o.total_products,
            o.active_licenses
        ),
        (3, 1, 2, 1)
    );
    assert_eq!(
        store.overview(t.id, at(51)).await.unwrap().active_licenses,
        0
    );
    let top = store.top_products(t.id, 5).await.unwrap();
    assert_eq!(
        top.iter()
            .map(|p| (p.name.as_str(), p.licenses))
            .collect::<Vec<_>>(),
        [("Bpp", 3), ("App", 1)]
    );
}

pub async fn nothing_crosses_team_boundaries<S: Store>(store: &S) {
    let a = team(store, "A").await;
    let b = team(store, "B").await;
    let p = product(a.id, "App");
    store.create_product(&p, &Journal::NONE).await.unwrap();
    let c = customer(a.id, "a@example.com", "A", t0());
    store.create_customer(&c, &Journal::NONE).await.unwrap();
    let br = branch(a.id, p.id, "beta");
    store.create_branch(&br, &Journal::NONE).await.unwrap();
    let r = release(a.id, p.id, None, "1.0.0", t0());
    store.create_release(&r, &Journal::NONE).await.unwrap();
    let mut l = license(a.id, t0());
    l.product_ids = vec![p.id];
    l.customer_ids = vec![c.id];
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rec = store
        .record_activity(
            a.id,
            l.id,
            &ActivityRules::new(&a.settings),
            &activity(Some("device-a-00000"), 1),
            at(1),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.license.id, l.id);
    let hwid = store
        .list_hwids(a.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap()
        .items[0]
        .id;

    // Reads through team B see nothing.
    assert_eq!(store.get_license(b.id, l.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_license_by_key(b.id, &l.license_key)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get_customer(b.id, c.id).await.unwrap(), None);
    assert!(store.get_customers(b.id, &[c.id]).await.unwrap().is_empty());
    assert_eq!(store.get_product(b.id, p.id).await.unwrap(), None);
    assert!(store.get_products(b.id, &[p.id]).await.unwrap().is_empty());
    assert_eq!(store.get_release(b.id, r.id).await.unwrap(), None);
    let (branches, releases) = store.catalog(b.id, p.id).await.unwrap();
    assert!(branches.is_empty() && releases.is_empty());
    assert_eq!(
        store
            .list_licenses(b.id, &LicenseListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_customers(b.id, &CustomerListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_products(b.id, &ProductListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        store
            .list_releases(b.id, &ReleaseListQuery::parse("").unwrap())
            .await
            .unwrap()
            .total,
        0
    );
    assert!(is_not_found(
        store.list_branches(b.id, p.id).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store
            .list_hwids(b.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await,
        Entity::License
    ));
    assert_eq!(store.overview(b.id, t0()).await.unwrap().total_licenses, 0);

    // Writes through team B change nothing of team A.
    let mut stolen = l.clone();
    stolen.team_id = b.id;
    stolen.customer_ids.clear();
    stolen.product_ids.clear();
    assert!(is_not_found(
        store.update_license(&stolen, &Journal::NONE).await,
        Entity::License
    ));
    let mut c2 = c.clone();
    c2.team_id = b.id;
    assert!(is_not_found(
        store.update_customer(&c2, &Journal::NONE).await,
        Entity::Customer
    ));
    let mut p2 = p.clone();
    p2.team_id = b.id;
    assert!(is_not_found(
        store.update_product(&p2, &Journal::NONE).await,
        Entity::Product
    ));
    let mut r2 = r.clone();
    r2.team_id = b.id;
    assert!(is_not_found(
        store.update_release(&r2, &Journal::NONE).await,
        Entity::Release
    ));
    assert!(is_not_found(
        store.delete_license(b.id, l.id, &Journal::NONE).await,
        Entity::License
    ));
    assert!(is_not_found(
        store.delete_customer(b.id, c.id, &Journal::NONE).await,
        Entity::Customer
    ));
    assert!(is_not_found(
        store.delete_product(b.id, p.id, &Journal::NONE).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store.delete_release(b.id, r.id, &Journal::NONE).await,
        Entity::Release
    ));
    assert!(is_not_found(
        store.delete_branch(b.id, p.id, br.id, &Journal::NONE).await,
        Entity::Product
    ));
    assert!(is_not_found(
        store
            .set_hwid_forgotten(b.id, l.id, hwid, true, at(2), &Journal::NONE)
            .await,
        Entity::License
    ));
    assert!(is_not_found(
        store
            .record_activity(
                b.id,
                l.id,
                &ActivityRules::new(&b.settings),
                &activity(None, 1),
                at(2)
            )
            .await,
        Entity::License
    ));
    let mut foreign_branch = branch(b.id, p.id, "gamma");
    foreign_branch.team_id = b.id;
    assert!(is_not_found(
        store.create_branch(&foreign_branch, &Journal::NONE).await,
        Entity::Product
    ));
    let mut foreign_release = release(b.id, p.id, None, "2.0.0", t0());
    foreign_release.team_id = b.id;
    assert!(is_not_found(
        store.create_release(&foreign_release, &Journal::NONE).await,
        Entity::Product
    ));

    // And team A's data is intact.
    assert_eq!(
        store
            .get_license(a.id, l.id)
            .await
            .unwrap()
            .unwrap()
            .customer_ids,
        [c.id]
    );
    assert_eq!(store.get_customer(a.id, c.id).await.unwrap(), Some(c));
    assert_eq!(store.get_product(a.id, p.id).await.unwrap(), Some(p));
    assert_eq!(store.get_release(a.id, r.id).await.unwrap(), Some(r));
    assert!(
        !store
            .list_hwids(a.id, l.id, &DeviceListQuery::parse("").unwrap())
            .await
            .unwrap()
            .items[0]
            .forgotten
    );
}

fn message(team: TeamId, to: &str, due: Timestamp) -> OutboxMessage {
    OutboxMessage {
        id: MessageId::new(),
        team_id: team,
        to: to.into(),
        subject: "Your license".into(),
        body: "KEY".into(),
        attempts: 0,
        next_attempt_at: due,
        last_error: None,
        created_at: due,
    }
}

pub async fn license_mail_is_queued_with_the_license_and_limited_per_day<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    let first = license(t.id, t0());
    let mail = [
        message(t.id, "a@example.com", t0()),
        message(t.id, "b@example.com", t0()),
    ];
    store
        .create_license_with_mail(&first, &mail, 3, t0(), &Journal::NONE)
        .await
        .unwrap();
    assert!(store.get_license(t.id, first.id).await.unwrap().is_some());
    let due = store.due_messages(at(1), 10).await.unwrap();
    assert_eq!(due.len(), 2);

    // Two more would make four today: refused, and the license is not stored either.
    let second = license(t.id, t0());
    let more = [
        message(t.id, "c@example.com", t0()),
        message(t.id, "d@example.com", t0()),
    ];
    assert!(matches!(
        store
            .create_license_with_mail(&second, &more, 3, at(5), &Journal::NONE)
            .await,
        Err(StoreError::Limit(_))
    ));
    assert_eq!(store.get_license(t.id, second.id).await.unwrap(), None);
    assert_eq!(store.due_messages(at(10), 10).await.unwrap().len(), 2);
    // Another team has its own quota; tomorrow this team has a fresh one.
    store
        .create_license_with_mail(
            &license(other.id, t0()),
            &[message(other.id, "x@example.com", t0())],
            3,
            t0(),
            &Journal::NONE,
        )
        .await
        .unwrap();
    store
        .create_license_with_mail(&second, &more, 3, t0().plus_days(1), &Journal::NONE)
        .await
        .unwrap();
    // Messages queued on their own share the quota: one more fits today (day 0 has 2 of 3),
    // two do not, and then nothing is queued.
    let queued_before = store
        .due_messages(t0().plus_days(3), 100)
        .await
        .unwrap()
        .len();
    assert!(matches!(
        store
            .queue_messages(
                t.id,
                &[
                    message(t.id, "e@example.com", t0()),
                    message(t.id, "f@example.com", t0()),
                ],
                3,
                at(20),
            )
            .await,
        Err(StoreError::Limit(_))
    ));
    store
        .queue_messages(t.id, &[message(t.id, "g@example.com", t0())], 3, at(20))
        .await
        .unwrap();
    let due = store.due_messages(t0().plus_days(3), 100).await.unwrap();
    assert_eq!(due.len(), queued_before + 1);
    assert!(due.iter().any(|m| m.to == "g@example.com"));
    assert!(!due.iter().any(|m| m.to == "e@example.com"));
    assert!(is_not_found(
        store
            .queue_messages(crate::TeamId::new(), &[], 3, at(20))
            .await,
        Entity::Team
    ));
    // The usual checks apply.
    let mut dup = license(t.id, t0());
    dup.license_key = first.license_key;
    assert!(is_conflict(
        store
            .create_license_with_mail(&dup, &[], 3, t0().plus_days(2), &Journal::NONE)
            .await,
        "licenseKey"
    ));
}

pub async fn outbox_messages_are_rescheduled_and_removed<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let m = message(t.id, "a@example.com", at(0));
    let later = message(t.id, "b@example.com", at(30));
    store
        .create_license_with_mail(
            &license(t.id, t0()),
            &[later.clone(), m.clone()],
            50,
            t0(),
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert_eq!(
        store.due_messages(at(0), 10).await.unwrap(),
        std::slice::from_ref(&m)
    );
    assert_eq!(
        store.due_messages(at(30), 1).await.unwrap(),
        std::slice::from_ref(&m),
        "soonest first, limited"
    );

    let mut failed = m.clone();
    failed.attempts = 1;
    failed.next_attempt_at = at(5);
    failed.last_error = Some("connection refused".into());
    store.message_failed(&failed).await.unwrap();
    assert!(store.due_messages(at(4), 10).await.unwrap().is_empty());
    assert_eq!(
        store.due_messages(at(5), 10).await.unwrap(),
        [failed.clone()]
    );

    store.message_sent(&failed).await.unwrap();
    assert_eq!(store.due_messages(at(60), 10).await.unwrap(), [later]);
}

/// N threads record N new devices at once against a limit of `k`: exactly `k` are admitted.
pub fn concurrent_new_devices_never_exceed_the_limit<S: Store, R: BlockOn>(store: &S, runner: &R) {
    const DEVICES: usize = 24;
    const LIMIT: u32 = 7;
    let t = runner.block_on(team(store, "A"));
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(LIMIT);
    runner
        .block_on(store.create_license(&l, &Journal::NONE))
        .unwrap();
    let admitted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..DEVICES {
            let (t, l, admitted) = (&t, &l, &admitted);
            scope.spawn(move || {
                let dev = format!("device-{i:04}-concurrent");
                let result = runner
                    .block_on(store.record_activity(
                        t.id,
                        l.id,
                        &ActivityRules::new(&t.settings),
                        &activity(Some(&dev), 1),
                        at(1),
                    ))
                    .unwrap();
                if result.is_ok() {
                    admitted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(admitted.into_inner(), LIMIT as usize);
    let stored = runner
        .block_on(store.list_hwids(
            t.id,
            l.id,
            &DeviceListQuery::parse("pageSize=100&showForgotten=true").unwrap(),
        ))
        .unwrap();
    assert_eq!(stored.total, u64::from(LIMIT));
}

// ---- audit log ----

/// A journal of one entry about `resource_id`, by `actor`, at `when`.
pub fn audited(
    team: TeamId,
    action: crate::model::Action,
    resource_id: &str,
    actor: crate::model::Actor,
    when: Timestamp,
) -> Journal {
    Journal::audit(AuditEntry {
        id: crate::AuditId::new(),
        team_id: team,
        at: when,
        actor,
        address: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))),
        action,
        resource_type: action.resource().to_owned(),
        resource_id: resource_id.to_owned(),
        changes: vec![crate::model::FieldChange {
            field: "name".into(),
            old: None,
            new: Some("x".into()),
            secret: false,
            redacted: false,
        }],
        product_ids: None,
    })
}

async fn audit_of<S: Store>(store: &S, team: TeamId) -> Vec<AuditEntry> {
    let query = AuditQuery::parse("pageSize=100").unwrap();
    store.list_audit(team, &query).await.unwrap().items
}

/// Entries restored from an archive come back as they were, in their order, each once, in
/// their own team's log.
pub async fn audit_entries_are_restored_as_they_are<S: Store>(store: &S) {
    use crate::model::{Action, Actor};
    let team = team(store, "restored").await;
    let other = self::team(store, "other").await;
    let key = Actor::api_key(ApiKeyId::new(), "back end");
    let entries: Vec<AuditEntry> = (0..3)
        .flat_map(|i| {
            audited(
                team.id,
                Action::LicenseCreated,
                &format!("license-{i}"),
                key.clone(),
                at(i * 60),
            )
            .audit
        })
        .collect();
    store.restore_audit(&entries).await.unwrap();
    // Restoring again replaces, never doubles.
    store.restore_audit(&entries[1..]).await.unwrap();
    let mut listed = audit_of(store, team.id).await;
    listed.reverse();
    assert_eq!(
        listed, entries,
        "oldest first once reversed, each once, as given"
    );
    assert!(audit_of(store, other.id).await.is_empty());
}

pub async fn audit_entries_are_written_with_their_change_only<S: Store>(store: &S) {
    use crate::model::{Action, Actor};
    let team = team(store, "audited").await;
    let other = self::team(store, "other").await;
    let key = Actor::api_key(ApiKeyId::new(), "back end");
    let c = customer(team.id, "a@example.com", "Ann", t0());
    let journal = audited(
        team.id,
        Action::CustomerCreated,
        &c.id.to_string(),
        key.clone(),
        t0(),
    );
    store.create_customer(&c, &journal).await.unwrap();
    let entries = audit_of(store, team.id).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(Some(&entries[0]), journal.audit.first(), "stored as given");
    assert!(
        audit_of(store, other.id).await.is_empty(),
        "another team's log is its own"
    );

    // Failed writes leave no entry.
    let mut bad = license(team.id, t0());
    bad.customer_ids = vec![CustomerId::new()];
    let failed = audited(
        team.id,
        Action::LicenseCreated,
        &bad.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(store.create_license(&bad, &failed).await.is_err());
    let missing = customer(team.id, "b@example.com", "Bo", t0());
    let failed = audited(
        team.id,
        Action::CustomerUpdated,
        &missing.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(store.update_customer(&missing, &failed).await.is_err());
    assert!(
        store
            .delete_customer(team.id, missing.id, &failed)
            .await
            .is_err()
    );
    let failed = audited(team.id, Action::LicenseDeleted, "x", key.clone(), t0());
    assert!(
        store
            .delete_license(other.id, LicenseId::new(), &failed)
            .await
            .is_err()
    );
    let l = license(team.id, t0());
    let mail: Vec<OutboxMessage> = (0..3)
        .map(|i| OutboxMessage {
            id: MessageId::new(),
            team_id: team.id,
            to: format!("c{i}@example.com"),
            subject: "s".into(),
            body: "b".into(),
            attempts: 0,
            next_attempt_at: t0(),
            last_error: None,
            created_at: t0(),
        })
        .collect();
    let failed = audited(
        team.id,
        Action::LicenseCreated,
        &l.id.to_string(),
        key.clone(),
        t0(),
    );
    assert!(matches!(
        store
            .create_license_with_mail(&l, &mail, 2, t0(), &failed)
            .await,
        Err(StoreError::Limit(_))
    ));
    assert_eq!(
        audit_of(store, team.id).await.len(),
        1,
        "no entry of a failed write"
    );

    // Every kind of audited write records its journal.
    let j = |action, id: &str| audited(team.id, action, id, key.clone(), t0());
    let p = product(team.id, "P");
    store
        .create_product(&p, &j(Action::ProductCreated, "p"))
        .await
        .unwrap();
    let mut l = license(team.id, t0());
    l.product_ids = vec![p.id];
    store
        .create_license_with_mail(&l, &mail[..1], 10, t0(), &j(Action::LicenseCreated, "l"))
        .await
        .unwrap();
    l.suspended = true;
    store
        .update_license(&l, &j(Action::LicenseSuspended, "l"))
        .await
        .unwrap();
    let b = branch(team.id, p.id, "beta");
    store
        .create_branch(&b, &j(Action::BranchCreated, "b"))
        .await
        .unwrap();
    store
        .delete_branch(team.id, p.id, b.id, &j(Action::BranchDeleted, "b"))
        .await
        .unwrap();
    let r = release(team.id, p.id, None, "1.0.0", t0());
    store
        .create_release(&r, &j(Action::ReleaseCreated, "r"))
        .await
        .unwrap();
    store
        .update_release(&r, &j(Action::ReleaseUpdated, "r"))
        .await
        .unwrap();
    store
        .delete_release(team.id, r.id, &j(Action::ReleaseDeleted, "r"))
        .await
        .unwrap();
    let entry = BlacklistEntry {
        id: BlacklistId::new(),
        team_id: team.id,
        kind: BlacklistType::Ip,
        value: "192.0.2.1".into(),
        hits: 0,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
    };
    store
        .create_blacklist_entry(&entry, &j(Action::BlacklistCreated, "e"))
        .await
        .unwrap();
    store
        .delete_blacklist_entry(team.id, entry.id, &j(Action::BlacklistDeleted, "e"))
        .await
        .unwrap();
    let k = api_key(team.id, "second");
    store
        .create_api_key(&k, &j(Action::ApiKeyCreated, "k"))
        .await
        .unwrap();
    store
        .delete_api_keys(team.id, &[k.id], &j(Action::ApiKeyRevoked, "k"))
        .await
        .unwrap();
    let settings = TeamSettings {
        strict_customers: true,
        ..TeamSettings::default()
    };
    store
        .update_settings(team.id, &settings, t0(), &j(Action::SettingsUpdated, "t"))
        .await
        .unwrap();
    store
        .update_features(
            team.id,
            TeamFeatures { classloader: false },
            t0(),
            &j(Action::FeaturesUpdated, "t"),
        )
        .await
        .unwrap();
    let c2 = Customer {
        full_name: Some("Ann B".into()),
        ..c.clone()
    };
    store
        .update_customer(&c2, &j(Action::CustomerUpdated, "c"))
        .await
        .unwrap();
    store
        .delete_customer(team.id, c.id, &j(Action::CustomerDeleted, "c"))
        .await
        .unwrap();
    store
        .update_product(&p, &j(Action::ProductUpdated, "p"))
        .await
        .unwrap();
    store
        .delete_license(team.id, l.id, &j(Action::LicenseDeleted, "l"))
        .await
        .unwrap();
    store
        .delete_product(team.id, p.id, &j(Action::ProductDeleted, "p"))
        .await
        .unwrap();
    let actions: Vec<Action> = audit_of(store, team.id)
        .await
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions.len(), 20, "{actions:?}");
    for action in [
        Action::ProductCreated,
        Action::LicenseCreated,
        Action::LicenseSuspended,
        Action::BranchCreated,
        Action::BranchDeleted,
        Action::ReleaseCreated,
        Action::ReleaseUpdated,
        Action::ReleaseDeleted,
        Action::BlacklistCreated,
        Action::BlacklistDeleted,
        Action::ApiKeyCreated,
        Action::ApiKeyRevoked,
        Action::SettingsUpdated,
        Action::FeaturesUpdated,
        Action::CustomerUpdated,
        Action::CustomerDeleted,
        Action::ProductUpdated,
        Action::LicenseDeleted,
        Action::ProductDeleted,
    ] {
        assert!(
            actions.contains(&action),
            "{action} missing from {actions:?}"
        );
    }

    // Forgetting devices and addresses, and a new team, are audited too.
    let l = license(other.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = ActivityRules::new(&other.settings);
    let activity = activity(Some("device-0000001"), 1);
    store
        .record_activity(other.id, l.id, &rules, &activity, t0())
        .await
        .unwrap()
        .unwrap();
    let hwid = store
        .list_hwids(other.id, l.id, &DeviceListQuery::default())
        .await
        .unwrap()
        .items[0]
        .clone();
    let ip = store
        .list_ips(other.id, l.id, &DeviceListQuery::default())
        .await
        .unwrap()
        .items[0]
        .clone();
    let j = |action, id: &str| audited(other.id, action, id, Actor::admin(), t0());
    store
        .set_hwid_forgotten(
            other.id,
            l.id,
            hwid.id,
            true,
            t0(),
            &j(Action::DeviceForgotten, "h"),
        )
        .await
        .unwrap();
    store
        .set_ip_forgotten(
            other.id,
            l.id,
            ip.id,
            true,
            t0(),
            &j(Action::IpForgotten, "i"),
        )
        .await
        .unwrap();
    assert!(
        store
            .set_ip_forgotten(
                other.id,
                l.id,
                IpId::new(),
                true,
                t0(),
                &j(Action::IpForgotten, "?")
            )
            .await
            .is_err()
    );
    let third = Team {
        id: TeamId::new(),
        ..other.clone()
    };
    let first = api_key(third.id, "first");
    let created = audited(
        third.id,
        Action::TeamCreated,
        &third.id.to_string(),
        Actor::admin(),
        t0(),
    );
    store.create_team(&third, &first, &created).await.unwrap();
    let actions: Vec<Action> = audit_of(store, other.id)
        .await
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions.len(), 2);
    assert!(actions.contains(&Action::IpForgotten) && actions.contains(&Action::DeviceForgotten));
    assert_eq!(audit_of(store, third.id).await.len(), 1);
}

pub async fn audit_lists_filter_order_page_and_prune<S: Store>(store: &S) {
    use crate::api::requests::ActorFilter;
    use crate::model::{Action, Actor, ActorKind};
    let team = team(store, "audited").await;
    let one = ApiKeyId::new();
    let mut written = Vec::new();
    for i in 0..30u32 {
        let actor = if i % 3 == 0 {
            Actor::admin()
        } else {
            Actor::api_key(one, "one")
        };
        let (action, resource) = if i % 2 == 0 {
            (Action::CustomerCreated, format!("c{i}"))
        } else {
            (Action::ProductCreated, format!("p{i}"))
        };
        let journal = audited(team.id, action, &resource, actor, at(i));
        let e = journal.audit[0].clone();
        if i % 2 == 0 {
            store
                .create_customer(
                    &customer(team.id, &format!("c{i}@example.com"), "C", t0()),
                    &journal,
                )
                .await
                .unwrap();
        } else {
            store
                .create_product(&product(team.id, &format!("P{i}")), &journal)
                .await
                .unwrap();
        }
        written.push(e);
    }
    let list = |raw: &str| {
        let query = AuditQuery::parse(raw).unwrap();
        async move { store.list_audit(team.id, &query).await.unwrap() }
    };
    let page = list("pageSize=10").await;
    assert_eq!(page.total, 30);
    assert!(page.has_next_page);
    let times: Vec<Timestamp> = page.items.iter().map(|e| e.at).collect();
    assert_eq!(times[0], at(29), "newest first");
    assert!(times.windows(2).all(|w| w[0] > w[1]));
    let last = list("pageSize=10&page=3").await;
    assert_eq!(last.items.last().unwrap().at, at(0));
    assert!(!last.has_next_page);
    let oldest = list("pageSize=10&sortDirection=asc").await;
    assert_eq!(oldest.items[0].at, at(0));

    assert_eq!(list("resourceType=customer&pageSize=100").await.total, 15);
    assert_eq!(list("action=product.created&pageSize=100").await.total, 15);
    let by_id = list("resourceId=c4").await;
    assert_eq!(by_id.items.len(), 1);
    assert_eq!(by_id.items[0], written[4]);
    assert_eq!(list("actor=ADMIN&pageSize=100").await.total, 10);
    let query = AuditQuery {
        actor: Some(ActorFilter::Id(*one.as_uuid())),
        ..AuditQuery::default()
    };
    assert_eq!(store.list_audit(team.id, &query).await.unwrap().total, 20);
    let query = AuditQuery {
        actor: Some(ActorFilter::Kind(ActorKind::User)),
        ..AuditQuery::default()
    };
    assert_eq!(store.list_audit(team.id, &query).await.unwrap().total, 0);
    let query = AuditQuery {
        from: Some(at(10)),
        to: Some(at(20)),
        ..AuditQuery::default()
    };
    let window = store.list_audit(team.id, &query).await.unwrap();
    assert_eq!(window.total, 10, "from inclusive, to exclusive");
    assert!(window.items.iter().all(|e| e.at >= at(10) && e.at < at(20)));

    // Pruning removes the oldest first, at most `limit` at a time.
    assert_eq!(store.prune_audit(at(5), 3).await.unwrap(), 3);
    assert_eq!(store.prune_audit(at(5), 100).await.unwrap(), 2);
    assert_eq!(store.prune_audit(at(5), 100).await.unwrap(), 0);
    let left = list("pageSize=100&sortDirection=asc").await;
    assert_eq!(left.total, 25);
    assert_eq!(left.items[0].at, at(5));
}

/// A webhook endpoint of `team` wanting `types` (everything when empty).
pub fn endpoint(team: TeamId, types: &[&str], enabled: bool) -> crate::model::WebhookEndpoint {
    crate::model::WebhookEndpoint {
        id: crate::WebhookId::new(),
        team_id: team,
        url: "https://hooks.example.com/in".into(),
        description: None,
        event_types: types.iter().map(|t| (*t).to_owned()).collect(),
        enabled,
        disabled_reason: None,
        failing_since: None,
        alert_email: None,
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        previous_secret: None,
        previous_secret_until: None,
        created_at: t0(),
        updated_at: t0(),
        scopes: crate::model::Scopes::All,
        product_ids: None,
    }
}

fn raising(team: TeamId, event_type: &str, resource: &str, id: &str) -> Journal {
    Journal::NONE.with_event(crate::model::WebhookEvent {
        id: crate::EventId::ordered(),
        team_id: team,
        event_type: event_type.into(),
        resource_type: resource.into(),
        resource_id: id.into(),
        created_at: t0(),
        data: serde_json::json!({ "id": id }),
        changed_fields: None,
        product_ids: None,
    })
}

/// Events are queued with their write only, fan out to the endpoints that want them, and the
/// deliveries of one endpoint about one resource are claimed in order.
pub async fn webhook_events_fan_out_into_ordered_deliveries<S: Store>(store: &S) {
    use crate::model::{DeliveryStatus, WebhookDelivery};
    let team_a = team(store, "hooked").await;
    let other = team(store, "other hooked").await;
    let all = endpoint(team_a.id, &[], true);
    let mut customers = endpoint(team_a.id, &["customer.*"], true);
    customers.alert_email = Some("ops@example.com".into());
    let off = endpoint(team_a.id, &[], false);
    let foreign = endpoint(other.id, &[], true);
    for e in [&all, &customers, &off, &foreign] {
        store.create_webhook(e, &Journal::NONE).await.unwrap();
    }
    assert_eq!(
        store.list_webhooks(team_a.id).await.unwrap().len(),
        3,
        "a team lists its own endpoints"
    );
    assert_eq!(store.get_webhook(other.id, all.id).await.unwrap(), None);
    let c = customer(team_a.id, "hooked@example.com", "H", t0());
    store
        .create_customer(
            &c,
            &raising(team_a.id, "customer.created", "customer", "c1"),
        )
        .await
        .unwrap();
    // A failed write raises nothing.
    let mut missing = c.clone();
    missing.id = CustomerId::new();
    assert!(
        store
            .update_customer(
                &missing,
                &raising(team_a.id, "customer.updated", "customer", "lost")
            )
            .await
            .is_err()
    );
    let p = product(team_a.id, "Hooked");
    store
        .create_product(&p, &raising(team_a.id, "product.created", "product", "p1"))
        .await
        .unwrap();
    let mut updated = c.clone();
    updated.full_name = Some("H2".into());
    store
        .update_customer(
            &updated,
            &raising(team_a.id, "customer.updated", "customer", "c1"),
        )
        .await
        .unwrap();
    let mut fanned = 0;
    loop {
        let n = store.fan_out_events(at(1), 100).await.unwrap();
        if n == 0 {
            break;
        }
        fanned += n;
    }
    assert!(fanned >= 3);
    let mine = |ds: Vec<WebhookDelivery>| -> Vec<WebhookDelivery> {
        ds.into_iter().filter(|d| d.team_id == team_a.id).collect()
    };
    let claimed = mine(store.claim_deliveries(at(2), 1_000, 100).await.unwrap());
    let of = |ds: &[WebhookDelivery], e: crate::WebhookId| -> Vec<String> {
        let mut types: Vec<String> = ds
            .iter()
            .filter(|d| d.endpoint_id == e)
            .map(|d| d.event_type.clone())
            .collect();
        types.sort();
        types
    };
    // The update of c1 waits behind its creation on each endpoint.
    assert_eq!(
        of(&claimed, all.id),
        vec!["customer.created", "product.created"]
    );
    assert_eq!(of(&claimed, customers.id), vec!["customer.created"]);
    assert!(of(&claimed, off.id).is_empty());
    let body: serde_json::Value = serde_json::from_str(&claimed[0].payload).unwrap();
    assert_eq!(body["teamId"], team_a.id.to_string());
    for mut d in claimed {
        d.status = DeliveryStatus::Succeeded;
        d.next_attempt_at = None;
        store.update_delivery(&d).await.unwrap();
    }
    let claimed = mine(store.claim_deliveries(at(3), 1_000, 100).await.unwrap());
    assert_eq!(of(&claimed, all.id), vec!["customer.updated"]);
    assert_eq!(of(&claimed, customers.id), vec!["customer.updated"]);
    let page = store
        .list_deliveries(team_a.id, all.id, &Default::default())
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items[0].event_type, "customer.updated", "newest first");
    let one = &page.items[0];
    assert_eq!(
        store
            .get_delivery(team_a.id, all.id, one.id)
            .await
            .unwrap()
            .as_ref(),
        Some(one)
    );
    assert_eq!(
        store.get_delivery(other.id, all.id, one.id).await.unwrap(),
        None
    );
    // Health: failing for the whole window disables the endpoint once.
    let h = store
        .webhook_health(team_a.id, customers.id, false, at(4), 60_000, true)
        .await
        .unwrap()
        .unwrap();
    assert!(!h.disabled_now && h.endpoint.failing_since == Some(at(4)));
    let h = store
        .webhook_health(team_a.id, customers.id, false, at(5), 60_000, true)
        .await
        .unwrap()
        .unwrap();
    assert!(h.disabled_now && !h.endpoint.enabled);
    // Its alert address is told, once, in the same step.
    let alerts: Vec<OutboxMessage> = store
        .due_messages(at(6), 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.team_id == team_a.id)
        .collect();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].to, "ops@example.com");
    assert!(alerts[0].body.contains(&customers.url));
    assert!(
        !store
            .get_webhook(team_a.id, customers.id)
            .await
            .unwrap()
            .unwrap()
            .enabled
    );
    assert_eq!(
        store
            .webhook_health(other.id, customers.id, true, at(5), 60_000, true)
            .await
            .unwrap(),
        None
    );
    // A redelivery needs its endpoint; deleting an endpoint deletes its deliveries.
    let again = WebhookDelivery::of_payload(
        team_a.id,
        all.id,
        one.event_id,
        &one.event_type,
        one.resource.clone(),
        one.payload.clone(),
        at(6),
    );
    store.insert_delivery(&again, &Journal::NONE).await.unwrap();
    let mut stray = again.clone();
    stray.id = crate::DeliveryId::ordered();
    stray.endpoint_id = crate::WebhookId::new();
    assert!(matches!(
        store.insert_delivery(&stray, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
    assert!(matches!(
        store.delete_webhook(other.id, all.id, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
    // Finished deliveries are pruned, pending ones kept.
    let before = Timestamp::from_millis(at(3).as_millis() + 1);
    while store.prune_deliveries(before, 10).await.unwrap() > 0 {}
    let left = store
        .list_deliveries(team_a.id, all.id, &Default::default())
        .await
        .unwrap();
    assert!(
        left.items
            .iter()
            .all(|d| d.status == DeliveryStatus::Pending || d.created_at >= before)
    );
    store
        .delete_webhook(team_a.id, all.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.get_webhook(team_a.id, all.id).await.unwrap(), None);
    assert_eq!(
        store
            .get_delivery(team_a.id, all.id, again.id)
            .await
            .unwrap(),
        None
    );
    let mut gone = customers.clone();
    gone.id = crate::WebhookId::new();
    assert!(matches!(
        store.update_webhook(&gone, &Journal::NONE).await,
        Err(StoreError::NotFound(Entity::Webhook))
    ));
}

/// Fans out every queued event and sends (marks delivered) every delivery of `team`: the
/// types and bodies, in the order of their events.
async fn delivered<S: Store>(
    store: &S,
    team: TeamId,
    when: Timestamp,
) -> Vec<(String, serde_json::Value)> {
    use crate::model::WebhookDelivery;
    while store.fan_out_events(when, 100).await.unwrap() > 0 {}
    // One delivery per resource at a time: claim until none is left.
    let mut all: Vec<WebhookDelivery> = Vec::new();
    loop {
        let mut claimed: Vec<WebhookDelivery> = store
            .claim_deliveries(when, 1_000, 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|d| d.team_id == team)
            .collect();
        if claimed.is_empty() {
            break;
        }
        for d in &mut claimed {
            d.status = crate::model::DeliveryStatus::Succeeded;
            d.next_attempt_at = None;
            store.update_delivery(d).await.unwrap();
        }
        all.extend(claimed);
    }
    all.sort_by_key(|d| d.order());
    all.into_iter()
        .map(|d| {
            let body: serde_json::Value = serde_json::from_str(&d.payload).unwrap();
            (d.event_type, body)
        })
        .collect()
}

/// The events of an admitted client request are written in its atomic step (only those the
/// team wants), and a raised event with a mark is queued once per license and mark.
pub async fn client_events_are_written_with_their_records_and_raised_once<S: Store>(store: &S) {
    use crate::model::{ClientEvent, ClientEvents};
    use crate::store::RaisedEvent;
    let t = team(store, "client events").await;
    let all = endpoint(t.id, &[], true);
    store.create_webhook(&all, &Journal::NONE).await.unwrap();
    let mut l = license(t.id, t0());
    l.expiration_type = ExpirationType::Duration;
    l.expiration_start = ExpirationStart::Activation;
    l.expiration_days = Some(7);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let mut rules = ActivityRules::new(&t.settings);
    rules.events = ClientEvents::ALL;
    store
        .record_activity(t.id, l.id, &rules, &activity(Some("device-one"), 1), at(1))
        .await
        .unwrap()
        .unwrap();
    let events = delivered(store, t.id, at(1)).await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, vec!["device.activated", "license.activated"]);
    assert_eq!(events[0].1["data"]["identifier"], "device-one");
    assert_eq!(events[0].1["data"]["licenseId"], l.id.to_string());
    assert_eq!(events[1].1["data"]["id"], l.id.to_string());
    assert!(events[1].1["data"]["expirationDate"].is_string());
    // Known records raise nothing; a new device of a team that wants nothing raises nothing.
    store
        .record_activity(t.id, l.id, &rules, &activity(Some("device-one"), 1), at(2))
        .await
        .unwrap()
        .unwrap();
    store
        .record_activity(
            t.id,
            l.id,
            &ActivityRules::new(&t.settings),
            &activity(Some("device-two"), 2),
            at(3),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(delivered(store, t.id, at(3)).await.is_empty());
    // Marks: once per license and value; none for a license that is gone.
    let expired = |mark: i64| RaisedEvent {
        event: ClientEvent::LicenseExpired.event(
            t.id,
            "license",
            l.id,
            serde_json::json!({ "id": l.id }),
            at(4),
        ),
        once: Some((l.id, mark)),
    };
    assert_eq!(store.raise_events(&[expired(5)]).await.unwrap(), 1);
    assert_eq!(
        store.raise_events(&[expired(5), expired(5)]).await.unwrap(),
        0
    );
    assert_eq!(store.raise_events(&[expired(6)]).await.unwrap(), 1);
    let plain = RaisedEvent {
        once: None,
        ..expired(0)
    };
    assert_eq!(store.raise_events(&[plain]).await.unwrap(), 1);
    let types: Vec<String> = delivered(store, t.id, at(5))
        .await
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(types.len(), 3);
    assert!(types.iter().all(|t| t == "license.expired"));
    store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert_eq!(store.raise_events(&[expired(7)]).await.unwrap(), 0);
}
