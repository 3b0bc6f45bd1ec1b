//! (ext) The signatures desktop updaters check: minisign's (Tauri's updater) and Sparkle's
//! `edSignature`.
//!
//! - **minisign**, prehashed form (`ED`): Ed25519 over the BLAKE2b-512 of the file, and a global
//!   signature over that signature and the trusted comment. A public key is two lines (an
//!   untrusted comment, then base64 of `Ed`, the 8-byte key id and the 32-byte key); a signature
//!   four (untrusted comment, base64 of `ED`, key id and signature, `trusted comment: …`, base64
//!   of the global signature). Tauri takes both as base64 of that text: its `pubkey` setting and
//!   the `signature` of its feed. The legacy form `Ed` (the whole file signed) is refused: every
//!   signer writes `ED` by default.
//! - **Sparkle**: Ed25519 over the whole file, base64, and the key as base64 of its 32 bytes
//!   (`SUPublicEDKey`). Checking one reads the file once; making one reads it twice (Ed25519's
//!   nonce depends on the message), a chunk at a time either way.

use std::io::Read;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature, VerifyingKey};

/// BLAKE2b-512, the digest minisign's prehashed signatures sign.
pub type Blake2b512 = blake2::Blake2b512;

/// How much of a file is read at a time when it is checked or signed.
const CHUNK: usize = 64 * 1024;

/// The untrusted comment of the signatures the server makes.
const SIGNED_BY: &str = "signature from licensing-server";

/// A minisign public key: its 8-byte key id and Ed25519 key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinisignPublicKey {
    key_id: [u8; 8],
    key: VerifyingKey,
}

impl MinisignPublicKey {
    /// The key `key` with id `key_id` (the server's: the first 8 bytes of its signing key's
    /// `kid`).
    pub fn new(key_id: [u8; 8], key: &[u8; 32]) -> Result<Self, String> {
        let key =
            VerifyingKey::from_bytes(key).map_err(|_| "is not an Ed25519 public key".to_owned())?;
        Ok(Self { key_id, key })
    }

    pub(crate) fn from_verifying(key_id: [u8; 8], key: VerifyingKey) -> Self {
        Self { key_id, key }
    }

    /// Parses a key as Tauri's `pubkey` setting holds it (base64 of the two-line text), as the
    /// `.pub` file holds it (the two lines), or as its key line alone.
    pub fn parse(text: &str) -> Result<Self, String> {
        const HOW: &str = "must be a minisign public key: the text of a .pub file, its base64 (Tauri's pubkey setting) or its second line";
        let text = text.trim();
        let decoded = base64_text(text);
        let text = decoded.as_deref().unwrap_or(text);
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .ok_or(HOW)?;
        let bytes = BASE64.decode(line).map_err(|_| HOW.to_owned())?;
        if bytes.len() != 42 || &bytes[..2] != b"Ed" {
            return Err(HOW.to_owned());
        }
        let key_id: [u8; 8] = bytes[2..10].try_into().map_err(|_| HOW.to_owned())?;
        let key: [u8; 32] = bytes[10..].try_into().map_err(|_| HOW.to_owned())?;
        Self::new(key_id, &key)
    }

    /// The 8-byte key id.
    pub fn key_id(&self) -> [u8; 8] {
        self.key_id
    }

    /// The key id, as minisign prints it (upper-case hex of the little-endian number).
    pub fn key_id_text(&self) -> String {
        format!("{:016X}", u64::from_le_bytes(self.key_id))
    }

    /// The two-line text of a `.pub` file.
    pub fn text(&self) -> String {
        let mut raw = Vec::with_capacity(42);
        raw.extend_from_slice(b"Ed");
        raw.extend_from_slice(&self.key_id);
        raw.extend_from_slice(self.key.as_bytes());
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.key_id_text(),
            BASE64.encode(raw)
        )
    }

    /// Base64 of [`text`](Self::text): Tauri's `pubkey` setting.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.text())
    }

    /// Checks `signature` (as [`MinisignSignature::parse`] takes it) of a file whose BLAKE2b-512
    /// is `digest`; the error says what is wrong.
    pub fn verify(&self, signature: &MinisignSignature, digest: &[u8; 64]) -> Result<(), String> {
        if signature.key_id != self.key_id {
            return Err(format!(
                "was made with key {:016X}, not the product's updater key {}",
                u64::from_le_bytes(signature.key_id),
                self.key_id_text()
            ));
        }
        self.key
            .verify_strict(digest, &Signature::from_bytes(&signature.signature))
            .map_err(|_| "does not verify: the file is not the one that was signed".to_owned())?;
        let mut global = Vec::with_capacity(64 + signature.trusted_comment.len());
        global.extend_from_slice(&signature.signature);
        global.extend_from_slice(signature.trusted_comment.as_bytes());
        self.key
            .verify_strict(&global, &Signature::from_bytes(&signature.global))
            .map_err(|_| "has a trusted comment that does not verify".to_owned())
    }
}

