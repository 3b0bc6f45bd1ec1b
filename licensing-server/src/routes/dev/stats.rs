//! `GET {dev}/statistics`.

use licensing_core::api::requests::parse_no_query;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{Handled, Response, raw_query, respond, store_error, success};
use crate::routes::with_state;
use crate::state::AppState;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path!("api" / "v1" / "dev" / "teams" / String / "statistics")
        .and(warp::get())
        .and(with_state(state))
        .and(warp::header::headers_cloned())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(statistics(state, team, headers, query).await)
            },
        )
        .boxed()
}

async fn statistics(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    parse_no_query(&query)?;
    let stats = state
        .stats
        .get(&state.store, &state.usage, dev.team, dev.now)
        .await
        .map_err(store_error)?;
    Ok(success(200, &*stats, "Statistics retrieved"))
}
