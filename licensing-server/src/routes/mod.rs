//! The route tree. Each route matches its path first and its method second, so a known path with
//! the wrong method is 405 and an unknown path 404. Handlers return replies, never rejections.

pub(crate) mod admin;
mod client;
pub(crate) mod dev;
mod docs;
mod inbox;
mod table;

/// The OpenAPI document as pretty JSON, as checked in (`openapi.json`), with the scope of each
/// developer operation taken from the gate's own table.
pub fn openapi_json() -> String {
    let scoped: Vec<crate::openapi::Scoped> = dev::operations()
        .iter()
        .map(|route| crate::openapi::Scoped {
            method: route.method.clone(),
            template: route.template(),
            scope: route.scope,
        })
        .collect();
    crate::openapi::document(&scoped)
}

use licensing_core::api::requests::parse_no_query;
use serde_json::json;
use warp::Filter;
use warp::filters::BoxedFilter;

use licensing_core::ApiError;

use crate::http::{self, Response, raw_query, with_state};
use crate::state::{AppState, MetricsAccess};

/// Every route, with the rejection handler and the headers every answer carries; `document`
/// writes the OpenAPI document that `/api/openapi.json` serves.
pub(crate) fn routes(state: AppState, document: fn() -> String) -> BoxedFilter<(Response,)> {
    let metrics = state.metrics.clone();
    let access = state.metrics_access.clone();
    let all = health()
        .or(root(state.clone()))
        .unify()
        .or(metrics_route(state.clone(), access))
        .unify()
        .or(docs::routes(document))
        .unify()
        .or(client::routes(state.clone()))
        .unify()
        .or(inbox::routes(state.clone()))
        .unify()
        .or(dev::routes(state.clone()))
        .unify()
        .or(admin::routes(state.clone()))
        .unify()
        .or(crate::dashboard::routes(state.clone()))
        .unify()
        .or(crate::portal::routes(state.clone()))
        .unify()
        .recover(http::recover)
        .unify();
    warp::path::full()
        .and(all)
        .map(|path: warp::path::FullPath, mut response: Response| {
            protective_headers(path.as_str(), response.headers_mut());
            response
        })
        .with(warp::log::custom(move |info| {
            // The access log is written by the connection layer, which knows the client address.
            let status = info.status().as_u16();
            metrics.observe(info.path(), info.method().as_str(), status, info.elapsed());
        }))
        .map(warp::Reply::into_response)
        .boxed()
}

/// `X-Content-Type-Options: nosniff` on every answer, and `Cache-Control: no-store` on every
/// answer but the public documents (the OpenAPI document, the Swagger UI, the dashboard's
/// stylesheet and script): the API's answers
/// carry secrets (new API keys, new teams' keys) and private data (licenses, customers), which no
/// cache between the client and the server may keep.
fn protective_headers(path: &str, headers: &mut warp::http::HeaderMap) {
    use warp::http::{HeaderValue, header};
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let public = path == "/api/openapi.json" || path == "/docs" || path.starts_with("/docs/");
    if (path.starts_with("/dashboard/static/") || is_update_path(path))
        && headers.contains_key(header::CACHE_CONTROL)
    {
        // The dashboard's stylesheet and script say how long they may be kept; so do the update
        // feeds and downloads (`private, no-store` for a license's, cacheable when public).
        return;
    }
    if !public {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// Whether `path` is an update feed's or download's (`/api/v1/client/teams/{team}/updates/…`).
fn is_update_path(path: &str) -> bool {
    path.strip_prefix("/api/v1/client/teams/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, rest)| rest.starts_with("updates/"))
}

/// The separate metrics listener's routes: `GET /metrics` (with `access`), else 404.
pub(crate) fn metrics_only(state: AppState, access: MetricsAccess) -> BoxedFilter<(Response,)> {
    metrics_route(state, access)
        .recover(http::recover)
        .unify()
        .map(|mut response: Response| {
            protective_headers("/metrics", response.headers_mut());
            response
        })
        .boxed()
}

fn metrics_route(state: AppState, access: MetricsAccess) -> BoxedFilter<(Response,)> {
    warp::path!("metrics")
        .and(warp::get())
        .and(crate::http::client_addr())
        .and(warp::header::headers_cloned())
        .and(with_state(state))
        .and_then(
            move |client: std::net::IpAddr, headers: warp::http::HeaderMap, state: AppState| {
                let access = access.clone();
                async move {
                    if let MetricsAccess::Elsewhere = access {
                        // Not a route here.
                        return Err(warp::reject::not_found());
                    }
                    let refused = match &access {
                        MetricsAccess::Loopback if !client.is_loopback() => Some(ApiError::forbidden(
                            "Metrics are served to clients on this host only: set LICENSING_METRICS_TOKEN, or LICENSING_METRICS_LISTEN for a listener of their own",
                        )),
                        MetricsAccess::Token(token) => {
                            let digest = |t: &str| <sha2::Sha256 as sha2::Digest>::digest(t.as_bytes());
                            match http::auth::bearer(&headers) {
                                Ok(given) if bool::from(subtle::ConstantTimeEq::ct_eq(
                                    digest(given).as_slice(),
                                    digest(token).as_slice(),
                                )) => None,
                                Ok(_) => Some(ApiError::unauthorized("Invalid metrics token")),
                                Err(e) => Some(e),
                            }
                        }
                        _ => None,
                    };
                    if let Some(error) = refused {
                        return Ok(http::error(&error));
                    }
                    // Figures read from the store at each scrape (a failure leaves the last).
                    match licensing_core::store::StatsStore::backlog(&state.store).await {
                        Ok(backlog) => state.metrics.backlog(&backlog),
                        Err(e) => tracing::warn!(error = %e, "metrics: reading the backlog failed"),
                    }
                    state
                        .metrics
                        .request_history(state.request_log.waiting(), state.request_log.dropped());
                    let (hits, misses) = state.licenses.lookups();
                    state.metrics.license_cache(hits, misses, state.licenses.len());
                    if let Some((open, idle, max)) = state.store.pool_connections() {
                        state.metrics.pool_connections(open, idle, max);
                    }
                    let mut response = Response::new(state.metrics.render().into());
                    response.headers_mut().insert(
                        warp::http::header::CONTENT_TYPE,
                        warp::http::HeaderValue::from_static(
                            "text/plain; version=0.0.4; charset=utf-8",
                        ),
                    );
                    Ok(response)
                }
            },
        )
        .boxed()
}

/// `/`: with the dashboard on, a `GET` (or `HEAD`) is sent to it (303), as a person typing the
/// server's address expects; another method is 405. With it off, `/` is no route (404).
fn root(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path::end()
        .and(warp::method())
        .and(with_state(state))
        .and_then(|method: warp::http::Method, state: AppState| async move {
            if state.dashboard.is_none() {
                return Err(warp::reject::not_found());
            }
            Ok(match method {
                warp::http::Method::GET | warp::http::Method::HEAD => {
                    crate::dashboard::redirect("/dashboard/")
                }
                _ => http::error(&ApiError::method_not_allowed()),
            })
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
