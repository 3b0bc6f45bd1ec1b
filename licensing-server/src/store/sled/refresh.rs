//! Writing the shared write-behind refreshes (`store/refresh.rs`) into sled.
//!
//! They are written by whoever next takes the license's lock (its atomic step, a developer
//! write to it), before the developer API lists devices, licenses or statistics, and on every
//! flusher round (at most 500 ms apart), whose next flush makes them durable: within a second. So
//! a limit check always counts with exact `lastSeenAt`s. A license's record, its activity
//! index, and its device and address records with their entries in the index by last use
//! (`seen.rs`) are written in one batch, so that the index never disagrees with a record.

use licensing_core::LicenseId;
use licensing_core::model::{Hwid, IpRecord, License};
use licensing_core::store::set_ip_country;

use super::{Tx, hwid_key_of, ip_key_of, license_key, put_license};
use crate::store::refresh::Refresh;
use licensing_core::store::StoreResult;

/// Stages one license's refreshes in `tx`: the license and its activity index, its device and
/// address records and their entries by last use. Records deleted meanwhile are skipped; times
/// only move forward; `forgotten` is left as it is (a refresh that raced a forget happened before
/// it). The caller holds the license's lock, so no other write to it interleaves.
pub(super) fn stage(tx: &mut Tx<'_>, (license, refresh): (LicenseId, Refresh)) -> StoreResult<()> {
    let team = refresh.team;
    let Some(current) = tx.get_record::<License>(&license_key(team, license))? else {
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
        if let Some(old) = tx.get_record::<Hwid>(&k)?
            && old.last_seen_at < seen
        {
            let mut h = old.clone();
            h.last_seen_at = seen;
            tx.put_usage(Some(&old), &h)?;
        }
    }
    for (addr, seen, country) in refresh.ips {
        let k = ip_key_of(team, license, &addr);
        if let Some(old) = tx.get_record::<IpRecord>(&k)?
            && old.last_seen_at < seen
        {
            let mut r = old.clone();
            r.last_seen_at = seen;
            if let Some(c) = country {
                set_ip_country(&mut r, c);
            }
            tx.put_usage(Some(&old), &r)?;
        }
    }
    Ok(())
}
