//! The store's conformance suite on sled, and its own cases (durability, flushing, formats).

use std::sync::OnceLock;

use licensing_core::store::testing::BlockOn;

/// Runs the suite's futures on one shared tokio runtime (the store needs none, but the
/// server's own futures will).
struct Tokio;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

impl BlockOn for Tokio {
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        runtime().block_on(f)
    }
}

#[test]
fn records_and_counters_survive_reopening() {
    use licensing_core::api::requests::LicenseListQuery;
    use licensing_core::store::{LicenseStore, StatsStore, TeamStore, testing};

    let dir = tempfile::tempdir().expect("tempdir");
    let (team, license) = Tokio.block_on(async {
        let store = super::SledStore::open(dir.path()).expect("open");
        let team = testing::team(&store, "A").await;
        let license = testing::license(team.id, licensing_core::Timestamp::now());
        store
            .create_license(&license, &licensing_core::store::Journal::NONE)
            .await
            .expect("create");
        (team, license)
    });
    // The first handle is dropped; a new one sees everything.
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.path()).expect("reopen");
        assert!(!store.is_empty().expect("is_empty"));
        assert_eq!(
            store.get_team(team.id).await.expect("team"),
            Some(team.clone())
        );
        assert_eq!(
            store
                .get_license(team.id, license.id)
                .await
                .expect("license"),
            Some(license.clone())
        );
        let page = store
            .list_licenses(team.id, &LicenseListQuery::parse("").expect("query"))
            .await
            .expect("list");
        assert_eq!((page.total, page.items.len()), (1, 1));
        let overview = store
            .overview(team.id, licensing_core::Timestamp::from_millis(0))
            .await
            .expect("overview");
        assert_eq!(overview.total_licenses, 1);
    });
}

/// Many concurrent durable writes (each waiting for a flush that covers it) complete. A
/// stress check: the deadlock that `apply_batch` next to sled's flushes caused showed at once
/// in the release-build `lists` bench, but rarely in a debug build.
#[test]
fn concurrent_durable_writes_do_not_deadlock() {
    use licensing_core::store::{LicenseStore, testing};

    Tokio.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = super::SledStore::open(dir.path()).expect("open");
        let team = testing::team(&store, "A").await;
        let writers: Vec<_> = (0..64)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..30 {
                        let license = testing::license(team.id, licensing_core::Timestamp::now());
                        store
                            .create_license(&license, &licensing_core::store::Journal::NONE)
                            .await
                            .expect("create");
                    }
                })
            })
            .collect();
        let all = async {
            for w in writers {
                w.await.expect("writer");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), all)
            .await
            .expect("concurrent writes must finish (no deadlock)");
        let q = licensing_core::api::requests::LicenseListQuery::parse("").expect("query");
        assert_eq!(
            store.list_licenses(team.id, &q).await.expect("list").total,
            64 * 30
        );
    });
}

