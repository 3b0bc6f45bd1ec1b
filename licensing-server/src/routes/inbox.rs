//! (ext) The payment providers' inboxes: `POST /api/v1/integrations/{stripe|paddle|lemonsqueezy}
//! ?teamId=…` (Stripe's is Lukittu's address). No API key: each delivery is authenticated by its
//! signature over the raw body (see `app/billing.rs`).

use licensing_core::ApiError;
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::MAX_INBOUND_BODY;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;

use crate::http::{self, Response, raw_query, read_body, with_state};
use crate::state::AppState;

/// The inbox route.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path!("api" / "v1" / "integrations" / String)
        .and(warp::post())
        .and(with_state(state))
        .and(http::client_addr())
        .and(raw_query())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(
            |provider: String, state: AppState, ip, query: String, headers: HeaderMap, body| async move {
                let Some(provider) = Provider::parse(&provider) else {
                    return http::error(&ApiError::route_not_found());
                };
                let body = match read_body(body, MAX_INBOUND_BODY).await {
                    Ok(body) => body,
                    Err(e) => return http::error(&e),
                };
                let team = form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == "teamId")
                    .map(|(_, v)| v.into_owned());
                let signature = headers
                    .get(provider.signature_header())
                    .and_then(|v| v.to_str().ok());
                let answer = crate::app::billing::receive(
                    &state,
                    provider,
                    team.as_deref(),
                    signature,
                    &body,
                    ip,
                )
                .await;
                http::json(answer.status, &answer.body)
            },
        )
        .boxed()
}
