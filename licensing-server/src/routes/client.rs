//! The client API (protocol.md section 3): `verification/verify`, `verification/heartbeat`,
//! `verification/classloader` and (ext) `verification/checkout` under
//! `/api/v1/client/teams/{teamId}`, without authentication.
//!
//! Each handler walks the protocol's order of checks; the first failure answers. From the moment
//! the team is known, every answer is signed (`X-Signature`) and counted in the statistics.

use std::net::IpAddr;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use licensing_core::api::requests::{ClientBody, MAX_JSON_BODY, SessionEndBody, UsageBody};
use licensing_core::api::{Envelope, ErrorData};
use licensing_core::crypto::{SIGNATURE_HEADER, SIGNATURE_KEY_ID_HEADER};
use licensing_core::model::ClientEndpoint;
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, ResultCode, TeamId, Timestamp};
use serde::Serialize;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, StatusCode, header};

use crate::app::client::{self, Seen, SessionAsk, Valid, Validated};
use crate::http::with_state;
use crate::http::{Response, path_param, raw_query, read_body};
use crate::state::AppState;

mod download;
mod updates;

/// The client routes.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    // Verify and heartbeat: the same request, told apart by the path's last segment.
    let validate =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / Validation)
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(crate::http::client_addr())
            .and(warp::body::stream())
            .then(
                |team: String, kind: Validation, state: AppState, ip, body| async move {
                    json_endpoint(state, kind, team, ip, body).await
                },
            );
    // (ext) Floating sessions: start and end.
    let sessions = warp::path!(
        "api" / "v1" / "client" / "teams" / String / "verification" / "sessions" / SessionRoute
    )
    .and(warp::post())
    .and(with_state(state.clone()))
    .and(crate::http::client_addr())
    .and(warp::body::stream())
    .then(
        |team: String, SessionRoute(endpoint), state: AppState, ip, body| async move {
            json_endpoint(state, endpoint, team, ip, body).await
        },
    );
    // (ext) Usage meters.
    let usage = warp::path!("api" / "v1" / "client" / "teams" / String / "usage")
        .and(warp::post())
        .and(with_state(state.clone()))
        .and(crate::http::client_addr())
        .and(warp::body::stream())
        .then(|team: String, state: AppState, ip, body| async move {
            usage_endpoint(state, team, ip, body).await
        });
    let update_routes = updates::routes(state.clone());
    let classloader =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "classloader")
            .and(warp::get())
            .and(with_state(state))
            .and(crate::http::client_addr())
            .and(raw_query())
            .then(
                |team: String, state: AppState, ip, query: String| async move {
                    download::classloader(state, team, ip, query).await
                },
            );
    validate
        .or(sessions)
        .unify()
        .or(usage)
        .unify()
        .or(classloader)
        .unify()
        .or(update_routes)
        .unify()
        .boxed()
}

/// The last segment of a session path: the session's start or end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SessionRoute(Validation);

impl std::str::FromStr for SessionRoute {
    type Err = ();

    fn from_str(segment: &str) -> Result<Self, ()> {
        match segment {
            "start" => Ok(Self(Validation::SessionStart)),
            "end" => Ok(Self(Validation::SessionEnd)),
            _ => Err(()),
        }
    }
}

/// The last segment of a verify, heartbeat or checkout path (any other does not match).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Validation {
    Verify,
    Heartbeat,
    /// (ext) A verify that also answers a license file for the machine.
    Checkout,
    /// (ext) A verify that also starts a floating session (`sessions/start`).
    SessionStart,
    /// (ext) The end of a floating session (`sessions/end`).
    SessionEnd,
}

impl Validation {
    /// The kind of request it is counted and rate limited as (a checkout, a session's start and
    /// end as a verify).
    fn kind(self) -> RequestKind {
        match self {
            Self::Verify | Self::Checkout | Self::SessionStart | Self::SessionEnd => {
                RequestKind::Verify
            }
            Self::Heartbeat => RequestKind::Heartbeat,
        }
    }

    /// The endpoint, as the metrics and the request history name it.
    fn endpoint(self) -> ClientEndpoint {
        match self {
            Self::Verify => ClientEndpoint::Verify,
            Self::Heartbeat => ClientEndpoint::Heartbeat,
            Self::Checkout => ClientEndpoint::Checkout,
            Self::SessionStart => ClientEndpoint::SessionStart,
            Self::SessionEnd => ClientEndpoint::SessionEnd,
        }
    }
}

impl std::str::FromStr for Validation {
    type Err = ();

    fn from_str(segment: &str) -> Result<Self, ()> {
        match segment {
            "verify" => Ok(Self::Verify),
            "heartbeat" => Ok(Self::Heartbeat),
            "checkout" => Ok(Self::Checkout),
            _ => Err(()),
        }
    }
}

/// A JSON answer: the envelope, `X-Signature` over `request` and the body once the team is
/// known (`seen`), and the rate-limit headers.
pub(crate) fn json_answer<T: Serialize>(
    seen: &Seen,
    status: u16,
    envelope: &Envelope<T>,
    request: &[u8],
) -> Response {
    let body = match serde_json::to_vec(envelope) {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "response serialization failed");
            return error_answer(seen, &ApiError::internal(), request);
        }
    };
    let signature = seen
        .context
        .as_ref()
        .map(|c| (c.keys.sign_response(request, &body), c.keys.signing_kid()));
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some((signature, kid)) = signature
        && let (Ok(value), Ok(kid)) = (
            HeaderValue::from_str(&signature),
            HeaderValue::from_str(kid),
        )
    {
        headers.insert(SIGNATURE_HEADER, value);
        headers.insert(SIGNATURE_KEY_ID_HEADER, kid);
    }
    if let Some(rate) = &seen.rate {
        rate.apply(headers);
    }
    response
}