/// The hot path: a device that already counts is admitted without a write; its refresh
/// waits in memory, yet readers, limit checks and a reopened store all see it, and it never
/// brings back a deleted record.
#[test]
fn refreshes_of_counted_devices_wait_in_memory_but_are_never_lost_or_stale() {
    use licensing_core::api::ResultCode;
    use licensing_core::api::requests::DeviceListQuery;
    use licensing_core::model::{Hwid, TeamSettings};
    use licensing_core::store::{
        Activity, ActivityStore, DeviceStore, LicenseStore, Recorded, testing,
    };
    use licensing_core::validate::HardwareId;
    use licensing_core::verify::RecordChange;

    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = licensing_core::Timestamp::from_millis(1_800_000_000_000);
    let at =
        |seconds: i64| licensing_core::Timestamp::from_millis(1_800_000_000_000 + seconds * 1000);
    let settings = TeamSettings {
        hwid_timeout: Some(60),
        ..TeamSettings::default()
    };
    let activity = |device: &str| Activity {
        label: Default::default(),
        hardware_id: Some(HardwareId::parse(device).expect("hwid")),
        ip: std::net::IpAddr::from([198, 51, 100, 7]),
        country: None,
        session: Default::default(),
    };
    let stored_hwids = |store: &super::SledStore, team, license| -> Vec<Hwid> {
        store.usage(super::tag::HWID, team, license).expect("scan")
    };
    let (team, license) = Tokio.block_on(async {
        let store = super::SledStore::open(dir.path()).expect("open");
        let team = testing::team(&store, "A").await;
        let mut license = testing::license(team.id, t0);
        license.hwid_limit = Some(1);
        store
            .create_license(&license, &licensing_core::store::Journal::NONE)
            .await
            .expect("create");
        let record = |device: &'static str, now| {
            let (store, settings) = (store.clone(), settings.clone());
            async move {
                store
                    .record_activity(
                        team.id,
                        license.id,
                        &licensing_core::store::ActivityRules::new(&settings),
                        &activity(device),
                        now,
                    )
                    .await
                    .expect("store")
            }
        };
        let first: Recorded = record("device-a-0000", t0).await.expect("first device");
        assert_eq!(first.admission.hwid, Some(RecordChange::Create));

        // 59 minutes later the device still counts: admitted, nothing written yet.
        let seen = at(59 * 60);
        let again = record("device-a-0000", seen).await.expect("known device");
        assert_eq!(again.license.last_active_at, Some(seen));
        assert_eq!(
            stored_hwids(&store, team.id, license.id)[0].last_seen_at,
            t0
        );
        // Readers see it all the same.
        let fetched = store.get_license(team.id, license.id).await.expect("get");
        assert_eq!(fetched.expect("license").last_active_at, Some(seen));
        let listed = store
            .list_hwids(
                team.id,
                license.id,
                &DeviceListQuery::parse("").expect("query"),
            )
            .await
            .expect("list");
        assert_eq!(listed.items[0].last_seen_at, seen);

        // A later refresh waits again; a new device two minutes on is counted against it,
        // exactly: the first device was seen 60 minutes before, not 62.
        let last = at(60 * 60);
        record("device-a-0000", last).await.expect("known device");
        assert_eq!(
            stored_hwids(&store, team.id, license.id)[0].last_seen_at,
            seen
        );
        let refused = record("device-b-0000", at(62 * 60))
            .await
            .expect_err("limit");
        assert_eq!(refused.code, ResultCode::HwidLimitReached);
        assert_eq!(
            stored_hwids(&store, team.id, license.id)[0].last_seen_at,
            last
        );

        // One more refresh is left waiting when the store is dropped.
        record("device-a-0000", at(61 * 60))
            .await
            .expect("known device");
        (team, license)
    });
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.path()).expect("reopen");
        let hwids = stored_hwids(&store, team.id, license.id);
        assert_eq!(hwids.len(), 1);
        assert_eq!(hwids[0].last_seen_at, at(61 * 60), "flushed when dropped");
        // A refresh that raced the license's deletion (admitted from a read before it,
        // added after it) does not bring anything back.
        let ips: Vec<licensing_core::model::IpRecord> = store
            .usage(super::tag::IP, team.id, license.id)
            .expect("scan");
        store
            .delete_license(team.id, license.id, &licensing_core::store::Journal::NONE)
            .await
            .expect("delete");
        store.inner.refreshes.add(
            team.id,
            license.id,
            Some(super::hwid_digest(&hwids[0].identifier)),
            super::addr16(ips[0].address),
            None,
            at(62 * 60),
        );
        store.flush().await.expect("flush");
        assert_eq!(
            store.get_license(team.id, license.id).await.expect("get"),
            None
        );
        assert!(stored_hwids(&store, team.id, license.id).is_empty());
    });
}

