//! The service's cryptography: license challenges, session keys, download frames, checksums and
//! response signatures.
//!
//! - [`TeamKeys`] (feature `private-keys`): a team's private keys on the constant-time aws-lc-rs
//!   backend: challenge signing, session-key decryption, response signatures.
//! - [`TeamPublicKeys`]: what clients hold, in pure Rust: challenge and response-signature checks,
//!   session-key encryption.
//! - [`frames`]: the framed AES-256-GCM stream, encoder and decoder.
//! - [`SessionKey`], [`ApiKeySecret`], [`md5_hex`] and friends.

mod api_key;
mod digest;
pub mod frames;
pub mod inbound;
pub mod license_file;
mod public;
mod sealed;
mod session;
mod signature;
#[cfg(feature = "private-keys")]
mod team;
pub mod updater;
pub mod webhook;

pub use api_key::{API_KEY_PREFIX, ApiKeyFormatError, ApiKeyHash, ApiKeySecret};
pub use digest::{Md5Hasher, hmac_sha256, md5_hex, sha256_hex};
pub use public::{RsaPublicKey, SigningPublicKey, TeamPublicKeys, key_id};
pub use sealed::{
    MasterKey, PlainTeamKeys, SEALED_SECRET_PREFIX, SealedTeamKeys, StoredTeamKeys,
    is_sealed_secret, sealed_secret_key_id,
};
pub use session::{SessionKey, SessionSecret};
pub use signature::{SIGNATURE_HEADER, SIGNATURE_KEY_ID_HEADER, response_signature_message};
#[cfg(feature = "private-keys")]
pub use team::TeamKeys;
pub use webhook::{WebhookError, WebhookSecret};

/// A cryptographic operation failed. Deliberately without detail: callers map it to one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// A key could not be parsed or is not of the expected kind or size.
    #[error("invalid key: {0}")]
    InvalidKey(&'static str),
    /// A signature did not verify.
    #[error("signature does not verify")]
    BadSignature,
    /// A session key could not be decoded or decrypted.
    #[error("invalid session key")]
    InvalidSessionKey,
    /// Encrypted data failed authentication or is malformed.
    #[error("encrypted data is corrupt: {0}")]
    Corrupt(&'static str),
    /// The random number generator or the crypto backend failed.
    #[error("cryptographic backend failure")]
    Backend,
}

/// Lower-case hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}
