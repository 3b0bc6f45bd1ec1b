//! (ext) API keys and the blacklist.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::requests::{ApiKeyBody, BlacklistBody, MAX_JSON_BODY, parse_no_query};
use licensing_core::api::{ApiKeyList, BlacklistList, Deleted};
use licensing_core::crypto::ApiKeySecret;
use licensing_core::model::{ApiKeyCreated, ApiKeyRecord, ApiKeyView, BlacklistEntry};
use licensing_core::store::{ApiKeyStore, BlacklistStore};
use licensing_core::{ApiError, ApiKeyId, BlacklistId};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::state::AppState;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let create_key = warp::path!("api" / "v1" / "dev" / "teams" / String / "api-keys")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(create_key(state, team, headers, body).await)
            },
        );
    let list_keys = warp::path!("api" / "v1" / "dev" / "teams" / String / "api-keys")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list_keys(state, team, headers, query).await)
            },
        );
    let revoke_key = warp::path!("api" / "v1" / "dev" / "teams" / String / "api-keys" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                respond(revoke_key(state, team, id, headers).await)
            },
        );
    let create_entry = warp::path!("api" / "v1" / "dev" / "teams" / String / "blacklist")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(create_entry(state, team, headers, body).await)
            },
        );
    let list_entries = warp::path!("api" / "v1" / "dev" / "teams" / String / "blacklist")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list_entries(state, team, headers, query).await)
            },
        );
    let delete_entry = warp::path!("api" / "v1" / "dev" / "teams" / String / "blacklist" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                respond(delete_entry(state, team, id, headers).await)
            },
        );
    create_key
        .or(list_keys)
        .unify()
        .or(revoke_key)
        .unify()
        .or(create_entry)
        .unify()
        .or(list_entries)
        .unify()
        .or(delete_entry)
        .unify()
        .boxed()
}

async fn create_key<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let input = ApiKeyBody::parse(&read_body(body, MAX_JSON_BODY).await?, dev.now)?;
    let secret = ApiKeySecret::generate();
    let record = ApiKeyRecord {
        id: ApiKeyId::new(),
        team_id: dev.team,
        name: input.name,
        hash: secret.hash(),
        expires_at: input.expires_at,
        created_at: dev.now,
    };
    state
        .store
        .create_api_key(&record)
        .await
        .map_err(store_error)?;
    Ok(success(
        201,
        ApiKeyCreated {
            id: record.id,
            name: record.name,
            key: secret.expose().to_owned(),
            expires_at: record.expires_at,
            created_at: record.created_at,
        },
        "API key created; it is shown only in this answer",
    ))
}

async fn list_keys(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    parse_no_query(&query)?;
    let keys = state
        .store
        .list_api_keys(dev.team)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        ApiKeyList {
            api_keys: keys.iter().map(ApiKeyView::from).collect(),
        },
        "API keys retrieved",
    ))
}

async fn revoke_key(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let id: ApiKeyId = path_param("apiKeyId", &id)?;
    let keys = state
        .store
        .list_api_keys(dev.team)
        .await
        .map_err(store_error)?;
    let others_usable = keys
        .iter()
        .filter(|k| k.id != id && k.is_usable(dev.now))
        .count();
    if others_usable == 0 && keys.iter().any(|k| k.id == id) {
        return Err(ApiError::bad_field(
            "apiKeyId",
            "is the team's last usable API key: create another one before revoking it",
        ));
    }
    state
        .store
        .delete_api_key(dev.team, id)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        Deleted {
            id: *id.as_uuid(),
            deleted: true,
        },
        "API key revoked",
    ))
}

async fn create_entry<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let input = BlacklistBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let entry = BlacklistEntry {
        id: BlacklistId::new(),
        team_id: dev.team,
        kind: input.kind,
        value: input.value,
        hits: 0,
        created_by_user_id: dev.key.id.into(),
        created_at: dev.now,
    };
    state
        .store
        .create_blacklist_entry(&entry)
        .await
        .map_err(store_error)?;
    state.contexts.invalidate(dev.team);
    Ok(success(201, entry, "Blacklist entry created"))
}

async fn list_entries(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    parse_no_query(&query)?;
    // Hits counted by the client API but not yet written are written first.
    state
        .usage
        .flush_team(&state.store, dev.team)
        .await
        .map_err(store_error)?;
    let blacklist = state
        .store
        .list_blacklist(dev.team)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        BlacklistList { blacklist },
        "Blacklist retrieved",
    ))
}

async fn delete_entry(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let id: BlacklistId = path_param("blacklistId", &id)?;
    state
        .store
        .delete_blacklist_entry(dev.team, id)
        .await
        .map_err(store_error)?;
    state.contexts.invalidate(dev.team);
    Ok(success(
        200,
        Deleted {
            id: *id.as_uuid(),
            deleted: true,
        },
        "Blacklist entry deleted",
    ))
}
