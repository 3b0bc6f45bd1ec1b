use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature as EdSignature, VerifyingKey};
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs1v15;
use rsa::pkcs8::{DecodePublicKey, EncodePublicKey, LineEnding};
use rsa::signature::Verifier;
use rsa::traits::PublicKeyParts;
use sha2::Sha256;

use super::{CryptoError, SessionSecret, response_signature_message, to_hex};

/// A team's RSA public key, as clients hold it (pure Rust).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RsaPublicKey(rsa::RsaPublicKey);

impl RsaPublicKey {
    /// Accepts the forms vendors copy: SPKI PEM (`BEGIN PUBLIC KEY`), PKCS#1 PEM
    /// (`BEGIN RSA PUBLIC KEY`), base64 of either PEM text, or base64 of the SPKI DER. PEM text
    /// may be indented and have Windows line ends (as pasted from a terminal or a document).
    pub fn parse(text: &str) -> Result<Self, CryptoError> {
        let text = text.trim();
        if text.starts_with("-----BEGIN") {
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            return Self::from_pem(&lines.join("\n"));
        }
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let decoded = BASE64
            .decode(compact.as_bytes())
            .map_err(|_| CryptoError::InvalidKey("neither PEM nor base64"))?;
        match std::str::from_utf8(&decoded) {
            Ok(pem) if pem.trim_start().starts_with("-----BEGIN") => Self::from_pem(pem.trim()),
            _ => Self::from_der(&decoded),
        }
    }

    /// Parses a PEM public key (SPKI or PKCS#1).
    pub fn from_pem(pem: &str) -> Result<Self, CryptoError> {
        let key = rsa::RsaPublicKey::from_public_key_pem(pem)
            .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(pem))
            .map_err(|_| CryptoError::InvalidKey("not an RSA public key PEM"))?;
        Self::checked(key)
    }

    /// Parses an SPKI DER public key.
    pub fn from_der(der: &[u8]) -> Result<Self, CryptoError> {
        let key = rsa::RsaPublicKey::from_public_key_der(der)
            .map_err(|_| CryptoError::InvalidKey("not an RSA public key"))?;
        Self::checked(key)
    }

    fn checked(key: rsa::RsaPublicKey) -> Result<Self, CryptoError> {
        let bits = key.size() * 8;
        if !(2048..=4096).contains(&bits) {
            return Err(CryptoError::InvalidKey(
                "RSA key must have 2048 to 4096 bits",
            ));
        }
        Ok(Self(key))
    }

    /// The SPKI PEM text.
    pub fn to_pem(&self) -> Result<String, CryptoError> {
        self.0
            .to_public_key_pem(LineEnding::LF)
            .map_err(|_| CryptoError::Backend)
    }
    /// The modulus, big-endian, as long as the key (leading zero bytes kept).
    pub(crate) fn modulus_be(&self) -> Vec<u8> {
        let size = self.0.size();
        let n = self.0.n().to_bytes_be();
        let mut out = vec![0u8; size.saturating_sub(n.len())];
        out.extend_from_slice(&n);
        out
    }

    /// The modulus size in bytes (256 for RSA-2048).
    pub fn size(&self) -> usize {
        self.0.size()
    }

    /// Checks a `challengeResponse`: RSASSA-PKCS1-v1_5 with SHA-256 over the UTF-8 bytes of the
    /// challenge, as hex (either case accepted).
    pub fn verify_challenge(&self, challenge: &str, response_hex: &str) -> Result<(), CryptoError> {
        let bytes = hex::decode(response_hex).map_err(|_| CryptoError::BadSignature)?;
        let signature = pkcs1v15::Signature::try_from(bytes.as_slice())
            .map_err(|_| CryptoError::BadSignature)?;
        pkcs1v15::VerifyingKey::<Sha256>::new(self.0.clone())
            .verify(challenge.as_bytes(), &signature)
            .map_err(|_| CryptoError::BadSignature)
    }

    /// Encrypts a session secret with RSA-OAEP (SHA-1, MGF1-SHA-1) and returns lower-case hex, the
    /// `sessionKey` query parameter.
    pub fn encrypt_session_secret(&self, secret: &SessionSecret) -> Result<String, CryptoError> {
        let ciphertext = self
            .0
            .encrypt(
                &mut rand::rngs::OsRng,
                rsa::Oaep::new::<sha1::Sha1>(),
                secret.as_bytes(),
            )
            .map_err(|_| CryptoError::Backend)?;
        Ok(to_hex(&ciphertext))
    }
}

