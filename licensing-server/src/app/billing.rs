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

use licensing_core::api::requests::{
    CustomerBody, CustomerListQuery, LicenseCreate, LicenseUpdate, Patch, RawMetadata,
};
use licensing_core::crypto::inbound::Provider;
use licensing_core::idempotency::IdempotencyKey;
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
use sha2::{Digest, Sha256};

use super::customers::{CreateCustomer, ListCustomers};
use super::journal::InboundSlot;
use super::licenses::{CreateLicense, DeleteLicense, UpdateLicense};
use super::{Caller, Cx, Run};
use crate::state::AppState;

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
        match super::integrations::open(state, &integration, stored) {
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
        Some(link) => match event.kind {
            PaymentKind::Purchase | PaymentKind::Renewal => {
                Box::pin(renew(cx, integration, event, base, &subjects, &link)).await
            }
            _ => Box::pin(change(cx, integration, event, base, &subjects, &link)).await,
        },
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
                match find_link(cx, event.provider, &subjects).await? {
                    Some(link) => renew(cx, integration, event, base, &subjects, &link).await,
                    None => Err(e),
                }
            }
            _ => Err(e),
        },
        done => done,
    }
}

/// The integration's API key, opened.
fn api_key(
    cx: &Cx,
    integration: &Integration,
) -> Result<Option<zeroize::Zeroizing<String>>, ApiError> {
    integration
        .api_key
        .as_deref()
        .map(|stored| super::integrations::open(&cx.state, integration, stored))
        .transpose()
}

fn needs_key(what: &str) -> String {
    format!(
        "{what} is not in the event: give the integration an apiKey so that the server can read it from the provider"
    )
}

/// What a purchase made without a rule gets, from the Stripe product's metadata (the keys
/// Lukittu reads).
struct ProductTerms {
    product_ids: Vec<ProductId>,
    hwid_limit: Option<i64>,
    ip_limit: Option<i64>,
    expiration_days: Option<i64>,
    expiration_start: Option<String>,
}

fn product_terms(
    metadata: &std::collections::BTreeMap<String, String>,
) -> Result<Option<ProductTerms>, String> {
    let Some(ids) = metadata.get("product_id") else {
        return Ok(None);
    };
    let product_ids = ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<ProductId>().map_err(|_| {
                format!("product_id names `{s}`, which is not a product id of this server")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let number = |key: &str| -> Result<Option<i64>, String> {
        metadata
            .get(key)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| format!("{key} is `{v}`, not a whole number of at least 0"))
            })
            .transpose()
    };
    let expiration_start = metadata
        .get("expiration_start")
        .map(|v| v.trim().to_ascii_uppercase());
    if let Some(start) = &expiration_start
        && start != "CREATION"
        && start != "ACTIVATION"
    {
        return Err(format!(
            "expiration_start is `{start}`, not CREATION or ACTIVATION"
        ));
    }
    Ok(Some(ProductTerms {
        product_ids,
        hwid_limit: match number("hwid_limit")? {
            Some(n) => Some(n),
            None => number("seats")?,
        },
        ip_limit: number("ip_limit")?,
        expiration_days: number("expiration_days")?.filter(|d| *d > 0),
        expiration_start,
    }))
}