/// A minisign signature of the prehashed form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinisignSignature {
    untrusted_comment: String,
    key_id: [u8; 8],
    signature: [u8; 64],
    trusted_comment: String,
    global: [u8; 64],
}

impl MinisignSignature {
    /// Parses a signature as a Tauri build writes it (`.sig`: base64 of the four-line text) or
    /// as minisign writes it (the four lines).
    pub fn parse(text: &str) -> Result<Self, String> {
        const HOW: &str = "must be a minisign signature: the content of the .sig file a Tauri build writes (base64) or minisign's four lines";
        let text = text.trim();
        let decoded = base64_text(text);
        let text = decoded.as_deref().unwrap_or(text);
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
        let untrusted_comment = lines
            .next()
            .and_then(|l| l.strip_prefix("untrusted comment: "))
            .ok_or(HOW)?
            .to_owned();
        let raw = lines
            .next()
            .and_then(|l| BASE64.decode(l.trim()).ok())
            .ok_or(HOW)?;
        let trusted_comment = lines
            .next()
            .and_then(|l| l.strip_prefix("trusted comment: "))
            .ok_or(HOW)?
            .to_owned();
        let global: [u8; 64] = lines
            .next()
            .and_then(|l| BASE64.decode(l.trim()).ok())
            .and_then(|g| g.try_into().ok())
            .ok_or(HOW)?;
        if raw.len() != 74 {
            return Err(HOW.to_owned());
        }
        match &raw[..2] {
            b"ED" => {}
            b"Ed" => {
                return Err(
                    "is minisign's legacy form (Ed, the whole file signed): sign with the prehashed form (ED), the default of minisign and of Tauri's signer"
                        .to_owned(),
                );
            }
            _ => return Err(HOW.to_owned()),
        }
        Ok(Self {
            untrusted_comment,
            key_id: raw[2..10].try_into().map_err(|_| HOW.to_owned())?,
            signature: raw[10..].try_into().map_err(|_| HOW.to_owned())?,
            trusted_comment,
            global,
        })
    }

    /// The id of the key that made it.
    pub fn key_id(&self) -> [u8; 8] {
        self.key_id
    }

    /// The trusted comment.
    pub fn trusted_comment(&self) -> &str {
        &self.trusted_comment
    }

    /// The four-line text.
    pub fn text(&self) -> String {
        let mut raw = Vec::with_capacity(74);
        raw.extend_from_slice(b"ED");
        raw.extend_from_slice(&self.key_id);
        raw.extend_from_slice(&self.signature);
        format!(
            "untrusted comment: {}\n{}\ntrusted comment: {}\n{}\n",
            self.untrusted_comment,
            BASE64.encode(raw),
            self.trusted_comment,
            BASE64.encode(self.global)
        )
    }

    /// Base64 of [`text`](Self::text): the content of a Tauri `.sig` file, and the `signature`
    /// of Tauri's feed.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.text())
    }

    /// A signature of a file whose BLAKE2b-512 is `digest`, with `trusted_comment`, by the key
    /// `key_id` whose signing function is `sign` (Ed25519 of a message).
    pub fn sign(
        key_id: [u8; 8],
        digest: &[u8; 64],
        trusted_comment: &str,
        sign: impl Fn(&[u8]) -> [u8; 64],
    ) -> Self {
        let signature = sign(digest);
        let mut global = Vec::with_capacity(64 + trusted_comment.len());
        global.extend_from_slice(&signature);
        global.extend_from_slice(trusted_comment.as_bytes());
        Self {
            untrusted_comment: SIGNED_BY.to_owned(),
            key_id,
            signature,
            trusted_comment: trusted_comment.to_owned(),
            global: sign(&global),
        }
    }
}

/// The trusted comment of the server's minisign signatures: the time, the file name and the
/// version (Tauri's rollback check reads `version:`). Tabs and line breaks in the name are
/// replaced, so that the comment stays one line.
pub fn trusted_comment(timestamp_secs: i64, file: &str, version: &str) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    format!(
        "timestamp:{timestamp_secs}\tfile:{}\tversion:{}",
        clean(file),
        clean(version)
    )
}

/// Parses Sparkle's public key (base64 of 32 bytes).
pub fn sparkle_key(text: &str) -> Result<VerifyingKey, String> {
    const HOW: &str =
        "must be an Ed25519 public key as Sparkle's SUPublicEDKey holds it: base64 of 32 bytes";
    let bytes: [u8; 32] = BASE64
        .decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(HOW)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| HOW.to_owned())
}

/// Checks Sparkle's `edSignature` (base64) of the file `file` reads, a chunk at a time.
pub fn sparkle_verify(
    key: &VerifyingKey,
    signature: &str,
    mut file: impl Read,
) -> Result<Result<(), String>, std::io::Error> {
    let Some(signature) = BASE64
        .decode(signature.trim())
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
    else {
        return Ok(Err(
            "must be base64 of a 64-byte Ed25519 signature, as Sparkle's sign_update prints it"
                .to_owned(),
        ));
    };
    let Ok(mut verifier) = key.verify_stream(&Signature::from_bytes(&signature)) else {
        return Ok(Err("is not a valid Ed25519 signature".to_owned()));
    };
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        verifier.update(&buffer[..n]);
    }
    Ok(verifier
        .finalize_and_verify()
        .map_err(|_| "does not verify: the file is not the one that was signed".to_owned()))
}

