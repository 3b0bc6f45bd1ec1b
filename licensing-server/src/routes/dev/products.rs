//! (ext) Products and their branches.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::requests::{
    BranchBody, MAX_JSON_BODY, ProductBody, ProductListQuery, parse_no_query,
};
use licensing_core::api::{BranchList, Deleted, ProductPage};
use licensing_core::model::{Branch, Product};
use licensing_core::store::{Entity, ProductStore, StoreError};
use licensing_core::{ApiError, BranchId, ProductId};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{
    Handled, Response, path_param, raw_query, read_body, respond, store_error, success,
};
use crate::routes::with_state;
use crate::state::{AppState, DevRequest};
use crate::store::SledStore;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let create = warp::path!("api" / "v1" / "dev" / "teams" / String / "products")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, state: AppState, headers: HeaderMap, body| async move {
                respond(create(state, team, headers, body).await)
            },
        );
    let list = warp::path!("api" / "v1" / "dev" / "teams" / String / "products")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list(state, team, headers, query).await)
            },
        );
    let get = warp::path!("api" / "v1" / "dev" / "teams" / String / "products" / String)
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(|team: String, id: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(get(state, team, id, headers, query).await)
        });
    let update = warp::path!("api" / "v1" / "dev" / "teams" / String / "products" / String)
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap, body| async move {
                respond(update(state, team, id, headers, body).await)
            },
        );
    let delete = warp::path!("api" / "v1" / "dev" / "teams" / String / "products" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                respond(delete(state, team, id, headers).await)
            },
        );
    let create_branch =
        warp::path!("api" / "v1" / "dev" / "teams" / String / "products" / String / "branches")
            .and(warp::post())
            .and(s())
            .and(headers())
            .and(warp::body::stream())
            .then(
                |team: String, id: String, state: AppState, headers: HeaderMap, body| async move {
                    respond(create_branch(state, team, id, headers, body).await)
                },
            );
    let list_branches = warp::path!(
        "api" / "v1" / "dev" / "teams" / String / "products" / String / "branches"
    )
    .and(warp::get())
    .and(s())
    .and(headers())
    .and(raw_query())
    .then(
        |team: String, id: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(list_branches(state, team, id, headers, query).await)
        },
    );
    let delete_branch = warp::path!(
        "api" / "v1" / "dev" / "teams" / String / "products" / String / "branches" / String
    )
    .and(warp::delete())
    .and(s())
    .and(headers())
    .then(
        |team: String, id: String, branch: String, state: AppState, headers: HeaderMap| async move {
            respond(delete_branch(state, team, id, branch, headers).await)
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
        .or(create_branch)
        .unify()
        .or(list_branches)
        .unify()
        .or(delete_branch)
        .unify()
        .boxed()
}

async fn create<S, B>(state: AppState, team: String, headers: HeaderMap, body: S) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let input = ProductBody::parse(&read_body(body, MAX_JSON_BODY).await?, true)?;
    let product = input.into_new(dev.team, dev.key.id.into(), dev.now);
    state
        .store
        .create_product(&product)
        .await
        .map_err(store_error)?;
    Ok(success(201, product, "Product created"))
}

async fn list(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let query = ProductListQuery::parse(&query)?;
    let page = state
        .store
        .list_products(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        ProductPage {
            products: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Products retrieved",
    ))
}

/// The product of the path, in the team of the request.
pub(crate) async fn find(
    store: &SledStore,
    dev: &DevRequest,
    id: &str,
) -> Result<Product, ApiError> {
    let id: ProductId = path_param("productId", id)?;
    Ok(store
        .get_product(dev.team, id)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Product))?)
}

async fn get(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let product = find(&state.store, &dev, &id).await?;
    parse_no_query(&query)?;
    Ok(success(200, product, "Product retrieved"))
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
    let dev = state.dev(&team, &headers).await?;
    let input = ProductBody::parse(&read_body(body, MAX_JSON_BODY).await?, false)?;
    let existing = find(&state.store, &dev, &id).await?;
    let updated = input.apply_to(&existing, dev.now);
    state
        .store
        .update_product(&updated)
        .await
        .map_err(store_error)?;
    Ok(success(200, updated, "Product updated"))
}

async fn delete(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let product = find(&state.store, &dev, &id).await?;
    let releases = state
        .store
        .delete_product(dev.team, product.id)
        .await
        .map_err(store_error)?;
    state.files.remove_release_files(&releases).await;
    Ok(success(
        200,
        Deleted {
            id: *product.id.as_uuid(),
            deleted: true,
        },
        "Product deleted",
    ))
}

async fn create_branch<S, B>(
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
    let dev = state.dev(&team, &headers).await?;
    let name = BranchBody::parse(&read_body(body, MAX_JSON_BODY).await?)?;
    let product = find(&state.store, &dev, &id).await?;
    let branch = Branch {
        id: BranchId::new(),
        name,
        product_id: product.id,
        team_id: dev.team,
        created_at: dev.now,
        updated_at: dev.now,
    };
    state
        .store
        .create_branch(&branch)
        .await
        .map_err(store_error)?;
    Ok(success(201, branch, "Branch created"))
}

async fn list_branches(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let product = find(&state.store, &dev, &id).await?;
    parse_no_query(&query)?;
    let branches = state
        .store
        .list_branches(dev.team, product.id)
        .await
        .map_err(store_error)?;
    Ok(success(200, BranchList { branches }, "Branches retrieved"))
}

async fn delete_branch(
    state: AppState,
    team: String,
    id: String,
    branch: String,
    headers: HeaderMap,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let product = find(&state.store, &dev, &id).await?;
    let branch: BranchId = path_param("branchId", &branch)?;
    let releases = state
        .store
        .delete_branch(dev.team, product.id, branch)
        .await
        .map_err(store_error)?;
    state.files.remove_release_files(&releases).await;
    Ok(success(
        200,
        Deleted {
            id: *branch.as_uuid(),
            deleted: true,
        },
        "Branch deleted",
    ))
}
