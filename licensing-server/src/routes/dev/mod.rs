//! The developer API: `/api/v1/dev/teams/{teamId}/…`, bearer API keys.

mod access;
mod customers;
mod devices;
mod licenses;
mod products;
mod releases;
mod stats;
mod team;

use warp::Filter;
use warp::filters::BoxedFilter;

use crate::http::Response;
use crate::state::AppState;

/// All developer routes.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    licenses::routes(state.clone())
        .or(access::routes(state.clone()))
        .unify()
        .or(devices::routes(state.clone()))
        .unify()
        .or(customers::routes(state.clone()))
        .unify()
        .or(products::routes(state.clone()))
        .unify()
        .or(releases::routes(state.clone()))
        .unify()
        .or(stats::routes(state.clone()))
        .unify()
        .or(team::routes(state))
        .unify()
        .boxed()
}
