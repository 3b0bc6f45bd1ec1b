//! The two stores behind `licensing-core`'s traits, side by side, and the choice between them.
//!
//! - [`sled`]: the embedded default, in the data directory; one process.
//! - [`postgres`]: PostgreSQL, for several instances on one database.
//! - [`AnyStore`]: the one the server runs on, chosen at start-up.
//! - [`shared`]: what a backend offers to several instances (shared rate-limit counters, the
//!   feed of other instances' changes).
//!
//! Both split their code by aggregate (teams and API keys, licenses and devices with the client
//! API's atomic unit, customers, products and releases, the rest) and pass core's store suite.

mod any;
pub mod open;
pub mod postgres;
mod refresh;
pub mod shared;
pub mod sled;

use std::net::IpAddr;

pub use any::AnyStore;
pub use open::{
    OpenError, check_database_url, compact_store, open_configured_store, open_store,
    open_store_with_cache, remove_migration_copies,
};
pub use postgres::DEFAULT_POOL_SIZE;
pub use sled::{DEFAULT_CACHE_MB, SledStore, migration_copies};
pub(crate) use sled::{compact, finish_compaction};

/// The first 16 bytes of SHA-256 of a hardware identifier: the key of a license's record of a
/// device, in both stores.
pub(crate) fn hwid_digest(identifier: &licensing_core::validate::HardwareId) -> [u8; 16] {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(identifier.as_str().as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// An address as 16 bytes (IPv4 as IPv4-mapped IPv6): the key of a license's record of an
/// address, in both stores.
pub(crate) fn addr16(ip: IpAddr) -> [u8; 16] {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}
