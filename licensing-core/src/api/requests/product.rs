use serde::{Deserialize, Serialize};

use super::{Patch, RawMetadata, finish, id_list, metadata, not_null, parse_json, present};
use crate::error::{ApiError, Validator};
use crate::model::{MAX_ENTITLEMENTS, MetadataItem, Product, UpdateFeed};
use crate::validate::{BranchName, HttpUrl, text};
use crate::{EntitlementId, ProductId, TeamId, Timestamp, UserId};

/// (ext) `POST`/`PUT {dev}/products`.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "My App", "url": "https://example.com/app", "metadata": []})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProductBody {
    /// `name`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub name: Patch<String>,
    /// `url`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub url: Patch<String>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
    /// (ext) `entitlementIds`: the entitlements every license of the product grants.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub entitlement_ids: Patch<Vec<String>>,
    /// (ext) `updaterPublicKey`: the minisign public key every uploaded Tauri signature must
    /// verify with; `null` clears it.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub updater_public_key: Patch<String>,
    /// (ext) `sparklePublicKey`: Sparkle's `SUPublicEDKey` (base64 of 32 bytes) every uploaded
    /// `edSignature` must verify with; `null` clears it.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub sparkle_public_key: Patch<String>,
    /// (ext) `signUpdates`: the server signs each uploaded artifact with the team's signing key.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub sign_updates: Patch<bool>,
    /// (ext) `updateFeed`: `license` (the default: a valid license reads the feeds) or `public`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub update_feed: Patch<String>,
}

/// A validated product body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProductInput {
    /// Name (required on create).
    pub name: Option<String>,
    /// Homepage; `null` clears it.
    pub url: Patch<HttpUrl>,
    /// Metadata (replaces all items when given).
    pub metadata: Option<Vec<MetadataItem>>,
    /// Entitlements (replace all when given; must exist).
    pub entitlement_ids: Option<Vec<EntitlementId>>,
    /// The updater's minisign key (Tauri's `pubkey` form); `null` clears it.
    pub updater_public_key: Patch<String>,
    /// Sparkle's key (base64); `null` clears it.
    pub sparkle_public_key: Patch<String>,
    /// Whether the server signs artifacts.
    pub sign_updates: Option<bool>,
    /// Who reads the feeds.
    pub update_feed: Option<UpdateFeed>,
}

impl ProductBody {
    /// Parses and validates; `create` makes `name` required.
    pub fn parse(body: &[u8], create: bool) -> Result<ProductInput, ApiError> {
        parse_json::<Self>(body)?.validate(create)
    }

    /// Validates; `create` makes `name` required.
    pub fn validate(self, create: bool) -> Result<ProductInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let name = match raw.name {
            Patch::Missing if create => {
                v.push("name", "is required");
                None
            }
            other => {
                not_null(&mut v, "name", other).and_then(|n| v.check("name", text(&n, 1, 255)))
            }
        };
        let url = match raw.url {
            Patch::Missing => Patch::Missing,
            Patch::Null => Patch::Null,
            Patch::Value(u) => v
                .check("url", HttpUrl::parse(&u))
                .map_or(Patch::Missing, Patch::Value),
        };
        let metadata =
            not_null(&mut v, "metadata", raw.metadata).map(|m| metadata(&mut v, "metadata", m));
        let entitlement_ids = not_null(&mut v, "entitlementIds", raw.entitlement_ids)
            .map(|ids| id_list(&mut v, "entitlementIds", &ids, MAX_ENTITLEMENTS));
        // Keys are kept in one form: the minisign key as Tauri's `pubkey` setting holds it.
        let updater_public_key = match raw.updater_public_key {
            Patch::Value(text) => v
                .check(
                    "updaterPublicKey",
                    crate::crypto::updater::MinisignPublicKey::parse(&text),
                )
                .map_or(Patch::Missing, |k| Patch::Value(k.to_base64())),
            other => other,
        };
        let sparkle_public_key = match raw.sparkle_public_key {
            Patch::Value(text) => v
                .check(
                    "sparklePublicKey",
                    crate::crypto::updater::sparkle_key(&text),
                )
                .map_or(Patch::Missing, |k| {
                    Patch::Value(base64::Engine::encode(
                        &base64::engine::general_purpose::STANDARD,
                        k.as_bytes(),
                    ))
                }),
            other => other,
        };
        let sign_updates = not_null(&mut v, "signUpdates", raw.sign_updates);
        let update_feed = not_null(&mut v, "updateFeed", raw.update_feed)
            .and_then(|f| v.check("updateFeed", UpdateFeed::parse(&f)));
        finish(v)?;
        Ok(ProductInput {
            name,
            url,
            metadata,
            entitlement_ids,
            updater_public_key,
            sparkle_public_key,
            sign_updates,
            update_feed,
        })
    }
}

