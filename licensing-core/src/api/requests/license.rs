use serde::{Deserialize, Serialize};

use super::{
    MAX_DAYS, MAX_IDS, MAX_LIMIT, Patch, RawMetadata, finish, future_date, id_list, int_in,
    metadata, not_null, one_of, parse_json, present,
};
use crate::error::{ApiError, Validator};
use crate::expiry::{self, Expiration};
use crate::model::{ExpirationStart, ExpirationType, License, MAX_ENTITLEMENTS, MetadataItem};
use crate::{
    CustomerId, EntitlementId, LicenseId, LicenseKey, ProductId, TeamId, Timestamp, UserId,
};

const TYPES: [(&str, ExpirationType); 3] = [
    ("NEVER", ExpirationType::Never),
    ("DATE", ExpirationType::Date),
    ("DURATION", ExpirationType::Duration),
];
const STARTS: [(&str, ExpirationStart); 2] = [
    ("CREATION", ExpirationStart::Creation),
    ("ACTIVATION", ExpirationStart::Activation),
];

/// `POST {dev}/licenses` as it arrives.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"expirationType": "DURATION", "expirationDays": 365, "hwidLimit": 2, "ipLimit": 5, "productIds": ["6f9619ff-8b86-4011-b42d-00c04fc964ff"], "customerIds": [], "metadata": [{"key": "tier", "value": "pro", "locked": false}], "sendEmailDelivery": false})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LicenseCreate {
    /// `customerIds`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub customer_ids: Option<Vec<String>>,
    /// `productIds`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub product_ids: Option<Vec<String>>,
    /// (ext) `entitlementIds`: entitlements granted directly.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub entitlement_ids: Option<Vec<String>>,
    /// `expirationType`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expiration_type: Option<String>,
    /// `expirationStart`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expiration_start: Option<String>,
    /// `expirationDate`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expiration_date: Option<String>,
    /// `expirationDays`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expiration_days: Option<i64>,
    /// `ipLimit`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ip_limit: Option<i64>,
    /// `hwidLimit`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hwid_limit: Option<i64>,
    /// (ext) `sessionLimit`: the most floating sessions live at once.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session_limit: Option<i64>,
    /// (ext) `sessionTtl`: seconds a session lives without a heartbeat.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session_ttl: Option<i64>,
    /// `suspended`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub suspended: Option<bool>,
    /// `sendEmailDelivery`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub send_email_delivery: Option<bool>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<Vec<RawMetadata>>,
}

/// A validated license create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewLicense {
    /// Customers to associate (must exist).
    pub customer_ids: Vec<CustomerId>,
    /// Products to associate (must exist).
    pub product_ids: Vec<ProductId>,
    /// Entitlements granted directly (must exist).
    pub entitlement_ids: Vec<EntitlementId>,
    /// Expiration members.
    pub expiration: Expiration,
    /// IP limit; `None` unlimited.
    pub ip_limit: Option<u32>,
    /// Hardware-identifier limit; `None` unlimited.
    pub hwid_limit: Option<u32>,
    /// Floating-session limit; `None` unlimited.
    pub session_limit: Option<u32>,
    /// Session TTL; `None`: the team's.
    pub session_ttl: Option<u32>,
    /// Create suspended.
    pub suspended: bool,
    /// E-mail the key to the customers.
    pub send_email_delivery: bool,
    /// Metadata.
    pub metadata: Vec<MetadataItem>,
}

/// A session TTL in seconds, within the range every TTL keeps to.
pub(crate) fn session_ttl_in(seconds: i64) -> Result<u32, String> {
    int_in(
        seconds,
        i64::from(crate::model::MIN_SESSION_TTL),
        i64::from(crate::model::MAX_SESSION_TTL),
    )
}

/// Validates the expiration members together. `date_given`/`days_given` say whether the body
/// carried them (a `NEVER` license takes none of the three).
fn check_expiration(
    v: &mut Validator,
    kind: ExpirationType,
    start: Option<ExpirationStart>,
    date: Option<Timestamp>,
    days: Option<u32>,
    given: (bool, bool, bool),
) {
    let (start_given, date_given, days_given) = given;
    match kind {
        ExpirationType::Never => {
            for (given, field) in [
                (start_given, "expirationStart"),
                (date_given, "expirationDate"),
                (days_given, "expirationDays"),
            ] {
                if given {
                    v.push(field, "must not be set when expirationType is NEVER");
                }
            }
        }
        ExpirationType::Date => {
            if date.is_none() && !date_given {
                v.push("expirationDate", "is required when expirationType is DATE");
            }
            if days_given {
                v.push(
                    "expirationDays",
                    "is only used when expirationType is DURATION",
                );
            }
            if start == Some(ExpirationStart::Activation) {
                v.push(
                    "expirationStart",
                    "ACTIVATION is only used when expirationType is DURATION",
                );
            }
        }
        ExpirationType::Duration => {
            if days.is_none() && !days_given {
                v.push(
                    "expirationDays",
                    "is required when expirationType is DURATION",
                );
            }
            if date_given {
                v.push("expirationDate", "is only used when expirationType is DATE");
            }
        }
    }
}

