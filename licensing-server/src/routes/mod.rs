//! The route tree. Each route matches its path first and its method second, so a known path with
//! the wrong method is 405 and an unknown path 404. Handlers return replies, never rejections.

mod admin;
mod client;
mod dev;
mod docs;

pub(crate) use dev::operations as dev_operations;

use std::convert::Infallible;

use licensing_core::api::requests::parse_no_query;
use serde_json::json;
use warp::Filter;
use warp::filters::BoxedFilter;

use crate::http::{self, Response, raw_query};
use crate::state::AppState;

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
        .or(dev::routes(state.clone()))
        .unify()
        .or(admin::routes(state.clone()))
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
