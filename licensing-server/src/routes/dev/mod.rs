//! The developer API: `/api/v1/dev/teams/{teamId}/…`, bearer API keys.
//!
//! Each route is one typed operation of [`crate::app`]: [`operations`] lists them (method,
//! path, operation), and each operation's [`Endpoint`] says how a request asks for it (its
//! path's ids, query and body) and how its answer looks. One gate is the only way in; for each
//! request, in protocol.md's order (section 4), it:
//! 1. finds the route (404 for an unknown path, 405 for a known path with another method);
//! 2. parses the team id and every id of the path (400 naming the parameter);
//! 3. authenticates the API key once (401, 403 for another team's key, 429 past the failure
//!    limits), and checks the operation's scope (403, with
//!    `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`);
//! 4. counts the key's rate limit on the record it already holds (429);
//! 5. refuses a query string on operations that take none (400);
//! 6. for a write with an `Idempotency-Key`, answers again what the same request answered
//!    before, or refuses a key in use (409) or used with another request (422)
//!    ([`crate::http::idempotency`]);
//!
//! then reads the operation from the request (its body: 400, 413) and performs it for the
//! key, which looks records up (404) and changes them.

/// The endpoint of an operation made of its path's ids alone (a read, a delete, an action
/// without a body), answering its output with `status` and `details`, as it is or as the
/// closure-like `|output| …` shapes it:
/// `by_ids!(GetProduct(id: ProductId) => 200, "Product retrieved");`,
/// `by_ids!(ListWebhooks => 200 |webhooks| WebhookList { webhooks }, "Webhooks retrieved");`.
macro_rules! by_ids {
    ($op:ident => $status:literal, $details:expr) => {
        by_ids!($op => $status |output| output, $details);
    };
    ($op:ident($($id:ident: $ty:ty),+) => $status:literal, $details:expr) => {
        by_ids!($op($($id: $ty),+) => $status |output| output, $details);
    };
    ($op:ident => $status:literal |$out:ident| $answer:expr, $details:expr) => {
        impl $crate::routes::dev::Endpoint for $op {
            type Ids = ();
            const QUERY: $crate::routes::dev::Query = $crate::routes::dev::Query::None;

            async fn from_request(
                _: &$crate::routes::dev::Dev,
                (): (),
                _: $crate::routes::dev::Input,
            ) -> Result<Self, licensing_core::ApiError> {
                Ok(Self)
            }

            fn answer($out: Self::Output) -> $crate::http::Response {
                $crate::http::success($status, $answer, $details)
            }
        }
    };
    ($op:ident($($id:ident: $ty:ty),+) => $status:literal |$out:ident| $answer:expr, $details:expr) => {
        impl $crate::routes::dev::Endpoint for $op {
            type Ids = ($($ty,)+);
            const QUERY: $crate::routes::dev::Query = $crate::routes::dev::Query::None;

            async fn from_request(
                _: &$crate::routes::dev::Dev,
                ($($id,)+): Self::Ids,
                _: $crate::routes::dev::Input,
            ) -> Result<Self, licensing_core::ApiError> {
                Ok(Self($($id),+))
            }

            fn answer($out: Self::Output) -> $crate::http::Response {
                $crate::http::success($status, $answer, $details)
            }
        }
    };
}

/// The endpoint of an action made of its path's ids alone that takes no body: an empty body
/// or `{}` passes, anything else is 400 (`by_ids!` ignores a body; an action refuses one it
/// would not read): `no_body!(RotateSigningKey() => 201, "Signing key rotated");`.
macro_rules! no_body {
    ($op:ident() => $status:literal, $details:expr) => {
        no_body!(@ $op() => Self, $status, $details);
    };
    ($op:ident($($id:ident: $ty:ty),+) => $status:literal, $details:expr) => {
        no_body!(@ $op($($id: $ty),+) => Self($($id),+), $status, $details);
    };
    (@ $op:ident($($id:ident: $ty:ty),*) => $made:expr, $status:literal, $details:expr) => {
        impl $crate::routes::dev::Endpoint for $op {
            type Ids = ($($ty,)*);
            const QUERY: $crate::routes::dev::Query = $crate::routes::dev::Query::None;

            async fn from_request(
                _: &$crate::routes::dev::Dev,
                ($($id,)*): Self::Ids,
                input: $crate::routes::dev::Input,
            ) -> Result<Self, licensing_core::ApiError> {
                licensing_core::api::requests::parse_empty_body(&input.json().await?)?;
                Ok($made)
            }

            fn answer(output: Self::Output) -> $crate::http::Response {
                $crate::http::success($status, output, $details)
            }
        }
    };
}

