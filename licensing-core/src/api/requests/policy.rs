use serde::{Deserialize, Serialize};

use super::meters::{RawMeter, meters};
use super::{
    MAX_DAYS, MAX_IDS, MAX_LIMIT, Patch, RawMetadata, clearable, finish, id_list, int_in, metadata,
    not_null, one_of, parse_json,
};
use crate::error::{ApiError, Validator};
use crate::model::{
    ExpirationStart, ExpirationType, MAX_ENTITLEMENTS, MAX_GRACE_DAYS, Meter, Policy,
    SelfServiceResets,
};
use crate::validate::text;
use crate::{TeamId, Timestamp};

/// `selfServiceResets` as it arrives.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawResets {
    /// Resets per period: 0 to 100.
    #[serde(default)]
    pub count: Option<i64>,
    /// The period in days: 1 to 365.
    #[serde(default)]
    pub period_days: Option<i64>,
}

/// (ext) `POST {dev}/policies` and `PUT {dev}/policies/{policyId}`: on an update, members left
/// out stay as they are and `null` clears one (to its default).
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Pro", "expirationType": "DURATION", "expirationDays": 365, "hwidLimit": 3, "sessionLimit": 2, "graceDays": 7, "entitlementIds": []})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyBody {
    /// `name` (1 to 255 characters; required on create).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub name: Patch<String>,
    /// `productIds`: products every license on the policy has.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub product_ids: Patch<Vec<String>>,
    /// `entitlementIds`: entitlements every license on the policy grants.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub entitlement_ids: Patch<Vec<String>>,
    /// `expirationType`: `NEVER` (default) or `DURATION` (a policy has no date).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expiration_type: Patch<String>,
    /// `expirationStart`: `CREATION` (default) or `ACTIVATION`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub expiration_start: Patch<String>,
    /// `expirationDays`, for `DURATION`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub expiration_days: Patch<i64>,
    /// `hwidLimit`; `null`: unlimited.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub hwid_limit: Patch<i64>,
    /// `ipLimit`; `null` or 0: unlimited.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub ip_limit: Patch<i64>,
    /// `sessionLimit`; `null`: not limited.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_limit: Patch<i64>,
    /// `sessionTtl` (seconds); `null`: the team's.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub session_ttl: Patch<i64>,
    /// `graceDays`: 0 to 365 (default 0).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub grace_days: Patch<i64>,
    /// `licenseFileTtl` (seconds, 3,600 to 315,360,000); `null`: as long as the license.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub license_file_ttl: Patch<i64>,
    /// `selfServiceResets` (default `{count: 3, periodDays: 30}`).
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<RawResets>))]
    pub self_service_resets: Patch<RawResets>,
    /// `meters`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMeter>>))]
    pub meters: Patch<Vec<RawMeter>>,
    /// `metadata`.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<RawMetadata>>))]
    pub metadata: Patch<Vec<RawMetadata>>,
}

/// A validated policy body: each member given (`Some`, with `None` inside for `null` where
/// that clears), to apply to a new or stored policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyInput {
    name: Option<String>,
    product_ids: Option<Vec<crate::ProductId>>,
    entitlement_ids: Option<Vec<crate::EntitlementId>>,
    expiration_type: Option<ExpirationType>,
    expiration_start: Option<ExpirationStart>,
    expiration_days: Option<Option<u32>>,
    hwid_limit: Option<Option<u32>>,
    ip_limit: Option<Option<u32>>,
    session_limit: Option<Option<u32>>,
    session_ttl: Option<Option<u32>>,
    grace_days: Option<u32>,
    license_file_ttl: Option<Option<u32>>,
    self_service_resets: Option<SelfServiceResets>,
    meters: Option<Vec<Meter>>,
    metadata: Option<Vec<crate::model::MetadataItem>>,
}

const TYPES: [(&str, ExpirationType); 3] = [
    ("NEVER", ExpirationType::Never),
    ("DURATION", ExpirationType::Duration),
    ("DATE", ExpirationType::Date),
];
const STARTS: [(&str, ExpirationStart); 2] = [
    ("CREATION", ExpirationStart::Creation),
    ("ACTIVATION", ExpirationStart::Activation),
];

/// An id list that `null` empties.
fn ids<Id: From<uuid::Uuid> + PartialEq>(
    v: &mut Validator,
    field: &str,
    patch: Patch<Vec<String>>,
    max: usize,
) -> Option<Vec<Id>> {
    match patch {
        Patch::Missing => None,
        Patch::Null => Some(Vec::new()),
        Patch::Value(ids) => Some(id_list(v, field, &ids, max)),
    }
}

impl PolicyBody {
    /// Parses and validates; `create` makes `name` required.
    pub fn parse(body: &[u8], create: bool) -> Result<PolicyInput, ApiError> {
        parse_json::<Self>(body)?.validate(create)
    }