/// BUG-9: at the cap on stored records, or with a limit and a team timeout, each new address
/// read every record of its license (6.4 ms at 10,000) under a lock other licenses shared.
/// Now the atomic step reads the index by last use: the entries that decide, never what the
/// license holds besides.
#[test]
fn a_full_license_admits_reading_only_what_decides() {
    use licensing_core::api::ResultCode;
    use licensing_core::model::{IpRecord, TeamSettings};
    use licensing_core::store::{
        Activity, ActivityRules, ActivityStore, DeviceStore, Journal, LicenseStore, testing,
    };
    use licensing_core::{IpId, Timestamp};

    const HELD: u32 = 2_000;
    let now = Timestamp::from_millis(1_800_000_000_000);
    let hours_ago = |h: i64| Timestamp::from_millis(now.as_millis() - h * 3_600_000);
    Tokio.block_on(async {
        let store = super::SledStore::temporary().expect("open");
        let team = testing::team(&store, "A").await;
        // A license holding HELD addresses, all but three seen long ago.
        let full = |ip_limit: Option<u32>| {
            let store = store.clone();
            async move {
                let mut license = testing::license(team.id, now);
                license.ip_limit = ip_limit;
                store
                    .create_license(&license, &Journal::NONE)
                    .await
                    .expect("create");
                let ips: Vec<IpRecord> = (0..HELD)
                    .map(|i| IpRecord {
                        id: IpId::new(),
                        address: std::net::IpAddr::from([10, 0, (i / 256) as u8, i as u8]),
                        forgotten: false,
                        country: None,
                        alpha2: None,
                        alpha3: None,
                        license_id: license.id,
                        team_id: team.id,
                        last_seen_at: if i < 3 { now } else { hours_ago(48) },
                        created_at: hours_ago(48),
                        updated_at: hours_ago(48),
                    })
                    .collect();
                store
                    .restore_usage(team.id, license.id, &[], &ips)
                    .await
                    .expect("restore");
                license
            }
        };
        let new_address = |n: u8| Activity {
            label: Default::default(),
            hardware_id: None,
            ip: std::net::IpAddr::from([198, 51, 100, n]),
            country: None,
            session: Default::default(),
        };
        let admit = |license: licensing_core::LicenseId, settings: TeamSettings, n: u8| {
            let store = store.clone();
            async move {
                let before = store.index_reads();
                let mut rules = ActivityRules::new(&settings);
                rules.max_records = HELD;
                let outcome = store
                    .record_activity(team.id, license, &rules, &new_address(n), now)
                    .await
                    .expect("store");
                (outcome, store.index_reads() - before)
            }
        };
        let timeout = TeamSettings {
            ip_timeout: Some(60),
            ..TeamSettings::default()
        };

        // A limit of 5 with a timeout: three count, so a new address is admitted (the
        // cap makes room first); what is read is the entries within the timeout, and the
        // oldest that count against nothing, a batch of them.
        let limited = full(Some(5)).await;
        let (outcome, reads) = admit(limited.id, timeout.clone(), 1).await;
        outcome.expect("admitted");
        let batch = licensing_core::store::prune_batch(HELD) as u64;
        assert!(reads <= 3 + batch + 1, "read {reads} of {HELD}");
        // The next new address: room was made, so only the counting is read.
        let (outcome, reads) = admit(limited.id, timeout.clone(), 2).await;
        outcome.expect("admitted");
        assert!(reads <= 5, "read {reads}");
        // Five count now: refused, having read no more than the limit.
        let (refused, reads) = admit(limited.id, timeout.clone(), 3).await;
        assert_eq!(refused.expect_err("limit").code, ResultCode::IpLimitReached);
        assert!(reads <= 5, "read {reads}");

        // Full, and nothing may be dropped (every record counts against a limit above the
        // cap): refused without reading the records.
        let stuck = full(Some(HELD + 1)).await;
        let (refused, reads) = admit(stuck.id, TeamSettings::default(), 5).await;
        assert_eq!(refused.expect_err("cap").code, ResultCode::IpLimitReached);
        assert_eq!(reads, 0);
        // The store is sound: every record has its entry, and no entry is stray.
        let report = store.check().expect("check");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    });
}

