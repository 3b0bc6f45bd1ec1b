//! The purger of sign-ins: deletes the dashboard sessions that timed out and were never
//! presented again (one presented after its time ends there and then), and the customer
//! portal's expired sign-in tickets and ended sessions.

use licensing_core::store::{PortalStore, StaffStore};

pub(crate) use crate::app::sign_in::Lifetime;

/// How often timed-out sessions are deleted.
const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Deletes sessions past `lifetime` now and every [`PURGE_EVERY`], until `stop`.
pub(crate) async fn run_purger<S: StaffStore>(
    store: S,
    lifetime: Lifetime,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let purge = || async {
        let now = licensing_core::Timestamp::now();
        let minutes = |m: u32| {
            licensing_core::Timestamp::from_millis(now.as_millis() - i64::from(m) * 60_000)
        };
        let seen_before = minutes(lifetime.idle_minutes);
        let created_before = minutes(lifetime.hours.saturating_mul(60));
        match store
            .delete_stale_sessions(seen_before, created_before)
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "timed-out dashboard sessions deleted"),
            Err(e) => tracing::error!(error = %e, "deleting timed-out dashboard sessions failed"),
        }
    };
    crate::runtime::periodic::every(PURGE_EVERY, stop, purge).await;
}

/// Deletes the portal's expired tickets and ended sessions now and every [`PURGE_EVERY`],
/// until `stop`.
pub(crate) async fn run_portal_purger<S: PortalStore>(
    store: S,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let purge = || async {
        let now = licensing_core::Timestamp::now();
        let ended = licensing_core::Timestamp::from_millis(
            now.as_millis() - licensing_core::model::PORTAL_SESSION_MS,
        );
        match store.prune_portal(now, ended).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "expired portal sign-ins deleted"),
            Err(e) => tracing::error!(error = %e, "deleting expired portal sign-ins failed"),
        }
    };
    crate::runtime::periodic::every(PURGE_EVERY, stop, purge).await;
}
