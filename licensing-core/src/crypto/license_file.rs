//! (ext) License files (protocol.md section 6): a license's data signed with the team's Ed25519
//! key, optionally encrypted with AES-256-GCM under a key derived from the license key (and, for
//! a machine file, the machine's hardware identifier), armored as text an application can ship
//! or a user can paste.
//!
//! ```text
//! -----BEGIN LICENSE FILE-----
//! base64 of {"enc":…,"sig":…,"alg":…,"kid":…}, in lines of at most 76 characters
//! -----END LICENSE FILE-----
//! ```
//!
//! A file bound to a machine says `MACHINE FILE` in both armor lines instead (Keygen's name for
//! it, so that Keygen's machine-file verifiers read it as it is), and the armor tells which
//! prefix its signature covers. Machine files issued before this armor (under `LICENSE FILE`,
//! signed as machine files) still open when the machine is named.
//!
//! - `alg` `base64+ed25519`: `enc` is the base64 of the payload's UTF-8 JSON.
//! - `alg` `aes-256-gcm+ed25519`: `enc` is `base64(ciphertext) "." base64(iv) "." base64(tag)`,
//!   AES-256-GCM with a 12-byte random IV and no associated data, under the SHA-256 of the
//!   license key (machine files: of the license key followed directly by the hardware
//!   identifier).
//! - `sig` is the base64 Ed25519 signature, by the key `kid`, of the ASCII bytes
//!   `"license/" + enc` (machine files: `"machine/" + enc`).
//!
//! Base64 is the standard alphabet with padding throughout. Parsing and checking need only the
//! public key ([`LicenseFile`]); issuing needs the team's private key (`issue`, feature
//! `private-keys`).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::TeamPublicKeys;

/// The armor's first line.
pub const BEGIN: &str = "-----BEGIN LICENSE FILE-----";
/// The armor's last line.
pub const END: &str = "-----END LICENSE FILE-----";
/// The first line of a machine file's armor.
pub const BEGIN_MACHINE: &str = "-----BEGIN MACHINE FILE-----";
/// The last line of a machine file's armor.
pub const END_MACHINE: &str = "-----END MACHINE FILE-----";
/// `alg` of a signed file in the clear.
pub const ALG_PLAIN: &str = "base64+ed25519";
/// `alg` of a signed, encrypted file.
pub const ALG_ENCRYPTED: &str = "aes-256-gcm+ed25519";
/// The longest certificate this code reads (a license's data is a few kilobytes).
const MAX_TEXT: usize = 1024 * 1024;

/// Why a license file is refused. Each is its own variant, so an application can tell a
/// damaged file from a forged one or one for another machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LicenseFileError {
    /// Not a license file: the armor, the base64 or the envelope is wrong.
    #[error("not a license file: {0}")]
    Malformed(&'static str),
    /// Signed with a key the application does not trust (its `kid`).
    #[error("signed with key {0}, which is not trusted")]
    UntrustedKey(String),
    /// The signature does not verify: the file was changed, or forged.
    #[error("the signature does not verify")]
    BadSignature,
    /// The file could not be decrypted with this license key (and machine): it is for another
    /// license or another machine.
    #[error("the file cannot be decrypted with this license key and machine")]
    WrongKey,
    /// An `alg` this code does not know.
    #[error("unknown algorithm {0}")]
    UnknownAlgorithm(String),
}

/// The envelope inside the armor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The payload, encoded as `alg` says.
    pub enc: String,
    /// The signature of `"license/" + enc` or `"machine/" + enc`.
    pub sig: String,
    /// [`ALG_PLAIN`] or [`ALG_ENCRYPTED`].
    pub alg: String,
    /// The id of the signing key.
    pub kid: String,
}

/// The AES key of a file: SHA-256 of the license key, followed for a machine file directly by
/// the hardware identifier.
pub fn file_key(license_key: &str, hardware_identifier: Option<&str>) -> Zeroizing<[u8; 32]> {
    let mut digest = Sha256::new();
    digest.update(license_key.as_bytes());
    if let Some(hwid) = hardware_identifier {
        digest.update(hwid.as_bytes());
    }
    Zeroizing::new(digest.finalize().into())
}

