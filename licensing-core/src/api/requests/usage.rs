//! (ext) The bodies of a license's usage changes.

use serde::{Deserialize, Serialize};

use super::finish;
use crate::error::{ApiError, Validator};

/// The largest change one adjustment makes.
pub const MAX_USAGE_DELTA: i64 = 1_000_000_000;

/// The longest reason, in characters.
pub const MAX_USAGE_REASON: usize = 500;

/// `POST {dev}/licenses/id/{id}/usage/{meter}/adjust`: how much to add (negative: to take
/// away) and why.
#[derive(Debug, Deserialize, Clone, Default, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"delta": -20, "reason": "Exports failed on our side (ticket 4411)"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdjustUsageBody {
    /// The change, not 0, at most a billion either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<i64>,
    /// Why (1 to 500 characters), kept in the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AdjustUsageBody {
    /// An adjustment of `delta` because of `reason`.
    pub fn new(delta: i64, reason: impl Into<String>) -> Self {
        Self {
            delta: Some(delta),
            reason: Some(reason.into()),
        }
    }

    /// The change and the reason, checked (400 naming each member at fault).
    pub fn validate(&self) -> Result<(i64, String), ApiError> {
        let mut v = Validator::new();
        let delta = match self.delta {
            None => {
                v.push("delta", "is required");
                None
            }
            Some(0) => {
                v.push("delta", "must not be 0");
                None
            }
            Some(d) if d.abs() > MAX_USAGE_DELTA => {
                v.push(
                    "delta",
                    format!("must be at most {MAX_USAGE_DELTA} either way (got {d})"),
                );
                None
            }
            Some(d) => Some(d),
        };
        let reason = v.required("reason", self.reason.as_deref(), reason);
        finish(v)?;
        Ok((delta.unwrap_or_default(), reason.unwrap_or_default()))
    }
}

/// `POST {dev}/licenses/id/{id}/usage/{meter}/reset`: optionally, why.
#[derive(Debug, Deserialize, Clone, Default, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"reason": "New contract signed"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResetUsageBody {
    /// Why (1 to 500 characters), kept in the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ResetUsageBody {
    /// The reason, checked.
    pub fn validate(&self) -> Result<Option<String>, ApiError> {
        let mut v = Validator::new();
        let reason = self
            .reason
            .as_deref()
            .and_then(|text| v.check("reason", reason(text)));
        finish(v)?;
        Ok(reason)
    }
}

/// A reason as given, trimmed: 1 to 500 characters, no control characters.
fn reason(text: &str) -> Result<String, String> {
    let text = text.trim();
    let count = text.chars().count();
    if count == 0 || count > MAX_USAGE_REASON || text.chars().any(char::is_control) {
        return Err(format!(
            "must be 1 to {MAX_USAGE_REASON} characters without control characters"
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjustments_need_a_change_and_a_reason() {
        assert_eq!(
            AdjustUsageBody::new(-3, " refund ").validate().unwrap(),
            (-3, "refund".to_owned())
        );
        for (body, field) in [
            (AdjustUsageBody::new(0, "x"), "delta"),
            (AdjustUsageBody::new(MAX_USAGE_DELTA + 1, "x"), "delta"),
            (AdjustUsageBody::new(1, ""), "reason"),
            (AdjustUsageBody::new(1, "a\u{7}b"), "reason"),
            (
                AdjustUsageBody {
                    delta: None,
                    reason: Some("x".into()),
                },
                "delta",
            ),
        ] {
            let e = body.validate().unwrap_err();
            assert_eq!(e.field_errors()[0].field, field, "{body:?}");
        }
        assert_eq!(ResetUsageBody::default().validate().unwrap(), None);
    }
}
