//! Verifying the server's webhook deliveries in a vendor's receiver.
//!
//! The server signs deliveries in the Standard Webhooks scheme: the `webhook-id`,
//! `webhook-timestamp` and `webhook-signature` headers, `v1,<base64 HMAC-SHA256>` of
//! `"{id}.{timestamp}.{body}"` under the endpoint's `whsec_…` secret. Verify the raw body,
//! before parsing it, and deduplicate on `webhook-id` (a delivery may arrive more than once).
//!
//! ```
//! use licensing_sdk::webhooks::Webhook;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let hook = Webhook::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
//! let mut headers = reqwest::header::HeaderMap::new();
//! headers.insert("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek".parse()?);
//! headers.insert("webhook-timestamp", "1614265330".parse()?);
//! headers.insert("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".parse()?);
//! let body = br#"{"test": 2432232314}"#;
//! // A receiver calls `hook.verify(&headers, body)`, which checks the timestamp against its clock;
//! // this example's delivery is from 2021, so it gives the time.
//! hook.verify_at(&headers, body, 1614265330)?;
//! # Ok(())
//! # }
//! ```

use licensing_core::crypto::webhook::{self, headers as names};
pub use licensing_core::crypto::{WebhookError, WebhookSecret};
use reqwest::header::HeaderMap;

/// A receiver's verifier of one endpoint's deliveries.
#[derive(Clone, Debug)]
pub struct Webhook {
    secret: WebhookSecret,
}

impl Webhook {
    /// A verifier with the endpoint's signing secret (`whsec_…`, as the server showed it).
    pub fn new(secret: &str) -> Result<Self, WebhookError> {
        Ok(Self {
            secret: WebhookSecret::parse(secret)?,
        })
    }

    /// Checks a delivery's headers and raw body against the secret and the current time (a
    /// timestamp more than five minutes away is refused as a replay).
    pub fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), WebhookError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.verify_at(headers, body, now)
    }

    /// [`verify`](Self::verify) at `now`, seconds since the Unix epoch.
    pub fn verify_at(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<(), WebhookError> {
        let header = |name: &'static str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .ok_or(WebhookError::BadHeader(name))
        };
        webhook::verify(
            &self.secret,
            header(names::ID)?,
            header(names::TIMESTAMP)?,
            header(names::SIGNATURE)?,
            body,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_delivery_verifies_and_a_changed_one_does_not() {
        let secret = WebhookSecret::generate();
        let hook = Webhook::new(&secret.expose()).unwrap();
        let body = br#"{"type":"license.created"}"#;
        let mut headers = HeaderMap::new();
        headers.insert(names::ID, "evt_1".parse().unwrap());
        headers.insert(names::TIMESTAMP, "1700000000".parse().unwrap());
        headers.insert(
            names::SIGNATURE,
            secret.sign("evt_1", 1_700_000_000, body).parse().unwrap(),
        );
        assert_eq!(hook.verify_at(&headers, body, 1_700_000_030), Ok(()));
        assert_eq!(
            hook.verify_at(&headers, b"{}", 1_700_000_030),
            Err(WebhookError::NoMatch)
        );
        assert_eq!(hook.verify(&headers, body), Err(WebhookError::Stale));
        headers.remove(names::ID);
        assert_eq!(
            hook.verify_at(&headers, body, 1_700_000_030),
            Err(WebhookError::BadHeader(names::ID))
        );
        assert!(Webhook::new("not a secret").is_err());
    }
}
