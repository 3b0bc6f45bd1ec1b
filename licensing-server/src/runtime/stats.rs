//! `GET {dev}/statistics`: assembled from the store's totals and hourly buckets, cached for 15
//! minutes per team.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use licensing_core::model::{HourlyStats, Statistics};
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
