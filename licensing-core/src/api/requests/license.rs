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
mod tests {
    use super::super::problems;
    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T10:00:00Z").unwrap()
    }

    fn create(body: &str) -> Result<NewLicense, ApiError> {
        LicenseCreate::parse(body.as_bytes(), now())
    }

    fn license(body: &str) -> License {
        create(body).unwrap().into_license(
            LicenseKey::generate(),
            TeamId::new(),
            UserId::ADMIN,
            now(),
        )
    }

    #[test]
    fn minimal_create_needs_only_the_type() {
        let l = license(r#"{"expirationType":"NEVER"}"#);
        assert_eq!(l.expiration_type, ExpirationType::Never);
        assert_eq!(
            (l.expiration_date, l.ip_limit, l.hwid_limit, l.suspended),
            (None, None, None, false)
        );
    }

    #[test]
    fn create_computes_the_date() {
        let l = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
        assert_eq!(l.expiration_date, Some(now().plus_days(30)));
        let l = license(
            r#"{"expirationType":"DURATION","expirationDays":30,"expirationStart":"ACTIVATION"}"#,
        );
        assert_eq!(l.expiration_date, None);
        let l = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
        assert_eq!(
            l.expiration_date,
            Some(Timestamp::parse("2027-01-01T00:00:00Z").unwrap())
        );
    }

    #[test]
    fn an_extension_moves_the_expiry_later_and_only_later() {
        let extend = |days: i64| ExtendBody { days: Some(days) };
        let later = now().plus_days(100);
        // A date in the future moves by the days; one passed counts from now.
        let dated = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
        let moved = extend(30).apply_to(&dated, now()).unwrap();
        assert_eq!(
            moved.expiration_date,
            Some(Timestamp::parse("2027-01-31T00:00:00Z").unwrap())
        );
        assert_eq!(moved.updated_at, now());
        let expired =
            extend(30).apply_to(&dated, Timestamp::parse("2027-03-01T00:00:00Z").unwrap());
        assert_eq!(
            expired.unwrap().expiration_date,
            Some(Timestamp::parse("2027-03-31T00:00:00Z").unwrap())
        );
        // A duration lasts longer, from its start: creation, or the first use once there was one.
        let lasting = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
        let longer = extend(10).apply_to(&lasting, later).unwrap();
        assert_eq!(longer.expiration_days, Some(40));
        assert_eq!(longer.expiration_date, Some(now().plus_days(40)));
        let waiting = license(
            r#"{"expirationType":"DURATION","expirationDays":30,"expirationStart":"ACTIVATION"}"#,
        );
        let longer = extend(10).apply_to(&waiting, later).unwrap();
        assert_eq!(
            (longer.expiration_days, longer.expiration_date),
            (Some(40), None)
        );
        let mut started = waiting.clone();
        started.expiration_date = Some(now().plus_days(31));
        let longer = extend(10).apply_to(&started, later).unwrap();
        assert_eq!(longer.expiration_date, Some(now().plus_days(41)));
        // What cannot be extended, by how much.
        let never = license(r#"{"expirationType":"NEVER"}"#);
        for (body, l, message) in [
            (ExtendBody { days: None }, &dated, "is required"),
            (extend(0), &dated, "at least 1"),
            (extend(3651), &dated, "at most 3650"),
            (extend(30), &never, "never expires"),
        ] {
            let e = body.apply_to(l, now()).unwrap_err();
            let (field, text) = problems(&e).remove(0);
            assert_eq!(field, "days");
            assert!(text.contains(message), "{text}");
        }
    }

    #[test]
    fn ip_limit_zero_means_unlimited() {
        let l = license(r#"{"expirationType":"NEVER","ipLimit":0,"hwidLimit":1}"#);
        assert_eq!((l.ip_limit, l.hwid_limit), (None, Some(1)));
    }

    #[test]
    fn create_rules_name_the_field() {
        let cases: &[(&str, &str, &str)] = &[
            (r#"{}"#, "expirationType", "is required"),
            (
                r#"{"expirationType":"FOREVER"}"#,
                "expirationType",
                "must be one of NEVER, DATE, DURATION",
            ),
            (
                r#"{"expirationType":"DATE"}"#,
                "expirationDate",
                "is required when expirationType is DATE",
            ),
            (
                r#"{"expirationType":"DATE","expirationDate":"2020-01-01T00:00:00Z"}"#,
                "expirationDate",
                "must be in the future",
            ),
            (
                r#"{"expirationType":"DATE","expirationDate":"tomorrow"}"#,
                "expirationDate",
                "must be an ISO 8601 date-time with a time zone, such as 2026-11-22T10:00:00.000Z",
            ),
            (
                r#"{"expirationType":"DURATION"}"#,
                "expirationDays",
                "is required when expirationType is DURATION",
            ),
            (
                r#"{"expirationType":"DURATION","expirationDays":0}"#,
                "expirationDays",
                "must be at least 1 (got 0)",
            ),
            (
                r#"{"expirationType":"DURATION","expirationDays":1,"expirationStart":"LATER"}"#,
                "expirationStart",
                "must be one of CREATION, ACTIVATION",
            ),
            (
                r#"{"expirationType":"NEVER","expirationDays":5}"#,
                "expirationDays",
                "must not be set when expirationType is NEVER",
            ),
            (
                r#"{"expirationType":"NEVER","ipLimit":-1}"#,
                "ipLimit",
                "must be at least 0 (got -1)",
            ),
            (
                r#"{"expirationType":"NEVER","hwidLimit":0}"#,
                "hwidLimit",
                "must be at least 1 (got 0)",
            ),
            (
                r#"{"expirationType":"NEVER","hwidLimit":1000001}"#,
                "hwidLimit",
                "must be at most 1000000 (got 1000001)",
            ),
            (
                r#"{"expirationType":"NEVER","customerIds":["x"]}"#,
                "customerIds[0]",
                "must be a UUID (8-4-4-4-12 hexadecimal digits)",
            ),
            (
                r#"{"expirationType":"NEVER","productIds":["x"]}"#,
                "productIds[0]",
                "must be a UUID (8-4-4-4-12 hexadecimal digits)",
            ),
            (
                r#"{"expirationType":"NEVER","metadata":[{"key":"","value":"v"}]}"#,
                "metadata[0].key",
                "must be 1 to 255 characters long (got 0)",
            ),
            (
                r#"{"expirationType":"NEVER","metadata":[{"key":"a","value":"v"},{"key":"a","value":"w"}]}"#,
                "metadata[1].key",
                "duplicates the key \"a\"",
            ),
            (
                r#"{"expirationType":"NEVER","suspended":"yes"}"#,
                "suspended",
                "invalid type: string \"yes\", expected a boolean",
            ),
        ];
        for (body, field, message) in cases {
            let e = create(body).unwrap_err();
            assert_eq!(
                problems(&e),
                [(field.to_string(), message.to_string())],
                "{body}"
            );
        }
        let many: Vec<String> = (0..21)
            .map(|i| format!(r#"{{"key":"k{i}","value":"v"}}"#))
            .collect();
        let e = create(&format!(
            r#"{{"expirationType":"NEVER","metadata":[{}]}}"#,
            many.join(",")
        ))
        .unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "metadata".into(),
                "must have at most 20 items (got 21)".into()
            )]
        );
        let long_value = format!(
            r#"{{"expirationType":"NEVER","metadata":[{{"key":"k","value":"{}"}}]}}"#,
            "v".repeat(1001)
        );
        assert_eq!(
            problems(&create(&long_value).unwrap_err()),
            [(
                "metadata[0].value".into(),
                "must be at most 1000 characters long (got more than 1000)".into()
            )]
        );
    }

    #[test]
    fn the_three_minimums_are_reported_together_in_order() {
        let e = create(
            r#"{"expirationType":"DURATION","expirationDays":0,"ipLimit":-1,"hwidLimit":0}"#,
        )
        .unwrap_err();
        let fields: Vec<String> = problems(&e).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["expirationDays", "ipLimit", "hwidLimit"]);
    }

    fn update(existing: &License, body: &str) -> Result<License, ApiError> {
        LicenseUpdate::apply(body.as_bytes(), existing, now().plus_days(1))
    }

    #[test]
    fn update_keeps_left_out_members_and_clears_nulls() {
        let l = license(
            r#"{"expirationType":"NEVER","ipLimit":3,"hwidLimit":2,"metadata":[{"key":"a","value":"b"}]}"#,
        );
        let u = update(&l, r#"{"suspended":true}"#).unwrap();
        assert!(u.suspended);
        assert_eq!(
            (u.ip_limit, u.hwid_limit, u.metadata.len()),
            (Some(3), Some(2), 1)
        );
        assert_eq!(u.updated_at, now().plus_days(1));
        let u = update(&l, r#"{"ipLimit":null,"hwidLimit":null,"metadata":[]}"#).unwrap();
        assert_eq!(
            (u.ip_limit, u.hwid_limit, u.metadata.len()),
            (None, None, 0)
        );
    }

    #[test]
    fn update_changes_the_key_and_validates_it() {
        let l = license(r#"{"expirationType":"NEVER"}"#);
        let u = update(&l, r#"{"licenseKey":"AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"}"#).unwrap();
        assert_eq!(u.license_key.as_str(), "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE");
        let e = update(&l, r#"{"licenseKey":"aaaaa-bbbbb-ccccc-ddddd-eeeee"}"#).unwrap_err();
        assert_eq!(problems(&e)[0].0, "licenseKey");
        let e = update(&l, r#"{"licenseKey":null,"suspended":null}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [
                ("licenseKey".into(), "must not be null".into()),
                ("suspended".into(), "must not be null".into())
            ]
        );
    }

    #[test]
    fn update_recomputes_expiration() {
        let l = license(r#"{"expirationType":"DURATION","expirationDays":30}"#);
        let u = update(&l, r#"{"expirationDays":60}"#).unwrap();
        assert_eq!(
            u.expiration_date,
            Some(now().plus_days(60)),
            "from creation"
        );
        let u = update(&l, r#"{"expirationType":"NEVER"}"#).unwrap();
        assert_eq!((u.expiration_date, u.expiration_days), (None, None));
        let u = update(
            &l,
            r#"{"expirationType":"DATE","expirationDate":"2030-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            u.expiration_date,
            Some(Timestamp::parse("2030-01-01T00:00:00Z").unwrap())
        );
        assert_eq!(u.expiration_days, None);
        let e = update(&l, r#"{"expirationType":"DATE"}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "expirationDate".into(),
                "is required when expirationType is DATE".into()
            )]
        );
        let e = update(&l, r#"{"expirationDays":0}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [("expirationDays".into(), "must be at least 1 (got 0)".into())]
        );
        let e = update(&l, r#"{"ipLimit":0}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [("ipLimit".into(), "must be at least 1 (got 0)".into())]
        );
        let e = update(&l, r#"{"expirationDays":null}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "expirationDays".into(),
                "is required when expirationType is DURATION".into()
            )]
        );
        let e = update(&l, r#"{"expirationType":"NEVER","expirationDays":3}"#).unwrap_err();
        assert_eq!(
            problems(&e),
            [(
                "expirationDays".into(),
                "must not be set when expirationType is NEVER".into()
            )]
        );
        let d = license(r#"{"expirationType":"DATE","expirationDate":"2027-01-01T00:00:00Z"}"#);
        let u = update(&d, r#"{"suspended":false,"expirationType":"DATE"}"#).unwrap();
        assert_eq!(u.expiration_date, d.expiration_date, "a kept date stays");
        let u = update(
            &d,
            r#"{"expirationType":"DURATION","expirationDays":10,"expirationStart":"ACTIVATION"}"#,
        )
        .unwrap();
        assert_eq!(
            (u.expiration_date, u.expiration_start),
            (None, ExpirationStart::Activation)
        );
    }

    #[test]
    fn update_reports_unknown_members() {
        let l = license(r#"{"expirationType":"NEVER"}"#);
        let e = update(&l, r#"{"hwidlimit":3}"#).unwrap_err();
        assert_eq!(problems(&e)[0].0, "hwidlimit");
    }
}
