use serde::{Deserialize, Serialize};

use super::{MAX_IDS, Patch, finish, future_date, id_list, not_null, parse_json, present};
use crate::error::{ApiError, Validator};
use crate::model::{BlacklistType, ProductRestriction, Scope, Scopes, TeamFeatures, TeamSettings};
use crate::validate::{Country, HardwareId, text};
use crate::verify::parse_ip_or_net;
use crate::{ProductId, Timestamp};

/// Longest team timeout, in minutes (ten years).
pub(crate) const MAX_TIMEOUT_MINUTES: i64 = 5_256_000;

/// `PATCH …/hwid/{id}` and `…/ip-address/{id}`: `{forgotten: boolean}`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"forgotten": true})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForgottenBody {
    /// `forgotten`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forgotten: Option<bool>,
}

impl ForgottenBody {
    /// The requested `forgotten` value.
    pub fn parse(body: &[u8]) -> Result<bool, ApiError> {
        parse_json::<Self>(body)?.validate()
    }

    /// The requested `forgotten` value (400 when missing).
    pub fn validate(self) -> Result<bool, ApiError> {
        self.forgotten
            .ok_or_else(|| ApiError::bad_field("forgotten", "is required (true or false)"))
    }
}

/// (ext) `PUT {dev}/settings`: members left out keep their value.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"strictCustomers": false, "strictProducts": true, "strictReleases": false, "hwidTimeout": 1440, "ipTimeout": null})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsBody {
    /// `strictCustomers`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub strict_customers: Patch<bool>,
    /// `strictProducts`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub strict_products: Patch<bool>,
    /// `strictReleases`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub strict_releases: Patch<bool>,
    /// `requireHardwareIdentifier` (default `true`): a verify or checkout of a license with an
    /// `hwidLimit` must send `hardwareIdentifier` (400 otherwise). `false`, for clients that send
    /// none: such a verify passes the device limit, records no device, and answers
    /// `hardwareIdentifierChecked: false`. A license without an `hwidLimit` never needs one;
    /// heartbeats and session starts always do.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub require_hardware_identifier: Patch<bool>,
    /// `hwidTimeout`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub hwid_timeout: Patch<i64>,
    /// `ipTimeout`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub ip_timeout: Patch<i64>,
    /// (ext) `sessionTtl`: seconds a floating session lives without a heartbeat, for licenses
    /// that set none (10 to 86,400).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_ttl: Patch<i64>,
    /// (ext) `maxLiveSessionsPerLicense`: live floating sessions one license may hold
    /// (1 to 100,000; default 1,000).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub max_live_sessions_per_license: Patch<i64>,
    /// (ext) `checkoutEnabled`: whether checkout issues license files (default `true`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub checkout_enabled: Patch<bool>,
    /// (ext) `checkoutMaxTtl`: the longest life of a checked-out file, in seconds (3,600 to
    /// 315,360,000; default 2,592,000).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub checkout_max_ttl: Patch<i64>,
    /// (ext) `portalEnabled`: whether the team's customer portal is open (default `false`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub portal_enabled: Patch<bool>,
    /// (ext) `portalSignIn`: how customers sign in to the portal, any of `"email"` and
    /// `"licenseKey"` (default both; may be empty, leaving only links minted by the vendor).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub portal_sign_in: Patch<Vec<String>>,
}

impl SettingsBody {
    /// Parses the body and applies it to the current settings.
    pub fn apply(body: &[u8], current: &TeamSettings) -> Result<TeamSettings, ApiError> {
        parse_json::<Self>(body)?.apply_to(current)
    }

