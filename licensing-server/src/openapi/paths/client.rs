//! The client API: verify, heartbeat and the encrypted classloader download.

use super::*;

/// The refusals of verify and heartbeat (besides a body too slow or too large).
#[derive(utoipa::IntoResponses)]
pub(in crate::openapi) enum ClientRefused {
    /// A malformed request.
    #[response(
        status = 400,
        description = "BAD_REQUEST: a malformed team id or body (`data.errors` names each field); also a verify without `hardwareIdentifier` for a license with a device limit that has room (a full one answers its limit's 403)"
    )]
    Malformed(Envelope<Option<ErrorData>>),
    /// A refusal of the license or the device, signed.
    #[response(
        status = 403,
        description = "IP_BLACKLISTED, COUNTRY_BLACKLISTED, HARDWARE_IDENTIFIER_BLACKLISTED, RELEASE_ARCHIVED, RELEASE_DRAFT, NO_ACCESS_TO_RELEASE, LICENSE_SUSPENDED, LICENSE_EXPIRED, (ext) ENTITLEMENTS_MISSING (`details` names the codes the license lacks, in request order), IP_LIMIT_REACHED or HWID_LIMIT_REACHED; (ext) SESSION_LIMIT_REACHED for a session start or a floating license's checkout; FORBIDDEN for a checkout when the team turned checkout off",
        headers(
            ("X-Signature" = String, description = "Signature of this exchange"),
            ("X-Signature-Key-Id" = String, description = "(ext) The `kid` of the signing key")
        )
    )]
    Refused(Envelope<Option<ErrorData>>),
    /// Something named that is not there.
    #[response(
        status = 404,
        description = "TEAM_NOT_FOUND (unsigned), LICENSE_NOT_FOUND, CUSTOMER_NOT_FOUND, PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND"
    )]
    NotFound(Envelope<Option<ErrorData>>),
    /// The address's rate limit.
    #[response(
        status = 429,
        description = "RATE_LIMIT: too many requests from this address (`Retry-After`)",
        headers(("Retry-After" = u64, description = "Seconds until a request is allowed"))
    )]
    RateLimit(Envelope<Option<ErrorData>>),
    /// A failure of the server.
    #[response(status = 500, description = "INTERNAL_SERVER_ERROR")]
    Internal(Envelope<Option<ErrorData>>),
}

