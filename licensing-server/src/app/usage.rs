//! (ext) A license's usage counters on the developer API and the dashboard: read with their
//! history, adjusted with a reason, reset; each change audited as `license.usage_changed`.

pub(crate) use licensing_core::operations::usage::{
    AdjustUsage, GetUsage, LicenseUsage, MeterCode, ResetUsage,
};

use licensing_core::ApiError;
use licensing_core::model::{
    Action, FieldChange, License, Meter, MeterUsage, UsageChange, meter_usage,
};
use licensing_core::store::UsageStore;
use serde_json::json;

use super::policies::applied;
use super::{Cx, Run};
use crate::app::journal::tied_to;

impl Run for GetUsage {
    async fn run(self, cx: &Cx) -> Result<LicenseUsage, ApiError> {
        let Self(id) = self;
        let license = applied(cx, cx.read::<License>(id).await?).await?;
        let counters = cx.state.store.list_usage(cx.team, id).await?;
        Ok(LicenseUsage {
            meters: meter_usage(&license.meters, &counters, cx.now),
        })
    }
}

impl Run for AdjustUsage {
    async fn run(self, cx: &Cx) -> Result<MeterUsage, ApiError> {
        let Self(id, meter, body) = self;
        let (delta, reason) = body.validate()?;
        change(cx, id, &meter, UsageChange::Adjust(delta), Some(reason)).await
    }
}

impl Run for ResetUsage {
    async fn run(self, cx: &Cx) -> Result<MeterUsage, ApiError> {
        let Self(id, meter, body) = self;
        let reason = body.validate()?;
        change(cx, id, &meter, UsageChange::Reset, reason).await
    }
}

/// The license's meter of `code` (its policy's applied), or 404 `METER_NOT_FOUND` naming the
/// meters it has.
fn meter_of(license: &License, code: &MeterCode) -> Result<Meter, ApiError> {
    license
        .meters
        .iter()
        .find(|m| m.code == code.0)
        .cloned()
        .ok_or_else(|| licensing_core::verify::meter_not_found(&license.meters, &[&code.0]))
}

/// Changes the license's counter of `code` in the current period, audited with the change
/// and the reason; the meter's standing after it.
async fn change(
    cx: &Cx,
    id: licensing_core::LicenseId,
    code: &MeterCode,
    change: UsageChange,
    reason: Option<String>,
) -> Result<MeterUsage, ApiError> {
    let stored = cx.write::<License>(id).await?;
    let license = applied(cx, stored).await?;
    let meter = meter_of(&license, code)?;
    let what = match change {
        UsageChange::Adjust(delta) => json!({"meter": meter.code, "delta": delta}),
        UsageChange::Reset => json!({"meter": meter.code, "reset": true}),
    };
    let mut changes = vec![FieldChange::of("usage", None, Some(what))];
    if let Some(reason) = reason {
        changes.push(FieldChange::of("reason", None, Some(reason.into())));
    }
    let journal = tied_to(
        cx.journal(Action::LicenseUsageChanged, id, changes),
        &license.product_ids,
    );
    cx.state
        .store
        .change_usage(cx.team, id, &meter, change, cx.now, &journal)
        .await?;
    let counters = cx.state.store.list_usage(cx.team, id).await?;
    meter_usage(std::slice::from_ref(&meter), &counters, cx.now)
        .pop()
        .ok_or_else(ApiError::internal)
}
