//! (ext) Entitlements.

use super::*;

/// (ext) Create an entitlement: a feature licenses grant, directly (`entitlementIds` of a
/// license) or through their products (`entitlementIds` of a product). Clients ask for its
/// `code` in verify, heartbeat and checkout (`entitlements`).
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/entitlements",
    tag = "extensions",
    params(TeamPath),
    request_body = EntitlementBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Entitlement>),
        (status = 429, description = "RATE_LIMIT: the team has the most entitlements it may (1,000)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_entitlement() {}

/// (ext) List entitlements, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/entitlements",
    tag = "extensions",
    params(
        TeamPath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of name, code, createdAt (default createdAt)"),
        ("search" = Option<String>, Query, description = "1 to 255 characters: part of the name or the code"),
    ),
    responses(
        (status = 200, description = "A page of entitlements", body = Envelope<EntitlementPage>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_entitlements() {}

/// (ext) An entitlement.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/entitlements/{entitlementId}",
    tag = "extensions",
    params(EntitlementPath),
    responses(
        (status = 200, description = "The entitlement", body = Envelope<Entitlement>),
        NoEntitlement,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_entitlement() {}

/// (ext) Update an entitlement's name or metadata; its `code` never changes (sending the same
/// code is allowed, another one is 400).
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/entitlements/{entitlementId}",
    tag = "extensions",
    params(EntitlementPath),
    request_body = EntitlementBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<Entitlement>),
        NoEntitlement,
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn update_entitlement() {}

/// (ext) Delete an entitlement: it is detached from every license and product at once.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/entitlements/{entitlementId}",
    tag = "extensions",
    params(EntitlementPath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        NoEntitlement,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_entitlement() {}
