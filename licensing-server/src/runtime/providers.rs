//! (ext) The payment providers' APIs, read where an event's payload lacks what applying it
//! needs (protocol.md section 7, "Payments → licenses"): a Stripe checkout's line items and a
//! product's metadata, a Paddle customer's e-mail address, a Lemon Squeezy subscription's
//! renewal date. Each call carries the team's API key, times out, and is tried up to three times
//! when the provider is unreachable, busy (429) or failing (5xx). The addresses are settings
//! (`LICENSING_STRIPE_API_BASE`, …) so that tests answer from a local server.

use std::collections::BTreeMap;
use std::time::Duration;

use licensing_core::Timestamp;
use serde_json::Value;

/// The providers' API addresses, and the client that calls them.
#[derive(Clone, Debug)]
pub struct ProviderApis {
    client: reqwest::Client,
    stripe: String,
    paddle: String,
    lemonsqueezy: String,
}

/// A request body: Stripe's form encoding, or JSON.
enum Posted<'a> {
    /// `application/x-www-form-urlencoded` pairs.
    Form(&'a [(&'a str, &'a str)]),
    /// JSON.
    Json(&'a Value),
}

/// What a Stripe line item sold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineItem {
    /// The price.
    pub price: Option<String>,
    /// The product.
    pub product: Option<String>,
}

impl ProviderApis {
    /// Clients of the APIs at these addresses (`https://api.stripe.com`, …).
    pub fn new(stripe: &str, paddle: &str, lemonsqueezy: &str) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("licensing-server/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("the payment providers' HTTP client: {e}"))?;
        let trim = |s: &str| s.trim_end_matches('/').to_owned();
        Ok(Self {
            client,
            stripe: trim(stripe),
            paddle: trim(paddle),
            lemonsqueezy: trim(lemonsqueezy),
        })
    }

    /// GETs `url` with `key` as a bearer token: the JSON answer of a 200, `None` for a 404,
    /// an error otherwise (after three tries for the failures a retry may cure).
    async fn get(&self, url: &str, key: &str, accept: &str) -> Result<Option<Value>, String> {
        self.call(|| {
            self.client
                .get(url)
                .bearer_auth(key)
                .header("accept", accept)
        })
        .await
    }

    /// POSTs `body` to `url` with `key` as a bearer token, as [`get`](Self::get) answers.
    async fn post(&self, url: &str, key: &str, body: Posted<'_>) -> Result<Option<Value>, String> {
        self.call(|| {
            let request = self.client.post(url).bearer_auth(key);
            match &body {
                Posted::Form(pairs) => request
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(
                        form_urlencoded::Serializer::new(String::new())
                            .extend_pairs(pairs.iter())
                            .finish(),
                    ),
                Posted::Json(value) => request.json(value),
            }
        })
        .await
    }

