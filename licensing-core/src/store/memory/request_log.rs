//! Request history in memory.

use super::*;
use crate::api::requests::RequestLogQuery;
use crate::model::RequestLogEntry;

impl RequestLogStore for MemoryStore {
    async fn append_requests(&self, entries: &[RequestLogEntry]) -> StoreResult<()> {
        self.with(|s| {
            s.requests.extend_from_slice(entries);
            Ok(())
        })
    }

    async fn list_requests(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &RequestLogQuery,
    ) -> StoreResult<Page<RequestLogEntry>> {
        self.with(|s| {
            // Stable: entries of one millisecond stay in the order they were added.
            let mut items: Vec<RequestLogEntry> = s
                .requests
                .iter()
                .filter(|e| e.team_id == team && e.license_id == license && query.matches(e))
                .cloned()
                .collect();
            if query.newest_first() {
                items.reverse();
                items.sort_by_key(|e| std::cmp::Reverse(e.at));
            } else {
                items.sort_by_key(|e| e.at);
            }
            let total = items.len() as u64;
            let (items, has_next_page) = query.paging.slice(items);
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn cap_license_requests(&self, per_license: u64) -> StoreResult<u64> {
        self.with(|s| {
            Ok(keep_newest(&mut s.requests, per_license, |e| {
                (e.team_id, Some(e.license_id))
            }))
        })
    }

    async fn prune_requests(&self, before: Timestamp, per_team: u64) -> StoreResult<u64> {
        self.with(|s| {
            let count = s.requests.len() as u64;
            s.requests.retain(|e| e.at >= before);
            keep_newest(&mut s.requests, per_team, |e| (e.team_id, None));
            Ok(count - s.requests.len() as u64)
        })
    }
}

/// Keeps the newest `cap` entries of each group `group_of` names (the later added first among
/// entries of one time); how many went.
fn keep_newest(
    requests: &mut Vec<RequestLogEntry>,
    cap: u64,
    group_of: impl Fn(&RequestLogEntry) -> (TeamId, Option<crate::LicenseId>),
) -> u64 {
    let count = requests.len();
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| requests[b].at.cmp(&requests[a].at).then(b.cmp(&a)));
    let mut kept: HashMap<(TeamId, Option<crate::LicenseId>), u64> = HashMap::new();
    let mut keep = vec![false; requests.len()];
    for i in order {
        let n = kept.entry(group_of(&requests[i])).or_default();
        if *n < cap {
            *n += 1;
            keep[i] = true;
        }
    }
    let mut i = 0;
    requests.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    (count - requests.len()) as u64
}
