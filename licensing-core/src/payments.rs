//! (ext) Payment providers' events, read into one provider-neutral [`PaymentEvent`] (protocol.md
//! section 7, "Payments → licenses"): what happened (a purchase, a renewal, a failed payment, a
//! cancellation, an end, a refund, a dispute), to which subscription or payment, for which
//! customer, of which prices or products, and until when the paid period runs. Pure: the
//! server verifies the signature ([`crate::crypto::inbound`]) before, and applies the event
//! after.
//!
//! Where Stripe keeps what is read: in invoice events, the latest `lines.data[].period.end`, the
//! subscription at `parent.subscription_details.subscription` (API 2025-03-31 and later) or the
//! top-level `subscription` (earlier), the price at `lines.data[].pricing.price_details.price` or
//! `lines.data[].price.id`, the e-mail at `customer_email`; in subscription events,
//! `items.data[].current_period_end` or the older top-level `current_period_end`.

use serde_json::Value;

use crate::Timestamp;
use crate::crypto::inbound::{Provider, lemonsqueezy_event_id};

/// What an event does to the license of its subscription or payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentKind {
    /// A first payment: a one-time purchase, or a subscription's first period.
    Purchase,
    /// A subscription's next period was paid.
    Renewal,
    /// A subscription's payment failed.
    PaymentFailed,
    /// A subscription was cancelled: it ends at the end of the paid period.
    Cancelled,
    /// A subscription ended (deleted, expired, or cancelled at once).
    Ended,
    /// A payment was refunded.
    Refunded,
    /// A payment was disputed (a chargeback).
    Disputed,
    /// An event that changes no license (stored as skipped, with its type as the reason).
    Ignored,
}

/// A provider's event, as the server applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentEvent {
    /// Whose event.
    pub provider: Provider,
    /// Its id: the provider's (`evt_…`, Paddle's `evt_…`), or Lemon Squeezy's derived one.
    pub id: String,
    /// Its type, as the provider names it (`invoice.paid`).
    pub kind_name: String,
    /// What it does.
    pub kind: PaymentKind,
    /// When it happened, by the provider's clock (orders deliveries of one subscription).
    pub occurred_at: Option<Timestamp>,
    /// The subscription, for a subscription's events.
    pub subscription_id: Option<String>,
    /// The payment (a checkout session, an invoice, a transaction, an order).
    pub payment_id: Option<String>,
    /// Another id later events name the same payment by (Stripe's `payment_intent` of a
    /// checkout session or an invoice, which its refunds and disputes name).
    pub payment_alias: Option<String>,
    /// The provider's customer.
    pub customer_id: Option<String>,
    /// The customer's e-mail address, when the payload has it.
    pub email: Option<String>,
    /// The prices (Lemon Squeezy: variants) bought, as strings (a number as its decimal).
    pub prices: Vec<String>,
    /// The provider's products bought.
    pub products: Vec<String>,
    /// The end of the period paid for, when the event says.
    pub period_end: Option<Timestamp>,
}

/// Why a payload is not an event of the provider.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a {provider} event: {reason}")]
pub struct NotAnEvent {
    /// The provider.
    pub provider: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl PaymentEvent {
    /// Reads a provider's webhook payload.
    pub fn parse(provider: Provider, body: &[u8]) -> Result<Self, NotAnEvent> {
        let not = |reason: &str| NotAnEvent {
            provider: provider.as_str(),
            reason: reason.to_owned(),
        };
        let v: Value = serde_json::from_slice(body).map_err(|e| not(&format!("{e}")))?;
        if !v.is_object() {
            return Err(not("the body is not a JSON object"));
        }
        match provider {
            Provider::Stripe => stripe(&v).ok_or_else(|| not("it lacks id, type or data.object")),
            Provider::Paddle => {
                paddle(&v).ok_or_else(|| not("it lacks event_id, event_type or data"))
            }
            Provider::LemonSqueezy => lemonsqueezy(&v)
                .ok_or_else(|| not("it lacks meta.event_name, data.id or data.attributes")),
        }
    }
}

impl PaymentEvent {
    /// An event of `kind_name` that changes nothing until its kind and members are read.
    fn of(provider: Provider, id: String, kind_name: &str) -> Self {
        Self {
            provider,
            id,
            kind_name: kind_name.to_owned(),
            kind: PaymentKind::Ignored,
            occurred_at: None,
            subscription_id: None,
            payment_id: None,
            payment_alias: None,
            customer_id: None,
            email: None,
            prices: Vec::new(),
            products: Vec::new(),
            period_end: None,
        }
    }
}

/// A string member, or a number's decimal.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn at(v: &Value, path: &[&str]) -> Option<String> {
    text(path.iter().try_fold(v, |v, k| v.get(*k))?)
}

