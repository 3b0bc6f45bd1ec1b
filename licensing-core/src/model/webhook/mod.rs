//! Webhooks: a team's endpoints, the events its changes raise, and their deliveries.
//!
//! An event is written by the store in the same atomic step as the change that raised it (see
//! [`Journal`](crate::store::Journal)); a worker then fans it out into one delivery per endpoint
//! of the team that wants its type ([`fan_out`]) and sends each, retrying on a schedule. The
//! deliveries of one endpoint about one resource are sent in the order of their events
//! ([`first_of_chains`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{DeliveryId, EventId, TeamId, Timestamp, WebhookId};

use super::{Action, Hwid, License, LicenseSession, OutboxMessage, ProductRestriction, Scopes};

/// Event types raised by the server itself, besides the [`Action`]s of writes and the
/// [`ClientEvent`]s of the client API: the test event of `POST …/webhooks/{id}/test`. (An
/// endpoint may ask only for types that are raised.)
pub const SERVER_EVENT_TYPES: &[&str] = &["webhook.test"];

/// An event the client API raises (no write of the developer API causes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientEvent {
    /// An `ACTIVATION` license's clock started: the first successful request.
    LicenseActivated,
    /// A request found the license past its expiration date, for the first time for that date.
    LicenseExpired,
    /// A request recorded a new hardware identifier.
    DeviceActivated,
    /// A request was refused for the hardware-identifier limit.
    DeviceLimitReached,
    /// A request was refused for the IP-address limit.
    IpLimitReached,
    /// A request was refused by a blacklist entry.
    VerificationBlacklisted,
    /// (ext) A floating session started.
    SessionStarted,
    /// (ext) An application ended its floating session.
    SessionEnded,
    /// (ext) A floating session expired without a heartbeat and the server deleted it.
    SessionExpired,
    /// (ext) An update artifact was downloaded (once per license, artifact and address in ten
    /// minutes).
    ReleaseDownloaded,
    /// (ext) A license's meter passed 80% of its limit (once per period).
    UsageThreshold,
    /// (ext) A license's meter reached its limit.
    UsageExhausted,
}

impl ClientEvent {
    /// Every client event.
    pub const ALL: [ClientEvent; 12] = [
        Self::LicenseActivated,
        Self::LicenseExpired,
        Self::DeviceActivated,
        Self::DeviceLimitReached,
        Self::IpLimitReached,
        Self::VerificationBlacklisted,
        Self::SessionStarted,
        Self::SessionEnded,
        Self::SessionExpired,
        Self::ReleaseDownloaded,
        Self::UsageThreshold,
        Self::UsageExhausted,
    ];

    /// The event type, such as `device.activated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LicenseActivated => "license.activated",
            Self::LicenseExpired => "license.expired",
            Self::DeviceActivated => "device.activated",
            Self::DeviceLimitReached => "device.limit_reached",
            Self::IpLimitReached => "ip.limit_reached",
            Self::VerificationBlacklisted => "verification.blacklisted",
            Self::SessionStarted => "session.started",
            Self::SessionEnded => "session.ended",
            Self::SessionExpired => "session.expired",
            Self::ReleaseDownloaded => "release.downloaded",
            Self::UsageThreshold => "usage.threshold",
            Self::UsageExhausted => "usage.exhausted",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// (ext) The event of this type about floating session `session` of `license`.
    pub fn session_event(
        self,
        license: &License,
        session: &LicenseSession,
        now: Timestamp,
    ) -> WebhookEvent {
        self.event(
            license.team_id,
            "session",
            session.id,
            serde_json::to_value(session).unwrap_or(Value::Null),
            now,
        )
        .tied_to(&license.product_ids)
    }

    /// The event of this type about `resource_type:resource_id` of `team` at `now`.
    pub fn event(
        self,
        team: TeamId,
        resource_type: &str,
        resource_id: impl std::fmt::Display,
        data: Value,
        now: Timestamp,
    ) -> WebhookEvent {
        WebhookEvent {
            id: EventId::ordered(),
            team_id: team,
            event_type: self.as_str().to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id: resource_id.to_string(),
            created_at: now,
            data,
            changed_fields: None,
            product_ids: None,
        }
    }
}

/// The client events some enabled endpoint of a team wants, read with the team: the client
/// API raises only these, so that a team without endpoints pays nothing on its hot path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientEvents(u16);

