//! A first purchase: the buyer's customer (found by e-mail address, or made once under a claim
//! on it), then one license from the rule's policy or, for Stripe without a rule, from the
//! product's metadata as Lukittu reads it.

use licensing_core::api::requests::{CustomerBody, LicenseCreate, Patch, RawMetadata};
use licensing_core::idempotency::IdempotencyKey;
use sha2::{Digest, Sha256};

use super::*;
use crate::app::customers::CreateCustomer;
use crate::app::licenses::CreateLicense;

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
pub(super) async fn purchase(
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
    use licensing_core::store::CustomerStore as _;
    let found = cx
        .state
        .store
        .customers_with_email(cx.team, email.trim())
        .await?;
    Ok(found.first().map(|c| c.id))
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
