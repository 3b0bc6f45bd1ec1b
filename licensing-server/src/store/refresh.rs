//! Write-behind for the hot path: the `lastSeenAt`/`lastActiveAt` refreshes of requests whose
//! device and address already count against the license's limits
//! ([`licensing_core::verify::admit_counted`]).
//!
//! Such a request needs no atomic step: it passes whatever concurrent requests do. So instead of
//! a batch under the writer lock per heartbeat, its refreshes are merged here per license and
//! written by whoever takes the writer lock next (every write does, so a limit check always
//! counts with exact `lastSeenAt`s), before the developer API lists devices, licenses or
//! statistics, and on every flusher round, which makes them durable within the same 500 ms as
//! other unflushed writes. They are written 128 licenses per batch (a license and its activity
//! index together), with device and address records as single-key writes, because sled's batches
//! stop every read while they apply. Single license reads overlay the waiting `lastActiveAt`.
//! Memory is bounded by the number of licenses with a refresh since the last round, and a large
//! backlog wakes the flusher early.

use std::collections::HashMap;
use std::sync::Mutex;

use licensing_core::model::{Hwid, IpRecord, License};
use licensing_core::store::set_ip_country;
use licensing_core::validate::Country;
use licensing_core::{HwidId, IpId, LicenseId, TeamId, Timestamp};

use super::{Tx, encode, hwid_key, ip_key, license_key, put_license};
use crate::store::StoreResult;

/// Licenses with waiting refreshes at which the flusher is woken before its interval.
pub(super) const EARLY_ROUND: usize = 20_000;

/// One license's waiting refreshes.
#[derive(Debug)]
pub(super) struct Refresh {
    active_at: Timestamp,
    hwids: Vec<(HwidId, Timestamp)>,
    ips: Vec<(IpId, Timestamp, Option<Country>)>,
}

/// The waiting refreshes of every license.
#[derive(Debug, Default)]
pub(super) struct Refreshes {
    pending: Mutex<HashMap<(TeamId, LicenseId), Refresh>>,
}

fn later(slot: &mut Timestamp, at: Timestamp) {
    if at > *slot {
        *slot = at;
    }
}

impl Refreshes {
    /// Records a refresh; returns how many licenses now wait.
    pub(super) fn add(
        &self,
        team: TeamId,
        license: LicenseId,
        hwid: Option<HwidId>,
        ip: IpId,
        country: Option<Country>,
        now: Timestamp,
    ) -> usize {
        let Ok(mut pending) = self.pending.lock() else {
            return 0;
        };
        let entry = pending.entry((team, license)).or_insert_with(|| Refresh {
            active_at: now,
            hwids: Vec::new(),
            ips: Vec::new(),
        });
        later(&mut entry.active_at, now);
        if let Some(id) = hwid {
            match entry.hwids.iter_mut().find(|(h, _)| *h == id) {
                Some((_, seen)) => later(seen, now),
                None => entry.hwids.push((id, now)),
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
        pending.len()
    }

    /// Whether nothing waits.
    pub(super) fn is_empty(&self) -> bool {
        self.pending.lock().map_or(true, |p| p.is_empty())
    }

    /// `license` with its waiting `lastActiveAt`, for single reads that do not take the lock.
    pub(super) fn overlay(&self, mut license: License) -> License {
        if let Ok(pending) = self.pending.lock()
            && let Some(r) = pending.get(&(license.team_id, license.id))
            && license.last_active_at.is_none_or(|at| at < r.active_at)
        {
            license.last_active_at = Some(r.active_at);
        }
        license
    }

    /// Takes every waiting refresh, to be written by the caller (who holds the writer lock).
    pub(super) fn take(&self) -> Vec<((TeamId, LicenseId), Refresh)> {
        match self.pending.lock() {
            Ok(mut pending) if !pending.is_empty() => {
                std::mem::take(&mut *pending).into_iter().collect()
            }
            _ => Vec::new(),
        }
    }
}

/// Stages one license's refreshes: the license and its activity index in `tx` (they change
/// together), the device and address records in `singles`, which are written one key at a time
/// (each is one record; sled's single-key writes do not stop reads as a batch does). Records
/// deleted meanwhile are skipped; times only move forward; `forgotten` is left as it is (a
/// refresh that raced a forget happened before it). The caller holds the writer lock, so no
/// other write interleaves.
pub(super) fn stage(
    tx: &mut Tx<'_>,
    singles: &mut Vec<(Vec<u8>, Vec<u8>)>,
    (team, license): (TeamId, LicenseId),
    refresh: Refresh,
) -> StoreResult<()> {
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
    for (id, seen) in refresh.hwids {
        let k = hwid_key(team, license, id);
        if let Some(mut h) = tx.get_json::<Hwid>(&k)?
            && h.last_seen_at < seen
        {
            h.last_seen_at = seen;
            singles.push((k, encode(&h)?));
        }
    }
    for (id, seen, country) in refresh.ips {
        let k = ip_key(team, license, id);
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
