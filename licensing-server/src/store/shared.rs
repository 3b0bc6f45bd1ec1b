//! What a backend offers beyond core's traits, for servers that run as several instances on one
//! database: rate-limit counters they all count in, announcements of changes another instance
//! made, and release files every instance serves. Each is optional: the embedded store serves
//! one process, which keeps its counters in memory, sees every change it makes and keeps
//! release files on its own disk.

use std::path::Path;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use licensing_core::TeamId;
use licensing_core::store::StoreError;

/// A fixed window of a sliding-window estimate: the window now counting, and how much of the
/// one before it still lies in the sliding window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Its start, in milliseconds since the Unix epoch (a multiple of `length`).
    pub start: i64,
    /// Its length in milliseconds.
    pub length: i64,
    /// The share of the previous window still inside the sliding one (0 to 1).
    pub weight: f64,
}

/// Rate-limit counters that every instance shares, one per limit `name` and `key`.
///
/// The estimate of a key's use is the current window's count plus the previous window's count
/// times its weight, rounded up.
pub trait SharedCounters: Send + Sync {
    /// Counts one request when the estimate stays within `limit` with it, in one atomic step:
    /// the estimate after counting, or `None` when refused (nothing counted).
    fn admit<'a>(
        &'a self,
        name: &'static str,
        key: &'a [u8],
        window: Window,
        limit: u32,
    ) -> BoxFuture<'a, Result<Option<f64>, StoreError>>;

    /// The estimate now, without counting.
    fn estimate<'a>(
        &'a self,
        name: &'static str,
        key: &'a [u8],
        window: Window,
    ) -> BoxFuture<'a, Result<f64, StoreError>>;

    /// Removes the counters of limit `name` of windows that started before `before`.
    fn sweep(&self, name: &'static str, before: i64) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// A change to what instances cache, as announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The team's cached state (its record, blacklist, webhook endpoints, entitlements).
    Team(TeamId),
    /// The license with this key, or its records' standing (a forgotten or dropped record).
    License(TeamId, String),
    /// Anything may have changed (an announcement could not be read).
    Any,
}

/// The changes to cached state, as announced.
pub type Changes = BoxStream<'static, Result<Change, StoreError>>;

/// A stored file's bytes, a chunk at a time.
pub type Chunks = BoxStream<'static, std::io::Result<Bytes>>;

/// Announcements of changes to cached state (a team's, a license's), made by any instance.
pub trait ChangeFeed: Send + Sync {
    /// Connects and listens: each item names what changed. The stream ends or fails when the connection is lost; announcements may then
    /// have been missed.
    fn listen(&self) -> BoxFuture<'_, Result<Changes, StoreError>>;
}

/// Release files kept in the store itself, so that every instance serves every file.
pub trait Blobs: Send + Sync {
    /// Stores the complete file at `path` as `key`, whole or not at all.
    fn put<'a>(&'a self, key: &'a str, path: &'a Path) -> BoxFuture<'a, std::io::Result<()>>;

    /// A stored file's whole size and its bytes from byte `start` on (none when `start` is at
    /// or past its end), a chunk at a time; `None` when it is missing.
    fn get<'a>(
        &'a self,
        key: &'a str,
        start: u64,
    ) -> BoxFuture<'a, std::io::Result<Option<(u64, Chunks)>>>;

    /// The keys of every stored file.
    fn keys(&self) -> BoxFuture<'_, std::io::Result<Vec<String>>>;

    /// Removes a stored file; a missing file is fine.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, std::io::Result<()>>;
}
