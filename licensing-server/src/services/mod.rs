//! Operations that span several stores or need more than one call into core.

pub mod audit;
pub mod changes;
pub mod chat;
pub mod client_events;
pub mod contexts;
pub mod geo;
pub(crate) mod idempotency_purger;
pub mod key_uses;
pub mod keyring;
pub mod license_cache;
pub mod mail;
pub mod periodic;
pub mod ratelimit;
pub mod request_log;
pub(crate) mod session_purger;
pub(crate) mod session_sweeper;
pub mod staff;
pub mod stats;
pub mod teams;
pub mod two_step;
pub mod usage;
pub mod webhooks;
