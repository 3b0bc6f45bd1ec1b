//! Write-behind for the hot path, shared by both stores: the `lastSeenAt`/`lastActiveAt`
//! refreshes of requests whose device and address already count against the license's limits
//! ([`licensing_core::verify::admit_counted_own`]).
//!
//! Such a request needs no atomic step: it passes whatever concurrent requests do. So instead of
//! a write per heartbeat, its refreshes are merged here per license, in shards, and each store
//! writes them in its own way (`sled/refresh.rs`,
//! `postgres/activity.rs`): before a limit is counted on the license, before the developer API
//! lists devices, licenses or statistics, and on every round of the store's flusher. Single
//! license reads overlay the waiting `lastActiveAt`. Memory is bounded by the number of licenses
//! with a refresh since the last round, and a large backlog wakes the flusher early.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use licensing_core::model::{License, LicenseSession};
use licensing_core::validate::Country;
use licensing_core::{LicenseId, TeamId, Timestamp};

/// Shards of the waiting refreshes.
pub(crate) const STRIPES: usize = 256;

/// The shard of a license: its id is random, so its first byte spreads them evenly.
pub(crate) fn stripe_of(license: LicenseId) -> usize {
    usize::from(license.as_bytes()[0]) % STRIPES
}

/// Licenses with waiting refreshes at which the flusher is woken before its interval.
pub(crate) const EARLY_ROUND: usize = 20_000;

/// One license's waiting refreshes: the records by their key within the license (a device's
/// identifier digest, an address's 16 bytes).
#[derive(Debug, Clone)]
pub(crate) struct Refresh {
    pub(crate) team: TeamId,
    pub(crate) active_at: Timestamp,
    pub(crate) hwids: Vec<([u8; 16], Timestamp)>,
    pub(crate) ips: Vec<([u8; 16], Timestamp, Option<Country>)>,
    /// Floating sessions of the license extended by heartbeats (a store that writes its
    /// extensions behind: PostgreSQL), each as extended last, with the moment until which it
    /// may still be written: while the session as stored is certainly live.
    pub(crate) sessions: Vec<(LicenseSession, Instant)>,
}

type Shard = HashMap<LicenseId, Refresh>;

/// The waiting refreshes of every license, sharded.
#[derive(Debug)]
pub(crate) struct Refreshes {
    shards: Box<[Mutex<Shard>]>,
}