/// A store of format 1 (devices and addresses keyed by record id, no counts, no version) is
/// migrated when opened: records keep their ids, a request finds its own records, the counts
/// hold, and a device stored twice keeps its latest record.
#[test]
fn a_format_1_store_is_migrated_when_opened() {
    use licensing_core::api::requests::DeviceListQuery;
    use licensing_core::model::{Hwid, IpRecord};
    use licensing_core::store::{ActivityRules, ActivityStore, DeviceStore, testing};
    use licensing_core::validate::HardwareId;
    use licensing_core::verify::RecordChange;
    use licensing_core::{HwidId, IpId, Timestamp};

    // The store in a directory of the temporary one, so that the copy made beside it before
    // the migration goes when the test ends, passed or not.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let t0 = Timestamp::from_millis(1_800_000_000_000);
    let (team, license) = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        let team = testing::team(&store, "A").await;
        let mut license = testing::license(team.id, t0);
        license.hwid_limit = Some(2);
        use licensing_core::store::LicenseStore;
        store
            .create_license(&license, &licensing_core::store::Journal::NONE)
            .await
            .expect("create");
        (team, license)
    });
    // Rewrite the store as format 1 would have left it.
    let hwid = |id: HwidId, device: &str, seen: i64| Hwid {
        name: None,
        platform: None,
        id,
        identifier: HardwareId::parse(device).expect("hwid"),
        forgotten: false,
        license_id: license.id,
        team_id: team.id,
        last_seen_at: Timestamp::from_millis(1_800_000_000_000 + seen),
        created_at: t0,
        updated_at: t0,
    };
    let kept = HwidId::new();
    let records = [
        hwid(kept, "device-a-0000", 2_000),
        hwid(HwidId::new(), "device-a-0000", 1_000),
    ];
    let ip = IpRecord {
        id: IpId::new(),
        address: "198.51.100.7".parse().expect("ip"),
        forgotten: true,
        country: None,
        alpha2: None,
        alpha3: None,
        license_id: license.id,
        team_id: team.id,
        last_seen_at: t0,
        created_at: t0,
        updated_at: t0,
    };
    {
        // The store was dropped a moment ago: its lock may not be free yet.
        let config = sled::Config::new().path(dir.as_path());
        let db = super::open_db(&config, super::REOPEN_LOCK_WAIT).expect("raw open");
        let tree = db.open_tree("data").expect("tree");
        tree.remove(super::format::version_key())
            .expect("unversion");
        for table in [super::tag::HWID, super::tag::IP] {
            tree.remove(super::tally_key(table, team.id, license.id))
                .expect("uncount");
        }
        for h in &records {
            let k = super::key(&[
                &[super::tag::HWID],
                team.id.as_bytes(),
                license.id.as_bytes(),
                h.id.as_bytes(),
            ]);
            tree.insert(k, serde_json::to_vec(h).expect("json"))
                .expect("put");
        }
        let k = super::key(&[
            &[super::tag::IP],
            team.id.as_bytes(),
            license.id.as_bytes(),
            ip.id.as_bytes(),
        ]);
        tree.insert(k, serde_json::to_vec(&ip).expect("json"))
            .expect("put");
        db.flush().expect("flush");
    }
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("migrating open");
        assert_eq!(
            super::format::version(&store.inner.tree).expect("version"),
            super::format::FORMAT
        );
        let q = DeviceListQuery::parse("showForgotten=true").expect("query");
        let hwids = store
            .list_hwids(team.id, license.id, &q)
            .await
            .expect("list");
        assert_eq!(hwids.total, 1, "the duplicate is merged");
        assert_eq!(
            hwids.items[0].id, kept,
            "the latest record is kept, with its id"
        );
        let ips = store.list_ips(team.id, license.id, &q).await.expect("list");
        assert_eq!((ips.total, ips.items[0].id), (1, ip.id));
        // The migrated device is found as the request's own; the counts are right: one
        // more device fits under the limit of two, a third does not.
        let settings = licensing_core::model::TeamSettings::default();
        let rules = ActivityRules::new(&settings);
        let record = |device: &'static str| {
            let (store, rules) = (store.clone(), rules);
            async move {
                let activity = licensing_core::store::Activity {
                    label: Default::default(),
                    hardware_id: Some(HardwareId::parse(device).expect("hwid")),
                    ip: "198.51.100.7".parse().expect("ip"),
                    country: None,
                    session: Default::default(),
                };
                store
                    .record_activity(team.id, license.id, &rules, &activity, Timestamp::now())
                    .await
                    .expect("store")
            }
        };
        let own = record("device-a-0000").await.expect("known device");
        assert_eq!(
            own.admission.hwid,
            Some(RecordChange::Refresh {
                id: kept,
                was_forgotten: false
            })
        );
        record("device-b-0000").await.expect("second device");
        assert!(record("device-c-0000").await.is_err(), "the limit holds");
    });
    // The store as it was is copied beside it before the migration.
    let copy = super::format::backup_path(dir.as_path(), 1);
    assert!(copy.join("conf").exists(), "{}", copy.display());
    std::fs::remove_dir_all(&copy).expect("remove the copy");
}

/// The sled database of a store just dropped, opened as it is. The store's background
/// threads let go of the directory's lock a moment after the drop; under a loaded machine
/// that moment can be long.
fn raw_open(dir: &std::path::Path) -> sled::Db {
    let mut tries = 0;
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(_) if tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => panic!("raw open: {e}"),
        }
    }
}