impl LicenseCreate {
    /// Parses and validates a create body; `now` decides what "future" means.
    pub fn parse(body: &[u8], now: Timestamp) -> Result<NewLicense, ApiError> {
        parse_json::<Self>(body)?.validate(now)
    }

    /// Validates a create body; `now` decides what "future" means.
    pub fn validate(self, now: Timestamp) -> Result<NewLicense, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let customer_ids = id_list(
            &mut v,
            "customerIds",
            &raw.customer_ids.unwrap_or_default(),
            MAX_IDS,
        );
        let product_ids = id_list(
            &mut v,
            "productIds",
            &raw.product_ids.unwrap_or_default(),
            MAX_IDS,
        );
        let entitlement_ids = id_list(
            &mut v,
            "entitlementIds",
            &raw.entitlement_ids.unwrap_or_default(),
            MAX_ENTITLEMENTS,
        );
        let kind = v.required("expirationType", raw.expiration_type.as_deref(), |t| {
            one_of(t, &TYPES)
        });
        let start = v
            .optional("expirationStart", raw.expiration_start.as_deref(), |t| {
                one_of(t, &STARTS)
            })
            .flatten();
        let date = v
            .optional("expirationDate", raw.expiration_date.as_deref(), |t| {
                future_date(t, now)
            })
            .flatten();
        let days = raw
            .expiration_days
            .and_then(|d| v.check("expirationDays", int_in(d, 1, MAX_DAYS)));
        let ip_limit = raw
            .ip_limit
            .and_then(|l| v.check("ipLimit", int_in(l, 0, MAX_LIMIT)));
        let hwid_limit = raw
            .hwid_limit
            .and_then(|l| v.check("hwidLimit", int_in(l, 1, MAX_LIMIT)));
        let session_limit = raw
            .session_limit
            .and_then(|l| v.check("sessionLimit", int_in(l, 1, MAX_LIMIT)));
        let session_ttl = raw
            .session_ttl
            .and_then(|t| v.check("sessionTtl", session_ttl_in(t)));
        let metadata = metadata(&mut v, "metadata", raw.metadata.unwrap_or_default());
        if let Some(kind) = kind {
            check_expiration(
                &mut v,
                kind,
                start,
                date,
                days,
                (
                    raw.expiration_start.is_some(),
                    raw.expiration_date.is_some(),
                    raw.expiration_days.is_some(),
                ),
            );
        }
        finish(v)?;
        let kind = present(kind)?;
        Ok(NewLicense {
            customer_ids,
            product_ids,
            entitlement_ids,
            expiration: Expiration {
                kind,
                start: start.unwrap_or_default(),
                date,
                days,
            },
            ip_limit: ip_limit.filter(|&l| l > 0),
            hwid_limit,
            session_limit,
            session_ttl,
            suspended: raw.suspended.unwrap_or(false),
            send_email_delivery: raw.send_email_delivery.unwrap_or(false),
            metadata,
        })
    }
}

impl NewLicense {
    /// The license record, with its expiration date computed at `now`.
    pub fn into_license(
        self,
        key: LicenseKey,
        team_id: TeamId,
        by: UserId,
        now: Timestamp,
    ) -> License {
        let e = self.expiration;
        License {
            id: LicenseId::new(),
            license_key: key,
            expiration_type: e.kind,
            expiration_start: e.start,
            expiration_date: expiry::date_on_create(e.kind, e.start, e.date, e.days, now),
            expiration_days: if e.kind == ExpirationType::Duration {
                e.days
            } else {
                None
            },
            suspended: self.suspended,
            ip_limit: self.ip_limit,
            hwid_limit: self.hwid_limit,
            metadata: self.metadata,
            team_id,
            created_by_user_id: by,
            created_at: now,
            updated_at: now,
            last_active_at: None,
            customer_ids: self.customer_ids,
            product_ids: self.product_ids,
            entitlement_ids: self.entitlement_ids,
            session_limit: self.session_limit,
            session_ttl: self.session_ttl,
        }
    }
}

