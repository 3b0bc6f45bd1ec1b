//! The operator's admin API, and what the server serves besides the APIs (health, metrics, this document and its UI).

use super::*;

/// (admin) Create a team with its key pairs and a first API key.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams",
    tag = "admin",
    request_body = AdminTeamBody,
    responses(
        (status = 201, description = "Created: the API key is in this answer only", body = Envelope<TeamCreated>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        AdminRefused,
    ),
    security(("adminToken" = []))
)]
pub(in crate::openapi) fn create_team() {}

/// (admin) List the teams.
#[utoipa::path(
    get,
    path = "/api/v1/admin/teams",
    tag = "admin",
    responses(
        (status = 200, description = "The teams", body = Envelope<TeamList>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        AdminRefused,
    ),
    security(("adminToken" = []))
)]
pub(in crate::openapi) fn list_teams() {}

/// (admin) Turn a team's classloader feature on or off.
#[utoipa::path(
    put,
    path = "/api/v1/admin/teams/{teamId}/features",
    tag = "admin",
    params(TeamPath),
    request_body = FeaturesBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<TeamView>),
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        AdminRefused,
    ),
    security(("adminToken" = []))
)]
pub(in crate::openapi) fn set_features() {}

/// (admin) Give a team a new API key, with any scopes (a team whose keys are all lost has no
/// other way back); the key is shown only in this answer.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams/{teamId}/api-keys",
    tag = "admin",
    params(TeamPath),
    request_body = ApiKeyBody,
    responses(
        (status = 201, description = "Created: the key is in this answer only", body = Envelope<ApiKeyCreated>),
        (status = 404, description = "TEAM_NOT_FOUND, PRODUCT_NOT_FOUND; BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        AdminRefused,
    ),
    security(("adminToken" = []))
)]
pub(in crate::openapi) fn admin_create_api_key() {}

/// (admin) Create a staff account of a team for the dashboard; the answer carries its one-time
/// set-password link (valid 72 hours), which is shown only there.
#[utoipa::path(
    post,
    path = "/api/v1/admin/teams/{teamId}/users",
    tag = "admin",
    params(TeamPath),
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
pub(in crate::openapi) fn admin_create_user() {}

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
        (status = 404, description = "BAD_REQUEST: the admin API is off (no LICENSING_ADMIN_TOKEN)", body = Envelope<Option<ErrorData>>),
        AdminRefused,
    ),
    security(("adminToken" = []))
)]
pub(in crate::openapi) fn admin_backup() {}

/// Whether the server is up.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Up", body = Health)))]
pub(in crate::openapi) fn healthz() {}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String)))]
pub(in crate::openapi) fn metrics() {}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
pub(in crate::openapi) fn openapi() {}

/// Swagger UI for this document (assets served from the binary, no network needed).
#[utoipa::path(get, path = "/docs", tag = "operations", responses((status = 303, description = "Redirects to `/docs/`, the Swagger UI page")))]
pub(in crate::openapi) fn docs() {}
