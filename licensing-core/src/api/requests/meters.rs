//! (ext) Usage meters as a policy or a license gives them: checked member by member.

use serde::{Deserialize, Serialize};

use super::one_of;
use crate::error::Validator;
use crate::model::{MAX_METERS, Meter, MeterPeriod, entitlement_code};

/// A meter as it arrives.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawMeter {
    /// Code, as an entitlement's.
    #[serde(default)]
    pub code: Option<String>,
    /// The most a period allows (0 allows nothing); `null` or left out: unlimited.
    #[serde(default)]
    pub limit: Option<i64>,
    /// `none`, `day`, `week`, `month` or `year` (default `none`).
    #[serde(default)]
    pub period: Option<String>,
}

/// Checks a list of meters (a policy's or a license's), naming each member at fault.
pub(super) fn meters(v: &mut Validator, raw: Vec<RawMeter>) -> Vec<Meter> {
    if raw.len() > MAX_METERS {
        v.push("meters", format!("must hold at most {MAX_METERS} meters"));
        return Vec::new();
    }
    let mut out: Vec<Meter> = Vec::with_capacity(raw.len());
    for (i, m) in raw.into_iter().enumerate() {
        let at = |member: &str| format!("meters[{i}].{member}");
        let code = match m.code {
            None => {
                v.push(at("code"), "is required");
                None
            }
            Some(code) => v.check(&at("code"), entitlement_code(&code)),
        };
        if let Some(code) = &code
            && out.iter().any(|o| &o.code == code)
        {
            v.push(at("code"), "is used by another meter of this list");
        }
        let limit = m
            .limit
            .and_then(|l| {
                v.check(
                    &at("limit"),
                    u64::try_from(l).map_err(|_| format!("must be at least 0 (got {l})")),
                )
            })
            .map(Some)
            .unwrap_or(None);
        let period = match m.period.as_deref() {
            None => Some(MeterPeriod::None),
            Some(p) => v.check(&at("period"), one_of(p, &MeterPeriod::ALL)),
        };
        if let (Some(code), Some(period)) = (code, period) {
            out.push(Meter {
                code,
                limit,
                period,
            });
        }
    }
    out
}
