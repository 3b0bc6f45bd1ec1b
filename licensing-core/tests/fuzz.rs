//! Property-based fuzzing of everything that reads untrusted input: the license key parser,
//! every JSON body, every query string, the frame decoder and the session-key path. Each
//! property runs on random and structure-aware inputs; none may panic, and every refusal is a
//! 400 (or 413) `BAD_REQUEST` with details that say what is wrong.
//!
//! These run in `cargo test` (cargo-fuzz needs a nightly toolchain, which CI does not have).
//! `PROPTEST_CASES=100000 cargo test -p licensing-core --test fuzz --release` searches longer.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::OnceLock;

use licensing_core::api::ResultCode;
use licensing_core::api::requests::{
    AdminTeamBody, ApiKeyBody, BlacklistBody, BranchBody, ClassloaderQuery, ClientBody,
    CustomerBody, CustomerListQuery, DeviceListQuery, FeaturesBody, ForgottenBody, LicenseCreate,
    LicenseListQuery, LicenseUpdate, ProductBody, ProductListQuery, ReleaseData, ReleaseListQuery,
    ReleaseMode, SettingsBody, parse_no_query,
};
use licensing_core::crypto::frames::{FrameDecoder, encrypt_all};
use licensing_core::crypto::{CryptoError, SessionKey, SessionSecret, TeamKeys};
use licensing_core::fuzz::{json_body, query_string};
use licensing_core::model::TeamSettings;
use licensing_core::verify::RequestKind;
use licensing_core::{ApiError, LicenseKey, TeamId, Timestamp, UserId};
use proptest::prelude::*;
use serde_json::json;

/// 2,048 cases per property, or `PROPTEST_CASES`.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2048)
}

fn now() -> Timestamp {
    Timestamp::parse("2026-11-22T12:00:00.000Z").unwrap()
}

/// A refusal must be a client error with something to act on.
fn refusal_is_clear(e: &ApiError) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(e.status(), 400 | 413),
        "status {} for {e:?}",
        e.status()
    );
    prop_assert_eq!(e.code(), ResultCode::BadRequest);
    prop_assert!(!e.details().trim().is_empty(), "no details: {e:?}");
    Ok(())
}

