use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

const PREFIX: &str = "lsk_";

/// A plaintext API key, `lsk_` + 64 lower-case hex characters. Shown once at creation, never
/// stored; `Debug` and `Display` never print it.
pub struct ApiKeySecret(Zeroizing<String>);

/// The SHA-256 of an API key, the only form that is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ApiKeyHash(#[serde(with = "hex_32")] [u8; 32]);

impl ApiKeySecret {
    /// A new key from the operating system's CSPRNG.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng.fill_bytes(bytes.as_mut());
        Self(Zeroizing::new(format!(
            "{PREFIX}{}",
            hex::encode(bytes.as_ref())
        )))
    }

    /// Accepts text that has the key format (for example from an `Authorization` header).
    pub fn parse(text: &str) -> Option<Self> {
        let hex_part = text.strip_prefix(PREFIX)?;
        (hex_part.len() == 64
            && hex_part
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| Self(Zeroizing::new(text.to_owned())))
    }

    /// The key text, to show the user once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The hash to store and to look the key up by.
    pub fn hash(&self) -> ApiKeyHash {
        ApiKeyHash(Sha256::digest(self.0.as_bytes()).into())
    }
}

impl std::fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeySecret(<redacted>)")
    }
}

impl ApiKeyHash {
    /// Constant-time comparison, for stores that compare hashes themselves.
    pub fn ct_eq(&self, other: &ApiKeyHash) -> bool {
        self.0.ct_eq(&other.0).into()
    }

    /// The raw digest, for building storage keys.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for ApiKeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeyHash({}…)", hex::encode(&self.0[..4]))
    }
}

mod hex_32 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        let mut out = [0u8; 32];
        hex::decode_to_slice(text.as_bytes(), &mut out).map_err(serde::de::Error::custom)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_format_and_differ() {
        let a = ApiKeySecret::generate();
        let b = ApiKeySecret::generate();
        assert!(a.expose().starts_with("lsk_"));
        assert_eq!(a.expose().len(), 68);
        assert!(ApiKeySecret::parse(a.expose()).is_some());
        assert_ne!(a.expose(), b.expose());
        assert!(!a.hash().ct_eq(&b.hash()));
    }

    #[test]
    fn parse_rejects_other_shapes() {
        let good = ApiKeySecret::generate();
        let upper = good.expose().to_uppercase();
        for bad in ["", "lsk_", "lsk_abc", upper.as_str(), &good.expose()[4..]] {
            assert!(ApiKeySecret::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn hash_is_stable_and_serializes_as_hex() {
        let key = ApiKeySecret::parse(&format!("lsk_{}", "ab".repeat(32))).unwrap();
        let json = serde_json::to_string(&key.hash()).unwrap();
        assert_eq!(json.len(), 66);
        assert_eq!(
            serde_json::from_str::<ApiKeyHash>(&json).unwrap(),
            key.hash()
        );
        assert_eq!(format!("{key:?}"), "ApiKeySecret(<redacted>)");
    }
}