impl ProductInput {
    /// A new product (the body was parsed with `create`).
    pub fn into_new(self, team_id: TeamId, by: UserId, now: Timestamp) -> Product {
        Product {
            id: ProductId::new(),
            name: self.name.unwrap_or_default(),
            url: self.url.value().cloned(),
            metadata: self.metadata.unwrap_or_default(),
            entitlement_ids: self.entitlement_ids.unwrap_or_default(),
            updater_public_key: self.updater_public_key.value().cloned(),
            sparkle_public_key: self.sparkle_public_key.value().cloned(),
            sign_updates: self.sign_updates.unwrap_or(false),
            update_feed: self.update_feed.unwrap_or_default(),
            team_id,
            created_by_user_id: by,
            created_at: now,
            updated_at: now,
        }
    }

    /// The product after this update.
    pub fn apply_to(&self, existing: &Product, now: Timestamp) -> Product {
        let mut next = existing.clone();
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        match &self.url {
            Patch::Missing => {}
            Patch::Null => next.url = None,
            Patch::Value(u) => next.url = Some(u.clone()),
        }
        if let Some(items) = &self.metadata {
            next.metadata = items.clone();
        }
        if let Some(ids) = &self.entitlement_ids {
            next.entitlement_ids = ids.clone();
        }
        match &self.updater_public_key {
            Patch::Missing => {}
            Patch::Null => next.updater_public_key = None,
            Patch::Value(k) => next.updater_public_key = Some(k.clone()),
        }
        match &self.sparkle_public_key {
            Patch::Missing => {}
            Patch::Null => next.sparkle_public_key = None,
            Patch::Value(k) => next.sparkle_public_key = Some(k.clone()),
        }
        if let Some(sign) = self.sign_updates {
            next.sign_updates = sign;
        }
        if let Some(feed) = self.update_feed {
            next.update_feed = feed;
        }
        next.updated_at = now;
        next
    }
}

/// (ext) `POST {dev}/products/{productId}/branches`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "beta"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BranchBody {
    /// `name`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
}

impl BranchBody {
    /// Parses and validates the branch name.
    pub fn parse(body: &[u8]) -> Result<BranchName, ApiError> {
        parse_json::<Self>(body)?.validate()
    }

    /// Validates the branch name.
    pub fn validate(self) -> Result<BranchName, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let name = v.required("name", raw.name, BranchName::parse);
        finish(v)?;
        present(name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    #[test]
    fn product_rules() {
        let p = ProductBody::parse(br#"{"name":"App","url":"https://example.com"}"#, true).unwrap();
        assert_eq!(p.name.as_deref(), Some("App"));
        let cases: &[(&str, bool, &str, &str)] = &[
            (r#"{}"#, true, "name", "is required"),
            (
                r#"{"name":""}"#,
                true,
                "name",
                "must be 1 to 255 characters long (got 0)",
            ),
            (r#"{"name":null}"#, false, "name", "must not be null"),
            (
                r#"{"name":"A","url":"ftp://x"}"#,
                true,
                "url",
                "must be an absolute http:// or https:// URL such as https://example.com",
            ),
        ];
        for (body, create, field, message) in cases {
            let e = ProductBody::parse(body.as_bytes(), *create).unwrap_err();
            assert_eq!(
                problems(&e),
                [(field.to_string(), message.to_string())],
                "{body}"
            );
        }
        let now = Timestamp::parse("2026-11-22T10:00:00Z").unwrap();
        let product = p.into_new(TeamId::new(), UserId::ADMIN, now);
        let u = ProductBody::parse(br#"{"url":null}"#, false)
            .unwrap()
            .apply_to(&product, now);
        assert_eq!((u.name.as_str(), u.url), ("App", None));
    }

    #[test]
    fn branch_rules() {
        assert_eq!(
            BranchBody::parse(br#"{"name":"beta"}"#).unwrap().as_str(),
            "beta"
        );
        let e = BranchBody::parse(br#"{"name":"b/x"}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "name".into(),
                "must contain only letters A-Z and a-z, digits, '_' and '-'".into()
            )]
        );
        let e = BranchBody::parse(br#"{}"#).unwrap_err();
        assert_eq!(problems(&e), [("name".into(), "is required".into())]);
    }
}