    /// Validates the members given and applies them to the current settings.
    pub fn apply_to(self, current: &TeamSettings) -> Result<TeamSettings, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let mut next = current.clone();
        if let Some(b) = not_null(&mut v, "strictCustomers", raw.strict_customers) {
            next.strict_customers = b;
        }
        if let Some(b) = not_null(&mut v, "strictProducts", raw.strict_products) {
            next.strict_products = b;
        }
        if let Some(b) = not_null(&mut v, "strictReleases", raw.strict_releases) {
            next.strict_releases = b;
        }
        if let Some(b) = not_null(
            &mut v,
            "requireHardwareIdentifier",
            raw.require_hardware_identifier,
        ) {
            next.require_hardware_identifier = b;
        }
        for (field, patch, slot) in [
            ("hwidTimeout", raw.hwid_timeout, &mut next.hwid_timeout),
            ("ipTimeout", raw.ip_timeout, &mut next.ip_timeout),
        ] {
            match patch {
                Patch::Missing => {}
                Patch::Null => *slot = None,
                Patch::Value(m) => *slot = v.check(field, super::int_in(m, 1, MAX_TIMEOUT_MINUTES)),
            }
        }
        if let Some(ttl) = not_null(&mut v, "sessionTtl", raw.session_ttl)
            && let Some(ttl) = v.check("sessionTtl", super::license::session_ttl_in(ttl))
        {
            next.session_ttl = ttl;
        }
        if let Some(cap) = not_null(
            &mut v,
            "maxLiveSessionsPerLicense",
            raw.max_live_sessions_per_license,
        ) && let Some(cap) = v.check(
            "maxLiveSessionsPerLicense",
            super::int_in(cap, 1, i64::from(crate::model::MAX_LIVE_SESSIONS_CAP)),
        ) {
            next.max_live_sessions_per_license = cap;
        }
        if let Some(b) = not_null(&mut v, "checkoutEnabled", raw.checkout_enabled) {
            next.checkout_enabled = b;
        }
        if let Some(ttl) = not_null(&mut v, "checkoutMaxTtl", raw.checkout_max_ttl)
            && let Some(ttl) = v.check("checkoutMaxTtl", crate::api::file_ttl(ttl))
        {
            next.checkout_max_ttl = ttl;
        }
        if let Some(b) = not_null(&mut v, "portalEnabled", raw.portal_enabled) {
            next.portal_enabled = b;
        }
        match raw.portal_sign_in {
            Patch::Missing => {}
            Patch::Null => next.portal_sign_in = crate::model::PortalSignIn::ALL.to_vec(),
            Patch::Value(ways) => {
                let mut chosen = Vec::new();
                for way in &ways {
                    match crate::model::PortalSignIn::ALL
                        .into_iter()
                        .find(|w| w.as_str() == way)
                    {
                        Some(w) if !chosen.contains(&w) => chosen.push(w),
                        Some(_) => {}
                        None => {
                            v.push(
                                "portalSignIn",
                                format!("has {way:?}: each must be \"email\" or \"licenseKey\""),
                            );
                        }
                    }
                }
                next.portal_sign_in = chosen;
            }
        }
        finish(v)?;
        Ok(next)
    }
}

/// (ext) `POST {dev}/blacklist`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"type": "IP", "value": "203.0.113.0/24"})))]
#[serde(deny_unknown_fields)]
pub struct BlacklistBody {
    /// `type`.
    #[serde(skip_serializing_if = "Option::is_none", default, rename = "type")]
    pub kind: Option<String>,
    /// `value`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub value: Option<String>,
}

/// A validated blacklist entry: the value normalized (an address or range in canonical form, a
/// country code in upper case).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlacklistInput {
    /// What it matches.
    pub kind: BlacklistType,
    /// The normalized value.
    pub value: String,
}

impl BlacklistBody {
    /// Parses and validates the entry.
    pub fn parse(body: &[u8]) -> Result<BlacklistInput, ApiError> {
        parse_json::<Self>(body)?.validate()
    }

