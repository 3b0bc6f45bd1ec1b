//! Webhook signatures in the Standard Webhooks scheme (<https://www.standardwebhooks.com>), so
//! that receivers can use that scheme's libraries in any language.
//!
//! A delivery carries three headers: `webhook-id` (the message id, the same on every attempt),
//! `webhook-timestamp` (seconds since the Unix epoch, of this attempt) and `webhook-signature`:
//! space-separated `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per signing
//! secret (two while a rotated secret's old value still signs). A secret is written
//! `whsec_<base64 of its bytes>`; the HMAC key is the decoded bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// The prefix of a written secret.
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

/// Bytes of a secret this crate generates.
const SECRET_LEN: usize = 32;

/// Seconds a receiver accepts between a delivery's timestamp and its own clock, either way (the
/// scheme's recommendation).
pub const WEBHOOK_TOLERANCE_SECONDS: i64 = 5 * 60;

/// The header names.
pub mod headers {
    /// The message id, the same on every attempt: receivers deduplicate on it.
    pub const ID: &str = "webhook-id";
    /// Seconds since the Unix epoch of this attempt.
    pub const TIMESTAMP: &str = "webhook-timestamp";
    /// `v1,<base64>` signatures, space-separated.
    pub const SIGNATURE: &str = "webhook-signature";
}

/// A webhook signing secret.
#[derive(Clone)]
pub struct WebhookSecret(Zeroizing<Vec<u8>>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

/// Why a delivery does not verify, or a secret does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The secret is not `whsec_` and base64 of 24 to 64 bytes.
    #[error("the signing secret must be whsec_ followed by base64 of 24 to 64 bytes")]
    BadSecret,
    /// A header is missing or malformed.
    #[error("the {0} header is missing or malformed")]
    BadHeader(&'static str),
    /// The timestamp is further than the tolerance from now (a replay, or a clock far off).
    #[error("the webhook-timestamp is outside the tolerance")]
    Stale,
    /// No signature matches the body with this secret.
    #[error("no signature matches")]
    NoMatch,
}

impl WebhookSecret {
    /// A fresh random secret of 32 bytes.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new(vec![0u8; SECRET_LEN]);
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// Parses `whsec_<base64>` (the prefix may be left out).
    pub fn parse(text: &str) -> Result<Self, WebhookError> {
        let encoded = text.strip_prefix(WEBHOOK_SECRET_PREFIX).unwrap_or(text);
        let bytes = Zeroizing::new(
            B64.decode(encoded.as_bytes())
                .map_err(|_| WebhookError::BadSecret)?,
        );
        if !(24..=64).contains(&bytes.len()) {
            return Err(WebhookError::BadSecret);
        }
        Ok(Self(bytes))
    }

    /// The secret as written: `whsec_<base64>`.
    pub fn expose(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{WEBHOOK_SECRET_PREFIX}{}", B64.encode(&*self.0)))
    }

    /// The signature of one delivery: `v1,<base64>`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        format!("v1,{}", B64.encode(self.mac(id, timestamp, body)))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
        // HMAC takes keys of any length.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else {
            return [0; 32];
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.finalize().into_bytes().into()
    }
}

/// The `webhook-signature` header of a delivery signed with each of `secrets`.
pub fn signature_header(
    secrets: &[WebhookSecret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|s| s.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks a delivery as a receiver does: the timestamp within
/// [`WEBHOOK_TOLERANCE_SECONDS`] of `now` (seconds since the epoch), and one of the header's `v1`
/// signatures the HMAC of `"{id}.{timestamp}.{body}"` under `secret` (compared in constant
/// time). Signatures of other versions are ignored.
pub fn verify(
    secret: &WebhookSecret,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
) -> Result<(), WebhookError> {
    if id.is_empty() {
        return Err(WebhookError::BadHeader(headers::ID));
    }
    let at: i64 = timestamp
        .parse()
        .map_err(|_| WebhookError::BadHeader(headers::TIMESTAMP))?;
    if (now - at).abs() > WEBHOOK_TOLERANCE_SECONDS {
        return Err(WebhookError::Stale);
    }
    let expected = secret.mac(id, at, body);
    let mut any = false;
    for candidate in signatures.split(' ').filter(|s| !s.is_empty()) {
        let Some(encoded) = candidate.strip_prefix("v1,") else {
            continue;
        };
        any = true;
        if let Ok(given) = B64.decode(encoded)
            && bool::from(given.ct_eq(&expected))
        {
            return Ok(());
        }
    }
    if any {
        Err(WebhookError::NoMatch)
    } else {
        Err(WebhookError::BadHeader(headers::SIGNATURE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The test vector of the Standard Webhooks specification.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn signs_the_specifications_test_vector() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        assert_eq!(secret.sign(ID, TIMESTAMP, BODY), SIGNATURE);
        assert_eq!(*secret.expose(), SECRET);
        assert_eq!(
            verify(&secret, ID, "1614265330", SIGNATURE, BODY, TIMESTAMP + 10),
            Ok(())
        );
    }

    #[test]
    fn refuses_tampering_staleness_and_malformed_headers() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        let ts = "1614265330";
        let now = TIMESTAMP;
        assert_eq!(
            verify(&secret, ID, ts, SIGNATURE, br#"{"test": 2432232315}"#, now),
            Err(WebhookError::NoMatch)
        );
        assert_eq!(
            verify(&secret, "msg_other", ts, SIGNATURE, BODY, now),
            Err(WebhookError::NoMatch)
        );
        assert_eq!(
            verify(
                &secret,
                ID,
                ts,
                SIGNATURE,
                BODY,
                now + WEBHOOK_TOLERANCE_SECONDS + 1
            ),
            Err(WebhookError::Stale)
        );
        assert_eq!(
            verify(&secret, ID, "soon", SIGNATURE, BODY, now),
            Err(WebhookError::BadHeader(headers::TIMESTAMP))
        );
        assert_eq!(
            verify(&secret, ID, ts, "v2,abc", BODY, now),
            Err(WebhookError::BadHeader(headers::SIGNATURE))
        );
        let other = WebhookSecret::generate();
        assert_eq!(
            verify(&other, ID, ts, SIGNATURE, BODY, now),
            Err(WebhookError::NoMatch)
        );
    }

    #[test]
    fn a_rotated_endpoint_signs_with_both_secrets_and_either_verifies() {
        let old = WebhookSecret::generate();
        let new = WebhookSecret::generate();
        let header = signature_header(&[new.clone(), old.clone()], ID, TIMESTAMP, BODY);
        assert_eq!(header.split(' ').count(), 2);
        for secret in [&old, &new] {
            assert_eq!(
                verify(secret, ID, "1614265330", &header, BODY, TIMESTAMP),
                Ok(())
            );
        }
    }

    #[test]
    fn secrets_are_generated_and_parsed_in_the_written_form() {
        let s = WebhookSecret::generate();
        let text = s.expose();
        assert!(text.starts_with("whsec_"));
        let parsed = WebhookSecret::parse(&text).unwrap();
        assert_eq!(parsed.sign("a", 1, b"b"), s.sign("a", 1, b"b"));
        assert_ne!(WebhookSecret::generate().expose(), text);
        for bad in ["whsec_", "whsec_!!", "whsec_c2hvcnQ=", "nope nope"] {
            assert_eq!(
                WebhookSecret::parse(bad).unwrap_err(),
                WebhookError::BadSecret,
                "{bad}"
            );
        }
        assert!(!format!("{s:?}").contains(&text[6..]));
    }
}
