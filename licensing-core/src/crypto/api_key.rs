use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// Every key starts with it, so that secret scanners recognize one in a leaked file.
pub const API_KEY_PREFIX: &str = "lsk_";
/// Random base62 characters of a key (about 190 bits).
const RANDOM_LEN: usize = 32;
/// Base62 characters of the checksum (a CRC-32 of the random part).
const CHECK_LEN: usize = 6;
/// Hex characters of a key made before keys had a checksum (still accepted).
const LEGACY_HEX_LEN: usize = 64;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A plaintext API key: `lsk_`, 32 random base62 characters and a 6-character base62 CRC-32 of
/// them (`lsk_[0-9A-Za-z]{38}`). The checksum lets the server (and a secret scanner) tell a
/// mistyped or truncated key from a wrong one without looking anything up. Keys of the earlier
/// format, `lsk_` and 64 lower-case hex characters, are still accepted. Shown once at creation,
/// never stored; `Debug` and `Display` never print it.
pub struct ApiKeySecret(Zeroizing<String>);

/// Why text is not an API key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiKeyFormatError {
    /// It does not have the shape of a key at all.
    #[error("is not an API key (lsk_ followed by 38 letters and digits)")]
    Malformed,
    /// It has the shape, but its checksum does not match: a character was changed or lost.
    #[error("is mistyped: its checksum does not match (copy the whole key again)")]
    Mistyped,
}

/// The SHA-256 of an API key, the only form that is stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ApiKeyHash(#[serde(with = "hex_32")] [u8; 32]);

fn checksum(random: &[u8]) -> [u8; CHECK_LEN] {
    let mut n = crc32fast::hash(random);
    let mut out = [b'0'; CHECK_LEN];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out
}

impl ApiKeySecret {
    /// A new key from the operating system's CSPRNG.
    pub fn generate() -> Self {
        let mut text = Zeroizing::new(String::with_capacity(
            API_KEY_PREFIX.len() + RANDOM_LEN + CHECK_LEN,
        ));
        text.push_str(API_KEY_PREFIX);
        let mut random = Zeroizing::new([0u8; RANDOM_LEN]);
        let mut filled = 0;
        let mut pool = Zeroizing::new([0u8; 64]);
        while filled < RANDOM_LEN {
            rand::rngs::OsRng.fill_bytes(pool.as_mut());
            // Rejection sampling keeps every character equally likely: 248 = 4 x 62.
            for &b in pool.iter().filter(|&&b| b < 248) {
                if filled == RANDOM_LEN {
                    break;
                }
                random[filled] = BASE62[usize::from(b % 62)];
                filled += 1;
            }
        }
        let check = checksum(random.as_ref());
        for &b in random.iter().chain(check.iter()) {
            text.push(char::from(b));
        }
        Self(text)
    }

    /// Accepts text that has a key format (for example from an `Authorization` header).
    pub fn parse(text: &str) -> Result<Self, ApiKeyFormatError> {
        let body = text
            .strip_prefix(API_KEY_PREFIX)
            .ok_or(ApiKeyFormatError::Malformed)?;
        let bytes = body.as_bytes();
        if bytes.len() == LEGACY_HEX_LEN
            && bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Ok(Self(Zeroizing::new(text.to_owned())));
        }
        if bytes.len() != RANDOM_LEN + CHECK_LEN || !bytes.iter().all(u8::is_ascii_alphanumeric) {
            return Err(ApiKeyFormatError::Malformed);
        }
        let (random, check) = bytes.split_at(RANDOM_LEN);
        if checksum(random).as_slice() != check {
            return Err(ApiKeyFormatError::Mistyped);
        }
        Ok(Self(Zeroizing::new(text.to_owned())))
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
        assert_eq!(a.expose().len(), 4 + 38);
        assert!(a.expose()[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(ApiKeySecret::parse(a.expose()).is_ok());
        assert_ne!(a.expose(), b.expose());
        assert!(!a.hash().ct_eq(&b.hash()));
    }

    #[test]
    fn a_changed_or_lost_character_is_told_from_a_wrong_key() {
        let key = ApiKeySecret::generate();
        let text = key.expose();
        for i in 4..text.len() {
            let mut changed = text.as_bytes().to_vec();
            changed[i] = if changed[i] == b'x' { b'y' } else { b'x' };
            let changed = String::from_utf8(changed).unwrap();
            assert_eq!(
                ApiKeySecret::parse(&changed).err(),
                Some(ApiKeyFormatError::Mistyped),
                "{i}"
            );
        }
        // Swapping two neighbours is caught too (a CRC detects every such swap).
        let mut swapped = text.as_bytes().to_vec();
        let i = (4..text.len() - 1)
            .find(|&i| swapped[i] != swapped[i + 1])
            .unwrap();
        swapped.swap(i, i + 1);
        assert_eq!(
            ApiKeySecret::parse(&String::from_utf8(swapped).unwrap()).err(),
            Some(ApiKeyFormatError::Mistyped)
        );
        assert_eq!(
            ApiKeySecret::parse(&text[..text.len() - 1]).err(),
            Some(ApiKeyFormatError::Malformed)
        );
    }

    #[test]
    fn keys_of_the_earlier_format_still_parse() {
        let legacy = format!("lsk_{}", "0123456789abcdef".repeat(4));
        assert!(ApiKeySecret::parse(&legacy).is_ok());
        assert_eq!(
            ApiKeySecret::parse(&legacy.to_uppercase()).err(),
            Some(ApiKeyFormatError::Malformed)
        );
    }

    #[test]
    fn parse_rejects_other_shapes() {
        let good = ApiKeySecret::generate();
        for bad in ["", "lsk_", "lsk_abc", "bearer", &good.expose()[4..]] {
            assert_eq!(
                ApiKeySecret::parse(bad).err(),
                Some(ApiKeyFormatError::Malformed),
                "{bad}"
            );
        }
        let with_symbol = format!("{}!", &good.expose()[..good.expose().len() - 1]);
        assert_eq!(
            ApiKeySecret::parse(&with_symbol).err(),
            Some(ApiKeyFormatError::Malformed)
        );
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
