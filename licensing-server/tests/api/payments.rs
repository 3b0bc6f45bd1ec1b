//! (ext) Payments → licenses (protocol.md section 7): the providers' webhook payloads, one
//! fixture per event type shaped as each provider documents it, signed here as the provider
//! signs, create, renew and end licenses exactly once; the providers' APIs are local stand-ins
//! the tests start.

use std::sync::{Arc, Mutex};

use licensing_core::crypto::inbound::Provider;
use licensing_core::{TeamId, Timestamp};
use serde_json::{Value, json};
use warp::Filter;

use crate::helpers::{TestServer, on_postgres};

const SECRET: &str = "whsec_test_5f0c6e1d2b3a49e8a7c6d5e4f3a2b1c0";
const DAY: i64 = 86_400;

/// A fixture with its `{{NAME}}` placeholders filled.
fn fixture(name: &str, vars: &[(&str, String)]) -> String {
    let path = format!(
        "{}/tests/fixtures/payments/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    for (key, value) in vars {
        text = text.replace(&format!("{{{{{key}}}}}"), value);
    }
    assert!(
        !text.contains("{{"),
        "a placeholder is left in {name}: {text}"
    );
    serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
    text
}

/// A license whose subscription ended: it expires now (the first moment the API takes).
#[track_caller]
fn assert_ends_now(license: &Value) {
    let at = Timestamp::parse(license["expirationDate"].as_str().unwrap()).unwrap();
    let late = at.as_millis() - Timestamp::now().as_millis();
    assert!((-60_000..=2_000).contains(&late), "{license}");
}

fn now_secs() -> i64 {
    Timestamp::now().as_millis() / 1000
}

fn at_secs(secs: i64) -> String {
    Timestamp::from_millis(secs * 1000).to_string()
}

