//! `lastUsedAt` of API keys, written behind: every authenticated request records its key's use
//! here in memory, and a task writes the latest use of each key to the store once a minute (and
//! at shutdown). A key's list answer overlays what is still waiting, so it is exact to the
//! request. Memory is bounded by the number of keys used since the last write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use licensing_core::model::ApiKeyRecord;
use licensing_core::store::{ApiKeyStore, StoreResult};
use licensing_core::{ApiKeyId, TeamId, Timestamp};

/// How often waiting uses are written.
const WRITE_EVERY: Duration = Duration::from_secs(60);

/// Key uses waiting to be written.
#[derive(Clone, Debug, Default)]
pub struct KeyUses {
    pending: Arc<Mutex<HashMap<(TeamId, ApiKeyId), Timestamp>>>,
}

impl KeyUses {
    /// Records that `key` of `team` authenticated a request at `now`.
    pub fn record(&self, team: TeamId, key: ApiKeyId, now: Timestamp) {
        if let Ok(mut pending) = self.pending.lock() {
            let at = pending.entry((team, key)).or_insert(now);
            if *at < now {
                *at = now;
            }
        }
    }

    /// `keys` with the uses not yet written.
    pub fn overlay(&self, keys: &mut [ApiKeyRecord]) {
        let Ok(pending) = self.pending.lock() else {
            return;
        };
        for key in keys {
            if let Some(at) = pending.get(&(key.team_id, key.id))
                && key.last_used_at.is_none_or(|last| last < *at)
            {
                key.last_used_at = Some(*at);
            }
        }
    }

    /// Writes what waits.
    pub async fn flush<S: ApiKeyStore>(&self, store: &S) -> StoreResult<()> {
        let uses: Vec<(TeamId, ApiKeyId, Timestamp)> = match self.pending.lock() {
            Ok(mut pending) => pending
                .drain()
                .map(|((team, key), at)| (team, key, at))
                .collect(),
            Err(_) => return Ok(()),
        };
        if uses.is_empty() {
            return Ok(());
        }
        let written = store.record_api_key_use(&uses).await;
        if written.is_err() {
            // Put them back for the next round.
            for (team, key, at) in uses {
                self.record(team, key, at);
            }
        }
        written
    }

    /// Writes waiting uses every minute until `stop`, then once more.
    pub async fn run<S: ApiKeyStore>(self, store: S, stop: tokio::sync::watch::Receiver<bool>) {
        let flush = || self.flush(&store);
        crate::runtime::periodic::flush_every(WRITE_EVERY, stop, "writing API key uses", flush)
            .await;
    }
}
