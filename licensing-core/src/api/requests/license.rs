use serde::{Deserialize, Serialize};

use super::{
    MAX_DAYS, MAX_IDS, MAX_LIMIT, Patch, RawMetadata, clearable, finish, future_date, id_list,
    int_in, metadata, not_null, one_of, parse_json,
};
use crate::error::{ApiError, Validator};
use crate::expiry::{self, Expiration};
use crate::model::{
    ExpirationStart, ExpirationType, License, MAX_ENTITLEMENTS, MetadataItem, Policy, Term,
};
use crate::{
    CustomerId, EntitlementId, LicenseId, LicenseKey, PolicyId, ProductId, TeamId, Timestamp,
    UserId,
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
    /// `ipLimit`: a number, or `null`/left out for none. On a license with a policy, a member
    /// given (even `null`: no limit) overrides the policy's; one left out is inherited.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub ip_limit: Patch<i64>,
    /// `hwidLimit` (as `ipLimit`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub hwid_limit: Patch<i64>,
    /// (ext) `sessionLimit`: the most floating sessions live at once (as `ipLimit`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_limit: Patch<i64>,
    /// (ext) `sessionTtl`: seconds a session lives without a heartbeat (as `ipLimit`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_ttl: Patch<i64>,
    /// (ext) `policyId`: the policy whose terms the license inherits (then `expirationType`
    /// may be left out: the policy's expiration is copied).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub policy_id: Option<String>,
    /// `suspended`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub suspended: Option<bool>,
    /// (ext) `suspensionReason`: why the license is created suspended (1 to 500 characters;
    /// only with `"suspended": true`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub suspension_reason: Option<String>,
    /// `sendEmailDelivery`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub send_email_delivery: Option<bool>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<Vec<RawMetadata>>,
    /// (ext) `meters`: the license's own usage meters (each wins over its policy's meter of
    /// the same code).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub meters: Option<Vec<super::RawMeter>>,
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
    /// Why, when created suspended.
    pub suspension_reason: Option<String>,
    /// E-mail the key to the customers.
    pub send_email_delivery: bool,
    /// Metadata.
    pub metadata: Vec<MetadataItem>,
    /// (ext) The policy.
    pub policy_id: Option<PolicyId>,
    /// (ext) The limits the body set (with a policy: the overrides).
    pub overrides: Vec<Term>,
    /// (ext) The license's own usage meters.
    pub meters: Vec<crate::model::Meter>,
    /// (ext) Expiration members to complete from the policy (no `expirationType` was given):
    /// see [`NewLicense::on_policy`].
    pub expiration_from_policy: Option<ExpirationAsk>,
}

