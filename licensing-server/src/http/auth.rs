//! Bearer API keys (protocol.md section 2): `Authorization: Bearer lsk_…`, looked up by SHA-256.

use licensing_core::crypto::ApiKeySecret;
use licensing_core::model::ApiKeyRecord;
use licensing_core::store::ApiKeyStore;
use licensing_core::{ApiError, TeamId, Timestamp};
use warp::http::HeaderMap;

/// The bearer token of the `Authorization` header (scheme name case-insensitive).
pub(crate) fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(warp::http::header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::unauthorized(
                "Missing Authorization header: send `Authorization: Bearer <API key>`",
            )
        })?;
    let text = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("Malformed Authorization header"))?;
    let (scheme, token) = text.trim().split_once(' ').ok_or_else(|| {
        ApiError::unauthorized("Malformed Authorization header: expected `Bearer <API key>`")
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::unauthorized(
            "Unsupported authorization scheme: use `Bearer <API key>`",
        ));
    }
    Ok(token.trim())
}

/// Authenticates a developer request for `team`: 401 for a missing, malformed, unknown or expired
/// key, 403 for a key of another team.
pub(crate) async fn api_key<S: ApiKeyStore>(
    store: &S,
    headers: &HeaderMap,
    team: TeamId,
    now: Timestamp,
) -> Result<ApiKeyRecord, ApiError> {
    let token = bearer(headers)?;
    let secret =
        ApiKeySecret::parse(token).ok_or_else(|| ApiError::unauthorized("Invalid API key"))?;
    let record = store
        .find_api_key(&secret.hash())
        .await
        .map_err(super::store_error)?
        .ok_or_else(|| ApiError::unauthorized("Invalid API key"))?;
    if !record.is_usable(now) {
        return Err(ApiError::unauthorized("API key has expired"));
    }
    if record.team_id != team {
        return Err(ApiError::forbidden("This API key belongs to another team"));
    }
    Ok(record)
}
