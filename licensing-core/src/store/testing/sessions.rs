//! Floating sessions: started and extended in the atomic step, counted while live, ended,
//! revoked and swept.

use super::*;
use crate::api::ResultCode;
use crate::api::requests::{Paging, SortDirection};

/// A page of a hundred sessions, oldest first.
fn oldest_first() -> Paging {
    Paging {
        page: 1,
        page_size: 100,
        direction: SortDirection::Asc,
    }
}

/// A start counts the license's live sessions against its `sessionLimit` in the atomic step; an
/// expired session stops counting before anything deletes it; a heartbeat extends only a live
/// session of its own device; a refusal records nothing; removing takes a live session once;
/// the expired ones are listed for the sweep; deleting the license deletes its sessions.
pub async fn floating_sessions_count_while_live_and_end_once<S: Store>(store: &S) {
    let t = team(store, "A").await;
    let other = team(store, "B").await;
    store
        .create_webhook(&endpoint(t.id, &["session.*"], true), &Journal::NONE)
        .await
        .unwrap();
    let mut l = license(t.id, t0());
    l.session_limit = Some(2);
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let rules = ActivityRules {
        events: ClientEvents::ALL,
        ..ActivityRules::new(&t.settings)
    };
    let step = |activity: Activity, now: Timestamp| {
        let (t, rules) = (&t, &rules);
        async move {
            store
                .record_activity(t.id, l.id, rules, &activity, now)
                .await
                .unwrap()
        }
    };
    let (a, b, c) = (
        LicenseSessionId::new(),
        LicenseSessionId::new(),
        LicenseSessionId::new(),
    );
    let ttl = 60;
    let first = step(session_activity("machine-a-0000", 1, a, true, ttl), at(1))
        .await
        .unwrap();
    let started = first.session.clone().unwrap();
    assert_eq!(started.id, a);
    assert_eq!(started.expires_at, at(2));
    assert_eq!(started.hardware_identifier.as_str(), "machine-a-0000");
    // One machine may run two copies: the limit counts sessions, not devices.
    step(session_activity("machine-a-0000", 1, b, true, ttl), at(1))
        .await
        .unwrap();
    let full = step(session_activity("machine-b-0000", 2, c, true, ttl), at(1))
        .await
        .unwrap_err();
    assert_eq!(full.code, ResultCode::SessionLimitReached);
    assert!(
        store
            .get_license_session(t.id, l.id, c)
            .await
            .unwrap()
            .is_none(),
        "a refused start records no session"
    );
    let devices = store
        .list_hwids(t.id, l.id, &DeviceListQuery::parse("").unwrap())
        .await
        .unwrap();
    assert_eq!(devices.total, 1, "a refused start records no device");
    let live = store
        .list_license_sessions(t.id, l.id, at(1), &oldest_first())
        .await
        .unwrap();
    assert_eq!((live.items.len(), live.total), (2, 2));
    assert_eq!(store.count_live_sessions(at(1)).await.unwrap(), 2);

    // A heartbeat extends its own device's live session only.
    let extended = step(
        session_activity("machine-a-0000", 3, a, false, ttl),
        at(1).plus_seconds(50),
    )
    .await
    .unwrap()
    .session
    .unwrap();
    assert_eq!(extended.expires_at, at(1).plus_seconds(110));
    assert_eq!(extended.started_at, at(1));
    assert_eq!(extended.ip_address.to_string(), "198.51.100.3");
    for (device, id) in [("machine-b-0000", a), ("machine-a-0000", c)] {
        let refused = step(
            session_activity(device, 1, id, false, ttl),
            at(1).plus_seconds(55),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.code, ResultCode::SessionNotFound, "{device}");
    }
    // `b` expires at minute 2: past it, it no longer counts though it is still stored.
    let past = at(2).plus_seconds(1);
    assert!(
        store
            .get_license_session(t.id, l.id, b)
            .await
            .unwrap()
            .is_some()
    );
    let late = step(session_activity("machine-a-0000", 1, b, false, ttl), past)
        .await
        .unwrap_err();
    assert_eq!(
        late.code,
        ResultCode::SessionNotFound,
        "an expired session stays expired"
    );
    step(session_activity("machine-b-0000", 2, c, true, ttl), past)
        .await
        .unwrap();
    let ids = |page: Page<LicenseSession>| page.items.iter().map(|s| s.id).collect::<Vec<_>>();
    let live = store
        .list_license_sessions(t.id, l.id, past, &oldest_first())
        .await
        .unwrap();
    assert_eq!(ids(live), [a, c]);
    // Newest first by default, a page at a time.
    let first_page = Paging {
        page_size: 10,
        ..Paging::default()
    };
    let newest = store
        .list_license_sessions(t.id, l.id, past, &first_page)
        .await
        .unwrap();
    assert_eq!((newest.total, newest.has_next_page), (2, false));
    assert_eq!(ids(newest), [c, a]);

    // The sweep's list, and removal by state: a live session is not removed as expired, nor an
    // expired one as live; each is removed once, with its journal.
    let expired = store.expired_license_sessions(past, 10).await.unwrap();
    assert_eq!(expired.iter().map(|s| s.id).collect::<Vec<_>>(), [b]);
    assert!(
        store
            .remove_license_session(t.id, l.id, b, past, false, &Journal::NONE)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .remove_license_session(t.id, l.id, a, past, true, &Journal::NONE)
            .await
            .unwrap()
            .is_none()
    );
    let journal = audited(
        t.id,
        crate::model::Action::SessionRevoked,
        &a.to_string(),
        crate::model::Actor::admin(),
        past,
    );
    let removed = store
        .remove_license_session(t.id, l.id, a, past, false, &journal)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removed.id, a);
    assert!(
        store
            .remove_license_session(t.id, l.id, a, past, false, &Journal::NONE)
            .await
            .unwrap()
            .is_none()
    );
    let audit = store
        .list_audit(t.id, &AuditQuery::parse("").unwrap())
        .await
        .unwrap();
    assert!(
        audit
            .items
            .iter()
            .any(|e| e.action == crate::model::Action::SessionRevoked)
    );
    assert!(
        store
            .remove_license_session(t.id, l.id, b, past, true, &Journal::NONE)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .expired_license_sessions(past, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Another team's path finds nothing.
    assert!(
        store
            .get_license_session(other.id, l.id, c)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .remove_license_session(other.id, l.id, c, past, false, &Journal::NONE)
            .await
            .unwrap()
            .is_none()
    );
    assert!(is_not_found(
        store
            .list_license_sessions(other.id, l.id, past, &oldest_first())
            .await,
        Entity::License
    ));

    // A start of a license without a limit is never refused; the event of a start is written
    // with it.
    let mut free = license(t.id, t0());
    free.session_limit = None;
    store.create_license(&free, &Journal::NONE).await.unwrap();
    for i in 0..5 {
        store
            .record_activity(
                t.id,
                free.id,
                &rules,
                &session_activity(
                    &format!("machine-{i}-free0"),
                    9,
                    LicenseSessionId::new(),
                    true,
                    ttl,
                ),
                past,
            )
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        store
            .list_license_sessions(t.id, free.id, past, &oldest_first())
            .await
            .unwrap()
            .total,
        5
    );
    // The team's cap of live sessions per license holds a license without a limit too (and
    // one whose limit is higher).
    let mut capped_settings = t.settings.clone();
    capped_settings.max_live_sessions_per_license = 5;
    let capped = ActivityRules {
        events: ClientEvents::ALL,
        ..ActivityRules::new(&capped_settings)
    };
    let refused = store
        .record_activity(
            t.id,
            free.id,
            &capped,
            &session_activity("machine-6-free0", 9, LicenseSessionId::new(), true, ttl),
            past,
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, ResultCode::SessionLimitReached);
    assert!(
        refused.details.contains("maxLiveSessionsPerLicense"),
        "{}",
        refused.details
    );
    let events = delivered(store, t.id, past).await;
    let started = events
        .iter()
        .filter(|(kind, _)| kind == "session.started")
        .count();
    assert_eq!(
        started, 8,
        "every session started, none refused: {events:?}"
    );
    assert!(
        events
            .iter()
            .all(|(_, e)| e["data"]["hardwareIdentifier"].is_string())
    );

    // Deleting the license deletes its sessions.
    store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert!(
        store
            .get_license_session(t.id, l.id, c)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.count_live_sessions(past).await.unwrap(), 5);
}

/// N threads start N sessions at once against a limit of `k`: exactly `k` are admitted.
pub fn concurrent_session_starts_admit_exactly_the_limit<S: Store, R: BlockOn>(
    store: &S,
    runner: &R,
) {
    const STARTS: usize = 16;
    const LIMIT: u32 = 5;
    let t = runner.block_on(team(store, "A"));
    let mut l = license(t.id, t0());
    l.session_limit = Some(LIMIT);
    runner
        .block_on(store.create_license(&l, &Journal::NONE))
        .unwrap();
    let admitted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..STARTS {
            let (t, l, admitted) = (&t, &l, &admitted);
            scope.spawn(move || {
                // Half the starts come from one machine: the limit counts sessions.
                let dev = format!("machine-{:04}-float", i % 2 * i);
                let result = runner
                    .block_on(store.record_activity(
                        t.id,
                        l.id,
                        &ActivityRules::new(&t.settings),
                        &session_activity(&dev, 1, LicenseSessionId::new(), true, 600),
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
    let live = runner
        .block_on(store.list_license_sessions(t.id, l.id, at(1), &oldest_first()))
        .unwrap();
    assert_eq!(live.total, u64::from(LIMIT));
}