    /// Validates the entry.
    pub fn validate(self) -> Result<BlacklistInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let kind = v.required("type", raw.kind, |t| {
            super::one_of(
                t,
                &[
                    ("IP", BlacklistType::Ip),
                    ("COUNTRY", BlacklistType::Country),
                    ("HARDWARE_IDENTIFIER", BlacklistType::HardwareIdentifier),
                ],
            )
        });
        let value = match (kind, raw.value) {
            (_, None) => {
                v.push("value", "is required");
                None
            }
            (None, Some(_)) => None,
            (Some(kind), Some(text)) => v.check("value", normalize(kind, &text)),
        };
        finish(v)?;
        Ok(BlacklistInput {
            kind: present(kind)?,
            value: present(value)?,
        })
    }
}

fn normalize(kind: BlacklistType, text: &str) -> Result<String, String> {
    match kind {
        BlacklistType::Ip => parse_ip_or_net(text.trim()).map(|net| {
            if net.prefix_len() == net.max_prefix_len() {
                net.addr().to_string()
            } else {
                net.to_string()
            }
        }),
        BlacklistType::Country => {
            Country::from_code(text.trim()).map(|_| text.trim().to_ascii_uppercase())
        }
        BlacklistType::HardwareIdentifier => HardwareId::parse(text).map(HardwareId::into_string),
    }
}

/// (ext) `POST {dev}/api-keys`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "shop backend", "expiresAt": "2027-11-22T00:00:00.000Z", "scopes": ["licenses:write", "customers:read"], "productIds": ["6f9619ff-8b86-4011-b42d-00c04fc964ff"]})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeyBody {
    /// `name`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    /// `expiresAt`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expires_at: Option<String>,
    /// `scopes`: `resource:read`, `resource:write` (includes read), `resource:*`, or `*`; left
    /// out: every scope (of the creating key, which must have them).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scopes: Option<Vec<String>>,
    /// `productIds`: restrict the key to these products; left out or `null`: every product.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub product_ids: Option<Vec<String>>,
}

/// A validated API key request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKeyInput {
    /// A name to recognize it by.
    pub name: String,
    /// When it stops working.
    pub expires_at: Option<Timestamp>,
    /// What it may do.
    pub scopes: Scopes,
    /// The products it is restricted to.
    pub product_ids: ProductRestriction,
}

impl ApiKeyBody {
    /// A body for a key named `name`, with every scope of the key that creates it.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }

    /// Grants only these scopes.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = Scope>) -> Self {
        self.scopes = Some(scopes.into_iter().map(|s| s.name()).collect());
        self
    }

    /// Restricts the key to these products.
    pub fn for_products(mut self, products: impl IntoIterator<Item = ProductId>) -> Self {
        self.product_ids = Some(products.into_iter().map(|p| p.to_string()).collect());
        self
    }

    /// Makes the key stop working at `at`.
    pub fn expiring_at(mut self, at: Timestamp) -> Self {
        self.expires_at = Some(at.to_string());
        self
    }

    /// Parses and validates; `now` decides what "future" means.
    pub fn parse(body: &[u8], now: Timestamp) -> Result<ApiKeyInput, ApiError> {
        parse_json::<Self>(body)?.validate(now)
    }

    /// Validates; `now` decides what "future" means.
    pub fn validate(self, now: Timestamp) -> Result<ApiKeyInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let name = v.required("name", raw.name, |t| text(t, 1, 255));
        let expires_at = v
            .optional("expiresAt", raw.expires_at, |t| future_date(t, now))
            .flatten();
        let scopes = match &raw.scopes {
            None => Some(Scopes::All),
            Some(list) => v.check("scopes", Scopes::parse(list)),
        };
        let product_ids = match &raw.product_ids {
            None => None,
            Some(list) if list.is_empty() => {
                v.push(
                    "productIds",
                    "must name at least one product (leave it out for every product)",
                );
                None
            }
            Some(list) => Some(id_list(&mut v, "productIds", list, MAX_IDS)),
        };
        finish(v)?;
        Ok(ApiKeyInput {
            name: present(name)?,
            expires_at,
            scopes: present(scopes)?,
            product_ids,
        })
    }
}

/// Admin `POST /api/v1/admin/teams`: `{name}`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Acme Software"})))]
#[serde(deny_unknown_fields)]
pub struct AdminTeamBody {
    /// `name`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
}

