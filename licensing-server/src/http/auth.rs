//! Credentials: bearer API keys (protocol.md section 2), looked up by SHA-256, and the admin
//! token; with a limit on failed attempts.
//!
//! **Guessing is limited.** Every failed authentication (a malformed, mistyped, unknown or expired
//! API key, a wrong admin token) is counted against the client's address, and API-key failures
//! also against the team of the path, each in a sliding minute
//! (`LICENSING_AUTH_FAILURE_LIMIT_PER_MINUTE`; a team allows ten times the address limit). An
//! address over its limit is refused with 429 and `Retry-After` before its credentials are even
//! looked at, so that it learns nothing from further guesses, right or wrong. A team over its
//! limit answers further *failures* 429 instead of 401; a correct key of that team still passes,
//! so that nobody's failures from another address slow a correct credential. A request without
//! credentials at all is not a guess and is not counted.

use std::net::IpAddr;

use licensing_core::api::ResultCode;
use licensing_core::crypto::{ApiKeyFormatError, ApiKeySecret};
use licensing_core::model::ApiKeyRecord;
use licensing_core::store::ApiKeyStore;
use licensing_core::{ApiError, TeamId, Timestamp};
use subtle::ConstantTimeEq;
use warp::http::HeaderMap;

use crate::runtime::ratelimit::{RateStatus, ip_key};
use crate::state::AppState;

/// A refused authentication: the error, and the limiter's status when it is a 429.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: ApiError,
    pub(crate) rate: Option<RateStatus>,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Self { error, rate: None }
    }
}

impl Refused {
    /// The answer, with `Retry-After` and `X-RateLimit-*` on a 429.
    pub(crate) fn into_response(self) -> super::Response {
        let mut response = super::error(&self.error);
        if let Some(rate) = &self.rate {
            rate.apply(response.headers_mut());
        }
        response
    }
}

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

/// 429 when `client` has failed too often lately; checked before any credential.
async fn check_address(state: &AppState, client: IpAddr) -> Result<(), Refused> {
    let Some(limiter) = &state.limits.auth_failures else {
        return Ok(());
    };
    match limiter.blocked(&ip_key(client)).await {
        None => Ok(()),
        Some(status) => Err(too_many(status, "from your address")),
    }
}

fn too_many(status: RateStatus, whose: &str) -> Refused {
    let error = ApiError::new(
        ResultCode::RateLimit,
        format!(
            "Too many failed authentications {whose}: at most {} a minute; retry in {} s",
            status.limit,
            status.retry_after_secs.unwrap_or(1)
        ),
    );
    Refused {
        error,
        rate: Some(status),
    }
}

/// Counts a failed authentication of `client` (and of `team`, for API keys); the answer is
/// `error`, or a 429 once a limit is passed.
async fn failed(
    state: &AppState,
    client: IpAddr,
    team: Option<TeamId>,
    error: ApiError,
) -> Refused {
    if let Some(limiter) = &state.limits.auth_failures {
        let status = limiter.check(&ip_key(client)).await;
        if !status.allowed() {
            return too_many(status, "from your address");
        }
    }
    if let (Some(limiter), Some(team)) = (&state.limits.auth_failures_team, team) {
        let status = limiter.check(&team).await;
        if !status.allowed() {
            tracing::warn!(%team, "many failed authentications against this team");
            return too_many(status, "against this team");
        }
    }
    error.into()
}

/// Authenticates a developer request for `team` from `client`: 401 for a missing, malformed,
/// mistyped, unknown or expired key, 403 for a key of another team, 429 past the failure limits.
/// One store read, none for a key that fails its checksum.
pub(crate) async fn api_key(
    state: &AppState,
    client: IpAddr,
    headers: &HeaderMap,
    team: TeamId,
    now: Timestamp,
) -> Result<ApiKeyRecord, Refused> {
    check_address(state, client).await?;
    let token = bearer(headers)?;
    let secret = match ApiKeySecret::parse(token) {
        Ok(secret) => secret,
        Err(e) => {
            let details = match e {
                ApiKeyFormatError::Malformed => "Invalid API key",
                ApiKeyFormatError::Mistyped => {
                    "Mistyped API key: its checksum does not match; copy the whole key again"
                }
            };
            return Err(failed(state, client, Some(team), ApiError::unauthorized(details)).await);
        }
    };
    let found = state
        .store
        .find_api_key(&secret.hash())
        .await
        .map_err(|e| Refused::from(super::store_error(e)))?;
    let unauthorized = |details| failed(state, client, Some(team), ApiError::unauthorized(details));
    let Some(record) = found else {
        return Err(unauthorized("Invalid API key").await);
    };
    if !record.is_usable(now) {
        return Err(unauthorized("API key has expired").await);
    }
    if record.team_id != team {
        return Err(ApiError::forbidden("This API key belongs to another team").into());
    }
    Ok(record)
}

/// Checks the admin token of a request from `client`. The SHA-256 digests are compared in
/// constant time, not the texts, so that not even the token's length shows in the time taken.
/// 404 when the admin API is off.
pub(crate) async fn admin(
    state: &AppState,
    client: IpAddr,
    headers: &HeaderMap,
) -> Result<(), Refused> {
    let expected = state
        .admin_token
        .as_deref()
        .ok_or_else(ApiError::route_not_found)?;
    check_address(state, client).await?;
    let token = bearer(headers)?;
    let digest = |text: &str| <sha2::Sha256 as sha2::Digest>::digest(text.as_bytes());
    if bool::from(digest(token).ct_eq(&digest(expected))) {
        Ok(())
    } else {
        Err(failed(
            state,
            client,
            None,
            ApiError::unauthorized("Invalid admin token"),
        )
        .await)
    }
}
