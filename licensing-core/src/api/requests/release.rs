use serde::{Deserialize, Serialize};

use super::{Patch, RawMetadata, finish, id_list, metadata, not_null, parse_json, present};
use crate::error::{ApiError, Validator};
use crate::model::{MetadataItem, ReleaseStatus, RolloutPercent};
use crate::validate::Version;
use crate::{BranchId, LicenseId, ProductId};

/// Most licenses a release can be restricted to.
pub(crate) const MAX_RELEASE_LICENSES: usize = 30;

/// Whether release data is for a create or an update: the update makes more members required.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseMode {
    /// `POST {dev}/releases`.
    Create,
    /// `PUT {dev}/releases/{releaseId}`.
    Update,
}

/// The JSON object in the `data` part of a release create or update.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"version": "1.2.0", "productId": "6f9619ff-8b86-4011-b42d-00c04fc964ff", "status": "PUBLISHED", "setAsLatest": true, "branchId": null, "metadata": [], "licenseIds": []})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseData {
    /// `version`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub version: Option<String>,
    /// `productId`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub product_id: Option<String>,
    /// `status`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<String>,
    /// `setAsLatest`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub set_as_latest: Patch<bool>,
    /// `branchId`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub branch_id: Patch<String>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
    /// `licenseIds`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub license_ids: Patch<Vec<String>>,
    /// `keepExistingFile`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub keep_existing_file: Patch<bool>,
    /// (ext) `notes`: release notes (Markdown) for the update feeds; `null` clears them, left
    /// out keeps them.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub notes: Patch<String>,
    /// (ext) `critical`: offered to every license at once, past a phased rollout; left out
    /// keeps it (a new release: `false`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub critical: Patch<bool>,
    /// (ext) `rolloutPercent`: 0 to 100, the share of licenses offered the release; left out
    /// keeps it (a new release: 100).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u8>))]
    pub rollout_percent: Patch<serde_json::Value>,
}

/// Longest release notes, in characters.
pub const MAX_NOTES: usize = 20_000;

/// (ext) How an update changes a release's feed members: each left out keeps its value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedChange {
    /// Notes; `Null` clears them.
    pub notes: Patch<String>,
    /// Critical.
    pub critical: Option<bool>,
    /// The rollout.
    pub rollout_percent: Option<RolloutPercent>,
}

impl FeedChange {
    /// Applies the change to `release`.
    pub fn apply(&self, release: &mut crate::model::Release) {
        match &self.notes {
            Patch::Missing => {}
            Patch::Null => release.notes = None,
            Patch::Value(notes) => release.notes = Some(notes.clone()),
        }
        if let Some(critical) = self.critical {
            release.critical = critical;
        }
        if let Some(rollout) = self.rollout_percent {
            release.rollout_percent = rollout;
        }
    }
}

/// Validated release data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseInput {
    /// Version, unique per product and branch.
    pub version: Version,
    /// The product.
    pub product_id: ProductId,
    /// Status.
    pub status: ReleaseStatus,
    /// Make this the only latest release of its product and branch.
    pub set_as_latest: bool,
    /// The branch.
    pub branch_id: Option<BranchId>,
    /// Metadata (at most 20 items).
    pub metadata: Vec<MetadataItem>,
    /// Licenses allowed to use it (at most 30; empty: all).
    pub license_ids: Vec<LicenseId>,
    /// Update without a file part: keep the stored file (`true`) or remove it (`false`).
    pub keep_existing_file: bool,
    /// (ext) The feed members given.
    pub feed: FeedChange,
}

fn required_in_update<T>(v: &mut Validator, mode: ReleaseMode, field: &str, patch: &Patch<T>) {
    if mode == ReleaseMode::Update && !patch.is_present() {
        v.push(field, "is required when updating a release");
    }
}

impl ReleaseData {
    /// Parses the `data` part.
    pub fn parse(data: &[u8], mode: ReleaseMode) -> Result<ReleaseInput, ApiError> {
        parse_json::<Self>(data)?.validate(mode)
    }