/// `PUT {dev}/licenses/id/{licenseId}`: members left out keep their value, `null` clears a
/// nullable one.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"suspended": true, "hwidLimit": null})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LicenseUpdate {
    /// `licenseKey`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub license_key: Patch<String>,
    /// `expirationType`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expiration_type: Patch<String>,
    /// `expirationStart`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expiration_start: Patch<String>,
    /// `expirationDate`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expiration_date: Patch<String>,
    /// `expirationDays`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub expiration_days: Patch<i64>,
    /// `suspended`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>))]
    pub suspended: Patch<bool>,
    /// `productIds`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub product_ids: Patch<Vec<String>>,
    /// `customerIds`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub customer_ids: Patch<Vec<String>>,
    /// (ext) `entitlementIds`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub entitlement_ids: Patch<Vec<String>>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
    /// `hwidLimit`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub hwid_limit: Patch<i64>,
    /// `ipLimit`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub ip_limit: Patch<i64>,
    /// (ext) `sessionLimit`; `null`: sessions are not limited.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_limit: Patch<i64>,
    /// (ext) `sessionTtl`; `null`: the team's.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_ttl: Patch<i64>,
}

impl LicenseUpdate {
    /// Checks that a body parses (JSON object, known members, right types) without the stored
    /// license: the server answers these 400s before it looks the license up (404).
    pub fn check_syntax(body: &[u8]) -> Result<(), ApiError> {
        parse_json::<Self>(body).map(|_| ())
    }

    /// Parses an update body and applies it to `existing`, returning the updated record (its
    /// `licenseKey` may have changed: the store checks that the new one is free, and that the
    /// customers and products exist).
    pub fn apply(body: &[u8], existing: &License, now: Timestamp) -> Result<License, ApiError> {
        parse_json::<Self>(body)?.apply_to(existing, now)
    }

    /// Validates the members given and applies them to `existing` (see [`apply`](Self::apply)).
    pub fn apply_to(self, existing: &License, now: Timestamp) -> Result<License, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        let mut next = existing.clone();
        if let Some(text) = not_null(&mut v, "licenseKey", raw.license_key)
            && let Some(key) = v.check("licenseKey", LicenseKey::parse(&text))
        {
            next.license_key = key;
        }
        let kind = not_null(&mut v, "expirationType", raw.expiration_type)
            .and_then(|t| v.check("expirationType", one_of(&t, &TYPES)));
        let start_given = raw.expiration_start.is_present();
        let start_value = matches!(raw.expiration_start, Patch::Value(_));
        let start = match raw.expiration_start {
            Patch::Missing => None,
            Patch::Null => Some(ExpirationStart::Creation),
            Patch::Value(t) => v.check("expirationStart", one_of(&t, &STARTS)),
        };
        let date_given = raw.expiration_date.is_present();
        let date_value = matches!(raw.expiration_date, Patch::Value(_));
        let date = match &raw.expiration_date {
            Patch::Value(t) => v.check("expirationDate", future_date(t, now)),
            _ => None,
        };
        let days_given = raw.expiration_days.is_present();
        let days_value = matches!(raw.expiration_days, Patch::Value(_));
        let days = match raw.expiration_days {
            Patch::Value(d) => v.check("expirationDays", int_in(d, 1, MAX_DAYS)),
            _ => None,
        };
        if let Some(s) = not_null(&mut v, "suspended", raw.suspended) {
            next.suspended = s;
        }
        if let Some(ids) = not_null(&mut v, "productIds", raw.product_ids) {
            next.product_ids = id_list(&mut v, "productIds", &ids, MAX_IDS);
        }
        if let Some(ids) = not_null(&mut v, "customerIds", raw.customer_ids) {
            next.customer_ids = id_list(&mut v, "customerIds", &ids, MAX_IDS);
        }
        if let Some(ids) = not_null(&mut v, "entitlementIds", raw.entitlement_ids) {
            next.entitlement_ids = id_list(&mut v, "entitlementIds", &ids, MAX_ENTITLEMENTS);
        }
        if let Some(items) = not_null(&mut v, "metadata", raw.metadata) {
            next.metadata = metadata(&mut v, "metadata", items);
        }
        match raw.hwid_limit {
            Patch::Missing => {}
            Patch::Null => next.hwid_limit = None,
            Patch::Value(l) => next.hwid_limit = v.check("hwidLimit", int_in(l, 1, MAX_LIMIT)),
        }
        match raw.ip_limit {
            Patch::Missing => {}
            Patch::Null => next.ip_limit = None,
            Patch::Value(l) => next.ip_limit = v.check("ipLimit", int_in(l, 1, MAX_LIMIT)),
        }
        match raw.session_limit {
            Patch::Missing => {}
            Patch::Null => next.session_limit = None,
            Patch::Value(l) => {
                next.session_limit = v.check("sessionLimit", int_in(l, 1, MAX_LIMIT));
            }
        }
        match raw.session_ttl {
            Patch::Missing => {}
            Patch::Null => next.session_ttl = None,
            Patch::Value(t) => next.session_ttl = v.check("sessionTtl", session_ttl_in(t)),
        }

