//! Write-behind for the hot path: the `lastSeenAt`/`lastActiveAt` refreshes of requests whose
//! device and address already count against the license's limits
//! ([`licensing_core::verify::admit_counted_own`]).
//!
//! Such a request needs no atomic step: it passes whatever concurrent requests do. So instead of
//! a batch per heartbeat, its refreshes are merged here per license, in the shard of the
//! license's lock stripe, and written by whoever next takes that license's stripe (its atomic
//! step, a developer write to it), before the developer API lists devices, licenses or
//! statistics, and on every flusher round, which makes them durable within the same 500 ms as
//! other unflushed writes. So a limit check always counts with exact `lastSeenAt`s. A license's
//! record and its activity index are written in one batch per stripe; device and address records
//! as single-key writes, because sled's batches stop every read while they apply. Single license
//! reads overlay the waiting `lastActiveAt`. Memory is bounded by the number of licenses with a
//! refresh since the last round, and a large backlog wakes the flusher early.

use std::collections::HashMap;
use std::sync::Mutex;

use licensing_core::model::{Hwid, IpRecord, License};
use licensing_core::store::set_ip_country;
use licensing_core::validate::Country;
use licensing_core::{LicenseId, TeamId, Timestamp};

use super::locks::{STRIPES, stripe_of};
use super::{Tx, encode, hwid_key_of, ip_key_of, license_key, put_license};
use licensing_core::store::StoreResult;

/// Licenses with waiting refreshes at which the flusher is woken before its interval.
pub(super) const EARLY_ROUND: usize = 20_000;

/// One license's waiting refreshes: the records by their key within the license (a device's
/// identifier digest, an address's 16 bytes).
#[derive(Debug)]
pub(super) struct Refresh {
    team: TeamId,
    active_at: Timestamp,
    hwids: Vec<([u8; 16], Timestamp)>,
    ips: Vec<([u8; 16], Timestamp, Option<Country>)>,
}

type Shard = HashMap<LicenseId, Refresh>;

/// The waiting refreshes of every license, sharded like the lock stripes.
#[derive(Debug)]
pub(super) struct Refreshes {
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

impl Refreshes {
    fn shard(&self, license: LicenseId) -> &Mutex<Shard> {
        &self.shards[stripe_of(license)]
    }

    /// Records a refresh of `license`'s device (by its digest) and address (by its 16 bytes);
    /// returns how many licenses wait in its shard.
    pub(super) fn add(
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
        });
        later(&mut entry.active_at, now);
        if let Some(digest) = hwid {
            match entry.hwids.iter_mut().find(|(h, _)| *h == digest) {
                Some((_, seen)) => later(seen, now),
                None => entry.hwids.push((digest, now)),
            }
        }
        match entry.ips.iter_mut().find(|(i, ..)| *i == ip) {
            Some((_, seen, c)) => {
                if now >= *seen {
                    *seen = now;
                    *c = country.or(*c);
                }
            }
            None => entry.ips.push((ip, now, country)),
        }
        shard.len()
    }

    /// Whether nothing waits.
    pub(super) fn is_empty(&self) -> bool {
        self.shards
            .iter()
            .all(|s| s.lock().map_or(true, |s| s.is_empty()))
    }

    /// `license` with its waiting `lastActiveAt`, for single reads that do not take a lock.
    pub(super) fn overlay(&self, mut license: License) -> License {
        if let Ok(shard) = self.shard(license.id).lock()
            && let Some(r) = shard.get(&license.id)
            && license.last_active_at.is_none_or(|at| at < r.active_at)
        {
            license.last_active_at = Some(r.active_at);
        }
        license
    }

    /// Takes the waiting refresh of one license; the caller holds its stripe.
    pub(super) fn take_license(&self, license: LicenseId) -> Option<(LicenseId, Refresh)> {
        let mut shard = self.shard(license).lock().ok()?;
        shard.remove(&license).map(|r| (license, r))
    }

    /// Takes every waiting refresh of stripe `i`; the caller holds the stripe.
    pub(super) fn take_stripe(&self, i: usize) -> Vec<(LicenseId, Refresh)> {
        match self.shards[i % STRIPES].lock() {
            Ok(mut shard) if !shard.is_empty() => std::mem::take(&mut *shard).into_iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// Stages one license's refreshes: the license and its activity index in `tx` (they change
/// together), the device and address records in `singles`, which are written one key at a time
/// (each is one record; sled's single-key writes do not stop reads as a batch does). Records
/// deleted meanwhile are skipped; times only move forward; `forgotten` is left as it is (a
/// refresh that raced a forget happened before it). The caller holds the license's stripe, so no
/// other write to it interleaves.
pub(super) fn stage(
    tx: &mut Tx<'_>,
    singles: &mut Vec<(Vec<u8>, Vec<u8>)>,
    (license, refresh): (LicenseId, Refresh),
) -> StoreResult<()> {
    let team = refresh.team;
    let Some(current) = tx.get_json::<License>(&license_key(team, license))? else {
        return Ok(());
    };
    if current
        .last_active_at
        .is_none_or(|at| at < refresh.active_at)
    {
        let mut next = current.clone();
        next.last_active_at = Some(refresh.active_at);
        put_license(tx, &next, Some(&current))?;
    }
    for (digest, seen) in refresh.hwids {
        let k = hwid_key_of(team, license, &digest);
        if let Some(mut h) = tx.get_json::<Hwid>(&k)?
            && h.last_seen_at < seen
        {
            h.last_seen_at = seen;
            singles.push((k, encode(&h)?));
        }
    }
    for (addr, seen, country) in refresh.ips {
        let k = ip_key_of(team, license, &addr);
        if let Some(mut r) = tx.get_json::<IpRecord>(&k)?
            && r.last_seen_at < seen
        {
            r.last_seen_at = seen;
            if let Some(c) = country {
                set_ip_country(&mut r, c);
            }
            singles.push((k, encode(&r)?));
        }
    }
    Ok(())
}