/// A team's Ed25519 signing public key (of answers and license files), with its key id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningPublicKey {
    key: VerifyingKey,
    kid: String,
}

impl SigningPublicKey {
    /// Parses base64 of the 32-byte key (the `signingKey` member of `GET {dev}/public-key`).
    pub fn from_base64(text: &str) -> Result<Self, CryptoError> {
        let bytes = BASE64
            .decode(text.trim().as_bytes())
            .map_err(|_| CryptoError::InvalidKey("signing key is not base64"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| CryptoError::InvalidKey("signing key must be 32 bytes"))?;
        VerifyingKey::from_bytes(&bytes)
            .map(Self::from_key)
            .map_err(|_| CryptoError::InvalidKey("not an Ed25519 public key"))
    }

    pub(crate) fn from_key(key: VerifyingKey) -> Self {
        Self {
            kid: key_id(key.as_bytes()),
            key,
        }
    }

    /// (ext) The key as minisign (Tauri's updater) names it: its key id is the first 8 bytes of
    /// the `kid`.
    pub fn minisign(&self) -> super::updater::MinisignPublicKey {
        let mut key_id = [0u8; 8];
        // The kid is 16 hex digits, made by `key_id`.
        if let Ok(bytes) = hex::decode(&self.kid) {
            let n = bytes.len().min(8);
            key_id[..n].copy_from_slice(&bytes[..n]);
        }
        super::updater::MinisignPublicKey::from_verifying(key_id, self.key)
    }

    /// Base64 of the 32-byte key.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.key.as_bytes())
    }

    /// The key id (`kid`): lower-case hex of the first 8 bytes of SHA-256 of the 32-byte key,
    /// as answers name it in `X-Signature-Key-Id` and license files in their envelope.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Checks an Ed25519 signature (base64, as answers and license files carry it) over
    /// `message`.
    pub fn verify(&self, message: &[u8], signature_base64: &str) -> Result<(), CryptoError> {
        let bytes = BASE64
            .decode(signature_base64.trim().as_bytes())
            .map_err(|_| CryptoError::BadSignature)?;
        let signature = EdSignature::from_slice(&bytes).map_err(|_| CryptoError::BadSignature)?;
        self.key
            .verify_strict(message, &signature)
            .map_err(|_| CryptoError::BadSignature)
    }

    /// Checks an `X-Signature` header value against the exact request and response bodies.
    pub fn verify_response(
        &self,
        request_body: &[u8],
        response_body: &[u8],
        signature_base64: &str,
    ) -> Result<(), CryptoError> {
        self.verify(
            &response_signature_message(request_body, response_body),
            signature_base64,
        )
    }
}

/// The key id of a raw 32-byte Ed25519 public key: lower-case hex of the first 8 bytes of its
/// SHA-256.
pub fn key_id(raw_public_key: &[u8; 32]) -> String {
    use sha2::Digest as _;
    to_hex(&Sha256::digest(raw_public_key)[..8])
}

/// Everything a client needs to check a team's answers and license files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamPublicKeys {
    /// Checks `challengeResponse`, encrypts session keys.
    pub rsa: RsaPublicKey,
    /// Checks `X-Signature` (the team's active signing key when the client was made).
    pub signing: SigningPublicKey,
    /// Further trusted signing keys (keys the team rotated to or from), chosen by `kid`.
    pub also_trusted: Vec<SigningPublicKey>,
}

