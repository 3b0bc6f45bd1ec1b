//! The developer API: `/api/v1/dev/teams/{teamId}/…`, bearer API keys.
//!
//! Each route is one typed operation of [`crate::app`]: [`operations`] lists them (method,
//! path, operation), and each operation's [`Endpoint`] says how a request asks for it (its
//! path's ids, query and body) and how its answer looks. One gate is the only way in; for each
//! request, in protocol.md's order (section 4), it:
//! 1. finds the route (404 for an unknown path, 405 for a known path with another method);
//! 2. parses the team id and every id of the path (400 naming the parameter);
//! 3. authenticates the API key once (401, 403 for another team's key, 429 past the failure
//!    limits), and checks the operation's scope (403, with
//!    `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`);
//! 4. counts the key's rate limit on the record it already holds (429);
//! 5. refuses a query string on operations that take none (400);
//! 6. for a write with an `Idempotency-Key`, answers again what the same request answered
//!    before, or refuses a key in use (409) or used with another request (422)
//!    ([`crate::http::idempotency`]);
//!
//! then reads the operation from the request (its body: 400, 413) and performs it for the
//! key, which looks records up (404) and changes them.

mod releases;

use std::sync::Arc;

use bytes::Bytes;
use licensing_core::api::requests::parse_no_query;
use licensing_core::model::{ApiKeyRecord, Scope};
use licensing_core::operations::{self as ops, Body, DevOperation};
use licensing_core::{ApiError, TeamId, Timestamp};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, Method};

use crate::app::Run;
use crate::http::{Incoming, Response, auth, idempotency, path_param, respond};
use crate::routes::table::find;
pub(crate) use crate::routes::table::{Input, Query};
use licensing_core::idempotency::IdempotencyOwner;

/// A route of the developer API.
pub(crate) type Route = crate::routes::table::Route<Dev>;

impl Route {
    /// The route's full path template.
    pub(crate) fn template(&self) -> String {
        format!("/api/v1/dev/teams/{{teamId}}/{}", self.path)
    }
}

/// An authenticated developer request: the operations' context.
pub(crate) use crate::app::{Caller, Cx as Dev};
use crate::state::{AppState, Principal};

/// The HTTP method of a declared one.
pub(in crate::routes) fn method(method: ops::Method) -> Method {
    match method {
        ops::Method::Get => Method::GET,
        ops::Method::Post => Method::POST,
        ops::Method::Put => Method::PUT,
        ops::Method::Patch => Method::PATCH,
        ops::Method::Delete => Method::DELETE,
    }
}

/// How the gate treats a declared operation's query string.
fn query(query: ops::Query) -> Query {
    match query {
        ops::Query::None => Query::None,
        ops::Query::Parsed => Query::Parsed,
    }
}

/// An operation's success, as its declaration answers it.
fn answer<O: DevOperation>(output: O::Output) -> Response {
    let (data, details) = O::answer(output);
    crate::http::success(O::STATUS, data, details)
}

/// The route of operation `O`, at its declared method, path, scope and query, answered by
/// `perform`.
fn declared<O, F, Fut>(perform: F) -> Route
where
    O: DevOperation,
    F: Fn(Dev, O::Ids, Input) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = crate::http::Handled> + Send + 'static,
{
    Route::new(
        method(O::METHOD),
        O::PATH,
        O::SCOPE,
        query(O::QUERY),
        perform,
    )
}

/// The route of operation `O`, as it declares itself: its body is read and parsed (400, 413)
/// before the operation looks anything up.
fn route<O: DevOperation + Run>() -> Route {
    declared::<O, _, _>(|cx: Dev, ids: O::Ids, input: Input| async move {
        let Input { query, body, .. } = input;
        let body = match O::BODY {
            Body::Ignored => Bytes::new(),
            Body::Empty | Body::Json | Body::OptionalJson => {
                crate::http::read_body(body, licensing_core::api::requests::MAX_JSON_BODY).await?
            }
            Body::Form => return Err(ApiError::internal()),
        };
        let op = O::from_parts(ids, &query, &body)?;
        let output = cx.perform(op).await?;
        Ok(answer::<O>(output))
    })
}

