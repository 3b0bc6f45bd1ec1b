//! (ext) A license's usage counters: read with their history, adjusted, reset.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::LicenseId;
use crate::api::requests::{AdjustUsageBody, ResetUsageBody};
use crate::model::{MeterUsage, Resource, Scope, entitlement_code};

use super::declare;
use super::doc::*;

/// A meter's code in a path (`…/usage/EXPORTS/adjust`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MeterCode(pub String);

impl FromStr for MeterCode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        entitlement_code(text).map(Self)
    }
}

impl fmt::Display for MeterCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A license's usage: each meter (its policy's applied) with its standing in the current
/// period and the periods before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LicenseUsage {
    /// The meters, in the license's order, then its policy's.
    pub meters: Vec<MeterUsage>,
}

/// The license's meters with this period's counts and the last 12 periods'.
pub struct GetUsage(pub LicenseId);

/// Adds to (or takes from) a meter's count of the current period, with a reason.
pub struct AdjustUsage(pub LicenseId, pub MeterCode, pub AdjustUsageBody);

/// Sets a meter's count of the current period to 0.
pub struct ResetUsage(pub LicenseId, pub MeterCode, pub ResetUsageBody);

const METER: Param = Param::path(
    "meter",
    "The meter's code",
    Kind::Pattern("^[A-Z][A-Z0-9_]{0,63}$"),
);

/// No such meter on the license.
const NO_METER: &[Refusal] = crate::refusals![(
    404,
    "LICENSE_NOT_FOUND, or METER_NOT_FOUND: the license (with its policy) has no meter of that code"
)];

declare! {
    GetUsage(license: LicenseId) by ids;
    Get "licenses/id/{licenseId}/usage" "get_usage" Some(Scope::read(Resource::Usage));
    LicenseUsage => 200 "Usage retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The license's usage meters: what each allows per period, what was used in the current period, and the last 12 periods.",
        description: "A license's meters are its own and its policy's (the license's meter of a code wins). Periods are UTC calendar periods (weeks from Monday); a period without use shows 0.",
        params: &[LICENSE_ID],
        body: "",
        success: "The meters",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    AdjustUsage(license: LicenseId, meter: MeterCode) by json AdjustUsageBody;
    Post "licenses/id/{licenseId}/usage/{meter}/adjust" "adjust_usage" Some(Scope::write(Resource::Usage));
    MeterUsage => 200 "Usage adjusted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Adjust a meter's count of the current period by `delta` (negative takes away; never below 0), with a reason, audited as `license.usage_changed`.",
        description: "",
        params: &[LICENSE_ID, METER],
        body: "",
        success: "The meter after the change",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_METER],
    };

    ResetUsage(license: LicenseId, meter: MeterCode) by optional ResetUsageBody;
    Post "licenses/id/{licenseId}/usage/{meter}/reset" "reset_usage" Some(Scope::write(Resource::Usage));
    MeterUsage => 200 "Usage reset";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Reset a meter's count of the current period to 0, audited as `license.usage_changed` (an optional body `{\"reason\"}` says why).",
        description: "",
        params: &[LICENSE_ID, METER],
        body: "",
        success: "The meter after the reset",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_METER],
    };
}
