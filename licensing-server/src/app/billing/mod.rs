//! (ext) Payment providers' events applied to licenses (protocol.md section 7, "Payments →
//! licenses"): the inbox's checks (the team, the integration, the signature on the raw bytes),
//! then each event as operations performed by the integration (`integration:<provider>` in the
//! audit log), exactly once.
//!
//! Exactly once: the effect's operation carries the event's mark ([`InboundSlot`]), which its
//! journal takes, so that the store records the event as applied in the same atomic step as the
//! effect, refusing an event applied before, a second license for one subscription or
//! purchase, and an event older than the last one applied to its subscription. An effect that
//! writes nothing (a rule that keeps the license) writes the mark alone. The customer is found
//! by e-mail or created under an idempotency claim on the address, which every instance shares,
//! so that two deliveries at once make one customer.

use std::net::IpAddr;

use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{
    ALREADY_LINKED, DUPLICATE_EVENT, ExpirationType, Inbound, InboundEvent, InboundStatus,
    Integration, License, LinkChange, OLDER_EVENT, OnCancel, OnPaymentFailed, OnRefund,
    PaymentLink, PriceRule,
};
use licensing_core::payments::{PaymentEvent, PaymentKind};
use licensing_core::store::{LicenseStore, PaymentStore, StoreError};
use licensing_core::{
    ApiError, CustomerId, InboundId, LicenseId, ProductId, ResultCode, TeamId, Timestamp,
};
use serde_json::json;

use crate::app::journal::InboundSlot;
use crate::app::{Caller, Cx, Run};

use crate::state::AppState;

mod after;
mod purchase;

use after::{change, renew};
use purchase::purchase;

/// A stored secret of `integration`, opened (the inbox's check, and the settings' views).
pub(crate) fn open(
    state: &AppState,
    integration: &Integration,
    stored: &str,
) -> Result<zeroize::Zeroizing<String>, ApiError> {
    state
        .keyring
        .open_secret(
            &licensing_core::model::secret_purpose(integration.team_id, integration.provider),
            stored,
        )
        .map_err(|e| ApiError::internal_because("opening an integration's secret", e))
}

/// What the inbox answers a provider: a status and a small JSON object.
#[derive(Debug)]
pub(crate) struct InboxAnswer {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The body.
    pub(crate) body: serde_json::Value,
}

fn not_received(reason: impl Into<String>) -> InboxAnswer {
    InboxAnswer {
        status: 200,
        body: json!({"received": false, "reason": reason.into()}),
    }
}

fn refused(status: u16, reason: impl Into<String>) -> InboxAnswer {
    InboxAnswer {
        status,
        body: json!({"received": false, "error": reason.into()}),
    }
}

/// `POST /api/v1/integrations/{provider}?teamId=…`: `signature` is the provider's signature
/// header, `body` the raw bytes as received.
pub(crate) async fn receive(
    state: &AppState,
    provider: Provider,
    team: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    client: IpAddr,
) -> InboxAnswer {
    let now = Timestamp::now();
    let Some(team) = team.and_then(|t| t.parse::<TeamId>().ok()) else {
        return not_received(
            "unknown team: the address must end with ?teamId= and the team's id, as the dashboard's integration page shows it",
        );
    };
    if let Some(limiter) = state.limits.inbound.as_ref() {
        let status = limiter.check(&team).await;
        if !status.allowed() {
            return refused(429, "too many events for this team: retry later");
        }
    }
    let integration = match state.store.get_integration(team, provider).await {
        Ok(Some(i)) => i,
        Ok(None) => {
            return not_received(format!(
                "no {} integration is set up for this team",
                provider.title()
            ));
        }
        Err(e) => {
            tracing::error!(error = %e, "reading an integration failed");
            return refused(500, "the server could not read the integration: retry");
        }
    };
    if !integration.enabled {
        return not_received(format!(
            "the team's {} integration is disabled",
            provider.title()
        ));
    }
    let mut secrets = Vec::new();
    for stored in integration.secrets(now) {
        match open(state, &integration, stored) {
            Ok(secret) => secrets.push(secret),
            Err(e) => {
                tracing::error!(error = ?e.cause(), "opening an integration's secret failed");
                return refused(500, "the server could not open the integration's secret");
            }
        }
    }
    let secrets: Vec<&str> = secrets.iter().map(|s| s.as_str()).collect();
    if let Err(e) = provider.verify(signature, body, &secrets, now.as_millis() / 1000) {
        return refused(
            400,
            format!("{e}: nothing was stored (check the webhook secret saved for the integration)"),
        );
    }
    let event = match PaymentEvent::parse(provider, body) {
        Ok(event) => event,
        Err(e) => return refused(400, e.to_string()),
    };
    let cx = Cx::new(
        state.clone(),
        team,
        Caller::integration(provider.as_str()),
        now,
        client,
    );
    let record = deliver(
        &cx,
        &integration,
        &event,
        String::from_utf8_lossy(body).into_owned(),
    )
    .await;
    answer(&record)
}

