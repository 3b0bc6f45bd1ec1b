//! The HTTP edge: replies in the envelope, request bodies with limits, path ids, authentication,
//! and the one `recover` that turns warp's own rejections into envelopes.

pub(crate) mod auth;
pub(crate) mod idempotency;

use std::convert::Infallible;
use std::pin::Pin;
use std::str::FromStr;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use licensing_core::api::{Envelope, ErrorData};
use licensing_core::{ApiError, Timestamp};
use serde::Serialize;

use crate::state::AppState;
use warp::Filter;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reject::{
    InvalidHeader, LengthRequired, MethodNotAllowed, MissingHeader, PayloadTooLarge,
    UnsupportedMediaType,
};

/// The response type of every route.
pub(crate) type Response = warp::reply::Response;

/// What handlers return: a response, or the error that becomes one.
pub(crate) type Handled = Result<Response, ApiError>;

/// A JSON response with `status`.
pub(crate) fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut response = Response::new(body.into());
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            tracing::error!(error = %e, "response serialization failed");
            error(&ApiError::internal())
        }
    }
}

/// A developer-API success in the envelope (no `code`).
pub(crate) fn success<T: Serialize>(status: u16, data: T, details: &'static str) -> Response {
    json(status, &Envelope::success(data, details, Timestamp::now()))
}

/// An error in the envelope, with its status. Internal errors are logged here, with the cause
/// they kept, and never detailed.
pub(crate) fn error(err: &ApiError) -> Response {
    log_cause(err);
    let mut response = json(
        err.status(),
        &Envelope::<Option<ErrorData>>::error(err, Timestamp::now()),
    );
    let headers = response.headers_mut();
    if let Some(window) = err.window() {
        headers.insert("x-ratelimit-limit", HeaderValue::from(window.limit));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(window.remaining));
        headers.insert("x-ratelimit-reset", HeaderValue::from(window.reset_secs));
    }
    if let Some(seconds) = err.retry_after() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The JSON body of an error answer.
pub(crate) fn error_body(err: &ApiError) -> Vec<u8> {
    serde_json::to_vec(&Envelope::<Option<ErrorData>>::error(err, Timestamp::now()))
        .unwrap_or_else(|_| b"{}".to_vec())
}