/// A store of format 2 (pending deliveries indexed by delivery id) is migrated when opened:
/// its pending delivery is still claimed.
#[test]
fn a_format_2_store_keeps_its_pending_deliveries() {
    use licensing_core::model::WebhookDelivery;
    use licensing_core::store::{Journal, WebhookStore, testing};
    use licensing_core::{EventId, Timestamp};

    // The store in a directory of the temporary one, so that the copy made beside it before
    // the migration goes when the test ends, passed or not.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let now = Timestamp::from_millis(1_800_000_000_000);
    let delivery = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        let team = testing::team(&store, "A").await;
        let endpoint = testing::endpoint(team.id, &[], true);
        store
            .create_webhook(&endpoint, &Journal::NONE)
            .await
            .expect("create");
        let d = WebhookDelivery::of_payload(
            team.id,
            endpoint.id,
            EventId::ordered(),
            "license.created",
            "license:1".into(),
            "{}".into(),
            now,
        );
        store
            .insert_delivery(&d, &Journal::NONE)
            .await
            .expect("insert");
        d
    });
    {
        let db = raw_open(dir.as_path());
        let tree = db.open_tree("data").expect("tree");
        set_format(&tree, 2);
        let prefix = [super::tag::INDEX, super::tag::DELIVERY];
        for kv in tree.scan_prefix(prefix) {
            tree.remove(kv.expect("scan").0).expect("remove");
        }
        tree.insert(
            super::key(&[&prefix, delivery.id.as_bytes()]),
            super::key(&[delivery.team_id.as_bytes(), delivery.endpoint_id.as_bytes()]),
        )
        .expect("old entry");
        db.flush().expect("flush");
    }
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("migrating open");
        assert_eq!(
            super::format::version(&store.inner.tree).expect("version"),
            super::format::FORMAT
        );
        let claimed = store
            .claim_deliveries(now, 60_000, 10)
            .await
            .expect("claim");
        assert_eq!(
            claimed.iter().map(|d| d.id).collect::<Vec<_>>(),
            vec![delivery.id]
        );
    });
    // The store as it was before, copied beside it, still of format 2.
    let copy = super::format::backup_path(dir.as_path(), 2);
    {
        let db = raw_open(&copy);
        let tree = db.open_tree("data").expect("tree");
        assert_eq!(super::format::version(&tree).expect("version"), 2);
    }
    std::fs::remove_dir_all(&copy).expect("remove the copy");
    // A store of this format is not copied again.
    drop(super::SledStore::open(dir.as_path()).expect("reopen"));
    assert!(!copy.exists());
}

/// Marks a closed store's tree as written in `format`.
/// A store of format 4 (a staff address indexed without its team, no index of records by
/// last use) is migrated when opened: its accounts are found by address, each record gets
/// its entry, and `check` finds it sound.
#[test]
fn a_format_4_store_gets_its_addresses_by_team_and_its_records_by_last_use() {
    use licensing_core::Timestamp;
    use licensing_core::model::{Role, StaffUser};
    use licensing_core::store::{
        Activity, ActivityRules, ActivityStore, Journal, LicenseStore, StaffStore, testing,
    };
    use licensing_core::validate::{Email, HardwareId};

    // The store in a directory of the temporary one, so that the copy made beside it before
    // the migration goes when the test ends, passed or not.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let now = Timestamp::from_millis(1_800_000_000_000);
    let ann = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        let team = testing::team(&store, "A").await;
        let license = testing::license(team.id, now);
        store
            .create_license(&license, &Journal::NONE)
            .await
            .expect("create");
        let activity = Activity {
            label: Default::default(),
            hardware_id: Some(HardwareId::parse("device-a-0000").expect("hwid")),
            ip: "198.51.100.7".parse().expect("ip"),
            country: None,
            session: Default::default(),
        };
        store
            .record_activity(
                team.id,
                license.id,
                &ActivityRules::new(&licensing_core::model::TeamSettings::default()),
                &activity,
                now,
            )
            .await
            .expect("store")
            .expect("admitted");
        let ann = StaffUser {
            id: licensing_core::StaffId::new(),
            team_id: team.id,
            email: Email::parse("ann@example.com").expect("email"),
            role: Role::Owner,
            password_hash: None,
            password_link: None,
            created_at: now,
            updated_at: now,
            two_step: None,
            time_zone: None,
            pending_email: None,
        };
        store
            .create_staff(&ann, &Journal::NONE)
            .await
            .expect("staff");
        ann
    });
    // Back to format 4's layout: the address alone as the key, no index by last use.
    {
        let db = raw_open(dir.as_path());
        let tree = db.open_tree("data").expect("tree");
        set_format(&tree, 4);
        let new = super::staff::email_key("ann@example.com", ann.team_id);
        tree.remove(&new).expect("remove");
        tree.insert(
            super::keys::key(&[&[super::tag::STAFF_EMAIL], b"ann@example.com"]),
            ann.id.as_bytes().to_vec(),
        )
        .expect("put");
        let entries: Vec<_> = tree
            .scan_prefix([super::tag::SEEN])
            .keys()
            .map(|k| k.expect("key"))
            .collect();
        assert_eq!(entries.len(), 2, "a device and an address");
        for k in entries {
            tree.remove(k).expect("remove");
        }
        db.flush().expect("flush");
    }
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("migrating open");
        assert_eq!(
            super::format::version(&store.inner.tree).expect("version"),
            super::format::FORMAT
        );
        assert_eq!(
            store
                .find_staff_by_email("ann@example.com")
                .await
                .expect("find"),
            std::slice::from_ref(&ann)
        );
        assert_eq!(store.inner.tree.scan_prefix([super::tag::SEEN]).count(), 2);
        let report = store.check().expect("check");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    });
}

fn set_format(tree: &sled::Tree, format: u32) {
    tree.insert(super::format::version_key(), &format.to_be_bytes())
        .expect("version");
}