/// Posts `body` to the provider's inbox for `team`, with `signature` as its header.
async fn post_raw(
    s: &TestServer,
    provider: Provider,
    team: &str,
    signature: Option<String>,
    body: &str,
) -> (u16, Value) {
    let url = format!("{}/api/v1/integrations/{provider}?teamId={team}", s.base);
    let mut request = s
        .client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(signature) = signature {
        request = request.header(provider.signature_header(), signature);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Delivers `body` as the provider would: signed now with `secret`.
async fn deliver_to(
    s: &TestServer,
    team: TeamId,
    provider: Provider,
    secret: &str,
    body: &str,
) -> (u16, Value) {
    let signature = provider.sign(secret, body.as_bytes(), now_secs());
    post_raw(s, provider, &team.to_string(), Some(signature), body).await
}

async fn deliver(s: &TestServer, provider: Provider, body: &str) -> Value {
    let (status, answer) = deliver_to(s, s.team_id(), provider, SECRET, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["received"], true, "{answer}");
    answer
}

/// A team with a product and a policy, and an integration with `provider` whose rule maps
/// `price` to the policy with `rule` (members of the rule body).
async fn shop(s: &TestServer, provider: Provider, price: &str, rule: Value) -> (Value, Value) {
    let product = s.product(&format!("App ({provider})")).await;
    let policy = s
        .post(
            &s.dev("policies"),
            &json!({"name": format!("Pro ({provider})"), "hwidLimit": 2, "expirationType": "DURATION", "expirationDays": 365,
                    "productIds": [product["id"]]})
            .to_string(),
        )
        .await;
    assert_eq!(policy.status, 201, "{}", policy.body);
    let policy = policy.ok().clone();
    let set_up = s
        .put(
            &s.dev(&format!("integrations/{provider}")),
            &json!({"webhookSecret": SECRET, "apiKey": "sk_test_51Nv0FGQ9RKHgCVdK"}).to_string(),
        )
        .await;
    set_up.ok();
    let mut body = json!({"match": {"priceId": price}, "policyId": policy["id"]});
    if provider == Provider::LemonSqueezy {
        body["match"] = json!({"variantId": price});
    }
    for (k, v) in rule.as_object().unwrap() {
        body[k] = v.clone();
    }
    let made = s
        .post(
            &s.dev(&format!("integrations/{provider}/rules")),
            &body.to_string(),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    (product, policy)
}

async fn license(s: &TestServer, id: &Value) -> Value {
    s.get(&s.dev(&format!("licenses/id/{}", id.as_str().unwrap())))
        .await
        .ok()
        .clone()
}

async fn license_count(s: &TestServer) -> u64 {
    s.get(&s.dev("licenses")).await.ok()["totalResults"]
        .as_u64()
        .unwrap()
}

async fn events(s: &TestServer, query: &str) -> Vec<Value> {
    s.get(&s.dev(&format!("integrations/events{query}")))
        .await
        .ok()["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn stripe_vars(event: &str, created: i64, period_end: i64) -> Vec<(&'static str, String)> {
    vec![
        ("EVENT", event.to_owned()),
        ("CREATED", created.to_string()),
        ("PERIOD_END", period_end.to_string()),
        ("INVOICE", format!("in_{event}")),
        ("SUB", "sub_1QzkTbQ9RKHgCVdKa1b2c3d4".to_owned()),
        ("PRICE", "price_1QzkSxQ9RKHgCVdKpro".to_owned()),
        ("PRODUCT", "prod_RtYc8mJ2kLp3Qx".to_owned()),
        ("CUSTOMER", "cus_RtYdF9mK2Lp3Qx".to_owned()),
        ("EMAIL", "jane@example.com".to_owned()),
        ("PI", "pi_3R6bbbQ9RKHgCVdK0pay001".to_owned()),
        ("SESSION", "cs_test_a1b2c3d4e5f6".to_owned()),
    ]
}

#[tokio::test]
async fn a_stripe_subscription_makes_one_license_and_renewals_move_its_expiry() {
    let s = TestServer::start().await;
    let (product, policy) =
        shop(&s, Provider::Stripe, "price_1QzkSxQ9RKHgCVdKpro", json!({})).await;
    let t0 = now_secs();
    let first_end = t0 + 30 * DAY;
    let created = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_1QzkTcQ9RKHgCVdKcreate", t0 - 100, first_end),
    );
    let answer = deliver(&s, Provider::Stripe, &created).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    let id = answer["licenseId"].clone();
    let made = license(&s, &id).await;
    assert_eq!(made["policyId"], policy["id"]);
    assert_eq!(made["expirationType"], "DATE");
    assert_eq!(made["expirationDate"], at_secs(first_end));
    assert_eq!(made["hwidLimit"], 2, "the policy's terms apply");
    assert_eq!(made["products"][0]["id"], product["id"]);
    assert_eq!(made["customers"][0]["email"], "jane@example.com");
    let tags: Vec<(String, String)> = made["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["key"].as_str().unwrap().into(),
                m["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        tags.contains(&("provider".into(), "stripe".into())),
        "{tags:?}"
    );
    assert!(tags.contains(&(
        "subscriptionId".into(),
        "sub_1QzkTbQ9RKHgCVdKa1b2c3d4".into()
    )));
    assert!(tags.contains(&("providerCustomerId".into(), "cus_RtYdF9mK2Lp3Qx".into())));

    // The same event again: a duplicate, nothing changes.
    let again = deliver(&s, Provider::Stripe, &created).await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("duplicate"), Some(true))
    );
    assert_eq!(license_count(&s).await, 1);
    // Another creation event of the same subscription (a retried checkout, say): still one.
    let other = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_1QzkTcQ9RKHgCVdKcreat2", t0 - 90, first_end),
    );
    let answer = deliver(&s, Provider::Stripe, &other).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(answer["licenseId"], id);
    assert_eq!(license_count(&s).await, 1);
    let customers = s.get(&s.dev("customers")).await;
    assert_eq!(customers.ok()["totalResults"], 1, "one customer");

    // A renewal (the older API's shape) moves the expiry to the new period's end.
    let second_end = t0 + 60 * DAY;
    let renewal = fixture(
        "stripe-invoice.paid-subscription_cycle",
        &stripe_vars("evt_1R3kTbQ9RKHgCVdKrenew1", t0 - 10, second_end),
    );
    let answer = deliver(&s, Provider::Stripe, &renewal).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(
        license(&s, &id).await["expirationDate"],
        at_secs(second_end)
    );
    // A late cancellation that happened before the renewal changes nothing.
    let late = fixture(
        "stripe-customer.subscription.updated-cancel_at_period_end",
        &stripe_vars("evt_1R2aaaQ9RKHgCVdKlate01", t0 - 50, first_end),
    );
    let answer = deliver(&s, Provider::Stripe, &late).await;
    assert_eq!(answer["status"], "skipped", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("before the last event"),
        "{answer}"
    );
    assert_eq!(
        license(&s, &id).await["expirationDate"],
        at_secs(second_end)
    );
    // A late renewal of the first period does not move it back.
    let older = fixture(
        "stripe-invoice.paid-subscription_cycle",
        &stripe_vars("evt_1R3kTbQ9RKHgCVdKrenew0", t0 - 20, first_end),
    );
    let answer = deliver(&s, Provider::Stripe, &older).await;
    assert_eq!(answer["status"], "skipped", "{answer}");
    assert_eq!(
        license(&s, &id).await["expirationDate"],
        at_secs(second_end)
    );

    // The log: newest first, with what became of each, and the payload on request.
    let log = events(&s, "").await;
    let statuses: Vec<&str> = log.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        [
            "skipped",
            "skipped",
            "applied",
            "applied",
            "duplicate",
            "applied"
        ]
    );
    assert_eq!(events(&s, "?status=duplicate").await.len(), 1);
    let one = s
        .get(&s.dev(&format!(
            "integrations/events/{}",
            log[5]["id"].as_str().unwrap()
        )))
        .await;
    let one = one.ok();
    assert_eq!(one["eventId"], "evt_1QzkTcQ9RKHgCVdKcreate");
    assert_eq!(one["payload"].as_str().unwrap(), created);
    assert!(log[0].get("payload").is_none());

    // The audit log names the integration.
    let audit = s.get(&s.dev("audit-log?action=license.created")).await;
    let actor = &audit.ok()["entries"][0]["actor"];
    assert_eq!(
        (actor["type"].as_str(), actor["name"].as_str()),
        (Some("INTEGRATION"), Some("stripe")),
        "{}",
        audit.body
    );
}

