//! The client API (protocol.md section 3): `verification/verify`, `verification/heartbeat` and
//! `verification/classloader` under `/api/v1/client/teams/{teamId}`, without authentication.
//!
//! Each handler walks the protocol's order of checks; the first failure answers. From the moment
//! the team is known, every answer is signed (`X-Signature`) and counted in the statistics.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use licensing_core::api::requests::{ClientBody, MAX_JSON_BODY};
use licensing_core::api::{Envelope, ErrorData, HeartbeatData, ResultCode, VerifyData};
use licensing_core::crypto::{SIGNATURE_HEADER, SessionKey};
use licensing_core::model::{Branch, License, Product, Release, RequestType};
use licensing_core::store::{
    Activity, ActivityStore, CustomerStore, LicenseStore, ProductStore, ReleaseStore,
};
use licensing_core::validate::Country;
use licensing_core::verify::{self, Catalog, ClientRequest, Context, RequestKind};
use licensing_core::{ApiError, ProductId, TeamId, Timestamp};
use serde::Serialize;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::http::{Response, path_param, raw_query, read_body, store_error};
use crate::routes::with_state;
use crate::services::contexts::TeamContext;
use crate::services::ratelimit::{RateStatus, ip_key};
use crate::services::replay::Refused;
use crate::services::usage::Counted;
use crate::state::AppState;

mod download;

/// The client routes.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let verify =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "verify")
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(warp::addr::remote())
            .and(warp::header::headers_cloned())
            .and(warp::body::stream())
            .then(
                |team: String, state: AppState, peer, headers: HeaderMap, body| async move {
                    json_endpoint(state, RequestKind::Verify, team, peer, headers, body).await
                },
            );
    let heartbeat =
        warp::path!("api" / "v1" / "client" / "teams" / String / "verification" / "heartbeat")
            .and(warp::post())
            .and(with_state(state.clone()))
            .and(warp::addr::remote())
            .and(warp::header::headers_cloned())
            .and(warp::body::stream())
            .then(
                |team: String, state: AppState, peer, headers: HeaderMap, body| async move {
                    json_endpoint(state, RequestKind::Heartbeat, team, peer, headers, body).await
                },
            );
    let classloader = warp::path!(
        "api" / "v1" / "client" / "teams" / String / "verification" / "classloader"
    )
    .and(warp::get())
    .and(with_state(state))
    .and(warp::addr::remote())
    .and(warp::header::headers_cloned())
    .and(raw_query())
    .then(
        |team: String, state: AppState, peer, headers: HeaderMap, query: String| async move {
            download::classloader(state, team, peer, headers, query).await
        },
    );
    verify.or(heartbeat).unify().or(classloader).unify().boxed()
}

