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
