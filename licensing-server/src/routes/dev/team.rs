//! (ext) The team's settings, public keys, statistics and audit log over HTTP.

use std::sync::Arc;

use licensing_core::ApiError;
use licensing_core::api::AuditPage;
use licensing_core::api::requests::AuditQuery;
use licensing_core::model::Statistics;

use super::{Dev, Endpoint, Input, Query};
use crate::app::team::{GetPublicKeys, GetSettings, GetStatistics, ListAudit, UpdateSettings};
use crate::http::{Response, success};

by_ids!(GetSettings => 200, "Settings retrieved");
with_body!(UpdateSettings() => 200, "Settings updated");
by_ids!(GetPublicKeys => 200, "Public keys retrieved");
listed!(ListAudit() query AuditQuery::parse => AuditPage { entries }, "Audit log retrieved");

impl Endpoint for GetStatistics {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(stats: Arc<Statistics>) -> Response {
        success(200, &*stats, "Statistics retrieved")
    }
}