impl ClientEvents {
    /// None wanted.
    pub const NONE: ClientEvents = ClientEvents(0);

    /// Every client event (tests).
    pub const ALL: ClientEvents = ClientEvents(0b1111_1111_1111);

    /// What the enabled ones among `endpoints` want.
    pub fn of(endpoints: &[WebhookEndpoint]) -> Self {
        let mut bits = 0;
        for endpoint in endpoints.iter().filter(|e| e.enabled) {
            for event in ClientEvent::ALL {
                if endpoint.wants(event.as_str()) {
                    bits |= event.bit();
                }
            }
        }
        Self(bits)
    }

    /// Whether `event` is wanted.
    pub fn wants(self, event: ClientEvent) -> bool {
        self.0 & event.bit() != 0
    }
}

/// The events of an admitted client request that `wants` asks for: `device.activated` with
/// the new hardware-identifier record, and `license.activated` with the license after the
/// request when its clock started. A store writes them in the atomic step that records the
/// request, so that the event of an answered request is never lost.
pub fn admission_events(
    wants: ClientEvents,
    new_device: Option<&Hwid>,
    license: &License,
    activated: bool,
    now: Timestamp,
) -> Vec<WebhookEvent> {
    let mut out = Vec::new();
    if let Some(device) = new_device.filter(|_| wants.wants(ClientEvent::DeviceActivated)) {
        out.push(
            ClientEvent::DeviceActivated
                .event(
                    license.team_id,
                    "device",
                    device.id,
                    serde_json::to_value(device).unwrap_or(Value::Null),
                    now,
                )
                .tied_to(&license.product_ids),
        );
    }
    if activated && wants.wants(ClientEvent::LicenseActivated) {
        out.push(
            ClientEvent::LicenseActivated
                .event(
                    license.team_id,
                    "license",
                    license.id,
                    serde_json::to_value(license).unwrap_or(Value::Null),
                    now,
                )
                .tied_to(&license.product_ids),
        );
    }
    out
}

/// Every event type an endpoint may ask for, in a stable order.
pub fn event_types() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Action::ALL
        .iter()
        .filter(|a| a.raises_event())
        .map(|a| a.as_str())
        .collect();
    out.extend(ClientEvent::ALL.iter().map(|e| e.as_str()));
    out.extend_from_slice(SERVER_EVENT_TYPES);
    out
}

/// Whether `pattern` is an event type, `resource.*` for a resource's every type, or `*`.
pub fn event_pattern_valid(pattern: &str) -> bool {
    let types = event_types();
    if pattern == "*" || types.contains(&pattern) {
        return true;
    }
    pattern.strip_suffix(".*").is_some_and(|resource| {
        types
            .iter()
            .any(|t| t.split_once('.').is_some_and(|(r, _)| r == resource))
    })
}

/// Whether `event_type` matches `pattern` (an event type, `resource.*` or `*`).
pub fn event_pattern_matches(pattern: &str, event_type: &str) -> bool {
    if pattern == "*" || pattern == event_type {
        return true;
    }
    pattern.strip_suffix(".*").is_some_and(|resource| {
        event_type
            .split_once('.')
            .is_some_and(|(r, _)| r == resource)
    })
}

/// Why the server disabled an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DisabledReason {
    /// Every delivery failed for the configured time (three days by default).
    Failing,
}

/// A team's webhook endpoint, as stored (with its signing secrets).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpoint {
    /// Id.
    pub id: WebhookId,
    /// The owning team.
    pub team_id: TeamId,
    /// Where events are POSTed.
    pub url: String,
    /// A note for people.
    pub description: Option<String>,
    /// The event types it wants (types, `resource.*` or `*`); empty means every type.
    pub event_types: Vec<String>,
    /// Whether events are delivered to it.
    pub enabled: bool,
    /// Why the server disabled it, when it did.
    pub disabled_reason: Option<DisabledReason>,
    /// Since when every delivery failed (`None` after a success).
    pub failing_since: Option<Timestamp>,
    /// Who is told by e-mail when the server disables it (when SMTP is configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_email: Option<String>,
    /// The signing secret (`whsec_…`).
    pub secret: String,
    /// The secret before the last rotation, which still signs until `previous_secret_until`.
    pub previous_secret: Option<String>,
    /// When the previous secret stops signing.
    pub previous_secret_until: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
    /// What it may receive: the scopes of the API key (or staff role) that created it. An
    /// event about records those scopes cannot read is not sent to it.
    #[serde(default)]
    pub scopes: Scopes,
    /// The products its creator was restricted to: an event about records of other products
    /// is not sent to it. `None`: every product.
    #[serde(default)]
    pub product_ids: ProductRestriction,
}