/// Verify a license at start-up. Send a random `challenge`: the answer's `challengeResponse` is the team's RSA signature of it.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/verify",
    tag = "client",
    params(TeamPath),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID: the license, its customers and products; `result.challengeResponse` when a challenge was sent", body = Envelope<VerifyData>, headers(
            ("X-Signature" = String, description = "Base64 Ed25519 signature over \"licensing-v1\\n\" + hex(SHA-256(request body)) + \"\\n\" + response body, with the team's active signing key"),
            ("X-Signature-Key-Id" = String, description = "(ext) The `kid` of the key that signed: lower-case hex of the first 8 bytes of SHA-256 of its raw 32-byte public key"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn verify() {}

/// Report that a device is still in use (every 30 minutes, say); checks the license like verify.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/heartbeat",
    tag = "client",
    params(TeamPath),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID: the license's limits and expiration type", body = Envelope<HeartbeatData>, headers(
            ("X-Signature" = String, description = "Base64 Ed25519 signature over \"licensing-v1\\n\" + hex(SHA-256(request body)) + \"\\n\" + response body, with the team's active signing key"),
            ("X-Signature-Key-Id" = String, description = "(ext) The `kid` of the key that signed: lower-case hex of the first 8 bytes of SHA-256 of its raw 32-byte public key"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn heartbeat() {}

/// Download a release file, encrypted with the client's session key.
#[utoipa::path(
    get,
    path = "/api/v1/client/teams/{teamId}/verification/classloader",
    tag = "client",
    params(
        TeamPath,
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
pub(in crate::openapi) fn classloader() {}

/// (ext) Check a license out for offline use: everything verify does (the device is recorded the
/// same way; `hardwareIdentifier` is required), then a license file bound to this machine and
/// encrypted (armored `MACHINE FILE`), valid for `ttl` seconds (at least 3,600; left out or
/// longer: the team's `checkoutMaxTtl`, 30 days unless set), never past the license's end. A
/// license with a `sessionLimit` lends the file a seat: a session, listed and revocable like
/// any, that lives until the file expires (403 `SESSION_LIMIT_REACHED` when none is free;
/// `licenseFile.sessionId` and the file's `meta.sessionId` name it). A team with
/// `checkoutEnabled` off answers 403 `FORBIDDEN`.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/checkout",
    tag = "extensions",
    params(TeamPath),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID: a verify's data and `licenseFile`", body = Envelope<CheckoutData>, headers(
            ("X-Signature" = String, description = "Base64 Ed25519 signature over \"licensing-v1\\n\" + hex(SHA-256(request body)) + \"\\n\" + response body, with the team's active signing key"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn checkout() {}

/// (ext) Start a floating session: every check of a verify (`hardwareIdentifier` required), then,
/// in the same atomic step as the device and address limits, the license's `sessionLimit`
/// against its live sessions. Heartbeat with `sessionId` within `ttl`; end it on exit.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/sessions/start",
    tag = "extensions",
    params(TeamPath),
    request_body = ClientBody,
    responses(
        (status = 200, description = "VALID, \"Session started\": a verify's data and `session`", body = Envelope<SessionStartData>, headers(
            ("X-Signature" = String, description = "Signature of this exchange"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        (status = 403, description = "SESSION_LIMIT_REACHED: as many sessions are live as the license's `sessionLimit` allows (signed); or any refusal of a verify", body = Envelope<Option<ErrorData>>),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn start_session() {}

/// (ext) End a floating session: its seat is free at once.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/verification/sessions/end",
    tag = "extensions",
    params(TeamPath),
    request_body = SessionEndBody,
    responses(
        (status = 200, description = "VALID, \"Session ended\"", body = Envelope<SessionEndData>, headers(
            ("X-Signature" = String, description = "Signature of this exchange"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed")
        )),
        (status = 404, description = "TEAM_NOT_FOUND, LICENSE_NOT_FOUND, or SESSION_NOT_FOUND (unknown, already ended, revoked or expired)", body = Envelope<Option<ErrorData>>),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn end_session() {}

/// (ext) Report usage of a metered feature: every check of a verify (the device and address
/// recorded as a verify records them; rate limited and counted as one), then each event's
/// increment decided atomically against the meter's limit for its period (`used + quantity ≤
/// limit`; exact under concurrency, across instances). One event (`meter`, `quantity`,
/// `eventId`): 200 `VALID` with the meter's standing, or 403 `USAGE_LIMIT_REACHED` with the same
/// `data` and nothing counted. A batch (`events`, up to 1,000, each with its own `at` for usage
/// reported late, counted in that time's period): 200 `VALID` with one result per event. An
/// `eventId` seen on the license within 24 hours answers what it answered first and counts
/// nothing. A meter the license lacks: 404 `METER_NOT_FOUND` naming it, nothing counted.
#[utoipa::path(
    post,
    path = "/api/v1/client/teams/{teamId}/usage",
    tag = "extensions",
    params(TeamPath),
    request_body = licensing_core::api::requests::UsageRequest,
    responses(
        (status = 200, description = "VALID, \"Usage recorded\": the meter's standing (a batch: `events`, one result each)", body = Envelope<licensing_core::api::UsageData>, headers(
            ("X-Signature" = String, description = "Signature of this exchange"),
            ("X-Signature-Key-Id" = String, description = "The `kid` of the key that signed"),
            ("X-RateLimit-Limit" = u32, description = "Requests allowed per minute"),
            ("X-RateLimit-Remaining" = u32, description = "Requests left in the current window"),
            ("X-RateLimit-Reset" = u64, description = "Seconds until the budget is whole again")
        )),
        (status = 403, description = "USAGE_LIMIT_REACHED: the event would pass the meter's limit for its period; `data` is the meter's standing, nothing was counted (signed); or any refusal of a verify", body = Envelope<Option<licensing_core::model::MeterState>>),
        (status = 404, description = "TEAM_NOT_FOUND, LICENSE_NOT_FOUND, or METER_NOT_FOUND (the license has no meter of that code; `details` names it)", body = Envelope<Option<ErrorData>>),
        ClientRefused,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn usage() {}