impl Default for Refreshes {
    fn default() -> Self {
        Self {
            shards: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

fn later(slot: &mut Timestamp, at: Timestamp) {
    if at > *slot {
        *slot = at;
    }
}

impl Refresh {
    /// Folds `other` (of the same license) in: the later time of each record wins.
    fn merge(&mut self, other: Refresh) {
        later(&mut self.active_at, other.active_at);
        for (digest, seen) in other.hwids {
            self.hwid(digest, seen);
        }
        for (addr, seen, country) in other.ips {
            self.ip(addr, seen, country);
        }
        for (session, until) in other.sessions {
            self.session(session, until);
        }
    }

    fn session(&mut self, session: LicenseSession, until: Instant) {
        match self.sessions.iter_mut().find(|(s, _)| s.id == session.id) {
            Some(kept) => {
                if session.expires_at >= kept.0.expires_at {
                    *kept = (session, until);
                }
            }
            None => self.sessions.push((session, until)),
        }
    }

    fn hwid(&mut self, digest: [u8; 16], now: Timestamp) {
        match self.hwids.iter_mut().find(|(h, _)| *h == digest) {
            Some((_, seen)) => later(seen, now),
            None => self.hwids.push((digest, now)),
        }
    }

    fn ip(&mut self, addr: [u8; 16], now: Timestamp, country: Option<Country>) {
        match self.ips.iter_mut().find(|(i, ..)| *i == addr) {
            Some((_, seen, c)) => {
                if now >= *seen {
                    *seen = now;
                    *c = country.or(*c);
                }
            }
            None => self.ips.push((addr, now, country)),
        }
    }
}

impl Refreshes {
    fn shard(&self, license: LicenseId) -> &Mutex<Shard> {
        &self.shards[stripe_of(license)]
    }

    /// Records a refresh of `license`'s device (by its digest) and address (by its 16 bytes);
    /// returns how many licenses wait in its shard.
    pub(crate) fn add(
        &self,
        team: TeamId,
        license: LicenseId,
        hwid: Option<[u8; 16]>,
        ip: [u8; 16],
        country: Option<Country>,
        now: Timestamp,
    ) -> usize {
        let Ok(mut shard) = self.shard(license).lock() else {
            return 0;
        };
        let entry = shard.entry(license).or_insert_with(|| Refresh {
            team,
            active_at: now,
            hwids: Vec::new(),
            ips: Vec::new(),
            sessions: Vec::new(),
        });
        later(&mut entry.active_at, now);
        if let Some(digest) = hwid {
            entry.hwid(digest, now);
        }
        entry.ip(ip, now, country);
        shard.len()
    }

    /// Records a heartbeat's extension of a floating session (`session` as extended at `now`),
    /// to be written only before `until`; returns how many licenses wait in its shard.
    pub(crate) fn add_session(
        &self,
        session: LicenseSession,
        until: Instant,
        now: Timestamp,
    ) -> usize {
        let license = session.license_id;
        let Ok(mut shard) = self.shard(license).lock() else {
            return 0;
        };
        let entry = shard.entry(license).or_insert_with(|| Refresh {
            team: session.team_id,
            active_at: now,
            hwids: Vec::new(),
            ips: Vec::new(),
            sessions: Vec::new(),
        });
        later(&mut entry.active_at, now);
        entry.session(session, until);
        shard.len()
    }

    /// Puts back refreshes that could not be written yet, merged with any that came since.
    pub(crate) fn put_back(&self, taken: Vec<(LicenseId, Refresh)>) {
        for (license, refresh) in taken {
            if let Ok(mut shard) = self.shard(license).lock() {
                match shard.get_mut(&license) {
                    Some(newer) => newer.merge(refresh),
                    None => {
                        shard.insert(license, refresh);
                    }
                }
            }
        }
    }

    /// Whether nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.shards
            .iter()
            .all(|s| s.lock().map_or(true, |s| s.is_empty()))
    }

    /// `license` with its waiting `lastActiveAt`, for single reads that do not take a lock.
    pub(crate) fn overlay(&self, mut license: License) -> License {
        if let Ok(shard) = self.shard(license.id).lock()
            && let Some(r) = shard.get(&license.id)
            && license.last_active_at.is_none_or(|at| at < r.active_at)
        {
            license.last_active_at = Some(r.active_at);
        }
        license
    }

    /// Takes the waiting refresh of one license.
    pub(crate) fn take_license(&self, license: LicenseId) -> Option<(LicenseId, Refresh)> {
        let mut shard = self.shard(license).lock().ok()?;
        shard.remove(&license).map(|r| (license, r))
    }

    /// The licenses with a waiting refresh in shard `i` (left waiting).
    pub(crate) fn licenses_in(&self, i: usize) -> Vec<LicenseId> {
        match self.shards[i % STRIPES].lock() {
            Ok(shard) => shard.keys().copied().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Takes every waiting refresh of shard `i`.
    pub(crate) fn take_stripe(&self, i: usize) -> Vec<(LicenseId, Refresh)> {
        match self.shards[i % STRIPES].lock() {
            Ok(mut shard) if !shard.is_empty() => std::mem::take(&mut *shard).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Takes every waiting refresh.
    pub(crate) fn take_all(&self) -> Vec<(LicenseId, Refresh)> {
        (0..STRIPES).flat_map(|i| self.take_stripe(i)).collect()
    }
}