/// Sparkle's `edSignature` of a file by the Ed25519 key of `seed`: `open` opens the file, which
/// is read twice, a chunk at a time.
#[cfg(feature = "private-keys")]
pub(crate) fn sparkle_sign<R: Read>(
    seed: &[u8; 32],
    open: impl Fn() -> std::io::Result<R>,
) -> std::io::Result<String> {
    use ed25519_dalek::hazmat::{ExpandedSecretKey, raw_sign_byupdate};
    use std::cell::RefCell;

    let expanded = ExpandedSecretKey::from(seed);
    let public = VerifyingKey::from(&expanded);
    let failure: RefCell<Option<std::io::Error>> = RefCell::new(None);
    let feed = |digest: &mut sha2::Sha512| -> Result<(), ed25519_dalek::SignatureError> {
        use sha2::Digest as _;
        let mut read = || -> std::io::Result<()> {
            let mut file = open()?;
            let mut buffer = vec![0u8; CHUNK];
            loop {
                let n = file.read(&mut buffer)?;
                if n == 0 {
                    return Ok(());
                }
                digest.update(&buffer[..n]);
            }
        };
        read().map_err(|e| {
            *failure.borrow_mut() = Some(e);
            ed25519_dalek::SignatureError::new()
        })
    };
    match raw_sign_byupdate::<sha2::Sha512, _>(&expanded, feed, &public) {
        Ok(signature) => Ok(BASE64.encode(signature.to_bytes())),
        Err(_) => Err(failure
            .into_inner()
            .unwrap_or_else(|| std::io::Error::other("signing failed"))),
    }
}

/// The text of `text` when it is base64 of UTF-8 text with a line break (what Tauri keeps).
fn base64_text(text: &str) -> Option<String> {
    let bytes = BASE64.decode(text.trim()).ok()?;
    let decoded = String::from_utf8(bytes).ok()?;
    decoded.contains('\n').then_some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blake2::Digest as _;
    use ed25519_dalek::{Signer as _, SigningKey};

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    #[test]
    fn a_minisign_signature_reads_back_in_every_form_and_verifies_only_its_file() {
        let signing = key();
        let public = MinisignPublicKey::new(
            *b"\x01\x02\x03\x04\x05\x06\x07\x08",
            signing.verifying_key().as_bytes(),
        )
        .unwrap();
        let digest: [u8; 64] = Blake2b512::digest(b"the file").into();
        let comment = trusted_comment(1_790_000_000, "App.app.tar.gz", "1.2.0");
        let made = MinisignSignature::sign(
            *b"\x01\x02\x03\x04\x05\x06\x07\x08",
            &digest,
            &comment,
            |m| signing.sign(m).to_bytes(),
        );
        for form in [made.text(), made.to_base64()] {
            let read = MinisignSignature::parse(&form).unwrap();
            assert_eq!(read, made);
            public.verify(&read, &digest).unwrap();
        }
        for form in [public.text(), public.to_base64()] {
            assert_eq!(MinisignPublicKey::parse(&form).unwrap(), public);
        }
        let other: [u8; 64] = Blake2b512::digest(b"another file").into();
        assert!(
            public
                .verify(&made, &other)
                .unwrap_err()
                .contains("does not verify")
        );
        let stranger = MinisignPublicKey::new([9; 8], signing.verifying_key().as_bytes()).unwrap();
        assert!(
            stranger
                .verify(&made, &digest)
                .unwrap_err()
                .contains("not the product's")
        );
        assert!(MinisignSignature::parse("hello").is_err());
        assert!(MinisignPublicKey::parse("hello").is_err());
    }

    #[cfg(feature = "private-keys")]
    #[test]
    fn sparkle_signatures_are_made_and_checked_a_chunk_at_a_time() {
        let seed = [7u8; 32];
        let file: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let signature = sparkle_sign(&seed, || Ok(std::io::Cursor::new(&file))).unwrap();
        // The same as signing the whole file at once (RFC 8032 is deterministic).
        let whole = BASE64.encode(SigningKey::from_bytes(&seed).sign(&file).to_bytes());
        assert_eq!(signature, whole);
        let public = SigningKey::from_bytes(&seed).verifying_key();
        let key = sparkle_key(&BASE64.encode(public.as_bytes())).unwrap();
        assert_eq!(sparkle_verify(&key, &signature, &file[..]).unwrap(), Ok(()));
        assert!(
            sparkle_verify(&key, &signature, &file[1..])
                .unwrap()
                .is_err()
        );
        assert!(sparkle_verify(&key, "nope", &file[..]).unwrap().is_err());
        assert!(sparkle_key("AAAA").is_err());
    }
}