/// The route of operation `O`, whose body is a multipart form read as it arrives.
fn upload<O: DevOperation + Run + releases::Upload>() -> Route {
    declared::<O, _, _>(|cx: Dev, ids: O::Ids, input: Input| async move {
        let op = O::receive(&cx, ids, input).await?;
        let output = cx.perform(op).await?;
        Ok(answer::<O>(output))
    })
}

/// The table of every declared operation.
macro_rules! table {
    ([$($op:ty),* $(,)?] [$($form:ty),* $(,)?]) => {
        vec![$(route::<$op>(),)* $(upload::<$form>(),)*]
    };
}

/// Every route of the developer API: each declared operation, at its method and path.
pub(crate) fn operations() -> Vec<Route> {
    licensing_core::dev_operations!(
        table,
        crate::app::releases::Received,
        crate::app::artifacts::ReceivedArtifact
    )
}

/// Every developer route, behind the gate.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let table: Arc<[Route]> = operations().into();
    warp::path!("api" / "v1" / "dev" / "teams" / ..)
        .and(crate::http::incoming(state))
        .then(move |request: crate::http::Incoming| {
            let table = table.clone();
            async move { gate(&table, request).await }
        })
        .boxed()
}

/// The gate: steps 1 to 5 of the module documentation, then the operation.
async fn gate(table: &[Route], request: Incoming) -> Response {
    let (state, client, input) = (request.state, request.client, request.input);
    let mut segments = request.path.as_str().split('/');
    let team = segments.next().unwrap_or_default();
    let segments: Vec<&str> = segments.collect();
    // 1. The operation.
    let (operation, ids) = match find(table, &segments, &request.method) {
        Ok(found) => found,
        Err(e) => return crate::http::error(&e),
    };
    // 2. The ids.
    let team = match path_param::<TeamId>("teamId", team) {
        Ok(team) => team,
        Err(e) => return crate::http::error(&e),
    };
    let bound = match operation.bind(&ids) {
        Ok(bound) => bound,
        Err(e) => return crate::http::error(&e),
    };
    // 3. Credentials and scope.
    let now = Timestamp::now();
    let key = match auth::api_key(&state, client, &input.headers, team, now).await {
        Ok(key) => key,
        Err(refused) => return refused.into_response(),
    };
    if let Some(scope) = operation.scope
        && !key.allows(scope)
    {
        return missing_scope(&key, scope);
    }
    // 4. The rate limit.
    let rate = match &state.limits.dev {
        Some(limiter) => Some(limiter.check(&Principal::ApiKey(key.id)).await),
        None => None,
    };
    if let Some(status) = rate.filter(|s| !s.allowed()) {
        return crate::http::rate_limited(&status, "requests", " per API key");
    }
    state.key_uses.record(team, key.id, now);
    // 5. The query of operations that take none.
    let mut response = if operation.query == Query::None
        && let Err(e) = parse_no_query(&input.query)
    {
        crate::http::error(&e)
    } else {
        let dev = Dev::new(state.clone(), team, Caller::api_key(&key), now, client)
            .with_origin(crate::http::origin(client, &input.headers));
        // 6. The idempotency key of a write.
        let path = format!("/api/v1/dev/teams/{}", request.path.as_str());
        let owner = IdempotencyOwner::api_key(team, key.id);
        let write = move |input: Input| async move { respond(bound(dev, input).await) };
        idempotency::guard(&state, owner, &request.method, &path, input, write).await
    };
    if let Some(status) = rate {
        status.apply(response.headers_mut());
    }
    response
}

/// 403 for a key without the operation's scope, naming it in the details and, as RFC 6750
/// describes, in `WWW-Authenticate`.
fn missing_scope(key: &ApiKeyRecord, scope: Scope) -> Response {
    let mut response = crate::http::error(&ApiError::forbidden(format!(
        "This API key lacks the scope {scope} (it has: {})",
        key.scopes.names().join(", ")
    )));
    if let Ok(value) = HeaderValue::from_str(&format!(
        "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
    )) {
        response
            .headers_mut()
            .insert(warp::http::header::WWW_AUTHENTICATE, value);
    }
    response
}
