use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{
    KeyPair, KeySize, OAEP_SHA1_MGF1SHA1, OaepPrivateDecryptingKey, PrivateDecryptingKey,
};
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _, RSA_PKCS1_SHA256};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use pem_rfc7468::LineEnding;
use zeroize::Zeroizing;

use super::{
    CryptoError, PlainTeamKeys, RsaPublicKey, SessionKey, SessionSecret, SigningPublicKey,
    TeamPublicKeys, response_signature_message,
};

/// Longest RSA modulus we handle, in bytes (RSA-4096); team keys are RSA-2048.
const MAX_MODULUS: usize = 512;

/// A team's private keys. Every private-key operation runs on aws-lc-rs, which blinds RSA and is
/// constant-time; the `rsa` crate (timing advisory RUSTSEC-2023-0071) is never used here. Ed25519
/// signing runs on aws-lc-rs too (its assembly base-point multiplication is about twice as fast as
/// ed25519-dalek's portable one; the signatures are the same, RFC 8032 being deterministic).
pub struct TeamKeys {
    rsa: KeyPair,
    oaep: OaepPrivateDecryptingKey,
    ed25519: Ed25519KeyPair,
    ed25519_seed: Zeroizing<[u8; 32]>,
    public: TeamPublicKeys,
    public_pem: String,
    /// The RSA modulus, big-endian: session keys at or above it are swapped for a stand-in, so
    /// that they too cost an RSA operation.
    modulus: Vec<u8>,
}

impl TeamKeys {
    /// Fresh RSA-2048 (e = 65537) and Ed25519 key pairs.
    pub fn generate() -> Result<Self, CryptoError> {
        let rsa = KeyPair::generate(KeySize::Rsa2048).map_err(|_| CryptoError::Backend)?;
        let pkcs8 = Self::pkcs8_der(&rsa)?;
        Self::assemble(rsa, &pkcs8, random_seed()?)
    }

    /// Loads keys from their stored form, in the clear (a sealed form is opened first with
    /// [`MasterKey::open`](super::MasterKey::open)).
    pub fn from_plain(stored: &PlainTeamKeys) -> Result<Self, CryptoError> {
        let (label, der) = pem_rfc7468::decode_vec(stored.rsa_private_pem.as_bytes())
            .map_err(|_| CryptoError::InvalidKey("RSA private key is not PEM"))?;
        let der = Zeroizing::new(der);
        if label != "PRIVATE KEY" {
            return Err(CryptoError::InvalidKey("RSA private key must be PKCS#8"));
        }
        let rsa = KeyPair::from_pkcs8(&der)
            .map_err(|_| CryptoError::InvalidKey("not an RSA PKCS#8 private key"))?;
        let seed = Zeroizing::new(
            BASE64
                .decode(stored.ed25519_seed.as_bytes())
                .map_err(|_| CryptoError::InvalidKey("Ed25519 seed is not base64"))?,
        );
        let seed: [u8; 32] = seed
            .as_slice()
            .try_into()
            .map_err(|_| CryptoError::InvalidKey("Ed25519 seed must be 32 bytes"))?;
        Self::assemble(rsa, &der, Zeroizing::new(seed))
    }

    /// The same RSA key with a fresh Ed25519 signing key (a rotation of the signing key).
    pub fn with_new_signing_key(&self) -> Result<Self, CryptoError> {
        let pkcs8 = Self::pkcs8_der(&self.rsa)?;
        let rsa = KeyPair::from_pkcs8(&pkcs8).map_err(|_| CryptoError::Backend)?;
        Self::assemble(rsa, &pkcs8, random_seed()?)
    }

    /// Loads an RSA private key from PKCS#8 PEM with a fresh Ed25519 key (for importing a key
    /// made elsewhere, and for tests against fixtures).
    pub fn from_rsa_pem(pem: &str) -> Result<Self, CryptoError> {
        Self::from_plain(&PlainTeamKeys {
            rsa_private_pem: pem.to_owned(),
            ed25519_seed: BASE64.encode(*random_seed()?),
        })
    }

