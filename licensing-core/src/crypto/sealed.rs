//! Team private keys at rest: in the clear ([`PlainTeamKeys`]), or sealed under an operator's
//! master key with AES-256-GCM ([`SealedTeamKeys`]), bound to their team. Other secrets a
//! server must read back (webhook signing secrets, two-step sign-in secrets) are sealed the same
//! way into one text ([`MasterKey::seal_secret`]), bound to what they are the secret of.
//!
//! A master key is 32 random bytes; its id (16 hex characters of a SHA-256 of it) is stored with
//! what it sealed, so that a server started with the wrong key says so instead of failing to
//! decrypt.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::CryptoError;
use crate::TeamId;

/// A team's private key material in the clear: the RSA key as PKCS#8 PEM and the Ed25519 seed in
/// base64. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlainTeamKeys {
    /// RSA-2048 private key, PKCS#8 PEM.
    pub rsa_private_pem: String,
    /// Ed25519 private key seed (32 bytes), base64.
    pub ed25519_seed: String,
}

impl std::fmt::Debug for PlainTeamKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlainTeamKeys(<redacted>)")
    }
}

/// A team's private key material sealed under a master key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SealedTeamKeys {
    /// The id of the master key that sealed it.
    pub key_id: String,
    /// The AES-GCM nonce, base64 (12 bytes).
    pub nonce: String,
    /// The ciphertext with its tag, base64.
    pub sealed: String,
}

/// A team's private key material as stored: in the clear, or sealed under a master key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StoredTeamKeys {
    /// In the clear (a server without a master key).
    Plain(PlainTeamKeys),
    /// Sealed under a master key.
    Sealed(SealedTeamKeys),
}

impl StoredTeamKeys {
    /// The id of the master key that sealed them, if sealed.
    pub fn sealed_by(&self) -> Option<&str> {
        match self {
            StoredTeamKeys::Plain(_) => None,
            StoredTeamKeys::Sealed(s) => Some(&s.key_id),
        }
    }
}

/// An operator's master key: 32 random bytes that seal team private keys at rest.
pub struct MasterKey {
    key: Zeroizing<[u8; 32]>,
    id: String,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey(id {})", self.id)
    }
}

/// What the sealed bytes are bound to besides their team.
const AAD_PREFIX: &[u8] = b"licensing team keys v1\n";

/// How a sealed secret's text begins: `sealed:v1:<key id>:<nonce>:<ciphertext>`, base64.
pub const SEALED_SECRET_PREFIX: &str = "sealed:v1:";

/// What sealed secrets are bound to besides their purpose.
const SECRET_AAD_PREFIX: &[u8] = b"licensing secret v1\n";

/// Whether a stored secret is sealed (else it is the secret itself).
pub fn is_sealed_secret(stored: &str) -> bool {
    stored.starts_with(SEALED_SECRET_PREFIX)
}

/// The id of the master key that sealed a stored secret, if it is sealed.
pub fn sealed_secret_key_id(stored: &str) -> Option<&str> {
    stored.strip_prefix(SEALED_SECRET_PREFIX)?.split(':').next()
}

impl MasterKey {
    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> Self {
        let mut key = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng.fill_bytes(key.as_mut());
        Self::from_bytes(key)
    }

    fn from_bytes(key: Zeroizing<[u8; 32]>) -> Self {
        let digest = Sha256::new()
            .chain_update(b"licensing master key id\n")
            .chain_update(key.as_ref())
            .finalize();
        Self {
            id: hex::encode(&digest[..8]),
            key,
        }
    }

    /// Reads a key file: base64 of 32 bytes (what [`to_file`](Self::to_file) writes), 64 hex
    /// characters, or the 32 raw bytes.
    pub fn from_file(contents: &[u8]) -> Result<Self, CryptoError> {
        let mut key = Zeroizing::new([0u8; 32]);
        let text = std::str::from_utf8(contents).ok().map(str::trim);
        let decoded: Option<Zeroizing<Vec<u8>>> = match text {
            Some(t) if t.len() == 64 => hex::decode(t).ok().map(Zeroizing::new),
            Some(t) if !t.is_empty() => BASE64.decode(t).ok().map(Zeroizing::new),
            _ => None,
        };
        match decoded {
            Some(bytes) if bytes.len() == 32 => key.copy_from_slice(&bytes),
            _ if contents.len() == 32 => key.copy_from_slice(contents),
            _ => {
                return Err(CryptoError::InvalidKey(
                    "a master key file holds 32 random bytes, in base64 (`licensing-server master-key generate` writes one)",
                ));
            }
        }
        Ok(Self::from_bytes(key))
    }

