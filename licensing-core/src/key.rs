//! License keys: `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`, each `X` one of `A-Z0-9`.

use std::fmt;
use std::str::FromStr;

use rand::{CryptoRng, Rng};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const ALPHABET: &[u8; 36] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// Length of a license key in characters, hyphens included.
pub const LICENSE_KEY_LEN: usize = 29;

/// A well-formed license key. Fixed size and `Copy`: checking and hashing one allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LicenseKey([u8; LICENSE_KEY_LEN]);

/// The text is not a license key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "must be five groups of five upper-case letters or digits joined by hyphens, such as ABCDE-12345-FGHIJ-67890-KLMNO"
)]
pub struct LicenseKeyError;

impl LicenseKey {
    /// A new key drawn from the operating system's CSPRNG.
    pub fn generate() -> Self {
        Self::generate_with(&mut rand::rngs::OsRng)
    }

    /// A new key drawn from `rng`, uniform over the 36 characters without modulo bias: random
    /// bytes below 252 (= 7 × 36) are kept and reduced modulo 36, others are drawn again. One
    /// draw of 64 bytes almost always suffices (25 needed, each kept with probability 252/256),
    /// so a key costs one call into the OS, not one per character.
    pub fn generate_with<R: Rng + CryptoRng>(rng: &mut R) -> Self {
        const LIMIT: u8 = 252;
        let mut pool = [0u8; 64];
        let mut used = pool.len();
        let mut bytes = [b'-'; LICENSE_KEY_LEN];
        for (i, byte) in bytes.iter_mut().enumerate() {
            if i % 6 == 5 {
                continue;
            }
            *byte = loop {
                if used == pool.len() {
                    rng.fill_bytes(&mut pool);
                    used = 0;
                }
                let b = pool[used];
                used += 1;
                if b < LIMIT {
                    break ALPHABET[usize::from(b % 36)];
                }
            };
        }
        Self(bytes)
    }

    /// Parses a key. Matching is exact: lower case is not accepted, since the format is upper case.
    pub fn parse(text: &str) -> Result<Self, LicenseKeyError> {
        let bytes: [u8; LICENSE_KEY_LEN] =
            text.as_bytes().try_into().map_err(|_| LicenseKeyError)?;
        for (i, &b) in bytes.iter().enumerate() {
            let ok = if i % 6 == 5 {
                b == b'-'
            } else {
                b.is_ascii_uppercase() || b.is_ascii_digit()
            };
            if !ok {
                return Err(LicenseKeyError);
            }
        }
        Ok(Self(bytes))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored, so this cannot fail.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The key's bytes, for building storage keys.
    pub fn as_bytes(&self) -> &[u8; LICENSE_KEY_LEN] {
        &self.0
    }
}

impl fmt::Display for LicenseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for LicenseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LicenseKey({})", self.as_str())
    }
}

impl FromStr for LicenseKey {
    type Err = LicenseKeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for LicenseKey {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Serialize for LicenseKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LicenseKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = LicenseKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a license key string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LicenseKey, E> {
                LicenseKey::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn generated_keys_have_the_exact_format() {
        for _ in 0..1000 {
            let key = LicenseKey::generate();
            let text = key.as_str();
            assert_eq!(text.len(), 29);
            let groups: Vec<&str> = text.split('-').collect();
            assert_eq!(groups.len(), 5);
            for g in groups {
                assert_eq!(g.len(), 5);
                assert!(
                    g.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                );
            }
            assert_eq!(LicenseKey::parse(text), Ok(key));
        }
    }

    #[test]
    fn generation_is_uniform_over_the_alphabet() {
        // 4000 keys = 100,000 characters, about 2,778 per symbol. A chi-squared statistic over 35
        // degrees of freedom above 80 has probability below 1e-4 for a uniform source; a modulo
        // bias of 252 vs 256 would give each of the first 4 symbols ~1.6% more and fail it.
        let mut counts = [0u32; 36];
        for _ in 0..4000 {
            for b in LicenseKey::generate().as_bytes() {
                if let Some(i) = ALPHABET.iter().position(|a| a == b) {
                    counts[i] += 1;
                }
            }
        }
        let n: u32 = counts.iter().sum();
        assert_eq!(n, 100_000);
        let expected = f64::from(n) / 36.0;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (f64::from(c) - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 80.0, "chi-squared {chi2:.1}: {counts:?}");
    }

    #[test]
    fn generation_uses_the_whole_alphabet() {
        let mut seen = [false; 256];
        for _ in 0..200 {
            for b in LicenseKey::generate().as_bytes() {
                seen[usize::from(*b)] = true;
            }
        }
        assert!(ALPHABET.iter().all(|&b| seen[usize::from(b)]));
    }

    #[test]
    fn near_misses_are_rejected() {
        for bad in [
            "",
            "ABCDE-12345-FGHIJ-67890-KLMN",    // one short
            "ABCDE-12345-FGHIJ-67890-KLMNOP",  // one long
            "abcde-12345-fghij-67890-klmno",   // lower case
            "ABCDE_12345-FGHIJ-67890-KLMNO",   // wrong separator
            "ABCDE-12345-FGHIJ-67890-KLMN!",   // symbol
            "ABCDE-12345-FGHIJ-67890-KLMNÖ",   // non-ASCII (same byte count as one long)
            "ABCDE 12345 FGHIJ 67890 KLMNO",   // spaces
            "ABCDEF-2345-FGHIJ-67890-KLMNO",   // misplaced hyphen
            "ABCDE-12345-FGHIJ-67890-KLMNO\n", // trailing newline
        ] {
            assert_eq!(LicenseKey::parse(bad), Err(LicenseKeyError), "{bad:?}");
        }
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[A-Z0-9]{5}(-[A-Z0-9]{5}){4}").unwrap()
    }

    proptest! {
        #[test]
        fn every_well_formed_key_roundtrips(text in key_strategy()) {
            let key = LicenseKey::parse(&text).unwrap();
            prop_assert_eq!(key.as_str(), text.as_str());
            let json = serde_json::to_string(&key).unwrap();
            prop_assert_eq!(serde_json::from_str::<LicenseKey>(&json).unwrap(), key);
        }

        #[test]
        fn changing_any_one_character_to_an_invalid_one_is_rejected(
            text in key_strategy(),
            pos in 0usize..29,
            replacement in prop::char::any(),
        ) {
            let valid_here = if pos % 6 == 5 {
                replacement == '-'
            } else {
                replacement.is_ascii_uppercase() || replacement.is_ascii_digit()
            };
            let mut chars: Vec<char> = text.chars().collect();
            chars[pos] = replacement;
            let changed: String = chars.into_iter().collect();
            prop_assert_eq!(LicenseKey::parse(&changed).is_ok(), valid_here);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".*") {
            let _ = LicenseKey::parse(&text);
        }
    }
}