/// The client's address: the socket's peer, or the first `X-Forwarded-For` entry when the peer
/// is a trusted proxy (and the entry is an address).
pub(crate) fn client_ip(state: &AppState, peer: Option<SocketAddr>, headers: &HeaderMap) -> IpAddr {
    let peer = peer
        .map(|p| p.ip().to_canonical())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    if !state.trusted_proxies.iter().any(|net| net.contains(&peer)) {
        return peer;
    }
    headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .and_then(|first| first.trim().parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
        .unwrap_or(peer)
}

/// What an answer needs besides its outcome: the team once known (to sign and count), the rate
/// limit status, and what the statistics record.
pub(crate) struct Exchange {
    pub(crate) endpoint: &'static str,
    pub(crate) kind: RequestType,
    pub(crate) context: Option<Arc<TeamContext>>,
    pub(crate) rate: Option<RateStatus>,
    pub(crate) country: Option<Country>,
    pub(crate) product: Option<ProductId>,
}

impl Exchange {
    fn new(kind: RequestKind) -> Self {
        let (endpoint, kind) = match kind {
            RequestKind::Verify => ("verify", RequestType::Verify),
            RequestKind::Heartbeat => ("heartbeat", RequestType::Heartbeat),
            RequestKind::Classloader => ("classloader", RequestType::Download),
        };
        Self {
            endpoint,
            kind,
            context: None,
            rate: None,
            country: None,
            product: None,
        }
    }

    /// Counts the request (once the team is known) and the outcome metric.
    pub(crate) fn count(&self, state: &AppState, code: ResultCode) {
        state.metrics.client_outcome(self.endpoint, code.as_str());
        if let Some(context) = &self.context {
            state.usage.count(&Counted {
                team: context.team.id,
                kind: self.kind,
                success: code.is_success(),
                country: self.country.map(|c| c.alpha2),
                product: self.product,
                at: Timestamp::now(),
            });
        }
    }

    /// A JSON answer: the envelope, `X-Signature` over `request` and the body once the team is
    /// known, and the rate-limit headers.
    pub(crate) fn json_answer<T: Serialize>(
        &self,
        status: u16,
        envelope: &Envelope<T>,
        request: &[u8],
    ) -> Response {
        let body = match serde_json::to_vec(envelope) {
            Ok(body) => body,
            Err(e) => {
                tracing::error!(error = %e, "response serialization failed");
                return self.error_answer(&ApiError::internal(), request);
            }
        };
        let signature = self
            .context
            .as_ref()
            .map(|c| c.keys.sign_response(request, &body));
        let mut response = Response::new(body.into());
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(signature) = signature
            && let Ok(value) = HeaderValue::from_str(&signature)
        {
            headers.insert(SIGNATURE_HEADER, value);
        }
        if let Some(rate) = &self.rate {
            rate.apply(headers);
        }
        response
    }

    /// An error answer.
    pub(crate) fn error_answer(&self, error: &ApiError, request: &[u8]) -> Response {
        let envelope = Envelope::<Option<ErrorData>>::error(error, Timestamp::now());
        self.json_answer(error.status(), &envelope, request)
    }
}

/// Verify or heartbeat.
async fn json_endpoint<S, B>(
    state: AppState,
    kind: RequestKind,
    team: String,
    peer: Option<SocketAddr>,
    headers: HeaderMap,
    body: S,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut exchange = Exchange::new(kind);
    let ip = client_ip(&state, peer, &headers);
    let mut request = Bytes::new();
    let outcome =
        check_and_answer(&state, kind, &team, ip, body, &mut request, &mut exchange).await;
    match outcome {
        Ok(response) => {
            exchange.count(&state, ResultCode::Valid);
            response
        }
        Err(error) => {
            if exchange.rate.is_none() {
                // Answered before the limit was checked: report the client's standing anyway.
                exchange.rate = limiter(&state, kind).map(|l| l.peek(&ip_key(ip)));
            }
            exchange.count(&state, error.code());
            exchange.error_answer(&error, &request)
        }
    }
}

fn limiter(
    state: &AppState,
    kind: RequestKind,
) -> Option<&crate::services::ratelimit::RateLimiter<u128>> {
    match kind {
        RequestKind::Verify => state.limits.verify.as_ref(),
        RequestKind::Heartbeat => state.limits.heartbeat.as_ref(),
        RequestKind::Classloader => state.limits.classloader_ip.as_ref(),
    }
}

/// The 429 of a refused rate-limit check.
pub(crate) fn rate_limited(status: &RateStatus) -> ApiError {
    ApiError::new(
        ResultCode::RateLimit,
        format!(
            "Too many requests: at most {} a minute; retry in {} s",
            status.limit,
            status.retry_after_secs.unwrap_or(1)
        ),
    )
}

/// Steps 1 to 8 for verify and heartbeat, and the success answer.
#[allow(clippy::too_many_arguments)]
async fn check_and_answer<S, B>(
    state: &AppState,
    kind: RequestKind,
    team: &str,
    ip: IpAddr,
    body: S,
    request: &mut Bytes,
    exchange: &mut Exchange,
) -> Result<Response, ApiError>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    // 1. Team id, body, rate limit, team.
    let team_id = path_param::<TeamId>("teamId", team)?;
    *request = read_body(body, MAX_JSON_BODY).await?;
    let input = ClientBody::parse(kind, request)?;
    if let Some(limiter) = limiter(state, kind) {
        let status = limiter.check(&ip_key(ip));
        exchange.rate = Some(status);
        if !status.allowed() {
            return Err(rate_limited(&status));
        }
    }
    let context = team_context(state, team_id).await?;
    exchange.context = Some(context.clone());
    let country = state.geo.country(ip);
    exchange.country = country;

    // 2 to 6.
    let license = state
        .store
        .get_license_by_key(team_id, &input.license_key)
        .await
        .map_err(store_error)?;
    let named_product = named_product(license.as_ref(), input.product_id);
    exchange.product = named_product;
    let catalog = match named_product {
        Some(product) => Some(
            state
                .store
                .catalog(team_id, product)
                .await
                .map_err(store_error)?,
        ),
        None => None,
    };
    let ctx = Context {
        settings: &context.team.settings,
        blacklist: &context.blacklist,
        license: license.as_ref(),
        catalog: catalog
            .as_ref()
            .map(|(branches, releases)| Catalog { branches, releases }),
    };
    let req = ClientRequest {
        kind,
        hardware_id: input.hardware_id.as_ref(),
        customer_id: input.customer_id,
        product_id: input.product_id,
        version: input.version.as_ref(),
        branch: input.branch.as_ref(),
        ip,
        country,
    };
    let now = Timestamp::now();
    let (license, _release) = verify::precheck(&ctx, &req, now).map_err(|denial| {
        if let Some(hit) = denial.blacklist_hit {
            state.usage.hit(team_id, hit);
        }
        ApiError::from(denial)
    })?;

    // 7 and 8, atomically in the store.
    let recorded = record(
        state,
        team_id,
        license,
        &context,
        &input.hardware_id,
        ip,
        country,
        now,
    )
    .await?;

    // The answer.
    let challenge_response = match &input.challenge {
        Some(challenge) => {
            state.metrics.rsa_operation("sign_challenge");
            Some(
                context
                    .keys
                    .sign_challenge(challenge.as_str())
                    .map_err(|e| crate::http::internal("signing the challenge failed", e))?,
            )
        }
        None => None,
    };
    let response = match kind {
        RequestKind::Heartbeat => exchange.json_answer(
            200,
            &Envelope::valid(
                HeartbeatData::build(&recorded),
                "License heartbeat successful",
                challenge_response,
                Timestamp::now(),
            ),
            request,
        ),
        _ => {
            let data = verify_data(
                state,
                team_id,
                &recorded,
                catalog.as_ref(),
                named_product,
                input.branch.as_ref().map(|b| b.as_str()),
            )
            .await?;
            exchange.json_answer(
                200,
                &Envelope::valid(
                    data,
                    "License is valid",
                    challenge_response,
                    Timestamp::now(),
                ),
                request,
            )
        }
    };
    Ok(response)
}