    fn pkcs8_der(rsa: &KeyPair) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let der: Pkcs8V1Der<'static> = rsa.as_der().map_err(|_| CryptoError::Backend)?;
        Ok(Zeroizing::new(der.as_ref().to_vec()))
    }

    fn assemble(
        rsa: KeyPair,
        pkcs8: &[u8],
        ed25519_seed: Zeroizing<[u8; 32]>,
    ) -> Result<Self, CryptoError> {
        let bits = rsa.public_modulus_len() * 8;
        if !(2048..=MAX_MODULUS * 8).contains(&bits) {
            return Err(CryptoError::InvalidKey(
                "RSA key must have 2048 to 4096 bits",
            ));
        }
        let decrypting = PrivateDecryptingKey::from_pkcs8(pkcs8)
            .map_err(|_| CryptoError::InvalidKey("not an RSA PKCS#8 private key"))?;
        let oaep = OaepPrivateDecryptingKey::new(decrypting).map_err(|_| CryptoError::Backend)?;
        let spki: PublicKeyX509Der<'static> = rsa
            .public_key()
            .as_der()
            .map_err(|_| CryptoError::Backend)?;
        let public_pem = pem_rfc7468::encode_string("PUBLIC KEY", LineEnding::LF, spki.as_ref())
            .map_err(|_| CryptoError::Backend)?;
        let ed25519 = Ed25519KeyPair::from_seed_unchecked(ed25519_seed.as_slice())
            .map_err(|_| CryptoError::InvalidKey("not an Ed25519 seed"))?;
        let verifying: [u8; 32] = ed25519
            .public_key()
            .as_ref()
            .try_into()
            .map_err(|_| CryptoError::Backend)?;
        let verifying = ed25519_dalek::VerifyingKey::from_bytes(&verifying)
            .map_err(|_| CryptoError::Backend)?;
        let public = TeamPublicKeys {
            rsa: RsaPublicKey::from_der(spki.as_ref())?,
            signing: SigningPublicKey::from_key(verifying),
            also_trusted: Vec::new(),
        };
        let modulus = public.rsa.modulus_be();
        Ok(Self {
            rsa,
            oaep,
            ed25519,
            ed25519_seed,
            public,
            public_pem,
            modulus,
        })
    }

    /// The form to store (in the clear; seal it with [`MasterKey::seal`](super::MasterKey::seal)).
    pub fn to_plain(&self) -> Result<PlainTeamKeys, CryptoError> {
        let der = Self::pkcs8_der(&self.rsa)?;
        let pem = pem_rfc7468::encode_string("PRIVATE KEY", LineEnding::LF, &der)
            .map_err(|_| CryptoError::Backend)?;
        Ok(PlainTeamKeys {
            rsa_private_pem: pem,
            ed25519_seed: BASE64.encode(*self.ed25519_seed),
        })
    }

    /// The public halves.
    pub fn public_keys(&self) -> &TeamPublicKeys {
        &self.public
    }

    /// The RSA public key as SPKI PEM.
    pub fn public_key_pem(&self) -> &str {
        &self.public_pem
    }

    /// Base64 of the whole PEM text, the form clients commonly embed.
    pub fn public_key_base64(&self) -> String {
        BASE64.encode(self.public_pem.as_bytes())
    }

    /// Base64 of the 32-byte Ed25519 public key.
    pub fn signing_key_base64(&self) -> String {
        self.public.signing.to_base64()
    }

    /// The id of the Ed25519 signing key (see [`SigningPublicKey::kid`]).
    pub fn signing_kid(&self) -> &str {
        self.public.signing.kid()
    }

    /// (ext) A minisign signature (Tauri's updater) of a file whose BLAKE2b-512 is `digest`,
    /// by the active signing key, whose minisign key id is the first 8 bytes of its `kid`.
    pub fn sign_minisign(
        &self,
        digest: &[u8; 64],
        trusted_comment: &str,
    ) -> super::updater::MinisignSignature {
        let key_id = self.public.signing.minisign().key_id();
        super::updater::MinisignSignature::sign(key_id, digest, trusted_comment, |message| {
            let mut signature = [0u8; 64];
            signature.copy_from_slice(self.ed25519.sign(message).as_ref());
            signature
        })
    }

    /// (ext) Sparkle's `edSignature` of a file by the active signing key: `open` opens the file,
    /// which is read twice, a chunk at a time.
    pub fn sign_sparkle<R: std::io::Read>(
        &self,
        open: impl Fn() -> std::io::Result<R>,
    ) -> std::io::Result<String> {
        super::updater::sparkle_sign(&self.ed25519_seed, open)
    }

    /// The Ed25519 signature over `message` by the active signing key, raw (a feed token's).
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        let mut signature = [0u8; 64];
        signature.copy_from_slice(self.ed25519.sign(message).as_ref());
        signature
    }

    /// Base64 of an Ed25519 signature over `message` (a license file's `sig`).
    pub fn sign(&self, message: &[u8]) -> String {
        BASE64.encode(self.ed25519.sign(message).as_ref())
    }

    /// The `challengeResponse`: RSASSA-PKCS1-v1_5 with SHA-256 over the UTF-8 bytes of the
    /// challenge exactly as received, lower-case hex.
    pub fn sign_challenge(&self, challenge: &str) -> Result<String, CryptoError> {
        let mut signature = [0u8; MAX_MODULUS];
        let signature = &mut signature[..self.rsa.public_modulus_len()];
        self.rsa
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                challenge.as_bytes(),
                signature,
            )
            .map_err(|_| CryptoError::Backend)?;
        Ok(hex::encode(signature))
    }

    /// Decrypts a `sessionKey` (hex of an RSA-OAEP SHA-1 ciphertext) and derives the AES key.
    ///
    /// Every failure is the same [`CryptoError::InvalidSessionKey`], and takes the same time:
    /// text that is not hex of the right length, or a number at or above the modulus, still
    /// costs one RSA decryption (of a fixed
    /// block, which OAEP refuses), so an observer cannot tell a malformed key from a
    /// well-formed one that fails to decrypt. The decryption itself is aws-lc's, blinded and
    /// constant-time in the padding check.
    pub fn decrypt_session_key(&self, hex_text: &str) -> Result<SessionKey, CryptoError> {
        let size = self.rsa.public_modulus_len();
        let mut ciphertext = [0u8; MAX_MODULUS];
        let ciphertext = &mut ciphertext[..size];
        // aws-lc refuses a ciphertext at or above the modulus before any RSA operation; such
        // input is treated like malformed text, so that it costs the same.
        let well_formed =
            hex::decode_to_slice(hex_text, ciphertext).is_ok() && ciphertext[..] < self.modulus[..];
        if !well_formed {
            // A stand-in below the modulus (its top byte is zero) that OAEP will refuse.
            ciphertext.fill(0x5a);
            ciphertext[0] = 0;
        }
        let mut plaintext = Zeroizing::new([0u8; MAX_MODULUS]);
        let decrypted = self.oaep.decrypt(
            &OAEP_SHA1_MGF1SHA1,
            ciphertext,
            &mut plaintext[..size],
            None,
        );
        match decrypted {
            Ok(secret) if well_formed && secret.len() >= SessionSecret::MIN_LEN => {
                Ok(SessionSecret::from_bytes(secret.to_vec()).derive_key())
            }
            _ => Err(CryptoError::InvalidSessionKey),
        }
    }

    /// The `X-Signature` value for one answer: base64 Ed25519 over
    /// [`response_signature_message`].
    pub fn sign_response(&self, request_body: &[u8], response_body: &[u8]) -> String {
        self.sign(&response_signature_message(request_body, response_body))
    }
}

