//! The admin API under `/api/v1/admin`, for the operator: create and list teams, switch a team's
//! classloader feature, give a team a new API key or a staff account for the dashboard. It exists only when `LICENSING_ADMIN_TOKEN` is set; otherwise its paths
//! are unknown routes (404).

use std::future::Future;
use std::net::IpAddr;

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::TeamList;
use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, FeaturesBody, MAX_JSON_BODY, StaffBody, parse_no_query,
};
use licensing_core::model::{Action, StaffInvited, TeamView, changes};
use licensing_core::store::{AuditStore, Entity, StoreError, TeamStore};
use licensing_core::{ApiError, TeamId, Timestamp, UserId};
use warp::Filter;
use warp::Reply as _;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::with_state;
use crate::http::{
    Handled, Response, auth, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::services;
use crate::services::audit::Acting;
use crate::state::{AppState, Principal};

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let client = crate::connections::client_addr;
    let create = warp::path!("api" / "v1" / "admin" / "teams")
        .and(warp::post())
        .and(s())
        .and(client())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |state: AppState, client, headers: HeaderMap, body| async move {
                gate(state, client, headers, |state, by| create(state, by, body)).await
            },
        );
    let list = warp::path!("api" / "v1" / "admin" / "teams")
        .and(warp::get())
        .and(s())
        .and(client())
        .and(headers())
        .and(raw_query())
        .then(
            |state: AppState, client, headers: HeaderMap, query: String| async move {
                gate(state, client, headers, |state, _| list(state, query)).await
            },
        );
    let features = warp::path!("api" / "v1" / "admin" / "teams" / String / "features")
        .and(warp::put())
        .and(s())
        .and(client())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, client, headers: HeaderMap, body| async move {
                gate(state, client, headers, |state, by| {
                    features(state, by, team, body)
                })
                .await
            },
        );
    let api_key = warp::path!("api" / "v1" / "admin" / "teams" / String / "api-keys")
        .and(warp::post())
        .and(s())
        .and(client())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, client, headers: HeaderMap, body| async move {
                gate(state, client, headers, |state, by| {
                    create_api_key(state, by, team, body)
                })
                .await
            },
        );
    let user = warp::path!("api" / "v1" / "admin" / "teams" / String / "users")
        .and(warp::post())
        .and(s())
        .and(client())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, client, headers: HeaderMap, body| async move {
                gate(state, client, headers, |state, by| {
                    create_user(state, by, team, body)
                })
                .await
            },
        );
    let backup = warp::path!("api" / "v1" / "admin" / "backup")
        .and(warp::get())
        .and(s())
        .and(client())
        .and(headers())
        .and(raw_query())
        .then(
            |state: AppState, client, headers: HeaderMap, query: String| async move {
                gate(state, client, headers, |state, by| backup(state, by, query)).await
            },
        );
    create
        .or(list)
        .unify()
        .or(features)
        .unify()
        .or(api_key)
        .unify()
        .or(user)
        .unify()
        .or(backup)
        .unify()
        .boxed()
}

/// The admin API's way in: the token (404 when the admin API is off, 401, 429 past the failure
/// limit), then the rate limit of the admin principal, then the handler; the answer carries the
/// `X-RateLimit-*` headers.
async fn gate<F, Fut>(state: AppState, client: IpAddr, headers: HeaderMap, handler: F) -> Response
where
    F: FnOnce(AppState, Acting) -> Fut,
    Fut: Future<Output = Handled>,
{
    if let Err(refused) = auth::admin(&state, client, &headers).await {
        return refused.into_response();
    }
    let rate = match &state.limits.dev {
        Some(limiter) => Some(limiter.check(&Principal::Admin).await),
        None => None,
    };
    if let Some(status) = rate.filter(|s| !s.allowed()) {
        return crate::http::rate_limited(&status, "requests", " per admin token");
    }
    let mut response = respond(handler(state, Acting::admin(client)).await);
    if let Some(status) = rate {
        status.apply(response.headers_mut());
    }
    response
}

async fn create<S, B>(state: AppState, by: Acting, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let name = AdminTeamBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let team = services::teams::create_team_with(
        &state.store,
        &state.keyring,
        &name,
        Timestamp::now(),
        &by,
    )
    .await
    .map_err(store_error)?;
    Ok(success(
        201,
        team,
        "Team created; its API key is shown only in this answer",
    ))
}

