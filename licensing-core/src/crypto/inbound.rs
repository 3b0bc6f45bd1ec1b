//! (ext) Signatures of the payment providers' webhooks, checked on the raw bytes exactly as each
//! provider documents them (protocol.md section 7, "Payments → licenses"):
//!
//! - Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, each `v1` an HMAC-SHA256
//!   of `"{t}.{body}"` keyed with the endpoint's secret as written (`whsec_…`); any `v1` may
//!   match (Stripe sends one per secret while one is rolled), and `t` must be within the
//!   tolerance of now.
//! - Paddle Billing: `Paddle-Signature: ts=<unix seconds>;h1=<hex>[;h1=<hex>…]`, each `h1` an
//!   HMAC-SHA256 of `"{ts}:{body}"` keyed with the notification destination's secret key; the
//!   same tolerance.
//! - Lemon Squeezy: `X-Signature: <hex>`, an HMAC-SHA256 of the body keyed with the webhook's
//!   signing secret (no time stamp: its events are deduplicated by their derived id).
//!
//! Every check takes the team's secrets (two while a secret is rotated: either verifies) and
//! compares in constant time.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text).ok_or_else(|| {
            format!("`{text}` is not a payment provider: use stripe, paddle or lemonsqueezy")
        })
    }
}

/// Seconds a signed time stamp may lie from the server's clock, either way (Stripe's default
/// tolerance; Paddle's deliveries are held to the same).
pub const INBOUND_TOLERANCE_SECONDS: i64 = 300;

/// Why a provider's delivery does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboundSignatureError {
    /// The signature header is absent.
    #[error("the signature header is missing")]
    Missing,
    /// The header does not have the provider's shape.
    #[error("the signature header is malformed")]
    Malformed,
    /// The signed time stamp is outside the tolerance (a replay, or a clock far off).
    #[error(
        "the signature's time stamp is outside the tolerance of {INBOUND_TOLERANCE_SECONDS} seconds"
    )]
    Stale,
    /// No signature matches the body with any of the secrets.
    #[error("no signature matches the body")]
    Mismatch,
}

/// A payment provider whose webhooks the server receives; named `stripe`, `paddle` and
/// `lemonsqueezy` in paths, settings and JSON.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Stripe.
    Stripe,
    /// Paddle Billing.
    Paddle,
    /// Lemon Squeezy.
    LemonSqueezy,
}

impl Provider {
    /// Every provider, with its name in paths and settings.
    pub const ALL: [(&'static str, Self); 3] = [
        ("stripe", Self::Stripe),
        ("paddle", Self::Paddle),
        ("lemonsqueezy", Self::LemonSqueezy),
    ];

    /// The name in paths and settings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Paddle => "paddle",
            Self::LemonSqueezy => "lemonsqueezy",
        }
    }

    /// The provider named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == text).map(|(_, p)| *p)
    }

    /// Its name for people.
    pub fn title(self) -> &'static str {
        match self {
            Self::Stripe => "Stripe",
            Self::Paddle => "Paddle",
            Self::LemonSqueezy => "Lemon Squeezy",
        }
    }

    /// The header its deliveries carry their signature in.
    pub fn signature_header(self) -> &'static str {
        match self {
            Self::Stripe => "stripe-signature",
            Self::Paddle => "paddle-signature",
            Self::LemonSqueezy => "x-signature",
        }
    }

    /// Checks a delivery's signature `header` over its raw `body` with any of `secrets`, at
    /// `now` (Unix seconds).
    pub fn verify(
        self,
        header: Option<&str>,
        body: &[u8],
        secrets: &[&str],
        now: i64,
    ) -> Result<(), InboundSignatureError> {
        let header = header.ok_or(InboundSignatureError::Missing)?.trim();
        match self {
            Self::Stripe => timed(header, ',', ("t", "v1"), b'.', body, secrets, now),
            Self::Paddle => timed(header, ';', ("ts", "h1"), b':', body, secrets, now),
            Self::LemonSqueezy => {
                let given = hex::decode(header).map_err(|_| InboundSignatureError::Malformed)?;
                if secrets.iter().any(|s| matches(&mac(s, &[body]), &given)) {
                    Ok(())
                } else {
                    Err(InboundSignatureError::Mismatch)
                }
            }
        }
    }

    /// The signature header a delivery of `body` at `now` would carry, signed with `secret`
    /// (what the provider sends; for tests and the load benchmark).
    pub fn sign(self, secret: &str, body: &[u8], now: i64) -> String {
        let stamp = now.to_string();
        match self {
            Self::Stripe => {
                let v1 = hex::encode(mac(secret, &[stamp.as_bytes(), b".", body]));
                format!("t={stamp},v1={v1}")
            }
            Self::Paddle => {
                let h1 = hex::encode(mac(secret, &[stamp.as_bytes(), b":", body]));
                format!("ts={stamp};h1={h1}")
            }
            Self::LemonSqueezy => hex::encode(mac(secret, &[body])),
        }
    }
}