    /// The file form: base64 and a newline.
    pub fn to_file(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{}\n", BASE64.encode(self.key.as_ref())))
    }

    /// The key's id, stored with what it seals.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(self.key.as_ref().into())
    }

    fn aad(team: TeamId) -> Vec<u8> {
        let mut aad = AAD_PREFIX.to_vec();
        aad.extend_from_slice(team.as_bytes());
        aad
    }

    /// Seals `team`'s keys.
    pub fn seal(&self, team: TeamId, keys: &PlainTeamKeys) -> Result<SealedTeamKeys, CryptoError> {
        let plain = Zeroizing::new(serde_json::to_vec(keys).map_err(|_| CryptoError::Backend)?);
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let aad = Self::aad(team);
        let sealed = self
            .cipher()
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &plain,
                    aad: &aad,
                },
            )
            .map_err(|_| CryptoError::Backend)?;
        Ok(SealedTeamKeys {
            key_id: self.id.clone(),
            nonce: BASE64.encode(nonce),
            sealed: BASE64.encode(sealed),
        })
    }

    /// Seals a secret the server reads back, bound to `purpose` (what it is the secret of, such
    /// as `webhook <id>`): the text of [`SEALED_SECRET_PREFIX`].
    pub fn seal_secret(&self, purpose: &str, secret: &str) -> Result<String, CryptoError> {
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let aad = [SECRET_AAD_PREFIX, purpose.as_bytes()].concat();
        let sealed = self
            .cipher()
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: &aad,
                },
            )
            .map_err(|_| CryptoError::Backend)?;
        Ok(format!(
            "{SEALED_SECRET_PREFIX}{}:{}:{}",
            self.id,
            BASE64.encode(nonce),
            BASE64.encode(sealed)
        ))
    }

    /// Opens a secret [`seal_secret`](Self::seal_secret) sealed for `purpose`; fails for
    /// another key, another purpose, or altered text.
    pub fn open_secret(
        &self,
        purpose: &str,
        stored: &str,
    ) -> Result<Zeroizing<String>, CryptoError> {
        let corrupt = CryptoError::Corrupt("sealed secret");
        let rest = stored.strip_prefix(SEALED_SECRET_PREFIX).ok_or(corrupt)?;
        let mut parts = rest.split(':');
        let (Some(key_id), Some(nonce), Some(ciphertext), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupt);
        };
        if key_id != self.id {
            return Err(CryptoError::InvalidKey(
                "the secret was sealed with another master key",
            ));
        }
        let nonce: [u8; 12] = BASE64
            .decode(nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or(corrupt)?;
        let ciphertext = BASE64.decode(ciphertext).map_err(|_| corrupt)?;
        let aad = [SECRET_AAD_PREFIX, purpose.as_bytes()].concat();
        let plain = self
            .cipher()
            .decrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| corrupt)?;
        String::from_utf8(plain)
            .map(Zeroizing::new)
            .map_err(|_| corrupt)
    }

    /// Opens `team`'s sealed keys; fails for another key, another team, or altered bytes.
    pub fn open(
        &self,
        team: TeamId,
        sealed: &SealedTeamKeys,
    ) -> Result<PlainTeamKeys, CryptoError> {
        if sealed.key_id != self.id {
            return Err(CryptoError::InvalidKey(
                "the team's keys were sealed with another master key",
            ));
        }
        let corrupt = CryptoError::Corrupt("sealed team keys");
        let nonce: [u8; 12] = BASE64
            .decode(&sealed.nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or(corrupt)?;
        let ciphertext = BASE64.decode(&sealed.sealed).map_err(|_| corrupt)?;
        let aad = Self::aad(team);
        let plain = Zeroizing::new(
            self.cipher()
                .decrypt(
                    Nonce::from_slice(&nonce),
                    Payload {
                        msg: &ciphertext,
                        aad: &aad,
                    },
                )
                .map_err(|_| corrupt)?,
        );
        serde_json::from_slice(&plain).map_err(|_| corrupt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> PlainTeamKeys {
        PlainTeamKeys {
            rsa_private_pem: "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n"
                .into(),
            ed25519_seed: "c2VlZA==".into(),
        }
    }

    #[test]
    fn sealed_secrets_open_with_their_key_and_purpose_only() {
        let master = MasterKey::generate();
        let sealed = master
            .seal_secret("webhook 1", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        assert!(is_sealed_secret(&sealed));
        assert!(!sealed.contains("MfKQ9r8"));
        assert_eq!(sealed_secret_key_id(&sealed), Some(master.id()));
        assert_eq!(
            master.open_secret("webhook 1", &sealed).unwrap().as_str(),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        );
        assert_ne!(
            master.seal_secret("webhook 1", "x").unwrap(),
            master.seal_secret("webhook 1", "x").unwrap(),
            "a nonce of its own"
        );
        // Moved to another endpoint, opened with another key, or altered: refused.
        assert!(master.open_secret("webhook 2", &sealed).is_err());
        assert!(
            MasterKey::generate()
                .open_secret("webhook 1", &sealed)
                .is_err()
        );
        let (head, ciphertext) = sealed.rsplit_once(':').unwrap();
        let mut bytes = BASE64.decode(ciphertext).unwrap();
        bytes[0] ^= 1;
        let altered = format!("{head}:{}", BASE64.encode(bytes));
        assert!(master.open_secret("webhook 1", &altered).is_err());
        assert!(!is_sealed_secret("whsec_plain"));
        assert_eq!(sealed_secret_key_id("whsec_plain"), None);
    }

    #[test]
    fn sealed_keys_open_with_their_key_and_team_only() {
        let master = MasterKey::generate();
        let team = TeamId::new();
        let sealed = master.seal(team, &keys()).unwrap();
        assert!(!sealed.sealed.contains("PRIVATE"));
        assert_eq!(master.open(team, &sealed).unwrap(), keys());
        // Another team's id (a sealed blob moved between teams) does not open.
        assert!(master.open(TeamId::new(), &sealed).is_err());
        // Another key says so.
        let other = MasterKey::generate();
        assert_eq!(
            other.open(team, &sealed).unwrap_err(),
            CryptoError::InvalidKey("the team's keys were sealed with another master key")
        );
        // A flipped byte does not open.
        let mut bytes = BASE64.decode(&sealed.sealed).unwrap();
        bytes[0] ^= 1;
        let altered = SealedTeamKeys {
            sealed: BASE64.encode(bytes),
            ..sealed
        };
        assert!(master.open(team, &altered).is_err());
    }

    #[test]
    fn key_files_round_trip_in_every_accepted_form() {
        let master = MasterKey::generate();
        let file = master.to_file();
        assert_eq!(
            MasterKey::from_file(file.as_bytes()).unwrap().id(),
            master.id()
        );
        let hex_form = hex::encode(master.key.as_ref());
        assert_eq!(
            MasterKey::from_file(hex_form.as_bytes()).unwrap().id(),
            master.id()
        );
        assert_eq!(
            MasterKey::from_file(master.key.as_ref()).unwrap().id(),
            master.id()
        );
        for bad in [&b""[..], b"short", b"\n\n"] {
            assert!(MasterKey::from_file(bad).is_err());
        }
        assert_eq!(master.id().len(), 16);
        assert_eq!(
            format!("{master:?}"),
            format!("MasterKey(id {})", master.id())
        );
    }

    #[test]
    fn stored_keys_read_both_forms() {
        let plain = StoredTeamKeys::Plain(keys());
        let json = serde_json::to_string(&plain).unwrap();
        assert!(json.contains("rsaPrivatePem"));
        assert_eq!(
            serde_json::from_str::<StoredTeamKeys>(&json).unwrap(),
            plain
        );
        let sealed =
            StoredTeamKeys::Sealed(MasterKey::generate().seal(TeamId::new(), &keys()).unwrap());
        let json = serde_json::to_string(&sealed).unwrap();
        assert!(!json.contains("PRIVATE"));
        assert_eq!(
            serde_json::from_str::<StoredTeamKeys>(&json).unwrap(),
            sealed
        );
        assert!(sealed.sealed_by().is_some() && plain.sealed_by().is_none());
    }
}
