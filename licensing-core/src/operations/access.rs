//! (ext) API keys and the blacklist.

use crate::api::requests::{ApiKeyBody, BlacklistBody};
use crate::api::{ApiKeyList, BlacklistList, Deleted};
use crate::model::{ApiKeyCreated, ApiKeyView, BlacklistEntry, Resource, Scope};
use crate::{ApiError, ApiKeyId, BlacklistId};

use super::doc::*;
use super::{Body, DevOperation, Method, Operation, Query, declare};

/// Creates an API key with no more access than the caller's own.
pub struct CreateApiKey(pub ApiKeyBody);

/// A new key, shown this once.
pub struct NewApiKey {
    /// The key and what it may do.
    pub created: ApiKeyCreated,
    /// Whether its expiry was brought forward to its maker's.
    pub capped: bool,
}

/// The team's API keys, without the keys themselves.
pub struct ListApiKeys;

/// Revokes an API key and every key it made (transitively).
pub struct RevokeApiKey(pub ApiKeyId);

/// Adds an entry to the blacklist.
pub struct CreateBlacklistEntry(pub BlacklistBody);

/// The team's blacklist, with hit counts up to now.
pub struct ListBlacklist;

/// Removes an entry from the blacklist.
pub struct DeleteBlacklistEntry(pub BlacklistId);

const KEYS_WRITE: Option<Scope> = Some(Scope::write(Resource::ApiKeys));
const BLACKLIST_WRITE: Option<Scope> = Some(Scope::write(Resource::Blacklist));

declare! {
    CreateBlacklistEntry() by json BlacklistBody;
    Post "blacklist" "create_blacklist_entry" BLACKLIST_WRITE;
    BlacklistEntry => 201 "Blacklist entry created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Blacklist an IP (address or CIDR), a country (alpha-2 or alpha-3) or a hardware identifier.",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    ListBlacklist by ids;
    Get "blacklist" "list_blacklist" Some(Scope::read(Resource::Blacklist));
    Vec<BlacklistEntry> => 200 BlacklistList: |blacklist| BlacklistList { blacklist }, "Blacklist retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The blacklist, with hit counts.",
        description: "",
        params: &[],
        body: "",
        success: "The entries",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    DeleteBlacklistEntry(id: BlacklistId) by ids;
    Delete "blacklist/{blacklistId}" "delete_blacklist_entry" BLACKLIST_WRITE;
    Deleted => 200 "Blacklist entry deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a blacklist entry.",
        description: "",
        params: &[
            Param::path("blacklistId", "The blacklist entry", Kind::Uuid),
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "BAD_REQUEST (no such entry)")]],
    };

    ListApiKeys by ids;
    Get "api-keys" "list_api_keys" Some(Scope::read(Resource::ApiKeys));
    Vec<ApiKeyView> => 200 ApiKeyList: |api_keys| ApiKeyList { api_keys }, "API keys retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's API keys, without the keys.",
        description: "",
        params: &[],
        body: "",
        success: "The keys",
        refusals: &[REFUSED, OTHER_TEAM],
    };
}

impl Operation for CreateApiKey {
    const NAME: &'static str = "create_api_key";
    type Output = NewApiKey;
    const SCOPE: Option<Scope> = KEYS_WRITE;
}

impl DevOperation for CreateApiKey {
    const DOC: Doc = Doc {
        tag: "extensions",
        summary: "(ext) Create an API key: the key is in this answer only.",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "api-keys";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Json;
    const STATUS: u16 = 201;
    type Ids = ();
    type Answer = ApiKeyCreated;
    type Payload = ApiKeyBody;

    fn from_parts((): (), _: &str, body: &[u8]) -> Result<Self, ApiError> {
        Ok(Self(crate::api::requests::parse_json(body)?))
    }

    fn answer(new: NewApiKey) -> (ApiKeyCreated, &'static str) {
        let details = if new.capped {
            "API key created; it is shown only in this answer. It expires when the key that made it does"
        } else {
            "API key created; it is shown only in this answer"
        };
        (new.created, details)
    }

    fn path_values(&self) -> Vec<String> {
        Vec::new()
    }

    fn json_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        Some(serde_json::to_vec(&self.0))
    }
}

impl Operation for RevokeApiKey {
    const NAME: &'static str = "revoke_api_key";
    /// The keys revoked: this one first, then those it made.
    type Output = Vec<ApiKeyId>;
    const SCOPE: Option<Scope> = KEYS_WRITE;
}

impl DevOperation for RevokeApiKey {
    const DOC: Doc = Doc {
        tag: "extensions",
        summary: "(ext) Revoke an API key.",
        description: "",
        params: &[Param::path("apiKeyId", "The API key", Kind::Uuid)],
        body: "",
        success: "Revoked",
        refusals: &[
            REFUSED,
            OTHER_TEAM,
            crate::refusals![(404, "BAD_REQUEST (no such key)")],
        ],
    };
    const METHOD: Method = Method::Delete;
    const PATH: &'static str = "api-keys/{apiKeyId}";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Ignored;
    const STATUS: u16 = 200;
    type Ids = (ApiKeyId,);
    type Answer = Deleted;
    type Payload = ();

    fn from_parts((id,): (ApiKeyId,), _: &str, _: &[u8]) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(revoked: Vec<ApiKeyId>) -> (Deleted, &'static str) {
        let details = if revoked.len() > 1 {
            "API key revoked, and with it the keys it made (directly or through them)"
        } else {
            "API key revoked"
        };
        let id = revoked.first().map(|id| *id.as_uuid()).unwrap_or_default();
        (Deleted { id, deleted: true }, details)
    }

    fn path_values(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }
}
