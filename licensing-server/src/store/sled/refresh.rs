//! Writing the shared write-behind refreshes (`store/refresh.rs`) into sled.
//!
//! They are written by whoever next takes the license's stripe (its atomic step, a developer
//! write to it), before the developer API lists devices, licenses or statistics, and on every
//! flusher round, which makes them durable within the same 500 ms as other unflushed writes. So
//! a limit check always counts with exact `lastSeenAt`s. A license's record and its activity
//! index are written in one batch per stripe; device and address records as single-key writes,
//! because sled's batches stop every read while they apply.

use licensing_core::LicenseId;
use licensing_core::model::{Hwid, IpRecord, License};
use licensing_core::store::set_ip_country;

use super::{Tx, encode, hwid_key_of, ip_key_of, license_key, put_license};
use crate::store::refresh::Refresh;
use licensing_core::store::StoreResult;

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
        if let Some(mut h) = tx.get_record::<Hwid>(&k)?
            && h.last_seen_at < seen
        {
            h.last_seen_at = seen;
            singles.push((k, encode(&h)?));
        }
    }
    for (addr, seen, country) in refresh.ips {
        let k = ip_key_of(team, license, &addr);
        if let Some(mut r) = tx.get_record::<IpRecord>(&k)?
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