/// The inbox's answer for a delivery's record.
fn answer(record: &InboundEvent) -> InboxAnswer {
    let mut body = json!({"received": true, "status": record.status.as_str()});
    if let Some(reason) = &record.reason {
        body["reason"] = json!(reason);
    }
    if let Some(license) = record.license_id {
        body["licenseId"] = json!(license.to_string());
    }
    match record.status {
        InboundStatus::Duplicate => body["duplicate"] = json!(true),
        InboundStatus::Failed => {
            return InboxAnswer { status: 500, body };
        }
        _ => {}
    }
    InboxAnswer { status: 200, body }
}

/// Applies a received event again, as a new delivery performed by its integration.
pub(crate) async fn replay(
    cx: &Cx,
    integration: &Integration,
    stored: &InboundEvent,
) -> Result<InboundEvent, ApiError> {
    let event = PaymentEvent::parse(stored.provider, stored.payload.as_bytes()).map_err(|e| {
        ApiError::bad_request(format!("the stored payload cannot be replayed: {e}"))
    })?;
    let cx = Cx::new(
        cx.state.clone(),
        cx.team,
        Caller::integration(stored.provider.as_str()),
        cx.now,
        cx.client,
    );
    Ok(deliver(&cx, integration, &event, stored.payload.clone()).await)
}

/// What applying an event came to.
enum Done {
    /// Applied: recorded with its effect.
    Applied(InboundEvent),
    /// Applied before (by that delivery).
    Duplicate(Option<InboundId>),
    /// Nothing to do, and why.
    Skipped(String, Option<LicenseId>),
}

fn skipped(reason: impl Into<String>) -> Result<Done, ApiError> {
    Ok(Done::Skipped(reason.into(), None))
}

/// One delivery of `event`: applied (or not), and recorded.
async fn deliver(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    mut payload: String,
) -> InboundEvent {
    if payload.len() > licensing_core::model::MAX_INBOUND_BODY {
        payload.truncate(payload.floor_char_boundary(licensing_core::model::MAX_INBOUND_BODY));
    }
    let base = InboundEvent {
        id: InboundId::ordered(),
        team_id: cx.team,
        provider: event.provider,
        event_id: event.id.clone(),
        event_type: event.kind_name.clone(),
        status: InboundStatus::Applied,
        reason: None,
        received_at: cx.now,
        license_id: None,
        payload,
    };
    // Boxed: applying an event performs whole operations, a large future to keep off the
    // stack of whoever waits for it (the dashboard's replay, a test's runtime).
    let record = match Box::pin(apply(cx, integration, event, &base)).await {
        Ok(Done::Applied(record)) => return record,
        Ok(Done::Duplicate(first)) => InboundEvent {
            status: InboundStatus::Duplicate,
            reason: Some(match first {
                Some(first) => format!("applied already (delivery {first}): nothing changed"),
                None => "applied already: nothing changed".to_owned(),
            }),
            ..base
        },
        Ok(Done::Skipped(reason, license_id)) => InboundEvent {
            status: InboundStatus::Skipped,
            reason: Some(reason),
            license_id,
            ..base
        },
        Err(e) => {
            tracing::warn!(provider = %event.provider, event = %event.id, error = %e.details(), cause = ?e.cause(), "applying a payment event failed");
            InboundEvent {
                status: InboundStatus::Failed,
                reason: Some(format!("{}: the provider retries it", e.details())),
                ..base
            }
        }
    };
    if let Err(e) = cx.state.store.record_inbound(&record).await {
        tracing::error!(error = %e, "recording a payment event failed");
    }
    record
}