/// Rewrites every record of `table` as JSON, as format 3 stored it; returns how many.
fn as_json<T: super::Record>(tree: &sled::Tree, table: u8) -> usize {
    let mut rewritten = 0;
    for kv in tree.scan_prefix([table]) {
        let (k, v) = kv.expect("scan");
        let record: T = super::decode(&v).expect("record");
        tree.insert(k, serde_json::to_vec(&record).expect("json"))
            .expect("put");
        rewritten += 1;
    }
    rewritten
}

/// A store of format 3 (every record JSON) is migrated when opened: the records of the
/// binary kinds are rewritten in it and read back the same; a migration cut short (some
/// records rewritten, the version not yet) reads the same too.
#[test]
fn a_format_3_store_is_rewritten_in_the_binary_form() {
    use licensing_core::Timestamp;
    use licensing_core::model::{Hwid, License};
    use licensing_core::store::{
        Activity, ActivityRules, ActivityStore, DeviceStore, LicenseStore, TeamStore, testing,
    };
    use licensing_core::validate::HardwareId;

    // The store in a directory of the temporary one, so that the copy made beside it before
    // the migration goes when the test ends, passed or not.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let now = Timestamp::from_millis(1_800_000_000_000);
    let (team, license) = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        let team = testing::team(&store, "A").await;
        let license = testing::license(team.id, now);
        store
            .create_license(&license, &licensing_core::store::Journal::NONE)
            .await
            .expect("create");
        let settings = licensing_core::model::TeamSettings::default();
        let activity = Activity {
            label: Default::default(),
            hardware_id: Some(HardwareId::parse("device-a-0000").expect("hwid")),
            ip: "198.51.100.7".parse().expect("ip"),
            country: None,
            session: Default::default(),
        };
        store
            .record_activity(
                team.id,
                license.id,
                &ActivityRules::new(&settings),
                &activity,
                now,
            )
            .await
            .expect("store")
            .expect("admitted");
        let license = store
            .get_license(team.id, license.id)
            .await
            .expect("read")
            .expect("license");
        (team, license)
    });
    let q = licensing_core::api::requests::DeviceListQuery::parse("").expect("query");
    let hwids_before = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        store
            .list_hwids(team.id, license.id, &q)
            .await
            .expect("list")
    });
    assert_eq!(hwids_before.total, 1);
    // Rewrite it as format 3 held it: JSON; the address record is left binary, as a
    // migration cut short leaves some records.
    let tables = [super::tag::LICENSE, super::tag::HWID, super::tag::IP];
    {
        let db = raw_open(dir.as_path());
        let tree = db.open_tree("data").expect("tree");
        set_format(&tree, 3);
        let rewritten = as_json::<License>(&tree, super::tag::LICENSE)
            + as_json::<Hwid>(&tree, super::tag::HWID);
        assert_eq!(rewritten, 2);
        db.flush().expect("flush");
    }
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("migrating open");
        assert_eq!(
            super::format::version(&store.inner.tree).expect("version"),
            super::format::FORMAT
        );
        for table in tables {
            for kv in store.inner.tree.scan_prefix([table]) {
                let (_, v) = kv.expect("scan");
                assert_eq!(v[0], super::codec::BINARY_V1, "table {}", table as char);
            }
        }
        assert_eq!(
            store.get_license(team.id, license.id).await.expect("read"),
            Some(license.clone())
        );
        assert_eq!(
            store
                .list_hwids(team.id, license.id, &q)
                .await
                .expect("list"),
            hwids_before
        );
        assert_eq!(
            store.get_team(team.id).await.expect("team"),
            Some(team.clone())
        );
    });
    let copy = super::format::backup_path(dir.as_path(), 3);
    assert!(copy.join("conf").exists(), "{}", copy.display());
    std::fs::remove_dir_all(&copy).expect("remove the copy");
}

#[test]
fn a_store_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(super::SledStore::open(dir.path()).expect("open"));
    {
        let db = raw_open(dir.path());
        let tree = db.open_tree("data").expect("tree");
        set_format(&tree, 99);
        db.flush().expect("flush");
    }
    let error = super::SledStore::open(dir.path()).expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("newer licensing-server (format 99)"),
        "{text}"
    );
}

licensing_core::store_test_suite!(
    runner: Tokio,
    store: async { super::SledStore::temporary().expect("temporary store") },
);

