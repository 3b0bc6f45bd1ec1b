//! (ext) `POST {dev}/licenses/bulk`: one action on up to 100 licenses at once.

use serde::{Deserialize, Serialize};

use crate::error::Validator;
use crate::model::{Resource, Scope};
use crate::{ApiError, LicenseId};

/// The most licenses one bulk action takes: a list's largest page.
pub const MAX_BULK_LICENSES: usize = 100;

/// What a bulk action does to each license.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BulkAction {
    /// Suspends each (one already suspended stays so).
    Suspend,
    /// Lifts each one's suspension.
    Unsuspend,
    /// Deletes each, with its devices and addresses.
    Delete,
}

impl BulkAction {
    /// Every action, in the order a menu offers them.
    pub const ALL: [BulkAction; 3] = [Self::Suspend, Self::Unsuspend, Self::Delete];

    /// Its name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Suspend => "SUSPEND",
            Self::Unsuspend => "UNSUSPEND",
            Self::Delete => "DELETE",
        }
    }

    /// The scope it takes: `licenses:suspend` to suspend or unsuspend (as `licenses:write`
    /// allows too), `licenses:write` to delete.
    pub const fn scope(self) -> Scope {
        match self {
            Self::Suspend | Self::Unsuspend => Scope::LICENSE_SUSPEND,
            Self::Delete => Scope::write(Resource::Licenses),
        }
    }

    /// The action named `text` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(text))
    }
}

/// The body of `POST {dev}/licenses/bulk`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "action": "SUSPEND",
    "licenseIds": ["0190f3c2-7a4e-7b1a-9c1d-2f6e8a9b0c1d"]
})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BulkLicenseBody {
    /// `SUSPEND`, `UNSUSPEND` or `DELETE`.
    #[serde(default)]
    pub action: Option<String>,
    /// The licenses, by id: 1 to 100 (an id given twice counts once).
    #[serde(default)]
    pub license_ids: Option<Vec<String>>,
    /// With `SUSPEND`: why (1 to 500 characters), each license's `suspensionReason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl BulkLicenseBody {
    /// The body of `action` on `ids`.
    pub fn new(action: BulkAction, ids: &[LicenseId]) -> Self {
        Self {
            action: Some(action.as_str().to_owned()),
            license_ids: Some(ids.iter().map(ToString::to_string).collect()),
            reason: None,
        }
    }

    /// The suspension's reason, trimmed (checked by [`parse`](Self::parse)).
    pub fn reason(&self) -> Option<String> {
        self.reason.as_deref().map(|r| r.trim().to_owned())
    }

    /// The action and the licenses, each once, in the order given; 400 naming each problem.
    pub fn parse(&self) -> Result<(BulkAction, Vec<LicenseId>), ApiError> {
        let mut problems = Validator::new();
        let action = match self.action.as_deref() {
            None => {
                problems.push("action", "is required: SUSPEND, UNSUSPEND or DELETE");
                None
            }
            Some(text) => {
                let action = BulkAction::parse(text);
                if action.is_none() {
                    problems.push("action", "must be SUSPEND, UNSUSPEND or DELETE");
                }
                action
            }
        };
        let mut ids: Vec<LicenseId> = Vec::new();
        match self.license_ids.as_deref() {
            None | Some([]) => {
                problems.push("licenseIds", "is required: the ids of 1 to 100 licenses")
            }
            Some(texts) => {
                for (i, text) in texts.iter().enumerate() {
                    match text.parse::<LicenseId>() {
                        Ok(id) if !ids.contains(&id) => ids.push(id),
                        Ok(_) => {}
                        Err(_) => problems.push(format!("licenseIds[{i}]"), "is not a license id"),
                    }
                }
                if ids.len() > MAX_BULK_LICENSES {
                    problems.push(
                        "licenseIds",
                        format!(
                            "names {} licenses: at most {MAX_BULK_LICENSES} at a time",
                            ids.len()
                        ),
                    );
                }
            }
        }
        if let Some(reason) = &self.reason {
            if action.is_some_and(|a| a != BulkAction::Suspend) {
                problems.push("reason", "is given only with the action SUSPEND");
            } else if let Err(e) =
                crate::validate::text(reason.trim(), 1, crate::model::MAX_SUSPENSION_REASON)
            {
                problems.push("reason", e);
            }
        }
        problems.finish().map_err(ApiError::validation)?;
        Ok((action.unwrap_or(BulkAction::Suspend), ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(action: Option<&str>, ids: Option<Vec<String>>) -> BulkLicenseBody {
        BulkLicenseBody {
            action: action.map(str::to_owned),
            license_ids: ids,
            reason: None,
        }
    }

    /// Ids are taken once each, in order; every problem is named.
    #[test]
    fn a_bulk_body_names_an_action_and_1_to_100_licenses() {
        let (a, b) = (LicenseId::new(), LicenseId::new());
        let ids = vec![a.to_string(), b.to_string(), a.to_string()];
        let (action, parsed) = body(Some("delete"), Some(ids)).parse().unwrap();
        assert_eq!((action, parsed), (BulkAction::Delete, vec![a, b]));
        assert_eq!(
            BulkLicenseBody::new(BulkAction::Unsuspend, &[b])
                .parse()
                .unwrap(),
            (BulkAction::Unsuspend, vec![b])
        );

        let refused = body(Some("archive"), Some(vec!["x".into()]))
            .parse()
            .unwrap_err();
        let fields: Vec<_> = refused
            .field_errors()
            .iter()
            .map(|e| e.field.as_str())
            .collect();
        assert_eq!(fields, ["action", "licenseIds[0]"]);
        let refused = body(None, Some(vec![])).parse().unwrap_err();
        assert_eq!(refused.field_errors().len(), 2);
        let many = (0..=MAX_BULK_LICENSES)
            .map(|_| LicenseId::new().to_string())
            .collect();
        let refused = body(Some("SUSPEND"), Some(many)).parse().unwrap_err();
        assert!(refused.field_errors()[0].message.contains("at most 100"));
    }
}