    /// Sends the request `request` builds: the JSON answer of a 2xx, `None` for a 404, an
    /// error otherwise, after up to three tries when the provider is unreachable, busy (429)
    /// or failing (5xx).
    async fn call(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Option<Value>, String> {
        let mut last = String::new();
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 * 4u64.pow(attempt - 1))).await;
            }
            let response = match request().send().await {
                Ok(response) => response,
                Err(e) => {
                    last = format!("unreachable ({e})");
                    continue;
                }
            };
            let status = response.status().as_u16();
            match status {
                200..=299 => {
                    return response
                        .json::<Value>()
                        .await
                        .map(Some)
                        .map_err(|e| format!("answered with a body that is not JSON ({e})"));
                }
                404 => return Ok(None),
                429 | 500..=599 => last = format!("answered {status}"),
                401 | 403 => {
                    return Err(format!(
                        "refused the integration's API key ({status}): check its apiKey and its permissions"
                    ));
                }
                _ => return Err(format!("answered {status}")),
            }
        }
        Err(last)
    }

    /// The provider's billing page for the customer of `subject` (a subscription, or a
    /// purchase), where they change their payment method or cancel: Stripe's customer portal
    /// (a session for the subscription's customer, coming back to `return_url`), Paddle's
    /// customer portal (a session for the subscription's customer), Lemon Squeezy's
    /// subscription portal. `None` when the provider knows no such subscription or customer.
    pub async fn billing_page(
        &self,
        provider: licensing_core::crypto::inbound::Provider,
        key: &str,
        subject: &str,
        return_url: &str,
    ) -> Result<Option<String>, String> {
        use licensing_core::crypto::inbound::Provider;
        let json = "application/json";
        match provider {
            Provider::Stripe => {
                let what = if subject.starts_with("sub_") {
                    "subscriptions"
                } else {
                    "checkout/sessions"
                };
                let url = format!("{}/v1/{what}/{subject}", self.stripe);
                let Some(found) = self
                    .get(&url, key, json)
                    .await
                    .map_err(|e| format!("Stripe {e}"))?
                else {
                    return Ok(None);
                };
                let Some(customer) = found
                    .get("customer")
                    .and_then(|c| c.get("id").and_then(text).or_else(|| text(c)))
                else {
                    return Ok(None);
                };
                let url = format!("{}/v1/billing_portal/sessions", self.stripe);
                let pairs = [("customer", customer.as_str()), ("return_url", return_url)];
                let made = self
                    .post(&url, key, Posted::Form(&pairs))
                    .await
                    .map_err(|e| format!("Stripe {e}"))?;
                Ok(made.and_then(|m| m.get("url").and_then(text)))
            }
            Provider::Paddle => {
                let what = if subject.starts_with("txn_") {
                    "transactions"
                } else {
                    "subscriptions"
                };
                let url = format!("{}/{what}/{subject}", self.paddle);
                let Some(found) = self
                    .get(&url, key, json)
                    .await
                    .map_err(|e| format!("Paddle {e}"))?
                else {
                    return Ok(None);
                };
                let Some(customer) = found.pointer("/data/customer_id").and_then(text) else {
                    return Ok(None);
                };
                let url = format!("{}/customers/{customer}/portal-sessions", self.paddle);
                let body = if what == "subscriptions" {
                    serde_json::json!({"subscription_ids": [subject]})
                } else {
                    serde_json::json!({})
                };
                let made = self
                    .post(&url, key, Posted::Json(&body))
                    .await
                    .map_err(|e| format!("Paddle {e}"))?;
                Ok(made.and_then(|m| m.pointer("/data/urls/general/overview").and_then(text)))
            }
            Provider::LemonSqueezy => {
                let url = format!("{}/v1/subscriptions/{subject}", self.lemonsqueezy);
                let found = self
                    .get(&url, key, "application/vnd.api+json")
                    .await
                    .map_err(|e| format!("Lemon Squeezy {e}"))?;
                Ok(found.and_then(|f| {
                    f.pointer("/data/attributes/urls/customer_portal")
                        .and_then(text)
                }))
            }
        }
    }

    /// A Stripe Checkout session's line items.
    pub async fn stripe_line_items(
        &self,
        key: &str,
        session: &str,
    ) -> Result<Vec<LineItem>, String> {
        let url = format!(
            "{}/v1/checkout/sessions/{session}/line_items?limit=100",
            self.stripe
        );
        let answer = self
            .get(&url, key, "application/json")
            .await
            .map_err(|e| format!("Stripe {e}"))?
            .ok_or_else(|| format!("Stripe has no checkout session {session}"))?;
        let items = answer
            .get("data")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|item| {
                let price = item.get("price");
                LineItem {
                    price: price.and_then(|p| p.get("id")).and_then(text),
                    product: price
                        .and_then(|p| p.get("product"))
                        .and_then(|p| p.get("id").and_then(text).or_else(|| text(p))),
                }
            })
            .collect();
        Ok(items)
    }

    /// A Stripe product's metadata (`None`: no such product).
    pub async fn stripe_product_metadata(
        &self,
        key: &str,
        product: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String> {
        let url = format!("{}/v1/products/{product}", self.stripe);
        let Some(answer) = self
            .get(&url, key, "application/json")
            .await
            .map_err(|e| format!("Stripe {e}"))?
        else {
            return Ok(None);
        };
        let metadata = answer
            .get("metadata")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| text(v).map(|v| (k.clone(), v)))
            .collect();
        Ok(Some(metadata))
    }

    /// A Paddle customer's e-mail address.
    pub async fn paddle_customer_email(
        &self,
        key: &str,
        customer: &str,
    ) -> Result<Option<String>, String> {
        let url = format!("{}/customers/{customer}", self.paddle);
        let answer = self
            .get(&url, key, "application/json")
            .await
            .map_err(|e| format!("Paddle {e}"))?;
        Ok(answer.and_then(|a| a.get("data")?.get("email").and_then(text)))
    }

    /// When a Lemon Squeezy subscription renews (the end of the period paid for).
    pub async fn lemonsqueezy_renews_at(
        &self,
        key: &str,
        subscription: &str,
    ) -> Result<Option<Timestamp>, String> {
        let url = format!("{}/v1/subscriptions/{subscription}", self.lemonsqueezy);
        let answer = self
            .get(&url, key, "application/vnd.api+json")
            .await
            .map_err(|e| format!("Lemon Squeezy {e}"))?;
        Ok(answer.and_then(|a| {
            let at = a
                .get("data")?
                .get("attributes")?
                .get("renews_at")?
                .as_str()?;
            Timestamp::parse(at).ok()
        }))
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
