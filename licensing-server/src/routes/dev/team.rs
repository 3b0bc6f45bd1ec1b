//! (ext) The team's public keys and settings.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::ApiError;
use licensing_core::api::requests::{MAX_JSON_BODY, SettingsBody, parse_no_query};
use licensing_core::crypto::TeamKeys;
use licensing_core::model::{PublicKeys, Team};
use licensing_core::store::{Entity, StoreError, TeamStore};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, internal, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::state::AppState;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let public_key = warp::path!("api" / "v1" / "dev" / "teams" / String / "public-key")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(public_key(state, team, headers, query).await)
            },
        );
    let get_settings = warp::path!("api" / "v1" / "dev" / "teams" / String / "settings")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(get_settings(state, team, headers, query).await)
            },
        );
    let put_settings = warp::path!("api" / "v1" / "dev" / "teams" / String / "settings")
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(put_settings(state, team, headers, body).await)
            },
        );
    public_key
        .or(get_settings)
        .unify()
        .or(put_settings)
        .unify()
        .boxed()
}

async fn team(state: &AppState, team: &str, headers: &HeaderMap) -> Result<Team, ApiError> {
    let dev = state.dev(team, headers).await?;
    Ok(state
        .store
        .get_team(dev.team)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Team))?)
}

async fn public_key(
    state: AppState,
    team_id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let team = team(&state, &team_id, &headers).await?;
    parse_no_query(&query)?;
    let keys =
        TeamKeys::from_stored(&team.keys).map_err(|e| internal("team keys unreadable", e))?;
    Ok(success(
        200,
        PublicKeys {
            public_key: keys.public_key_pem().to_owned(),
            public_key_base64: keys.public_key_base64(),
            signing_key: keys.signing_key_base64(),
        },
        "Public keys retrieved",
    ))
}

async fn get_settings(
    state: AppState,
    team_id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let team = team(&state, &team_id, &headers).await?;
    parse_no_query(&query)?;
    Ok(success(200, team.settings, "Settings retrieved"))
}

async fn put_settings<S, B>(
    state: AppState,
    team_id: String,
    headers: HeaderMap,
    body: S,
) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let team = team(&state, &team_id, &headers).await?;
    let body = read_body(body, MAX_JSON_BODY).await?;
    let settings = SettingsBody::apply(&body, &team.settings)?;
    let updated = state
        .store
        .update_settings(team.id, &settings, licensing_core::Timestamp::now())
        .await
        .map_err(store_error)?;
    state.contexts.invalidate(team.id);
    Ok(success(200, updated.settings, "Settings updated"))
}