#[tokio::test]
async fn failed_payments_cancellations_and_refunds_do_what_the_rule_says() {
    let s = TestServer::start().await;
    shop(
        &s,
        Provider::Stripe,
        "price_1QzkSxQ9RKHgCVdKpro",
        json!({"onPaymentFailed": "suspend", "onCancel": "periodEnd", "onRefund": "delete"}),
    )
    .await;
    let t0 = now_secs();
    let end = t0 + 30 * DAY;
    let answer = deliver(
        &s,
        Provider::Stripe,
        &fixture(
            "stripe-invoice.paid-subscription_create",
            &stripe_vars("evt_a1", t0 - 100, end),
        ),
    )
    .await;
    let id = answer["licenseId"].clone();
    let failed = deliver(
        &s,
        Provider::Stripe,
        &fixture(
            "stripe-invoice.payment_failed",
            &stripe_vars("evt_a2", t0 - 90, end),
        ),
    )
    .await;
    assert_eq!(failed["status"], "applied", "{failed}");
    let suspended = license(&s, &id).await;
    assert_eq!(suspended["suspended"], true);
    assert_eq!(
        suspended["suspensionReason"], "stripe event invoice.payment_failed (evt_a2)",
        "the event that suspended it"
    );
    // The next payment lifts the suspension (the rule suspends on a failed payment).
    let renewed = deliver(
        &s,
        Provider::Stripe,
        &fixture(
            "stripe-invoice.paid-subscription_cycle",
            &stripe_vars("evt_a3", t0 - 80, end + 30 * DAY),
        ),
    )
    .await;
    assert_eq!(renewed["status"], "applied", "{renewed}");
    let l = license(&s, &id).await;
    assert_eq!(
        (l["suspended"].as_bool(), l["expirationDate"].as_str()),
        (Some(false), Some(at_secs(end + 30 * DAY).as_str()))
    );
    assert_eq!(l["suspensionReason"], serde_json::Value::Null);
    // A cancellation at the period's end: the license ends then.
    let cancelled = deliver(
        &s,
        Provider::Stripe,
        &fixture(
            "stripe-customer.subscription.updated-cancel_at_period_end",
            &stripe_vars("evt_a4", t0 - 70, end),
        ),
    )
    .await;
    assert_eq!(cancelled["status"], "applied", "{cancelled}");
    assert_eq!(license(&s, &id).await["expirationDate"], at_secs(end));
    // The subscription ends early (deleted now): the license ends now.
    let ended = deliver(
        &s,
        Provider::Stripe,
        &fixture(
            "stripe-customer.subscription.deleted",
            &stripe_vars("evt_a5", t0 - 60, end),
        ),
    )
    .await;
    assert_eq!(ended["status"], "applied", "{ended}");
    assert_ends_now(&license(&s, &id).await);

    // A one-time purchase through Checkout, refunded: deleted, as the rule says.
    let checkout = fixture(
        "stripe-checkout.session.completed-payment",
        &stripe_vars("evt_b1", t0 - 50, end),
    );
    // Without the line items (no rule matches nothing) the API is needed: this rule matches the
    // price the stand-in answers.
    let stripe = StandIn::start().await;
    let s2 = TestServer::start_with(|c| c.stripe_api_base = stripe.base.clone()).await;
    shop(
        &s2,
        Provider::Stripe,
        "price_1QzkSxQ9RKHgCVdKpro",
        json!({"onRefund": "delete"}),
    )
    .await;
    let bought = deliver(&s2, Provider::Stripe, &checkout).await;
    assert_eq!(bought["status"], "applied", "{bought}");
    let one_time = license(&s2, &bought["licenseId"]).await;
    assert_eq!(
        one_time["expirationType"], "DURATION",
        "a one-time purchase takes the policy's expiration"
    );
    assert_eq!(
        stripe.seen(),
        [
            "GET /v1/checkout/sessions/cs_test_a1b2c3d4e5f6/line_items?limit=100 Bearer sk_test_51Nv0FGQ9RKHgCVdK"
        ]
    );
    let refunded = deliver(
        &s2,
        Provider::Stripe,
        &fixture(
            "stripe-charge.refunded",
            &stripe_vars("evt_b2", t0 - 40, end),
        ),
    )
    .await;
    assert_eq!(refunded["status"], "applied", "{refunded}");
    assert_eq!(license_count(&s2).await, 0, "deleted by the refund");
    drop(s);
}

/// A local stand-in of the providers' APIs: Stripe's checkout line items and products, Paddle's
/// customers, Lemon Squeezy's subscriptions; it notes each request and its bearer token.
struct StandIn {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
    /// The metadata of its Stripe product.
    metadata: Arc<Mutex<Value>>,
    /// When its Lemon Squeezy subscription renews.
    renews_at: Arc<Mutex<String>>,
    /// How many of the next requests it answers 503 (busy), as a provider sometimes does.
    busy: Arc<std::sync::atomic::AtomicU32>,
}

