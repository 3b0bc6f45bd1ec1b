//! Simultaneous new devices against one limit.

use super::*;

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

/// Machines the vendor registers (license files) and client requests of new devices, at once,
/// against a limit of `k`: exactly `k` are admitted; a registration that overrides the limit
/// passes it, says so, and the device then counts like any other.
pub fn concurrent_machine_files_and_requests_never_exceed_the_limit<S: Store, R: BlockOn>(
    store: &S,
    runner: &R,
) {
    const DEVICES: usize = 24;
    const LIMIT: u32 = 7;
    let t = runner.block_on(team(store, "A"));
    let mut l = license(t.id, t0());
    l.hwid_limit = Some(LIMIT);
    runner
        .block_on(store.create_license(&l, &Journal::NONE))
        .unwrap();
    let rules = ActivityRules::new(&t.settings);
    let admitted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..DEVICES {
            let (t, l, admitted, rules) = (&t, &l, &admitted, &rules);
            scope.spawn(move || {
                let dev = format!("device-{i:04}-registered");
                let passed = if i % 2 == 0 {
                    let h = HardwareId::parse(&dev).unwrap();
                    let registered = runner
                        .block_on(store.register_device(t.id, l.id, rules, &h, false, at(1)))
                        .unwrap();
                    if let Ok(r) = &registered {
                        assert!(r.created && !r.overrode);
                    }
                    registered.is_ok()
                } else {
                    runner
                        .block_on(store.record_activity(
                            t.id,
                            l.id,
                            rules,
                            &activity(Some(&dev), 1),
                            at(1),
                        ))
                        .unwrap()
                        .is_ok()
                };
                if passed {
                    admitted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(admitted.into_inner(), LIMIT as usize);
    // A known device needs no room; a new one passes only by override.
    let all = DeviceListQuery::parse("pageSize=100&showForgotten=true").unwrap();
    let stored = runner.block_on(store.list_hwids(t.id, l.id, &all)).unwrap();
    assert_eq!(stored.total, u64::from(LIMIT));
    let known = stored.items[0].identifier.clone();
    let again = runner
        .block_on(store.register_device(t.id, l.id, &rules, &known, false, at(2)))
        .unwrap()
        .unwrap();
    assert!(!again.created && !again.overrode);
    assert_eq!(again.hwid.last_seen_at, at(2));
    let extra = HardwareId::parse("device-extra-overridden").unwrap();
    let refused = runner
        .block_on(store.register_device(t.id, l.id, &rules, &extra, false, at(2)))
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, crate::code::ResultCode::HwidLimitReached);
    let past = runner
        .block_on(store.register_device(t.id, l.id, &rules, &extra, true, at(2)))
        .unwrap()
        .unwrap();
    assert!(past.created && past.overrode);
    let stored = runner.block_on(store.list_hwids(t.id, l.id, &all)).unwrap();
    assert_eq!(stored.total, u64::from(LIMIT) + 1);
}
