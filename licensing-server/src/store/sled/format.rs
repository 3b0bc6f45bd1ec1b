//! The store's format version, and the migrations that bring an older store to it at start-up.
//!
//! | format | what changed |
//! |---|---|
//! | 1 | (no version key) the first layout: devices and addresses keyed by record id |
//! | 2 | devices keyed by a digest of their identifier and addresses by their 16 bytes, so a request finds its own records without reading the others; per-license record counts; session keys |
//! | 3 | the index of pending webhook deliveries keyed by event and delivery (chain order), its value holding the next attempt and the resource, so that a claim reads only what it sends |
//!
//! A store of a newer format than this server knows is refused with a clear message, never
//! read. Migrations are idempotent (a crash half way is finished at the next start) and the new
//! version is written last.

use licensing_core::model::{Hwid, IpRecord, License, WebhookDelivery};
use licensing_core::store::{StoreError, StoreResult};

use super::keys::{key, tag};
use super::{Tally, backend, decode, hwid_key, ip_key, tally_key};

/// The format this server writes.
pub const FORMAT: u32 = 3;

fn version_key() -> Vec<u8> {
    key(&[&[tag::META], b"format"])
}

/// The store's format version (1 when it has none).
pub(crate) fn version(tree: &sled::Tree) -> StoreResult<u32> {
    match tree.get(version_key()).map_err(backend)? {
        None => Ok(1),
        Some(v) => v
            .as_ref()
            .try_into()
            .map(u32::from_be_bytes)
            .map_err(|_| StoreError::backend("the store's format version is unreadable")),
    }
}

/// Brings the store to [`FORMAT`], or refuses a newer one.
pub(crate) fn upgrade(tree: &sled::Tree) -> StoreResult<()> {
    let found = version(tree)?;
    if found > FORMAT {
        return Err(StoreError::backend(format!(
            "this store was written by a newer licensing-server (format {found}); this server reads formats up to {FORMAT}: run the newer version, or restore a backup made for this one"
        )));
    }
    if found < 2 {
        let licenses = v1_to_v2(tree)?;
        if licenses > 0 {
            tracing::info!(licenses, "store migrated to format 2");
        }
    }
    if found < 3 {
        let pending = v2_to_v3(tree)?;
        if pending > 0 {
            tracing::info!(pending, "store migrated to format 3");
        }
    }
    if found < FORMAT {
        tree.insert(version_key(), &FORMAT.to_be_bytes())
            .map_err(backend)?;
        tree.flush().map_err(backend)?;
    }
    Ok(())
}

/// Format 1 to 2: every license's device and address records re-keyed by value (a device seen
/// twice keeps its most recent record), and its record counts written. Returns the licenses
/// migrated.
fn v1_to_v2(tree: &sled::Tree) -> StoreResult<usize> {
    let mut migrated = 0;
    for entry in tree.scan_prefix([tag::LICENSE]) {
        let (_, value) = entry.map_err(backend)?;
        let license: License = decode(&value)?;
        let (team, id) = (license.team_id, license.id);
        let mut batch = sled::Batch::default();
        let mut hwids: std::collections::BTreeMap<Vec<u8>, Hwid> = Default::default();
        for kv in tree.scan_prefix(key(&[&[tag::HWID], team.as_bytes(), id.as_bytes()])) {
            let (old, value) = kv.map_err(backend)?;
            let record: Hwid = decode(&value)?;
            batch.remove(old);
            let new = hwid_key(team, id, &record.identifier);
            match hwids.get(&new) {
                Some(kept) if kept.last_seen_at >= record.last_seen_at => {}
                _ => {
                    hwids.insert(new, record);
                }
            }
        }
        let mut ips: std::collections::BTreeMap<Vec<u8>, IpRecord> = Default::default();
        for kv in tree.scan_prefix(key(&[&[tag::IP], team.as_bytes(), id.as_bytes()])) {
            let (old, value) = kv.map_err(backend)?;
            let record: IpRecord = decode(&value)?;
            batch.remove(old);
            let new = ip_key(team, id, record.address);
            match ips.get(&new) {
                Some(kept) if kept.last_seen_at >= record.last_seen_at => {}
                _ => {
                    ips.insert(new, record);
                }
            }
        }
        let hwid_tally = Tally::of(hwids.values().map(|h| h.forgotten));
        let ip_tally = Tally::of(ips.values().map(|r| r.forgotten));
        for (k, record) in hwids {
            batch.insert(k, super::encode(&record)?);
        }
        for (k, record) in ips {
            batch.insert(k, super::encode(&record)?);
        }
        batch.insert(tally_key(tag::HWID, team, id), hwid_tally.encode().to_vec());
        batch.insert(tally_key(tag::IP, team, id), ip_tally.encode().to_vec());
        tree.apply_batch(batch).map_err(backend)?;
        migrated += 1;
    }
    Ok(migrated)
}

/// Format 2 to 3: each pending delivery's index entry (`[i, D]` | delivery, valued team |
/// endpoint) rewritten in chain order (see `webhooks.rs`). Returns the entries rewritten.
fn v2_to_v3(tree: &sled::Tree) -> StoreResult<usize> {
    let mut migrated = 0;
    for entry in tree.scan_prefix([tag::INDEX, tag::DELIVERY]) {
        let (old, owner) = entry.map_err(backend)?;
        // Entries of the new layout (a crash half way) are longer: team, endpoint and time.
        if owner.len() != 32 || old.len() != 2 + 16 {
            continue;
        }
        let mut batch = sled::Batch::default();
        batch.remove(old.clone());
        let record = key(&[&[tag::DELIVERY], &owner, &old[2..]]);
        if let Some(value) = tree.get(record).map_err(backend)? {
            let delivery: WebhookDelivery = decode(&value)?;
            if let Some((k, v)) = super::webhooks::pending_entry(&delivery) {
                batch.insert(k, v);
            }
        }
        tree.apply_batch(batch).map_err(backend)?;
        migrated += 1;
    }
    Ok(migrated)
}
