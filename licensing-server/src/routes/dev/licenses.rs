//! Licenses: create, list, read, update and delete, by key and by id.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::requests::{
    LicenseCreate, LicenseListQuery, LicenseUpdate, MAX_JSON_BODY, parse_no_query,
};
use licensing_core::api::{LicenseDeleted, LicenseKeyDeleted, LicensePage};
use licensing_core::model::{License, LicenseDetail, OutboxMessage};
use licensing_core::store::{CustomerStore, LicenseStore, ProductStore, StoreError};
use licensing_core::{ApiError, LicenseId, LicenseKey};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::services::mail;
use crate::state::AppState;
use crate::store::SledStore;

/// Attempts at drawing a free license key before giving up (a collision needs 36^25 luck).
const KEY_ATTEMPTS: usize = 5;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;

    let create = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(create(state, team, headers, body).await)
            },
        );
    let list = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list(state, team, headers, query).await)
            },
        );
    let get_by_key = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / String)
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(|team: String, key: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(get_by_key(state, team, key, headers, query).await)
        });
    let delete_by_key = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, key: String, state: AppState, headers: HeaderMap| async move {
                respond(delete_by_key(state, team, key, headers).await)
            },
        );
    let get_by_id = warp::path!(
        "api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String
    )
    .and(warp::get())
    .and(s())
    .and(headers())
    .and(raw_query())
    .then(
        |team: String, id: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(get_by_id(state, team, id, headers, query).await)
        },
    );
    let update = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String)
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap, body| async move {
                respond(update(state, team, id, headers, body).await)
            },
        );
    let delete_by_id =
        warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String)
            .and(warp::delete())
            .and(s())
            .and(headers())
            .then(
                |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                    respond(delete_by_id(state, team, id, headers).await)
                },
            );

    create
        .or(list)
        .unify()
        .or(get_by_key)
        .unify()
        .or(delete_by_key)
        .unify()
        .or(get_by_id)
        .unify()
        .or(update)
        .unify()
        .or(delete_by_id)
        .unify()
        .boxed()
}

/// A license with its customers and products.
pub(crate) async fn detail(store: &SledStore, license: License) -> Result<LicenseDetail, ApiError> {
    let customers = store
        .get_customers(license.team_id, &license.customer_ids)
        .await
        .map_err(store_error)?;
    let products = store
        .get_products(license.team_id, &license.product_ids)
        .await
        .map_err(store_error)?;
    Ok(LicenseDetail {
        license,
        customers,
        products,
    })
}

async fn create<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let body = read_body(body, MAX_JSON_BODY).await?;
    let new = LicenseCreate::parse(&body, dev.now)?;
    let mail = new.send_email_delivery;
    if mail && state.mailer.is_none() {
        return Err(ApiError::bad_field(
            "sendEmailDelivery",
            "e-mail delivery is not configured on this server (set LICENSING_SMTP_URL and LICENSING_SMTP_FROM)",
        ));
    }
    for _ in 0..KEY_ATTEMPTS {
        let license =
            new.clone()
                .into_license(LicenseKey::generate(), dev.team, dev.key.id.into(), dev.now);
        let stored = if mail {
            let messages = messages_for(&state, &license).await?;
            state
                .store
                .create_license_with_mail(&license, &messages, mail::DAILY_LIMIT, dev.now)
                .await
        } else {
            state.store.create_license(&license).await
        };
        match stored {
            Ok(()) => {
                return Ok(success(
                    200,
                    detail(&state.store, license).await?,
                    "License created",
                ));
            }
            Err(StoreError::Conflict {
                field: "licenseKey",
                ..
            }) => continue,
            Err(StoreError::Limit(message)) => return Ok(daily_limit_reached(message, dev.now)),
            Err(e) => return Err(store_error(e)),
        }
    }
    Err(crate::http::internal(
        "license key generation",
        "no free key after several attempts",
    ))
}

