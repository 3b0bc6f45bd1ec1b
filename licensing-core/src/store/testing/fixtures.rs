//! The records the cases build: teams, keys, licenses, customers, products, branches, releases and activity.

use super::*;

pub(super) fn t0() -> Timestamp {
    Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
}

pub(super) fn at(minutes: u32) -> Timestamp {
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
        signing_keys: Vec::new(),
        next_keys: None,
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

pub(super) fn api_key(team: TeamId, name: &str) -> ApiKeyRecord {
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
        entitlement_ids: Vec::new(),
        session_limit: None,
        session_ttl: None,
        policy_id: None,
        overrides: Vec::new(),
        suspension_reason: None,
        meters: Vec::new(),
    }
}

/// A policy named `name` without terms, of `team`.
pub fn policy(team: TeamId, name: &str, created: Timestamp) -> crate::model::Policy {
    crate::model::Policy::new(team, name.into(), created)
}

pub(super) fn customer(team: TeamId, email: &str, name: &str, created: Timestamp) -> Customer {
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

/// A product named `name` of `team`, without metadata or update settings.
pub fn product(team: TeamId, name: &str) -> Product {
    Product {
        id: ProductId::new(),
        name: name.into(),
        url: None,
        metadata: Vec::new(),
        entitlement_ids: Vec::new(),
        updater_public_key: None,
        sparkle_public_key: None,
        sign_updates: false,
        update_feed: Default::default(),
        team_id: team,
        created_by_user_id: UserId::ADMIN,
        created_at: t0(),
        updated_at: t0(),
    }
}

pub(super) fn branch(team: TeamId, product: ProductId, name: &str) -> Branch {
    Branch {
        id: BranchId::new(),
        name: BranchName::parse(name).unwrap(),
        product_id: product,
        team_id: team,
        created_at: t0(),
        updated_at: t0(),
    }
}

/// A published release of `product` (on `branch`) with a jar file record, created at `created`.
pub fn release(
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
        notes: None,
        critical: false,
        rollout_percent: Default::default(),
        artifacts: Vec::new(),
    }
}

pub(super) fn activity(device: Option<&str>, last_octet: u8) -> Activity {
    Activity {
        label: Default::default(),
        hardware_id: device.map(|d| HardwareId::parse(d).unwrap()),
        ip: IpAddr::V4(Ipv4Addr::new(198, 51, 100, last_octet)),
        country: Some(Country::from_code("FI").unwrap()),
        session: SessionStep::None,
    }
}

/// [`activity`] that starts (`Some(true)`) or extends (`Some(false)`) session `id` of `ttl`
/// seconds.
pub(super) fn session_activity(
    device: &str,
    last_octet: u8,
    id: LicenseSessionId,
    start: bool,
    ttl: u32,
) -> Activity {
    Activity {
        session: if start {
            SessionStep::Start { id, ttl }
        } else {
            SessionStep::Extend { id, ttl }
        },
        ..activity(Some(device), last_octet)
    }
}

pub(super) fn is_not_found<T: std::fmt::Debug>(r: StoreResult<T>, entity: Entity) -> bool {
    matches!(r, Err(StoreError::NotFound(e)) if e == entity)
}

pub(super) fn is_conflict<T: std::fmt::Debug>(r: StoreResult<T>, on: &str) -> bool {
    matches!(r, Err(StoreError::Conflict { field, .. }) if field == on)
}
