use serde::{Deserialize, Serialize};

use super::{Patch, RawMetadata, finish, metadata, not_null, parse_json};
use crate::error::{ApiError, Validator};
use crate::model::{Entitlement, MetadataItem, entitlement_code};
use crate::validate::text;
use crate::{EntitlementId, TeamId, Timestamp};

/// (ext) `POST`/`PUT {dev}/entitlements`.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Export to PDF", "code": "PRO_EXPORT", "metadata": []})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntitlementBody {
    /// `name` (1 to 255 characters; required on create).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub name: Patch<String>,
    /// `code` (required on create; an update may repeat it, never change it).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub code: Patch<String>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
}

/// A validated entitlement body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntitlementInput {
    /// Name (required on create).
    pub name: Option<String>,
    /// Code (required on create).
    pub code: Option<String>,
    /// Metadata (replaces all items when given).
    pub metadata: Option<Vec<MetadataItem>>,
}

impl EntitlementBody {
    /// Parses and validates; `create` makes `name` and `code` required.
    pub fn parse(body: &[u8], create: bool) -> Result<EntitlementInput, ApiError> {
        parse_json::<Self>(body)?.validate(create)
    }

    /// Validates; `create` makes `name` and `code` required.
    pub fn validate(self, create: bool) -> Result<EntitlementInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let required = |v: &mut Validator, field: &str, patch: Patch<String>| match patch {
            Patch::Missing if create => {
                v.push(field, "is required");
                None
            }
            other => not_null(v, field, other),
        };
        let name =
            required(&mut v, "name", raw.name).and_then(|n| v.check("name", text(&n, 1, 255)));
        let code =
            required(&mut v, "code", raw.code).and_then(|c| v.check("code", entitlement_code(&c)));
        let metadata =
            not_null(&mut v, "metadata", raw.metadata).map(|m| metadata(&mut v, "metadata", m));
        finish(v)?;
        Ok(EntitlementInput {
            name,
            code,
            metadata,
        })
    }
}

impl EntitlementInput {
    /// A new entitlement (the body was parsed with `create`).
    pub fn into_new(self, team_id: TeamId, now: Timestamp) -> Entitlement {
        Entitlement {
            id: EntitlementId::new(),
            name: self.name.unwrap_or_default(),
            code: self.code.unwrap_or_default(),
            metadata: self.metadata.unwrap_or_default(),
            team_id,
            created_at: now,
            updated_at: now,
        }
    }

    /// The entitlement after this update: 400 when it would change the code.
    pub fn apply_to(
        &self,
        existing: &Entitlement,
        now: Timestamp,
    ) -> Result<Entitlement, ApiError> {
        if self.code.as_ref().is_some_and(|c| *c != existing.code) {
            return Err(ApiError::bad_field(
                "code",
                "cannot change: clients check codes, so a new code is a new entitlement",
            ));
        }
        let mut next = existing.clone();
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        if let Some(items) = &self.metadata {
            next.metadata = items.clone();
        }
        next.updated_at = now;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: &str, create: bool) -> Vec<String> {
        match EntitlementBody::parse(body.as_bytes(), create) {
            Ok(_) => Vec::new(),
            Err(e) => e.field_errors().iter().map(|f| f.field.clone()).collect(),
        }
    }

    #[test]
    fn create_needs_a_name_and_a_well_formed_code() {
        assert!(problems(r#"{"name":"Export","code":"PRO_EXPORT"}"#, true).is_empty());
        assert_eq!(problems(r#"{}"#, true), ["name", "code"]);
        assert_eq!(
            problems(r#"{"name":"","code":"pro"}"#, true),
            ["name", "code"]
        );
        assert_eq!(problems(r#"{"name":"X","code":null}"#, true), ["code"]);
        assert_eq!(
            problems(r#"{"name":"X","code":"A","extra":1}"#, true),
            ["extra"]
        );
        assert!(problems(r#"{"metadata":[]}"#, false).is_empty());
    }

    #[test]
    fn an_update_keeps_the_code() {
        let existing = EntitlementBody::parse(br#"{"name":"Export","code":"PRO_EXPORT"}"#, true)
            .unwrap()
            .into_new(TeamId::new(), Timestamp::from_millis(0));
        let same = EntitlementBody::parse(br#"{"name":"PDF","code":"PRO_EXPORT"}"#, false).unwrap();
        let next = same.apply_to(&existing, Timestamp::from_millis(5)).unwrap();
        assert_eq!(
            (next.name.as_str(), next.code.as_str()),
            ("PDF", "PRO_EXPORT")
        );
        let other = EntitlementBody::parse(br#"{"code":"OTHER"}"#, false).unwrap();
        assert!(
            other
                .apply_to(&existing, Timestamp::from_millis(5))
                .is_err()
        );
    }
}