/// A first purchase: the customer, then one license, linked to every id of the purchase.
async fn purchase(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
    subjects: &[String],
) -> Result<Done, ApiError> {
    let mut event = event.clone();
    if event.provider == Provider::Stripe && event.prices.is_empty() && event.products.is_empty() {
        // A checkout's line items are not in its event.
        let Some(key) = api_key(cx, integration)? else {
            return skipped(needs_key("what the checkout sold"));
        };
        let session = event.payment_id.clone().unwrap_or_default();
        let items = cx
            .state
            .providers
            .stripe_line_items(&key, &session)
            .await
            .map_err(|e| ApiError::internal_because("reading the checkout's line items", e))?;
        for item in items {
            event.prices.extend(item.price);
            event.products.extend(item.product);
        }
    }
    let rule = integration.rule_for(&event).cloned();
    let terms = match (&rule, event.provider) {
        (Some(_), _) => None,
        (None, Provider::Stripe) => match stripe_terms(cx, integration, &event).await? {
            Ok(Some(terms)) => Some(terms),
            Ok(None) => return skipped(no_rule(&event, true)),
            Err(reason) => return skipped(reason),
        },
        (None, _) => return skipped(no_rule(&event, false)),
    };
    let email = match (&event.email, event.provider, &event.customer_id) {
        (Some(email), _, _) => Some(email.clone()),
        (None, Provider::Paddle, Some(customer)) => {
            let Some(key) = api_key(cx, integration)? else {
                return skipped(needs_key("the customer's e-mail address"));
            };
            cx.state
                .providers
                .paddle_customer_email(&key, customer)
                .await
                .map_err(|e| ApiError::internal_because("reading the customer", e))?
        }
        _ => None,
    };
    let Some(email) = email else {
        return skipped("the event names no customer e-mail address: no license was made");
    };
    let customer = match customer_for(cx, &email).await {
        Ok(id) => id,
        Err(e) if e.code() == ResultCode::BadRequest => {
            return skipped(format!(
                "the customer's e-mail address is refused: {}",
                e.details()
            ));
        }
        Err(e) => return Err(e),
    };
    let subscription_end = event.subscription_id.as_ref().and(event.period_end);
    let mut body = LicenseCreate {
        customer_ids: Some(vec![customer.to_string()]),
        send_email_delivery: Some(
            cx.state.mailer.is_some() && rule.as_ref().is_none_or(|r| r.send_license_email),
        ),
        metadata: Some(tags(&event)),
        ..LicenseCreate::default()
    };
    match (&rule, &terms) {
        (Some(rule), _) => {
            body.policy_id = Some(rule.policy_id.to_string());
            body.product_ids = Some(rule.product_ids.iter().map(ToString::to_string).collect());
        }
        (None, Some(t)) => {
            body.product_ids = Some(t.product_ids.iter().map(ToString::to_string).collect());
            body.hwid_limit = t.hwid_limit.map_or(Patch::Missing, Patch::Value);
            body.ip_limit = t.ip_limit.map_or(Patch::Missing, Patch::Value);
            if let Some(days) = t.expiration_days {
                body.expiration_type = Some("DURATION".into());
                body.expiration_days = Some(days);
                body.expiration_start = t.expiration_start.clone();
            } else {
                body.expiration_type = Some("NEVER".into());
            }
        }
        (None, None) => return skipped(no_rule(&event, false)),
    }
    if let Some(end) = subscription_end {
        // A subscription's license runs to the end of the period paid for.
        body.expiration_type = Some("DATE".into());
        body.expiration_date = Some(end.to_string());
        body.expiration_days = None;
        body.expiration_start = None;
    }
    let occurred = event.occurred_at.unwrap_or(cx.now);
    let links = subjects
        .iter()
        .map(|subject| PaymentLink {
            team_id: cx.team,
            provider: event.provider,
            subject: subject.clone(),
            license_id: LicenseId::PENDING,
            rule_id: rule.as_ref().map(|r| r.id),
            last_event_at: occurred,
        })
        .collect();
    let record = InboundEvent {
        reason: Some(match &rule {
            Some(rule) => format!(
                "license created for {email} by the rule for {} {}",
                rule.matches.name(),
                rule.matches.value()
            ),
            None => format!("license created for {email} from the Stripe product's metadata"),
        }),
        ..base.clone()
    };
    let mark = Inbound {
        event: record.clone(),
        links: LinkChange::Create(links),
    };
    let detail = effect(cx, mark, CreateLicense(body)).await?;
    Ok(Done::Applied(InboundEvent {
        license_id: Some(detail.license.id),
        ..record
    }))
}

