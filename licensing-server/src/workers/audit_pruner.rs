//! The pruning of the audit log: entries past the retention are deleted in bounded rounds, at
//! start and then hourly; and (ext) of the payment events received, kept 90 days.

use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::model::INBOUND_KEPT_MS;
use licensing_core::store::{AuditStore, INBOUND_PRUNE_BATCH, PaymentStore};
use tokio::sync::watch;

/// Days an audit entry is kept unless the operator says otherwise.
pub(crate) const DEFAULT_RETENTION_DAYS: u32 = 365;

/// Entries deleted per round of pruning, so that a round is one short write.
const PRUNE_BATCH: usize = 1_000;

/// Deletes entries older than `retention_days`, a batch at a time, at start and then hourly,
/// until `stop`.
pub(crate) async fn run<S: AuditStore + PaymentStore>(
    store: S,
    retention_days: u32,
    stop: watch::Receiver<bool>,
) {
    let prune = || async {
        let received_before =
            Timestamp::from_millis(Timestamp::now().as_millis() - INBOUND_KEPT_MS);
        // Each round deletes a bounded batch: rounds go on while one is full.
        let mut pruned = 0;
        loop {
            match store.prune_inbound(received_before).await {
                Ok(n) => {
                    pruned += n;
                    if n < INBOUND_PRUNE_BATCH || *stop.borrow() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "pruning the payment events failed");
                    break;
                }
            }
        }
        if pruned > 0 {
            tracing::info!(pruned, "payment events older than 90 days deleted");
        }
        let before = Timestamp::from_millis(
            Timestamp::now().as_millis() - i64::from(retention_days) * 86_400_000,
        );
        loop {
            if *stop.borrow() {
                return;
            }
            match store.prune_audit(before, PRUNE_BATCH).await {
                Ok(n) if n as usize == PRUNE_BATCH => continue,
                Ok(n) => {
                    if n > 0 {
                        tracing::info!(pruned = n, retention_days, "old audit entries deleted");
                    }
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "pruning the audit log failed");
                    break;
                }
            }
        }
    };
    crate::runtime::periodic::every(Duration::from_secs(3600), stop.clone(), prune).await;
}