impl StandIn {
    async fn start() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let metadata = Arc::new(Mutex::new(json!({})));
        let renews_at = Arc::new(Mutex::new(String::new()));
        let busy = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let (noted, product, renews, busy_now) = (
            seen.clone(),
            metadata.clone(),
            renews_at.clone(),
            busy.clone(),
        );
        let api = warp::get()
            .and(warp::path::full())
            .and(warp::query::raw().or(warp::any().map(String::new)).unify())
            .and(warp::header::optional::<String>("authorization"))
            .map(move |path: warp::path::FullPath, query: String, auth: Option<String>| {
                let path = path.as_str().to_owned();
                let shown = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
                noted
                    .lock()
                    .unwrap()
                    .push(format!("GET {shown} {}", auth.unwrap_or_default()));
                let take_busy = busy_now
                    .fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                let (status, body) = match path.as_str() {
                    _ if take_busy => (503, json!({"error": {"message": "busy"}})),
                    p if p.starts_with("/v1/checkout/sessions/") => (
                        200,
                        json!({"object": "list", "data": [{"id": "li_1", "object": "item", "quantity": 1,
                               "price": {"id": "price_1QzkSxQ9RKHgCVdKpro", "object": "price", "product": "prod_RtYc8mJ2kLp3Qx"}}],
                               "has_more": false, "url": p}),
                    ),
                    "/v1/products/prod_RtYc8mJ2kLp3Qx" => (
                        200,
                        json!({"id": "prod_RtYc8mJ2kLp3Qx", "object": "product", "name": "Pro", "active": true,
                               "metadata": product.lock().unwrap().clone()}),
                    ),
                    "/customers/ctm_01hv6y1jedq4p1n0yqn5ba3ky4" => (
                        200,
                        json!({"data": {"id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4", "name": "Sam Miller", "email": "sam@example.com", "status": "active"},
                               "meta": {"request_id": "a2b4c6d8"}}),
                    ),
                    "/v1/subscriptions/880011" => (
                        200,
                        json!({"jsonapi": {"version": "1.0"}, "data": {"type": "subscriptions", "id": "880011",
                               "attributes": {"status": "active", "renews_at": renews.lock().unwrap().clone()}}}),
                    ),
                    _ => (404, json!({"error": {"type": "invalid_request_error", "message": "No such object"}})),
                };
                warp::reply::with_status(
                    warp::reply::json(&body),
                    warp::http::StatusCode::from_u16(status).unwrap(),
                )
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(warp::serve(api).incoming(listener).run());
        Self {
            base: format!("http://{addr}"),
            seen,
            metadata,
            renews_at,
            busy,
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn a_stripe_product_with_lukittus_metadata_makes_the_license_lukittu_would() {
    let stripe = StandIn::start().await;
    let s = TestServer::start_with(|c| c.stripe_api_base = stripe.base.clone()).await;
    let product = s.product("App").await;
    let other = s.product("Plugin").await;
    *stripe.metadata.lock().unwrap() = json!({
        "product_id": format!("{},{}", product["id"].as_str().unwrap(), other["id"].as_str().unwrap()),
        "seats": "3",
        "ip_limit": "5",
        "expiration_days": "30",
        "expiration_start": "ACTIVATION",
    });
    s.put(
        &s.dev("integrations/stripe"),
        &json!({"webhookSecret": SECRET, "apiKey": "rk_test_lukittu"}).to_string(),
    )
    .await
    .ok();
    let t0 = now_secs();
    let checkout = fixture(
        "stripe-checkout.session.completed-payment",
        &stripe_vars("evt_l1", t0, t0 + DAY),
    );
    let answer = deliver(&s, Provider::Stripe, &checkout).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    let l = license(&s, &answer["licenseId"]).await;
    assert_eq!(l["policyId"], Value::Null);
    assert_eq!(
        (l["hwidLimit"].as_i64(), l["ipLimit"].as_i64()),
        (Some(3), Some(5))
    );
    assert_eq!(
        (
            l["expirationType"].as_str(),
            l["expirationDays"].as_i64(),
            l["expirationStart"].as_str()
        ),
        (Some("DURATION"), Some(30), Some("ACTIVATION"))
    );
    let mut products: Vec<&str> = l["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    products.sort_unstable();
    let mut expected = vec![
        product["id"].as_str().unwrap(),
        other["id"].as_str().unwrap(),
    ];
    expected.sort_unstable();
    assert_eq!(products, expected);
    let seen = stripe.seen();
    assert!(
        seen.iter()
            .any(|r| r == "GET /v1/products/prod_RtYc8mJ2kLp3Qx Bearer rk_test_lukittu"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn bad_signatures_and_bad_deliveries_change_nothing() {
    let s = TestServer::start().await;
    shop(&s, Provider::Stripe, "price_1QzkSxQ9RKHgCVdKpro", json!({})).await;
    let t0 = now_secs();
    let body = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_x1", t0, t0 + DAY),
    );
    let team = s.team_id().to_string();
    let stripe = Provider::Stripe;
    let cases: Vec<(&str, Option<String>, String)> = vec![
        ("missing", None, body.clone()),
        (
            "another secret",
            Some(stripe.sign("whsec_someone_else_entirely", body.as_bytes(), t0)),
            body.clone(),
        ),
        (
            "tampered",
            Some(stripe.sign(SECRET, body.as_bytes(), t0)),
            body.replace("jane@", "mallory@"),
        ),
        (
            "expired",
            Some(stripe.sign(SECRET, body.as_bytes(), t0 - 3_600)),
            body.clone(),
        ),
        ("malformed", Some("v1=abc".into()), body.clone()),
    ];
    for (what, signature, sent) in cases {
        let (status, answer) = post_raw(&s, stripe, &team, signature, &sent).await;
        assert_eq!(status, 400, "{what}: {answer}");
        assert_eq!(answer["received"], false, "{what}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("nothing was stored"),
            "{what}: {answer}"
        );
    }
    // A well-signed body that is not an event.
    for junk in ["{not json", "[1, 2]", r#"{"id": "evt_1"}"#] {
        let (status, answer) = deliver_to(&s, s.team_id(), stripe, SECRET, junk).await;
        assert_eq!(status, 400, "{junk}: {answer}");
    }
    // Unknown teams, another team's id, a disabled integration: not received, so the
    // provider stops retrying.
    for team in [
        "",
        "not-a-team",
        &TeamId::new().to_string(),
        &s.other_team().await.team_id.to_string(),
    ] {
        let signature = stripe.sign(SECRET, body.as_bytes(), t0);
        let (status, answer) = post_raw(&s, stripe, team, Some(signature), &body).await;
        assert_eq!(
            (status, answer["received"].as_bool()),
            (200, Some(false)),
            "{team}: {answer}"
        );
    }
    s.put(&s.dev("integrations/stripe"), r#"{"enabled": false}"#)
        .await
        .ok();
    let (status, answer) = deliver_to(&s, s.team_id(), stripe, SECRET, &body).await;
    assert_eq!(
        (status, answer["received"].as_bool()),
        (200, Some(false)),
        "{answer}"
    );
    assert!(answer["reason"].as_str().unwrap().contains("disabled"));
    s.put(&s.dev("integrations/stripe"), r#"{"enabled": true}"#)
        .await
        .ok();
    // A huge body is refused before anything is read into it.
    let huge = format!(
        r#"{{"id": "evt_big", "pad": "{}"}}"#,
        "x".repeat(600 * 1024)
    );
    let (status, _) = deliver_to(&s, s.team_id(), stripe, SECRET, &huge).await;
    assert_eq!(status, 413);
    // An unknown provider is no route.
    let response = s
        .client
        .post(format!(
            "{}/api/v1/integrations/square?teamId={team}",
            s.base
        ))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert_eq!(license_count(&s).await, 0);
    assert!(
        events(&s, "").await.is_empty(),
        "refused deliveries are not stored"
    );
    // Event types that change no license: stored as skipped, answered 200.
    let ping = json!({"id": "evt_ping", "type": "customer.created", "created": t0, "data": {"object": {"id": "cus_1"}}}).to_string();
    let answer = deliver(&s, stripe, &ping).await;
    assert_eq!(answer["status"], "skipped");
    // A purchase of a price without a rule (and no API key for metadata): skipped, with why;
    // after a rule is added, a replay applies it.
    let unknown = body.replace("price_1QzkSxQ9RKHgCVdKpro", "price_other");
    s.put(&s.dev("integrations/stripe"), r#"{"apiKey": null}"#)
        .await
        .ok();
    let answer = deliver(&s, stripe, &unknown).await;
    assert_eq!(answer["status"], "skipped", "{answer}");
    assert!(
        answer["reason"].as_str().unwrap().contains("price_other"),
        "{answer}"
    );
    let policy_id = s.get(&s.dev("policies")).await.ok()["policies"][0]["id"].clone();
    s.post(
        &s.dev("integrations/stripe/rules"),
        &json!({"match": {"priceId": "price_other"}, "policyId": policy_id}).to_string(),
    )
    .await
    .ok();
    let skipped = events(&s, "?status=skipped").await;
    let purchase = skipped
        .iter()
        .find(|e| e["type"] == "invoice.paid")
        .unwrap();
    let replayed = s
        .post(
            &s.dev(&format!(
                "integrations/events/{}/replay",
                purchase["id"].as_str().unwrap()
            )),
            "",
        )
        .await;
    assert_eq!(replayed.ok()["status"], "applied", "{}", replayed.body);
    assert_eq!(license_count(&s).await, 1);
    let again = s
        .post(
            &s.dev(&format!(
                "integrations/events/{}/replay",
                purchase["id"].as_str().unwrap()
            )),
            "",
        )
        .await;
    assert_eq!(again.ok()["status"], "duplicate");
}

#[tokio::test]
async fn integrations_are_set_up_shown_by_their_last_four_and_rotated() {
    let s = TestServer::start().await;
    let missing = s
        .put(&s.dev("integrations/paddle"), r#"{"enabled": true}"#)
        .await;
    missing.err(400, "BAD_REQUEST");
    assert_eq!(missing.fields(), ["webhookSecret"]);
    s.get(&s.dev("integrations/paddle"))
        .await
        .err(404, "BAD_REQUEST");
    s.get(&s.dev("integrations/square"))
        .await
        .err(400, "BAD_REQUEST");
    let made = s
        .put(
            &s.dev("integrations/paddle"),
            &json!({"webhookSecret": "pdl_ntfset_one_abcd", "apiKey": "pdl_apikey_0123wxyz"})
                .to_string(),
        )
        .await;
    let view = made.ok().clone();
    assert_eq!(view["webhookSecret"], "…abcd");
    assert_eq!(view["apiKey"], "…wxyz");
    assert_eq!(
        view["webhookPath"],
        format!("/api/v1/integrations/paddle?teamId={}", s.team_id())
    );
    assert!(
        !made.body.to_string().contains("pdl_ntfset_one"),
        "no secret in an answer"
    );
    // A rotation: both secrets verify for a day.
    let rotated = s
        .put(
            &s.dev("integrations/paddle"),
            &json!({"webhookSecret": "pdl_ntfset_two_efgh"}).to_string(),
        )
        .await;
    let rotated = rotated.ok();
    assert_eq!(
        (
            rotated["webhookSecret"].as_str(),
            rotated["previousSecret"].as_str()
        ),
        (Some("…efgh"), Some("…abcd"))
    );
    let ping = json!({"event_id": "evt_01hv_ping", "event_type": "customer.created", "occurred_at": "2026-11-29T10:00:00.000Z", "data": {"id": "ctm_1"}}).to_string();
    for secret in ["pdl_ntfset_one_abcd", "pdl_ntfset_two_efgh"] {
        let (status, answer) = deliver_to(&s, s.team_id(), Provider::Paddle, secret, &ping).await;
        assert_eq!(
            (status, answer["received"].as_bool()),
            (200, Some(true)),
            "{secret}: {answer}"
        );
    }
    let list = s.get(&s.dev("integrations")).await;
    assert_eq!(list.ok()["integrations"].as_array().unwrap().len(), 1);
    // Rules: checked against the team's policies and products, one per match.
    let rules = s.dev("integrations/paddle/rules");
    let policy = s
        .post(&s.dev("policies"), r#"{"name": "Pro"}"#)
        .await
        .ok()
        .clone();
    let unknown = s
        .post(
            &rules,
            &json!({"match": {"priceId": "pri_1"}, "policyId": licensing_core::PolicyId::new()})
                .to_string(),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let rule = s
        .post(
            &rules,
            &json!({"match": {"priceId": "pri_1"}, "policyId": policy["id"]}).to_string(),
        )
        .await;
    assert_eq!(rule.status, 201, "{}", rule.body);
    let rule = rule.ok().clone();
    assert_eq!(
        (
            rule["sendLicenseEmail"].as_bool(),
            rule["onPaymentFailed"].as_str(),
            rule["onCancel"].as_str(),
            rule["onRefund"].as_str()
        ),
        (Some(true), Some("keep"), Some("periodEnd"), Some("suspend"))
    );
    let twice = s
        .post(
            &rules,
            &json!({"match": {"priceId": "pri_1"}, "policyId": policy["id"]}).to_string(),
        )
        .await;
    twice.err(400, "BAD_REQUEST");
    assert_eq!(twice.fields(), ["match.priceId"]);
    let bad = s
        .post(
            &rules,
            r#"{"match": {"priceId": "a", "variantId": "b"}, "onRefund": "maybe"}"#,
        )
        .await;
    assert_eq!(bad.fields(), ["policyId", "match", "onRefund"]);
    let rule_url = format!("{rules}/{}", rule["id"].as_str().unwrap());
    let changed = s.put(&rule_url, r#"{"onRefund": "delete"}"#).await;
    assert_eq!(changed.ok()["onRefund"], "delete");
    assert_eq!(
        changed.ok()["match"],
        json!({"priceId": "pri_1"}),
        "left out: kept"
    );
    assert_eq!(
        s.get(&rules).await.ok()["rules"].as_array().unwrap().len(),
        1
    );
    s.delete(&rule_url).await.ok();
    s.delete(&rule_url).await.err(404, "BAD_REQUEST");
    // The audit log holds the change, never a secret.
    let audit = s.get(&s.dev("audit-log?action=integration.updated")).await;
    let audit = audit.ok().to_string();
    assert!(
        audit.contains("…efgh") && !audit.contains("pdl_ntfset_two"),
        "{audit}"
    );
    // Another team's key sees none of it.
    let other = s.other_team().await;
    let url = format!(
        "{}/api/v1/dev/teams/{}/integrations/paddle",
        s.base,
        s.team_id()
    );
    let theirs = s
        .send(reqwest::Method::GET, &url, Some(&other.api_key), None)
        .await;
    assert_eq!(theirs.status, 403, "{}", theirs.body);
    s.delete(&s.dev("integrations/paddle")).await.ok();
    let (status, answer) = deliver_to(
        &s,
        s.team_id(),
        Provider::Paddle,
        "pdl_ntfset_two_efgh",
        &ping,
    )
    .await;
    assert_eq!((status, answer["received"].as_bool()), (200, Some(false)));
}

fn paddle_vars(
    event: &str,
    occurred: i64,
    period_end: i64,
    origin: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("EVENT", event.to_owned()),
        ("OCCURRED", at_secs(occurred)),
        ("PERIOD_END", at_secs(period_end)),
        ("TXN", format!("txn_{event}")),
        ("ORIGIN", origin.to_owned()),
        ("SUB", "sub_01hv8x29kz0t586xy6zn1a62ny".to_owned()),
        ("PRICE", "pri_01gsz8x8sawmvhz1pv30nge1ke".to_owned()),
        ("PRODUCT", "pro_01gsz4t5hdjse780zja8vvr7jg".to_owned()),
        ("CUSTOMER", "ctm_01hv6y1jedq4p1n0yqn5ba3ky4".to_owned()),
    ]
}

fn lemonsqueezy_vars(occurred: i64, period_end: i64) -> Vec<(&'static str, String)> {
    vec![
        ("OCCURRED", at_secs(occurred)),
        ("PERIOD_END", at_secs(period_end)),
        ("ORDER", "1770001".to_owned()),
        ("INVOICE", "5501".to_owned()),
        ("SUB", "880011".to_owned()),
        ("PRODUCT", "300111".to_owned()),
        ("VARIANT", "400222".to_owned()),
        ("CUSTOMER", "6600777".to_owned()),
        ("EMAIL", "lee@example.com".to_owned()),
    ]
}

#[tokio::test]
async fn paddle_and_lemon_squeezy_purchases_renew_and_end() {
    let apis = StandIn::start().await;
    let s = TestServer::start_with(|c| {
        c.paddle_api_base = apis.base.clone();
        c.lemonsqueezy_api_base = apis.base.clone();
    })
    .await;
    shop(
        &s,
        Provider::Paddle,
        "pri_01gsz8x8sawmvhz1pv30nge1ke",
        json!({"onRefund": "suspend"}),
    )
    .await;
    let t0 = now_secs();
    // Paddle's transaction names its customer by id only: the e-mail is read from the API.
    let first = fixture(
        "paddle-transaction.completed",
        &paddle_vars("evt_01p1", t0 - 100, t0 + 30 * DAY, "web"),
    );
    let answer = deliver(&s, Provider::Paddle, &first).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    let id = answer["licenseId"].clone();
    let l = license(&s, &id).await;
    assert_eq!(l["customers"][0]["email"], "sam@example.com");
    assert_eq!(l["expirationDate"], at_secs(t0 + 30 * DAY));
    assert!(
        apis.seen().contains(
            &"GET /customers/ctm_01hv6y1jedq4p1n0yqn5ba3ky4 Bearer sk_test_51Nv0FGQ9RKHgCVdK"
                .to_owned()
        ),
        "{:?}",
        apis.seen()
    );
    let next = fixture(
        "paddle-transaction.completed",
        &paddle_vars("evt_01p2", t0 - 50, t0 + 60 * DAY, "subscription_recurring"),
    );
    assert_eq!(
        deliver(&s, Provider::Paddle, &next).await["status"],
        "applied"
    );
    assert_eq!(
        license(&s, &id).await["expirationDate"],
        at_secs(t0 + 60 * DAY)
    );
    let refund = fixture(
        "paddle-adjustment.created-refund",
        &paddle_vars("evt_01p3", t0 - 40, t0, "web"),
    );
    assert_eq!(
        deliver(&s, Provider::Paddle, &refund).await["status"],
        "applied"
    );
    assert_eq!(license(&s, &id).await["suspended"], true);
    let cancel = fixture(
        "paddle-subscription.canceled",
        &paddle_vars("evt_01p4", t0 - 30, t0, "web"),
    );
    assert_eq!(
        deliver(&s, Provider::Paddle, &cancel).await["status"],
        "applied"
    );
    assert_ends_now(&license(&s, &id).await);

    // Lemon Squeezy: the order, then its subscription (either order), a renewal whose date is
    // read from the API, a refund.
    shop(&s, Provider::LemonSqueezy, "400222", json!({})).await;
    *apis.renews_at.lock().unwrap() = at_secs(t0 + 90 * DAY);
    let vars = lemonsqueezy_vars(t0 - 100, t0 + 30 * DAY);
    let order = deliver(
        &s,
        Provider::LemonSqueezy,
        &fixture("lemonsqueezy-order_created", &vars),
    )
    .await;
    assert_eq!(order["status"], "applied", "{order}");
    let ls = order["licenseId"].clone();
    assert_eq!(
        license(&s, &ls).await["customers"][0]["email"],
        "lee@example.com"
    );
    let again = deliver(
        &s,
        Provider::LemonSqueezy,
        &fixture("lemonsqueezy-order_created", &vars),
    )
    .await;
    assert_eq!(again["duplicate"], true, "the derived id: {again}");
    let subscription = deliver(
        &s,
        Provider::LemonSqueezy,
        &fixture(
            "lemonsqueezy-subscription_created",
            &lemonsqueezy_vars(t0 - 99, t0 + 30 * DAY),
        ),
    )
    .await;
    assert_eq!(
        (
            subscription["status"].as_str(),
            subscription["licenseId"].clone()
        ),
        (Some("applied"), ls.clone()),
        "{subscription}"
    );
    assert_eq!(
        license(&s, &ls).await["expirationDate"],
        at_secs(t0 + 30 * DAY)
    );
    let renewal = deliver(
        &s,
        Provider::LemonSqueezy,
        &fixture(
            "lemonsqueezy-subscription_payment_success",
            &lemonsqueezy_vars(t0 - 10, t0),
        ),
    )
    .await;
    assert_eq!(renewal["status"], "applied", "{renewal}");
    assert_eq!(
        license(&s, &ls).await["expirationDate"],
        at_secs(t0 + 90 * DAY)
    );
    let refunded = deliver(
        &s,
        Provider::LemonSqueezy,
        &fixture(
            "lemonsqueezy-order_refunded",
            &lemonsqueezy_vars(t0 - 5, t0),
        ),
    )
    .await;
    assert_eq!(refunded["status"], "applied", "{refunded}");
    assert_eq!(license(&s, &ls).await["suspended"], true);
    assert_eq!(license_count(&s).await, 2);
}

#[tokio::test]
async fn the_same_event_delivered_to_two_instances_at_once_makes_one_license() {
    let s = TestServer::start().await;
    shop(&s, Provider::Stripe, "price_1QzkSxQ9RKHgCVdKpro", json!({})).await;
    let other = if on_postgres() {
        Some(s.second_instance().await)
    } else {
        None
    };
    let t0 = now_secs();
    let body = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_race", t0, t0 + DAY),
    );
    let mut deliveries = Vec::new();
    for i in 0..8 {
        let target = match (&other, i % 2) {
            (Some(second), 1) => second,
            _ => &s,
        };
        deliveries.push(deliver_to(
            target,
            s.team_id(),
            Provider::Stripe,
            SECRET,
            &body,
        ));
    }
    let answers = futures_util::future::join_all(deliveries).await;
    let applied = answers
        .iter()
        .filter(|(_, a)| a["status"] == "applied")
        .count();
    let duplicates = answers
        .iter()
        .filter(|(_, a)| a["duplicate"] == true)
        .count();
    assert_eq!((applied, duplicates), (1, 7), "{answers:?}");
    assert_eq!(license_count(&s).await, 1);
    assert_eq!(
        s.get(&s.dev("customers")).await.ok()["totalResults"],
        1,
        "one customer"
    );
}

/// An archive carries the integrations (their secrets sealed as stored), the links and the
/// events: after a move, a redelivery of an applied event is still a duplicate, and a renewal
/// finds its license.
#[tokio::test]
async fn an_archive_carries_integrations_links_and_applied_events() {
    use licensing_core::store::PaymentStore;
    let s = TestServer::start().await;
    shop(&s, Provider::Stripe, "price_1QzkSxQ9RKHgCVdKpro", json!({})).await;
    let t0 = now_secs();
    let created = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_m1", t0 - 100, t0 + DAY),
    );
    let id = deliver(&s, Provider::Stripe, &created).await["licenseId"].clone();
    let files = tempfile::tempdir().unwrap();
    let file_store = licensing_server::files::FileStore::new(files.path()).unwrap();
    let mut archive = Vec::new();
    licensing_server::archive::export(&s.store, &file_store, &mut archive)
        .await
        .unwrap();
    let text = String::from_utf8(archive.clone()).unwrap();
    assert!(text.contains(r#""kind":"integration""#), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let (restored, _) = crate::helpers::open_test_store(dir.path()).await;
    let restored_files = licensing_server::files::FileStore::new(dir.path()).unwrap();
    licensing_server::archive::import(&restored, &restored_files, archive.as_slice())
        .await
        .unwrap();
    let team = s.team_id();
    assert_eq!(
        restored.list_integrations(team).await.unwrap(),
        s.store.list_integrations(team).await.unwrap()
    );
    assert_eq!(
        restored.list_payment_links(team).await.unwrap(),
        s.store.list_payment_links(team).await.unwrap()
    );
    assert!(
        restored
            .inbound_applied(team, Provider::Stripe, "evt_m1")
            .await
            .unwrap()
            .is_some(),
        "applied, still"
    );
    assert_eq!(
        restored
            .payment_link(team, Provider::Stripe, "sub_1QzkTbQ9RKHgCVdKa1b2c3d4")
            .await
            .unwrap()
            .map(|l| l.license_id.to_string()),
        id.as_str().map(str::to_owned)
    );
}

/// What the providers' own Python libraries (`stripe`, `paddle-python-sdk`, from
/// `LICENSING_PYTHON`) say of a delivery: whether their verifier accepts `header` over `body`
/// with `secret`, and a header their own signing code makes for `body` now. `None` when the
/// packages are not installed (a notice; a failure under `CI`).
fn provider_library(
    provider: Provider,
    secret: &str,
    body: &str,
    header: &str,
) -> Option<(bool, String)> {
    use std::io::Write as _;
    const SCRIPT: &str = r#"
import json, sys, time
try:
    import stripe
    from stripe import WebhookSignature
    from paddle_billing.Notifications import Secret, Verifier
    from paddle_billing.Notifications.PaddleSignature import PaddleSignature
except ImportError:
    sys.exit(3)
given = json.load(sys.stdin)
body, secret, header = given["body"], given["secret"], given["header"]
now = int(time.time())
if given["provider"] == "stripe":
    try:
        stripe.Webhook.construct_event(body, header, secret)
        accepts = True
    except stripe.SignatureVerificationError:
        accepts = False
    made = "t=%d,v1=%s" % (now, WebhookSignature._compute_signature("%d.%s" % (now, body), secret))
else:
    class Request:
        def __init__(self, headers, body):
            self.headers, self.body = headers, body
    accepts = bool(Verifier().verify(Request({"Paddle-Signature": header}, body.encode()), Secret(secret)))
    made = "ts=%d;h1=%s" % (now, PaddleSignature.calculate_hmac(secret, ("%d:%s" % (now, body)).encode()).hexdigest())
print(json.dumps({"accepts": accepts, "made": made}))
"#;
    let python = std::env::var("LICENSING_PYTHON").unwrap_or_else(|_| "python3".into());
    let input =
        json!({"provider": provider.as_str(), "secret": secret, "body": body, "header": header})
            .to_string();
    let child = std::process::Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let output = child.ok().and_then(|mut child| {
        child.stdin.take()?.write_all(input.as_bytes()).ok()?;
        child.wait_with_output().ok()
    });
    match output {
        Some(out) if out.status.success() => {
            let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
            Some((
                answer["accepts"].as_bool().unwrap(),
                answer["made"].as_str().unwrap().to_owned(),
            ))
        }
        _ => {
            let notice = format!(
                "{python} lacks the stripe and paddle-python-sdk packages: the cross-check with the providers' libraries is skipped"
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "{notice} (required when CI is set)"
            );
            eprintln!("{notice}");
            None
        }
    }
}

/// The signatures are the providers' own: their libraries verify what the tests sign (so every
/// test here signs as the provider does), and the inbox accepts what their signing code makes;
/// a body changed after signing is refused by both.
#[tokio::test]
async fn the_providers_own_libraries_agree_with_the_inbox() {
    let s = TestServer::start().await;
    for provider in [Provider::Stripe, Provider::Paddle] {
        s.put(
            &s.dev(&format!("integrations/{provider}")),
            &json!({"webhookSecret": SECRET}).to_string(),
        )
        .await
        .ok();
        let body = match provider {
            Provider::Stripe => json!({"id": "evt_lib", "type": "customer.created", "data": {"object": {"id": "cus_1"}}}),
            _ => json!({"event_id": "evt_lib", "event_type": "customer.created", "occurred_at": "2026-11-29T10:00:00.000Z", "data": {"id": "ctm_1"}}),
        }
        .to_string();
        let ours = provider.sign(SECRET, body.as_bytes(), now_secs());
        let Some((accepts, made)) = provider_library(provider, SECRET, &body, &ours) else {
            return;
        };
        assert!(
            accepts,
            "{provider}'s library refuses the tests' signature {ours}"
        );
        let tampered = body.replace("customer.created", "customer.deleted");
        let (refuses, _) = provider_library(provider, SECRET, &tampered, &ours).unwrap();
        assert!(!refuses, "{provider}'s library accepts a changed body");
        let (status, answer) = post_raw(
            &s,
            provider,
            &s.team_id().to_string(),
            Some(made.clone()),
            &body,
        )
        .await;
        assert_eq!(
            (status, answer["received"].as_bool()),
            (200, Some(true)),
            "{provider}: {made} {answer}"
        );
        let (status, _) = post_raw(
            &s,
            provider,
            &s.team_id().to_string(),
            Some(made),
            &tampered,
        )
        .await;
        assert_eq!(status, 400, "{provider}");
    }
}

/// A purchase's key is mailed to the buyer when the rule says so (with SMTP configured); the
/// provider's API busy twice is tried again; an event without an e-mail address is skipped with
/// why; deliveries past the per-team rate are answered 429 (the provider retries).
#[tokio::test]
async fn keys_are_mailed_busy_apis_retried_addressless_purchases_skipped_and_floods_limited() {
    use tokio::sync::mpsc;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(crate::mail::smtp_server(listener, tx));
    let stripe = StandIn::start().await;
    let s = TestServer::start_with(|c| {
        c.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        c.smtp_from = Some("Licensing <noreply@example.com>".into());
        c.stripe_api_base = stripe.base.clone();
        // Twenty deliveries a minute per team (twice the developer API's ten).
        c.dev_rate_limit_per_minute = 10;
    })
    .await;
    shop(&s, Provider::Stripe, "price_1QzkSxQ9RKHgCVdKpro", json!({})).await;
    let t0 = now_secs();
    // The checkout's line items: the stand-in is busy twice, then answers.
    stripe.busy.store(2, std::sync::atomic::Ordering::SeqCst);
    let checkout = fixture(
        "stripe-checkout.session.completed-payment",
        &stripe_vars("evt_m1", t0, t0 + DAY),
    );
    let answer = deliver(&s, Provider::Stripe, &checkout).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(
        stripe.seen().len(),
        3,
        "two busy answers, then the items: {:?}",
        stripe.seen()
    );
    let key = license(&s, &answer["licenseId"]).await["licenseKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let message = tokio::time::timeout(std::time::Duration::from_secs(20), rx.recv())
        .await
        .expect("no e-mail arrived in time")
        .unwrap();
    assert!(
        message.contains(&key) && message.contains("To: jane@example.com"),
        "{message}"
    );
    // No address anywhere: skipped, with why.
    let addressless = fixture(
        "stripe-invoice.paid-subscription_create",
        &stripe_vars("evt_m2", t0, t0 + DAY),
    )
    .replace(
        r#""customer_email": "jane@example.com""#,
        r#""customer_email": null"#,
    );
    let answer = deliver(&s, Provider::Stripe, &addressless).await;
    assert_eq!(answer["status"], "skipped", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("no customer e-mail address"),
        "{answer}"
    );
    // Past twenty deliveries within the minute: 429, nothing stored (the provider retries).
    let mut answered = 2;
    let limited = loop {
        let ping = json!({"id": format!("evt_ping_{answered}"), "type": "customer.created", "data": {"object": {"id": "cus_1"}}}).to_string();
        let (status, _) = deliver_to(&s, s.team_id(), Provider::Stripe, SECRET, &ping).await;
        if status == 429 || answered >= 40 {
            break status;
        }
        assert_eq!(status, 200);
        answered += 1;
    };
    assert_eq!(limited, 429, "no limit within 40 deliveries");
    assert!(answered >= 20, "limited after {answered}");
    assert_eq!(
        events(&s, "?pageSize=50").await.len(),
        answered,
        "the refused one is not stored"
    );
}
