//! What the client API reads about a team on every request, kept in memory: the team record
//! (settings, features), its parsed key pairs, its compiled blacklist, the client events its
//! webhook endpoints want, its entitlements' codes and its policies (which licenses inherit
//! live: a policy's change drops the entry like any other).
//!
//! Entries exist only for teams that exist, so the cache never grows past the number of teams.
//! Every write that changes what an entry holds (settings, features, blacklist entries, webhook
//! endpoints) calls
//! [`TeamContexts::invalidate`]; a generation counter keeps a load that raced with such a write
//! from storing what it read before the write.
//!
//! On PostgreSQL other instances change teams too: the database announces every change on
//! commit (`LISTEN licensing_team_changed`, see `changes.rs`), which drops the entry here within
//! milliseconds; as a bound should a notification be lost, entries also expire after
//! [`SHARED_MAX_AGE`].

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use licensing_core::TeamId;
use licensing_core::crypto::TeamKeys;

use crate::runtime::keyring::Keyring;
use licensing_core::EntitlementId;
use licensing_core::model::{ClientEvents, Policies, Team};
use licensing_core::store::{
    BlacklistStore, EntitlementStore, PolicyStore, StoreError, StoreResult, TeamStore, WebhookStore,
};
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
    /// The client events its enabled webhook endpoints want.
    pub client_events: ClientEvents,
    /// Its entitlements' codes, by id.
    pub entitlements: HashMap<EntitlementId, String>,
    /// Its policies: what licenses on them inherit.
    pub policies: Policies,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<TeamId, (Arc<TeamContext>, Instant)>,
    generation: u64,
}

/// How long an entry may serve when other instances share the store: the longest a change
/// made through another instance can go unseen if its notification is lost.
pub const SHARED_MAX_AGE: Duration = Duration::from_secs(30);

/// The cache.
#[derive(Clone, Debug, Default)]
pub struct TeamContexts {
    inner: Arc<RwLock<Inner>>,
    keyring: Keyring,
    /// Entries older than this are reloaded (none: kept until invalidated).
    max_age: Option<Duration>,
}

impl TeamContexts {
    /// An empty cache that opens teams' keys with `keyring`.
    pub fn new(keyring: Keyring) -> Self {
        Self {
            inner: Arc::default(),
            keyring,
            max_age: None,
        }
    }

    /// An empty cache whose entries expire after `max_age` (a store shared with other
    /// instances).
    pub fn expiring(keyring: Keyring, max_age: Duration) -> Self {
        Self {
            max_age: Some(max_age),
            ..Self::new(keyring)
        }
    }

    /// Drops every entry (the notifications of changes were interrupted).
    pub fn clear(&self) {
        let mut inner = match self.inner.write() {
            Ok(inner) => inner,
            Err(poisoned) => {
                self.inner.clear_poison();
                poisoned.into_inner()
            }
        };
        inner.generation += 1;
        inner.entries.clear();
    }

    /// The team's context, loading it on a miss; `None` when the team does not exist.
    pub async fn get<
        S: TeamStore + BlacklistStore + WebhookStore + EntitlementStore + PolicyStore,
    >(
        &self,
        store: &S,
        team: TeamId,
    ) -> StoreResult<Option<Arc<TeamContext>>> {
        let generation = {
            let inner = self.read()?;
            if let Some((hit, loaded)) = inner.entries.get(&team)
                && self.max_age.is_none_or(|max| loaded.elapsed() < max)
            {
                return Ok(Some(hit.clone()));
            }
            inner.generation
        };
        let Some(record) = store.get_team(team).await? else {
            return Ok(None);
        };
        let entries = store.list_blacklist(team).await?;
        let endpoints = store.list_webhooks(team).await?;
        let entitlements = store
            .list_entitlements(team)
            .await?
            .into_iter()
            .map(|e| (e.id, e.code))
            .collect();
        let policies = Policies::new(store.list_policies(team).await?);
        let keys = self.keyring.open(&record).map_err(StoreError::backend)?;
        let context = Arc::new(TeamContext {
            team: record,
            keys,
            blacklist: Blacklist::compile(&entries),
            client_events: ClientEvents::of(&endpoints),
            entitlements,
            policies,
        });
        if let Ok(mut inner) = self.inner.write()
            && inner.generation == generation
        {
            inner
                .entries
                .insert(team, (context.clone(), Instant::now()));
        }
        Ok(Some(context))
    }

    /// Drops the team's entry after a change to its settings, features, blacklist, webhook
    /// endpoints, entitlements, policies or products.
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
            .map_err(|_| StoreError::backend("team cache lock poisoned"))
    }
}