/// The endpoint of an operation made of its path's ids and its JSON body, parsed (400, 413)
/// before the operation looks anything up, answering its output as it is:
/// `with_body!(UpdateProduct(id: ProductId) => 200, "Product updated");`.
macro_rules! with_body {
    ($op:ident($($id:ident: $ty:ty),*) => $status:literal, $details:expr) => {
        impl $crate::routes::dev::Endpoint for $op {
            type Ids = ($($ty,)*);
            const QUERY: $crate::routes::dev::Query = $crate::routes::dev::Query::None;

            async fn from_request(
                _: &$crate::routes::dev::Dev,
                ($($id,)*): Self::Ids,
                input: $crate::routes::dev::Input,
            ) -> Result<Self, licensing_core::ApiError> {
                let body = licensing_core::api::requests::parse_json(&input.json().await?)?;
                Ok(Self($($id,)* body))
            }

            fn answer(output: Self::Output) -> $crate::http::Response {
                $crate::http::success($status, output, $details)
            }
        }
    };
}

/// The endpoint of a list: its operation made of its path's ids and its query, parsed by
/// `parse`; its page answered as `$page { $items, totalResults, hasNextPage }`:
/// `listed!(ListProducts() query ProductListQuery::parse => ProductPage { products }, "Products retrieved");`.
macro_rules! listed {
    ($op:ident($($id:ident: $ty:ty),*) query $parse:path => $page:ident { $items:ident }, $details:expr) => {
        impl $crate::routes::dev::Endpoint for $op {
            type Ids = ($($ty,)*);
            const QUERY: $crate::routes::dev::Query = $crate::routes::dev::Query::Parsed;

            async fn from_request(
                _: &$crate::routes::dev::Dev,
                ($($id,)*): Self::Ids,
                input: $crate::routes::dev::Input,
            ) -> Result<Self, licensing_core::ApiError> {
                Ok(Self($($id,)* $parse(&input.query)?))
            }

            fn answer(page: Self::Output) -> $crate::http::Response {
                let page = $page {
                    $items: page.items,
                    total_results: page.total,
                    has_next_page: page.has_next_page,
                };
                $crate::http::success(200, page, $details)
            }
        }
    };
}

mod access;
mod customers;
mod devices;
mod entitlements;
mod licenses;
mod products;
mod releases;
mod team;
mod webhooks;

use std::future::Future;
use std::sync::Arc;

use licensing_core::api::requests::parse_no_query;
use licensing_core::model::{ApiKeyRecord, Scope};
use licensing_core::{ApiError, TeamId, Timestamp};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, Method};

use crate::app;
use crate::http::{Incoming, Response, auth, idempotency, path_param, respond};
use crate::routes::table::find;
pub(crate) use crate::routes::table::{Input, PathIds, Query};
use licensing_core::idempotency::IdempotencyOwner;

/// A route of the developer API.
pub(crate) type Route = crate::routes::table::Route<Dev>;

impl Route {
    /// The route's full path template.
    pub(crate) fn template(&self) -> String {
        format!("/api/v1/dev/teams/{{teamId}}/{}", self.path)
    }
}

/// An authenticated developer request: the operations' context.
pub(crate) use crate::app::{Caller, Cx as Dev};
use crate::state::{AppState, Principal};

/// A typed operation as the developer API reaches it: the operation a request asks for (from
/// its path's ids, query and body), and the answer to what it did.
pub(crate) trait Endpoint: crate::app::Operation + 'static {
    /// The ids of its path, in order.
    type Ids: PathIds;
    /// Whether it reads a query string.
    const QUERY: Query;
    /// The operation the request asks for; its body is read and parsed here (400, 413), before
    /// the operation looks anything up. `cx` is there for a body that goes somewhere as it
    /// arrives (an upload streams into the file store).
    fn from_request(
        cx: &Dev,
        ids: Self::Ids,
        input: Input,
    ) -> impl Future<Output = Result<Self, ApiError>> + Send;
    /// The answer.
    fn answer(output: Self::Output) -> Response;
}

/// The table's entry of endpoint `E` at `method path`.
fn route<E: Endpoint>(method: Method, path: &'static str) -> Route {
    Route::new(
        method,
        path,
        E::SCOPE,
        E::QUERY,
        |cx: Dev, ids: E::Ids, input: Input| async move {
            let op = E::from_request(&cx, ids, input).await?;
            let output = cx.perform(op).await?;
            Ok(E::answer(output))
        },
    )
}

