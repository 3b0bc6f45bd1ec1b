//! The admin API under `/api/v1/admin`, for the operator: create and list teams, switch a team's
//! classloader feature. It exists only when `LICENSING_ADMIN_TOKEN` is set; otherwise its paths
//! are unknown routes (404).

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::TeamList;
use licensing_core::api::requests::{AdminTeamBody, FeaturesBody, MAX_JSON_BODY, parse_no_query};
use licensing_core::model::TeamView;
use licensing_core::store::TeamStore;
use licensing_core::{ApiError, TeamId, Timestamp};
use subtle::ConstantTimeEq;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, auth, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::services;
use crate::state::AppState;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let create = warp::path!("api" / "v1" / "admin" / "teams")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(|state: AppState, headers: HeaderMap, body| async move {
            respond(create(state, headers, body).await)
        });
    let list = warp::path!("api" / "v1" / "admin" / "teams")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |state: AppState, headers: HeaderMap, query: String| async move {
                respond(list(state, headers, query).await)
            },
        );
    let features = warp::path!("api" / "v1" / "admin" / "teams" / String / "features")
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(features(state, team, headers, body).await)
            },
        );
    create.or(list).unify().or(features).unify().boxed()
}

/// Checks the admin token in constant time. The SHA-256 digests are compared, not the texts,
/// so that not even the token's length shows in the time taken.
pub(crate) fn admin(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let expected = state
        .admin_token
        .as_deref()
        .ok_or_else(ApiError::route_not_found)?;
    let token = auth::bearer(headers)?;
    let digest = |text: &str| <sha2::Sha256 as sha2::Digest>::digest(text.as_bytes());
    if bool::from(digest(token).ct_eq(&digest(expected))) {
        Ok(())
    } else {
        Err(ApiError::unauthorized("Invalid admin token"))
    }
}

async fn create<S, B>(state: AppState, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    admin(&state, &headers)?;
    let name = AdminTeamBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let team = services::teams::create_team(&state.store, &name, Timestamp::now())
        .await
        .map_err(store_error)?;
    Ok(success(
        201,
        team,
        "Team created; its API key is shown only in this answer",
    ))
}

async fn list(state: AppState, headers: HeaderMap, query: String) -> Handled {
    admin(&state, &headers)?;
    parse_no_query(&query)?;
    let teams = state.store.list_teams().await.map_err(store_error)?;
    Ok(success(
        200,
        TeamList {
            teams: teams.iter().map(TeamView::from).collect(),
        },
        "Teams retrieved",
    ))
}

async fn features<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    admin(&state, &headers)?;
    let team: TeamId = path_param("teamId", &team)?;
    let features = FeaturesBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let updated = state
        .store
        .update_features(team, features, Timestamp::now())
        .await
        .map_err(store_error)?;
    state.contexts.invalidate(team);
    Ok(success(200, TeamView::from(&updated), "Features updated"))
}
