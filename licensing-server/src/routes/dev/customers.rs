//! Customers: create (ext), list with search, read, update, delete.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::requests::{
    CustomerBody, CustomerInput, CustomerListQuery, MAX_JSON_BODY, Patch, parse_no_query,
};
use licensing_core::api::{CustomerDeleted, CustomerPage};
use licensing_core::model::Customer;
use licensing_core::store::{CustomerStore, Entity, StoreError};
use licensing_core::{ApiError, CustomerId};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::state::{AppState, DevRequest};

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let create = warp::path!("api" / "v1" / "dev" / "teams" / String / "customers")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(create(state, team, headers, body).await)
            },
        );
    let list = warp::path!("api" / "v1" / "dev" / "teams" / String / "customers")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list(state, team, headers, query).await)
            },
        );
    let get = warp::path!("api" / "v1" / "dev" / "teams" / String / "customers" / String)
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(|team: String, id: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(get(state, team, id, headers, query).await)
        });
    let update = warp::path!("api" / "v1" / "dev" / "teams" / String / "customers" / String)
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap, body| async move {
                respond(update(state, team, id, headers, body).await)
            },
        );
    let delete = warp::path!("api" / "v1" / "dev" / "teams" / String / "customers" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                respond(delete(state, team, id, headers).await)
            },
        );
    create
        .or(list)
        .unify()
        .or(get)
        .unify()
        .or(update)
        .unify()
        .or(delete)
        .unify()
        .boxed()
}

async fn parse_body<S, B>(body: S) -> Result<CustomerInput, ApiError>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    CustomerBody::parse(&read_body(body, MAX_JSON_BODY).await?)
}

/// Checks a newly given chat id against the directory and fills the account's names.
async fn check_chat(
    state: &AppState,
    input: &CustomerInput,
    customer: &mut Customer,
) -> Result<(), ApiError> {
    let Patch::Value(chat_id) = &input.chat_id else {
        return Ok(());
    };
    let directory = state.chat.as_ref().ok_or_else(|| {
        ApiError::bad_field(
            "chatId",
            "cannot be checked: no chat directory is configured on this server (LICENSING_CHAT_API_URL)",
        )
    })?;
    let user = directory.lookup(chat_id).await?;
    if let Some(account) = customer.chat_account.as_mut() {
        account.username = user.username;
        account.avatar = user.avatar;
        account.global_name = user.global_name;
    }
    Ok(())
}

async fn create<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let input = parse_body(body).await?;
    let mut customer = input.into_new(dev.team, dev.key.id.into(), dev.now)?;
    check_chat(&state, &input, &mut customer).await?;
    state
        .store
        .create_customer(&customer)
        .await
        .map_err(store_error)?;
    Ok(success(201, customer, "Customer created"))
}

async fn list(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let query = CustomerListQuery::parse(&query)?;
    let page = state
        .store
        .list_customers(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        CustomerPage {
            customers: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Customers retrieved",
    ))
}

async fn find(
    state: &AppState,
    team: &str,
    id: &str,
    headers: &HeaderMap,
) -> Result<(DevRequest, Customer), ApiError> {
    let dev = state.dev(team, headers).await?;
    let customer = lookup(state, &dev, id).await?;
    Ok((dev, customer))
}

/// The customer `id` of the request's team (404 when there is none).
async fn lookup(state: &AppState, dev: &DevRequest, id: &str) -> Result<Customer, ApiError> {
    let id: CustomerId = path_param("customerId", id)?;
    let customer = state
        .store
        .get_customer(dev.team, id)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Customer))?;
    Ok(customer)
}

async fn get(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let (_, customer) = find(&state, &team, &id, &headers).await?;
    parse_no_query(&query)?;
    Ok(success(200, customer, "Customer retrieved"))
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
    // The body is read and checked (400, 413) before the customer is looked up (404).
    let dev = state.dev(&team, &headers).await?;
    let input = parse_body(body).await?;
    let existing = lookup(&state, &dev, &id).await?;
    let mut updated = input.apply_to(&existing, dev.now)?;
    check_chat(&state, &input, &mut updated).await?;
    state
        .store
        .update_customer(&updated)
        .await
        .map_err(store_error)?;
    Ok(success(200, updated, "Customer updated"))
}

async fn delete(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let (dev, customer) = find(&state, &team, &id, &headers).await?;
    state
        .store
        .delete_customer(dev.team, customer.id)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        CustomerDeleted {
            customer_id: customer.id,
            deleted: true,
        },
        "Customer deleted",
    ))
}