/// Every route of the developer API: method, path and the operation it performs.
pub(crate) fn operations() -> Vec<Route> {
    let (get, post, put, patch, delete) = (
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    );
    vec![
        route::<app::licenses::CreateLicense>(post.clone(), "licenses"),
        route::<app::licenses::ListLicenses>(get.clone(), "licenses"),
        route::<app::licenses::GetLicenseByKey>(get.clone(), "licenses/{licenseKey}"),
        route::<app::licenses::DeleteLicenseByKey>(delete.clone(), "licenses/{licenseKey}"),
        route::<app::licenses::GetLicense>(get.clone(), "licenses/id/{licenseId}"),
        route::<app::licenses::UpdateLicense>(put.clone(), "licenses/id/{licenseId}"),
        route::<app::licenses::DeleteLicense>(delete.clone(), "licenses/id/{licenseId}"),
        route::<app::licenses::SuspendLicense>(post.clone(), "licenses/id/{licenseId}/suspend"),
        route::<app::licenses::UnsuspendLicense>(post.clone(), "licenses/id/{licenseId}/unsuspend"),
        route::<app::licenses::EmailLicense>(post.clone(), "licenses/id/{licenseId}/email"),
        route::<app::licenses::ExtendLicense>(post.clone(), "licenses/id/{licenseId}/extend"),
        route::<app::license_files::IssueLicenseFile>(post.clone(), "licenses/id/{licenseId}/file"),
        route::<app::devices::ListHwids>(get.clone(), "licenses/id/{licenseId}/hwid"),
        route::<app::devices::SetHwidForgotten>(
            patch.clone(),
            "licenses/id/{licenseId}/hwid/{hwidId}",
        ),
        route::<app::devices::ListIps>(get.clone(), "licenses/id/{licenseId}/ip-address"),
        route::<app::devices::SetIpForgotten>(patch, "licenses/id/{licenseId}/ip-address/{ipId}"),
        route::<app::floating::ListSessions>(get.clone(), "licenses/id/{licenseId}/sessions"),
        route::<app::devices::ListRequests>(get.clone(), "licenses/id/{licenseId}/requests"),
        route::<app::floating::RevokeSession>(
            delete.clone(),
            "licenses/id/{licenseId}/sessions/{sessionId}",
        ),
        route::<app::customers::CreateCustomer>(post.clone(), "customers"),
        route::<app::customers::ListCustomers>(get.clone(), "customers"),
        route::<app::customers::GetCustomer>(get.clone(), "customers/{customerId}"),
        route::<app::customers::UpdateCustomer>(put.clone(), "customers/{customerId}"),
        route::<app::customers::DeleteCustomer>(delete.clone(), "customers/{customerId}"),
        route::<app::entitlements::CreateEntitlement>(post.clone(), "entitlements"),
        route::<app::entitlements::ListEntitlements>(get.clone(), "entitlements"),
        route::<app::entitlements::GetEntitlement>(get.clone(), "entitlements/{entitlementId}"),
        route::<app::entitlements::UpdateEntitlement>(put.clone(), "entitlements/{entitlementId}"),
        route::<app::entitlements::DeleteEntitlement>(
            delete.clone(),
            "entitlements/{entitlementId}",
        ),
        route::<app::products::CreateProduct>(post.clone(), "products"),
        route::<app::products::ListProducts>(get.clone(), "products"),
        route::<app::products::GetProduct>(get.clone(), "products/{productId}"),
        route::<app::products::UpdateProduct>(put.clone(), "products/{productId}"),
        route::<app::products::DeleteProduct>(delete.clone(), "products/{productId}"),
        route::<app::products::CreateBranch>(post.clone(), "products/{productId}/branches"),
        route::<app::products::ListBranches>(get.clone(), "products/{productId}/branches"),
        route::<app::products::DeleteBranch>(
            delete.clone(),
            "products/{productId}/branches/{branchId}",
        ),
        route::<app::releases::CreateRelease>(post.clone(), "releases"),
        route::<app::releases::ListReleases>(get.clone(), "releases"),
        route::<app::releases::GetRelease>(get.clone(), "releases/{releaseId}"),
        route::<app::releases::UpdateRelease>(put.clone(), "releases/{releaseId}"),
        route::<app::releases::DeleteRelease>(delete.clone(), "releases/{releaseId}"),
        route::<app::team::GetStatistics>(get.clone(), "statistics"),
        route::<app::team::GetSettings>(get.clone(), "settings"),
        route::<app::team::UpdateSettings>(put, "settings"),
        route::<app::team::GetPublicKeys>(get.clone(), "public-key"),
        route::<app::team::CreateSigningKey>(post.clone(), "signing-keys"),
        route::<app::team::RotateSigningKey>(post.clone(), "signing-keys/rotate"),
        route::<app::team::ActivateSigningKey>(post.clone(), "signing-keys/{kid}/activate"),
        route::<app::team::RetireSigningKey>(delete.clone(), "signing-keys/{kid}"),
        route::<app::access::CreateBlacklistEntry>(post.clone(), "blacklist"),
        route::<app::access::ListBlacklist>(get.clone(), "blacklist"),
        route::<app::access::DeleteBlacklistEntry>(delete.clone(), "blacklist/{blacklistId}"),
        route::<app::access::CreateApiKey>(post.clone(), "api-keys"),
        route::<app::access::ListApiKeys>(get.clone(), "api-keys"),
        route::<app::team::ListAudit>(get.clone(), "audit-log"),
        route::<app::webhooks::CreateWebhook>(post.clone(), "webhooks"),
        route::<app::webhooks::ListWebhooks>(get.clone(), "webhooks"),
        route::<app::webhooks::GetWebhook>(get.clone(), "webhooks/{webhookId}"),
        route::<app::webhooks::UpdateWebhook>(Method::PATCH, "webhooks/{webhookId}"),
        route::<app::webhooks::DeleteWebhook>(delete.clone(), "webhooks/{webhookId}"),
        route::<app::webhooks::RotateWebhookSecret>(
            post.clone(),
            "webhooks/{webhookId}/rotate-secret",
        ),
        route::<app::webhooks::SendTestEvent>(post.clone(), "webhooks/{webhookId}/test"),
        route::<app::webhooks::ListDeliveries>(get.clone(), "webhooks/{webhookId}/deliveries"),
        route::<app::webhooks::GetDelivery>(get, "webhooks/{webhookId}/deliveries/{deliveryId}"),
        route::<app::webhooks::Redeliver>(
            post.clone(),
            "webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
        ),
        route::<app::access::RevokeApiKey>(delete, "api-keys/{apiKeyId}"),
    ]
}

