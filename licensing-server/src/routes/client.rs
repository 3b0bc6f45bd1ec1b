//! The client API (protocol.md section 3): `verification/verify`, `verification/heartbeat` and
//! `verification/classloader` under `/api/v1/client/teams/{teamId}`, without authentication.
//!
//! Each handler walks the protocol's order of checks; the first failure answers. From the moment
//! the team is known, every answer is signed (`X-Signature`) and counted in the statistics.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use licensing_core::api::requests::{ClientBody, MAX_JSON_BODY};
use licensing_core::api::{Envelope, ErrorData, HeartbeatData, ResultCode};
use licensing_core::crypto::{SIGNATURE_HEADER, SessionKey};
use licensing_core::model::RequestType;
use licensing_core::store::{SessionKeyRefused, SessionKeyStore};
use licensing_core::validate::Country;
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, ProductId, TeamId, Timestamp};
use serde::Serialize;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, StatusCode, header};

use crate::http::with_state;
use crate::http::{Response, path_param, raw_query, read_body, store_error};
use crate::services::contexts::TeamContext;
use crate::services::ratelimit::{RateStatus, ip_key};
use crate::services::usage::Counted;
use crate::services::verification::{self, Request};
use crate::state::AppState;

mod download;

/// The client routes.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let verify =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "verify")
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(crate::connections::client_addr())
            .and(warp::body::stream())
            .then(|team: String, state: AppState, ip, body| async move {
                json_endpoint(state, RequestKind::Verify, team, ip, body).await
            });
    let heartbeat =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "heartbeat")
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(crate::connections::client_addr())
            .and(warp::body::stream())
            .then(|team: String, state: AppState, ip, body| async move {
                json_endpoint(state, RequestKind::Heartbeat, team, ip, body).await
            });
    let classloader =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "classloader")
            .and(warp::get())
            .and(with_state(state))
            .and(crate::connections::client_addr())
            .and(raw_query())
            .then(
                |team: String, state: AppState, ip, query: String| async move {
                    download::classloader(state, team, ip, query).await
                },
            );
    verify.or(heartbeat).unify().or(classloader).unify().boxed()
}

/// What an answer needs besides its outcome: the team once known (to sign and count), the rate
/// limit status, and what the statistics record.
pub(crate) struct Exchange {
    pub(crate) endpoint: &'static str,
    pub(crate) kind: RequestType,
    pub(crate) context: Option<Arc<TeamContext>>,
    pub(crate) rate: Option<RateStatus>,
    pub(crate) country: Option<Country>,
    pub(crate) product: Option<ProductId>,
}

impl Exchange {
    fn new(kind: RequestKind) -> Self {
        let (endpoint, kind) = match kind {
            RequestKind::Verify => ("verify", RequestType::Verify),
            RequestKind::Heartbeat => ("heartbeat", RequestType::Heartbeat),
            RequestKind::Classloader => ("classloader", RequestType::Download),
        };
        Self {
            endpoint,
            kind,
            context: None,
            rate: None,
            country: None,
            product: None,
        }
    }

    /// Counts the request (once the team is known) and the outcome metric.
    pub(crate) fn count(&self, state: &AppState, code: ResultCode) {
        state.metrics.client_outcome(self.endpoint, code.as_str());
        if let Some(context) = &self.context {
            state.usage.count(&Counted {
                team: context.team.id,
                kind: self.kind,
                success: code.is_success(),
                country: self.country.map(|c| c.alpha2),
                product: self.product,
                at: Timestamp::now(),
            });
        }
    }

    /// A JSON answer: the envelope, `X-Signature` over `request` and the body once the team is
    /// known, and the rate-limit headers.
    pub(crate) fn json_answer<T: Serialize>(
        &self,
        status: u16,
        envelope: &Envelope<T>,
        request: &[u8],
    ) -> Response {
        let body = match serde_json::to_vec(envelope) {
            Ok(body) => body,
            Err(e) => {
                tracing::error!(error = %e, "response serialization failed");
                return self.error_answer(&ApiError::internal(), request);
            }
        };
        let signature = self
            .context
            .as_ref()
            .map(|c| c.keys.sign_response(request, &body));
        let mut response = Response::new(body.into());
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(signature) = signature
            && let Ok(value) = HeaderValue::from_str(&signature)
        {
            headers.insert(SIGNATURE_HEADER, value);
        }
        if let Some(rate) = &self.rate {
            rate.apply(headers);
        }
        response
    }

    /// An error answer.
    pub(crate) fn error_answer(&self, error: &ApiError, request: &[u8]) -> Response {
        let envelope = Envelope::<Option<ErrorData>>::error(error, Timestamp::now());
        self.json_answer(error.status(), &envelope, request)
    }
}

/// Verify or heartbeat.
async fn json_endpoint<S, B>(
    state: AppState,
    kind: RequestKind,
    team: String,
    ip: IpAddr,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut exchange = Exchange::new(kind);
    let mut request = Bytes::new();
    let outcome =
        check_and_answer(&state, kind, &team, ip, body, &mut request, &mut exchange).await;
    match outcome {
        Ok(response) => {
            exchange.count(&state, ResultCode::Valid);
            response
        }
        Err(error) => {
            if exchange.rate.is_none() {
                // Answered before the limit was checked: report the client's standing anyway.
                exchange.rate = match limiter(&state, kind) {
                    Some(l) => Some(l.peek(&ip_key(ip)).await),
                    None => None,
                };
            }
            exchange.count(&state, error.code());
            exchange.error_answer(&error, &request)
        }
    }
}

