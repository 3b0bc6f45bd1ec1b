//! What every handler can reach.

use licensing_core::model::ApiKeyRecord;
use licensing_core::{ApiError, TeamId, Timestamp};
use warp::http::HeaderMap;

use crate::files::FileStore;
use crate::http::{auth, path_param};
use crate::metrics::Metrics;
use crate::services::chat::ChatDirectory;
use crate::services::mail::Mailer;
use crate::services::stats::StatsCache;
use crate::store::SledStore;

/// Shared state of the running server.
#[derive(Clone, Debug)]
pub(crate) struct AppState {
    /// The store.
    pub(crate) store: SledStore,
    /// Release files.
    pub(crate) files: FileStore,
    /// Statistics answers, 15 minutes per team.
    pub(crate) stats: StatsCache,
    /// Prometheus metrics.
    pub(crate) metrics: Metrics,
    /// The SMTP mailer, when configured.
    pub(crate) mailer: Option<Mailer>,
    /// The chat directory, when configured.
    pub(crate) chat: Option<ChatDirectory>,
    /// The admin API's token; the admin API is off without one.
    pub(crate) admin_token: Option<std::sync::Arc<str>>,
}

/// An authenticated developer request: its team, the key that made it, and the time it is
/// handled at.
#[derive(Debug)]
pub(crate) struct DevRequest {
    /// The team of the path.
    pub(crate) team: TeamId,
    /// The API key.
    pub(crate) key: ApiKeyRecord,
    /// Now.
    pub(crate) now: Timestamp,
}

impl AppState {
    /// Checks, in the protocol's order, the team id of the path (400) and the credentials (401,
    /// or 403 for a key of another team).
    pub(crate) async fn dev(
        &self,
        team: &str,
        headers: &HeaderMap,
    ) -> Result<DevRequest, ApiError> {
        let team = path_param::<TeamId>("teamId", team)?;
        let now = Timestamp::now();
        let key = auth::api_key(&self.store, headers, team, now).await?;
        Ok(DevRequest { team, key, now })
    }
}