impl std::fmt::Debug for WebhookEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("id", &self.id)
            .field("team_id", &self.team_id)
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("enabled", &self.enabled)
            .field("disabled_reason", &self.disabled_reason)
            .field("failing_since", &self.failing_since)
            .finish_non_exhaustive()
    }
}

impl WebhookEndpoint {
    /// Whether it may receive `event`: its creator could read the record the event is about
    /// (see [`sight`](super::sight)).
    pub fn may_receive(&self, event: &WebhookEvent) -> bool {
        let kind = event
            .event_type
            .split_once('.')
            .map_or(event.event_type.as_str(), |(kind, _)| kind);
        super::sight(
            &self.scopes,
            &self.product_ids,
            kind,
            event.product_ids.as_deref(),
        ) == super::Sight::Whole
    }

    /// Whether it wants events of `event_type` (enabled or not).
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.is_empty()
            || self
                .event_types
                .iter()
                .any(|p| event_pattern_matches(p, event_type))
    }

    /// The secrets that sign a delivery at `now`: the current one, and the previous one while
    /// its rotation window lasts.
    pub fn signing_secrets(&self, now: Timestamp) -> Vec<&str> {
        let mut out = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_secret_until)
            && now < until
        {
            out.push(previous);
        }
        out
    }
}

/// An endpoint as the API shows it: everything but its secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    /// Id.
    #[cfg_attr(feature = "openapi", schema(value_type = uuid::Uuid))]
    pub id: WebhookId,
    /// Where events are POSTed.
    pub url: String,
    /// A note for people.
    pub description: Option<String>,
    /// The event types it wants (types, `resource.*` or `*`); empty means every type.
    pub event_types: Vec<String>,
    /// Whether events are delivered to it.
    pub enabled: bool,
    /// `FAILING` when the server disabled it because every delivery failed for three days.
    pub disabled_reason: Option<DisabledReason>,
    /// Since when every delivery failed; `null` after a success.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub failing_since: Option<Timestamp>,
    /// Who is told by e-mail when the server disables it (when the server sends e-mail).
    pub alert_email: Option<String>,
    /// Until when the secret before the last rotation still signs (beside the new one).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub previous_secret_expires_at: Option<Timestamp>,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it was last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
    /// The scopes of the key (or staff role) that created it: it receives only events about
    /// records those let it read.
    #[serde(default)]
    pub scopes: Scopes,
    /// The products its creator was restricted to: it receives only events about their
    /// records. `null`: every product.
    #[serde(default)]
    pub product_ids: Option<Vec<crate::ProductId>>,
}

impl WebhookView {
    /// The view of `e` at `now` (a lapsed rotation window shows as none).
    pub fn of(e: &WebhookEndpoint, now: Timestamp) -> Self {
        Self {
            id: e.id,
            url: e.url.clone(),
            description: e.description.clone(),
            event_types: e.event_types.clone(),
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since,
            alert_email: e.alert_email.clone(),
            previous_secret_expires_at: e.previous_secret_until.filter(|until| now < *until),
            created_at: e.created_at,
            updated_at: e.updated_at,
            scopes: e.scopes.clone(),
            product_ids: e.product_ids.clone(),
        }
    }
}

/// The answer to creating an endpoint or rotating its secret: the secret is shown here only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookWithSecret {
    /// The endpoint.
    #[serde(flatten)]
    pub endpoint: WebhookView,
    /// The signing secret (`whsec_…`), shown once: verify deliveries with it.
    pub secret: String,
}

/// An event raised by a change, waiting to be fanned out to the team's endpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEvent {
    /// Id: the `webhook-id` of its deliveries.
    pub id: EventId,
    /// The team whose change raised it.
    pub team_id: TeamId,
    /// Its type, such as `license.updated`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The type of the resource it is about (`license`, …).
    pub resource_type: String,
    /// The resource's id.
    pub resource_id: String,
    /// When it happened.
    pub created_at: Timestamp,
    /// The resource as the API renders it.
    pub data: Value,
    /// For updates, the names of the fields that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_fields: Option<Vec<String>>,
    /// The products the record belongs to, for records tied to products (see
    /// [`AuditEntry::product_ids`](super::AuditEntry::product_ids)); endpoints restricted to
    /// other products do not receive it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_ids: Option<Vec<crate::ProductId>>,
}

