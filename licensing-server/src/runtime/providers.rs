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
        let mut last = String::new();
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 * 4u64.pow(attempt - 1))).await;
            }
            let sent = self
                .client
                .get(url)
                .bearer_auth(key)
                .header("accept", accept)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(e) => {
                    last = format!("unreachable ({e})");
                    continue;
                }
            };
            let status = response.status().as_u16();
            match status {
                200 => {
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