/// The team's context, or 404 `TEAM_NOT_FOUND`.
pub(crate) async fn team_context(
    state: &AppState,
    team: TeamId,
) -> Result<Arc<TeamContext>, ApiError> {
    state
        .contexts
        .get(&state.store, team)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ResultCode::TeamNotFound, "Team not found"))
}

/// The product the request names, when the license grants it (only then do releases matter).
pub(crate) fn named_product(
    license: Option<&License>,
    product: Option<ProductId>,
) -> Option<ProductId> {
    let product = product?;
    license
        .filter(|l| l.product_ids.contains(&product))
        .map(|_| product)
}

/// Steps 7 and 8: the store's atomic unit. Returns the license after it (its clock started).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn record(
    state: &AppState,
    team: TeamId,
    license: &License,
    context: &TeamContext,
    hardware_id: &Option<licensing_core::validate::HardwareId>,
    ip: IpAddr,
    country: Option<Country>,
    now: Timestamp,
) -> Result<License, ApiError> {
    let activity = Activity {
        hardware_id: hardware_id.clone(),
        ip,
        country,
    };
    let recorded = state
        .store
        .record_activity(team, license.id, &context.team.settings, &activity, now)
        .await
        .map_err(store_error)?
        .map_err(ApiError::from)?;
    Ok(recorded.license)
}

/// `data` of a successful verify: the license, its customers, and its products each with the
/// latest published release of the requested branch.
async fn verify_data(
    state: &AppState,
    team: TeamId,
    license: &License,
    named_catalog: Option<&(Vec<Branch>, Vec<Release>)>,
    named_product: Option<ProductId>,
    branch: Option<&str>,
) -> Result<VerifyData, ApiError> {
    let customers = if license.customer_ids.is_empty() {
        Vec::new()
    } else {
        state
            .store
            .get_customers(team, &license.customer_ids)
            .await
            .map_err(store_error)?
    };
    let products: Vec<Product> = if license.product_ids.is_empty() {
        Vec::new()
    } else {
        state
            .store
            .get_products(team, &license.product_ids)
            .await
            .map_err(store_error)?
    };
    let mut catalogs: Vec<(Vec<Branch>, Vec<Release>)> = Vec::with_capacity(products.len());
    for product in &products {
        match (named_product, named_catalog) {
            (Some(named), Some(catalog)) if named == product.id => catalogs.push(catalog.clone()),
            _ => catalogs.push(
                state
                    .store
                    .catalog(team, product.id)
                    .await
                    .map_err(store_error)?,
            ),
        }
    }
    let latest: Vec<Option<&Release>> = catalogs
        .iter()
        .map(|(branches, releases)| {
            let branch_id = match branch {
                None => None,
                Some(name) => match branches.iter().find(|b| b.name.as_str() == name) {
                    Some(b) => Some(b.id),
                    // The product has no such branch: nothing is latest there.
                    None => return None,
                },
            };
            licensing_core::api::latest_published(releases, branch_id)
        })
        .collect();
    let pairs: Vec<(&Product, Option<&Release>)> = products.iter().zip(latest).collect();
    Ok(VerifyData::build(license, &customers, &pairs))
}

/// A session key decrypted and marked used, or the 400 (or, when too many are remembered, 429).
pub(crate) fn session_key(
    state: &AppState,
    context: &TeamContext,
    text: &str,
) -> Result<SessionKey, ApiError> {
    state.metrics.rsa_operation("decrypt_session_key");
    let key = context.keys.decrypt_session_key(text).map_err(|_| {
        ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: send the hex of an RSA-OAEP (SHA-1) encryption of at least 16 random bytes under the team's public key",
        )
    })?;
    match state.session_keys.use_once(&key) {
        Ok(()) => Ok(key),
        Err(Refused::Reused) => Err(ApiError::new(
            ResultCode::InvalidSessionKey,
            "Invalid session key: session key already used; draw a new one for every download",
        )),
        Err(Refused::Full) => Err(ApiError::new(
            ResultCode::RateLimit,
            "Too many downloads in the last 15 minutes: retry later",
        )),
    }
}
