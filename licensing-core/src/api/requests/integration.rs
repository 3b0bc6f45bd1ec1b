//! (ext) Payment integrations' request bodies and queries (protocol.md section 7, "Payments →
//! licenses").

use serde::{Deserialize, Serialize};

use super::{MAX_IDS, Patch, finish, id_list, one_of, parse_json};
use crate::crypto::inbound::Provider;
use crate::error::{ApiError, Validator};
use crate::model::{InboundStatus, OnCancel, OnPaymentFailed, OnRefund, PriceRule, RuleMatch};
use crate::{PolicyId, RuleId, Timestamp};

/// The longest webhook secret or API key.
const MAX_SECRET: usize = 512;

/// `PUT {dev}/integrations/{provider}`: `{enabled, webhookSecret, apiKey?}`. Members left out
/// keep their value (`webhookSecret` is required when setting one up); `apiKey: null` removes
/// the key. A new `webhookSecret` leaves the one it replaces accepted for 24 hours.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"enabled": true, "webhookSecret": "whsec_…", "apiKey": "rk_live_…"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntegrationBody {
    /// Whether events are applied (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The provider's webhook signing secret (Stripe `whsec_…`, Paddle's secret key, Lemon
    /// Squeezy's signing secret): 8 to 512 visible ASCII characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
    /// The provider's API key (a restricted read-only key is enough); `null` removes it.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub api_key: Patch<String>,
}

/// A checked [`IntegrationBody`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntegrationInput {
    /// `enabled`.
    pub enabled: Option<bool>,
    /// `webhookSecret`, in the clear.
    pub webhook_secret: Option<String>,
    /// `apiKey`: `Some(None)` removes it.
    pub api_key: Option<Option<String>>,
}

fn secret(v: &mut Validator, field: &str, text: &str) -> Option<String> {
    let fine =
        (8..=MAX_SECRET).contains(&text.len()) && text.bytes().all(|b| (b'!'..=b'~').contains(&b));
    if !fine {
        v.push(
            field,
            "must be 8 to 512 visible ASCII characters (no spaces): paste it as the provider shows it",
        );
        return None;
    }
    Some(text.to_owned())
}

impl IntegrationBody {
    /// Parses and checks a body.
    pub fn parse(body: &[u8]) -> Result<IntegrationInput, ApiError> {
        parse_json::<Self>(body)?.check()
    }

    /// Checks the members.
    pub fn check(self) -> Result<IntegrationInput, ApiError> {
        let mut v = Validator::new();
        let webhook_secret = self
            .webhook_secret
            .as_deref()
            .and_then(|s| secret(&mut v, "webhookSecret", s));
        let api_key = match self.api_key {
            Patch::Missing => None,
            Patch::Null => Some(None),
            Patch::Value(key) => secret(&mut v, "apiKey", &key).map(Some),
        };
        finish(v)?;
        Ok(IntegrationInput {
            enabled: self.enabled,
            webhook_secret,
            api_key,
        })
    }
}

/// A rule's `match` as it arrives: exactly one member.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawMatch {
    /// A price id (Stripe `price_…`, Paddle `pri_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_id: Option<serde_json::Value>,
    /// A product id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_id: Option<serde_json::Value>,
    /// A Lemon Squeezy variant id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_id: Option<serde_json::Value>,
}

/// `POST {dev}/integrations/{provider}/rules` and `PUT …/rules/{ruleId}`: on an update,
/// members left out keep their value.
#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"match": {"priceId": "price_1PqZ…"}, "policyId": "…", "sendLicenseEmail": true, "onPaymentFailed": "keep", "onCancel": "periodEnd", "onRefund": "suspend"})))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleBody {
    /// What is bought: `{priceId}`, `{productId}` or `{variantId}` (required on create).
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<RawMatch>,
    /// The policy the license is on (required on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    /// Products besides the policy's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_ids: Option<Vec<String>>,
    /// Whether the key is mailed to the buyer (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_license_email: Option<bool>,
    /// `keep` (default: the policy's grace applies after the date) or `suspend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_payment_failed: Option<String>,
    /// `periodEnd` (default) or `now`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cancel: Option<String>,
    /// `suspend` (default), `delete` or `keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_refund: Option<String>,
}