fn no_rule(event: &PaymentEvent, stripe: bool) -> String {
    let bought = match (event.prices.is_empty(), event.products.is_empty()) {
        (true, true) => "nothing named".to_owned(),
        _ => format!(
            "price {} / product {}",
            if event.prices.is_empty() {
                "-".to_owned()
            } else {
                event.prices.join(", ")
            },
            if event.products.is_empty() {
                "-".to_owned()
            } else {
                event.products.join(", ")
            }
        ),
    };
    if stripe {
        format!(
            "no rule matches {bought}, and no product has the product_id metadata: add a rule (or the metadata), then replay the event"
        )
    } else {
        format!("no rule matches {bought}: add a rule, then replay the event")
    }
}

/// The terms of a Stripe purchase without a rule, from its products' metadata: `Ok(None)` when
/// none has any, `Err` with the reason when it is unusable.
async fn stripe_terms(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
) -> Result<Result<Option<ProductTerms>, String>, ApiError> {
    if event.products.is_empty() {
        return Ok(Ok(None));
    }
    let Some(key) = api_key(cx, integration)? else {
        return Ok(Err(format!(
            "no rule matches price {} and {}",
            event.prices.join(", "),
            needs_key("the product's metadata")
        )));
    };
    for product in &event.products {
        let metadata = cx
            .state
            .providers
            .stripe_product_metadata(&key, product)
            .await
            .map_err(|e| ApiError::internal_because("reading the product", e))?;
        if let Some(metadata) = metadata {
            match product_terms(&metadata) {
                Ok(Some(terms)) => return Ok(Ok(Some(terms))),
                Ok(None) => {}
                Err(reason) => {
                    return Ok(Err(format!(
                        "the metadata of Stripe product {product}: {reason}"
                    )));
                }
            }
        }
    }
    Ok(Ok(None))
}

/// The metadata a license made for `event` is tagged with.
fn tags(event: &PaymentEvent) -> Vec<RawMetadata> {
    let mut tags = vec![RawMetadata::new("provider", event.provider.as_str())];
    if let Some(customer) = &event.customer_id {
        tags.push(RawMetadata::new("providerCustomerId", customer.as_str()));
    }
    match (&event.subscription_id, &event.payment_id) {
        (Some(subscription), _) => {
            tags.push(RawMetadata::new("subscriptionId", subscription.as_str()))
        }
        (None, Some(payment)) => tags.push(RawMetadata::new("paymentId", payment.as_str())),
        (None, None) => {}
    }
    tags
}

