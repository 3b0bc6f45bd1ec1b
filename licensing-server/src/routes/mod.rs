//! The route tree. Each route matches its path first and its method second, so a known path with
//! the wrong method is 405 and an unknown path 404. Handlers return replies, never rejections.

mod admin;
mod dev;

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
    health()
        .or(dev::routes(state.clone()))
        .unify()
        .or(admin::routes(state))
        .unify()
        .recover(http::recover)
        .unify()
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