/// (ext) The expiration members a create gave without `expirationType`, completed from its
/// policy's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpirationAsk {
    /// `expirationStart`, when given.
    pub start: Option<ExpirationStart>,
    /// `expirationDate`, when given.
    pub date: Option<Timestamp>,
    /// `expirationDays`, when given.
    pub days: Option<u32>,
    /// Whether each of the three was in the body.
    pub given: (bool, bool, bool),
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
        let policy_id = raw
            .policy_id
            .as_deref()
            .and_then(|id| v.check("policyId", PolicyId::parse(id)));
        // With a policy, the type may be left out: the policy's is copied.
        let kind = if raw.policy_id.is_some() && raw.expiration_type.is_none() {
            None
        } else {
            v.required("expirationType", raw.expiration_type.as_deref(), |t| {
                one_of(t, &TYPES)
            })
        };
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
        // Each given (even `null`: no limit) or left out; an `ipLimit` of 0 is no limit.
        let ip_limit = clearable(&mut v, "ipLimit", raw.ip_limit, |l| int_in(l, 0, MAX_LIMIT))
            .map(|l| l.filter(|&l| l > 0));
        let hwid_limit = clearable(&mut v, "hwidLimit", raw.hwid_limit, |l| {
            int_in(l, 1, MAX_LIMIT)
        });
        let session_limit = clearable(&mut v, "sessionLimit", raw.session_limit, |l| {
            int_in(l, 1, MAX_LIMIT)
        });
        let session_ttl = clearable(&mut v, "sessionTtl", raw.session_ttl, session_ttl_in);
        let given = [
            (Term::IpLimit, ip_limit.is_some()),
            (Term::HwidLimit, hwid_limit.is_some()),
            (Term::SessionLimit, session_limit.is_some()),
            (Term::SessionTtl, session_ttl.is_some()),
        ];
        let mut overrides: Vec<Term> = given
            .into_iter()
            .filter(|(_, given)| *given)
            .map(|(term, _)| term)
            .collect();
        overrides.sort_unstable();
        let metadata = metadata(&mut v, "metadata", raw.metadata.unwrap_or_default());
        let meters = super::meters::meters(&mut v, raw.meters.unwrap_or_default());
        let suspended = raw.suspended.unwrap_or(false);
        let suspension_reason = raw
            .suspension_reason
            .as_deref()
            .and_then(|text| v.check("suspensionReason", suspension_reason(text, suspended)));
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
        let given = (
            raw.expiration_start.is_some(),
            raw.expiration_date.is_some(),
            raw.expiration_days.is_some(),
        );
        let (expiration, expiration_from_policy) = match kind {
            Some(kind) => (
                Expiration {
                    kind,
                    start: start.unwrap_or_default(),
                    date,
                    days,
                },
                None,
            ),
            // Completed from the policy (`on_policy`) before the license is made.
            None => (
                Expiration {
                    kind: ExpirationType::Never,
                    start: ExpirationStart::Creation,
                    date: None,
                    days: None,
                },
                Some(ExpirationAsk {
                    start,
                    date,
                    days,
                    given,
                }),
            ),
        };
        Ok(NewLicense {
            customer_ids,
            product_ids,
            entitlement_ids,
            expiration,
            ip_limit: ip_limit.flatten(),
            hwid_limit: hwid_limit.flatten(),
            session_limit: session_limit.flatten(),
            session_ttl: session_ttl.flatten(),
            suspended,
            suspension_reason,
            send_email_delivery: raw.send_email_delivery.unwrap_or(false),
            metadata,
            policy_id,
            overrides,
            meters,
            expiration_from_policy,
        })
    }
}