/// A whole HTTP/1.1 error answer as bytes, for the connection layer, which answers outside any
/// route (a connection refused, a head that timed out).
pub(crate) fn raw_response(err: &ApiError, headers: &[(&str, &str)]) -> Vec<u8> {
    let body = error_body(err);
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\ncontent-length: {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    out
}

/// Turns a handler's outcome into the response.
pub(crate) fn respond(outcome: Handled) -> Response {
    outcome.unwrap_or_else(|e| error(&e))
}

/// Logs a backend failure with its cause and returns the bare 500.
pub(crate) fn internal(context: &str, cause: impl std::fmt::Display) -> ApiError {
    tracing::error!(%cause, "{context}");
    ApiError::internal()
}

/// The request body did not arrive within the body timeout.
#[derive(Debug)]
pub(crate) struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimeout {}

/// Whether an error (from reading a request body) is the body timeout.
fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyTimeout>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// Reads and throws away up to `budget` bytes of a body, so that a client still sending sees
/// the answer rather than a reset connection.
pub(crate) async fn drain<S, B, E>(body: &mut S, budget: usize)
where
    S: futures_util::Stream<Item = Result<B, E>> + Unpin,
    B: bytes::Buf,
{
    use futures_util::StreamExt as _;
    let mut drained = 0;
    while let Some(Ok(chunk)) = body.next().await {
        drained += chunk.remaining();
        if drained >= budget {
            break;
        }
    }
}

/// Converts a store error (a backend failure keeps its cause, logged where the answer is made).
pub(crate) fn store_error(e: licensing_core::store::StoreError) -> ApiError {
    e.into()
}

/// Logs the cause an internal error kept (once: where its answer or page is made).
pub(crate) fn log_cause(err: &ApiError) {
    if let Some(cause) = err.cause() {
        tracing::error!(%cause, "internal error");
    }
}

/// Parses a path parameter, naming it in the 400.
pub(crate) fn path_param<T: FromStr>(name: &str, text: &str) -> Result<T, ApiError>
where
    T::Err: std::fmt::Display,
{
    T::from_str(text).map_err(|e| ApiError::bad_field(name, &e.to_string()))
}

/// Reads a whole request body of at most `limit` bytes, counting as it streams (bodies without
/// `Content-Length` are limited too): over the limit is 413.
pub(crate) async fn read_body<S, B>(stream: S, limit: usize) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut stream = std::pin::pin!(stream);
    let mut body = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let mut chunk = chunk.map_err(|e| body_error(&e, "Could not read the request body"))?;
        if body.len() + chunk.remaining() > limit {
            return Err(ApiError::payload_too_large(format!(
                "Request body is larger than {} KiB",
                limit / 1024
            )));
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Ok(body.freeze())
}

/// The answer to a request body that could not be read: 408 when it came too slowly, else 400
/// with `problem` and the cause.
pub(crate) fn body_error(error: &(dyn std::error::Error + 'static), problem: &str) -> ApiError {
    if is_body_timeout(error) {
        ApiError::request_timeout(
            "The request body did not arrive in time: send it faster, or ask the operator to \
             raise LICENSING_BODY_TIMEOUT_SECS",
        )
    } else {
        ApiError::bad_request(format!("{problem}: {error}"))
    }
}

/// A request body as a route hands it on: a stream of `Bytes`.
pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes, warp::Error>> + Send>>;

/// The request body as a boxed stream of `Bytes`.
pub(crate) fn boxed_body() -> impl Filter<Extract = (Body,), Error = warp::Rejection> + Clone {
    fn boxed<S, B>(body: S) -> Body
    where
        S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
        B: Buf,
    {
        Box::pin(body.map(|chunk| chunk.map(|mut b| b.copy_to_bytes(b.remaining()))))
    }
    warp::body::stream().map(boxed)
}

/// Passes the state to handlers.
pub(crate) fn with_state(
    state: AppState,
) -> impl Filter<Extract = (AppState,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// The client's address of a connection, as the connection layer (`connections.rs`) puts it
/// on each of its requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) std::net::IpAddr);

/// The client's address ([`crate::client_addr`]). A request that did not come through the
/// connection layer (none does in production) counts as `0.0.0.0`.
pub(crate) fn client_addr() -> impl Filter<Extract = (std::net::IpAddr,), Error = Infallible> + Clone
{
    warp::ext::optional::<ClientAddr>().map(|client: Option<ClientAddr>| {
        client.map_or(
            std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            |ClientAddr(a)| a,
        )
    })
}

/// A whole request below a prefix, for a gate that routes it itself (the developer API, the
/// admin API, the dashboard).
pub(crate) struct Incoming {
    /// The path after the prefix.
    pub(crate) path: warp::path::Tail,
    /// The method.
    pub(crate) method: warp::http::Method,
    /// The server.
    pub(crate) state: AppState,
    /// The client's address (protocol.md section 3's rule behind proxies).
    pub(crate) client: std::net::IpAddr,
    /// The query, headers and body.
    pub(crate) input: Input,
}

/// What a request carries besides its path and method: the query string, the headers and the
/// body.
pub(crate) struct Input {
    /// The raw query string (empty without one).
    pub(crate) query: String,
    /// The request headers.
    pub(crate) headers: warp::http::HeaderMap,
    /// The body, not yet read.
    pub(crate) body: Body,
}

impl Input {
    /// The whole JSON body (at most 1 MiB, else 413).
    pub(crate) async fn json(self) -> Result<Bytes, ApiError> {
        read_body(self.body, licensing_core::api::requests::MAX_JSON_BODY).await
    }
}

/// Every request (after a prefix filter), whole: see [`Incoming`].
pub(crate) fn incoming(
    state: AppState,
) -> impl Filter<Extract = (Incoming,), Error = warp::Rejection> + Clone {
    warp::path::tail()
        .and(warp::method())
        .and(with_state(state))
        .and(client_addr())
        .and(warp::header::headers_cloned())
        .and(raw_query())
        .and(boxed_body())
        .map(
            |path, method, state, client, headers, query, body| Incoming {
                path,
                method,
                state,
                client,
                input: Input {
                    query,
                    headers,
                    body,
                },
            },
        )
}

/// The raw query string, empty when there is none.
pub(crate) fn raw_query() -> impl Filter<Extract = (String,), Error = Infallible> + Clone {
    warp::query::raw().or(warp::any().map(String::new)).unify()
}

/// [`RateStatus::refusal`](crate::runtime::ratelimit::RateStatus::refusal) as an answer, with
/// the limiter's `X-RateLimit-*` and `Retry-After`.
pub(crate) fn rate_limited(
    status: &crate::runtime::ratelimit::RateStatus,
    what: &str,
    per: &str,
) -> Response {
    error(&status.refusal(what, per))
}

/// Maps warp's own rejections (no route, wrong method, oversize body) onto the envelope.
pub(crate) async fn recover(rejection: warp::Rejection) -> Result<Response, Infallible> {
    // `find` searches every rejection of every route tried, so the order here is warp's own
    // precedence: anything specific first, then "wrong method", then "no route".
    let err = if rejection.find::<PayloadTooLarge>().is_some() {
        ApiError::payload_too_large("Request body is too large")
    } else if rejection.find::<LengthRequired>().is_some() {
        ApiError::bad_request("A Content-Length header is required")
    } else if rejection.find::<UnsupportedMediaType>().is_some() {
        ApiError::bad_request("Unsupported Content-Type")
    } else if let Some(missing) = rejection.find::<MissingHeader>() {
        ApiError::bad_request(format!(
            "Missing header {}: a release is sent as multipart/form-data",
            missing.name()
        ))
    } else if let Some(invalid) = rejection.find::<InvalidHeader>() {
        ApiError::bad_request(format!(
            "Invalid header {}: a release is sent as multipart/form-data with a boundary",
            invalid.name()
        ))
    } else if rejection.find::<MethodNotAllowed>().is_some() {
        ApiError::method_not_allowed()
    } else if rejection.is_not_found() {
        ApiError::route_not_found()
    } else {
        tracing::warn!(?rejection, "unhandled rejection");
        ApiError::bad_request("The request could not be processed")
    };
    Ok(error(&err))
}

/// Where a request was sent: `scheme://host` of its `Host` header (HTTPS unless it is plain
/// HTTP on loopback, as the dashboard's cookies judge it); `None` without a plausible host.
pub(crate) fn origin(client: std::net::IpAddr, headers: &warp::http::HeaderMap) -> Option<String> {
    let host = headers
        .get(warp::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })?;
    let scheme = if is_secure(client, headers) {
        "https"
    } else {
        "http"
    };
    Some(format!("{scheme}://{host}"))
}

/// Whether the browser reached us over HTTPS: anything but a plain-HTTP request from this
/// machine to a loopback host name. A request relayed by a trusted proxy counts as HTTPS unless
/// the proxy says `X-Forwarded-Proto: http`; the cookie is then `Secure`, so a browser on plain
/// HTTP across a network never receives a session.
pub(crate) fn is_secure(client: std::net::IpAddr, headers: &warp::http::HeaderMap) -> bool {
    if let Some(proto) = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
    {
        return !proto.trim().eq_ignore_ascii_case("http") || !client.is_loopback();
    }
    let host = headers
        .get(warp::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let loopback_name = name.eq_ignore_ascii_case("localhost")
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    !(client.is_loopback() && loopback_name)
}