fn seconds(v: Option<&Value>) -> Option<Timestamp> {
    v?.as_i64()
        .map(|s| Timestamp::from_millis(s.saturating_mul(1000)))
}

fn rfc3339(v: Option<&Value>) -> Option<Timestamp> {
    Timestamp::parse(v?.as_str()?).ok()
}

/// Pushes `value` once.
fn once(list: &mut Vec<String>, value: Option<String>) {
    if let Some(value) = value
        && !list.contains(&value)
    {
        list.push(value);
    }
}

fn stripe(v: &Value) -> Option<PaymentEvent> {
    let id = at(v, &["id"])?;
    let kind_name = at(v, &["type"])?;
    let o = v.get("data")?.get("object")?;
    let mut e = PaymentEvent {
        occurred_at: seconds(v.get("created")),
        customer_id: at(o, &["customer"]),
        ..PaymentEvent::of(Provider::Stripe, id, &kind_name)
    };
    match kind_name.as_str() {
        "checkout.session.completed" => {
            if at(o, &["mode"]).as_deref() == Some("payment") {
                e.kind = PaymentKind::Purchase;
            }
            e.payment_id = at(o, &["id"]);
            e.payment_alias = at(o, &["payment_intent"]);
            e.email = at(o, &["customer_details", "email"]).or_else(|| at(o, &["customer_email"]));
        }
        "invoice.paid" | "invoice.payment_succeeded" | "invoice.payment_failed" => {
            e.kind = match (kind_name.as_str(), at(o, &["billing_reason"]).as_deref()) {
                ("invoice.payment_failed", _) => PaymentKind::PaymentFailed,
                ("invoice.paid", Some("subscription_create")) => PaymentKind::Purchase,
                ("invoice.paid", Some("subscription_cycle")) => PaymentKind::Renewal,
                _ => PaymentKind::Ignored,
            };
            e.payment_id = at(o, &["id"]);
            e.payment_alias = at(o, &["payment_intent"]);
            e.email = at(o, &["customer_email"]);
            e.subscription_id = at(o, &["parent", "subscription_details", "subscription"])
                .or_else(|| at(o, &["subscription"]));
            let lines = o
                .get("lines")
                .and_then(|l| l.get("data"))
                .and_then(Value::as_array);
            for line in lines.into_iter().flatten() {
                once(
                    &mut e.prices,
                    at(line, &["pricing", "price_details", "price"])
                        .or_else(|| at(line, &["price", "id"])),
                );
                once(
                    &mut e.products,
                    at(line, &["pricing", "price_details", "product"])
                        .or_else(|| at(line, &["price", "product"])),
                );
                let end = seconds(line.get("period").and_then(|p| p.get("end")));
                e.period_end = e.period_end.max(end);
            }
        }
        "customer.subscription.updated" | "customer.subscription.deleted" => {
            e.subscription_id = at(o, &["id"]);
            e.kind = if kind_name.ends_with("deleted") {
                PaymentKind::Ended
            } else if o.get("cancel_at_period_end").and_then(Value::as_bool) == Some(true) {
                PaymentKind::Cancelled
            } else {
                PaymentKind::Ignored
            };
            let items = o
                .get("items")
                .and_then(|l| l.get("data"))
                .and_then(Value::as_array);
            for item in items.into_iter().flatten() {
                once(&mut e.prices, at(item, &["price", "id"]));
                once(&mut e.products, at(item, &["price", "product"]));
                e.period_end = e.period_end.max(seconds(item.get("current_period_end")));
            }
            e.period_end = e
                .period_end
                .or_else(|| seconds(o.get("current_period_end")));
        }
        "charge.refunded" | "charge.dispute.created" => {
            e.kind = if kind_name == "charge.refunded" {
                PaymentKind::Refunded
            } else {
                PaymentKind::Disputed
            };
            // A dispute's object is the dispute; its charge names the payment.
            e.payment_id = at(o, &["payment_intent"]).or_else(|| at(o, &["charge"]));
            e.email = at(o, &["billing_details", "email"]).or_else(|| at(o, &["receipt_email"]));
        }
        _ => {}
    }
    Some(e)
}