/// The customer with address `email`, created when there is none: under an idempotency claim
/// on the address, so that deliveries at once (on any instance) make one.
async fn customer_for(cx: &Cx, email: &str) -> Result<CustomerId, ApiError> {
    if let Some(found) = find_customer(cx, email).await? {
        return Ok(found);
    }
    let digest = hex::encode(Sha256::digest(email.trim().to_lowercase().as_bytes()));
    let key = IdempotencyKey::parse(format!("payment-customer-{digest}").as_bytes())?;
    let body = CustomerBody {
        email: Patch::Value(email.trim().to_owned()),
        ..CustomerBody::default()
    };
    for _ in 0..100 {
        match Box::pin(cx.once(key.clone(), CreateCustomer(body.clone()))).await {
            Ok(made) => {
                tracing::debug!(replayed = made.replayed, details = %made.details, "the buyer's customer");
                return Ok(made.answer.id);
            }
            Err(e) if e.code() == ResultCode::IdempotencyKeyInUse => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::internal_because(
        "creating the customer",
        "another delivery held its claim too long",
    ))
}

async fn find_customer(cx: &Cx, email: &str) -> Result<Option<CustomerId>, ApiError> {
    let search: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("search", email.trim())
        .append_pair("pageSize", "100")
        .finish();
    let Ok(query) = CustomerListQuery::parse(&search) else {
        return Ok(None);
    };
    let page = Box::pin(cx.perform(ListCustomers(query))).await?;
    Ok(page
        .items
        .iter()
        .find(|c| {
            c.email
                .as_ref()
                .is_some_and(|e| e.as_str().eq_ignore_ascii_case(email.trim()))
        })
        .map(|c| c.id))
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

/// A renewal (or another event of a purchase whose license exists): the expiry moves to the
/// later of its date and the new period's end.
async fn renew(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
) -> Result<Done, ApiError> {
    let Some(license) = linked_license(cx, link).await? else {
        return skipped(format!("its license {} was deleted", link.license_id));
    };
    let mut end = event.period_end;
    if end.is_none()
        && event.kind == PaymentKind::Renewal
        && event.provider == Provider::LemonSqueezy
        && let Some(subscription) = &event.subscription_id
    {
        let Some(key) = api_key(cx, integration)? else {
            return Ok(Done::Skipped(
                needs_key("the subscription's renewal date"),
                Some(license.id),
            ));
        };
        end = cx
            .state
            .providers
            .lemonsqueezy_renews_at(&key, subscription)
            .await
            .map_err(|e| ApiError::internal_because("reading the subscription", e))?;
    }
    let lift = license.suspended
        && rule_of(integration, link)
            .is_some_and(|r| r.on_payment_failed == OnPaymentFailed::Suspend)
        && event.kind == PaymentKind::Renewal;
    let current = dated(&license);
    let later = end.filter(|end| {
        current.is_none_or(|c| *end > c) || license.expiration_type != ExpirationType::Date
    });
    if later.is_none() && !lift {
        let reason = match current {
            Some(c) => format!("the license runs to {c} already"),
            None => "the purchase's license exists: nothing to change".to_owned(),
        };
        return kept(
            cx,
            event,
            InboundEvent {
                reason: Some(reason),
                ..base.clone()
            },
            subjects,
            link,
        )
        .await;
    }
    let mut body = LicenseUpdate::default();
    let mut said = Vec::new();
    if let Some(end) = later {
        body.expiration_type = Patch::Value("DATE".into());
        body.expiration_date = Patch::Value(end.to_string());
        said.push(format!("expiry moved to {end}"));
    }
    if lift {
        body.suspended = Patch::Value(false);
        said.push("suspension lifted (the rule suspends on a failed payment)".to_owned());
    }
    let record = InboundEvent {
        reason: Some(said.join("; ")),
        ..base.clone()
    };
    let mark = advance(cx, event, &record, subjects, link);
    let applied = mark.event.clone();
    effect(cx, mark, UpdateLicense(license.id, body)).await?;
    Ok(Done::Applied(applied))
}

/// What a failed payment, a cancellation, an end, a refund or a dispute does, by the rule.
enum Change {
    Keep(&'static str),
    Suspend,
    Delete,
    EndBy(Timestamp),
}

async fn change(
    cx: &Cx,
    integration: &Integration,
    event: &PaymentEvent,
    base: &InboundEvent,
    subjects: &[String],
    link: &PaymentLink,
) -> Result<Done, ApiError> {
    let Some(license) = linked_license(cx, link).await? else {
        return skipped(format!("its license {} was deleted", link.license_id));
    };
    let rule = rule_of(integration, link);
    let on_failed = rule.map_or(OnPaymentFailed::default(), |r| r.on_payment_failed);
    let on_cancel = rule.map_or(OnCancel::default(), |r| r.on_cancel);
    let on_refund = rule.map_or(OnRefund::default(), |r| r.on_refund);
    let occurred = event.occurred_at.unwrap_or(cx.now);
    let what = match event.kind {
        PaymentKind::PaymentFailed => match on_failed {
            OnPaymentFailed::Keep => Change::Keep(
                "payment failed: kept as the rule says (it runs to its date, then the policy's grace)",
            ),
            OnPaymentFailed::Suspend => Change::Suspend,
        },
        PaymentKind::Cancelled => match (on_cancel, event.period_end) {
            (OnCancel::PeriodEnd, Some(end)) => Change::EndBy(end),
            (OnCancel::PeriodEnd, None) => {
                Change::Keep("cancelled: it ends with the period paid for")
            }
            (OnCancel::Now, _) => Change::Suspend,
        },
        PaymentKind::Ended => match on_cancel {
            OnCancel::PeriodEnd => Change::EndBy(occurred),
            OnCancel::Now => Change::Suspend,
        },
        PaymentKind::Refunded | PaymentKind::Disputed => match on_refund {
            OnRefund::Suspend => Change::Suspend,
            OnRefund::Delete => Change::Delete,
            OnRefund::Keep => Change::Keep("refunded: kept as the rule says"),
        },
        PaymentKind::Purchase | PaymentKind::Renewal | PaymentKind::Ignored => {
            return skipped("nothing to change");
        }
    };
    let record = |reason: String| InboundEvent {
        reason: Some(reason),
        ..base.clone()
    };
    match what {
        Change::Keep(reason) => kept(cx, event, record(reason.to_owned()), subjects, link).await,
        Change::Suspend if license.suspended => {
            kept(
                cx,
                event,
                record("the license is suspended already".into()),
                subjects,
                link,
            )
            .await
        }
        Change::Suspend => {
            let mark = advance(
                cx,
                event,
                &record(format!("{}: license suspended", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            let body = LicenseUpdate {
                suspended: Patch::Value(true),
                ..LicenseUpdate::default()
            };
            effect(cx, mark, UpdateLicense(license.id, body)).await?;
            Ok(Done::Applied(applied))
        }
        Change::Delete => {
            let mark = advance(
                cx,
                event,
                &record(format!("{}: license deleted", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            effect(cx, mark, DeleteLicense(license.id)).await?;
            Ok(Done::Applied(applied))
        }
        Change::EndBy(end) => {
            // An end already past is now: the first moment the API takes.
            let end = end.max(cx.now.plus_seconds(1));
            if dated(&license).is_some_and(|c| c <= end) {
                let reason = format!("{}: the license ends by {end} already", event.kind_name);
                return kept(cx, event, record(reason), subjects, link).await;
            }
            let mark = advance(
                cx,
                event,
                &record(format!("{}: the license ends at {end}", event.kind_name)),
                subjects,
                link,
            );
            let applied = mark.event.clone();
            let body = LicenseUpdate {
                expiration_type: Patch::Value("DATE".into()),
                expiration_date: Patch::Value(end.to_string()),
                ..LicenseUpdate::default()
            };
            effect(cx, mark, UpdateLicense(license.id, body)).await?;
            Ok(Done::Applied(applied))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lukittus_product_metadata_reads_as_terms() {
        let id = ProductId::new();
        let meta = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert!(product_terms(&meta(&[("seats", "3")])).unwrap().is_none());
        let terms = product_terms(&meta(&[
            ("product_id", &format!("{id}, ")),
            ("seats", "3"),
            ("ip_limit", "5"),
            ("expiration_days", "30"),
            ("expiration_start", "activation"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(terms.product_ids, vec![id]);
        assert_eq!(terms.hwid_limit, Some(3));
        assert_eq!(terms.ip_limit, Some(5));
        assert_eq!(terms.expiration_days, Some(30));
        assert_eq!(terms.expiration_start.as_deref(), Some("ACTIVATION"));
        let hwid = product_terms(&meta(&[
            ("product_id", &id.to_string()),
            ("hwid_limit", "2"),
            ("seats", "9"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(hwid.hwid_limit, Some(2), "hwid_limit before seats");
        assert!(product_terms(&meta(&[("product_id", "nope")])).is_err());
        assert!(
            product_terms(&meta(&[
                ("product_id", &id.to_string()),
                ("ip_limit", "-1")
            ]))
            .is_err()
        );
    }
}
