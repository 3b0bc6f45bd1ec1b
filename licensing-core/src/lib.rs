//! The storage-agnostic core of the licensing service: everything the server and the SDK share,
//! with no web framework, database or async runtime in it.
//!
//! # Layout
//!
//! | module | what it holds |
//! |---|---|
//! | [`ids`], [`time`], [`key`] | typed ids, millisecond UTC timestamps, license keys |
//! | [`validate`] | parse-don't-validate text types ([`validate::HardwareId`], [`validate::Version`], [`validate::BranchName`], …) |
//! | [`model`] | records as stored and shown: licenses, customers, products, releases, devices, teams, statistics |
//! | [`api`] | `result.code` and its HTTP status, the envelope, request bodies and queries, answer views |
//! | [`error`] | field problems and the one [`ApiError`] every failure becomes |
//! | [`expiry`] | expiration as pure functions of `now` |
//! | [`idempotency`] | (ext) `Idempotency-Key`: the key, the request's fingerprint, the claim rule |
//! | [`verify`] | the verification decision shared by verify, heartbeat and classloader |
//! | [`store`] | async storage traits, the in-memory store, the conformance suite (feature `testing`) |
//! | [`crypto`] | team keys, challenge signatures, session keys, the framed AES-GCM stream, API keys |
//!
//! Features: `private-keys` (default) adds [`crypto::TeamKeys`] on aws-lc-rs for servers;
//! clients turn default features off and keep the pure-Rust public-key side. `testing` exposes
//! `store::testing`, the `store_test_suite!` macro and the fuzzing input generators (`fuzz`).
//!
//! # Example
//!
//! Validate a verify request, decide it against a license held in the in-memory store, and sign
//! the challenge:
//!
//! ```
//! # #[cfg(feature = "private-keys")] {
//! use licensing_core::api::requests::{ClientBody, LicenseCreate};
//! use licensing_core::crypto::TeamKeys;
//! use licensing_core::model::TeamSettings;
//! use licensing_core::verify::{self, Blacklist, ClientRequest, Context, RequestKind};
//! use licensing_core::{LicenseKey, TeamId, Timestamp, UserId};
//!
//! let now = Timestamp::parse("2026-11-22T10:00:00Z").unwrap();
//! let license = LicenseCreate::parse(br#"{"expirationType":"DURATION","expirationDays":30,"hwidLimit":1}"#, now)
//!     .unwrap()
//!     .into_license(LicenseKey::generate(), TeamId::new(), UserId::ADMIN, now);
//!
//! let body = format!(
//!     r#"{{"licenseKey":"{}","hardwareIdentifier":"machine-0001","challenge":"nonce-1234567"}}"#,
//!     license.license_key
//! );
//! let request = ClientBody::parse(RequestKind::Verify, body.as_bytes()).unwrap();
//!
//! let settings = TeamSettings::default();
//! let blacklist = Blacklist::default();
//! let ctx = Context { settings: &settings, blacklist: &blacklist, license: Some(&license), catalog: None, grace_days: 0 };
//! let req = ClientRequest {
//!     kind: RequestKind::Verify,
//!     hardware_id: request.hardware_id.as_ref(),
//!     customer_id: None,
//!     product_id: None,
//!     version: None,
//!     branch: None,
//!     ip: "203.0.113.7".parse().unwrap(),
//!     country: None,
//! };
//! let decision = verify::decide(&ctx, &req, &[], &[], now).unwrap();
//! assert_eq!(decision.admission.hwid, Some(verify::RecordChange::Create));
//!
//! // A second device would exceed `hwidLimit: 1` once the first is recorded; see `store` for the
//! // atomic unit that records it.
//! let keys = TeamKeys::generate().unwrap();
//! let challenge = request.challenge.unwrap();
//! let response = keys.sign_challenge(challenge.as_str()).unwrap();
//! keys.public_keys().rsa.verify_challenge(challenge.as_str(), &response).unwrap();
//! # }
//! ```

pub mod api;
pub mod code;
pub mod crypto;
pub mod error;
pub mod expiry;
#[cfg(feature = "testing")]
pub mod fuzz;
pub mod idempotency;
pub mod ids;
pub mod key;
pub mod model;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod operations;
pub mod payments;
pub mod store;
pub mod time;
pub mod updates;
pub mod validate;
pub mod verify;

pub use code::ResultCode;
pub use error::{ApiError, FieldError, RateWindow, ValidationErrors};
pub use ids::*;
pub use key::LicenseKey;
pub use time::Timestamp;
