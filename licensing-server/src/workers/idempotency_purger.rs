//! (ext) The purge of idempotency keys: deletes the keys (and their kept answers) claimed more
//! than 24 hours ago, in bounded rounds, so that the table holds one day of writes; and, in the
//! same rounds, the kept answers of usage events older than a day.

use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::idempotency::KEPT_FOR_MS;
use licensing_core::model::USAGE_EVENT_KEPT_MS;
use licensing_core::store::{IdempotencyStore, UsageStore};

/// How often expired keys are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(5 * 60);

/// The most keys one round deletes at once; a round goes on while it finds this many.
const BATCH: u32 = 1_000;

/// The most keys one round deletes in all: the rest wait for the next round.
const MAX_PER_ROUND: u64 = 100_000;

/// Deletes the keys claimed before `now - 24 h`: how many.
pub(crate) async fn purge_once<S: IdempotencyStore>(store: &S, now: Timestamp) -> u64 {
    let before = Timestamp::from_millis(now.as_millis() - KEPT_FOR_MS);
    let mut purged = 0;
    while purged < MAX_PER_ROUND {
        match store.purge_idempotency_keys(before, BATCH).await {
            Ok(n) => {
                purged += n;
                if n < u64::from(BATCH) {
                    break;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "purging idempotency keys failed");
                break;
            }
        }
    }
    if purged > 0 {
        tracing::debug!(purged, "expired idempotency keys deleted");
    }
    purged
}

/// Forgets the usage events' answers kept before `now - 24 h`: how many.
pub(crate) async fn prune_usage_once<S: UsageStore>(store: &S, now: Timestamp) -> u64 {
    let before = Timestamp::from_millis(now.as_millis() - USAGE_EVENT_KEPT_MS);
    match store.prune_usage_events(before).await {
        Ok(n) => {
            if n > 0 {
                tracing::debug!(pruned = n, "expired usage event answers deleted");
            }
            n
        }
        Err(e) => {
            tracing::error!(error = %e, "pruning usage event answers failed");
            0
        }
    }
}

/// Purges now and every [`PURGE_EVERY`], until `stop`.
pub(crate) async fn run<S: IdempotencyStore + UsageStore + Clone + 'static>(
    store: S,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    crate::runtime::periodic::every(PURGE_EVERY, stop, || async {
        let now = Timestamp::now();
        purge_once(&store, now).await;
        prune_usage_once(&store, now).await;
    })
    .await;
}