impl AdminTeamBody {
    /// The team name.
    pub fn parse(body: &[u8]) -> Result<String, ApiError> {
        let raw: Self = parse_json(body)?;
        let mut v = Validator::new();
        let name = v.required("name", raw.name, |t| text(t, 1, 255));
        finish(v)?;
        present(name)
    }
}

/// Admin `POST /api/v1/admin/teams/{teamId}/users`: `{email, role}`, a staff account of the
/// dashboard.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"email": "ann@example.com", "role": "support"})))]
#[serde(deny_unknown_fields)]
pub struct StaffBody {
    /// `email`: the address the account signs in with.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email: Option<String>,
    /// `role`: `owner`, `admin`, `developer`, `support` or `viewer`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role: Option<String>,
}

impl StaffBody {
    /// The address (as given; the service lower-cases and checks it) and the role.
    pub fn parse(body: &[u8]) -> Result<(String, crate::model::Role), ApiError> {
        let raw: Self = parse_json(body)?;
        let mut v = Validator::new();
        let email = v.required("email", raw.email, |t| text(t, 3, 254));
        let role = v.required("role", raw.role, crate::model::Role::parse);
        finish(v)?;
        Ok((present(email)?, present(role)?))
    }
}

/// Admin `POST /api/v1/admin/teams/{teamId}/password-links`: `{email}`, the account that gets a
/// new set-password link (a forgotten password, on a running server).
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"email": "owner@example.com"})))]
#[serde(deny_unknown_fields)]
pub struct PasswordLinkBody {
    /// `email`: the address the account signs in with.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email: Option<String>,
}

impl PasswordLinkBody {
    /// The address (as given; the service lower-cases it and finds the account).
    pub fn parse(body: &[u8]) -> Result<String, ApiError> {
        let raw: Self = parse_json(body)?;
        let mut v = Validator::new();
        let email = v.required("email", raw.email, |t| text(t, 3, 254));
        finish(v)?;
        present(email)
    }
}

/// Admin `PUT /api/v1/admin/teams/{teamId}/features`: `{classloader}`.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"classloader": true})))]
#[serde(deny_unknown_fields)]
pub struct FeaturesBody {
    /// `classloader`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub classloader: Option<bool>,
}

impl FeaturesBody {
    /// The requested features.
    pub fn parse(body: &[u8]) -> Result<TeamFeatures, ApiError> {
        let raw: Self = parse_json(body)?;
        let classloader = raw
            .classloader
            .ok_or_else(|| ApiError::bad_field("classloader", "is required (true or false)"))?;
        Ok(TeamFeatures { classloader })
    }
}

#[cfg(test)]
mod tests {
    use super::super::problems;
    use super::*;