    /// Checks every member (all problems at once), as [`parse`](Self::parse) does after the
    /// JSON.
    pub fn validate(self, mode: ReleaseMode) -> Result<ReleaseInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let version = v.required("version", raw.version, Version::parse);
        let product_id = v.required("productId", raw.product_id, ProductId::parse);
        let status = v.required("status", raw.status, ReleaseStatus::parse);
        required_in_update(&mut v, mode, "setAsLatest", &raw.set_as_latest);
        let set_as_latest = not_null(&mut v, "setAsLatest", raw.set_as_latest).unwrap_or(false);
        required_in_update(&mut v, mode, "branchId", &raw.branch_id);
        let branch_id = match &raw.branch_id {
            Patch::Value(t) => v.check("branchId", BranchId::parse(t)),
            _ => None,
        };
        required_in_update(&mut v, mode, "metadata", &raw.metadata);
        let metadata = not_null(&mut v, "metadata", raw.metadata)
            .map(|m| metadata(&mut v, "metadata", m))
            .unwrap_or_default();
        required_in_update(&mut v, mode, "licenseIds", &raw.license_ids);
        let license_ids = not_null(&mut v, "licenseIds", raw.license_ids)
            .map(|ids| id_list(&mut v, "licenseIds", &ids, MAX_RELEASE_LICENSES))
            .unwrap_or_default();
        let keep_existing_file = match mode {
            ReleaseMode::Create => {
                if raw.keep_existing_file.is_present() {
                    v.push("keepExistingFile", "is only used when updating a release");
                }
                false
            }
            ReleaseMode::Update => {
                required_in_update(&mut v, mode, "keepExistingFile", &raw.keep_existing_file);
                not_null(&mut v, "keepExistingFile", raw.keep_existing_file).unwrap_or(false)
            }
        };
        let notes = match raw.notes {
            Patch::Value(notes) => v
                .check("notes", check_notes(&notes))
                .map_or(Patch::Missing, |()| Patch::Value(notes)),
            other => other,
        };
        let critical = not_null(&mut v, "critical", raw.critical);
        let rollout_percent =
            not_null(&mut v, "rolloutPercent", raw.rollout_percent).and_then(|value| {
                let percent = value
                    .as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| "must be a whole number from 0 to 100".to_owned())
                    .and_then(RolloutPercent::new);
                v.check("rolloutPercent", percent)
            });
        finish(v)?;
        Ok(ReleaseInput {
            feed: FeedChange {
                notes,
                critical,
                rollout_percent,
            },
            version: present(version)?,
            product_id: present(product_id)?,
            status: present(status)?,
            set_as_latest,
            branch_id,
            metadata,
            license_ids,
            keep_existing_file,
        })
    }
}

/// Release notes: at most [`MAX_NOTES`] characters, without control characters other than line
/// breaks and tabs.
fn check_notes(notes: &str) -> Result<(), String> {
    if notes.chars().count() > MAX_NOTES {
        return Err(format!("must be at most {MAX_NOTES} characters"));
    }
    if notes
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err("must not contain control characters other than line breaks and tabs".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    const P: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";

    #[test]
    fn create_defaults() {
        let r = ReleaseData::parse(
            format!(r#"{{"version":"1.0.0","productId":"{P}","status":"PUBLISHED"}}"#).as_bytes(),
            ReleaseMode::Create,
        )
        .unwrap();
        assert_eq!(
            (
                r.set_as_latest,
                r.branch_id,
                r.metadata.len(),
                r.license_ids.len()
            ),
            (false, None, 0, 0)
        );
    }

    #[test]
    fn update_requires_every_member() {
        let body = format!(r#"{{"version":"1.0.0","productId":"{P}","status":"DRAFT"}}"#);
        let e = ReleaseData::parse(body.as_bytes(), ReleaseMode::Update).unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "setAsLatest",
                "branchId",
                "metadata",
                "licenseIds",
                "keepExistingFile"
            ]
        );
        let full = format!(
            r#"{{"version":"1.0.0","productId":"{P}","status":"DRAFT","setAsLatest":true,"branchId":null,
                "metadata":[],"licenseIds":[],"keepExistingFile":true}}"#
        );
        let r = ReleaseData::parse(full.as_bytes(), ReleaseMode::Update).unwrap();
        assert!(r.set_as_latest && r.keep_existing_file);
    }

    #[test]
    fn missing_members_are_all_reported() {
        let e = ReleaseData::parse(b"{}", ReleaseMode::Create).unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["version", "productId", "status"]);
    }

    #[test]
    fn rules_name_the_field() {
        let base = |extra: &str| {
            format!(r#"{{"version":"1.0.0","productId":"{P}","status":"PUBLISHED"{extra}}}"#)
        };
        let ids: Vec<String> = (0..31)
            .map(|i| format!("\"{:08x}-8b86-4011-b42d-00c04fc964ff\"", i))
            .collect();
        let cases: Vec<(String, &str, String)> = vec![
            (
                base("").replace("1.0.0", "1 0"),
                "version",
                "must not contain whitespace or control characters".into(),
            ),
            (
                base("").replace("1.0.0", "1."),
                "version",
                "must be 3 to 255 characters long (got 2)".into(),
            ),
            (
                base("").replace("PUBLISHED", "LIVE"),
                "status",
                "must be one of PUBLISHED, DRAFT, ARCHIVED, DEPRECATED".into(),
            ),
            (
                base(r#","branchId":"x""#),
                "branchId",
                "must be a UUID (8-4-4-4-12 hexadecimal digits)".into(),
            ),
            (
                base(r#","keepExistingFile":true"#),
                "keepExistingFile",
                "is only used when updating a release".into(),
            ),
            (
                base(&format!(r#","licenseIds":[{}]"#, ids.join(","))),
                "licenseIds",
                "must have at most 30 ids (got 31)".into(),
            ),
        ];
        for (body, field, message) in cases {
            let e = ReleaseData::parse(body.as_bytes(), ReleaseMode::Create).unwrap_err();
            assert_eq!(problems(&e), [(field.to_string(), message)], "{body}");
        }
    }
}