/// A new API key for a team, with any scopes: the way back for a team whose keys are all lost.
async fn create_api_key<S, B>(state: AppState, by: Acting, team: String, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let team: TeamId = path_param("teamId", &team)?;
    let now = Timestamp::now();
    let input = ApiKeyBody::parse(&read_body(body, MAX_JSON_BODY).await?, now)?;
    let created =
        services::teams::create_api_key(&state.store, team, input, UserId::ADMIN, &by, now).await?;
    Ok(success(
        201,
        created,
        "API key created; it is shown only in this answer",
    ))
}

/// A staff account of a team for the dashboard, with its one-time set-password link.
async fn create_user<S, B>(state: AppState, by: Acting, team: String, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let team: TeamId = path_param("teamId", &team)?;
    let (email, role) = StaffBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    if state
        .store
        .get_team(team)
        .await
        .map_err(store_error)?
        .is_none()
    {
        return Err(StoreError::NotFound(Entity::Team).into());
    }
    let now = Timestamp::now();
    let created =
        services::staff::create_staff(&state.store, team, &email, role, now, Some(&by)).await?;
    let link = created
        .user
        .password_link
        .as_ref()
        .ok_or_else(ApiError::internal)?;
    Ok(success(
        201,
        StaffInvited {
            id: created.user.id,
            team_id: team,
            email: created.user.email.as_str().to_owned(),
            role,
            set_password_path: format!(
                "/dashboard/set-password/{}/{}",
                created.user.id, created.link_secret
            ),
            set_password_expires_at: link.expires_at,
        },
        "Account created; its set-password link is shown only in this answer",
    ))
}

/// The whole store as an export archive, streamed while the server goes on serving (an online
/// backup; `licensing-server backup --to FILE` saves it). An archive whose export failed half way
/// ends without its trailer, which `import` refuses.
async fn backup(state: AppState, by: Acting, query: String) -> Handled {
    parse_no_query(&query)?;
    // Every team's records leave the server: each team's log says so, before the first byte.
    let now = Timestamp::now();
    let teams = state.store.list_teams().await.map_err(store_error)?;
    let mut journal = licensing_core::store::Journal::NONE;
    for team in &teams {
        journal = journal.and(by.journal(
            team.id,
            now,
            licensing_core::model::Action::BackupDownloaded,
            team.id,
            Vec::new(),
        ));
    }
    state
        .store
        .record_journal(&journal)
        .await
        .map_err(store_error)?;
    let (writer, reader) = tokio::io::duplex(256 * 1024);
    let (store, files) = (state.store.clone(), state.files.clone());
    tokio::spawn(async move {
        match crate::archive::export(&store, &files, writer).await {
            Ok(counts) => tracing::info!(
                teams = counts.teams,
                licenses = counts.licenses,
                files = counts.files,
                lines = counts.lines,
                "backup streamed"
            ),
            Err(e) => {
                tracing::error!(error = %e, "backup failed; the archive sent ends without its trailer")
            }
        }
    });
    let mut response =
        warp::reply::stream(tokio_util::io::ReaderStream::new(reader)).into_response();
    let name = format!(
        "attachment; filename=\"licensing-backup-{}.jsonl\"",
        Timestamp::now().as_millis()
    );
    let headers = response.headers_mut();
    headers.insert(
        warp::http::header::CONTENT_TYPE,
        warp::http::HeaderValue::from_static("application/jsonl"),
    );
    if let Ok(value) = warp::http::HeaderValue::from_str(&name) {
        headers.insert(warp::http::header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

async fn list(state: AppState, query: String) -> Handled {
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

async fn features<S, B>(state: AppState, by: Acting, team: String, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let team: TeamId = path_param("teamId", &team)?;
    let features = FeaturesBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let now = Timestamp::now();
    let old = state
        .store
        .get_team(team)
        .await
        .map_err(store_error)?
        .map(|t| t.features);
    let journal = by.journal(
        team,
        now,
        Action::FeaturesUpdated,
        team,
        changes(old.as_ref(), Some(&features), &[]),
    );
    let updated = state
        .store
        .update_features(team, features, now, &journal)
        .await
        .map_err(store_error)?;
    state.contexts.invalidate(team);
    Ok(success(200, TeamView::from(&updated), "Features updated"))
}
