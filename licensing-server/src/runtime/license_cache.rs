//! What a client request reads about its license, kept in memory: the license by key, with the
//! device and address records of the requests that used it. A heartbeat or verify of a device
//! and address that already count is then decided without reading the store; its refresh is
//! written behind as before (the store's `refresh.rs`), and anything that decides a limit still
//! goes through the store's atomic step, which reads the store.
//!
//! Coherence, on the same instance: every operation that may change a team's licenses or
//! records drops the team's entries when it has run (`Cx::perform` in `app`), and a client
//! request that went through the atomic step (a new or un-forgotten record, an activation, a
//! refusal) drops its license's entry. A generation counter per shard keeps a read that raced
//! with such a change from storing what it read before it. So the request after a change's
//! answer reads the change.
//!
//! On PostgreSQL other instances change licenses too: the database announces a change to a
//! license or to its records' standing on commit (`LISTEN licensing_license_changed`, see
//! `changes.rs`), which drops the entry here within milliseconds; should a notification be lost,
//! entries also expire after [`MAX_AGE`] (and the feed's reconnection drops them all).
//!
//! What the entries hold may lag in one way only: a record's `lastSeenAt` is the one read when
//! the entry was loaded, so a record near its team's timeout looks older than it is and sends
//! its request to the atomic step. That never admits what the store would refuse.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use licensing_core::model::{Hwid, IpRecord, License};
use licensing_core::store::{Activity, LicenseRead};
use licensing_core::validate::HardwareId;
use licensing_core::{LicenseKey, TeamId};

/// How long an entry serves before it is read again: the longest a change made through another
/// instance can go unseen should its notification be lost.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// Device and address pairs an entry keeps for one license (the oldest goes first).
const PAIRS_PER_LICENSE: usize = 16;

/// Device and address pairs the cache keeps in all (about 1 KiB each with its license's share).
const CAPACITY: usize = 100_000;

const SHARDS: usize = 32;

/// One device and address of a license, as last read.
#[derive(Debug)]
struct Pair {
    hardware_id: Option<HardwareId>,
    ip: IpAddr,
    hwid: Option<Hwid>,
    record: Option<IpRecord>,
}

#[derive(Debug)]
struct Entry {
    license: License,
    loaded: Instant,
    pairs: Vec<Pair>,
}

impl Entry {
    /// An entry loaded now, with its first pair.
    fn new(license: &License, pair: Pair) -> Self {
        Self {
            license: license.clone(),
            loaded: Instant::now(),
            pairs: vec![pair],
        }
    }
}

#[derive(Debug, Default)]
struct Shard {
    teams: HashMap<TeamId, HashMap<Box<str>, Entry>>,
    /// Pairs held.
    pairs: usize,
    /// Counts the changes that dropped entries here: a read stores what it read only when none
    /// happened since it began.
    generation: u64,
}

impl Shard {
    fn forget_team(&mut self, team: TeamId) {
        self.generation += 1;
        if let Some(entries) = self.teams.remove(&team) {
            self.pairs -= entries.values().map(|e| e.pairs.len()).sum::<usize>();
        }
    }

    fn forget(&mut self, team: TeamId, key: &str) {
        self.generation += 1;
        self.remove(team, key);
    }

    /// Removes one entry, with its pairs from the count and its team's map if emptied.
    fn remove(&mut self, team: TeamId, key: &str) {
        if let Some(entries) = self.teams.get_mut(&team)
            && let Some(entry) = entries.remove(key)
        {
            self.pairs -= entry.pairs.len();
            if entries.is_empty() {
                self.teams.remove(&team);
            }
        }
    }

    /// Drops some entry other than `keep` to make room (any: a full cache of a busy server is
    /// refilled by the requests that use it); `false` when there is none.
    fn evict_one(&mut self, keep: (TeamId, &str)) -> bool {
        let victim = self.teams.iter().find_map(|(&team, entries)| {
            entries
                .keys()
                .find(|k| (team, &***k) != keep)
                .map(|k| (team, k.clone()))
        });
        let Some((team, key)) = victim else {
            return false;
        };
        self.remove(team, &key);
        true
    }
}

