//! Releases, sent as a multipart body of JSON data and an optional file.

use super::*;

/// Create a release, with an optional file (multipart: `data` is the JSON, `file` the file).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/releases",
    tag = "releases",
    params(TeamPath),
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
    )
)]
pub(in crate::openapi) fn create_release() {}

/// List releases, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/releases",
    tag = "releases",
    params(
        TeamPath,
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
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_releases() {}

/// (ext) A release.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "extensions",
    params(ReleasePath),
    responses(
        (status = 200, description = "The release", body = Envelope<ReleaseView>),
        NoRelease,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_release() {}

/// Update a release (multipart): every member of `data`, and a new file or `keepExistingFile`.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "releases",
    params(ReleasePath),
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
    )
)]
pub(in crate::openapi) fn update_release() {}

/// (ext) Delete a release and its file.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/releases/{releaseId}",
    tag = "extensions",
    params(ReleasePath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        NoRelease,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_release() {}