        // Expiration: merge, check as a whole, recompute.
        if kind.is_some() || start_given || date_given || days_given {
            let old = Expiration::of(existing);
            let new_kind = kind.unwrap_or(old.kind);
            let kind_changed = new_kind != old.kind;
            // Values carried over from the stored license unless changed or cleared.
            let keep_date = !date_given && !kind_changed && new_kind == ExpirationType::Date;
            let keep_days = !days_given
                && new_kind == ExpirationType::Duration
                && old.kind == ExpirationType::Duration;
            let merged = Expiration {
                kind: new_kind,
                start: start.unwrap_or(if kind_changed {
                    ExpirationStart::Creation
                } else {
                    old.start
                }),
                date: if keep_date { old.date } else { date },
                days: if keep_days { old.days } else { days },
            };
            check_expiration(
                &mut v,
                new_kind,
                start,
                merged.date,
                merged.days,
                (start_value, date_value, days_value),
            );
            next.expiration_type = merged.kind;
            next.expiration_start = merged.start;
            next.expiration_days = merged.days.filter(|_| new_kind == ExpirationType::Duration);
            next.expiration_date = expiry::date_on_update(&old, &merged, existing.created_at);
        }
        finish(v)?;
        next.updated_at = now;
        Ok(next)
    }
}

/// (ext) `POST {dev}/licenses/id/{id}/extend`: `{"days": n}` moves the license's expiry `n` days
/// later (1 to 3650), the one change of a license the narrow scope `licenses:extend` allows.
#[derive(Debug, Deserialize, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"days": 30})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtendBody {
    /// Days to add: 1 to 3650.
    #[serde(default)]
    pub days: Option<i64>,
}

/// The most days one extension adds.
pub const MAX_EXTENSION_DAYS: i64 = 3650;

impl ExtendBody {
    /// `license` extended at `now`: a `DATE` license expires `days` after its date, or after
    /// `now` when that has passed (an expired license gets the whole extension); a `DURATION`
    /// license lasts `days` longer, counted from its start as before (its date moves with it
    /// once it has one). A license that never expires cannot be extended (400).
    pub fn apply_to(&self, license: &License, now: Timestamp) -> Result<License, ApiError> {
        let days = match self.days {
            None => return Err(ApiError::bad_field("days", "is required (1 to 3650)")),
            Some(d) => {
                int_in(d, 1, MAX_EXTENSION_DAYS).map_err(|e| ApiError::bad_field("days", &e))?
            }
        };
        let mut next = license.clone();
        match license.expiration_type {
            ExpirationType::Never => {
                return Err(ApiError::bad_field(
                    "days",
                    "cannot extend a license that never expires",
                ));
            }
            ExpirationType::Date => {
                let from = license.expiration_date.map_or(now, |d| d.max(now));
                next.expiration_date = Some(from.plus_days(days));
            }
            ExpirationType::Duration => {
                let total = i64::from(license.expiration_days.unwrap_or(0)) + i64::from(days);
                let total = int_in(total, 1, MAX_DAYS).map_err(|_| {
                    ApiError::bad_field(
                        "days",
                        &format!("would make the license last more than {MAX_DAYS} days"),
                    )
                })?;
                next.expiration_days = Some(total);
                next.expiration_date = expiry::date_on_update(
                    &Expiration::of(license),
                    &Expiration::of(&next),
                    license.created_at,
                );
            }
        }
        next.updated_at = now;
        Ok(next)
    }
}

#[cfg(test)]
#[path = "license_tests.rs"]
mod tests;