/// A match value: a string, or a number as its decimal.
fn match_value(v: &mut Validator, field: &str, value: &serde_json::Value) -> Option<String> {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_u64() => n.to_string(),
        _ => String::new(),
    };
    if text.is_empty() || text.len() > 255 || text.chars().any(char::is_control) {
        v.push(
            field,
            "must be the provider's id: 1 to 255 characters (a number is read as its decimal)",
        );
        return None;
    }
    Some(text)
}

impl RuleBody {
    /// Parses a body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        parse_json::<Self>(body)
    }

    /// A new rule `id` made at `now`.
    pub fn into_rule(self, id: RuleId, now: Timestamp) -> Result<PriceRule, ApiError> {
        let mut v = Validator::new();
        if self.matches.is_none() {
            v.push(
                "match",
                "is required: {\"priceId\": …}, {\"productId\": …} or {\"variantId\": …}",
            );
        }
        if self.policy_id.is_none() {
            v.push(
                "policyId",
                "is required: the policy a buyer's license is on",
            );
        }
        let placeholder = PriceRule {
            id,
            matches: RuleMatch::PriceId(String::new()),
            policy_id: PolicyId::from(uuid::Uuid::nil()),
            product_ids: Vec::new(),
            send_license_email: true,
            on_payment_failed: OnPaymentFailed::default(),
            on_cancel: OnCancel::default(),
            on_refund: OnRefund::default(),
            created_at: now,
            updated_at: now,
        };
        let rule = self.applied(v, placeholder, now)?;
        Ok(rule)
    }

    /// `rule` with the members given changed, at `now`.
    pub fn apply_to(self, rule: PriceRule, now: Timestamp) -> Result<PriceRule, ApiError> {
        self.applied(Validator::new(), rule, now)
    }

    fn applied(
        self,
        mut v: Validator,
        mut rule: PriceRule,
        now: Timestamp,
    ) -> Result<PriceRule, ApiError> {
        if let Some(m) = &self.matches {
            let given: Vec<(&str, &serde_json::Value)> = [
                ("priceId", &m.price_id),
                ("productId", &m.product_id),
                ("variantId", &m.variant_id),
            ]
            .into_iter()
            .filter_map(|(name, value)| value.as_ref().map(|value| (name, value)))
            .collect();
            match given.as_slice() {
                [(name, value)] => {
                    let field = format!("match.{name}");
                    if let Some(text) = match_value(&mut v, &field, value) {
                        rule.matches = match *name {
                            "priceId" => RuleMatch::PriceId(text),
                            "productId" => RuleMatch::ProductId(text),
                            _ => RuleMatch::VariantId(text),
                        };
                    }
                }
                _ => v.push(
                    "match",
                    "must have exactly one of priceId, productId, variantId",
                ),
            }
        }
        if let Some(text) = &self.policy_id {
            match text.parse::<PolicyId>() {
                Ok(id) => rule.policy_id = id,
                Err(_) => v.push("policyId", "must be a policy's id (a UUID)"),
            }
        }
        if let Some(ids) = &self.product_ids {
            rule.product_ids = id_list(&mut v, "productIds", ids, MAX_IDS);
        }
        if let Some(send) = self.send_license_email {
            rule.send_license_email = send;
        }
        if let Some(text) = &self.on_payment_failed {
            let options = [
                ("keep", OnPaymentFailed::Keep),
                ("suspend", OnPaymentFailed::Suspend),
            ];
            if let Some(value) = v.check("onPaymentFailed", one_of(text, &options)) {
                rule.on_payment_failed = value;
            }
        }
        if let Some(text) = &self.on_cancel {
            let options = [("periodEnd", OnCancel::PeriodEnd), ("now", OnCancel::Now)];
            if let Some(value) = v.check("onCancel", one_of(text, &options)) {
                rule.on_cancel = value;
            }
        }
        if let Some(text) = &self.on_refund {
            let options = [
                ("suspend", OnRefund::Suspend),
                ("delete", OnRefund::Delete),
                ("keep", OnRefund::Keep),
            ];
            if let Some(value) = v.check("onRefund", one_of(text, &options)) {
                rule.on_refund = value;
            }
        }
        finish(v)?;
        rule.updated_at = now;
        Ok(rule)
    }
}