/// The bytes a file's signature covers.
pub fn signed_message(enc: &str, machine: bool) -> Vec<u8> {
    let prefix: &[u8] = if machine { b"machine/" } else { b"license/" };
    [prefix, enc.as_bytes()].concat()
}

/// `enc` of `payload`: base64, or encrypted under `key`.
pub fn encode_payload(
    payload: &[u8],
    key: Option<&[u8; 32]>,
) -> Result<String, super::CryptoError> {
    let Some(key) = key else {
        return Ok(BASE64.encode(payload));
    };
    let mut iv = [0u8; 12];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut iv);
    let cipher = Aes256Gcm::new_from_slice(key).map_err(|_| super::CryptoError::Backend)?;
    let sealed = cipher
        .encrypt(Nonce::from_slice(&iv), payload)
        .map_err(|_| super::CryptoError::Backend)?;
    let (ciphertext, tag) = sealed.split_at(sealed.len() - 16);
    Ok(format!(
        "{}.{}.{}",
        BASE64.encode(ciphertext),
        BASE64.encode(iv),
        BASE64.encode(tag)
    ))
}

/// The text of `envelope`: the armor around its base64, in lines of 76 characters (`MACHINE
/// FILE` for a file bound to a machine, `LICENSE FILE` otherwise).
pub fn armor(envelope: &Envelope, machine: bool) -> String {
    let json = serde_json::to_vec(envelope).unwrap_or_default();
    let body = BASE64.encode(json);
    let (begin, end) = if machine {
        (BEGIN_MACHINE, END_MACHINE)
    } else {
        (BEGIN, END)
    };
    let mut text = String::with_capacity(body.len() + body.len() / 76 + 64);
    text.push_str(begin);
    text.push('\n');
    for line in body.as_bytes().chunks(76) {
        // Base64 is ASCII: every chunk is valid UTF-8.
        text.push_str(std::str::from_utf8(line).unwrap_or_default());
        text.push('\n');
    }
    text.push_str(end);
    text.push('\n');
    text
}

/// A license file read from its text: the envelope, not yet checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LicenseFile {
    envelope: Envelope,
    /// Whether its armor says `MACHINE FILE`.
    machine_armor: bool,
}

impl LicenseFile {
    /// Reads the armored text (surrounding white space and Windows line ends are fine).
    pub fn parse(text: &str) -> Result<Self, LicenseFileError> {
        if text.len() > MAX_TEXT {
            return Err(LicenseFileError::Malformed(
                "longer than a license file can be",
            ));
        }
        let text = text.trim();
        let armored = |begin: &str, end: &str| {
            text.strip_prefix(begin)
                .and_then(|rest| rest.strip_suffix(end))
        };
        let (inner, machine_armor) = match armored(BEGIN, END) {
            Some(inner) => (inner, false),
            None => (
                armored(BEGIN_MACHINE, END_MACHINE).ok_or(LicenseFileError::Malformed(
                    "it does not begin and end with the LICENSE FILE (or MACHINE FILE) lines",
                ))?,
                true,
            ),
        };
        let body: String = inner.split_whitespace().collect();
        let json = BASE64
            .decode(body.as_bytes())
            .map_err(|_| LicenseFileError::Malformed("its body is not base64"))?;
        let envelope: Envelope = serde_json::from_slice(&json)
            .map_err(|_| LicenseFileError::Malformed("its envelope is not {enc, sig, alg, kid}"))?;
        if envelope.alg != ALG_PLAIN && envelope.alg != ALG_ENCRYPTED {
            return Err(LicenseFileError::UnknownAlgorithm(envelope.alg));
        }
        Ok(Self {
            envelope,
            machine_armor,
        })
    }

    /// Whether its armor says `MACHINE FILE` (a file bound to one machine).
    pub fn is_machine_file(&self) -> bool {
        self.machine_armor
    }

