//! Interoperability with independent implementations: fixtures made by OpenSSL and Python's
//! `cryptography` (see `fixtures/make.sh` for the commands), and live checks in which those tools
//! verify what we make.
//!
//! The live checks need `openssl` and a Python with `cryptography` (`LICENSING_PYTHON`, default
//! `python3`). `.ci/run` provides both; elsewhere a missing tool skips the live check with a
//! message, unless `CI` is set, where it fails.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use licensing_core::crypto::frames::{self, FRAME_PLAINTEXT};
use licensing_core::crypto::{RsaPublicKey, SessionKey, SessionSecret, TeamKeys, md5_hex};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name))
        .unwrap()
        .trim()
        .to_owned()
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn fixture_keys() -> TeamKeys {
    TeamKeys::from_rsa_pem(&text("rsa-private.pem")).unwrap()
}

fn aes_key() -> SessionKey {
    let mut key = [0u8; 32];
    hex::decode_to_slice(text("session-aes-key.hex"), &mut key).unwrap();
    SessionKey::from_bytes(key)
}

#[test]
fn openssl_challenge_signature_verifies_with_ours_and_ours_is_identical() {
    let challenge = text("challenge.txt");
    let openssl_sig = text("challenge.sig.hex");
    assert_eq!(openssl_sig.len(), 512);
    let public = RsaPublicKey::parse(&text("rsa-public.pem")).unwrap();
    public.verify_challenge(&challenge, &openssl_sig).unwrap();
    // PKCS#1 v1.5 is deterministic: the same key and message give the same signature.
    assert_eq!(
        fixture_keys().sign_challenge(&challenge).unwrap(),
        openssl_sig
    );
}

#[test]
fn openssl_public_key_in_base64_of_pem_form_parses() {
    use base64::Engine as _;
    let pem = text("rsa-public.pem");
    let b64 = base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
    assert_eq!(
        RsaPublicKey::parse(&b64).unwrap(),
        RsaPublicKey::parse(&pem).unwrap()
    );
    assert_eq!(fixture_keys().public_key_pem().trim(), pem);
}

#[test]
fn openssl_oaep_session_key_decrypts_with_ours() {
    let key = fixture_keys()
        .decrypt_session_key(&text("session-key.openssl.hex"))
        .unwrap();
    assert_eq!(key.as_bytes(), aes_key().as_bytes());
    let secret = SessionSecret::from_bytes(hex::decode(text("session-secret.hex")).unwrap());
    assert_eq!(secret.derive_key().as_bytes(), aes_key().as_bytes());
}

#[test]
fn python_frame_stream_decodes_with_ours() {
    let plain = frames::decrypt_all(
        &aes_key(),
        &bytes("frames.python.bin"),
        5000,
        &text("frames-plain.md5"),
    )
    .unwrap();
    assert_eq!(plain, bytes("frames-plain.bin"));
}

/// Runs a live check with an external tool, or explains why it cannot run.
fn tool_available(program: &str, probe: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(probe)
        .output()
        .is_ok_and(|out| out.status.success());
    if !ok {
        let message = format!(
            "`{program} {}` failed: live interop check skipped",
            probe.join(" ")
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "{message} (required when CI is set)"
        );
        eprintln!("{message}");
    }
    ok
}

fn python() -> String {
    std::env::var("LICENSING_PYTHON").unwrap_or_else(|_| "python3".into())
}

#[test]
fn openssl_verifies_our_challenge_signature() {
    if !tool_available("openssl", &["version"]) {
        return;
    }
    let keys = TeamKeys::generate().unwrap();
    let challenge = "fresh-challenge-for-openssl-0123456789";
    let sig = hex::decode(keys.sign_challenge(challenge).unwrap()).unwrap();
    let dir = tempdir();
    std::fs::write(dir.path().join("pub.pem"), keys.public_key_pem()).unwrap();
    std::fs::write(dir.path().join("msg"), challenge).unwrap();
    std::fs::write(dir.path().join("sig"), &sig).unwrap();
    let verify = |msg: &str| {
        Command::new("openssl")
            .args([
                "dgst",
                "-sha256",
                "-verify",
                "pub.pem",
                "-signature",
                "sig",
                msg,
            ])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let out = verify("msg");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // And a changed message fails there too, so the check can fail.
    std::fs::write(dir.path().join("other"), format!("{challenge}x")).unwrap();
    assert!(!verify("other").status.success());
}

#[test]
fn openssl_decrypts_our_oaep_session_key() {
    if !tool_available("openssl", &["version"]) {
        return;
    }
    let dir = tempdir();
    let keys = fixture_keys();
    let secret = SessionSecret::generate();
    let ciphertext = keys
        .public_keys()
        .rsa
        .encrypt_session_secret(&secret)
        .unwrap();
    std::fs::write(dir.path().join("ct"), hex::decode(ciphertext).unwrap()).unwrap();
    let out = Command::new("openssl")
        .args(["pkeyutl", "-decrypt", "-inkey"])
        .arg(fixture("rsa-private.pem"))
        .args([
            "-pkeyopt",
            "rsa_padding_mode:oaep",
            "-pkeyopt",
            "rsa_oaep_md:sha1",
        ])
        .args(["-pkeyopt", "rsa_mgf1_md:sha1", "-in", "ct"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, secret.as_bytes());
}

#[test]
fn our_frame_stream_decodes_with_python() {
    if !tool_available(&python(), &["-c", "import cryptography"]) {
        return;
    }
    let dir = tempdir();
    let data: Vec<u8> = (0..(FRAME_PLAINTEXT * 2 + 1234))
        .map(|i| (i * 31 % 256) as u8)
        .collect();
    let stream = frames::encrypt_all(&aes_key(), &data).unwrap();
    std::fs::File::create(dir.path().join("stream"))
        .unwrap()
        .write_all(&stream)
        .unwrap();
    let out = Command::new(python())
        .arg(fixture("frames.py"))
        .arg("decrypt")
        .arg(text("session-aes-key.hex"))
        .arg(dir.path().join("stream"))
        .arg(dir.path().join("plain"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plain = std::fs::read(dir.path().join("plain")).unwrap();
    assert_eq!(md5_hex(&plain), md5_hex(&data));
    assert_eq!(plain, data);
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}