/// The body POSTed for an event.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    id: EventId,
    #[serde(rename = "type")]
    event_type: &'a str,
    team_id: TeamId,
    created_at: Timestamp,
    data: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_fields: Option<&'a [String]>,
}

impl WebhookEvent {
    /// The same event, about a record of `products` (a license's, for a device's event).
    pub fn tied_to(mut self, products: &[crate::ProductId]) -> Self {
        self.product_ids = Some(products.to_vec());
        self
    }

    /// The JSON body its deliveries POST: `{id, type, teamId, createdAt, data}`, with
    /// `changedFields` for updates.
    pub fn body(&self) -> String {
        serde_json::to_string(&Payload {
            id: self.id,
            event_type: &self.event_type,
            team_id: self.team_id,
            created_at: self.created_at,
            data: &self.data,
            changed_fields: self.changed_fields.as_deref(),
        })
        .unwrap_or_default()
    }
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryStatus {
    /// Waiting for its first or next attempt.
    Pending,
    /// The endpoint answered 2xx.
    Succeeded,
    /// Every attempt of the schedule failed, or the endpoint was disabled.
    Failed,
}

/// One attempt to deliver.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// When it started.
    pub at: Timestamp,
    /// The HTTP status the endpoint answered, if it answered.
    pub status_code: Option<u16>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// Why it failed (refused destination, time-out, connection error, non-2xx status).
    pub error: Option<String>,
    /// The start of the response body (at most 1 KiB, as text).
    pub response: Option<String>,
}

/// Attempts a delivery keeps (the latest).
pub const ATTEMPTS_KEPT: usize = 20;

/// One event's delivery to one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    /// Id.
    #[cfg_attr(feature = "openapi", schema(value_type = uuid::Uuid))]
    pub id: DeliveryId,
    /// The owning team.
    #[cfg_attr(feature = "openapi", schema(value_type = uuid::Uuid))]
    pub team_id: TeamId,
    /// The endpoint.
    #[cfg_attr(feature = "openapi", schema(value_type = uuid::Uuid))]
    pub endpoint_id: WebhookId,
    /// The event (the `webhook-id` header).
    #[cfg_attr(feature = "openapi", schema(value_type = uuid::Uuid))]
    pub event_id: EventId,
    /// The event's type.
    pub event_type: String,
    /// `type:id` of the resource: deliveries of one endpoint about one resource go in order.
    pub resource: String,
    /// The exact body, the same on every attempt.
    pub payload: String,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made so far.
    pub attempt_count: u32,
    /// The latest attempts, oldest first.
    pub attempts: Vec<DeliveryAttempt>,
    /// When the next attempt is due (pending deliveries).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub next_attempt_at: Option<Timestamp>,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

impl WebhookDelivery {
    /// A pending delivery of `event` to `endpoint`, due at `now`.
    pub fn new(event: &WebhookEvent, endpoint: WebhookId, now: Timestamp) -> Self {
        Self::of_payload(
            event.team_id,
            endpoint,
            event.id,
            &event.event_type,
            format!("{}:{}", event.resource_type, event.resource_id),
            event.body(),
            now,
        )
    }

    /// A pending delivery of a body made elsewhere (a redelivery, a test event).
    pub fn of_payload(
        team: TeamId,
        endpoint: WebhookId,
        event: EventId,
        event_type: &str,
        resource: String,
        payload: String,
        now: Timestamp,
    ) -> Self {
        Self {
            id: DeliveryId::ordered(),
            team_id: team,
            endpoint_id: endpoint,
            event_id: event,
            event_type: event_type.to_owned(),
            resource,
            payload,
            status: DeliveryStatus::Pending,
            attempt_count: 0,
            attempts: Vec::new(),
            next_attempt_at: Some(now),
            created_at: now,
        }
    }