impl TeamPublicKeys {
    /// From the public key (any form [`RsaPublicKey::parse`] takes) and the base64 signing key.
    pub fn parse(public_key: &str, signing_key: &str) -> Result<Self, CryptoError> {
        Ok(Self {
            rsa: RsaPublicKey::parse(public_key)?,
            signing: SigningPublicKey::from_base64(signing_key)?,
            also_trusted: Vec::new(),
        })
    }

    /// Trusts one more signing key (base64 of 32 bytes), such as the `signingKeys` of
    /// `GET {dev}/public-key` after a rotation.
    pub fn trust(&mut self, signing_key: &str) -> Result<(), CryptoError> {
        let key = SigningPublicKey::from_base64(signing_key)?;
        if self.signing_key(Some(key.kid())).is_none() {
            self.also_trusted.push(key);
        }
        Ok(())
    }

    /// The trusted signing key of `kid`; without a kid (an answer of a server that names none),
    /// [`signing`](Self::signing).
    pub fn signing_key(&self, kid: Option<&str>) -> Option<&SigningPublicKey> {
        match kid {
            None => Some(&self.signing),
            Some(kid) => std::iter::once(&self.signing)
                .chain(&self.also_trusted)
                .find(|k| k.kid() == kid),
        }
    }

    /// Checks an answer's `X-Signature` with the trusted key its `X-Signature-Key-Id` names
    /// (`kid`); an unknown kid is a bad signature.
    pub fn verify_response(
        &self,
        kid: Option<&str>,
        request_body: &[u8],
        response_body: &[u8],
        signature_base64: &str,
    ) -> Result<(), CryptoError> {
        self.signing_key(kid)
            .ok_or(CryptoError::BadSignature)?
            .verify_response(request_body, response_body, signature_base64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of RFC 8032's first test vector; its id computed independently (Python's
    /// hashlib: `sha256(key).hexdigest()[:16]`).
    const RFC8032_KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    fn rfc_key() -> SigningPublicKey {
        let raw = hex::decode(RFC8032_KEY).unwrap();
        SigningPublicKey::from_base64(&BASE64.encode(raw)).unwrap()
    }

    #[test]
    fn key_ids_are_the_first_eight_bytes_of_sha256_in_lower_case_hex() {
        assert_eq!(rfc_key().kid(), "21fe31dfa154a261");
        let raw: [u8; 32] = hex::decode(RFC8032_KEY).unwrap().try_into().unwrap();
        assert_eq!(key_id(&raw), "21fe31dfa154a261");
    }

    #[test]
    fn trusted_keys_are_chosen_by_kid() {
        let other = "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw="; // RFC 8032, test 2
        let mut keys = TeamPublicKeys {
            rsa: RsaPublicKey::parse(include_str!("../../tests/fixtures/rsa-public.pem")).unwrap(),
            signing: rfc_key(),
            also_trusted: Vec::new(),
        };
        let other_kid = SigningPublicKey::from_base64(other)
            .unwrap()
            .kid()
            .to_owned();
        assert!(keys.signing_key(Some(&other_kid)).is_none());
        keys.trust(other).unwrap();
        keys.trust(other).unwrap();
        assert_eq!(keys.also_trusted.len(), 1);
        assert_eq!(
            keys.signing_key(Some(&other_kid)).unwrap().to_base64(),
            other
        );
        assert_eq!(keys.signing_key(None), Some(&keys.signing));
        assert_eq!(
            keys.signing_key(Some("21fe31dfa154a261")),
            Some(&keys.signing)
        );
        assert_eq!(
            keys.verify_response(Some("0000000000000000"), b"", b"", "AAAA"),
            Err(CryptoError::BadSignature)
        );
        assert!(keys.trust("not base64!").is_err());
    }
}
