//! A license's hardware identifiers and IP addresses: list, forget, remember.

pub(crate) use licensing_core::operations::devices::{
    ListHwids, ListIps, ListRequests, SetHwidForgotten, SetIpForgotten,
};

use licensing_core::api::{HwidForgotten, IpForgotten};
use licensing_core::model::{
    Action, FieldChange, HwidView, IpRecordView, RecordStatus, RequestLogEntry, SelfServiceReset,
    TeamSettings, UsageRef,
};
use licensing_core::store::{DeviceStore, Entity, Page, RequestLogStore, StoreError, TeamStore};
use licensing_core::{ApiError, LicenseId, ProductId};

use licensing_core::model::License;

use super::{Cx, Run};
use crate::app::journal::tied_to;

impl Run for ListRequests {
    async fn run(self, cx: &Cx) -> Result<Page<RequestLogEntry>, ApiError> {
        let Self(license, query) = self;
        // 404 for a license of another team, or of products the caller may not see.
        cx.read::<License>(license).await?;
        // What waits to be written is part of the history: the request a customer just made
        // shows.
        if let Err(e) = cx.state.request_log.flush(&cx.state.store).await {
            tracing::error!(error = %e, "writing request history failed");
        }
        Ok(cx
            .state
            .store
            .list_requests(cx.team, license, &query)
            .await?)
    }
}

impl Run for ListHwids {
    async fn run(self, cx: &Cx) -> Result<Page<HwidView>, ApiError> {
        let Self(license, query) = self;
        let settings = listed(cx, license).await?;
        let page = cx.state.store.list_hwids(cx.team, license, &query).await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|hwid| HwidView {
                    status: RecordStatus::compute(
                        hwid.forgotten,
                        hwid.last_seen_at,
                        settings.hwid_timeout,
                        cx.now,
                    ),
                    hwid,
                })
                .collect(),
            total: page.total,
            has_next_page: page.has_next_page,
        })
    }
}

impl Run for ListIps {
    async fn run(self, cx: &Cx) -> Result<Page<IpRecordView>, ApiError> {
        let Self(license, query) = self;
        let settings = listed(cx, license).await?;
        let page = cx.state.store.list_ips(cx.team, license, &query).await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|ip| IpRecordView {
                    status: RecordStatus::compute(
                        ip.forgotten,
                        ip.last_seen_at,
                        settings.ip_timeout,
                        cx.now,
                    ),
                    ip,
                })
                .collect(),
            total: page.total,
            has_next_page: page.has_next_page,
        })
    }
}

impl Run for SetHwidForgotten {
    async fn run(self, cx: &Cx) -> Result<HwidForgotten, ApiError> {
        let Self(license, id, body) = self;
        let forgotten = body.validate()?;
        let products = changed_license_products(cx, license).await?;
        let action = if forgotten {
            Action::DeviceForgotten
        } else {
            Action::DeviceRemembered
        };
        let journal = tied_to(
            cx.journal(action, id, forgotten_change(forgotten)),
            &products,
        );
        if cx.caller.portal.is_some() {
            self_service(cx, license, UsageRef::Hwid(id), forgotten, &journal).await?;
            return Ok(HwidForgotten {
                hwid_id: id,
                forgotten: true,
            });
        }
        let h = cx
            .state
            .store
            .set_hwid_forgotten(cx.team, license, id, forgotten, cx.now, &journal)
            .await?;
        Ok(HwidForgotten {
            hwid_id: h.id,
            forgotten: h.forgotten,
        })
    }
}

impl Run for SetIpForgotten {
    async fn run(self, cx: &Cx) -> Result<IpForgotten, ApiError> {
        let Self(license, id, body) = self;
        let forgotten = body.validate()?;
        let products = changed_license_products(cx, license).await?;
        let action = if forgotten {
            Action::IpForgotten
        } else {
            Action::IpRemembered
        };
        let journal = tied_to(
            cx.journal(action, id, forgotten_change(forgotten)),
            &products,
        );
        if cx.caller.portal.is_some() {
            self_service(cx, license, UsageRef::Ip(id), forgotten, &journal).await?;
            return Ok(IpForgotten {
                ip_id: id,
                forgotten: true,
            });
        }
        let r = cx
            .state
            .store
            .set_ip_forgotten(cx.team, license, id, forgotten, cx.now, &journal)
            .await?;
        Ok(IpForgotten {
            ip_id: r.id,
            forgotten: r.forgotten,
        })
    }
}

/// A customer's forget in the portal: within the budget of self-service resets of the
/// license's policy (the default budget without one), in one atomic step of the store. Past
/// the budget: 403 saying when it refills, which the refusal's `retryAfter` carries in seconds
/// (none when the policy allows no resets). A customer may not count a record again.
async fn self_service(
    cx: &Cx,
    license: LicenseId,
    record: UsageRef,
    forgotten: bool,
    journal: &licensing_core::store::Journal,
) -> Result<(), ApiError> {
    if !forgotten {
        return Err(ApiError::forbidden(
            "A customer can forget a device or address, not count one again",
        ));
    }
    let found = cx.read::<License>(license).await?;
    let context = super::client::team_context(&cx.state, cx.team).await?;
    let budget = context
        .policies
        .of(&found)
        .map(|p| p.self_service_resets)
        .unwrap_or_default();
    let done = cx
        .state
        .store
        .forget_within_budget(cx.team, license, record, budget, cx.now, journal)
        .await?;
    match done {
        SelfServiceReset::Forgotten => {
            // The client API's view of the license's records is cached; it reads them again.
            cx.state.licenses.forget_team(cx.team);
            Ok(())
        }
        SelfServiceReset::AlreadyForgotten => Ok(()),
        SelfServiceReset::Spent { refills_at: None } => Err(ApiError::forbidden(
            "This license allows no self-service resets: ask the vendor to free the device",
        )),
        SelfServiceReset::Spent {
            refills_at: Some(at),
        } => {
            let wait = at.as_millis().saturating_sub(cx.now.as_millis());
            Err(ApiError::forbidden(format!(
                "This license's {} self-service resets per {} days are used up: another is possible from {at}",
                budget.count, budget.period_days
            ))
            .retry_after_secs(u64::try_from(wait.max(0)).unwrap_or(0).div_ceil(1000)))
        }
    }
}

/// The audit's change of a forget or remember: the flag's new value.
fn forgotten_change(forgotten: bool) -> Vec<FieldChange> {
    vec![FieldChange::of("forgotten", None, Some(forgotten.into()))]
}

/// The products of license `license`, which the caller is about to change a record of: 404
/// unless it may see the license, 403 unless it may change it. The audit entry and the event
/// of the change are tied to them.
async fn changed_license_products(cx: &Cx, license: LicenseId) -> Result<Vec<ProductId>, ApiError> {
    let found = cx.write::<License>(license).await?;
    Ok(found.product_ids)
}

/// Before a license's records are listed: 404 unless a key restricted to products may see the
/// license (unrestricted callers need no read here: the store checks the license exists); the
/// team's settings, which decide each record's status.
async fn listed(cx: &Cx, license: LicenseId) -> Result<TeamSettings, ApiError> {
    cx.reachable::<License>(license).await?;
    Ok(cx
        .state
        .store
        .get_team(cx.team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?
        .settings)
}
