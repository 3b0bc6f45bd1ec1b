//! Webhook endpoints and their delivery log.

use serde::{Deserialize, Serialize};

use super::list::{Paging, Query, known};
use super::{Patch, finish, parse_json};
use crate::error::{ApiError, Validator};
use crate::model::{event_pattern_valid, event_types};
use crate::validate::Email;

/// The body creating or changing a webhook endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"url": "https://shop.example.com/hooks/licensing", "eventTypes": ["license.*", "customer.created"], "description": "shop provisioning"})))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookBody {
    /// Where events are POSTed: an `https://` URL (`http://` when the operator allows it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub url: Option<String>,
    /// A note for people (at most 200 characters; empty clears it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
    /// The event types it wants: types, `resource.*`, or `*`; empty (or absent at creation)
    /// means every type.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub event_types: Option<Vec<String>>,
    /// Whether events are delivered to it (re-enabling clears a server-side disable).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub enabled: Option<bool>,
    /// Who is told by e-mail when the server disables the endpoint; `null` clears it.
    #[serde(skip_serializing_if = "Patch::is_missing", default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub alert_email: Patch<String>,
}

/// A validated webhook body: each member present when given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookInput {
    /// The URL as given (its scheme and address are the server's to check).
    pub url: Option<String>,
    /// The description; `Some(None)` clears it.
    pub description: Option<Option<String>>,
    /// The event types, deduplicated.
    pub event_types: Option<Vec<String>>,
    /// Enabled or not.
    pub enabled: Option<bool>,
    /// The alert address; `Some(None)` clears it.
    pub alert_email: Option<Option<String>>,
}

impl WebhookBody {
    /// Parses a creation: `url` is required.
    pub fn parse_create(body: &[u8]) -> Result<WebhookInput, ApiError> {
        Self::parse(body, true)
    }

    /// Parses a change: at least one member.
    pub fn parse_update(body: &[u8]) -> Result<WebhookInput, ApiError> {
        Self::parse(body, false)
    }

    fn parse(body: &[u8], create: bool) -> Result<WebhookInput, ApiError> {
        parse_json::<Self>(body)?.validate(create)
    }

    /// Validates a creation (`create`: `url` is required) or a change (at least one member).
    pub fn validate(self, create: bool) -> Result<WebhookInput, ApiError> {
        let raw = self;
        let mut v = Validator::new();
        if !create && raw == Self::default() {
            v.push(
                "url",
                "give at least one of url, description, eventTypes, enabled, alertEmail",
            );
        }
        let url = match raw.url {
            None if create => {
                v.push("url", "is required");
                None
            }
            None => None,
            Some(u) if u.trim().is_empty() => {
                v.push("url", "must not be empty");
                None
            }
            Some(u) if u.len() > 2048 => {
                v.push("url", "must be at most 2048 characters");
                None
            }
            Some(u) => Some(u.trim().to_owned()),
        };
        let description = match raw.description {
            None => None,
            Some(d) if d.chars().count() > 200 => {
                v.push("description", "must be at most 200 characters");
                None
            }
            Some(d) if d.trim().is_empty() => Some(None),
            Some(d) => Some(Some(d.trim().to_owned())),
        };
        let event_types = match raw.event_types {
            None => None,
            Some(types) if types.len() > 100 => {
                v.push("eventTypes", "must hold at most 100 entries");
                None
            }
            Some(types) => {
                let mut out: Vec<String> = Vec::new();
                for (i, t) in types.iter().enumerate() {
                    if !event_pattern_valid(t) {
                        v.push(
                            format!("eventTypes[{i}]"),
                            format!(
                                "{t:?} is not an event type: use one of {}, a resource's every type as resource.*, or *",
                                event_types().join(", ")
                            ),
                        );
                    } else if !out.contains(t) {
                        out.push(t.clone());
                    }
                }
                Some(out)
            }
        };
        let alert_email = match raw.alert_email {
            Patch::Missing => None,
            Patch::Null => Some(None),
            Patch::Value(e) => v
                .check("alertEmail", Email::parse(&e))
                .map(|e| Some(e.as_str().to_owned())),
        };
        finish(v)?;
        Ok(WebhookInput {
            url,
            description,
            event_types,
            enabled: raw.enabled,
            alert_email,
        })
    }
}

/// Parses the query of the delivery log: `page`, `pageSize`, `sortDirection` (newest first by
/// default).
pub fn parse_delivery_query(raw: &str) -> Result<Paging, ApiError> {
    parse_paging_query(raw)
}

/// A query of `page`, `pageSize` and `sortDirection` only (a license's sessions, a webhook's
/// deliveries).
pub fn parse_paging_query(raw: &str) -> Result<Paging, ApiError> {
    let mut v = Validator::new();
    let q = Query::parse(raw, &known(&[]), &mut v);
    let paging = Paging::parse(&q, &mut v);
    finish(v)?;
    Ok(paging)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_checked_member_by_member() {
        let ok = WebhookBody::parse_create(
            br#"{"url":" https://x.example.com/h ","eventTypes":["license.*","license.*","device.forgotten"]}"#,
        )
        .unwrap();
        assert_eq!(ok.url.as_deref(), Some("https://x.example.com/h"));
        assert_eq!(
            ok.event_types.unwrap(),
            vec!["license.*", "device.forgotten"]
        );
        let e = WebhookBody::parse_create(br#"{"eventTypes":["license.exploded"]}"#).unwrap_err();
        let text = format!("{e:?}");
        assert!(
            text.contains("url") && text.contains("eventTypes[0]"),
            "{text}"
        );
        assert!(WebhookBody::parse_update(b"{}").is_err());
        assert!(WebhookBody::parse_update(br#"{"colour":"red"}"#).is_err());
        let cleared = WebhookBody::parse_update(br#"{"description":""}"#).unwrap();
        assert_eq!(cleared.description, Some(None));
    }
}