    /// Validates each member given; `create` makes `name` required. The expiration members
    /// are checked together when applied ([`PolicyInput::apply_to`]).
    pub fn validate(self, create: bool) -> Result<PolicyInput, ApiError> {
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
        let product_ids = ids(&mut v, "productIds", raw.product_ids, MAX_IDS);
        let entitlement_ids = ids(
            &mut v,
            "entitlementIds",
            raw.entitlement_ids,
            MAX_ENTITLEMENTS,
        );
        let expiration_type = match raw.expiration_type {
            Patch::Missing => None,
            Patch::Null => Some(ExpirationType::Never),
            Patch::Value(t) => match v.check("expirationType", one_of(&t, &TYPES)) {
                Some(ExpirationType::Date) => {
                    v.push(
                        "expirationType",
                        "DATE is not for a policy (a policy has no date): use DURATION with expirationDays, or give each license its expirationDate",
                    );
                    None
                }
                other => other,
            },
        };
        let expiration_start = match raw.expiration_start {
            Patch::Missing => None,
            Patch::Null => Some(ExpirationStart::Creation),
            Patch::Value(t) => v.check("expirationStart", one_of(&t, &STARTS)),
        };
        let expiration_days = clearable(&mut v, "expirationDays", raw.expiration_days, |d| {
            int_in(d, 1, MAX_DAYS)
        });
        let hwid_limit = clearable(&mut v, "hwidLimit", raw.hwid_limit, |l| {
            int_in(l, 1, MAX_LIMIT)
        });
        let ip_limit = clearable(&mut v, "ipLimit", raw.ip_limit, |l| int_in(l, 0, MAX_LIMIT))
            .map(|l| l.filter(|&l| l > 0));
        let session_limit = clearable(&mut v, "sessionLimit", raw.session_limit, |l| {
            int_in(l, 1, MAX_LIMIT)
        });
        let session_ttl = clearable(
            &mut v,
            "sessionTtl",
            raw.session_ttl,
            super::license::session_ttl_in,
        );
        let grace_days = clearable(&mut v, "graceDays", raw.grace_days, |d| {
            int_in(d, 0, i64::from(MAX_GRACE_DAYS))
        })
        .map(Option::unwrap_or_default);
        let license_file_ttl = clearable(
            &mut v,
            "licenseFileTtl",
            raw.license_file_ttl,
            crate::api::file_ttl,
        );
        let self_service_resets = match raw.self_service_resets {
            Patch::Missing => None,
            Patch::Null => Some(SelfServiceResets::default()),
            Patch::Value(r) => {
                let defaults = SelfServiceResets::default();
                let count = match r.count {
                    None => Some(defaults.count),
                    Some(c) => v.check("selfServiceResets.count", int_in(c, 0, 100)),
                };
                let period_days = match r.period_days {
                    None => Some(defaults.period_days),
                    Some(d) => v.check("selfServiceResets.periodDays", int_in(d, 1, 365)),
                };
                count
                    .zip(period_days)
                    .map(|(count, period_days)| SelfServiceResets { count, period_days })
            }
        };
        let meters = match raw.meters {
            Patch::Missing => None,
            Patch::Null => Some(Vec::new()),
            Patch::Value(m) => Some(meters(&mut v, m)),
        };
        let metadata = match raw.metadata {
            Patch::Missing => None,
            Patch::Null => Some(Vec::new()),
            Patch::Value(m) => Some(metadata(&mut v, "metadata", m)),
        };
        finish(v)?;
        Ok(PolicyInput {
            name,
            product_ids,
            entitlement_ids,
            expiration_type,
            expiration_start,
            expiration_days,
            hwid_limit,
            ip_limit,
            session_limit,
            session_ttl,
            grace_days,
            license_file_ttl,
            self_service_resets,
            meters,
            metadata,
        })
    }
}

impl PolicyInput {
    /// The products the body names (to check that they exist).
    pub fn product_ids(&self) -> Option<&[crate::ProductId]> {
        self.product_ids.as_deref()
    }

    /// The entitlements the body names (to check that they exist).
    pub fn entitlement_ids(&self) -> Option<&[crate::EntitlementId]> {
        self.entitlement_ids.as_deref()
    }

    /// A new policy of `team` from a body validated with `create`.
    pub fn into_new(self, team_id: TeamId, now: Timestamp) -> Result<Policy, ApiError> {
        let blank = Policy::new(team_id, String::new(), now);
        self.apply_to(&blank, now)
    }

    /// `existing` with the members given, its expiration checked as a whole (400 naming the
    /// member at fault).
    pub fn apply_to(&self, existing: &Policy, now: Timestamp) -> Result<Policy, ApiError> {
        let mut next = existing.clone();
        macro_rules! given {
            ($($field:ident),*) => {$(
                if let Some(value) = &self.$field {
                    next.$field = value.clone();
                }
            )*};
        }
        given!(
            name,
            product_ids,
            entitlement_ids,
            expiration_type,
            expiration_start,
            expiration_days,
            hwid_limit,
            ip_limit,
            session_limit,
            session_ttl,
            grace_days,
            license_file_ttl,
            self_service_resets,
            meters,
            metadata
        );
        let mut v = Validator::new();
        match next.expiration_type {
            ExpirationType::Duration => {
                if next.expiration_days.is_none() {
                    v.push(
                        "expirationDays",
                        "is required when expirationType is DURATION",
                    );
                }
            }
            _ => {
                // A policy that never expires keeps no duration.
                if self.expiration_days.flatten().is_some() {
                    v.push(
                        "expirationDays",
                        "is only used when expirationType is DURATION",
                    );
                }
                if self.expiration_start == Some(ExpirationStart::Activation) {
                    v.push(
                        "expirationStart",
                        "ACTIVATION is only used when expirationType is DURATION",
                    );
                }
                next.expiration_days = None;
                next.expiration_start = ExpirationStart::Creation;
            }
        }
        finish(v)?;
        next.updated_at = now;
        Ok(next)
    }
}

