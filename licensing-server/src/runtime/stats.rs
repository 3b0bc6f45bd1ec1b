//! `GET {dev}/statistics`: assembled from the store's totals and hourly buckets, cached for 15
//! minutes per team; and the dashboard's headline counts ([`OverviewCache`]), kept a few
//! seconds and dropped by every change to the team.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use licensing_core::model::{HourlyStats, Overview, Statistics};
use licensing_core::store::{BlacklistStore, StatsStore, StoreError};
use licensing_core::{TeamId, Timestamp};

use crate::runtime::usage::UsageRecorder;

/// How long an answer is reused.
pub const CACHE_TTL: Duration = Duration::from_secs(15 * 60);

/// When an answer was computed, and the answer.
type Entry = (Instant, Arc<Statistics>);

/// The per-team cache. It holds one entry per team that asked, and drops stale entries when it
/// stores a new one, so it never grows past the number of teams.
#[derive(Clone, Debug, Default)]
pub struct StatsCache {
    entries: Arc<Mutex<HashMap<TeamId, Entry>>>,
}

impl StatsCache {
    /// The team's statistics, from the cache when fresh.
    pub async fn get<S: StatsStore + BlacklistStore>(
        &self,
        store: &S,
        usage: &UsageRecorder,
        team: TeamId,
        now: Timestamp,
    ) -> Result<Arc<Statistics>, StoreError> {
        if let Some(hit) = self.fresh(team) {
            return Ok(hit);
        }
        // Counts gathered in memory reach the store before the answer is computed.
        usage.flush_team(store, team).await?;
        let stats = Arc::new(compute(store, team, now).await?);
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
            entries.insert(team, (Instant::now(), stats.clone()));
        }
        Ok(stats)
    }

    fn fresh(&self, team: TeamId) -> Option<Arc<Statistics>> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(&team)
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, s)| s.clone())
    }
}

async fn compute<S: StatsStore>(
    store: &S,
    team: TeamId,
    now: Timestamp,
) -> Result<Statistics, StoreError> {
    let hour_ago = Timestamp::from_millis(now.as_millis() - 3_600_000);
    let overview = store.overview(team, hour_ago).await?;
    let since = HourlyStats::hour_of(now) - 30 * 24 + 1;
    let buckets = store.hourly_since(team, since).await?;
    let top_products = store.top_products(team, 5).await?;
    Ok(Statistics::compute(overview, &buckets, top_products, now))
}

/// How long the dashboard's headline counts are reused: the longest a license's first request
/// in an hour, a license or customer created through another instance (which announces only
/// changes to and deletions of licenses), or a change whose announcement was lost, takes to
/// show. A change made through this instance, or announced by another, shows at once.
pub const OVERVIEW_MAX_AGE: Duration = Duration::from_secs(10);

/// One team's counts, and how many changes dropped them (a count read before a change is not
/// kept after it).
#[derive(Debug, Default)]
struct OverviewSlot {
    changes: u64,
    kept: Option<(Instant, Overview)>,
}

/// The dashboard's headline counts (licenses, customers, products, licenses active in the last
/// hour) per team: counting the active licenses walks the team's activity index, a few
/// milliseconds at 10,000 active licenses, on every page view. Entries live
/// [`OVERVIEW_MAX_AGE`] and are dropped by every operation that may change the team (as the
/// client API's cached licenses are) and by other instances' announced changes. One slot per
/// team that asked.
#[derive(Clone, Debug, Default)]
pub struct OverviewCache {
    slots: Arc<Mutex<HashMap<TeamId, OverviewSlot>>>,
}

impl OverviewCache {
    /// The team's counts: kept ones when fresh, else `count`'s, kept unless the team changed
    /// meanwhile.
    pub async fn get<F, Fut>(&self, team: TeamId, count: F) -> Result<Overview, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Overview, StoreError>>,
    {
        let began = {
            let mut slots = self.lock();
            let slot = slots.entry(team).or_default();
            if let Some((at, overview)) = &slot.kept
                && at.elapsed() < OVERVIEW_MAX_AGE
            {
                return Ok(overview.clone());
            }
            slot.changes
        };
        let counted_at = Instant::now();
        let overview = count().await?;
        if let Some(slot) = self.lock().get_mut(&team)
            && slot.changes == began
        {
            slot.kept = Some((counted_at, overview.clone()));
        }
        Ok(overview)
    }

    /// Drops the team's counts: it may have changed.
    pub fn forget(&self, team: TeamId) {
        if let Some(slot) = self.lock().get_mut(&team) {
            slot.changes += 1;
            slot.kept = None;
        }
    }

    /// Drops every team's counts (changes from other instances may have gone unannounced).
    pub fn clear(&self) {
        for slot in self.lock().values_mut() {
            slot.changes += 1;
            slot.kept = None;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TeamId, OverviewSlot>> {
        // Nothing panics while holding the lock; if something did, the slots are still whole.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(licenses: u64) -> Overview {
        Overview {
            total_licenses: licenses,
            ..Overview::default()
        }
    }

    #[tokio::test]
    async fn overview_counts_are_kept_until_the_team_changes() {
        let cache = OverviewCache::default();
        let (team, other) = (TeamId::new(), TeamId::new());
        let first = cache.get(team, || async { Ok(counts(1)) }).await.unwrap();
        assert_eq!(first.total_licenses, 1);
        // Kept: not counted again.
        let kept = cache.get(team, || async { Ok(counts(2)) }).await.unwrap();
        assert_eq!(kept.total_licenses, 1);
        // Another team's change leaves them; the team's own drops them.
        cache.forget(other);
        assert_eq!(
            cache
                .get(team, || async { Ok(counts(2)) })
                .await
                .unwrap()
                .total_licenses,
            1
        );
        cache.forget(team);
        assert_eq!(
            cache
                .get(team, || async { Ok(counts(3)) })
                .await
                .unwrap()
                .total_licenses,
            3
        );
        cache.clear();
        assert_eq!(
            cache
                .get(team, || async { Ok(counts(4)) })
                .await
                .unwrap()
                .total_licenses,
            4
        );
    }

    #[tokio::test]
    async fn a_count_that_raced_with_a_change_is_not_kept() {
        let cache = OverviewCache::default();
        let team = TeamId::new();
        // The change lands while the count is being taken: the count answers its own caller
        // but the next one counts again.
        let raced = cache
            .get(team, || async {
                cache.forget(team);
                Ok(counts(1))
            })
            .await
            .unwrap();
        assert_eq!(raced.total_licenses, 1);
        let next = cache.get(team, || async { Ok(counts(2)) }).await.unwrap();
        assert_eq!(next.total_licenses, 2);
    }

    #[tokio::test]
    async fn a_failed_count_is_not_kept() {
        let cache = OverviewCache::default();
        let team = TeamId::new();
        let failed = cache
            .get(team, || async {
                Err(StoreError::backend("down".to_owned()))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(
            cache
                .get(team, || async { Ok(counts(5)) })
                .await
                .unwrap()
                .total_licenses,
            5
        );
    }
}
