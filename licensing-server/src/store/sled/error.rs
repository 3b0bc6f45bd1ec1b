//! The sled store's failures: sled's, the disk's, and the store errors it decides.

use licensing_core::store::StoreError;

/// A failure of sled or of the disk, with its cause.
pub(crate) fn backend(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::backend_from("sled", e)
}

// A failure of sled or of the disk (a `sled::Error` or an `io::Error` becomes one with `?`) or
// a store error decided here.
crate::store::store_error_type!(SledError, SledResult, "sled", [sled::Error, std::io::Error]);