    /// The envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Whether the payload is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.envelope.alg == ALG_ENCRYPTED
    }

    /// Checks the signature with the trusted key the file names, then returns the payload's
    /// JSON bytes: decoded, or decrypted with `license_key` (and `hardware_identifier`, the
    /// machine's own, for a machine file). A `MACHINE FILE` is checked as a machine file; a
    /// `LICENSE FILE` as a machine file when a hardware identifier is given (machine files
    /// issued before their armor), else as a license file: the signature's prefix binds it to
    /// one kind, so neither passes for the other.
    pub fn open(
        &self,
        trusted: &TeamPublicKeys,
        license_key: &str,
        hardware_identifier: Option<&str>,
    ) -> Result<Vec<u8>, LicenseFileError> {
        let e = &self.envelope;
        let key = trusted
            .signing_key(Some(&e.kid))
            .ok_or_else(|| LicenseFileError::UntrustedKey(e.kid.clone()))?;
        let machine = self.machine_armor || hardware_identifier.is_some();
        key.verify(&signed_message(&e.enc, machine), &e.sig)
            .map_err(|_| LicenseFileError::BadSignature)?;
        if !self.is_encrypted() {
            return BASE64
                .decode(e.enc.as_bytes())
                .map_err(|_| LicenseFileError::Malformed("its payload is not base64"));
        }
        let mut parts = e.enc.split('.');
        let (Some(ciphertext), Some(iv), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(LicenseFileError::Malformed(
                "its encrypted payload is not ciphertext.iv.tag",
            ));
        };
        let decode = |part: &str| BASE64.decode(part.as_bytes()).ok();
        let (Some(mut sealed), Some(iv), Some(tag)) = (decode(ciphertext), decode(iv), decode(tag))
        else {
            return Err(LicenseFileError::Malformed(
                "its encrypted payload is not base64",
            ));
        };
        if iv.len() != 12 || tag.len() != 16 {
            return Err(LicenseFileError::Malformed(
                "its IV must be 12 bytes and its tag 16",
            ));
        }
        sealed.extend_from_slice(&tag);
        let key = file_key(license_key, hardware_identifier);
        let cipher =
            Aes256Gcm::new_from_slice(key.as_ref()).map_err(|_| LicenseFileError::WrongKey)?;
        cipher
            .decrypt(Nonce::from_slice(&iv), sealed.as_slice())
            .map_err(|_| LicenseFileError::WrongKey)
    }
}

/// Issues a license file: `payload` (the JSON bytes) encoded or encrypted, signed with the
/// team's active signing key, armored.
#[cfg(feature = "private-keys")]
pub fn issue(
    keys: &super::TeamKeys,
    payload: &[u8],
    license_key: &str,
    hardware_identifier: Option<&str>,
    encrypt: bool,
) -> Result<String, super::CryptoError> {
    let key = encrypt.then(|| file_key(license_key, hardware_identifier));
    let enc = encode_payload(payload, key.as_deref())?;
    let machine = hardware_identifier.is_some();
    let sig = keys.sign(&signed_message(&enc, machine));
    let alg = if encrypt { ALG_ENCRYPTED } else { ALG_PLAIN };
    Ok(armor(
        &Envelope {
            enc,
            sig,
            alg: alg.to_owned(),
            kid: keys.signing_kid().to_owned(),
        },
        machine,
    ))
}

