//! What a running server keeps besides its store: caches (licenses, team contexts,
//! statistics), limiters, the recorders that write behind (usage, request history, key uses,
//! client events), the keyring, the country lookup, and the outbound clients (mail, webhooks,
//! the chat directory), each with the loop that flushes or delivers what it holds beside it.
//! Nothing here knows an operation: `app/` uses these, and `workers/` starts their loops.

pub mod chat;
pub mod client_events;
pub mod contexts;
pub mod geo;
pub mod key_uses;
pub mod keyring;
pub mod license_cache;
pub mod mail;
pub mod periodic;
pub mod providers;
pub mod ratelimit;
pub mod request_log;
pub mod stats;
pub mod usage;
pub mod webhooks;
