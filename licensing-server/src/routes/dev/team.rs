//! (ext) The team's settings, public keys, statistics and audit log over HTTP.

use std::sync::Arc;

use licensing_core::ApiError;
use licensing_core::api::AuditPage;
use licensing_core::api::requests::{AuditQuery, parse_json};
use licensing_core::model::{AuditEntry, PublicKeys, Statistics, TeamSettings};
use licensing_core::store::Page;

use super::{Dev, Endpoint, Input, Query};
use crate::app::team::{GetPublicKeys, GetSettings, GetStatistics, ListAudit, UpdateSettings};
use crate::http::{Response, success};

impl Endpoint for GetSettings {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(settings: TeamSettings) -> Response {
        success(200, settings, "Settings retrieved")
    }
}

impl Endpoint for UpdateSettings {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(settings: TeamSettings) -> Response {
        success(200, settings, "Settings updated")
    }
}

impl Endpoint for GetPublicKeys {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(keys: PublicKeys) -> Response {
        success(200, keys, "Public keys retrieved")
    }
}

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

impl Endpoint for ListAudit {
    type Ids = ();
    const QUERY: Query = Query::Parsed;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(AuditQuery::parse(&input.query)?))
    }

    fn answer(page: Page<AuditEntry>) -> Response {
        success(
            200,
            AuditPage {
                entries: page.items,
                total_results: page.total,
                has_next_page: page.has_next_page,
            },
            "Audit log retrieved",
        )
    }
}
