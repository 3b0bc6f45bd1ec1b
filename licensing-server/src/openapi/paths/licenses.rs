//! Licenses, and the hardware identifiers and addresses recorded on them.

use super::*;

/// Create a license. Only `expirationType` is required.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses",
    tag = "licenses",
    params(TeamPath),
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
    )
)]
pub(in crate::openapi) fn create_license() {}

/// List licenses, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses",
    tag = "licenses",
    params(
        TeamPath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of createdAt, updatedAt (default createdAt)"),
        ("productIds" = Option<String>, Query, description = "Comma-separated product ids: licenses with any of them"),
        ("customerIds" = Option<String>, Query, description = "Comma-separated customer ids: licenses with any of them"),
        ("search" = Option<String>, Query, description = "Part of the license key, case-insensitive, hyphens left out of both (a key typed without its hyphens is found)"),
        ("metadataKey" = Option<String>, Query, description = "A metadata key the license has"),
        ("metadataValue" = Option<String>, Query, description = "Text the value of metadataKey contains (needs metadataKey)"),
        ("status" = Option<String>, Query, description = "EXPIRED: licenses whose expiration date has passed; ACTIVE: the others (suspended or not)"),
        ("expirationType" = Option<String>, Query, description = "One of NEVER, DATE, DURATION"),
        ("suspended" = Option<bool>, Query, description = "true: suspended licenses only; false: the others"),
        ("entitlementId" = Option<String>, Query, format = "uuid", description = "(ext) Licenses that grant this entitlement, themselves or through one of their products"),
    ),
    responses(
        (status = 200, description = "A page of licenses", body = Envelope<LicensePage>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_licenses() {}

/// A license by key.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
    tag = "licenses",
    params(LicenseKeyPath),
    responses(
        (status = 200, description = "The license", body = Envelope<LicenseDetail>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_license() {}

/// Delete a license by key, with its devices and addresses.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/licenses/{licenseKey}",
    tag = "licenses",
    params(LicenseKeyPath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<LicenseKeyDeleted>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_license() {}

/// A license by id.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(LicensePath),
    responses(
        (status = 200, description = "The license", body = Envelope<LicenseDetail>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_license_by_id() {}

/// Update a license: members left out keep their values, null clears.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(LicensePath),
    request_body = LicenseUpdate,
    responses(
        (status = 200, description = "Updated", body = Envelope<LicenseDetail>),
        (status = 404, description = "LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND or PRODUCT_NOT_FOUND", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn update_license() {}

/// (ext) Suspend a license: the one change the scope `licenses:suspend` allows (so
/// does `licenses:write`). A license already suspended is answered the same, unchanged.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/suspend",
    tag = "extensions",
    params(LicensePath),
    responses(
        (status = 200, description = "The license, suspended", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id (`data.errors` names it)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        NoLicense,
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(in crate::openapi) fn suspend_license() {}

/// (ext) E-mail the license key again to each of the license's customers that has an address,
/// through the server's outbox (delivered and retried in the background). Counts against the
/// team's daily e-mail limit.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/email",
    tag = "extensions",
    params(LicensePath),
    responses(
        (status = 200, description = "The e-mails queued and their recipients", body = Envelope<LicenseEmailed>),
        (status = 400, description = "BAD_REQUEST: a malformed id; e-mail not configured on this server; no customer of the license has an address", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without licenses:email (which licenses:write includes)", body = Envelope<Option<ErrorData>>),
        NoLicense,
        (status = 429, description = "RATE_LIMIT: too many requests for this API key, or the team's e-mails of the day are used up (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(in crate::openapi) fn email_license() {}

/// (ext) Move the license's expiry `days` later (1 to 3650): a `DATE` license expires that many
/// days after its date, or after now when the date has passed; a `DURATION` license lasts that
/// many days longer, counted from its start as before. A license that never expires cannot be
/// extended. Needs `licenses:extend` (which `licenses:write` includes), so that a support desk
/// can extend without changing anything else; audited and announced as `license.updated`.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/extend",
    tag = "extensions",
    params(LicensePath),
    request_body = ExtendBody,
    responses(
        (status = 200, description = "The license, extended", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id or body; `days` missing or out of range; a license that never expires", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without licenses:extend", body = Envelope<Option<ErrorData>>),
        NoLicense,
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(in crate::openapi) fn extend_license() {}

/// (ext) Unsuspend a license: the one change the scope `licenses:suspend` allows (so
/// does `licenses:write`). A license already unsuspended is answered the same, unchanged.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/unsuspend",
    tag = "extensions",
    params(LicensePath),
    responses(
        (status = 200, description = "The license, unsuspended", body = Envelope<LicenseDetail>),
        (status = 400, description = "BAD_REQUEST: a malformed id (`data.errors` names it)", body = Envelope<Option<ErrorData>>),
        (status = 401, description = "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key", body = Envelope<Option<ErrorData>>),
        (status = 403, description = "FORBIDDEN: an API key of another team", body = Envelope<Option<ErrorData>>),
        NoLicense,
        (status = 429, description = "RATE_LIMIT: too many requests for this API key (`Retry-After`)", body = Envelope<Option<ErrorData>>),
        (status = 500, description = "INTERNAL_SERVER_ERROR", body = Envelope<Option<ErrorData>>),
    )
)]
pub(in crate::openapi) fn unsuspend_license() {}

/// Delete a license by id.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}",
    tag = "licenses",
    params(LicensePath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<LicenseDeleted>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_license_by_id() {}

/// The license's hardware identifiers.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid",
    tag = "devices",
    params(
        LicensePath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of lastSeenAt, createdAt (default lastSeenAt)"),
        ("showForgotten" = Option<bool>, Query, description = "Also list forgotten records (default false)"),
    ),
    responses(
        (status = 200, description = "A page of records", body = Envelope<HwidPage>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_hwids() {}

/// Forget (or remember) a hardware identifier: forgotten ones do not count against the limit.
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/hwid/{hwidId}",
    tag = "devices",
    params(
        LicensePath,
        ("hwidId" = String, Path, format = "uuid", description = "The hardware identifier record"),
    ),
    request_body = ForgottenBody,
    responses(
        (status = 200, description = "Changed", body = Envelope<HwidForgotten>),
        (status = 404, description = "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn set_hwid_forgotten() {}

/// The license's IP address records.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address",
    tag = "devices",
    params(
        LicensePath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of lastSeenAt, createdAt (default lastSeenAt)"),
        ("showForgotten" = Option<bool>, Query, description = "Also list forgotten records (default false)"),
    ),
    responses(
        (status = 200, description = "A page of records", body = Envelope<IpPage>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_ips() {}

/// Forget (or remember) an IP address record.
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/ip-address/{ipId}",
    tag = "devices",
    params(
        LicensePath,
        ("ipId" = String, Path, format = "uuid", description = "The IP address record"),
    ),
    request_body = ForgottenBody,
    responses(
        (status = 200, description = "Changed", body = Envelope<IpForgotten>),
        (status = 404, description = "LICENSE_NOT_FOUND or BAD_REQUEST (no such record)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn set_ip_forgotten() {}

/// (ext) The license's live floating sessions (started or heartbeated within their TTL, not
/// ended or revoked; a seat borrowed by a checkout until its file expires), one page, newest
/// first.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/sessions",
    tag = "extensions",
    params(
        LicensePath,
        ("page" = Option<u32>, Query, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "`desc` (newest first, the default) or `asc`, by start"),
    ),
    responses(
        (status = 200, description = "One page of live sessions", body = Envelope<SessionPage>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_sessions() {}

/// (ext) The license's request history: every client request that reached it (verify,
/// heartbeat, classloader, checkout, session start and end), accepted or refused, with its
/// result code, address, country, device, product and version; newest first. Kept for the
/// server's `request-history-days` (default 30), at most `request-history-per-license` (10,000)
/// entries per license and `request-history-per-team` per team; a license gets at most 20
/// entries of its own a second (its other requests counted in the entry of the same endpoint
/// and answer).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/requests",
    tag = "extensions",
    params(
        LicensePath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc by time (default desc)"),
        ("code" = Option<ResultCode>, Query, description = "Only requests answered with this result code"),
        ("refused" = Option<bool>, Query, description = "Only refused requests (true) or accepted ones (false)"),
        ("endpoint" = Option<ClientEndpoint>, Query, description = "Only requests to this endpoint"),
        ("from" = Option<String>, Query, format = DateTime, description = "Only requests at or after this time (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Only requests before this time (RFC 3339)"),
    ),
    responses(
        (status = 200, description = "A page of the history", body = Envelope<RequestLogPage>),
        NoLicense,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_requests() {}

/// (ext) Revoke a live floating session: its seat is free at once, and the application's next
/// heartbeat with it is answered 404 `SESSION_NOT_FOUND`. Scope `licenses:devices`; audited,
/// event `session.revoked`.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/sessions/{sessionId}",
    tag = "extensions",
    params(
        LicensePath,
        ("sessionId" = String, Path, format = "uuid", description = "The session"),
    ),
    responses(
        (status = 200, description = "Revoked: the session as it was", body = Envelope<LicenseSession>),
        (status = 404, description = "LICENSE_NOT_FOUND, or SESSION_NOT_FOUND (unknown, ended, revoked or expired)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn revoke_session() {}

/// (ext) Issue a license file: the license's data as a verify answers it (with its id, key,
/// suspension and entitlements; its customers only for a key with `customers:read`), signed
/// with the team's active Ed25519 key (`kid` in the envelope), encrypted under the license key
/// (and the machine's hardware identifier, for a file bound to one, armored `MACHINE FILE`)
/// unless `encrypt` is `false`. Its `expiry` is the earliest of `issued + ttl` and the
/// license's end (a duration not started yet: `issued` + its days; issuing does not start the
/// clock). An application checks it offline with the team's signing keys. Audited
/// (`license.file_issued`).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/licenses/id/{licenseId}/file",
    tag = "extensions",
    params(LicensePath),
    request_body(content = LicenseFileBody, description = "Every member is optional; an empty body asks for an encrypted file for any machine, valid as long as the license"),
    responses(
        (status = 201, description = "The file", body = Envelope<LicenseFileIssued>),
        (status = 403, description = "LICENSE_SUSPENDED or LICENSE_EXPIRED: no file for a license its application would be refused; FORBIDDEN: the key lacks `licenses:write` or the license's products", body = Envelope<Option<ErrorData>>),
        NoLicense,
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn issue_license_file() {}
