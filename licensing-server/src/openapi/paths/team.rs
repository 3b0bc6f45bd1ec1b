//! The team's statistics, settings, blacklist, API keys, audit log and public keys.

use super::*;

/// The team's statistics (cached 15 minutes).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/statistics",
    tag = "team",
    params(TeamPath),
    responses(
        (status = 200, description = "Statistics", body = Envelope<Statistics>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn statistics() {}

/// (ext) The team's settings.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/settings",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 200, description = "Settings", body = Envelope<TeamSettings>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_settings() {}

/// (ext) Update the team's settings: members left out keep their values.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/settings",
    tag = "extensions",
    params(TeamPath),
    request_body = SettingsBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<TeamSettings>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn update_settings() {}

/// (ext) Blacklist an IP (address or CIDR), a country (alpha-2 or alpha-3) or a hardware identifier.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/blacklist",
    tag = "extensions",
    params(TeamPath),
    request_body = BlacklistBody,
    responses(
        (status = 201, description = "Created", body = Envelope<BlacklistEntry>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_blacklist_entry() {}

/// (ext) The blacklist, with hit counts.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/blacklist",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 200, description = "The entries", body = Envelope<BlacklistList>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_blacklist() {}

/// (ext) Delete a blacklist entry.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/blacklist/{blacklistId}",
    tag = "extensions",
    params(
        TeamPath,
        ("blacklistId" = String, Path, format = "uuid", description = "The blacklist entry"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 404, description = "BAD_REQUEST (no such entry)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_blacklist_entry() {}

/// (ext) Create an API key: the key is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/api-keys",
    tag = "extensions",
    params(TeamPath),
    request_body = ApiKeyBody,
    responses(
        (status = 201, description = "Created", body = Envelope<ApiKeyCreated>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_api_key() {}

/// (ext) The team's API keys, without the keys.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/api-keys",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 200, description = "The keys", body = Envelope<ApiKeyList>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_api_keys() {}

/// (ext) Revoke an API key.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/api-keys/{apiKeyId}",
    tag = "extensions",
    params(
        TeamPath,
        ("apiKeyId" = String, Path, format = "uuid", description = "The API key"),
    ),
    responses(
        (status = 200, description = "Revoked", body = Envelope<Deleted>),
        (status = 404, description = "BAD_REQUEST (no such key)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn revoke_api_key() {}

/// (ext) The audit log: every change made through the developer and admin APIs, with who made
/// it (API key, operator, command line), from which address, and each changed field's old and
/// new values (a secret appears as `secret: true`, without values). Newest first.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/audit-log",
    tag = "extensions",
    params(
        TeamPath,
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
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn audit_log() {}

/// (ext) The team's public keys: RSA (PEM and base64 of the PEM), the active Ed25519 key
/// (`signingKey`) and every signing key clients should trust (`signingKeys`).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/public-key",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 200, description = "The keys", body = Envelope<PublicKeys>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn public_keys() {}

/// (ext) Make the next Ed25519 signing key (state `next`): listed in `signingKeys` for
/// applications to ship, it signs nothing until activated. At most one at a time. No body (an
/// empty one or `{}`). Audited (`signing_key.created`).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/signing-keys",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 201, description = "The next key", body = Envelope<SigningKey>),
        (status = 400, description = "BAD_REQUEST: a body other than empty or `{}`", body = Envelope<Option<ErrorData>>),
        (status = 409, description = "CONFLICT: a next key is already staged (activate or retire it first)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn create_signing_key() {}

/// (ext) Activate the staged next signing key: it signs answers and license files from now on;
/// the former active key stays listed (`former`) and trusted until retired. Publish the next
/// key in an application release before activating it. No body. Audited
/// (`signing_key.rotated`).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/signing-keys/{kid}/activate",
    tag = "extensions",
    params(
        TeamPath,
        ("kid" = String, Path, pattern = "^[0-9a-f]{16}$", description = "The next key's id"),
    ),
    responses(
        (status = 200, description = "The key, now active", body = Envelope<SigningKey>),
        (status = 400, description = "BAD_REQUEST: a malformed key id, or a body other than empty or `{}`", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "SIGNING_KEY_NOT_FOUND: the team has no such key", body = Envelope<Option<ErrorData>>),
        (status = 409, description = "CONFLICT: a former key (make a next one instead)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn activate_signing_key() {}

/// (ext) Rotate the Ed25519 signing key in one step (create and activate): a new key signs
/// answers and license files from now on; the former keys stay listed (`former`) and trusted
/// until retired. Applications that embed only the active key reject new answers at once:
/// prefer creating a next key, shipping it, then activating it. The RSA key stays. No body.
/// Audited (`signing_key.rotated`).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/signing-keys/rotate",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 201, description = "The new active key", body = Envelope<SigningKey>),
        (status = 400, description = "BAD_REQUEST: a body other than empty or `{}`", body = Envelope<Option<ErrorData>>),
        (status = 409, description = "CONFLICT: a next key is staged (activate or retire it)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn rotate_signing_key() {}

/// (ext) Retire a former or next signing key: clients stop trusting it. Audited
/// (`signing_key.retired`).
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/signing-keys/{kid}",
    tag = "extensions",
    params(
        TeamPath,
        ("kid" = String, Path, pattern = "^[0-9a-f]{16}$", description = "The key's id"),
    ),
    responses(
        (status = 200, description = "The retired key", body = Envelope<SigningKey>),
        (status = 400, description = "BAD_REQUEST: a malformed key id, or the active key (rotate first)", body = Envelope<Option<ErrorData>>),
        (status = 404, description = "SIGNING_KEY_NOT_FOUND: the team has no such key", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn retire_signing_key() {}
