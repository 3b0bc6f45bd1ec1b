//! The sled store's failures: sled's, the disk's, and the store errors it decides.

use licensing_core::store::StoreError;

/// A failure of sled or of the disk, with its cause.
pub(crate) fn backend(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::backend_from("sled", e)
}

/// A failure as this store's own functions answer it: sled's or the disk's (a `sled::Error` or
/// an `io::Error` becomes one with `?`) or a store error decided here (so does a
/// [`StoreError`]); it becomes the [`StoreError`] the storage traits answer, with `?` again.
#[derive(Debug)]
pub(crate) struct SledError(StoreError);

impl From<sled::Error> for SledError {
    fn from(e: sled::Error) -> Self {
        Self(backend(e))
    }
}

impl From<std::io::Error> for SledError {
    fn from(e: std::io::Error) -> Self {
        Self(backend(e))
    }
}

impl From<StoreError> for SledError {
    fn from(e: StoreError) -> Self {
        Self(e)
    }
}

impl From<SledError> for StoreError {
    fn from(e: SledError) -> Self {
        e.0
    }
}

impl std::fmt::Display for SledError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What this store's own functions answer.
pub(crate) type SledResult<T> = Result<T, SledError>;
