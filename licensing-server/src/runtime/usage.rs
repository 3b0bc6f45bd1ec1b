//! Counting client requests for the statistics and blacklist hits, without a disk write per
//! request: counts gather in memory per team and hour and are added to the store's hourly
//! buckets by a background task every few seconds, at shutdown, and before a team's statistics
//! or blacklist are read (so what the developer API shows includes every request answered).
//!
//! Memory is bounded: pending counts exist only for teams that exist, per hour (at most two
//! between flushes), per country (about 250) and per product the license grants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use licensing_core::model::{HourlyStats, RequestType};
use licensing_core::store::{BlacklistStore, StatsStore, StoreResult};
use licensing_core::{BlacklistId, ProductId, ResultCode, TeamId, Timestamp};

/// How often pending counts are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct Pending {
    hours: HashMap<(TeamId, i64), HourlyStats>,
    hits: HashMap<TeamId, HashMap<BlacklistId, u64>>,
}

/// The recorder.
#[derive(Clone, Debug, Default)]
pub struct UsageRecorder {
    pending: Arc<Mutex<Pending>>,
}

/// One client request to count.
#[derive(Clone, Copy, Debug)]
pub struct Counted<'a> {
    /// The team.
    pub team: TeamId,
    /// Verify, heartbeat or download.
    pub kind: RequestType,
    /// The client's country (alpha-2), when known.
    pub country: Option<&'a str>,
    /// The product named by the request, when the license grants it.
    pub product: Option<ProductId>,
    /// The answer's code: `VALID`, or the refusal's (counted per code).
    pub code: ResultCode,
    /// When.
    pub at: Timestamp,
}

impl UsageRecorder {
    /// Counts one request.
    pub fn count(&self, request: &Counted<'_>) {
        let hour = HourlyStats::hour_of(request.at);
        let mut pending = self.lock();
        let bucket = pending
            .hours
            .entry((request.team, hour))
            .or_insert_with(|| HourlyStats {
                hour,
                ..HourlyStats::default()
            });
        let success = request.code.is_success();
        bucket.record(request.kind, success, request.country);
        if !success {
            bucket.record_refusal(request.code);
        }
        if let Some(product) = request.product {
            bucket.record_product(product);
        }
    }