/// An error answer (its cause, if it kept one, logged here).
pub(crate) fn error_answer(seen: &Seen, error: &ApiError, request: &[u8]) -> Response {
    crate::http::log_cause(error);
    let envelope = Envelope::<Option<ErrorData>>::error(error, Timestamp::now());
    json_answer(seen, error.status(), &envelope, request)
}

/// Verify, heartbeat or checkout: the team id and body parsed, the use case, the answer
/// signed.
async fn json_endpoint<S, B>(
    state: AppState,
    endpoint: Validation,
    team: String,
    ip: IpAddr,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let kind = endpoint.kind();
    let mut seen = Seen::new(kind).at(endpoint.endpoint());
    let mut request = Bytes::new();
    let outcome = async {
        let team = path_param::<TeamId>("teamId", &team)?;
        request = read_body(body, MAX_JSON_BODY).await?;
        match endpoint {
            Validation::Checkout => {
                let input = ClientBody::parse_checkout(&request)?;
                let ask = SessionAsk::Checkout(input.ttl);
                client::validate(&state, kind, (team, &input, ip), ask, &mut seen).await
            }
            Validation::SessionStart => {
                let input = ClientBody::parse_session_start(&request)?;
                let ask = SessionAsk::Start;
                client::validate(&state, kind, (team, &input, ip), ask, &mut seen).await
            }
            Validation::SessionEnd => {
                let input = SessionEndBody::parse(&request)?;
                let ended = client::end_session(&state, team, &input, ip, &mut seen).await?;
                let now = ended.session.ended_at;
                Ok(Validated {
                    data: Valid::Ended(ended),
                    challenge: None,
                    license: None,
                    session: None,
                    file: None,
                    grace_until: None,
                    now,
                })
            }
            Validation::Verify | Validation::Heartbeat => {
                let input = ClientBody::parse(kind, &request)?;
                let ask = input
                    .session_id
                    .map_or(SessionAsk::None, SessionAsk::Extend);
                client::validate(&state, kind, (team, &input, ip), ask, &mut seen).await
            }
        }
    }
    .await;
    let code = outcome
        .as_ref()
        .map_or_else(ApiError::code, |_| ResultCode::Valid);
    seen.count(&state, code, client::limiter(&state, kind), ip)
        .await;
    match outcome {
        Ok(validated) => {
            let details = validated.details();
            let Validated {
                data, challenge, ..
            } = validated;
            let envelope = Envelope::valid(data, details, challenge, Timestamp::now());
            json_answer(&seen, 200, &envelope, &request)
        }
        Err(error) => error_answer(&seen, &error, &request),
    }
}

/// (ext) `POST {client}/usage`: the body parsed, verify's checks and the increments, the
/// answer signed: 200 `VALID` with the meter's standing (a batch: each event's result), or 403
/// `USAGE_LIMIT_REACHED` with the same data when a single event found no room.
async fn usage_endpoint<S, B>(state: AppState, team: String, ip: IpAddr, body: S) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    use crate::app::client::usage::{self, Counted};
    let mut seen = Seen::new(RequestKind::Verify).at(ClientEndpoint::Usage);
    let mut request = Bytes::new();
    let outcome = async {
        let team = path_param::<TeamId>("teamId", &team)?;
        request = read_body(body, MAX_JSON_BODY).await?;
        let input = UsageBody::parse(&request, Timestamp::now())?;
        usage::record_usage(&state, team, &input, ip, &mut seen).await
    }
    .await;
    let code = match &outcome {
        Ok(answer) => match &answer.counted {
            Counted::One(o) if !o.counted => ResultCode::UsageLimitReached,
            _ => ResultCode::Valid,
        },
        Err(e) => e.code(),
    };
    seen.count(
        &state,
        code,
        client::limiter(&state, RequestKind::Verify),
        ip,
    )
    .await;
    let answer = match outcome {
        Ok(answer) => answer,
        Err(error) => return error_answer(&seen, &error, &request),
    };
    let now = Timestamp::now();
    match answer.counted {
        Counted::One(outcome) if outcome.counted => {
            let envelope = Envelope::valid(outcome.state, "Usage recorded", answer.challenge, now);
            json_answer(&seen, 200, &envelope, &request)
        }
        Counted::One(outcome) => {
            let details = usage::limit_details(&outcome.state);
            let envelope = Envelope {
                data: outcome.state,
                result: licensing_core::api::ResultMeta {
                    timestamp: now,
                    valid: false,
                    details: details.into(),
                    code: Some(ResultCode::UsageLimitReached),
                    challenge_response: None,
                },
            };
            json_answer(&seen, 403, &envelope, &request)
        }
        Counted::Batch(data) => {
            let envelope = Envelope::valid(data, "Usage recorded", answer.challenge, now);
            json_answer(&seen, 200, &envelope, &request)
        }
    }
}