/// The e-mails announcing a new license to its customers; at least one customer needs an
/// address.
async fn messages_for(state: &AppState, license: &License) -> Result<Vec<OutboxMessage>, ApiError> {
    let customers = state
        .store
        .get_customers(license.team_id, &license.customer_ids)
        .await
        .map_err(store_error)?;
    if customers.len() != license.customer_ids.len() {
        return Err(StoreError::NotFound(licensing_core::store::Entity::Customer).into());
    }
    let products = state
        .store
        .get_products(license.team_id, &license.product_ids)
        .await
        .map_err(store_error)?;
    let messages = mail::license_messages(license, &customers, &products, license.created_at);
    if messages.is_empty() {
        return Err(ApiError::bad_field(
            "sendEmailDelivery",
            "none of the license's customers has an e-mail address",
        ));
    }
    Ok(messages)
}

/// 429 with `Retry-After` until the next UTC day.
fn daily_limit_reached(message: String, now: licensing_core::Timestamp) -> Response {
    let err = ApiError::new(licensing_core::api::ResultCode::RateLimit, message);
    let mut response = crate::http::error(&err);
    let next_day_ms = (OutboxMessage::day_of(now) + 1) * 86_400_000;
    let seconds = ((next_day_ms - now.as_millis()) / 1000).max(1);
    if let Ok(value) = warp::http::HeaderValue::from_str(&seconds.to_string()) {
        response
            .headers_mut()
            .insert(warp::http::header::RETRY_AFTER, value);
    }
    response
}

async fn list(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let query = LicenseListQuery::parse(&query)?;
    let page = state
        .store
        .list_licenses(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        LicensePage {
            licenses: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Licenses retrieved",
    ))
}

async fn find_by_key(
    state: &AppState,
    team: &str,
    key: &str,
    headers: &HeaderMap,
) -> Result<License, ApiError> {
    let key: LicenseKey = path_param("licenseKey", key)?;
    let dev = state.dev(team, headers).await?;
    state
        .store
        .get_license_by_key(dev.team, &key)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(licensing_core::store::Entity::License).into())
}

async fn find_by_id(
    state: &AppState,
    team: &str,
    id: &str,
    headers: &HeaderMap,
) -> Result<License, ApiError> {
    let id: LicenseId = path_param("licenseId", id)?;
    let dev = state.dev(team, headers).await?;
    state
        .store
        .get_license(dev.team, id)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(licensing_core::store::Entity::License).into())
}

async fn get_by_key(
    state: AppState,
    team: String,
    key: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let license = find_by_key(&state, &team, &key, &headers).await?;
    parse_no_query(&query)?;
    Ok(success(
        200,
        detail(&state.store, license).await?,
        "License retrieved",
    ))
}

async fn get_by_id(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let license = find_by_id(&state, &team, &id, &headers).await?;
    parse_no_query(&query)?;
    Ok(success(
        200,
        detail(&state.store, license).await?,
        "License retrieved",
    ))
}

async fn delete_by_key(state: AppState, team: String, key: String, headers: HeaderMap) -> Handled {
    let license = find_by_key(&state, &team, &key, &headers).await?;
    state
        .store
        .delete_license(license.team_id, license.id)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        LicenseKeyDeleted {
            license_key: license.license_key,
            deleted: true,
        },
        "License deleted",
    ))
}

async fn delete_by_id(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let license = find_by_id(&state, &team, &id, &headers).await?;
    state
        .store
        .delete_license(license.team_id, license.id)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        LicenseDeleted {
            license_id: license.id,
            deleted: true,
        },
        "License deleted",
    ))
}

async fn update<S, B>(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    body: S,
) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    // The protocol's order: ids and credentials, then the body (400), then the record (404).
    let license_id: LicenseId = path_param("licenseId", &id)?;
    let dev = state.dev(&team, &headers).await?;
    let body = read_body(body, MAX_JSON_BODY).await?;
    LicenseUpdate::check_syntax(&body)?;
    let existing = state
        .store
        .get_license(dev.team, license_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| {
            ApiError::from(StoreError::NotFound(licensing_core::store::Entity::License))
        })?;
    let updated = LicenseUpdate::apply(&body, &existing, licensing_core::Timestamp::now())?;
    state
        .store
        .update_license(&updated)
        .await
        .map_err(|e| match e {
            StoreError::Conflict {
                field: "licenseKey",
                ..
            } => ApiError::bad_field(
                "licenseKey",
                "is already used by another license of this team",
            ),
            other => store_error(other),
        })?;
    Ok(success(
        200,
        detail(&state.store, updated).await?,
        "License updated",
    ))
}
