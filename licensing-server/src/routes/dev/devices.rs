//! A license's hardware identifiers and IP addresses: list, forget, remember.

use licensing_core::api::requests::{DeviceListQuery, ForgottenBody};
use licensing_core::api::{HwidForgotten, HwidPage, IpForgotten, IpPage};
use licensing_core::model::{
    Action, FieldChange, HwidView, IpRecordView, RecordStatus, TeamSettings,
};
use licensing_core::store::{DeviceStore, Entity, LicenseStore, StoreError, TeamStore};
use licensing_core::{ApiError, HwidId, IpId, LicenseId};

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};
use crate::services::audit::tied_to;
use crate::state::AppState;

/// `GET …/hwid`.
pub(super) async fn list_hwids(dev: Dev, (license,): (LicenseId,), input: Input) -> Handled {
    list(dev, license, input, Kind::Hwid).await
}

/// `GET …/ip-address`.
pub(super) async fn list_ips(dev: Dev, (license,): (LicenseId,), input: Input) -> Handled {
    list(dev, license, input, Kind::Ip).await
}

/// The audit's change of a forget or remember: the flag's new value.
fn forgotten_change(forgotten: bool) -> Vec<FieldChange> {
    vec![FieldChange::of("forgotten", None, Some(forgotten.into()))]
}

/// `PATCH …/hwid/{hwidId}`.
pub(super) async fn forget_hwid(
    dev: Dev,
    (license, id): (LicenseId, HwidId),
    input: Input,
) -> Handled {
    let forgotten = ForgottenBody::parse(&input.json().await?)?;
    let products = changed_license_products(&dev, license).await?;
    let h = dev
        .state
        .store
        .set_hwid_forgotten(
            dev.team,
            license,
            id,
            forgotten,
            dev.now,
            &tied_to(
                dev.journal(
                    if forgotten {
                        Action::DeviceForgotten
                    } else {
                        Action::DeviceRemembered
                    },
                    id,
                    forgotten_change(forgotten),
                ),
                &products,
            ),
        )
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

/// `PATCH …/ip-address/{ipId}`.
pub(super) async fn forget_ip(dev: Dev, (license, id): (LicenseId, IpId), input: Input) -> Handled {
    let forgotten = ForgottenBody::parse(&input.json().await?)?;
    let products = changed_license_products(&dev, license).await?;
    let r = dev
        .state
        .store
        .set_ip_forgotten(
            dev.team,
            license,
            id,
            forgotten,
            dev.now,
            &tied_to(
                dev.journal(
                    if forgotten {
                        Action::IpForgotten
                    } else {
                        Action::IpRemembered
                    },
                    id,
                    forgotten_change(forgotten),
                ),
                &products,
            ),
        )
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

/// The products of license `license`, which the caller is about to change a record of: 404
/// unless it may see the license, 403 unless it may change it. The audit entry and the event
/// of the change are tied to them.
async fn changed_license_products(
    dev: &Dev,
    license: LicenseId,
) -> Result<Vec<licensing_core::ProductId>, ApiError> {
    let found = visible_license(dev, license).await?;
    dev.must_cover(&found.product_ids)?;
    Ok(found.product_ids)
}

/// For a key restricted to products: 404 unless it may see the license. Unrestricted keys
/// need no read here (the store checks the license exists).
async fn license_for(dev: &Dev, license: LicenseId) -> Result<(), ApiError> {
    if dev.products().is_some() {
        visible_license(dev, license).await?;
    }
    Ok(())
}

/// License `license` of the team, 404 unless the caller may see it.
async fn visible_license(
    dev: &Dev,
    license: LicenseId,
) -> Result<licensing_core::model::License, ApiError> {
    Ok(dev
        .state
        .store
        .get_license(dev.team, license)
        .await
        .map_err(store_error)?
        .filter(|l| dev.sees(&l.product_ids))
        .ok_or(StoreError::NotFound(Entity::License))?)
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

async fn list(dev: Dev, license: LicenseId, input: Input, kind: Kind) -> Handled {
    let query = DeviceListQuery::parse(&input.query)?;
    license_for(&dev, license).await?;
    let state = &dev.state;
    let settings = settings(state, dev.team).await?;
    let now = dev.now;
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
