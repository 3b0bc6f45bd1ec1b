//! Calls into the developer API's operations, as the signed-in staff member.

use bytes::Bytes;
use http_body_util::BodyExt as _;
use licensing_core::ApiError;
use licensing_core::api::Envelope;
use licensing_core::api::requests::ProductListQuery;
use licensing_core::error::FieldError;
use licensing_core::model::Product;
use licensing_core::store::{Page, StoreError};
use serde::de::DeserializeOwned;
use warp::http::{HeaderMap, HeaderValue, Method, header};

use super::{Ctx, Staff};
use crate::app::products::ListProducts;
use crate::app::{Cx, Operation};
use crate::routes::dev::{self, Body, Caller, Dev, Input};

/// Why an operation did not succeed, as the API answered it.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The API's `result.details`.
    pub(crate) details: String,
    /// The field problems of a validation error.
    pub(crate) fields: Vec<FieldError>,
}

impl Failure {
    /// A failure with `status` and `details`.
    pub(crate) fn new(status: u16, details: impl Into<String>) -> Self {
        Self {
            status,
            details: details.into(),
            fields: Vec::new(),
        }
    }

    /// The heading of its page.
    pub(crate) fn title(&self) -> &'static str {
        match self.status {
            400 => "That did not work",
            401 | 403 => "Not allowed",
            404 => "Not found",
            409 => "Conflict",
            413 => "Too large",
            429 => "Too many attempts",
            _ => "Something went wrong",
        }
    }

    /// One sentence for the top of a form.
    pub(crate) fn summary(&self) -> String {
        if self.fields.is_empty() {
            self.details.clone()
        } else {
            "Nothing was saved: please correct the fields below.".to_owned()
        }
    }

    /// The message for `field`, if it has a problem.
    pub(crate) fn field(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|e| e.field == field)
            .map(|e| e.message.as_str())
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        crate::http::log_cause(&e);
        let details = if e.status() >= 500 {
            "The server could not do this just now. Please try again; if it keeps failing, the operator will find the cause in the server's log.".to_owned()
        } else {
            e.details().to_owned()
        };
        Self {
            status: e.status(),
            details,
            fields: e.field_errors().to_vec(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        crate::http::store_error(e).into()
    }
}

/// Performs `op` as the signed-in staff member, for their team.
pub(crate) async fn perform<O: Operation>(
    ctx: &Ctx,
    staff: &Staff,
    op: O,
) -> Result<O::Output, Failure> {
    let cx = Cx {
        state: ctx.state.clone(),
        team: staff.user.team_id,
        caller: Caller::staff(&staff.user),
        now: ctx.now,
        client: ctx.client,
    };
    cx.perform(op).await.map_err(Failure::from)
}

/// The team's first hundred products in the list's default order: the names, filters and
/// choices of the dashboard's pages.
pub(crate) async fn all_products(ctx: &Ctx, staff: &Staff) -> Result<Page<Product>, Failure> {
    let mut query = ProductListQuery::default();
    query.paging.page_size = 100;
    perform(ctx, staff, ListProducts(query)).await
}

/// Runs the developer operation `method path` (the path after `teams/{teamId}/`) for the
/// staff member's team, with `query` and a JSON `body`, and decodes its `data`.
pub(crate) async fn call<T: DeserializeOwned>(
    ctx: &Ctx,
    staff: &Staff,
    method: Method,
    path: &str,
    query: &str,
    body: Option<&serde_json::Value>,
) -> Result<T, Failure> {
    let bytes = match body {
        Some(value) => serde_json::to_vec(value)
            .map_err(|e| Failure::from(crate::http::internal("dashboard request encoding", e)))?,
        None => Vec::new(),
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    call_raw(ctx, staff, method, path, query, headers, bytes.into()).await
}

/// [`call`] with the request's own headers and body bytes.
pub(crate) async fn call_raw<T: DeserializeOwned>(
    ctx: &Ctx,
    staff: &Staff,
    method: Method,
    path: &str,
    query: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Result<T, Failure> {
    let body: Body = Box::pin(futures_util::stream::once(async move {
        Ok::<_, warp::Error>(body)
    }));
    call_stream(ctx, staff, method, path, query, headers, body).await
}

/// [`call_raw`] with a body that streams.
pub(crate) async fn call_stream<T: DeserializeOwned>(
    ctx: &Ctx,
    staff: &Staff,
    method: Method,
    path: &str,
    query: &str,
    headers: HeaderMap,
    body: Body,
) -> Result<T, Failure> {
    let input = Input {
        query: query.to_owned(),
        headers,
        body,
    };
    let dev = Dev {
        state: ctx.state.clone(),
        team: staff.user.team_id,
        caller: Caller::staff(&staff.user),
        now: ctx.now,
        client: ctx.client,
    };
    let response = dev::call(&ctx.ops, dev, &method, path, input).await;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| Failure::from(crate::http::internal("dashboard response", e)))?;
    if (200..300).contains(&status) {
        let envelope: Envelope<T> = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::from(crate::http::internal("dashboard response decoding", e)))?;
        return Ok(envelope.data);
    }
    let envelope: Envelope<Option<licensing_core::api::ErrorData>> = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::from(crate::http::internal("dashboard error decoding", e)))?;
    if status >= 500 {
        return Err(Failure::from(ApiError::internal()));
    }
    Err(Failure {
        status,
        details: envelope.result.details.into_owned(),
        fields: envelope.data.map(|d| d.errors).unwrap_or_default(),
    })
}