#[cfg(feature = "private-keys")]
#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::crypto::TeamKeys;

    fn keys() -> &'static TeamKeys {
        static KEYS: OnceLock<TeamKeys> = OnceLock::new();
        KEYS.get_or_init(|| TeamKeys::generate().unwrap())
    }

    const KEY: &str = "ABCDE-12345-FGHIJ-67890-KLMNO";
    const PAYLOAD: &[u8] = br#"{"meta":{"issued":"2026-11-27T00:00:00.000Z"},"data":{}}"#;

    #[test]
    fn a_file_reads_back_in_each_form_and_its_lines_are_at_most_76() {
        let trusted = keys().public_keys();
        for (hwid, encrypt) in [
            (None, false),
            (None, true),
            (Some("machine-0001"), true),
            (Some("machine-0001"), false),
        ] {
            let text = issue(keys(), PAYLOAD, KEY, hwid, encrypt).unwrap();
            let kind = if hwid.is_some() { "MACHINE" } else { "LICENSE" };
            assert!(text.starts_with(&format!("-----BEGIN {kind} FILE-----\n")));
            assert!(text.ends_with(&format!("\n-----END {kind} FILE-----\n")));
            assert!(text.lines().all(|l| l.len() <= 76));
            let file = LicenseFile::parse(&text).unwrap();
            assert_eq!(file.is_encrypted(), encrypt);
            assert_eq!(file.is_machine_file(), hwid.is_some());
            assert_eq!(file.envelope().kid, keys().signing_kid());
            assert_eq!(file.open(trusted, KEY, hwid).unwrap(), PAYLOAD);
            // Pasted with Windows line ends and indentation: the same file.
            let pasted = text.replace('\n', "\r\n    ");
            assert_eq!(LicenseFile::parse(&pasted).unwrap(), file);
        }
    }

    #[test]
    fn every_kind_of_refusal_is_told_apart() {
        let trusted = keys().public_keys();
        let text = issue(keys(), PAYLOAD, KEY, Some("machine-0001"), true).unwrap();
        let file = LicenseFile::parse(&text).unwrap();
        // Another machine, another license key.
        assert_eq!(
            file.open(trusted, KEY, Some("machine-0002")),
            Err(LicenseFileError::WrongKey)
        );
        assert_eq!(
            file.open(
                trusted,
                "ZZZZZ-12345-FGHIJ-67890-KLMNO",
                Some("machine-0001")
            ),
            Err(LicenseFileError::WrongKey)
        );
        // A machine file's armor says so: opened without the machine it does not decrypt,
        // and re-armored as a license file its signature does not verify (its prefix differs).
        assert_eq!(
            file.open(trusted, KEY, None),
            Err(LicenseFileError::WrongKey)
        );
        let as_license = LicenseFile::parse(&armor(file.envelope(), false)).unwrap();
        assert_eq!(
            as_license.open(trusted, KEY, None),
            Err(LicenseFileError::BadSignature)
        );
        // A license file re-armored as a machine file does not verify either.
        let plain = LicenseFile::parse(&issue(keys(), PAYLOAD, KEY, None, true).unwrap()).unwrap();
        assert_eq!(
            LicenseFile::parse(&armor(plain.envelope(), true))
                .unwrap()
                .open(trusted, KEY, None),
            Err(LicenseFileError::BadSignature)
        );
        // A machine file issued before its armor (under LICENSE FILE) still opens with its
        // machine.
        assert_eq!(
            as_license.open(trusted, KEY, Some("machine-0001")).unwrap(),
            PAYLOAD
        );
        // An untrusted key.
        let other = TeamKeys::generate().unwrap();
        assert!(matches!(
            file.open(other.public_keys(), KEY, Some("machine-0001")),
            Err(LicenseFileError::UntrustedKey(_))
        ));
        // One changed character of the payload.
        let mut envelope = file.envelope().clone();
        let flipped = if envelope.enc.starts_with('A') {
            "B"
        } else {
            "A"
        };
        envelope.enc.replace_range(0..1, flipped);
        let tampered = LicenseFile::parse(&armor(&envelope, true)).unwrap();
        assert_eq!(
            tampered.open(trusted, KEY, Some("machine-0001")),
            Err(LicenseFileError::BadSignature)
        );
        // Not a license file.
        for text in [
            "",
            "hello",
            "-----BEGIN LICENSE FILE-----\n!!\n-----END LICENSE FILE-----",
        ] {
            assert!(matches!(
                LicenseFile::parse(text),
                Err(LicenseFileError::Malformed(_))
            ));
        }
        let mut unknown = file.envelope().clone();
        unknown.alg = "rot13+ed25519".into();
        assert_eq!(
            LicenseFile::parse(&armor(&unknown, true)),
            Err(LicenseFileError::UnknownAlgorithm("rot13+ed25519".into()))
        );
    }
}