fn paddle(v: &Value) -> Option<PaymentEvent> {
    let id = at(v, &["event_id"])?;
    let kind_name = at(v, &["event_type"])?;
    let d = v.get("data")?;
    let mut e = PaymentEvent {
        occurred_at: rfc3339(v.get("occurred_at")),
        customer_id: at(d, &["customer_id"]),
        ..PaymentEvent::of(Provider::Paddle, id, &kind_name)
    };
    let items = |e: &mut PaymentEvent| {
        for item in d
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            once(
                &mut e.prices,
                at(item, &["price", "id"]).or_else(|| at(item, &["price_id"])),
            );
            once(&mut e.products, at(item, &["price", "product_id"]));
        }
    };
    match kind_name.as_str() {
        "transaction.completed" | "transaction.payment_failed" => {
            e.payment_id = at(d, &["id"]);
            e.subscription_id = at(d, &["subscription_id"]);
            e.period_end = rfc3339(d.get("billing_period").and_then(|p| p.get("ends_at")));
            e.kind = match (kind_name.as_str(), at(d, &["origin"]).as_deref()) {
                ("transaction.payment_failed", _) => PaymentKind::PaymentFailed,
                (_, Some("subscription_recurring")) => PaymentKind::Renewal,
                _ => PaymentKind::Purchase,
            };
            items(&mut e);
        }
        "subscription.updated" | "subscription.canceled" => {
            e.subscription_id = at(d, &["id"]);
            e.period_end = rfc3339(
                d.get("current_billing_period")
                    .and_then(|p| p.get("ends_at")),
            );
            let scheduled = at(d, &["scheduled_change", "action"]);
            e.kind = if kind_name == "subscription.canceled" {
                PaymentKind::Ended
            } else if scheduled.as_deref() == Some("cancel") {
                PaymentKind::Cancelled
            } else {
                PaymentKind::Ignored
            };
            items(&mut e);
        }
        "adjustment.created" => {
            e.payment_id = at(d, &["transaction_id"]);
            e.subscription_id = at(d, &["subscription_id"]);
            e.kind = match at(d, &["action"]).as_deref() {
                Some("refund") => PaymentKind::Refunded,
                Some("chargeback") => PaymentKind::Disputed,
                _ => PaymentKind::Ignored,
            };
        }
        _ => {}
    }
    Some(e)
}