/// `GET {dev}/integrations/events`: `provider`, `status`, `page`, `pageSize` (newest first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboundQuery {
    /// Only this provider's events.
    pub provider: Option<Provider>,
    /// Only events with this status.
    pub status: Option<InboundStatus>,
    /// The page.
    pub paging: super::Paging,
}

impl InboundQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = super::list::Query::parse(raw, &["provider", "status", "page", "pageSize"], &mut v);
        let provider = v
            .optional("provider", q.get("provider"), str::parse::<Provider>)
            .flatten();
        let status = v
            .optional("status", q.get("status"), |t| {
                one_of(t, &InboundStatus::ALL)
            })
            .flatten();
        let paging = super::Paging::parse(&q, &mut v);
        finish(v)?;
        Ok(Self {
            provider,
            status,
            paging: super::Paging {
                direction: super::SortDirection::Desc,
                ..paging
            },
        })
    }

    /// The query string [`InboundQuery::parse`] reads back.
    pub fn to_query_string(&self) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        if let Some(p) = self.provider {
            s.append_pair("provider", p.as_str());
        }
        if let Some(st) = self.status {
            s.append_pair("status", st.as_str());
        }
        s.append_pair("page", &self.paging.page.to_string());
        s.append_pair("pageSize", &self.paging.page_size.to_string());
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(e: ApiError) -> Vec<String> {
        e.field_errors().iter().map(|f| f.field.clone()).collect()
    }

    #[test]
    fn a_rule_needs_one_match_and_a_policy() {
        let now = Timestamp::from_millis(1);
        let empty = RuleBody::parse(b"{}")
            .unwrap()
            .into_rule(RuleId::new(), now);
        assert_eq!(problems(empty.unwrap_err()), ["match", "policyId"]);
        let two = RuleBody::parse(br#"{"match": {"priceId": "a", "productId": "b"}, "policyId": "0190f5c2-0000-7000-8000-000000000000"}"#)
            .unwrap()
            .into_rule(RuleId::new(), now);
        assert_eq!(problems(two.unwrap_err()), ["match"]);
        let bad = RuleBody::parse(br#"{"match": {"variantId": 12345}, "policyId": "0190f5c2-0000-7000-8000-000000000000", "onCancel": "later", "onRefund": "delete"}"#)
            .unwrap()
            .into_rule(RuleId::new(), now);
        assert_eq!(problems(bad.unwrap_err()), ["onCancel"]);
        let fine = RuleBody::parse(br#"{"match": {"variantId": 12345}, "policyId": "0190f5c2-0000-7000-8000-000000000000", "onRefund": "delete"}"#)
            .unwrap()
            .into_rule(RuleId::new(), now)
            .unwrap();
        assert_eq!(fine.matches, RuleMatch::VariantId("12345".into()));
        assert_eq!(fine.on_refund, OnRefund::Delete);
        assert!(fine.send_license_email);
        let unknown = RuleBody::parse(br#"{"matches": {}}"#).unwrap_err();
        assert_eq!(unknown.code(), crate::ResultCode::BadRequest);
    }

    #[test]
    fn secrets_are_visible_ascii() {
        assert!(IntegrationBody::parse(br#"{"webhookSecret": "short"}"#).is_err());
        assert!(IntegrationBody::parse(br#"{"webhookSecret": "whsec_with space"}"#).is_err());
        let input =
            IntegrationBody::parse(br#"{"webhookSecret": "whsec_abcdefgh", "apiKey": null}"#)
                .unwrap();
        assert_eq!(input.webhook_secret.as_deref(), Some("whsec_abcdefgh"));
        assert_eq!(input.api_key, Some(None));
    }

    #[test]
    fn the_event_query_reads_back() {
        let q = InboundQuery::parse("provider=paddle&status=skipped&pageSize=10").unwrap();
        assert_eq!(q.provider, Some(Provider::Paddle));
        assert_eq!(q.status, Some(InboundStatus::Skipped));
        assert_eq!(InboundQuery::parse(&q.to_query_string()).unwrap(), q);
        assert!(InboundQuery::parse("provider=square").is_err());
    }
}