fn check<T>(outcome: Result<T, ApiError>) -> Result<(), TestCaseError> {
    match outcome {
        Ok(_) => Ok(()),
        Err(e) => refusal_is_clear(&e),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn license_keys_parse_or_refuse(text in prop_oneof![
        ".{0,40}",
        "[A-Z0-9]{5}(-[A-Z0-9]{5}){4}",
        "[A-Za-z0-9-]{29}",
    ]) {
        if let Ok(key) = LicenseKey::parse(&text) {
            prop_assert_eq!(key.to_string(), text.clone());
            prop_assert_eq!(LicenseKey::parse(key.as_ref()).unwrap(), key);
        }
    }

    #[test]
    fn every_json_body_parses_or_is_a_clear_400(body in json_body()) {
        let now = now();
        check(ClientBody::parse(RequestKind::Verify, &body))?;
        check(ClientBody::parse(RequestKind::Heartbeat, &body))?;
        check(LicenseCreate::parse(&body, now))?;
        check(LicenseUpdate::check_syntax(&body))?;
        check(LicenseUpdate::apply(&body, existing_license(), now))?;
        check(CustomerBody::parse(&body))?;
        check(ProductBody::parse(&body, true))?;
        check(ProductBody::parse(&body, false))?;
        check(BranchBody::parse(&body))?;
        check(ReleaseData::parse(&body, ReleaseMode::Create))?;
        check(ReleaseData::parse(&body, ReleaseMode::Update))?;
        check(ForgottenBody::parse(&body))?;
        check(SettingsBody::apply(&body, &TeamSettings::default()))?;
        check(BlacklistBody::parse(&body))?;
        check(ApiKeyBody::parse(&body, now))?;
        check(AdminTeamBody::parse(&body))?;
        check(FeaturesBody::parse(&body))?;
    }

    #[test]
    fn every_query_string_parses_or_is_a_clear_400(raw in query_string()) {
        check(LicenseListQuery::parse(&raw))?;
        check(CustomerListQuery::parse(&raw))?;
        check(ProductListQuery::parse(&raw))?;
        check(ReleaseListQuery::parse(&raw))?;
        check(DeviceListQuery::parse(&raw))?;
        check(ClassloaderQuery::parse(&raw))?;
        check(parse_no_query(&raw))?;
    }

    /// Random bytes in random pieces: the decoder refuses or opens frames, and never panics
    /// nor asks for more memory than its frame cap.
    #[test]
    fn the_frame_decoder_survives_any_input(
        input in prop::collection::vec(any::<u8>(), 0..4096),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut decoder = FrameDecoder::with_max_frame_len(&session_key(), 64 * 1024 + 28);
        let mut outcome = Ok(());
        for piece in pieces(&input, &cuts) {
            outcome = decoder.update::<CryptoError>(piece, &mut |_| Ok(()));
            if outcome.is_err() {
                break;
            }
        }
        if outcome.is_ok() {
            let _ = decoder.finish();
        }
    }

    /// Real frames in random pieces decode to the original; any flipped byte is refused.
    #[test]
    fn frames_round_trip_and_any_corruption_is_refused(
        plain in prop::collection::vec(any::<u8>(), 0..3000),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        flip in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let key = session_key();
        let sealed = encrypt_all(&key, &plain).unwrap();
        prop_assert_eq!(decode(&key, &sealed, &cuts), Some(plain));
        // (Nothing sealed, for nothing in, has nothing to corrupt.)
        if !sealed.is_empty() {
            let mut corrupt = sealed.clone();
            let i = flip.index(corrupt.len());
            corrupt[i] ^= 1 << bit;
            prop_assert_eq!(decode(&key, &corrupt, &cuts), None);
        }
    }

    /// Any `sessionKey` text: a key comes back only for a real ciphertext, and every failure is
    /// the one same error.
    #[test]
    fn session_keys_decrypt_or_fail_alike(text in prop_oneof![
        ".{0,600}",
        "[0-9a-f]{512}",
        "[0-9a-fA-F]{510,514}",
    ]) {
        match team_keys().decrypt_session_key(&text) {
            Ok(_) => prop_assert!(false, "random text decrypted"),
            Err(e) => prop_assert!(matches!(e, CryptoError::InvalidSessionKey), "{e:?}"),
        }
    }
}

fn pieces<'a>(input: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
    at.push(0);
    at.push(input.len());
    at.sort_unstable();
    at.windows(2).map(|w| &input[w[0]..w[1]]).collect()
}

fn decode(key: &SessionKey, sealed: &[u8], cuts: &[prop::sample::Index]) -> Option<Vec<u8>> {
    let mut decoder = FrameDecoder::new(key);
    let mut plain = Vec::new();
    for piece in pieces(sealed, cuts) {
        decoder
            .update::<CryptoError>(piece, &mut |p| {
                plain.extend_from_slice(p);
                Ok(())
            })
            .ok()?;
    }
    decoder.finish().ok()?;
    Some(plain)
}

fn session_key() -> SessionKey {
    SessionSecret::from_bytes(vec![7u8; 32]).derive_key()
}

fn team_keys() -> &'static TeamKeys {
    static KEYS: OnceLock<TeamKeys> = OnceLock::new();
    KEYS.get_or_init(|| TeamKeys::generate().unwrap())
}

fn existing_license() -> &'static licensing_core::model::License {
    static LICENSE: OnceLock<licensing_core::model::License> = OnceLock::new();
    LICENSE.get_or_init(|| {
        LicenseCreate::parse(
            json!({"expirationType": "DURATION", "expirationDays": 30, "hwidLimit": 2})
                .to_string()
                .as_bytes(),
            now(),
        )
        .unwrap()
        .into_license(LicenseKey::generate(), TeamId::new(), UserId::ADMIN, now())
    })
}