fn limiter(
    state: &AppState,
    kind: RequestKind,
) -> Option<&crate::services::ratelimit::RateLimiter<u128>> {
    match kind {
        RequestKind::Verify => state.limits.verify.as_ref(),
        RequestKind::Heartbeat => state.limits.heartbeat.as_ref(),
        RequestKind::Classloader => state.limits.classloader_ip.as_ref(),
    }
}

/// The 429 of a refused rate-limit check.
pub(crate) fn rate_limited(status: &RateStatus) -> ApiError {
    status.refusal("requests", "")
}

/// Steps 1 to 8 for verify and heartbeat, and the success answer.
#[allow(clippy::too_many_arguments)]
async fn check_and_answer<S, B>(
    state: &AppState,
    kind: RequestKind,
    team: &str,
    ip: IpAddr,
    body: S,
    raw: &mut Bytes,
    exchange: &mut Exchange,
) -> Result<Response, ApiError>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    // 1. Team id, body, rate limit, team.
    let team_id = path_param::<TeamId>("teamId", team)?;
    *raw = read_body(body, MAX_JSON_BODY).await?;
    let input = ClientBody::parse(kind, raw)?;
    if let Some(limiter) = limiter(state, kind) {
        let status = limiter.check(&ip_key(ip)).await;
        exchange.rate = Some(status);
        if !status.allowed() {
            return Err(rate_limited(&status));
        }
    }
    let context = team_context(state, team_id).await?;
    exchange.context = Some(context.clone());
    let country = state.geo.country(ip);
    exchange.country = country;
    let request = Request {
        kind,
        license_key: &input.license_key,
        hardware_id: input.hardware_id.as_ref(),
        customer_id: input.customer_id,
        product_id: input.product_id,
        version: input.version.as_ref(),
        branch: input.branch.as_ref(),
        ip,
        country,
    };

    // 2 to 6, then 7 and 8 atomically in the store.
    let now = Timestamp::now();
    let (product, checked) =
        verification::check(&state.store, state.recorders(), &context, &request, now).await;
    exchange.product = product;
    let checked = checked?;
    let license = verification::record(
        &state.store,
        &state.client_events,
        &context,
        state.max_records,
        (&request, &checked),
        now,
    )
    .await?;

    // The answer.
    let challenge_response = match &input.challenge {
        Some(challenge) => {
            state.metrics.rsa_operation("sign_challenge");
            Some(
                context
                    .keys
                    .sign_challenge(challenge.as_str())
                    .map_err(|e| crate::http::internal("signing the challenge failed", e))?,
            )
        }
        None => None,
    };
    let response = match kind {
        RequestKind::Heartbeat => exchange.json_answer(
            200,
            &Envelope::valid(
                HeartbeatData::build(&license),
                "License heartbeat successful",
                challenge_response,
                Timestamp::now(),
            ),
            raw,
        ),
        _ => {
            let mut data = verification::verify_data(
                &state.store,
                &license,
                checked.catalog.as_ref(),
                product,
                input.branch.as_ref(),
            )
            .await?;
            if licensing_core::verify::hardware_unchecked(&license, input.hardware_id.as_ref()) {
                data.hardware_identifier_checked = Some(false);
            }
            exchange.json_answer(
                200,
                &Envelope::valid(
                    data,
                    "License is valid",
                    challenge_response,
                    Timestamp::now(),
                ),
                raw,
            )
        }
    };
    Ok(response)
}

/// The team's context, or 404 `TEAM_NOT_FOUND`.
pub(crate) async fn team_context(
    state: &AppState,
    team: TeamId,
) -> Result<Arc<TeamContext>, ApiError> {
    state
        .contexts
        .get(&state.store, team)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ResultCode::TeamNotFound, "Team not found"))
}

/// A session key decrypted (step 1), or the 400. It is marked used only once the license and
/// product pass ([`take_session_key`]).
pub(crate) fn session_key(
    state: &AppState,
    context: &TeamContext,
    text: &str,
) -> Result<SessionKey, ApiError> {
    state.metrics.rsa_operation("decrypt_session_key");
    context.keys.decrypt_session_key(text).map_err(|_| {
        ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: send the hex of an RSA-OAEP (SHA-1) encryption of at least 16 random bytes under the team's public key",
        )
    })
}

/// How long a session key stays used (protocol.md section 2).
const SESSION_KEY_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Session keys a team may have used within the window; past it, downloads are refused with
/// 429 until older keys leave the window (about 110 downloads a second, sustained).
const SESSION_KEYS_PER_TEAM: u32 = 100_000;

/// Marks a session key used by `team`, durably: 400 when the team used it within 15 minutes,
/// 429 when the team used too many lately. Keys are remembered by a fingerprint of the derived
/// AES key, not of the ciphertext: RSA-OAEP is randomized, so one secret encrypted twice gives
/// two ciphertexts, and hex may be sent in either case.
pub(crate) async fn take_session_key(
    state: &AppState,
    team: TeamId,
    key: &SessionKey,
    now: Timestamp,
) -> Result<(), ApiError> {
    use sha2::Digest as _;
    let digest = sha2::Sha256::new()
        .chain_update(b"licensing session key\n")
        .chain_update(key.as_bytes())
        .finalize();
    let mut fingerprint = [0u8; 16];
    fingerprint.copy_from_slice(&digest[..16]);
    let taken = state
        .store
        .use_session_key(
            team,
            fingerprint,
            now,
            SESSION_KEY_WINDOW_MS,
            SESSION_KEYS_PER_TEAM,
        )
        .await
        .map_err(store_error)?;
    match taken {
        Ok(()) => Ok(()),
        Err(SessionKeyRefused::Reused) => Err(ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: session key already used; draw a new one for every download",
        )),
        Err(SessionKeyRefused::Full) => Err(ApiError::new(
            ResultCode::RateLimit,
            "Too many downloads for this team in the last 15 minutes: retry later",
        )),
    }
}
