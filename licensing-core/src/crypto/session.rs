use rand::RngCore;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

/// The random secret a client draws for one classloader download (our SDK: 32 bytes). It travels
/// RSA-OAEP-encrypted; both sides derive the [`SessionKey`] from it.
pub struct SessionSecret(Zeroizing<Vec<u8>>);

/// The AES-256 key of one download: `SHA-256(ASCII of the lower-case hex of the secret)`.
#[derive(Clone)]
pub struct SessionKey([u8; 32]);

impl SessionSecret {
    /// Secret length our SDK uses.
    pub const LEN: usize = 32;
    /// The shortest secret the server accepts; shorter ones would make the key guessable.
    pub const MIN_LEN: usize = 16;

    /// 32 fresh bytes from the operating system's CSPRNG.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new(vec![0u8; Self::LEN]);
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// Wraps decrypted bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// The raw secret.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Derives the AES-256 key.
    pub fn derive_key(&self) -> SessionKey {
        let mut hex_text = Zeroizing::new(hex::encode(self.0.as_slice()));
        let key = SessionKey(Sha256::digest(hex_text.as_bytes()).into());
        hex_text.zeroize();
        key
    }
}

impl SessionKey {
    /// Wraps 32 raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw key.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Drop for SessionKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(<redacted>)")
    }
}

impl std::fmt::Debug for SessionSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSecret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_sha256_of_the_lower_case_hex_text() {
        let secret = SessionSecret::from_bytes(vec![0xAB, 0x01]);
        let expected: [u8; 32] = Sha256::digest(b"ab01").into();
        assert_eq!(secret.derive_key().as_bytes(), &expected);
    }

    #[test]
    fn generated_secrets_are_32_random_bytes() {
        let a = SessionSecret::generate();
        let b = SessionSecret::generate();
        assert_eq!(a.as_bytes().len(), 32);
        assert_ne!(a.as_bytes(), b.as_bytes());
    }
}
