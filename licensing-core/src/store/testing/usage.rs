//! Usage meters' counters: limits per period, retried events, late events, changes, restores.

use super::*;
use crate::model::{
    ClientEvents, Meter, MeterPeriod, UsageChange, UsageCounter, UsageIncrement, meter_usage,
};

fn exports(limit: Option<u64>) -> Meter {
    Meter {
        code: "EXPORTS".into(),
        limit,
        period: MeterPeriod::Day,
    }
}

fn increment(meter: &Meter, quantity: u64, when: Timestamp, id: Option<&str>) -> UsageIncrement {
    UsageIncrement {
        meter: meter.clone(),
        quantity,
        at: when,
        event_id: id.map(str::to_owned),
    }
}

/// Counts up to the limit and not past it, answers a retried event id with its first answer
/// (counting nothing), starts a new period at 0, counts a late event in its own period, writes
/// the threshold and exhaustion events once, and adjusts, resets and restores counters.
pub async fn usage_is_counted_within_limits_per_period_and_once_per_event<S: Store>(store: &S) {
    let t = team(store, "usage").await;
    let endpoint = super::webhooks::endpoint(t.id, &[], true);
    store
        .create_webhook(&endpoint, &Journal::NONE)
        .await
        .unwrap();
    let l = license(t.id, t0());
    store.create_license(&l, &Journal::NONE).await.unwrap();
    let meter = exports(Some(10));
    let wants = ClientEvents::ALL;
    let now = at(1);
    let day = MeterPeriod::Day.bounds(now).0;

    let first = store
        .record_usage(&l, &[increment(&meter, 7, now, Some("ev-1"))], wants, now)
        .await
        .unwrap();
    assert!(first[0].counted && !first[0].replayed);
    assert_eq!(
        (first[0].state.used, first[0].state.remaining),
        (7, Some(3))
    );
    assert_eq!(first[0].state.period_start, day);
    // The same event again: its first answer, nothing counted.
    let again = store
        .record_usage(&l, &[increment(&meter, 7, now, Some("ev-1"))], wants, at(2))
        .await
        .unwrap();
    assert!(again[0].counted && again[0].replayed);
    assert_eq!(again[0].state.used, 7);
    // Past the limit: refused, nothing counted; to the limit: counted.
    let batch = store
        .record_usage(
            &l,
            &[
                increment(&meter, 4, now, Some("ev-2")),
                increment(&meter, 1, now, None),
                increment(&meter, 2, now, None),
                increment(&meter, 1, now, None),
            ],
            wants,
            at(3),
        )
        .await
        .unwrap();
    let counted: Vec<(bool, u64)> = batch.iter().map(|o| (o.counted, o.state.used)).collect();
    assert_eq!(counted, [(false, 7), (true, 8), (true, 10), (false, 10)]);
    assert_eq!(batch[2].state.remaining, Some(0));
    // A refusal is kept under its id too.
    let refused_again = store
        .record_usage(&l, &[increment(&meter, 4, now, Some("ev-2"))], wants, at(4))
        .await
        .unwrap();
    assert!(!refused_again[0].counted && refused_again[0].replayed);
    // The threshold and the exhaustion were written once each.
    let events = super::webhooks::delivered(store, t.id, at(5)).await;
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["usage.threshold", "usage.exhausted"]);
    assert_eq!(events[1].1["data"]["meter"]["used"], 10);

    // The next day starts at 0; an event of yesterday reported late counts in yesterday's.
    let tomorrow = now.plus_days(1);
    let next = store
        .record_usage(
            &l,
            &[
                increment(&meter, 5, tomorrow, None),
                increment(&meter, 1, now, Some("late")),
            ],
            wants,
            tomorrow,
        )
        .await
        .unwrap();
    assert!(next[0].counted && next[0].state.used == 5);
    assert!(
        !next[1].counted && next[1].state.used == 10,
        "yesterday is full"
    );
    let counters = store.list_usage(t.id, l.id).await.unwrap();
    let usage = meter_usage(std::slice::from_ref(&meter), &counters, tomorrow);
    assert_eq!(usage[0].used, 5);
    // What a verify answers: each meter's period holding the time asked, 0 where none counted.
    let never = Meter {
        code: "NEVER_USED".into(),
        ..meter.clone()
    };
    let both = [meter.clone(), never];
    let now_used = |when| store.used_now(t.id, l.id, &both, when);
    assert_eq!(now_used(tomorrow).await.unwrap(), [5, 0]);
    assert_eq!(now_used(now).await.unwrap(), [10, 0]);
    assert_eq!(now_used(tomorrow.plus_days(1)).await.unwrap(), [0, 0]);
    assert_eq!(
        (usage[0].history[0].period_start, usage[0].history[0].used),
        (day, 10)
    );

    // A retry after the answers were pruned counts again.
    assert!(
        store
            .prune_usage_events(at(4).plus_minutes(1))
            .await
            .unwrap()
            >= 1
    );
    let unlimited = exports(None);
    let counted_again = store
        .record_usage(
            &l,
            &[increment(&unlimited, 1, tomorrow, Some("ev-1"))],
            wants,
            tomorrow,
        )
        .await
        .unwrap();
    assert!(!counted_again[0].replayed);
    assert_eq!(counted_again[0].state.used, 6);

    // Adjusted (never below 0) and reset, with the journal.
    let journal = super::audited(
        t.id,
        crate::model::Action::LicenseUsageChanged,
        &l.id.to_string(),
        crate::model::Actor::admin(),
        tomorrow,
    );
    let changed = store
        .change_usage(
            t.id,
            l.id,
            &meter,
            UsageChange::Adjust(-2),
            tomorrow,
            &journal,
        )
        .await
        .unwrap();
    assert_eq!(changed.used, 4);
    let floor = store
        .change_usage(
            t.id,
            l.id,
            &meter,
            UsageChange::Adjust(-100),
            tomorrow,
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert_eq!(floor.used, 0);
    let up = store
        .change_usage(
            t.id,
            l.id,
            &meter,
            UsageChange::Adjust(3),
            tomorrow,
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert_eq!(up.used, 3);
    let reset = store
        .change_usage(
            t.id,
            l.id,
            &meter,
            UsageChange::Reset,
            tomorrow,
            &Journal::NONE,
        )
        .await
        .unwrap();
    assert_eq!(reset.used, 0);
    let audit = super::audit::audit_of(store, t.id).await;
    assert!(
        audit
            .iter()
            .any(|e| e.action == crate::model::Action::LicenseUsageChanged)
    );

    // Restored counters replace the license's; another team sees nothing of them.
    let restored = UsageCounter {
        license_id: l.id,
        meter: "SYNCS".into(),
        period_start: Timestamp::from_millis(0),
        used: 42,
    };
    store
        .restore_usage_counters(t.id, l.id, std::slice::from_ref(&restored))
        .await
        .unwrap();
    let counters = store.list_usage(t.id, l.id).await.unwrap();
    assert!(counters.contains(&restored));
    let other = team(store, "other").await;
    assert!(store.list_usage(other.id, l.id).await.is_err());
    assert!(
        store
            .change_usage(
                other.id,
                l.id,
                &meter,
                UsageChange::Reset,
                tomorrow,
                &Journal::NONE
            )
            .await
            .is_err()
    );
    // Deleting the license deletes its counters.
    store
        .delete_license(t.id, l.id, &Journal::NONE)
        .await
        .unwrap();
    assert!(store.list_usage(t.id, l.id).await.is_err());
}

/// N threads count at once against a limit of `k`: exactly `k` are counted.
pub fn concurrent_usage_never_passes_the_limit<S: Store, R: BlockOn>(store: &S, runner: &R) {
    const REQUESTS: usize = 24;
    const LIMIT: u64 = 10;
    let t = runner.block_on(team(store, "A"));
    let l = license(t.id, t0());
    runner
        .block_on(store.create_license(&l, &Journal::NONE))
        .unwrap();
    let meter = exports(Some(LIMIT));
    let counted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..REQUESTS {
            let (l, meter, counted) = (&l, &meter, &counted);
            scope.spawn(move || {
                let id = format!("concurrent-{i}");
                let out = runner
                    .block_on(store.record_usage(
                        l,
                        &[increment(meter, 1, at(1), Some(&id))],
                        ClientEvents::NONE,
                        at(1),
                    ))
                    .unwrap();
                if out[0].counted {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(counted.into_inner(), LIMIT as usize);
    let counters = runner.block_on(store.list_usage(t.id, l.id)).unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0].used, LIMIT);
}