/// The space breakdown counts every live entry once, by kind (a license's record, its entry by
/// key and its index entries apart), and the kept answers apart.
#[test]
fn the_space_breakdown_counts_each_kind_of_entry() {
    use licensing_core::idempotency::{
        Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer,
    };
    use licensing_core::store::{IdempotencyStore, LicenseStore, testing};

    Tokio.block_on(async {
        let store = super::SledStore::temporary().expect("open");
        let team = testing::team(&store, "A").await;
        let before = store.space().expect("space");
        for _ in 0..3 {
            let license = testing::license(team.id, licensing_core::Timestamp::now());
            store
                .create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .expect("create");
        }
        let (owner, key, print) = (
            IdempotencyOwner::admin(),
            IdempotencyKey::parse(b"space").expect("key"),
            Fingerprint([4; 32]),
        );
        let now = licensing_core::Timestamp::now();
        assert_eq!(
            store
                .claim_idempotency_key(&owner, &key, print, now)
                .await
                .expect("claim"),
            Claim::Run
        );
        let answer = KeptAnswer {
            status: 201,
            content_type: "application/json".into(),
            headers: Vec::new(),
            body: b"{\"id\":1}".to_vec(),
        };
        store
            .keep_idempotent_answer(&owner, &key, print, &answer)
            .await
            .expect("keep");
        let after = store.space().expect("space");
        let entries = |space: &super::Space, kind: &str| {
            space
                .kinds
                .iter()
                .find(|k| k.kind == kind)
                .map_or(0, |k| k.entries)
        };
        assert_eq!(entries(&after, "license") - entries(&before, "license"), 3);
        assert_eq!(entries(&after, "license by key"), 3);
        assert!(entries(&after, "index: license") >= 3, "{:?}", after.kinds);
        assert_eq!(entries(&after, "team"), 1);
        assert_eq!(entries(&after, "kept answer"), 1);
        let kept = after
            .kinds
            .iter()
            .find(|k| k.kind == "kept answer")
            .unwrap();
        assert!(kept.value_bytes > answer.body.len() as u64);
        let mut names: Vec<&str> = after.kinds.iter().map(|k| k.kind.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), after.kinds.len(), "each kind once");
        assert!(after.live_bytes() > before.live_bytes());
        assert_eq!(entries(&after, "kept answer's mark"), 1);
        assert!(after.records_on_disk > 0 && after.answers_on_disk > 0);
    });
}

/// A filtered list answered from the team's license table (`license_table.rs`) is what every
/// license read and filtered one by one gives, after each kind of write: created, suspended, key
/// changed, expired, deleted, and written by another task while the table is being built.
#[test]
fn filtered_lists_follow_every_write_once_their_table_is_built() {
    use licensing_core::api::requests::LicenseListQuery;
    use licensing_core::model::{ExpirationType, License};
    use licensing_core::store::{Journal, LicenseStore, license_matches, page_of, testing};
    use licensing_core::{LicenseKey, Timestamp};

    let store = super::SledStore::temporary().expect("store");
    Tokio.block_on(async {
        let team = testing::team(&store, "A").await.id;
        let other = testing::team(&store, "B").await.id;
        let mut licenses: Vec<License> = Vec::new();
        for i in 0..40 {
            let mut l = testing::license(team, Timestamp::from_millis(1_000 + i / 4));
            l.suspended = i % 3 == 0;
            store.create_license(&l, &Journal::NONE).await.unwrap();
            licenses.push(l);
        }
        // Another team's license with a key sharing a group: never listed.
        let mut foreign = testing::license(other, Timestamp::from_millis(1_000));
        foreign.license_key = licenses[0].license_key;
        store
            .create_license(&foreign, &Journal::NONE)
            .await
            .unwrap();

        let queries = |l: &License| {
            let key = l.license_key.as_str();
            [
                "suspended=true".to_owned(),
                "suspended=false&sortDirection=asc&pageSize=10&page=2".to_owned(),
                format!("search={}", &key[3..14].to_lowercase()),
                format!("search={}&suspended=false", &key[6..11]),
                "status=EXPIRED".to_owned(),
                "status=ACTIVE&sortColumn=updatedAt&pageSize=10&page=3".to_owned(),
                "expirationType=DATE".to_owned(),
                "search=A&pageSize=10&page=2".to_owned(),
            ]
        };
        let check = |licenses: Vec<License>, probe: License| {
            let store = &store;
            async move {
                for raw in queries(&probe) {
                    let query = LicenseListQuery::parse(&raw).unwrap();
                    let got = store.list_licenses(team, &query).await.unwrap();
                    let mut current = Vec::new();
                    for l in &licenses {
                        if let Some(l) = store.get_license(team, l.id).await.unwrap() {
                            current.push(l);
                        }
                    }
                    current.retain(|l| license_matches(l, &query.filter));
                    let want = page_of(current, &query.paging, |a, b| {
                        licensing_core::store::compare_licenses(
                            a,
                            b,
                            query.sort,
                            query.paging.direction,
                        )
                    });
                    assert_eq!(
                        (got.items, got.total, got.has_next_page),
                        (want.items, want.total, want.has_next_page),
                        "{raw}"
                    );
                }
            }
        };
        // The first filtered list builds the table.
        check(licenses.clone(), licenses[1].clone()).await;
        assert!(matches!(
            store.inner.license_tables.usable(team),
            super::license_table::Use::Ready(_)
        ));

        // Suspended, a new key, expired, deleted, created.
        let mut l = licenses[1].clone();
        l.suspended = true;
        l.updated_at = Timestamp::from_millis(9_000);
        store.update_license(&l, &Journal::NONE).await.unwrap();
        check(licenses.clone(), l.clone()).await;
        l.license_key = LicenseKey::generate();
        store.update_license(&l, &Journal::NONE).await.unwrap();
        check(licenses.clone(), l.clone()).await;
        let mut dated = licenses[2].clone();
        dated.expiration_type = ExpirationType::Date;
        dated.expiration_date = Some(Timestamp::from_millis(5_000));
        store.update_license(&dated, &Journal::NONE).await.unwrap();
        check(licenses.clone(), dated).await;
        store
            .delete_license(team, licenses[4].id, &Journal::NONE)
            .await
            .unwrap();
        check(licenses.clone(), licenses[4].clone()).await;
        let added = testing::license(team, Timestamp::from_millis(2_000));
        store.create_license(&added, &Journal::NONE).await.unwrap();
        licenses.push(added.clone());
        check(licenses.clone(), added).await;

        // Written while a table is being built: noted, and read again when it is installed.
        let tables = &store.inner.license_tables;
        let third = testing::team(&store, "C").await.id;
        let mut late = testing::license(third, Timestamp::from_millis(1));
        assert!(matches!(
            tables.usable(third),
            super::license_table::Use::Build
        ));
        store.create_license(&late, &Journal::NONE).await.unwrap();
        late.suspended = true;
        store.update_license(&late, &Journal::NONE).await.unwrap();
        let built = tables
            .finish(third, Default::default(), |id| {
                Ok(super::SledStore::get_record(
                    &store,
                    &super::license_key(third, id),
                )?)
            })
            .unwrap();
        drop(built);
        let query = LicenseListQuery::parse("suspended=true").unwrap();
        let page = store.list_licenses(third, &query).await.unwrap();
        assert_eq!((page.items, page.total), (vec![late], 1));
    });
}

