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
            let count = s.requests.len();
            let mut order: Vec<usize> = (0..s.requests.len()).collect();
            order.sort_by(|&a, &b| s.requests[b].at.cmp(&s.requests[a].at).then(b.cmp(&a)));
            let mut kept: HashMap<(TeamId, crate::LicenseId), u64> = HashMap::new();
            let mut keep = vec![false; s.requests.len()];
            for i in order {
                let e = &s.requests[i];
                let n = kept.entry((e.team_id, e.license_id)).or_default();
                if *n < per_license {
                    *n += 1;
                    keep[i] = true;
                }
            }
            let mut i = 0;
            s.requests.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            Ok((count - s.requests.len()) as u64)
        })
    }

    async fn prune_requests(&self, before: Timestamp, per_team: u64) -> StoreResult<u64> {
        self.with(|s| {
            let count = s.requests.len();
            s.requests.retain(|e| e.at >= before);
            // Newest first per team: keep the first `per_team` of each.
            let mut order: Vec<usize> = (0..s.requests.len()).collect();
            order.sort_by(|&a, &b| s.requests[b].at.cmp(&s.requests[a].at).then(b.cmp(&a)));
            let mut kept: HashMap<TeamId, u64> = HashMap::new();
            let mut keep = vec![false; s.requests.len()];
            for i in order {
                let n = kept.entry(s.requests[i].team_id).or_default();
                if *n < per_team {
                    *n += 1;
                    keep[i] = true;
                }
            }
            let mut i = 0;
            s.requests.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            Ok((count - s.requests.len()) as u64)
        })
    }
}