    /// Counts a hit of a blacklist entry.
    pub fn hit(&self, team: TeamId, entry: BlacklistId) {
        *self
            .lock()
            .hits
            .entry(team)
            .or_default()
            .entry(entry)
            .or_default() += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // Counting never panics while holding the lock; if something did, keep counting.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes every pending count. Counts that could not be written are kept for the next try.
    pub async fn flush<S: StatsStore + BlacklistStore>(&self, store: &S) -> StoreResult<()> {
        let taken = std::mem::take(&mut *self.lock());
        self.write(store, taken).await
    }

    /// Writes the pending counts of one team.
    pub async fn flush_team<S: StatsStore + BlacklistStore>(
        &self,
        store: &S,
        team: TeamId,
    ) -> StoreResult<()> {
        let taken = {
            let mut pending = self.lock();
            let mut taken = Pending::default();
            let hours: Vec<(TeamId, i64)> = pending
                .hours
                .keys()
                .filter(|(t, _)| *t == team)
                .copied()
                .collect();
            for key in hours {
                if let Some(bucket) = pending.hours.remove(&key) {
                    taken.hours.insert(key, bucket);
                }
            }
            if let Some(hits) = pending.hits.remove(&team) {
                taken.hits.insert(team, hits);
            }
            taken
        };
        self.write(store, taken).await
    }

    async fn write<S: StatsStore + BlacklistStore>(
        &self,
        store: &S,
        mut taken: Pending,
    ) -> StoreResult<()> {
        let mut failure = None;
        let hours: Vec<(TeamId, i64)> = taken.hours.keys().copied().collect();
        for key in hours {
            if let Some(bucket) = taken.hours.get(&key) {
                match store.add_hourly(key.0, bucket).await {
                    Ok(()) => {
                        taken.hours.remove(&key);
                    }
                    Err(e) => failure = Some(e),
                }
            }
        }
        let teams: Vec<TeamId> = taken.hits.keys().copied().collect();
        for team in teams {
            if let Some(hits) = taken.hits.get(&team) {
                let list: Vec<(BlacklistId, u64)> = hits.iter().map(|(k, v)| (*k, *v)).collect();
                match store.add_blacklist_hits(team, &list).await {
                    Ok(()) => {
                        taken.hits.remove(&team);
                    }
                    Err(e) => failure = Some(e),
                }
            }
        }
        if taken.hours.is_empty() && taken.hits.is_empty() {
            return Ok(());
        }
        // Put back what was not written, merged with what arrived meanwhile.
        let mut pending = self.lock();
        for (key, bucket) in taken.hours {
            pending
                .hours
                .entry(key)
                .and_modify(|b| b.merge(&bucket))
                .or_insert(bucket);
        }
        for (team, hits) in taken.hits {
            let entry = pending.hits.entry(team).or_default();
            for (id, n) in hits {
                *entry.entry(id).or_default() += n;
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Flushes every [`FLUSH_EVERY`] until `stop` turns true, then once more.
    pub async fn run<S: StatsStore + BlacklistStore>(
        self,
        store: S,
        stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let flush = || self.flush(&store);
        let what = "writing request statistics";
        crate::runtime::periodic::flush_every(FLUSH_EVERY, stop, what, flush).await;
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::store::MemoryStore;

    use super::*;

    /// A store, a team, a recorder, and a moment within an hour.
    fn setting() -> (MemoryStore, TeamId, UsageRecorder, Timestamp) {
        let at = Timestamp::parse("2026-11-22T10:15:00Z").unwrap();
        (
            MemoryStore::default(),
            TeamId::new(),
            UsageRecorder::default(),
            at,
        )
    }

    /// A flood of requests from many addresses, countries and licenses keeps one bucket per
    /// team and hour, and a flush empties it.
    #[tokio::test]
    async fn a_flood_keeps_one_bucket_per_team_and_hour() {
        let (store, team, recorder, at) = setting();
        let countries = ["FI", "SE", "DE", "US", "JP"];
        for n in 0..20_000 {
            recorder.count(&Counted {
                team,
                kind: RequestType::Verify,
                code: if n % 3 != 0 {
                    ResultCode::Valid
                } else {
                    ResultCode::LicenseExpired
                },
                country: Some(countries[n % countries.len()]),
                product: None,
                at: Timestamp::from_millis(at.as_millis() + (n as i64 % 1000)),
            });
        }
        assert_eq!(recorder.lock().hours.len(), 1);
        recorder.flush(&store).await.unwrap();
        assert!(recorder.lock().hours.is_empty());
        let buckets = store.hourly_since(team, 0).await.unwrap();
        assert_eq!(buckets[0].successful + buckets[0].failed, 20_000);
    }

    #[tokio::test]
    async fn counts_reach_the_store_merged_per_hour() {
        let (store, team, recorder, at) = setting();
        for code in [
            ResultCode::Valid,
            ResultCode::Valid,
            ResultCode::HwidLimitReached,
        ] {
            recorder.count(&Counted {
                team,
                kind: RequestType::Verify,
                code,
                country: Some("FI"),
                product: None,
                at,
            });
        }
        recorder.flush_team(&store, TeamId::new()).await.unwrap();
        assert!(store.hourly_since(team, 0).await.unwrap().is_empty());
        recorder.flush(&store).await.unwrap();
        recorder.count(&Counted {
            team,
            kind: RequestType::Heartbeat,
            code: ResultCode::Valid,
            country: None,
            product: None,
            at,
        });
        recorder.flush_team(&store, team).await.unwrap();
        let buckets = store.hourly_since(team, 0).await.unwrap();
        assert_eq!(buckets.len(), 1);
        assert_eq!(buckets[0].successful, 3);
        assert_eq!(buckets[0].failed, 1);
        assert_eq!(buckets[0].by_type.heartbeat, 1);
        assert_eq!(buckets[0].countries["FI"], 3);
        assert_eq!(buckets[0].refusals[&ResultCode::HwidLimitReached], 1);
    }
}