/// Every developer route, behind the gate.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let table: Arc<[Route]> = operations().into();
    warp::path!("api" / "v1" / "dev" / "teams" / ..)
        .and(crate::http::incoming(state))
        .then(move |request: crate::http::Incoming| {
            let table = table.clone();
            async move { gate(&table, request).await }
        })
        .boxed()
}

/// The gate: steps 1 to 5 of the module documentation, then the operation.
async fn gate(table: &[Route], request: Incoming) -> Response {
    let (state, client, input) = (request.state, request.client, request.input);
    let mut segments = request.path.as_str().split('/');
    let team = segments.next().unwrap_or_default();
    let segments: Vec<&str> = segments.collect();
    // 1. The operation.
    let (operation, ids) = match find(table, &segments, &request.method) {
        Ok(found) => found,
        Err(e) => return crate::http::error(&e),
    };
    // 2. The ids.
    let team = match path_param::<TeamId>("teamId", team) {
        Ok(team) => team,
        Err(e) => return crate::http::error(&e),
    };
    let bound = match operation.bind(&ids) {
        Ok(bound) => bound,
        Err(e) => return crate::http::error(&e),
    };
    // 3. Credentials and scope.
    let now = Timestamp::now();
    let key = match auth::api_key(&state, client, &input.headers, team, now).await {
        Ok(key) => key,
        Err(refused) => return refused.into_response(),
    };
    if let Some(scope) = operation.scope
        && !key.allows(scope)
    {
        return missing_scope(&key, scope);
    }
    // 4. The rate limit.
    let rate = match &state.limits.dev {
        Some(limiter) => Some(limiter.check(&Principal::ApiKey(key.id)).await),
        None => None,
    };
    if let Some(status) = rate.filter(|s| !s.allowed()) {
        return crate::http::rate_limited(&status, "requests", " per API key");
    }
    state.key_uses.record(team, key.id, now);
    // 5. The query of operations that take none.
    let mut response = if operation.query == Query::None
        && let Err(e) = parse_no_query(&input.query)
    {
        crate::http::error(&e)
    } else {
        let dev = Dev {
            state: state.clone(),
            team,
            caller: Caller::api_key(&key),
            now,
            client,
        };
        // 6. The idempotency key of a write.
        let path = format!("/api/v1/dev/teams/{}", request.path.as_str());
        let owner = IdempotencyOwner::api_key(team, key.id);
        let write = move |input: Input| async move { respond(bound(dev, input).await) };
        idempotency::guard(&state, owner, &request.method, &path, input, write).await
    };
    if let Some(status) = rate {
        status.apply(response.headers_mut());
    }
    response
}

/// 403 for a key without the operation's scope, naming it in the details and, as RFC 6750
/// describes, in `WWW-Authenticate`.
fn missing_scope(key: &ApiKeyRecord, scope: Scope) -> Response {
    let mut response = crate::http::error(&ApiError::forbidden(format!(
        "This API key lacks the scope {scope} (it has: {})",
        key.scopes.names().join(", ")
    )));
    if let Ok(value) = HeaderValue::from_str(&format!(
        "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
    )) {
        response
            .headers_mut()
            .insert(warp::http::header::WWW_AUTHENTICATE, value);
    }
    response
}
