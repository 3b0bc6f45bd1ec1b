//! What the client API reads about a team on every request, kept in memory: the team record
//! (settings, features), its parsed key pairs and its compiled blacklist.
//!
//! Entries exist only for teams that exist, so the cache never grows past the number of teams.
//! Every write that changes what an entry holds (settings, features, blacklist entries) calls
//! [`TeamContexts::invalidate`]; a generation counter keeps a load that raced with such a write
//! from storing what it read before the write.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use licensing_core::TeamId;
use licensing_core::crypto::TeamKeys;

use crate::services::keyring::Keyring;
use licensing_core::model::Team;
use licensing_core::store::{BlacklistStore, StoreError, StoreResult, TeamStore};
use licensing_core::verify::Blacklist;

/// One team, ready for the client API.
#[derive(Debug)]
pub struct TeamContext {
    /// The record.
    pub team: Team,
    /// Its key pairs.
    pub keys: TeamKeys,
    /// Its blacklist.
    pub blacklist: Blacklist,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<TeamId, Arc<TeamContext>>,
    generation: u64,
}

/// The cache.
#[derive(Clone, Debug, Default)]
pub struct TeamContexts {
    inner: Arc<RwLock<Inner>>,
    keyring: Keyring,
}

impl TeamContexts {
    /// An empty cache that opens teams' keys with `keyring`.
    pub fn new(keyring: Keyring) -> Self {
        Self {
            inner: Arc::default(),
            keyring,
        }
    }

    /// The team's context, loading it on a miss; `None` when the team does not exist.
    pub async fn get<S: TeamStore + BlacklistStore>(
        &self,
        store: &S,
        team: TeamId,
    ) -> StoreResult<Option<Arc<TeamContext>>> {
        let generation = {
            let inner = self.read()?;
            if let Some(hit) = inner.entries.get(&team) {
                return Ok(Some(hit.clone()));
            }
            inner.generation
        };
        let Some(record) = store.get_team(team).await? else {
            return Ok(None);
        };
        let entries = store.list_blacklist(team).await?;
        let keys = self.keyring.open(&record).map_err(StoreError::Backend)?;
        let context = Arc::new(TeamContext {
            team: record,
            keys,
            blacklist: Blacklist::compile(&entries),
        });
        if let Ok(mut inner) = self.inner.write()
            && inner.generation == generation
        {
            inner.entries.insert(team, context.clone());
        }
        Ok(Some(context))
    }

    /// Drops the team's entry after a change to its settings, features or blacklist.
    pub fn invalidate(&self, team: TeamId) {
        match self.inner.write() {
            Ok(mut inner) => {
                inner.generation += 1;
                inner.entries.remove(&team);
            }
            Err(poisoned) => {
                // A panic elsewhere poisoned the lock: clear everything rather than serve stale.
                let mut inner = poisoned.into_inner();
                inner.generation += 1;
                inner.entries.clear();
                self.inner.clear_poison();
            }
        }
    }

    fn read(&self) -> StoreResult<std::sync::RwLockReadGuard<'_, Inner>> {
        self.inner
            .read()
            .map_err(|_| StoreError::Backend("team cache lock poisoned".into()))
    }
}