    /// Records an attempt, keeping the latest [`ATTEMPTS_KEPT`].
    pub fn record(&mut self, attempt: DeliveryAttempt) {
        self.attempt_count += 1;
        self.attempts.push(attempt);
        if self.attempts.len() > ATTEMPTS_KEPT {
            self.attempts.remove(0);
        }
    }

    /// The key of its ordering chain: deliveries of one endpoint about one resource.
    pub fn chain(&self) -> (WebhookId, &str) {
        (self.endpoint_id, &self.resource)
    }

    /// Its place in its chain: by event, then by id (a redelivery goes after the first try).
    pub fn order(&self) -> (EventId, DeliveryId) {
        (self.event_id, self.id)
    }
}

/// The deliveries `event` fans out to among the team's `endpoints`: one per enabled endpoint
/// that wants its type.
pub fn fan_out(
    event: &WebhookEvent,
    endpoints: &[WebhookEndpoint],
    now: Timestamp,
) -> Vec<WebhookDelivery> {
    let mut body = None;
    endpoints
        .iter()
        .filter(|e| {
            e.team_id == event.team_id
                && e.enabled
                && e.wants(&event.event_type)
                && e.may_receive(event)
        })
        .map(|e| {
            let payload = body.get_or_insert_with(|| event.body()).clone();
            WebhookDelivery::of_payload(
                event.team_id,
                e.id,
                event.id,
                &event.event_type,
                format!("{}:{}", event.resource_type, event.resource_id),
                payload,
                now,
            )
        })
        .collect()
}

/// Among `pending` deliveries (every pending delivery, of any team), those a worker may send at
/// `now`: the first of their chain and due, soonest first, at most `limit`.
pub fn first_of_chains(
    pending: impl IntoIterator<Item = WebhookDelivery>,
    now: Timestamp,
    limit: usize,
) -> Vec<WebhookDelivery> {
    let mut first: std::collections::HashMap<(WebhookId, String), WebhookDelivery> =
        std::collections::HashMap::new();
    for d in pending {
        if d.status != DeliveryStatus::Pending {
            continue;
        }
        match first.entry((d.endpoint_id, d.resource.clone())) {
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if d.order() < o.get().order() {
                    o.insert(d);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(d);
            }
        }
    }
    let mut due: Vec<WebhookDelivery> = first
        .into_values()
        .filter(|d| d.next_attempt_at.is_some_and(|at| at <= now))
        .collect();
    due.sort_by_key(|d| (d.next_attempt_at, d.order()));
    due.truncate(limit);
    due
}

/// The e-mail telling `to` that the server disabled `endpoint` at `now`.
pub fn disabled_alert(endpoint: &WebhookEndpoint, to: &str, now: Timestamp) -> OutboxMessage {
    OutboxMessage::new(
        endpoint.team_id,
        to,
        "Webhook endpoint disabled".to_owned(),
        format!(
            "Every delivery to the webhook endpoint {url} (id {id}) failed since {since}, so the \
             server disabled it at {now}. Events are no longer sent to it.\n\nWhen the \
             endpoint works again, enable it (PATCH .../webhooks/{id} with {{\"enabled\": true}}) \
             and redeliver the failed deliveries from its delivery log.\n",
            url = endpoint.url,
            id = endpoint.id,
            since = endpoint.failing_since.unwrap_or(now),
        ),
        now,
    )
}

/// What [`WebhookStore::webhook_health`](crate::store::WebhookStore::webhook_health) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthChange {
    /// The endpoint afterwards.
    pub endpoint: WebhookEndpoint,
    /// Whether this failure disabled it.
    pub disabled_now: bool,
}

/// Applies a delivery outcome to an endpoint's health at `now`: a success clears
/// `failingSince`; a failure sets it (if unset) and disables the endpoint once it has failed for
/// `disable_after_ms`. Whether it disabled the endpoint now.
pub fn apply_health(
    endpoint: &mut WebhookEndpoint,
    ok: bool,
    now: Timestamp,
    disable_after_ms: i64,
) -> bool {
    if ok {
        endpoint.failing_since = None;
        return false;
    }
    let since = *endpoint.failing_since.get_or_insert(now);
    if endpoint.enabled && now.as_millis() - since.as_millis() >= disable_after_ms {
        endpoint.enabled = false;
        endpoint.disabled_reason = Some(DisabledReason::Failing);
        endpoint.updated_at = now;
        return true;
    }
    false
}

#[cfg(test)]
mod tests;