fn lemonsqueezy(v: &Value) -> Option<PaymentEvent> {
    let kind_name = at(v, &["meta", "event_name"])?;
    let d = v.get("data")?;
    let data_id = at(d, &["id"])?;
    let a = d.get("attributes")?;
    let updated_at = at(a, &["updated_at"]).unwrap_or_default();
    let id = lemonsqueezy_event_id(&kind_name, &data_id, &updated_at);
    let mut e = PaymentEvent {
        occurred_at: rfc3339(a.get("updated_at")),
        customer_id: at(a, &["customer_id"]),
        email: at(a, &["user_email"]),
        ..PaymentEvent::of(Provider::LemonSqueezy, id, &kind_name)
    };
    match kind_name.as_str() {
        "order_created" | "order_refunded" => {
            e.kind = if kind_name == "order_created" {
                PaymentKind::Purchase
            } else {
                PaymentKind::Refunded
            };
            e.payment_id = Some(data_id);
            once(&mut e.prices, at(a, &["first_order_item", "variant_id"]));
            once(&mut e.products, at(a, &["first_order_item", "product_id"]));
        }
        "subscription_payment_success" | "subscription_payment_failed" => {
            // The period's end is not in a subscription invoice: the server reads the
            // subscription's `renews_at` through the API. The first payment is the order's.
            e.kind = match (kind_name.ends_with("success"), at(a, &["billing_reason"])) {
                (true, Some(reason)) if reason == "initial" => PaymentKind::Ignored,
                (true, _) => PaymentKind::Renewal,
                (false, _) => PaymentKind::PaymentFailed,
            };
            e.payment_id = Some(data_id);
            e.subscription_id = at(a, &["subscription_id"]);
        }
        "subscription_created" => {
            // Sent beside the subscription's `order_created`: the same purchase, which it ties
            // to the subscription (the order's license whichever arrives first).
            e.kind = PaymentKind::Purchase;
            e.subscription_id = Some(data_id);
            e.payment_id = at(a, &["order_id"]);
            e.period_end = rfc3339(a.get("renews_at"));
            once(&mut e.prices, at(a, &["variant_id"]));
            once(&mut e.products, at(a, &["product_id"]));
        }
        "subscription_cancelled" | "subscription_expired" => {
            e.kind = if kind_name.ends_with("cancelled") {
                PaymentKind::Cancelled
            } else {
                PaymentKind::Ended
            };
            e.subscription_id = Some(data_id);
            e.period_end = rfc3339(a.get("ends_at"));
            once(&mut e.prices, at(a, &["variant_id"]));
            once(&mut e.products, at(a, &["product_id"]));
        }
        _ => {}
    }
    Some(e)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(provider: Provider, v: Value) -> PaymentEvent {
        PaymentEvent::parse(provider, v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn stripe_invoices_read_the_new_and_the_old_places() {
        // API 2025-03-31 and later: the subscription under parent, the price under pricing.
        let new = parse(
            Provider::Stripe,
            json!({"id": "evt_1", "type": "invoice.paid", "created": 1_764_000_000,
                   "data": {"object": {"id": "in_1", "billing_reason": "subscription_create",
                     "customer": "cus_1", "customer_email": "ann@example.com",
                     "parent": {"subscription_details": {"subscription": "sub_1"}},
                     "lines": {"data": [
                       {"period": {"end": 1_766_592_000},
                        "pricing": {"price_details": {"price": "price_pro", "product": "prod_1"}}},
                       {"period": {"end": 1_766_600_000},
                        "pricing": {"price_details": {"price": "price_pro", "product": "prod_1"}}}]}}}}),
        );
        assert_eq!(new.kind, PaymentKind::Purchase);
        assert_eq!(new.subscription_id.as_deref(), Some("sub_1"));
        assert_eq!(new.prices, ["price_pro"]);
        assert_eq!(new.products, ["prod_1"]);
        assert_eq!(new.email.as_deref(), Some("ann@example.com"));
        assert_eq!(
            new.period_end,
            Some(Timestamp::from_millis(1_766_600_000_000))
        );
        // Earlier APIs: top-level subscription, price.id.
        let old = parse(
            Provider::Stripe,
            json!({"id": "evt_2", "type": "invoice.paid",
                   "data": {"object": {"id": "in_2", "billing_reason": "subscription_cycle",
                     "subscription": "sub_1",
                     "lines": {"data": [{"period": {"end": 5}, "price": {"id": "price_pro", "product": "prod_1"}}]}}}}),
        );
        assert_eq!(old.kind, PaymentKind::Renewal);
        assert_eq!(old.subscription_id.as_deref(), Some("sub_1"));
        assert_eq!(old.prices, ["price_pro"]);
    }

    #[test]
    fn stripe_subscriptions_checkouts_and_charges() {
        let cancelled = parse(
            Provider::Stripe,
            json!({"id": "evt_3", "type": "customer.subscription.updated",
                   "data": {"object": {"id": "sub_1", "cancel_at_period_end": true,
                     "items": {"data": [{"current_period_end": 10, "price": {"id": "price_pro"}}]}}}}),
        );
        assert_eq!(cancelled.kind, PaymentKind::Cancelled);
        assert_eq!(cancelled.period_end, Some(Timestamp::from_millis(10_000)));
        let older = parse(
            Provider::Stripe,
            json!({"id": "evt_4", "type": "customer.subscription.deleted",
                   "data": {"object": {"id": "sub_1", "current_period_end": 20}}}),
        );
        assert_eq!(older.kind, PaymentKind::Ended);
        assert_eq!(older.period_end, Some(Timestamp::from_millis(20_000)));
        let checkout = parse(
            Provider::Stripe,
            json!({"id": "evt_5", "type": "checkout.session.completed",
                   "data": {"object": {"id": "cs_1", "mode": "payment",
                     "customer_details": {"email": "bob@example.com"}}}}),
        );
        assert_eq!(checkout.kind, PaymentKind::Purchase);
        assert_eq!(checkout.payment_id.as_deref(), Some("cs_1"));
        assert_eq!(checkout.email.as_deref(), Some("bob@example.com"));
        let subscription_checkout = parse(
            Provider::Stripe,
            json!({"id": "evt_6", "type": "checkout.session.completed",
                   "data": {"object": {"id": "cs_2", "mode": "subscription"}}}),
        );
        assert_eq!(
            subscription_checkout.kind,
            PaymentKind::Ignored,
            "invoice.paid creates it"
        );
        let refund = parse(
            Provider::Stripe,
            json!({"id": "evt_7", "type": "charge.refunded",
                   "data": {"object": {"id": "ch_1", "payment_intent": "pi_1"}}}),
        );
        assert_eq!(
            (refund.kind, refund.payment_id.as_deref()),
            (PaymentKind::Refunded, Some("pi_1"))
        );
        let other = parse(
            Provider::Stripe,
            json!({"id": "evt_8", "type": "customer.created", "data": {"object": {}}}),
        );
        assert_eq!(other.kind, PaymentKind::Ignored);
    }

    #[test]
    fn paddle_transactions_subscriptions_and_adjustments() {
        let first = parse(
            Provider::Paddle,
            json!({"event_id": "evt_01", "event_type": "transaction.completed",
                   "occurred_at": "2026-11-29T10:00:00.000000Z",
                   "data": {"id": "txn_1", "origin": "web", "subscription_id": "sub_01",
                     "customer_id": "ctm_1",
                     "billing_period": {"starts_at": "2026-11-29T10:00:00Z", "ends_at": "2026-12-29T10:00:00Z"},
                     "items": [{"price": {"id": "pri_pro", "product_id": "pro_1"}, "quantity": 1}]}}),
        );
        assert_eq!(first.kind, PaymentKind::Purchase);
        assert_eq!(first.prices, ["pri_pro"]);
        assert_eq!(first.products, ["pro_1"]);
        assert_eq!(
            first.period_end,
            Some(Timestamp::parse("2026-12-29T10:00:00Z").unwrap())
        );
        assert!(first.occurred_at.is_some());
        let next = parse(
            Provider::Paddle,
            json!({"event_id": "evt_02", "event_type": "transaction.completed",
                   "data": {"id": "txn_2", "origin": "subscription_recurring", "subscription_id": "sub_01"}}),
        );
        assert_eq!(next.kind, PaymentKind::Renewal);
        let cancel = parse(
            Provider::Paddle,
            json!({"event_id": "evt_03", "event_type": "subscription.updated",
                   "data": {"id": "sub_01", "scheduled_change": {"action": "cancel"}}}),
        );
        assert_eq!(cancel.kind, PaymentKind::Cancelled);
        let refund = parse(
            Provider::Paddle,
            json!({"event_id": "evt_04", "event_type": "adjustment.created",
                   "data": {"action": "refund", "transaction_id": "txn_1"}}),
        );
        assert_eq!(
            (refund.kind, refund.payment_id.as_deref()),
            (PaymentKind::Refunded, Some("txn_1"))
        );
    }

    #[test]
    fn lemon_squeezy_orders_and_subscriptions_with_derived_ids() {
        let order = json!({"meta": {"event_name": "order_created"},
            "data": {"type": "orders", "id": "1",
              "attributes": {"customer_id": 7, "user_email": "cy@example.com",
                "updated_at": "2026-11-29T10:00:00.000000Z",
                "first_order_item": {"variant_id": 42, "product_id": 9}}}});
        let e = parse(Provider::LemonSqueezy, order.clone());
        assert_eq!(e.kind, PaymentKind::Purchase);
        assert_eq!(e.prices, ["42"], "a number as its decimal");
        assert_eq!(e.customer_id.as_deref(), Some("7"));
        assert_eq!(e.id, parse(Provider::LemonSqueezy, order).id, "stable");
        let expired = parse(
            Provider::LemonSqueezy,
            json!({"meta": {"event_name": "subscription_expired"},
                   "data": {"id": "5", "attributes": {"ends_at": "2026-12-01T00:00:00.000000Z", "variant_id": 42}}}),
        );
        assert_eq!(expired.kind, PaymentKind::Ended);
        assert_eq!(expired.subscription_id.as_deref(), Some("5"));
        assert_ne!(expired.id, e.id);
    }

    #[test]
    fn what_is_not_an_event_says_why() {
        for (provider, body) in [
            (Provider::Stripe, &b"not json"[..]),
            (Provider::Stripe, b"[]"),
            (Provider::Stripe, br#"{"type":"invoice.paid"}"#),
            (Provider::Paddle, br#"{"event_id":"e"}"#),
            (
                Provider::LemonSqueezy,
                br#"{"meta":{"event_name":"order_created"},"data":{}}"#,
            ),
        ] {
            let e = PaymentEvent::parse(provider, body).unwrap_err();
            assert!(e.to_string().starts_with("not a "), "{e}");
        }
    }
}