/// Where a read that missed may store what it read (see [`LicenseCache::store`]).
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    shard: usize,
    generation: u64,
}

/// The cache.
#[derive(Debug)]
pub struct LicenseCache {
    shards: Box<[RwLock<Shard>]>,
    hasher: std::hash::RandomState,
    max_age: Duration,
    pairs_per_shard: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Default for LicenseCache {
    fn default() -> Self {
        Self::new(MAX_AGE, CAPACITY)
    }
}

impl LicenseCache {
    /// An empty cache whose entries serve for `max_age` and that keeps up to `capacity`
    /// device and address pairs.
    pub fn new(max_age: Duration, capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            hasher: std::hash::RandomState::new(),
            max_age,
            pairs_per_shard: capacity.div_ceil(SHARDS).max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard_of(&self, team: TeamId, key: &str) -> usize {
        let hash = self.hasher.hash_one((team, key));
        // The remainder is below SHARDS, which fits any usize.
        usize::try_from(hash % SHARDS as u64).unwrap_or(0)
    }

    /// The license `key` names with `activity`'s own records, when cached and fresh; otherwise
    /// the ticket to store what the store reads.
    pub fn get(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> Result<LicenseRead, Ticket> {
        let key = key.as_str();
        let shard = self.shard_of(team, key);
        let guard = read(&self.shards[shard]);
        let hit = guard
            .teams
            .get(&team)
            .and_then(|entries| entries.get(key))
            .filter(|entry| entry.loaded.elapsed() < self.max_age)
            .and_then(|entry| {
                let pair = entry.pairs.iter().find(|p| matches(p, activity))?;
                Some(LicenseRead {
                    license: entry.license.clone(),
                    own: Some((pair.hwid.clone(), pair.record.clone())),
                    mark: None,
                })
            });
        match hit {
            Some(read) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(read)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                Err(Ticket {
                    shard,
                    generation: guard.generation,
                })
            }
        }
    }

    /// Stores what the store read after `ticket`'s miss, unless a change dropped entries of its
    /// shard since: only a read whose records both count already for the request's device and
    /// address (the others go through the atomic step, which changes them).
    pub fn store(&self, ticket: Ticket, activity: &Activity, read: &LicenseRead) {
        let Some((hwid, record)) = &read.own else {
            return;
        };
        if record.is_none() || (activity.hardware_id.is_some() && hwid.is_none()) {
            return;
        }
        let license = &read.license;
        let mut shard = write(&self.shards[ticket.shard]);
        if shard.generation != ticket.generation {
            return;
        }
        let pair = Pair {
            hardware_id: activity.hardware_id.clone(),
            ip: activity.ip.to_canonical(),
            hwid: hwid.clone(),
            record: record.clone(),
        };
        let max_age = self.max_age;
        let entries = shard.teams.entry(license.team_id).or_default();
        let mut added = 1;
        let mut removed = 0;
        match entries.get_mut(license.license_key.as_str()) {
            Some(entry) if entry.loaded.elapsed() < max_age => {
                // No change dropped it since these pairs were read: the license read now is as
                // current as theirs.
                entry.license = license.clone();
                if let Some(at) = entry.pairs.iter().position(|p| matches(p, activity)) {
                    entry.pairs[at] = pair;
                    added = 0;
                } else {
                    if entry.pairs.len() >= PAIRS_PER_LICENSE {
                        entry.pairs.remove(0);
                        removed = 1;
                    }
                    entry.pairs.push(pair);
                }
            }
            Some(entry) => {
                removed = entry.pairs.len();
                *entry = Entry::new(license, pair);
            }
            None => {
                entries.insert(
                    license.license_key.as_str().into(),
                    Entry::new(license, pair),
                );
            }
        }
        shard.pairs = shard.pairs + added - removed;
        let keep = (license.team_id, license.license_key.as_str());
        while shard.pairs > self.pairs_per_shard && shard.evict_one(keep) {}
    }

    /// Drops the license with `key` (its record or its records' standing changed).
    pub fn forget(&self, team: TeamId, key: &str) {
        let shard = self.shard_of(team, key);
        write(&self.shards[shard]).forget(team, key);
    }

    /// Drops every license of `team` (an operation may have changed any of them).
    pub fn forget_team(&self, team: TeamId) {
        for shard in &self.shards {
            write(shard).forget_team(team);
        }
    }

    /// Drops everything (changes may have gone unannounced).
    pub fn clear(&self) {
        for shard in &self.shards {
            let mut shard = write(shard);
            shard.generation += 1;
            shard.teams.clear();
            shard.pairs = 0;
        }
    }

    /// Lookups answered from memory and lookups that missed, since the start.
    pub fn lookups(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Device and address pairs held (for tests and metrics).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| read(s).pairs).sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn matches(pair: &Pair, activity: &Activity) -> bool {
    pair.hardware_id == activity.hardware_id && pair.ip == activity.ip.to_canonical()
}

// A panic while a shard is held leaves nothing half-written that matters more than serving: the
// shard's state is a set of independent entries, each written whole.
fn read(shard: &RwLock<Shard>) -> RwLockReadGuard<'_, Shard> {
    shard
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(shard: &RwLock<Shard>) -> RwLockWriteGuard<'_, Shard> {
    shard
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use licensing_core::model::SessionStep;
    use licensing_core::{HwidId, IpId, Timestamp};

    fn license(team: TeamId, key: &str) -> License {
        let mut l = licensing_core::store::testing::license(team, Timestamp::from_millis(1));
        l.license_key = LicenseKey::parse(key).unwrap();
        l
    }

    fn activity(device: &str, ip: [u8; 4]) -> Activity {
        Activity {
            label: Default::default(),
            hardware_id: Some(HardwareId::parse(&format!("{device}-hardware")).unwrap()),
            ip: IpAddr::from(ip),
            country: None,
            session: SessionStep::None,
        }
    }

    fn counted(l: &License, a: &Activity) -> LicenseRead {
        let now = Timestamp::from_millis(1);
        let hwid = Hwid {
            name: None,
            platform: None,
            id: HwidId::new(),
            identifier: a.hardware_id.clone().unwrap(),
            forgotten: false,
            license_id: l.id,
            team_id: l.team_id,
            last_seen_at: now,
            created_at: now,
            updated_at: now,
        };
        let ip = IpRecord {
            id: IpId::new(),
            address: a.ip,
            forgotten: false,
            country: None,
            alpha2: None,
            alpha3: None,
            license_id: l.id,
            team_id: l.team_id,
            last_seen_at: now,
            created_at: now,
            updated_at: now,
        };
        LicenseRead {
            license: l.clone(),
            own: Some((Some(hwid), Some(ip))),
            mark: None,
        }
    }

    fn key(k: &str) -> LicenseKey {
        LicenseKey::parse(k).unwrap()
    }

    const K1: &str = "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE";
    const K2: &str = "FFFFF-GGGGG-HHHHH-IIIII-JJJJJ";

    /// An empty cache, a team, its license `K1` and a request of device-a from 10.0.0.1.
    fn one_license() -> (LicenseCache, TeamId, License, Activity) {
        let team = TeamId::new();
        let l = license(team, K1);
        (
            LicenseCache::default(),
            team,
            l,
            activity("device-a", [10, 0, 0, 1]),
        )
    }

    #[test]
    fn a_read_is_served_for_its_own_device_and_address_only() {
        let (cache, team, l, a) = one_license();
        let ticket = cache.get(team, &key(K1), &a).unwrap_err();
        cache.store(ticket, &a, &counted(&l, &a));
        let hit = cache.get(team, &key(K1), &a).expect("a hit");
        assert_eq!(hit.license, l);
        let (hwid, ip) = hit.own.expect("its records");
        assert_eq!(hwid.unwrap().identifier.as_str(), "device-a-hardware");
        assert_eq!(ip.unwrap().address, a.ip);
        assert!(
            cache
                .get(team, &key(K1), &activity("device-b", [10, 0, 0, 1]))
                .is_err()
        );
        assert!(
            cache
                .get(team, &key(K1), &activity("device-a", [10, 0, 0, 2]))
                .is_err()
        );
        assert!(
            cache.get(TeamId::new(), &key(K1), &a).is_err(),
            "another team's key"
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn records_that_do_not_count_yet_are_not_stored() {
        let (cache, team, l, a) = one_license();
        let mut read = counted(&l, &a);
        read.own = Some((None, read.own.unwrap().1));
        let ticket = cache.get(team, &key(K1), &a).unwrap_err();
        cache.store(ticket, &a, &read);
        assert!(cache.is_empty());
    }

    #[test]
    fn a_change_during_a_read_keeps_the_read_out() {
        let (cache, team, l, a) = one_license();
        for change in [
            &(|c: &LicenseCache, t: TeamId| c.forget(t, K1)) as &dyn Fn(&LicenseCache, TeamId),
            &|c: &LicenseCache, t: TeamId| c.forget_team(t),
            &|c: &LicenseCache, _| c.clear(),
        ] {
            let ticket = cache.get(team, &key(K1), &a).unwrap_err();
            change(&cache, team);
            cache.store(ticket, &a, &counted(&l, &a));
            assert!(cache.get(team, &key(K1), &a).is_err());
        }
    }

    #[test]
    fn forgetting_drops_the_license_or_the_team_and_nothing_else() {
        let cache = LicenseCache::default();
        let (team, other) = (TeamId::new(), TeamId::new());
        let a = activity("device-a", [10, 0, 0, 1]);
        for (t, k) in [(team, K1), (team, K2), (other, K1)] {
            let ticket = cache.get(t, &key(k), &a).unwrap_err();
            cache.store(ticket, &a, &counted(&license(t, k), &a));
        }
        cache.forget(team, K1);
        assert!(cache.get(team, &key(K1), &a).is_err());
        assert!(cache.get(team, &key(K2), &a).is_ok());
        assert!(cache.get(other, &key(K1), &a).is_ok());
        cache.forget_team(team);
        assert!(cache.get(team, &key(K2), &a).is_err());
        assert!(cache.get(other, &key(K1), &a).is_ok());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn entries_expire_and_the_cache_stays_within_its_capacity() {
        let cache = LicenseCache::new(Duration::ZERO, 64);
        let team = TeamId::new();
        let a = activity("device-a", [10, 0, 0, 1]);
        let l = license(team, K1);
        let ticket = cache.get(team, &key(K1), &a).unwrap_err();
        cache.store(ticket, &a, &counted(&l, &a));
        assert!(cache.get(team, &key(K1), &a).is_err(), "expired at once");

        let cache = LicenseCache::new(MAX_AGE, 64);
        for i in 0..200u32 {
            let k = format!("AAAAA-BBBBB-CCCCC-DDDDD-{i:05}");
            let ticket = cache.get(team, &key(&k), &a).unwrap_err();
            cache.store(ticket, &a, &counted(&license(team, &k), &a));
            assert!(cache.get(team, &key(&k), &a).is_ok(), "the latest is held");
        }
        assert!(cache.len() <= 64, "{} pairs held", cache.len());
    }

    #[test]
    fn a_license_keeps_its_latest_pairs() {
        let cache = LicenseCache::default();
        let team = TeamId::new();
        let l = license(team, K1);
        let pairs = PAIRS_PER_LICENSE + 3;
        for d in 0..pairs {
            let a = activity(&format!("device-{d}"), [10, 0, 0, 1]);
            let ticket = cache.get(team, &key(K1), &a).unwrap_err();
            cache.store(ticket, &a, &counted(&l, &a));
        }
        assert_eq!(cache.len(), PAIRS_PER_LICENSE);
        let held = |d: usize| {
            cache
                .get(
                    team,
                    &key(K1),
                    &activity(&format!("device-{d}"), [10, 0, 0, 1]),
                )
                .is_ok()
        };
        assert!(!held(0) && !held(2));
        assert!(held(3) && held(pairs - 1));
    }
}