/// A store of format 8 (products and releases without their update members) is migrated when
/// opened: each reads back with the members' empty values (no keys, the license feed, no notes,
/// a rollout to everyone, no artifacts).
#[test]
fn a_format_8_store_gets_the_update_members_of_products_and_releases() {
    use licensing_core::model::{Product, Release, RolloutPercent, UpdateFeed};
    use licensing_core::store::{Journal, ProductStore, ReleaseStore, testing};

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let (team, product, release) = Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("open");
        let team = testing::team(&store, "A").await;
        let product = testing::product(team.id, "App");
        store
            .create_product(&product, &Journal::NONE)
            .await
            .expect("product");
        let release = testing::release(
            team.id,
            product.id,
            None,
            "1.0.0",
            licensing_core::Timestamp::from_millis(1_800_000_000_000),
        );
        store
            .create_release(&release, &Journal::NONE)
            .await
            .expect("release");
        (team, product, release)
    });
    // As format 8 wrote them: four members fewer at the end, each one zero byte when empty.
    {
        let db = raw_open(dir.as_path());
        let tree = db.open_tree("data").expect("tree");
        set_format(&tree, 8);
        for table in [super::tag::PRODUCT, super::tag::RELEASE] {
            for kv in tree.scan_prefix([table]) {
                let (k, v) = kv.expect("scan");
                assert!(v.ends_with(&[0, 0, 0, 0]), "empty members are zeros");
                tree.insert(k, &v[..v.len() - 4]).expect("put");
            }
        }
        db.flush().expect("flush");
    }
    Tokio.block_on(async {
        let store = super::SledStore::open(dir.as_path()).expect("migrating open");
        assert_eq!(
            super::format::version(&store.inner.tree).expect("version"),
            super::format::FORMAT
        );
        let read: Product = store
            .get_product(team.id, product.id)
            .await
            .expect("read")
            .expect("product");
        assert_eq!(read, product);
        assert_eq!(read.update_feed, UpdateFeed::License);
        let read: Release = store
            .get_release(team.id, release.id)
            .await
            .expect("read")
            .expect("release");
        assert_eq!(read, release);
        assert_eq!(read.rollout_percent, RolloutPercent::ALL);
    });
}