/// The id of a Lemon Squeezy event (which has none of its own): the hex SHA-256 of its event
/// name, its `data.id` and its `data.attributes.updated_at`, each followed by a newline.
pub fn lemonsqueezy_event_id(event_name: &str, data_id: &str, updated_at: &str) -> String {
    let mut digest = Sha256::new();
    for part in [event_name, data_id, updated_at] {
        digest.update(part.as_bytes());
        digest.update(b"\n");
    }
    hex::encode(digest.finalize())
}

fn mac(secret: &str, parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    for part in parts {
        m.update(part);
    }
    m.finalize().into_bytes().into()
}

fn matches(expected: &[u8; 32], given: &[u8]) -> bool {
    given.len() == expected.len() && bool::from(expected.as_slice().ct_eq(given))
}

/// A header of `stamp=<seconds>` and `sig=<hex>` pairs joined by `separator` (Stripe's and
/// Paddle's shapes), over `"{stamp}{joint}{body}"`. Pairs of other names are ignored (Stripe's
/// `v0` test signatures).
fn timed(
    header: &str,
    separator: char,
    (stamp_name, sig_name): (&str, &str),
    joint: u8,
    body: &[u8],
    secrets: &[&str],
    now: i64,
) -> Result<(), InboundSignatureError> {
    let mut stamp = None;
    let mut given = Vec::new();
    for pair in header.split(separator) {
        let (name, value) = pair
            .trim()
            .split_once('=')
            .ok_or(InboundSignatureError::Malformed)?;
        if name == stamp_name {
            stamp = Some(value);
        } else if name == sig_name {
            given.push(hex::decode(value).map_err(|_| InboundSignatureError::Malformed)?);
        }
    }
    let stamp = stamp.ok_or(InboundSignatureError::Malformed)?;
    let seconds: i64 = stamp
        .parse()
        .map_err(|_| InboundSignatureError::Malformed)?;
    if given.is_empty() {
        return Err(InboundSignatureError::Malformed);
    }
    if (now - seconds).abs() > INBOUND_TOLERANCE_SECONDS {
        return Err(InboundSignatureError::Stale);
    }
    let verified = secrets.iter().any(|secret| {
        let expected = mac(secret, &[stamp.as_bytes(), &[joint], body]);
        given.iter().any(|g| matches(&expected, g))
    });
    if verified {
        Ok(())
    } else {
        Err(InboundSignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"id":"evt_1","type":"invoice.paid"}"#;
    const NOW: i64 = 1_764_000_000;

    #[test]
    fn each_provider_verifies_what_it_signs_and_nothing_else() {
        for (_, provider) in Provider::ALL {
            let header = provider.sign("secret-one", BODY, NOW);
            let verify = |header: Option<&str>, body: &[u8], secrets: &[&str], now| {
                provider.verify(header, body, secrets, now)
            };
            assert_eq!(verify(Some(&header), BODY, &["secret-one"], NOW), Ok(()));
            // Either secret of a rotation.
            assert_eq!(
                verify(Some(&header), BODY, &["secret-two", "secret-one"], NOW),
                Ok(())
            );
            assert_eq!(
                verify(Some(&header), BODY, &["secret-two"], NOW),
                Err(InboundSignatureError::Mismatch)
            );
            let mut tampered = BODY.to_vec();
            tampered[5] ^= 1;
            assert_eq!(
                verify(Some(&header), &tampered, &["secret-one"], NOW),
                Err(InboundSignatureError::Mismatch)
            );
            assert_eq!(
                verify(None, BODY, &["secret-one"], NOW),
                Err(InboundSignatureError::Missing)
            );
            assert_eq!(
                verify(Some("zz"), BODY, &["secret-one"], NOW),
                Err(InboundSignatureError::Malformed)
            );
        }
    }

    #[test]
    fn stripe_and_paddle_refuse_stale_time_stamps_and_take_any_signature() {
        for provider in [Provider::Stripe, Provider::Paddle] {
            let header = provider.sign("s", BODY, NOW);
            assert_eq!(
                provider.verify(Some(&header), BODY, &["s"], NOW + 300),
                Ok(())
            );
            assert_eq!(
                provider.verify(Some(&header), BODY, &["s"], NOW + 301),
                Err(InboundSignatureError::Stale)
            );
            assert_eq!(
                provider.verify(Some(&header), BODY, &["s"], NOW - 301),
                Err(InboundSignatureError::Stale)
            );
        }
        // Stripe: several v1 (a rolled secret), and a v0 to ignore.
        let good = Provider::Stripe.sign("s", BODY, NOW);
        let v1 = good.split_once(",v1=").unwrap().1;
        let header = format!("t={NOW},v1={},v0=abc,v1={v1}", "00".repeat(32));
        assert_eq!(
            Provider::Stripe.verify(Some(&header), BODY, &["s"], NOW),
            Ok(())
        );
        // Paddle: several h1.
        let good = Provider::Paddle.sign("s", BODY, NOW);
        let h1 = good.split_once(";h1=").unwrap().1;
        let header = format!("ts={NOW};h1={};h1={h1}", "11".repeat(32));
        assert_eq!(
            Provider::Paddle.verify(Some(&header), BODY, &["s"], NOW),
            Ok(())
        );
    }

    #[test]
    fn stripes_documented_signature_is_reproduced() {
        // The HMAC-SHA256 of "t.body" keyed with the secret as written, hex: computed here
        // independently of `sign`.
        let secret = "whsec_test_secret";
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
        m.update(format!("{NOW}.").as_bytes());
        m.update(BODY);
        let expected = hex::encode(m.finalize().into_bytes());
        assert_eq!(
            Provider::Stripe.sign(secret, BODY, NOW),
            format!("t={NOW},v1={expected}")
        );
    }

    #[test]
    fn lemon_squeezy_event_ids_are_stable_and_distinct() {
        let a = lemonsqueezy_event_id("order_created", "1", "2026-01-01T00:00:00.000000Z");
        assert_eq!(a.len(), 64);
        assert_eq!(
            a,
            lemonsqueezy_event_id("order_created", "1", "2026-01-01T00:00:00.000000Z")
        );
        assert_ne!(
            a,
            lemonsqueezy_event_id("order_created", "12", "026-01-01T00:00:00.000000Z")
        );
        assert_ne!(
            a,
            lemonsqueezy_event_id("order_refunded", "1", "2026-01-01T00:00:00.000000Z")
        );
    }

    #[test]
    fn providers_are_named_as_in_paths() {
        for (name, provider) in Provider::ALL {
            assert_eq!(Provider::parse(name), Some(provider));
            assert_eq!(provider.as_str(), name);
        }
        assert_eq!(Provider::parse("paypal"), None);
    }
}
