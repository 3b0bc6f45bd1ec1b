//! A license's hardware identifiers and IP addresses: list, forget, remember.

use bytes::Buf;
use futures_util::Stream;
use licensing_core::api::requests::{DeviceListQuery, ForgottenBody, MAX_JSON_BODY};
use licensing_core::api::{HwidForgotten, HwidPage, IpForgotten, IpPage};
use licensing_core::model::{HwidView, IpRecordView, RecordStatus, TeamSettings};
use licensing_core::store::{DeviceStore, Entity, StoreError, TeamStore};
use licensing_core::{ApiError, HwidId, IpId, LicenseId, Timestamp};
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
    let list_hwids =
        warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String / "hwid")
            .and(warp::get())
            .and(s())
            .and(headers())
            .and(raw_query())
            .then(
                |team: String,
                 license: String,
                 state: AppState,
                 headers: HeaderMap,
                 query: String| async move {
                    respond(list(state, team, license, headers, query, Kind::Hwid).await)
                },
            );
    let list_ips = warp::path!("api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String / "ip-address")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(|team: String, license: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(list(state, team, license, headers, query, Kind::Ip).await)
        });
    let patch_hwid =
        warp::path!(
            "api" / "v1" / "dev" / "teams" / String / "licenses" / "id" / String / "hwid" / String
        )
        .and(warp::patch())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String,
             license: String,
             id: String,
             state: AppState,
             headers: HeaderMap,
             body| async move {
                respond(forget(state, team, license, id, headers, body, Kind::Hwid).await)
            },
        );
    let patch_ip =
        warp::path!(
            "api"
                / "v1"
                / "dev"
                / "teams"
                / String
                / "licenses"
                / "id"
                / String
                / "ip-address"
                / String
        )
        .and(warp::patch())
        .and(s())
        .and(headers())
        .and(warp::body::stream())
        .then(
            |team: String,
             license: String,
             id: String,
             state: AppState,
             headers: HeaderMap,
             body| async move {
                respond(forget(state, team, license, id, headers, body, Kind::Ip).await)
            },
        );
    list_hwids
        .or(list_ips)
        .unify()
        .or(patch_hwid)
        .unify()
        .or(patch_ip)
        .unify()
        .boxed()
}

#[derive(Clone, Copy)]
enum Kind {
    Hwid,
    Ip,
}

async fn settings(
    state: &AppState,
    team: licensing_core::TeamId,
) -> Result<TeamSettings, ApiError> {
    Ok(state
        .store
        .get_team(team)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Team))?
        .settings)
}

async fn list(
    state: AppState,
    team: String,
    license: String,
    headers: HeaderMap,
    query: String,
    kind: Kind,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let license: LicenseId = path_param("licenseId", &license)?;
    let query = DeviceListQuery::parse(&query)?;
    let settings = settings(&state, dev.team).await?;
    let now = Timestamp::now();
    match kind {
        Kind::Hwid => {
            let page = state
                .store
                .list_hwids(dev.team, license, &query)
                .await
                .map_err(store_error)?;
            let hwids = page
                .items
                .into_iter()
                .map(|hwid| HwidView {
                    status: RecordStatus::compute(
                        hwid.forgotten,
                        hwid.last_seen_at,
                        settings.hwid_timeout,
                        now,
                    ),
                    hwid,
                })
                .collect();
            Ok(success(
                200,
                HwidPage {
                    hwids,
                    total_results: page.total,
                    has_next_page: page.has_next_page,
                },
                "Hardware identifiers retrieved",
            ))
        }
        Kind::Ip => {
            let page = state
                .store
                .list_ips(dev.team, license, &query)
                .await
                .map_err(store_error)?;
            let ip_addresses = page
                .items
                .into_iter()
                .map(|ip| IpRecordView {
                    status: RecordStatus::compute(
                        ip.forgotten,
                        ip.last_seen_at,
                        settings.ip_timeout,
                        now,
                    ),
                    ip,
                })
                .collect();
            Ok(success(
                200,
                IpPage {
                    ip_addresses,
                    total_results: page.total,
                    has_next_page: page.has_next_page,
                },
                "IP addresses retrieved",
            ))
        }
    }
}

async fn forget<S, B>(
    state: AppState,
    team: String,
    license: String,
    id: String,
    headers: HeaderMap,
    body: S,
    kind: Kind,
) -> Handled
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let dev = state.dev(&team, &headers).await?;
    let license: LicenseId = path_param("licenseId", &license)?;
    let body = read_body(body, MAX_JSON_BODY).await?;
    let forgotten = ForgottenBody::parse(&body)?;
    match kind {
        Kind::Hwid => {
            let id: HwidId = path_param("hwidId", &id)?;
            let h = state
                .store
                .set_hwid_forgotten(dev.team, license, id, forgotten, dev.now)
                .await
                .map_err(store_error)?;
            Ok(success(
                200,
                HwidForgotten {
                    hwid_id: h.id,
                    forgotten: h.forgotten,
                },
                "Hardware identifier updated",
            ))
        }
        Kind::Ip => {
            let id: IpId = path_param("ipId", &id)?;
            let r = state
                .store
                .set_ip_forgotten(dev.team, license, id, forgotten, dev.now)
                .await
                .map_err(store_error)?;
            Ok(success(
                200,
                IpForgotten {
                    ip_id: r.id,
                    forgotten: r.forgotten,
                },
                "IP address updated",
            ))
        }
    }
}