/// The ids the event names its purchase by: its subscription, its payment, the payment's other
/// id.
fn subjects(event: &PaymentEvent) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in [
        &event.subscription_id,
        &event.payment_id,
        &event.payment_alias,
    ]
    .into_iter()
    .flatten()
    {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// The link of the first of `subjects` that has one.
async fn find_link(
    cx: &Cx,
    provider: Provider,
    subjects: &[String],
) -> Result<Option<PaymentLink>, ApiError> {
    for subject in subjects {
        if let Some(link) = cx
            .state
            .store
            .payment_link(cx.team, provider, subject)
            .await?
        {
            return Ok(Some(link));
        }
    }
    Ok(None)
}

/// The field of a refusal, when it is one of the mark's.
fn mark_refusal(e: &ApiError) -> Option<&'static str> {
    let field = e.field_errors().first().map(|f| f.field.as_str())?;
    [DUPLICATE_EVENT, ALREADY_LINKED, OLDER_EVENT]
        .into_iter()
        .find(|f| *f == field)
}

async fn apply(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
) -> Result<Done, ApiError> {
    let store = &cx.state.store;
    if let Some(first) = store
        .inbound_applied(cx.team, event.provider, &event.id)
        .await?
    {
        return Ok(Done::Duplicate(Some(first)));
    }
    let subjects = subjects(event);
    if event.kind == PaymentKind::Ignored {
        return skipped(format!(
            "{} changes no license: nothing to do",
            event.kind_name
        ));
    }
    if subjects.is_empty() {
        return skipped("the event names no subscription or payment");
    }
    let done = match find_link(cx, event.provider, &subjects).await? {
        None if event.kind == PaymentKind::Purchase => {
            Box::pin(purchase(cx, integration, event, base, &subjects)).await
        }
        None => {
            return skipped(format!(
                "no license was made for {} (bought before the integration was set up, or its purchase was skipped)",
                subjects.join(" / ")
            ));
        }
        Some(link) => {
            let Some(license) = linked_license(cx, &link).await? else {
                return skipped(format!("its license {} was deleted", link.license_id));
            };
            match event.kind {
                PaymentKind::Purchase | PaymentKind::Renewal => {
                    Box::pin(renew(
                        cx,
                        integration,
                        event,
                        base,
                        &subjects,
                        &link,
                        license,
                    ))
                    .await
                }
                _ => {
                    Box::pin(change(
                        cx,
                        integration,
                        event,
                        base,
                        &subjects,
                        &link,
                        license,
                    ))
                    .await
                }
            }
        }
    };
    match done {
        Err(e) => match mark_refusal(&e) {
            Some(DUPLICATE_EVENT) => Ok(Done::Duplicate(
                store
                    .inbound_applied(cx.team, event.provider, &event.id)
                    .await?,
            )),
            Some(OLDER_EVENT) => skipped(format!(
                "it happened before the last event applied to {}: nothing changed (deliveries arrive out of order)",
                subjects.join(" / ")
            )),
            Some(ALREADY_LINKED) => {
                // Another delivery of the same purchase made its license meanwhile.
                if let Some(first) = store
                    .inbound_applied(cx.team, event.provider, &event.id)
                    .await?
                {
                    return Ok(Done::Duplicate(Some(first)));
                }
                let link = find_link(cx, event.provider, &subjects).await?;
                match link {
                    Some(link) => match linked_license(cx, &link).await? {
                        Some(license) => {
                            renew(cx, integration, event, base, &subjects, &link, license).await
                        }
                        None => Err(e),
                    },
                    None => Err(e),
                }
            }
            _ => Err(e),
        },
        done => done,
    }
}

/// The payment provider's billing page for the buyer of `license`, for a customer in the
/// portal: from the license's newest payment link of an enabled integration with an API key,
/// minted through the provider's API (coming back to `return_url` where the provider asks);
/// `None` when no integration or provider knows the license's buyer.
pub(crate) async fn billing_page(
    cx: &Cx,
    license: &licensing_core::model::License,
    return_url: &str,
) -> Result<Option<String>, ApiError> {
    use licensing_core::store::PaymentStore;
    let integrations: Vec<Integration> = cx
        .state
        .store
        .list_integrations(cx.team)
        .await?
        .into_iter()
        .filter(|i| i.enabled && i.api_key.is_some())
        .collect();
    if integrations.is_empty() {
        return Ok(None);
    }
    let mut links: Vec<licensing_core::model::PaymentLink> = cx
        .state
        .store
        .list_payment_links(cx.team)
        .await?
        .into_iter()
        .filter(|l| l.license_id == license.id)
        .collect();
    links.sort_by_key(|l| std::cmp::Reverse(l.last_event_at));
    for link in links {
        let Some(integration) = integrations.iter().find(|i| i.provider == link.provider) else {
            continue;
        };
        let Some(key) = api_key(cx, integration)? else {
            continue;
        };
        match cx
            .state
            .providers
            .billing_page(link.provider, &key, &link.subject, return_url)
            .await
        {
            Ok(Some(url)) => return Ok(Some(url)),
            Ok(None) => {}
            Err(e) => {
                return Err(ApiError::internal_because(
                    "minting a billing page at the payment provider",
                    e,
                ));
            }
        }
    }
    Ok(None)
}

