//! A license's devices and addresses: the atomic activity step, its limits and caps, forgetting, usage records and session keys.

use super::*;

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

pub(super) fn capped(settings: &TeamSettings, max_records: u32) -> ActivityRules<'_> {
    ActivityRules {
        settings,
        max_records,
        ..ActivityRules::new(settings)
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
        name: None,
        platform: None,
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
