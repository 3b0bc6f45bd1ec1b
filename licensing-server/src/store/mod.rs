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

/// A store's own error type `$name`, answered by its own functions as `$result<T>`: a failure
/// of its database (each `$cause` becomes one with `?`, a backend failure of `$backend`) or a
/// store error it decided (so does a [`StoreError`](licensing_core::store::StoreError)); it
/// becomes the `StoreError` the storage traits answer, with `?` again.
macro_rules! store_error_type {
    ($name:ident, $result:ident, $backend:literal, [$($cause:ty),* $(,)?]) => {
        #[doc = concat!("A failure as the ", $backend, " store's own functions answer it.")]
        #[derive(Debug)]
        pub(crate) struct $name(licensing_core::store::StoreError);

        $(
            impl From<$cause> for $name {
                fn from(e: $cause) -> Self {
                    Self(licensing_core::store::StoreError::backend_from($backend, e))
                }
            }
        )*

        impl From<licensing_core::store::StoreError> for $name {
            fn from(e: licensing_core::store::StoreError) -> Self {
                Self(e)
            }
        }

        impl From<$name> for licensing_core::store::StoreError {
            fn from(e: $name) -> Self {
                e.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        #[doc = concat!("What the ", $backend, " store's own functions answer.")]
        pub(crate) type $result<T> = Result<T, $name>;
    };
}
use store_error_type;

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
