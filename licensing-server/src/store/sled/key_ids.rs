//! License ids by license key, remembered from earlier lookups, so that a client request finds
//! its license with one read instead of two (the key's lookup entry, then the license).
//!
//! A remembered id is only a guess: the license read by it is used only when it is still in the
//! team with that very key; anything else (a license deleted, or its key changed) falls back to
//! the stored lookup, which is always right. So nothing here needs to be kept in step with
//! writes, and a wrong entry costs one read. The memory is bounded: a shard that fills up is
//! emptied and refills from the requests that follow.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::RwLock;

use licensing_core::{LicenseId, LicenseKey, TeamId};

/// Shards, each with its own lock (held for one map operation, never across an await).
const SHARDS: usize = 64;
/// Entries per shard: 262,144 in all, about 20 MiB at most.
const PER_SHARD: usize = 4096;

type Shard = HashMap<(TeamId, LicenseKey), LicenseId>;

pub(super) struct KeyIds {
    hasher: RandomState,
    shards: Box<[RwLock<Shard>]>,
}

impl Default for KeyIds {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
        }
    }
}

impl KeyIds {
    fn shard(&self, team: TeamId, key: &LicenseKey) -> &RwLock<Shard> {
        let i = self.hasher.hash_one((team, key)) as usize % SHARDS;
        &self.shards[i]
    }

    /// The id last seen with `key` in `team`, if remembered.
    pub(super) fn get(&self, team: TeamId, key: &LicenseKey) -> Option<LicenseId> {
        self.shard(team, key)
            .read()
            .ok()
            .and_then(|m| m.get(&(team, *key)).copied())
    }

    /// Remembers that `key` named `id` in `team`.
    pub(super) fn remember(&self, team: TeamId, key: LicenseKey, id: LicenseId) {
        if let Ok(mut m) = self.shard(team, &key).write() {
            if m.len() >= PER_SHARD && !m.contains_key(&(team, key)) {
                m.clear();
            }
            m.insert((team, key), id);
        }
    }

    /// Forgets `key` in `team` (it named no license).
    pub(super) fn forget(&self, team: TeamId, key: &LicenseKey) {
        if let Ok(mut m) = self.shard(team, key).write() {
            m.remove(&(team, *key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_forgets_and_stays_bounded() {
        let ids = KeyIds::default();
        let team = TeamId::new();
        let key = LicenseKey::generate();
        let id = LicenseId::new();
        assert_eq!(ids.get(team, &key), None);
        ids.remember(team, key, id);
        assert_eq!(ids.get(team, &key), Some(id));
        assert_eq!(ids.get(TeamId::new(), &key), None, "per team");
        ids.forget(team, &key);
        assert_eq!(ids.get(team, &key), None);
        for _ in 0..SHARDS * PER_SHARD * 2 {
            ids.remember(team, LicenseKey::generate(), id);
        }
        let total: usize = ids.shards.iter().map(|s| s.read().unwrap().len()).sum();
        assert!(total <= SHARDS * PER_SHARD, "{total}");
    }
}
