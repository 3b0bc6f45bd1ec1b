//! One declaration per operation, for the OpenAPI document, a file per area. The routes
//! themselves are warp filters; the `openapi_routes` integration test checks over HTTP that every
//! declared operation is routed and that every route is declared.

#![allow(dead_code)]

pub(super) mod catalog;
pub(super) mod client;
pub(super) mod licenses;
pub(super) mod operator;
pub(super) mod releases;
pub(super) mod team;
pub(super) mod webhooks;

use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, BlacklistBody, BranchBody, ClientBody, CustomerBody, FeaturesBody,
    ForgottenBody, LicenseCreate, LicenseUpdate, ProductBody, SettingsBody, StaffBody, WebhookBody,
};
use licensing_core::api::{
    ApiKeyList, AuditPage, BlacklistList, BranchList, CustomerDeleted, CustomerPage, Deleted,
    DeliveryPage, Envelope, ErrorData, HeartbeatData, HwidForgotten, HwidPage, IpForgotten, IpPage,
    LicenseDeleted, LicenseEmailed, LicenseKeyDeleted, LicensePage, ProductPage, ReleasePage,
    TeamList, VerifyData, WebhookList,
};
use licensing_core::model::{
    ApiKeyCreated, BlacklistEntry, Branch, Customer, LicenseDetail, Product, PublicKeys,
    ReleaseView, StaffInvited, Statistics, TeamCreated, TeamSettings, TeamView, WebhookDelivery,
    WebhookView, WebhookWithSecret,
};
use utoipa::ToSchema;

/// The multipart body of release create and update.
#[derive(ToSchema)]
pub(super) struct ReleaseForm {
    /// The release as JSON: a `ReleaseData` object (see that schema).
    #[schema(value_type = String, content_media_type = "application/json")]
    data: String,
    /// The file: at most 10 MiB, with an extension (`.jar` files get their `Main-Class` read).
    #[schema(value_type = Option<String>, format = Binary)]
    file: Option<Vec<u8>>,
}

/// The encrypted release file of a classloader answer: 64 KiB AES-256-GCM frames, each
/// `u32 BE length | 12-byte nonce | 16-byte tag | ciphertext`.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub(super) struct EncryptedFile(Vec<u8>);

/// `GET /healthz`.
#[derive(ToSchema)]
pub(super) struct Health {
    /// `ok`.
    status: String,
}

/// The refusals every developer operation may answer: a malformed request, a bad API key, the
/// key's rate limit, a server failure.
#[derive(utoipa::IntoResponses)]
pub(super) enum Refused {
    /// A malformed id, body or query parameter.
    #[response(
        status = 400,
        description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)"
    )]
    Malformed(Envelope<Option<ErrorData>>),
    /// No usable API key.
    #[response(
        status = 401,
        description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"
    )]
    Unauthorized(Envelope<Option<ErrorData>>),
    /// The key's rate limit.
    #[response(
        status = 429,
        description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)"
    )]
    RateLimit(Envelope<Option<ErrorData>>),
    /// A failure of the server.
    #[response(status = 500, description = "INTERNAL_SERVER_ERROR")]
    Internal(Envelope<Option<ErrorData>>),
}

/// The refusal of another team's API key.
#[derive(utoipa::IntoResponses)]
#[response(status = 403, description = "FORBIDDEN: an API key of another team")]
pub(super) struct OtherTeam(Envelope<Option<ErrorData>>);

/// The refusals of a request body: too slow, too large.
#[derive(utoipa::IntoResponses)]
pub(super) enum BodyRefused {
    /// The body's timeout.
    #[response(
        status = 408,
        description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)"
    )]
    Timeout(Envelope<Option<ErrorData>>),
    /// The body's size.
    #[response(status = 413, description = "BAD_REQUEST: the body is over 1 MiB")]
    TooLarge(Envelope<Option<ErrorData>>),
}

/// The refusals every admin operation may answer: a malformed request, a missing or wrong admin
/// token, the admin token's rate limit, a server failure.
#[derive(utoipa::IntoResponses)]
pub(super) enum AdminRefused {
    /// A malformed request.
    #[response(status = 400, description = "BAD_REQUEST")]
    Malformed(Envelope<Option<ErrorData>>),
    /// No usable admin token.
    #[response(
        status = 401,
        description = "UNAUTHORIZED: missing or wrong admin token"
    )]
    Unauthorized(Envelope<Option<ErrorData>>),
    /// The admin token's rate limit.
    #[response(status = 429, description = "RATE_LIMIT")]
    RateLimit(Envelope<Option<ErrorData>>),
    /// A failure of the server.
    #[response(status = 500, description = "INTERNAL_SERVER_ERROR")]
    Internal(Envelope<Option<ErrorData>>),
}
