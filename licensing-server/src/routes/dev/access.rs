//! (ext) API keys and the blacklist over HTTP.

use licensing_core::api::requests::parse_json;
use licensing_core::api::{ApiKeyList, BlacklistList, Deleted};
use licensing_core::{ApiError, ApiKeyId, BlacklistId};

use super::{Dev, Endpoint, Input, Query};
use crate::app::access::{
    CreateApiKey, CreateBlacklistEntry, DeleteBlacklistEntry, ListApiKeys, ListBlacklist,
    NewApiKey, RevokeApiKey,
};
use crate::http::{Response, success};

with_body!(CreateBlacklistEntry() => 201, "Blacklist entry created");
by_ids!(DeleteBlacklistEntry(id: BlacklistId) => 200, "Blacklist entry deleted");

impl Endpoint for CreateApiKey {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(new: NewApiKey) -> Response {
        let details = if new.capped {
            "API key created; it is shown only in this answer. It expires when the key that made it does"
        } else {
            "API key created; it is shown only in this answer"
        };
        success(201, new.created, details)
    }
}

by_ids!(ListApiKeys => 200 |api_keys| ApiKeyList { api_keys }, "API keys retrieved");

impl Endpoint for RevokeApiKey {
    type Ids = (ApiKeyId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ApiKeyId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(revoked: Vec<ApiKeyId>) -> Response {
        let details = if revoked.len() > 1 {
            "API key revoked, and with it the keys it made (directly or through them)"
        } else {
            "API key revoked"
        };
        let id = revoked.first().map(|id| *id.as_uuid()).unwrap_or_default();
        success(200, Deleted { id, deleted: true }, details)
    }
}

by_ids!(ListBlacklist => 200 |blacklist| BlacklistList { blacklist }, "Blacklist retrieved");