impl NewLicense {
    /// (ext) The create on `policy` (its `policyId`): the expiration members left out come from
    /// the policy's, checked together as one expiration (400 naming the member at fault).
    pub fn on_policy(mut self, policy: &Policy) -> Result<Self, ApiError> {
        let Some(ask) = self.expiration_from_policy.take() else {
            return Ok(self);
        };
        let kind = policy.expiration_type;
        let start = ask.start.unwrap_or(policy.expiration_start);
        let days = ask
            .days
            .or(policy.expiration_days)
            .filter(|_| kind == ExpirationType::Duration);
        let mut v = Validator::new();
        check_expiration(&mut v, kind, ask.start, ask.date, days, ask.given);
        if let Err(e) = v.finish() {
            let why = format!(
                " (the policy's expirationType is {}: give expirationType to choose another)",
                kind.as_str()
            );
            let errors = e
                .errors()
                .iter()
                .map(|f| crate::error::FieldError::new(&f.field, format!("{}{why}", f.message)))
                .collect();
            return Err(ApiError::validation(crate::error::ValidationErrors::new(
                errors,
            )));
        }
        self.expiration = Expiration {
            kind,
            start: if kind == ExpirationType::Duration {
                start
            } else {
                ExpirationStart::Creation
            },
            date: ask.date,
            days,
        };
        Ok(self)
    }

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
            suspension_reason: self.suspension_reason,
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
            policy_id: self.policy_id,
            overrides: if self.policy_id.is_some() {
                self.overrides
            } else {
                Vec::new()
            },
            meters: self.meters,
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
    /// (ext) `suspensionReason`: why the license is suspended (1 to 500 characters), on a
    /// license that is or becomes suspended; `null` clears it. Lifting the suspension clears it.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub suspension_reason: Patch<String>,
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
    /// (ext) `policyId`: put the license on this policy; `null` takes it off, keeping what
    /// applied as its own values. On a policy, a limit given here (even `null`: no limit)
    /// overrides the policy's.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub policy_id: Patch<String>,
    /// (ext) `inherit`: live terms whose override the license drops, to follow its policy
    /// again (`["hwidLimit", "productIds"]`: `productIds`/`entitlementIds` drop the license's
    /// own list).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub inherit: Patch<Vec<String>>,
    /// (ext) `meters`: the license's own usage meters, replacing those it had; `null` or `[]`
    /// leaves it with its policy's.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<super::RawMeter>>))]
    pub meters: Patch<Vec<super::RawMeter>>,
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
        match raw.suspension_reason {
            Patch::Missing => {}
            Patch::Null => next.suspension_reason = None,
            Patch::Value(text) => {
                next.suspension_reason =
                    v.check("suspensionReason", suspension_reason(&text, next.suspended));
            }
        }
        if !next.suspended {
            next.suspension_reason = None;
        }
        let product_ids_given = raw.product_ids.is_present();
        let entitlement_ids_given = raw.entitlement_ids.is_present();
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
        match raw.meters {
            Patch::Missing => {}
            Patch::Null => next.meters = Vec::new(),
            Patch::Value(m) => next.meters = super::meters::meters(&mut v, m),
        }
        let policy = match raw.policy_id {
            Patch::Missing => existing.policy_id,
            Patch::Null => None,
            Patch::Value(id) => v.check("policyId", PolicyId::parse(&id)),
        };
        next.policy_id = policy;
        if policy.is_none() {
            next.overrides = Vec::new();
        }
        let limits = [
            (Term::HwidLimit, "hwidLimit", raw.hwid_limit, false),
            (Term::IpLimit, "ipLimit", raw.ip_limit, false),
            (Term::SessionLimit, "sessionLimit", raw.session_limit, false),
            (Term::SessionTtl, "sessionTtl", raw.session_ttl, true),
        ];
        let mut given = Vec::new();
        for (term, field, patch, is_ttl) in limits {
            let checked = clearable(&mut v, field, patch, |n| {
                if is_ttl {
                    session_ttl_in(n)
                } else {
                    int_in(n, 1, MAX_LIMIT)
                }
            });
            if let Some(value) = checked {
                term.set_own(&mut next, value);
                given.push(term);
                if policy.is_some() && !next.overrides.contains(&term) {
                    next.overrides.push(term);
                }
            }
        }
        if let Some(names) = not_null(&mut v, "inherit", raw.inherit) {
            if policy.is_none() && !names.is_empty() {
                v.push(
                    "inherit",
                    "the license has no policy to inherit from (give policyId)",
                );
            }
            for name in &names {
                let Some(term) = v.check("inherit", Term::parse(name)) else {
                    continue;
                };
                let set_here = match term {
                    Term::ProductIds => product_ids_given,
                    Term::EntitlementIds => entitlement_ids_given,
                    other => given.contains(&other),
                };
                if set_here {
                    v.push(
                        "inherit",
                        format!("{name} is both given and inherited: leave one out"),
                    );
                }
                match term {
                    Term::ProductIds => next.product_ids.clear(),
                    Term::EntitlementIds => next.entitlement_ids.clear(),
                    other => next.overrides.retain(|t| *t != other),
                }
            }
        }
        next.overrides.sort_unstable();

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

/// A suspension reason as given (trimmed), on a license that is or becomes `suspended`.
fn suspension_reason(text: &str, suspended: bool) -> Result<String, String> {
    if !suspended {
        return Err(
            "only a suspended license has a reason: give \"suspended\": true with it".into(),
        );
    }
    crate::validate::text(text.trim(), 1, crate::model::MAX_SUSPENSION_REASON)
}

/// (ext) `POST {dev}/licenses/id/{id}/suspend`: optionally, why. Without a body the license is
/// suspended without a reason.
#[derive(Debug, Deserialize, Clone, Default, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"reason": "Chargeback on order ORD-2026-0777"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuspendBody {
    /// Why (1 to 500 characters), kept with the license as its `suspensionReason` and in the
    /// audit log; left out: no reason (a reason given before is kept when the license already
    /// is suspended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SuspendBody {
    /// A suspension for `reason`.
    pub fn because(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
        }
    }

    /// The reason, checked (400 naming `reason`).
    pub fn validate(&self) -> Result<Option<String>, ApiError> {
        let mut v = Validator::new();
        let reason = self
            .reason
            .as_deref()
            .and_then(|text| v.check("reason", suspension_reason(text, true)));
        finish(v)?;
        Ok(reason)
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
