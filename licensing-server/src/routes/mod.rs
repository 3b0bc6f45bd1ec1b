//! The route tree. Each route matches its path first and its method second, so a known path with
//! the wrong method is 405 and an unknown path 404. Handlers return replies, never rejections.

mod admin;
mod client;
mod dev;
mod docs;

use std::convert::Infallible;

use licensing_core::Timestamp;
use licensing_core::api::requests::parse_no_query;
use licensing_core::crypto::ApiKeySecret;
use licensing_core::store::ApiKeyStore;
use serde_json::json;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{self, Response, raw_query};
use crate::services::ratelimit::RateStatus;
use crate::state::{AppState, Principal};

/// Passes the state to handlers.
pub(crate) fn with_state(
    state: AppState,
) -> impl Filter<Extract = (AppState,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// Every route, with the rejection handler.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let metrics = state.metrics.clone();
    health()
        .or(metrics_route(state.clone()))
        .unify()
        .or(docs::routes())
        .unify()
        .or(client::routes(state.clone()))
        .unify()
        .or(rate_limited(
            state.clone(),
            dev::routes(state.clone())
                .or(admin::routes(state.clone()))
                .unify()
                .boxed(),
        ))
        .unify()
        .recover(http::recover)
        .unify()
        .with(warp::log::custom(move |info| {
            // The access log is written by the connection layer, which knows the client address.
            let status = info.status().as_u16();
            metrics.observe(info.path(), info.method().as_str(), status, info.elapsed());
        }))
        .map(warp::Reply::into_response)
        .boxed()
}

/// The developer and admin rate limit (protocol.md section 3): requests a minute per API key or
/// admin token. Requests without valid credentials are not counted (they are answered 401 by the
/// routes); a request over the limit is refused before its route runs, and every answer to a
/// counted request carries the `X-RateLimit-*` headers.
fn rate_limited(state: AppState, routes: BoxedFilter<(Response,)>) -> BoxedFilter<(Response,)> {
    warp::path::full()
        .and(warp::header::headers_cloned())
        .and(with_state(state))
        .and_then(
            |path: warp::path::FullPath, headers: HeaderMap, state: AppState| async move {
                let Some(limiter) = state.limits.dev.as_ref() else {
                    return Ok::<_, warp::Rejection>(None);
                };
                let Some(principal) = principal(&state, path.as_str(), &headers).await else {
                    return Ok(None);
                };
                let status = limiter.check(&principal);
                if status.allowed() {
                    Ok(Some(status))
                } else {
                    Err(warp::reject::custom(http::RateLimited(status)))
                }
            },
        )
        .and(routes)
        .map(|status: Option<RateStatus>, mut response: Response| {
            if let Some(status) = status {
                status.apply(response.headers_mut());
            }
            response
        })
        .boxed()
}

/// Whom a developer or admin request counts against: its valid API key, or the admin token.
async fn principal(state: &AppState, path: &str, headers: &HeaderMap) -> Option<Principal> {
    if path.starts_with("/api/v1/dev/") {
        let secret = ApiKeySecret::parse(http::auth::bearer(headers).ok()?)?;
        let record = state.store.find_api_key(&secret.hash()).await.ok()??;
        record
            .is_usable(Timestamp::now())
            .then_some(Principal::ApiKey(record.id))
    } else if path.starts_with("/api/v1/admin/") {
        admin::admin(state, headers).ok().map(|()| Principal::Admin)
    } else {
        None
    }
}

fn metrics_route(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path!("metrics")
        .and(warp::get())
        .and(with_state(state))
        .map(|state: AppState| {
            let mut response = Response::new(state.metrics.render().into());
            response.headers_mut().insert(
                warp::http::header::CONTENT_TYPE,
                warp::http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            response
        })
        .boxed()
}

fn health() -> BoxedFilter<(Response,)> {
    warp::path!("healthz")
        .and(warp::get())
        .and(raw_query())
        .map(|query: String| {
            http::respond(
                parse_no_query(&query).map(|()| http::json(200, &json!({"status": "ok"}))),
            )
        })
        .boxed()
}
