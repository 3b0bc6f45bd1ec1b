//! `licensing-sdk`: the typed Rust client of the licensing service.
//!
//! | type | for |
//! |---|---|
//! | [`LicenseClient`] | desktop applications: verify at start-up, heartbeats (one call or a background [`HeartbeatTask`]), floating sessions ([`Session`]), encrypted release downloads, offline grace and license files |
//! | [`blocking::LicenseClient`] | the same from a plain `fn main` without an async runtime |
//! | [`DevClient`] | vendors' back ends: every developer endpoint, typed, with `all_*` helpers that walk every page and release uploads from a path or bytes |
//! | [`LicenseClient::check_for_update`] | (ext) Rust applications updating themselves: the newest release for this platform, and a download checked against the team's (or the vendor's) signing keys |
//! | [`hwid`] | a stable, salted identifier of this machine |
//!
//! Every answer is checked before it counts: the `X-Signature` header must verify with the
//! team's Ed25519 key over the exact bytes sent and received, and a success must also carry a
//! `challengeResponse` that verifies with the team's RSA key over the fresh challenge the SDK
//! sent. Anything else is [`Error::Forged`]: fail closed.
//!
//! Request and response types are `licensing-core`'s, re-exported as [`core`].
//!
//! ```no_run
//! use licensing_sdk::core::api::requests::ClientBody;
//! use licensing_sdk::core::{LicenseKey, TeamId};
//! use licensing_sdk::{LicenseClient, hwid};
//!
//! # async fn start() -> Result<(), Box<dyn std::error::Error>> {
//! let team: TeamId = "6f9619ff-8b86-4011-b42d-00c04fc964ff".parse()?;
//! // The team's public keys, as `GET {dev}/public-key` gives them (usually compiled in).
//! let public_key = std::env::var("APP_PUBLIC_KEY")?;
//! let signing_key = std::env::var("APP_SIGNING_KEY")?;
//! let client = LicenseClient::new("https://licensing.example.com", team, &public_key, &signing_key)?;
//! let mut body = ClientBody::new(LicenseKey::parse("ABCDE-12345-FGHIJ-67890-KLMNO")?);
//! body.hardware_id = Some(hwid::hardware_id("my-app")?);
//! let verified = client.verify(&body).await?;
//! println!("licensed until {:?}", verified.data.license.expiration_date);
//! # Ok(()) }
//! ```

mod client;
mod dev;
mod download;
mod error;
pub mod hwid;
mod license_file;
mod offline;
mod session;
mod updates;
mod usage;
mod watch;
pub mod webhooks;

pub mod blocking;

pub use client::{CheckedOut, Heartbeat, LicenseClient, Verified, this_device};
pub use dev::{ArtifactUpload, DevClient, ReleaseUpload, RetryPolicy, Upload};
pub use download::{DownloadRequest, ReleaseInfo};
pub use error::Error;
pub use license_file::{CLOCK_SLACK_SECONDS, Clock, FileError, LicenseFile};
pub use licensing_core as core;
pub use offline::OfflineCache;
pub use session::{OnSessionChange, Session, SessionState};
pub use updates::{Update, UpdateArtifact};
pub use usage::{UsageRecorded, new_event_id};
pub use watch::{HeartbeatSchedule, HeartbeatTask, LicenseState, OnChange};
