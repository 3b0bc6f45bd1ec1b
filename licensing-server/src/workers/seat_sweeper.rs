//! (ext) The sweep of floating sessions: deletes the sessions that expired without a heartbeat,
//! each with its `session.expired` event, and counts the live ones for `/metrics`. An expired
//! session stops counting the moment it expires; the sweep only tidies, within a minute.

use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::store::LicenseSessionStore;

use crate::state::AppState;

/// How often expired sessions are deleted and the live ones counted.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// One round: the expired sessions deleted, the gauge set. Returns how many were deleted.
pub(crate) async fn sweep_once(state: &AppState) -> u64 {
    let now = Timestamp::now();
    let deleted =
        match crate::app::floating::sweep_expired(&state.store, &state.contexts, now).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "deleting expired floating sessions failed");
                0
            }
        };
    if deleted > 0 {
        tracing::debug!(deleted, "expired floating sessions deleted");
    }
    match state.store.count_live_sessions(now).await {
        Ok(live) => state.metrics.live_sessions(live),
        Err(e) => tracing::error!(error = %e, "counting live floating sessions failed"),
    }
    deleted
}

/// Sweeps now and every [`SWEEP_EVERY`], until `stop`.
pub(crate) async fn run(state: AppState, stop: tokio::sync::watch::Receiver<bool>) {
    crate::runtime::periodic::every(SWEEP_EVERY, stop, || async {
        sweep_once(&state).await;
    })
    .await;
}