/// Whether the team has an integration that can mint billing pages (enabled, with an API key).
pub(crate) async fn offers_billing(cx: &Cx) -> Result<bool, ApiError> {
    use licensing_core::store::PaymentStore;
    Ok(cx
        .state
        .store
        .list_integrations(cx.team)
        .await?
        .iter()
        .any(|i| i.enabled && i.api_key.is_some()))
}

/// The integration's API key, opened.
fn api_key(
    cx: &Cx,
    integration: &Integration,
) -> Result<Option<zeroize::Zeroizing<String>>, ApiError> {
    integration
        .api_key
        .as_deref()
        .map(|stored| open(&cx.state, integration, stored))
        .transpose()
}

fn needs_key(what: &str) -> String {
    format!(
        "{what} is not in the event: give the integration an apiKey so that the server can read it from the provider"
    )
}

/// Performs `op` as the effect of the event `mark` records: its journal carries the mark, or,
/// when it journals nothing, the mark is written alone after it.
async fn effect<O: Run>(cx: &Cx, mark: Inbound, op: O) -> Result<O::Output, ApiError> {
    let slot = InboundSlot::holding(mark);
    let marked = Cx::new(
        cx.state.clone(),
        cx.team,
        cx.caller.clone(),
        cx.now,
        cx.client,
    )
    .with_inbound(slot.clone());
    let out = Box::pin(marked.perform(op)).await?;
    if let Some(mark) = slot.take() {
        mark_alone(cx, &mark).await?;
    }
    Ok(out)
}

/// Writes an event's mark without an effect.
async fn mark_alone(cx: &Cx, mark: &Inbound) -> Result<(), ApiError> {
    cx.state
        .store
        .apply_inbound(mark)
        .await
        .map_err(|e| match e {
            StoreError::Conflict { field, message } => ApiError::bad_field(field, &message),
            other => other.into(),
        })
}

/// The mark of an event applied to `link`'s license: the link moves to when it happened, and
/// the purchase's other ids are linked beside it.
fn advance(
    cx: &Cx,
    event: &PaymentEvent,
    record: &InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
) -> Inbound {
    let more = subjects
        .iter()
        .filter(|s| **s != link.subject)
        .map(|subject| PaymentLink {
            subject: subject.clone(),
            ..link.clone()
        })
        .collect();
    Inbound {
        event: InboundEvent {
            license_id: Some(link.license_id),
            ..record.clone()
        },
        links: LinkChange::Advance {
            subject: link.subject.clone(),
            occurred_at: event.occurred_at.unwrap_or(cx.now),
            more,
        },
    }
}

/// Applies `record` (its reason set) to `link`'s license with no change: the mark alone.
async fn kept(
    cx: &Cx,
    event: &PaymentEvent,
    record: InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
) -> Result<Done, ApiError> {
    let mark = advance(cx, event, &record, subjects, link);
    mark_alone(cx, &mark).await?;
    Ok(Done::Applied(mark.event))
}

/// `link`'s license, if it still exists.
async fn linked_license(cx: &Cx, link: &PaymentLink) -> Result<Option<License>, ApiError> {
    Ok(cx.state.store.get_license(cx.team, link.license_id).await?)
}

/// The rule `link`'s license was made by, if it still exists.
fn rule_of<'a>(integration: &'a Integration, link: &PaymentLink) -> Option<&'a PriceRule> {
    link.rule_id.and_then(|id| integration.rule(id))
}

/// The license's expiry, when it has a date.
fn dated(license: &License) -> Option<Timestamp> {
    (license.expiration_type == ExpirationType::Date)
        .then_some(license.expiration_date)
        .flatten()
}