/// (ext) `DELETE {dev}/policies/{policyId}?detach=true`: whether the policy's licenses are taken
/// off it with its terms written into them (else a policy in use is refused with 409).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetachQuery {
    /// `detach`.
    pub detach: bool,
}

impl DetachQuery {
    /// Parses the query string (`detach=true|false`; nothing else).
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = super::list::Query::parse(raw, &["detach"], &mut v);
        let detach = v
            .optional("detach", q.get("detach"), |t| match t {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err("must be true or false"),
            })
            .flatten()
            .unwrap_or(false);
        finish(v)?;
        Ok(Self { detach })
    }

    /// The query string [`DetachQuery::parse`] reads back.
    pub fn to_query_string(&self) -> String {
        if self.detach {
            "detach=true".to_owned()
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: &str, create: bool) -> Vec<String> {
        let checked = PolicyBody::parse(body.as_bytes(), create).and_then(|input| {
            input
                .into_new(TeamId::new(), Timestamp::from_millis(0))
                .map(drop)
        });
        match checked {
            Ok(()) => Vec::new(),
            Err(e) => e.field_errors().iter().map(|f| f.field.clone()).collect(),
        }
    }

    #[test]
    fn a_policy_needs_a_name_and_coherent_terms() {
        assert!(problems(r#"{"name":"Pro"}"#, true).is_empty());
        assert!(
            problems(
                r#"{"name":"Pro","expirationType":"DURATION","expirationDays":365,"hwidLimit":3,"graceDays":7,"licenseFileTtl":86400,"selfServiceResets":{"count":5},"meters":[{"code":"EXPORTS","limit":100,"period":"month"}]}"#,
                true
            )
            .is_empty()
        );
        assert_eq!(problems(r#"{}"#, true), ["name"]);
        assert_eq!(
            problems(r#"{"name":"P","expirationType":"DATE"}"#, true),
            ["expirationType"]
        );
        assert_eq!(
            problems(r#"{"name":"P","expirationType":"DURATION"}"#, true),
            ["expirationDays"]
        );
        assert_eq!(
            problems(r#"{"name":"P","expirationDays":3}"#, true),
            ["expirationDays"]
        );
        assert_eq!(
            problems(
                r#"{"name":"P","graceDays":366,"hwidLimit":0,"licenseFileTtl":5}"#,
                true
            ),
            ["hwidLimit", "graceDays", "licenseFileTtl"]
        );
        assert_eq!(
            problems(
                r#"{"name":"P","selfServiceResets":{"count":101,"periodDays":0}}"#,
                true
            ),
            ["selfServiceResets.count", "selfServiceResets.periodDays"]
        );
        assert_eq!(
            problems(
                r#"{"name":"P","meters":[{"code":"A"},{"code":"A","limit":-1,"period":"hour"},{}]}"#,
                true
            ),
            [
                "meters[1].code",
                "meters[1].limit",
                "meters[1].period",
                "meters[2].code"
            ]
        );
        assert_eq!(problems(r#"{"name":"P","x":1}"#, true), ["x"]);
    }

    #[test]
    fn an_update_changes_what_it_gives_and_null_clears() {
        let p = PolicyBody::parse(br#"{"name":"Pro","hwidLimit":3,"graceDays":7}"#, true)
            .unwrap()
            .into_new(TeamId::new(), Timestamp::from_millis(0))
            .unwrap();
        let next = PolicyBody::parse(br#"{"hwidLimit":null,"graceDays":null}"#, false)
            .unwrap()
            .apply_to(&p, Timestamp::from_millis(5))
            .unwrap();
        assert_eq!(
            (next.name.as_str(), next.hwid_limit, next.grace_days),
            ("Pro", None, 0)
        );
        assert!(PolicyBody::parse(br#"{"name":null}"#, false).is_err());
    }

    #[test]
    fn detach_is_true_or_false_and_nothing_else_is_asked() {
        assert!(!DetachQuery::parse("").unwrap().detach);
        assert!(DetachQuery::parse("detach=true").unwrap().detach);
        assert!(DetachQuery::parse("detach=yes").is_err());
        assert!(DetachQuery::parse("force=true").is_err());
        let q = DetachQuery { detach: true };
        assert_eq!(DetachQuery::parse(&q.to_query_string()).unwrap(), q);
    }
}
