//! One declaration per operation, for the OpenAPI document. The routes themselves are warp
//! filters; the `openapi_routes` integration test checks over HTTP that every declared operation
//! is routed and that every route is declared. Generated once from a table (kept below as the
//! source of truth is this file itself).

#![allow(dead_code)]

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

/// Verify a license at start-up. Send a random `challenge`: the answer's `challengeResponse` is the team's RSA signature of it.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/verify",
    tag = "client",
    params(("teamId" = String, Path, format = "uuid", description = "The team")),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID: the license, its customers and products; `result.challengeResponse` when a challenge was sent", body = Envelope<VerifyData>, headers(
            ("X-Signature" = String, description = "Base64 Ed25519 signature over \"licensing-v1\\n\" + hex(SHA-256(request body)) + \"\\n\" + response body, with the team's signing key"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        (status = 400, description = "BAD_REQUEST: a malformed team id or body (`data.errors` names each field); also a verify without `hardwareIdentifier` for a license with a device limit", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "IP_BLACKLISTED, COUNTRY_BLACKLISTED, HARDWARE_IDENTIFIER_BLACKLISTED, RELEASE_ARCHIVED, RELEASE_DRAFT, NO_ACCESS_TO_RELEASE, LICENSE_SUSPENDED, LICENSE_EXPIRED, IP_LIMIT_REACHED or HWID_LIMIT_REACHED", body = Envelope<Option<ErrorData>>, headers(("X-Signature" = String, description = "Signature of this exchange"))),
        (status = 404, description = "TEAM_NOT_FOUND (unsigned), LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND, PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests from this address (`Retry-After`)", body = Envelope<Option<ErrorData>>, headers(("Retry-After" = u64, description = "Seconds until a request is allowed"))),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(super) fn verify() {}

/// Report that a device is still in use (every 30 minutes, say); checks the license like verify.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/heartbeat",
    tag = "client",
    params(("teamId" = String, Path, format = "uuid", description = "The team")),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID: the license's limits and expiration type", body = Envelope<HeartbeatData>, headers(
            ("X-Signature" = String, description = "Base64 Ed25519 signature over \"licensing-v1\\n\" + hex(SHA-256(request body)) + \"\\n\" + response body, with the team's signing key"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        (status = 400, description = "BAD_REQUEST: a malformed team id or body (`data.errors` names each field); also a verify without `hardwareIdentifier` for a license with a device limit", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "IP_BLACKLISTED, COUNTRY_BLACKLISTED, HARDWARE_IDENTIFIER_BLACKLISTED, RELEASE_ARCHIVED, RELEASE_DRAFT, NO_ACCESS_TO_RELEASE, LICENSE_SUSPENDED, LICENSE_EXPIRED, IP_LIMIT_REACHED or HWID_LIMIT_REACHED", body = Envelope<Option<ErrorData>>, headers(("X-Signature" = String, description = "Signature of this exchange"))),
        (status = 404, description = "TEAM_NOT_FOUND (unsigned), LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND, PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests from this address (`Retry-After`)", body = Envelope<Option<ErrorData>>, headers(("Retry-After" = u64, description = "Seconds until a request is allowed"))),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(super) fn heartbeat() {}

/// Download a release file, encrypted with the client's session key.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/verification/classloader",
    tag = "client",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseKey" = String, Query, pattern = "^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$", description = "The license key"),
        ("productId" = String, Query, format = "uuid", description = "The product whose release to download"),
        ("sessionKey" = String, Query, description = "Lower-case hex of the RSA-OAEP (SHA-1) encryption of the client's random secret under the team's public key; single use"),
        ("hardwareIdentifier" = String, Query, description = "The device, 10 to 1000 characters without whitespace (alias deviceIdentifier)"),
        ("version" = Option<String>, Query, description = "A specific version (default: the latest of the branch)"),
        ("branch" = Option<String>, Query, description = "The branch"),
        ("customerId" = Option<String>, Query, format = "uuid", description = "The customer, when the team requires it")
    ),
    responses(
        (status = 200, description = "The file, encrypted; X-File-Size and X-File-Checksum (MD5) describe the plaintext", content_type = "application/octet-stream", body = EncryptedFile, headers(
            ("X-File-Size" = u64, description = "Plaintext size in bytes"),
            ("X-File-Checksum" = String, description = "MD5 of the plaintext, hex"),
            ("X-Version" = String, description = "The release's version"),
            ("X-Latest-Version" = String, description = "The latest release of the product and branch, when there is one"),
            ("X-Product-Name" = String, description = "The product's name (percent-encoded UTF-8 when not plain ASCII)"),
            ("X-Release-Status" = String, description = "PUBLISHED or DEPRECATED"),
            ("X-Release-Created-At" = String, description = "When the release was created"),
            ("X-File-Created-At" = String, description = "When the file was uploaded"),
            ("X-Main-Class" = String, description = "The JAR's main class, when set")
        )),
        (status = 400, description = "BAD_REQUEST: a malformed team id or query; INVALID_SESSION_KEY: undecryptable or already used", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: the team's classloader feature is off; or a refusal as for verify", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "TEAM_NOT_FOUND, LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND, PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND (no release, or no file)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many downloads from this address or for this license key", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    )
)]
pub(super) fn classloader() {}

/// Create a license. Only `expirationType` is required.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = LicenseCreate,
    responses(
        (status = 200, description = "License created (200 for compatibility)", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "CUSTOMER_NOT_FOUND or PRODUCT_NOT_FOUND: an unknown id in customerIds or productIds", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests, or the day's 50 license e-mails are queued", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_license() {}

/// List licenses, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of createdAt, updatedAt (default createdAt)"),
        ("productIds" = Option<String>, Query, description = "Comma-separated product ids: licenses with any of them"),
        ("customerIds" = Option<String>, Query, description = "Comma-separated customer ids: licenses with any of them"),
        ("search" = Option<String>, Query, description = "Part of the license key, case-insensitive"),
        ("metadataKey" = Option<String>, Query, description = "A metadata key the license has"),
        ("metadataValue" = Option<String>, Query, description = "Text the value of metadataKey contains (needs metadataKey)"),
        ("status" = Option<String>, Query, description = "EXPIRED: licenses whose expiration date has passed; ACTIVE: the others (suspended or not)"),
        ("expirationType" = Option<String>, Query, description = "One of NEVER, DATE, DURATION"),
        ("suspended" = Option<bool>, Query, description = "true: suspended licenses only; false: the others"),
    ),
    responses(
        (status = 200, description = "A page of licenses", body = Envelope<LicensePage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_licenses() {}

/// A license by key.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseKey" = String, Path, pattern = "^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$", description = "The license key"),
    ),
    responses(
        (status = 200, description = "The license", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_license() {}

/// Delete a license by key, with its devices and addresses.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseKey" = String, Path, pattern = "^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$", description = "The license key"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<LicenseKeyDeleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_license() {}

/// A license by id.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    responses(
        (status = 200, description = "The license", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_license_by_id() {}

/// Update a license: members left out keep their values, null clears.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    request_body = LicenseUpdate,
    responses(
        (status = 200, description = "Updated", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND or PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_license() {}

/// (ext) Suspend a license: the one change the scope `licenses:suspend` allows (so
/// does `licenses:write`). A license already suspended is answered the same, unchanged.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/suspend",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    responses(
        (status = 200, description = "The license, suspended", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id (`data.errors` names it)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn suspend_license() {}

/// (ext) E-mail the license key again to each of the license's customers that has an address,
/// through the server's outbox (delivered and retried in the background). Counts against the
/// team's daily e-mail limit.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/email",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    responses(
        (status = 200, description = "The e-mails queued and their recipients", body = Envelope<LicenseEmailed>),
        (status = 400, description = "BAD_REQUEST: a malformed id; e-mail not configured on this server; no customer of the license has an address", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without licenses:write", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key, or the team's e-mails of the day are used up (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn email_license() {}

/// (ext) Unsuspend a license: the one change the scope `licenses:suspend` allows (so
/// does `licenses:write`). A license already unsuspended is answered the same, unchanged.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/unsuspend",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    responses(
        (status = 200, description = "The license, unsuspended", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id (`data.errors` names it)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn unsuspend_license() {}

/// Delete a license by id.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<LicenseDeleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_license_by_id() {}

/// The license's hardware identifiers.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid",
    tag = "devices",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of lastSeenAt, createdAt (default lastSeenAt)"),
        ("showForgotten" = Option<bool>, Query, description = "Also list forgotten records (default false)"),
    ),
    responses(
        (status = 200, description = "A page of records", body = Envelope<HwidPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_hwids() {}

/// Forget (or remember) a hardware identifier: forgotten ones do not count against the limit.
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid/{hwidId}",
    tag = "devices",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
        ("hwidId" = String, Path, format = "uuid", description = "The hardware identifier record"),
    ),
    request_body = ForgottenBody,
    responses(
        (status = 200, description = "Changed", body = Envelope<HwidForgotten>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn set_hwid_forgotten() {}

/// The license's IP address records.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address",
    tag = "devices",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of lastSeenAt, createdAt (default lastSeenAt)"),
        ("showForgotten" = Option<bool>, Query, description = "Also list forgotten records (default false)"),
    ),
    responses(
        (status = 200, description = "A page of records", body = Envelope<IpPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_ips() {}

/// Forget (or remember) an IP address record.
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address/{ipId}",
    tag = "devices",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("licenseId" = String, Path, format = "uuid", description = "The license"),
        ("ipId" = String, Path, format = "uuid", description = "The IP address record"),
    ),
    request_body = ForgottenBody,
    responses(
        (status = 200, description = "Changed", body = Envelope<IpForgotten>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn set_ip_forgotten() {}

/// (ext) Create a customer.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/customers",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = CustomerBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Customer>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_customer() {}

/// List customers, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/customers",
    tag = "customers",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of fullName, createdAt, updatedAt, email, username (default createdAt)"),
        ("search" = Option<String>, Query, description = "1 to 255 characters: part of the e-mail, full name or username"),
    ),
    responses(
        (status = 200, description = "A page of customers", body = Envelope<CustomerPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_customers() {}

/// A customer.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("customerId" = String, Path, format = "uuid", description = "The customer"),
    ),
    responses(
        (status = 200, description = "The customer", body = Envelope<Customer>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_customer() {}

/// Update a customer: members left out keep their values, null clears.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("customerId" = String, Path, format = "uuid", description = "The customer"),
    ),
    request_body = CustomerBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<Customer>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_customer() {}

/// Delete a customer (licenses lose it).
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("customerId" = String, Path, format = "uuid", description = "The customer"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<CustomerDeleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "CUSTOMER_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_customer() {}

/// (ext) Create a product.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/products",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = ProductBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Product>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_product() {}

/// (ext) List products.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of name, createdAt, updatedAt (default createdAt)"),
    ),
    responses(
        (status = 200, description = "A page of products", body = Envelope<ProductPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_products() {}

/// (ext) A product.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
    ),
    responses(
        (status = 200, description = "The product", body = Envelope<Product>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_product() {}

/// (ext) Update a product.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
    ),
    request_body = ProductBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<Product>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_product() {}

/// (ext) Delete a product with its releases and branches; licenses lose it.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_product() {}

/// (ext) Create a branch of a product.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
    ),
    request_body = BranchBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Branch>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_branch() {}

/// (ext) The product's branches.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
    ),
    responses(
        (status = 200, description = "The branches", body = Envelope<BranchList>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_branches() {}

/// (ext) Delete a branch with its releases.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches/{branchId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("productId" = String, Path, format = "uuid", description = "The product"),
        ("branchId" = String, Path, format = "uuid", description = "The branch"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND (no such branch)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_branch() {}

/// Create a release, with an optional file (multipart: `data` is the JSON, `file` the file).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/releases",
    tag = "releases",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body(content = ReleaseForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Created", body = Envelope<ReleaseView>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: another team's key, or a file without the classloader feature", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "PRODUCT_NOT_FOUND, LICENSE_NOT_FOUND or RELEASE_NOT_FOUND (branch)", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the file is over 10 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key, or too many release uploads for this team (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_release() {}

/// List releases, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/releases",
    tag = "releases",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of version, createdAt, updatedAt, latest (default createdAt)"),
        ("productId" = Option<String>, Query, format = "uuid", description = "Releases of this product"),
        ("search" = Option<String>, Query, description = "Part of the version, case-insensitive"),
        ("status" = Option<String>, Query, description = "PUBLISHED, DRAFT, ARCHIVED or DEPRECATED"),
    ),
    responses(
        (status = 200, description = "A page of releases", body = Envelope<ReleasePage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_releases() {}

/// (ext) A release.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("releaseId" = String, Path, format = "uuid", description = "The release"),
    ),
    responses(
        (status = 200, description = "The release", body = Envelope<ReleaseView>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "RELEASE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_release() {}

/// Update a release (multipart): every member of `data`, and a new file or `keepExistingFile`.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "releases",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("releaseId" = String, Path, format = "uuid", description = "The release"),
    ),
    request_body(content = ReleaseForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "Updated", body = Envelope<ReleaseView>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: another team's key, or a file without the classloader feature", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "RELEASE_NOT_FOUND, PRODUCT_NOT_FOUND or LICENSE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the file is over 10 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key, or too many release uploads for this team (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_release() {}

/// (ext) Delete a release and its file.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("releaseId" = String, Path, format = "uuid", description = "The release"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "RELEASE_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_release() {}

/// The team's statistics (cached 15 minutes).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/statistics",
    tag = "team",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "Statistics", body = Envelope<Statistics>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn statistics() {}

/// (ext) The team's settings.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/settings",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "Settings", body = Envelope<TeamSettings>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_settings() {}

/// (ext) Update the team's settings: members left out keep their values.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/settings",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = SettingsBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<TeamSettings>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_settings() {}

/// (ext) Blacklist an IP (address or CIDR), a country (alpha-2 or alpha-3) or a hardware identifier.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/blacklist",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = BlacklistBody,
    responses(
        (status = 201, description = "Created", body = Envelope<BlacklistEntry>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_blacklist_entry() {}

/// (ext) The blacklist, with hit counts.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/blacklist",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "The entries", body = Envelope<BlacklistList>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_blacklist() {}

/// (ext) Delete a blacklist entry.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/blacklist/{blacklistId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("blacklistId" = String, Path, format = "uuid", description = "The blacklist entry"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST (no such entry)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_blacklist_entry() {}

/// (ext) Create an API key: the key is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/api-keys",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    request_body = ApiKeyBody,
    responses(
        (status = 201, description = "Created", body = Envelope<ApiKeyCreated>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 413, description = "BAD_REQUEST: the body is over 1 MiB", body = Envelope<Option<ErrorData>>),
        (status = 408, description = "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_api_key() {}

/// (ext) The team's API keys, without the keys.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/api-keys",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "The keys", body = Envelope<ApiKeyList>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_api_keys() {}

/// (ext) Revoke an API key.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/api-keys/{apiKeyId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("apiKeyId" = String, Path, format = "uuid", description = "The API key"),
    ),
    responses(
        (status = 200, description = "Revoked", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST (no such key)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn revoke_api_key() {}

/// (ext) The audit log: every change made through the developer and admin APIs, with who made
/// it (API key, operator, command line), from which address, and each changed field's old and
/// new values (a secret appears as `secret: true`, without values). Newest first.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/audit-log",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("page" = Option<u32>, Query, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "`desc` (newest first, the default) or `asc`"),
        ("resourceType" = Option<String>, Query, description = "Entries about this type of record: team, license, device, ip, customer, product, branch, release, blacklist, api_key, settings"),
        ("resourceId" = Option<String>, Query, description = "Entries about the record with this id"),
        ("actor" = Option<String>, Query, description = "Entries of one API key (its id) or of a kind of principal: API_KEY, ADMIN, USER, SYSTEM"),
        ("action" = Option<String>, Query, description = "Entries of one action, such as `license.suspended`"),
        ("from" = Option<String>, Query, format = "date-time", description = "Entries at or after this time (RFC 3339)"),
        ("to" = Option<String>, Query, format = "date-time", description = "Entries before this time (RFC 3339)"),
    ),
    responses(
        (status = 200, description = "One page of entries", body = Envelope<AuditPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn audit_log() {}

/// (ext) Creates a webhook endpoint. Events are POSTed to it signed in the Standard Webhooks scheme (`webhook-id`, `webhook-timestamp`, `webhook-signature`); the signing secret is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks",
    tag = "extensions",
    request_body = WebhookBody,
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 201, description = "The endpoint, with its secret", body = Envelope<WebhookWithSecret>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn create_webhook() {}

/// (ext) The team's webhook endpoints, oldest first (without their secrets).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "The endpoints", body = Envelope<WebhookList>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_webhooks() {}

/// (ext) One webhook endpoint: `enabled`, and `disabledReason: FAILING` with `failingSince` when the server disabled it after three days of failed deliveries.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
    ),
    responses(
        (status = 200, description = "The endpoint", body = Envelope<WebhookView>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_webhook() {}

/// (ext) Changes a webhook endpoint: any of `url`, `description`, `eventTypes`, `enabled` (enabling clears a server-side disable).
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    request_body = WebhookBody,
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
    ),
    responses(
        (status = 200, description = "The endpoint", body = Envelope<WebhookView>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn update_webhook() {}

/// (ext) Deletes a webhook endpoint with its delivery log.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn delete_webhook() {}

/// (ext) Gives the endpoint a new signing secret (in this answer only); for 24 hours deliveries carry signatures of both the old and the new secret.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/rotate-secret",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
    ),
    responses(
        (status = 200, description = "The endpoint, with its new secret", body = Envelope<WebhookWithSecret>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn rotate_webhook_secret() {}

/// (ext) Queues a `webhook.test` event for this endpoint alone.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/test",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
    ),
    responses(
        (status = 202, description = "The queued delivery", body = Envelope<WebhookDelivery>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn test_webhook() {}

/// (ext) The endpoint's delivery log, newest first: each delivery's status and attempts (time, status code, duration, error, the start of the answer).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
        ("page" = Option<u32>, Query, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "`desc` (newest first, the default) or `asc`"),
    ),
    responses(
        (status = 200, description = "One page of deliveries", body = Envelope<DeliveryPage>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn list_webhook_deliveries() {}

/// (ext) One delivery with its attempts and exact body.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
        ("deliveryId" = String, Path, format = "uuid", description = "The delivery"),
    ),
    responses(
        (status = 200, description = "The delivery", body = Envelope<WebhookDelivery>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn get_webhook_delivery() {}

/// (ext) Sends a delivery's event again (same `webhook-id` and body) as a new delivery.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
        ("webhookId" = String, Path, format = "uuid", description = "The endpoint"),
        ("deliveryId" = String, Path, format = "uuid", description = "The delivery"),
    ),
    responses(
        (status = 202, description = "The new delivery", body = Envelope<WebhookDelivery>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "NOT_FOUND: no such webhook endpoint (or delivery) in this team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn redeliver_webhook() {}

/// (ext) The team's public keys: RSA (PEM and base64 of the PEM) and Ed25519 (`signingKey`).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/public-key",
    tag = "extensions",
    params(
        ("teamId" = String, Path, format = "uuid", description = "The team"),
    ),
    responses(
        (status = 200, description = "The keys", body = Envelope<PublicKeys>),
        (status = 400, description = "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    ),
    security(("apiKey" = []))
)]
pub(super) fn public_keys() {}

/// (admin) Create a team with its key pairs and a first API key.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams",
    tag = "admin",
    request_body = AdminTeamBody,
    responses(
        (status = 201, description = "Created: the API key is in this answer only", body = Envelope<TeamCreated>),
        (status = 400, description = "BAD_REQUEST", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn create_team() {}

/// (admin) List the teams.
#[utoipa::path(
    get,
    path = "/api/v1/admin/teams",
    tag = "admin",
    responses(
        (status = 200, description = "The teams", body = Envelope<TeamList>),
        (status = 400, description = "BAD_REQUEST", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn list_teams() {}

/// (admin) Turn a team's classloader feature on or off.
#[utoipa::path(
    put,
    path = "/api/v1/admin/teams/{teamId}/features",
    tag = "admin",
    params(("teamId" = String, Path, format = "uuid", description = "The team")),
    request_body = FeaturesBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<TeamView>),
        (status = 400, description = "BAD_REQUEST", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn set_features() {}

/// (admin) Give a team a new API key, with any scopes (a team whose keys are all lost has no
/// other way back); the key is shown only in this answer.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams/{teamId}/api-keys",
    tag = "admin",
    params(("teamId" = String, Path, format = "uuid", description = "The team")),
    request_body = ApiKeyBody,
    responses(
        (status = 201, description = "Created: the key is in this answer only", body = Envelope<ApiKeyCreated>),
        (status = 400, description = "BAD_REQUEST", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "TEAM_NOT_FOUND, PRODUCT_NOT_FOUND; BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn admin_create_api_key() {}

/// (admin) Create a staff account of a team for the dashboard; the answer carries its one-time
/// set-password link (valid 72 hours), which is shown only there.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams/{teamId}/users",
    tag = "admin",
    params(("teamId" = String, Path, format = "uuid", description = "The team")),
    request_body = StaffBody,
    responses(
        (status = 201, description = "Created: the set-password link is in this answer only", body = Envelope<StaffInvited>),
        (status = 400, description = "BAD_REQUEST: a bad address or role, or an address that has an account", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "TEAM_NOT_FOUND; BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn admin_create_user() {}

/// (admin) An online backup: every team's records and release files as the export archive
/// (JSON lines: a header, the records, a trailer counting the lines), streamed while the server
/// goes on serving. `licensing-server backup --to FILE` saves it; `licensing-server restore`
/// loads it into an empty store. An archive that ends without its trailer is incomplete (the
/// export failed half way) and is refused by `restore`.
#[utoipa::path(
    get,
    path = "/api/v1/admin/backup",
    tag = "admin",
    responses(
        (status = 200, description = "The archive, streamed", content_type = "application/jsonl", body = String),
        (status = 400, description = "BAD_REQUEST", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing or wrong admin token", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        (status = 429, description = "RATE_LIMIT", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>)
    ),
    security(("adminToken" = []))
)]
pub(super) fn admin_backup() {}

/// Whether the server is up.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Up", body = Health)))]
pub(super) fn healthz() {}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String)))]
pub(super) fn metrics() {}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
pub(super) fn openapi() {}

/// Swagger UI for this document (assets served from the binary, no network needed).
#[utoipa::path(get, path = "/docs", tag = "operations", responses((status = 303, description = "Redirects to `/docs/`, the Swagger UI page")))]
pub(super) fn docs() {}