    #[test]
    fn forgotten() {
        assert!(ForgottenBody::parse(br#"{"forgotten":true}"#).unwrap());
        let e = ForgottenBody::parse(br#"{}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [("forgotten".into(), "is required (true or false)".into())]
        );
        let e = ForgottenBody::parse(br#"{"forgotten":"yes"}"#).unwrap_err();
        assert_eq!(problems(&e)[0].0, "forgotten");
    }

    /// serde_json's reader stops after the value; without `end()` anything after it passed.
    #[test]
    fn anything_after_the_json_value_is_refused() {
        for body in [
            &br#"{"name":"Team"} garbage"#[..],
            br#"{"name":"Team"}{}"#,
            br#"{"name":"Team"}}"#,
            br#"{"name":"Team"},"#,
        ] {
            let e = AdminTeamBody::parse(body).unwrap_err();
            assert_eq!(
                problems(&e)[0].0,
                "body",
                "{}",
                String::from_utf8_lossy(body)
            );
            assert!(SettingsBody::apply(body, &TeamSettings::default()).is_err());
        }
        // Trailing whitespace is no value.
        assert_eq!(
            AdminTeamBody::parse(b"{\"name\":\"Team\"} \r\n\t").unwrap(),
            "Team"
        );
    }

    #[test]
    fn settings() {
        let s = SettingsBody::apply(
            br#"{"strictCustomers":true,"hwidTimeout":60}"#,
            &TeamSettings::default(),
        )
        .unwrap();
        assert!(s.strict_customers && !s.strict_products);
        assert_eq!(s.hwid_timeout, Some(60));
        let s = SettingsBody::apply(br#"{"hwidTimeout":null}"#, &s).unwrap();
        assert_eq!((s.hwid_timeout, s.strict_customers), (None, true));
        let e = SettingsBody::apply(br#"{"ipTimeout":0,"strictReleases":null}"#, &s).unwrap_err();
        assert_eq!(
            problems(&e),
            [
                ("strictReleases".into(), "must not be null".into()),
                ("ipTimeout".into(), "must be at least 1 (got 0)".into())
            ]
        );
    }

    #[test]
    fn blacklist_values_are_validated_and_normalized() {
        let ok: &[(&str, &str, &str)] = &[
            ("IP", "203.0.113.7", "203.0.113.7"),
            ("IP", "203.0.113.7/24", "203.0.113.0/24"),
            ("IP", "2001:DB8::1", "2001:db8::1"),
            ("IP", "2001:db8::/32", "2001:db8::/32"),
            ("COUNTRY", "fi", "FI"),
            ("COUNTRY", "FIN", "FIN"),
            ("HARDWARE_IDENTIFIER", "device-0001", "device-0001"),
        ];
        for (kind, value, normalized) in ok {
            let body = format!(r#"{{"type":"{kind}","value":"{value}"}}"#);
            assert_eq!(
                BlacklistBody::parse(body.as_bytes()).unwrap().value,
                *normalized
            );
        }
        let bad: &[(&str, &str, &str, &str)] = &[
            (
                "IP",
                "300.1.1.1",
                "value",
                "must be an IP address or a CIDR range, such as 203.0.113.7 or 2001:db8::/32",
            ),
            (
                "COUNTRY",
                "Finland",
                "value",
                "must be an ISO 3166-1 alpha-2 or alpha-3 country code, such as FI or FIN",
            ),
            (
                "HARDWARE_IDENTIFIER",
                "short",
                "value",
                "must be 10 to 1000 characters long (got 5)",
            ),
            (
                "EMAIL",
                "x",
                "type",
                "must be one of IP, COUNTRY, HARDWARE_IDENTIFIER",
            ),
        ];
        for (kind, value, field, message) in bad {
            let body = format!(r#"{{"type":"{kind}","value":"{value}"}}"#);
            let e = BlacklistBody::parse(body.as_bytes()).unwrap_err();
            assert_eq!(
                problems(&e),
                [(field.to_string(), message.to_string())],
                "{body}"
            );
        }
    }

    #[test]
    fn api_keys_and_admin_bodies() {
        let now = Timestamp::parse("2026-11-22T10:00:00Z").unwrap();
        let k =
            ApiKeyBody::parse(br#"{"name":"ci","expiresAt":"2027-01-01T00:00:00Z"}"#, now).unwrap();
        assert_eq!(k.name, "ci");
        let e = ApiKeyBody::parse(br#"{"expiresAt":"2020-01-01T00:00:00Z"}"#, now).unwrap_err();
        assert_eq!(
            problems(&e),
            [
                ("name".into(), "is required".into()),
                ("expiresAt".into(), "must be in the future".into())
            ]
        );
        assert_eq!(AdminTeamBody::parse(br#"{"name":"Acme"}"#).unwrap(), "Acme");
        assert_eq!(
            problems(&AdminTeamBody::parse(br#"{"name":""}"#).unwrap_err())[0].0,
            "name"
        );
        assert!(
            !FeaturesBody::parse(br#"{"classloader":false}"#)
                .unwrap()
                .classloader
        );
        assert_eq!(
            problems(&FeaturesBody::parse(br#"{}"#).unwrap_err())[0].0,
            "classloader"
        );
    }
}
