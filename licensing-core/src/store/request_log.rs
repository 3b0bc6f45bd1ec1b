//! (ext) The request history of licenses ([`crate::model::RequestLogEntry`]).

use std::future::Future;

use super::{Page, StoreResult};
use crate::api::requests::RequestLogQuery;
use crate::model::RequestLogEntry;
use crate::time::Timestamp;
use crate::{LicenseId, TeamId};

/// Every client request that reached a license, kept for a while. Entries are written behind
/// the answers, in batches: an entry need not be durable when [`append_requests`] returns, and a
/// crash may lose the last moments of history (never anything else).
///
/// [`append_requests`]: RequestLogStore::append_requests
pub trait RequestLogStore: Send + Sync {
    /// Adds entries (of any teams), as they are.
    fn append_requests(
        &self,
        entries: &[RequestLogEntry],
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// One page of the license's entries matching the query, newest first unless the query says
    /// otherwise (entries of one millisecond last added first, or first added first).
    fn list_requests(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &RequestLogQuery,
    ) -> impl Future<Output = StoreResult<Page<RequestLogEntry>>> + Send;
    /// Deletes each license's oldest entries beyond its newest `per_license` (any team), so
    /// that one license's flood never pushes its team's other licenses out of the history;
    /// how many.
    fn cap_license_requests(
        &self,
        per_license: u64,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Deletes the entries (any team) older than `before`, and each team's oldest beyond its
    /// newest `per_team`; how many.
    fn prune_requests(
        &self,
        before: Timestamp,
        per_team: u64,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}