/// A fresh Ed25519 seed from the OS generator.
fn random_seed() -> Result<Zeroizing<[u8; 32]>, CryptoError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    aws_lc_rs::rand::fill(seed.as_mut_slice()).map_err(|_| CryptoError::Backend)?;
    Ok(seed)
}

impl std::fmt::Debug for TeamKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamKeys")
            .field("public_pem", &self.public_pem)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;

    use super::*;

    fn keys() -> &'static TeamKeys {
        static KEYS: OnceLock<TeamKeys> = OnceLock::new();
        KEYS.get_or_init(|| TeamKeys::generate().unwrap())
    }

    /// Malformed text, well-formed text that fails OAEP and a ciphertext of a too-short secret
    /// take the same time: each costs one RSA decryption. The bound is loose (medians within
    /// 3x), since what it guards against is a 1,000x gap: failing before the RSA operation.
    #[test]
    fn session_key_failures_take_the_same_time() {
        use std::time::{Duration, Instant};
        let keys = keys();
        let public = crate::crypto::RsaPublicKey::from_pem(keys.public_key_pem()).unwrap();
        let short = public
            .encrypt_session_secret(&SessionSecret::from_bytes(vec![1u8; 4]))
            .unwrap();
        let cases = [
            ("not hex", "zz".repeat(256)),
            ("too short", "ab".repeat(10)),
            ("empty", String::new()),
            ("random ciphertext", "ab".repeat(256)),
            ("below the modulus", "00".to_owned() + &"5b".repeat(255)),
            ("above the modulus", "ff".repeat(256)),
            ("secret too short", short),
        ];
        // Round-robin, so that whatever else the machine is doing slows every case alike.
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
        for _ in 0..41 {
            for (i, (_, text)) in cases.iter().enumerate() {
                let started = Instant::now();
                let outcome = keys.decrypt_session_key(text);
                times[i].push(started.elapsed());
                assert!(matches!(outcome, Err(CryptoError::InvalidSessionKey)));
            }
        }
        let medians: Vec<(&str, Duration)> = cases
            .iter()
            .zip(&mut times)
            .map(|((name, _), t)| {
                t.sort();
                (*name, t[t.len() / 2])
            })
            .collect();
        let fastest = medians.iter().map(|m| m.1).min().unwrap();
        let slowest = medians.iter().map(|m| m.1).max().unwrap();
        assert!(slowest < fastest * 3, "{medians:?}");
    }

    #[test]
    fn stored_keys_roundtrip() {
        let stored = keys().to_plain().unwrap();
        let again = TeamKeys::from_plain(&stored).unwrap();
        assert_eq!(again.public_key_pem(), keys().public_key_pem());
        assert_eq!(again.signing_key_base64(), keys().signing_key_base64());
        assert_eq!(format!("{stored:?}"), "PlainTeamKeys(<redacted>)");
    }

    #[test]
    fn public_key_forms_parse_to_the_same_key() {
        let pem = keys().public_key_pem();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        let from_pem = RsaPublicKey::parse(pem).unwrap();
        let from_b64 = RsaPublicKey::parse(&keys().public_key_base64()).unwrap();
        assert_eq!(from_pem, from_b64);
        assert_eq!(from_pem.size(), 256);
        assert_eq!(from_pem.to_pem().unwrap(), pem);
        // Pasted indented, with Windows line ends.
        let pasted: String = pem.lines().map(|l| format!("    {l}\r\n")).collect();
        assert_eq!(RsaPublicKey::parse(&pasted).unwrap(), from_pem);
    }

    #[test]
    fn challenge_response_is_512_lower_case_hex() {
        let sig = keys().sign_challenge("hello-challenge").unwrap();
        assert_eq!(sig.len(), 512);
        assert!(sig.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    }

    #[test]
    fn session_key_roundtrip_through_oaep() {
        let secret = SessionSecret::generate();
        let hex_text = keys()
            .public_keys()
            .rsa
            .encrypt_session_secret(&secret)
            .unwrap();
        assert_eq!(hex_text.len(), 512);
        let key = keys().decrypt_session_key(&hex_text).unwrap();
        assert_eq!(key.as_bytes(), secret.derive_key().as_bytes());
        // Upper-case hex is accepted too.
        let key = keys()
            .decrypt_session_key(&hex_text.to_uppercase())
            .unwrap();
        assert_eq!(key.as_bytes(), secret.derive_key().as_bytes());
    }

    #[test]
    fn session_key_failures_are_all_the_same_error() {
        let secret = SessionSecret::generate();
        let good = keys()
            .public_keys()
            .rsa
            .encrypt_session_secret(&secret)
            .unwrap();
        let mut flipped = good.clone().into_bytes();
        flipped[100] = if flipped[100] == b'0' { b'1' } else { b'0' };
        let short_secret = SessionSecret::from_bytes(vec![1; 8]);
        let short = keys()
            .public_keys()
            .rsa
            .encrypt_session_secret(&short_secret)
            .unwrap();
        for bad in [
            String::from_utf8(flipped).unwrap(),
            good[..510].to_owned(),
            format!("{good}00"),
            "zz".repeat(256),
            "abc".into(),
            short,
        ] {
            assert_eq!(
                keys().decrypt_session_key(&bad).unwrap_err(),
                CryptoError::InvalidSessionKey
            );
        }
    }

    #[test]
    fn response_signature_roundtrip_and_rejections() {
        let sig = keys().sign_response(b"request", b"response");
        let public = &keys().public_keys().signing;
        assert!(
            public
                .verify_response(b"request", b"response", &sig)
                .is_ok()
        );
        assert!(
            public
                .verify_response(b"request", b"responsE", &sig)
                .is_err()
        );
        assert!(
            public
                .verify_response(b"requesT", b"response", &sig)
                .is_err()
        );
        assert!(
            public
                .verify_response(b"request", b"response", "AAAA")
                .is_err()
        );
        let other = TeamKeys::generate().unwrap();
        assert!(
            other
                .public_keys()
                .signing
                .verify_response(b"request", b"response", &sig)
                .is_err()
        );
    }

    /// The aws-lc-rs signer gives RFC 8032's signatures: byte for byte those of ed25519-dalek
    /// (the reference the clients verify with) for the same stored seed, and RFC 8032's own
    /// test vector 1 for its public key.
    #[test]
    fn response_signatures_are_rfc8032_ed25519() {
        use ed25519_dalek::Signer as _;

        let stored = keys().to_plain().unwrap();
        let seed: [u8; 32] = BASE64
            .decode(&stored.ed25519_seed)
            .unwrap()
            .try_into()
            .unwrap();
        let reference = ed25519_dalek::SigningKey::from_bytes(&seed);
        let message = response_signature_message(b"request", b"response");
        assert_eq!(
            keys().sign_response(b"request", b"response"),
            BASE64.encode(reference.sign(&message).to_bytes())
        );
        assert_eq!(
            keys().signing_key_base64(),
            BASE64.encode(reference.verifying_key().to_bytes())
        );

        let rfc_seed =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap();
        let loaded = TeamKeys::from_plain(&PlainTeamKeys {
            ed25519_seed: BASE64.encode(&rfc_seed),
            ..stored
        })
        .unwrap();
        assert_eq!(
            hex::encode(BASE64.decode(loaded.signing_key_base64()).unwrap()),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_challenges_verify_and_changed_ones_do_not(
            challenge in "[!-~]{10,200}",
            flip in 0usize..200,
        ) {
            let sig = keys().sign_challenge(&challenge).unwrap();
            let public = &keys().public_keys().rsa;
            prop_assert!(public.verify_challenge(&challenge, &sig).is_ok());
            let mut changed = challenge.clone().into_bytes();
            let i = flip % changed.len();
            changed[i] = if changed[i] == b'a' { b'b' } else { b'a' };
            let changed = String::from_utf8(changed).unwrap();
            prop_assert!(public.verify_challenge(&changed, &sig).is_err());
        }
    }
}
