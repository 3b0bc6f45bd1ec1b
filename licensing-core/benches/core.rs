//! Core cryptography and key benchmarks: `cargo bench -p licensing-core`.
//!
//! Private-key operations are measured on aws-lc-rs (what the server uses) and, for comparison
//! only, on the `rsa` crate (timing advisory RUSTSEC-2023-0071; never used for private keys).

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use licensing_core::LicenseKey;
use licensing_core::crypto::frames::{self, FrameSealer};
use licensing_core::crypto::{SessionKey, SessionSecret, TeamKeys, md5_hex};
use rsa::pkcs8::DecodePrivateKey;
use rsa::signature::{SignatureEncoding, Signer};

fn rsa_crate_key(keys: &TeamKeys) -> rsa::RsaPrivateKey {
    let pem = keys.to_plain().unwrap().rsa_private_pem;
    rsa::RsaPrivateKey::from_pkcs8_pem(&pem).unwrap()
}

fn signing(c: &mut Criterion) {
    let keys = TeamKeys::generate().unwrap();
    let challenge = "c8a1f0e2-benchmark-challenge-0123456789abcdef";
    let mut group = c.benchmark_group("challenge_sign_rsa2048");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("aws-lc-rs", |b| {
        b.iter(|| keys.sign_challenge(black_box(challenge)).unwrap())
    });
    let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(rsa_crate_key(&keys));
    group.bench_function("rsa-crate", |b| {
        b.iter(|| hex::encode(signer.sign(black_box(challenge.as_bytes())).to_bytes()))
    });
    group.finish();

    let mut group = c.benchmark_group("challenge_verify_rsa2048");
    let sig = keys.sign_challenge(challenge).unwrap();
    group.bench_function("rsa-crate", |b| {
        b.iter(|| {
            keys.public_keys()
                .rsa
                .verify_challenge(black_box(challenge), &sig)
                .unwrap()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("response_signature_ed25519");
    let body = vec![b'x'; 1024];
    group.bench_function("sign-1KiB", |b| {
        b.iter(|| keys.sign_response(black_box(b"{}"), black_box(&body)))
    });
    group.finish();
}

fn session_keys(c: &mut Criterion) {
    let keys = TeamKeys::generate().unwrap();
    let secret = SessionSecret::generate();
    let hex_text = keys
        .public_keys()
        .rsa
        .encrypt_session_secret(&secret)
        .unwrap();
    let mut group = c.benchmark_group("session_key_decrypt_oaep_sha1");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("aws-lc-rs", |b| {
        b.iter(|| keys.decrypt_session_key(black_box(&hex_text)).unwrap())
    });
    let private = rsa_crate_key(&keys);
    let ciphertext = hex::decode(&hex_text).unwrap();
    group.bench_function("rsa-crate", |b| {
        b.iter(|| {
            private
                .decrypt(rsa::Oaep::new::<sha1::Sha1>(), black_box(&ciphertext))
                .unwrap()
        })
    });
    group.finish();
}

fn frames_and_digests(c: &mut Criterion) {
    let key = SessionKey::from_bytes([9; 32]);
    let data: Vec<u8> = (0..10 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let checksum = md5_hex(&data);
    let stream = frames::encrypt_all(&key, &data).unwrap();
    let mut group = c.benchmark_group("frames_10MiB");
    group
        .throughput(Throughput::Bytes(data.len() as u64))
        .sample_size(20);
    group.bench_function("encrypt", |b| {
        let sealer = FrameSealer::new(&key);
        let mut out = Vec::with_capacity(stream.len());
        b.iter(|| {
            out.clear();
            for chunk in data.chunks(frames::FRAME_PLAINTEXT) {
                sealer.seal_into(chunk, &mut out).unwrap();
            }
            black_box(out.len())
        })
    });
    group.bench_function("decrypt+verify", |b| {
        b.iter(|| {
            frames::decrypt_all(&key, black_box(&stream), data.len() as u64, &checksum).unwrap()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("md5_10MiB");
    group
        .throughput(Throughput::Bytes(data.len() as u64))
        .sample_size(20);
    group.bench_function("md5", |b| b.iter(|| md5_hex(black_box(&data))));
    group.finish();
}

fn license_keys(c: &mut Criterion) {
    let mut group = c.benchmark_group("license_key");
    group.bench_function("generate", |b| b.iter(LicenseKey::generate));
    let text = LicenseKey::generate().to_string();
    group.bench_with_input(BenchmarkId::new("parse", "valid"), &text, |b, t| {
        b.iter(|| LicenseKey::parse(black_box(t)).unwrap())
    });
    group.finish();
}

criterion_group!(
    benches,
    signing,
    session_keys,
    frames_and_digests,
    license_keys
);
criterion_main!(benches);
