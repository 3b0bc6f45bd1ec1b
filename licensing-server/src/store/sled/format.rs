//! The store's format version, and the migrations that bring an older store to it at start-up.
//!
//! | format | what changed |
//! |---|---|
//! | 1 | (no version key) the first layout: devices and addresses keyed by record id |
//! | 2 | devices keyed by a digest of their identifier and addresses by their 16 bytes, so a request finds its own records without reading the others; per-license record counts; session keys |
//! | 3 | the index of pending webhook deliveries keyed by event and delivery (chain order), its value holding the next attempt and the resource, so that a claim reads only what it sends |
//! | 4 | licenses, device and address records, customers, products, branches, releases and blacklist entries in the compact binary form of `codec.rs` instead of JSON |
//! | 5 | a staff account's address index keyed by address and team (an address is unique in a team, and may have an account in each of several teams); each license's device and address records indexed by when they were last seen (`seen.rs`) |
//! | 6 | licenses and products end with their entitlement ids (an empty list for those written before); entitlements (`N`) and the index of licenses by entitlement |
//! | 7 | licenses end with their floating-session members `sessionLimit` and `sessionTtl` (`None` for those written before); floating sessions (`F`) |
//! | 8 | licenses end with `policyId` and `overrides` (no policy, no overrides for those written before); policies (`p`) and the index of licenses by policy |
//! | 9 | products end with their update settings and releases with their feed members (notes, critical, rollout, artifacts) |
//! | 10 | licenses end with `suspensionReason` (`None` for those written before) |
//! | 11 | device records end with the device's `name` and `platform` (`None` for those written before) |
//! | 12 | licenses end with their own usage `meters` (an empty list for those written before); usage counters (`c`) and kept usage answers (`x`) |
//!
//! A store of a newer format than this server knows is refused with a clear message, never
//! read. Before migrating a store that holds data, the server copies it, closed, to
//! `<dir>.format-<N>-backup` beside it (`db.format-2-backup` in the data directory), so that the
//! older version can be run again on the copy. Migrations are idempotent (a crash half way is
//! finished at the next start, and the copy from before it is kept) and the new version is
//! written last.

use licensing_core::model::{
    BlacklistEntry, Branch, Customer, Hwid, IpRecord, License, Product, Release, StaffUser,
    WebhookDelivery,
};
use std::os::unix::fs::DirBuilderExt as _;

use licensing_core::store::{StoreError, StoreResult};

use super::SledResult;
use super::codec::{self, Record};
use super::keys::{key, tag};
use super::{Tally, decode, encode, hwid_key, ip_key, tally_key};

/// The format this server writes.
pub const FORMAT: u32 = 12;

pub(super) fn version_key() -> Vec<u8> {
    key(&[&[tag::META], b"format"])
}

/// The store's format version (1 when it has none).
pub(crate) fn version(tree: &sled::Tree) -> SledResult<u32> {
    match tree.get(version_key())? {
        None => Ok(1),
        Some(v) => Ok(v
            .as_ref()
            .try_into()
            .map(u32::from_be_bytes)
            .map_err(|_| StoreError::backend("the store's format version is unreadable"))?),
    }
}

/// The older format of a store that holds data and will be migrated when opened; `None` for a
/// store of this format, a newer one (refused later) or a new empty one.
pub(crate) fn needs_migration(tree: &sled::Tree) -> StoreResult<Option<u32>> {
    let found = version(tree)?;
    Ok((found < FORMAT && !tree.is_empty()).then_some(found))
}

/// The copies that migrations left in `data_dir` (of its store in `db`), whatever their format.
pub fn migration_copies(data_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return Vec::new();
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name().to_str().is_some_and(|name| {
                name.strip_prefix("db.format-")
                    .and_then(|rest| rest.strip_suffix("-backup"))
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// The copy of a store of format `found` made before it is migrated: `<dir>.format-<found>-backup`.
pub(crate) fn backup_path(dir: &std::path::Path, found: u32) -> std::path::PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(format!(".format-{found}-backup"));
    std::path::PathBuf::from(name)
}

/// Copies the closed store in `dir` before a migration, file by file, fsynced, into a directory
/// made under a temporary name and renamed when complete. A copy left by an earlier, interrupted
/// migration is the store as it was before any of it, so it is kept, never overwritten.
pub(crate) fn copy_before_migrating(dir: &std::path::Path, found: u32) -> StoreResult<()> {
    let target = backup_path(dir, found);
    if target.exists() {
        tracing::warn!(copy = %target.display(), "a copy of the store from before an earlier, unfinished migration exists; keeping it");
        return Ok(());
    }
    let io = |e: std::io::Error| {
        StoreError::backend(format!(
            "copying the store to {} before migrating it from format {found}: {e}",
            target.display()
        ))
    };
    let mut partial = target.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(io)?;
    }
    copy_tree(dir, &partial).map_err(io)?;
    std::fs::rename(&partial, &target).map_err(io)?;
    if let Some(parent) = target.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    tracing::warn!(
        from = found,
        to = FORMAT,
        copy = %target.display(),
        "migrating the store to this version's format; the store as it was is copied here (delete it once the new version serves well)"
    );
    Ok(())
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            std::fs::File::open(&target)?.sync_all()?;
        }
    }
    std::fs::File::open(to)?.sync_all()
}

/// Brings the store to [`FORMAT`], or refuses a newer one.
pub(crate) fn upgrade(tree: &sled::Tree) -> SledResult<()> {
    let found = version(tree)?;
    if found > FORMAT {
        return Err(StoreError::backend(format!(
            "this store was written by a newer licensing-server (format {found}); this server reads formats up to {FORMAT}: run the newer version, or restore a backup made for this one"
        )).into());
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
    if found < 4 {
        let rewritten = v3_to_v4(tree)?;
        if rewritten > 0 {
            tracing::info!(records = rewritten, "store migrated to format 4");
        }
    }
    if found < 11 {
        // A device record of an older format lacks its two last members (first: format 5's
        // index of records by last use reads them).
        let rewritten = append_zeros::<Hwid>(tree, tag::HWID, 2)?;
        if rewritten > 0 {
            tracing::info!(records = rewritten, "device records migrated to format 11");
        }
    }
    if found < 5 {
        let rewritten = v4_to_v5(tree)?;
        let indexed = super::seen::build::<Hwid>(tree)? + super::seen::build::<IpRecord>(tree)?;
        if rewritten + indexed > 0 {
            tracing::info!(
                accounts = rewritten,
                records = indexed,
                "store migrated to format 5"
            );
        }
    }
    if found < 12 {
        // A license of format 5 lacks seven last members, one of format 6 six, one of format 7
        // four, one of formats 8 and 9 two, one of formats 10 and 11 one (formats 7, 8, 10 and
        // 12 each appended theirs).
        let rewritten = append_zeros::<License>(tree, tag::LICENSE, 7)?;
        if rewritten > 0 {
            tracing::info!(records = rewritten, "licenses migrated to format 12");
        }
    }
    if found < 9 {
        // A product of format 5 lacks five last members (format 6's entitlement ids and format
        // 9's update settings), a later one four; a release lacks format 9's four (notes,
        // critical, rollout, artifacts).
        let rewritten = append_zeros::<Product>(tree, tag::PRODUCT, 5)?
            + append_zeros::<Release>(tree, tag::RELEASE, 4)?;
        if rewritten > 0 {
            tracing::info!(records = rewritten, "store migrated to format {FORMAT}");
        }
    }
    if found < FORMAT {
        tree.insert(version_key(), &FORMAT.to_be_bytes())?;
        tree.flush()?;
    }
    Ok(())
}

/// Format 1 to 2: every license's device and address records re-keyed by value (a device seen
/// twice keeps its most recent record), and its record counts written. Returns the licenses
/// migrated.
fn v1_to_v2(tree: &sled::Tree) -> SledResult<usize> {
    let mut migrated = 0;
    for entry in tree.scan_prefix([tag::LICENSE]) {
        let (_, value) = entry?;
        let license: License = decode(&value)?;
        let (team, id) = (license.team_id, license.id);
        let mut batch = sled::Batch::default();
        let mut hwids: std::collections::BTreeMap<Vec<u8>, Hwid> = Default::default();
        for kv in tree.scan_prefix(key(&[&[tag::HWID], team.as_bytes(), id.as_bytes()])) {
            let (old, value) = kv?;
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
            let (old, value) = kv?;
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
            batch.insert(k, encode(&record)?);
        }
        for (k, record) in ips {
            batch.insert(k, encode(&record)?);
        }
        batch.insert(tally_key(tag::HWID, team, id), hwid_tally.encode().to_vec());
        batch.insert(tally_key(tag::IP, team, id), ip_tally.encode().to_vec());
        tree.apply_batch(batch)?;
        migrated += 1;
    }
    Ok(migrated)
}

/// Format 2 to 3: each pending delivery's index entry (`[i, D]` | delivery, valued team |
/// endpoint) rewritten in chain order (see `webhooks.rs`). Returns the entries rewritten.
fn v2_to_v3(tree: &sled::Tree) -> SledResult<usize> {
    let mut migrated = 0;
    for entry in tree.scan_prefix([tag::INDEX, tag::DELIVERY]) {
        let (old, owner) = entry?;
        // Entries of the new layout (a crash half way) are longer: team, endpoint and time.
        if owner.len() != 32 || old.len() != 2 + 16 {
            continue;
        }
        let mut batch = sled::Batch::default();
        batch.remove(old.clone());
        let record = key(&[&[tag::DELIVERY], &owner, &old[2..]]);
        if let Some(value) = tree.get(record)? {
            let delivery: WebhookDelivery = decode(&value)?;
            if let Some((k, v)) = super::webhooks::pending_entry(&delivery) {
                batch.insert(k, v);
            }
        }
        tree.apply_batch(batch)?;
        migrated += 1;
    }
    Ok(migrated)
}

/// Format 3 to 4: the records of the kinds `codec.rs` writes in binary rewritten from JSON, a
/// thousand per batch. Records already binary (a crash half way) are left as they are. Returns
/// the records rewritten.
fn v3_to_v4(tree: &sled::Tree) -> StoreResult<usize> {
    Ok(rewrite::<License>(tree, tag::LICENSE)?
        + rewrite::<Hwid>(tree, tag::HWID)?
        + rewrite::<IpRecord>(tree, tag::IP)?
        + rewrite::<Customer>(tree, tag::CUSTOMER)?
        + rewrite::<Product>(tree, tag::PRODUCT)?
        + rewrite::<Branch>(tree, tag::BRANCH)?
        + rewrite::<Release>(tree, tag::RELEASE)?
        + rewrite::<BlacklistEntry>(tree, tag::BLACKLIST)?)
}

/// Format 4 to 5: each staff account's address index entry (`u` | address, valued id)
/// rewritten as `u` | address | 0 | team. Entries of the new layout (a crash half way) hold the
/// 0 byte, which no address does, and are left. Returns the entries rewritten.
fn v4_to_v5(tree: &sled::Tree) -> SledResult<usize> {
    let mut rewritten = 0;
    for entry in tree.scan_prefix([tag::STAFF_EMAIL]) {
        let (old, id) = entry?;
        if old.contains(&0) {
            continue;
        }
        let mut batch = sled::Batch::default();
        batch.remove(old.clone());
        if let Some(value) = tree.get(key(&[&[tag::STAFF], &id]))? {
            let user: StaffUser = decode(&value)?;
            batch.insert(
                super::staff::email_key(user.email.as_str(), user.team_id),
                id,
            );
        }
        tree.apply_batch(batch)?;
        rewritten += 1;
    }
    Ok(rewritten)
}

/// Formats 5 to 9: licenses, products and releases gained last members whose empty value is one
/// zero byte in the binary form (an empty list's length: entitlement ids in format 6; `None`: the
/// session members of licenses in format 7; `None` and an empty list: a license's policy and
/// overrides in format 8; `None`, `false`, a rollout's held-back share and an empty list: a
/// product's update settings and a release's feed members in format 9; `None`: a license's
/// suspension reason in format 10; `None` twice: a device record's name and platform in format
/// 11; an empty list: a license's meters in format 12). A record of an older format is its bytes with one to
/// `most` zero bytes appended: the fewest that make it read as `T` (postcard reads no record
/// from too few bytes, nor from too many). A record that already reads as `T` (a crash half
/// way, or one written in JSON before format 4 and rewritten since) is left. Returns the
/// records rewritten.
fn append_zeros<T: Record>(tree: &sled::Tree, table: u8, most: usize) -> StoreResult<usize> {
    Ok(rewrite_where(tree, table, |v| {
        if decode::<T>(v).is_ok() {
            return Ok(None);
        }
        let padded = |zeros: usize| {
            let mut extended = v.to_vec();
            extended.resize(v.len() + zeros, 0);
            extended
        };
        if let Some(extended) = (1..most).map(padded).find(|e| decode::<T>(e).is_ok()) {
            return Ok(Some(extended));
        }
        let extended = padded(most);
        // What no appended member makes readable is not a record of an older format: say so.
        decode::<T>(&extended)?;
        Ok(Some(extended))
    })?)
}

/// Rewrites the records of one table in `T`'s current encoding.
fn rewrite<T: Record>(tree: &sled::Tree, table: u8) -> StoreResult<usize> {
    Ok(rewrite_where(tree, table, |v| {
        if codec::is_current::<T>(v) {
            return Ok(None);
        }
        let record: T = decode(v)?;
        Ok(encode(&record).map(Some)?)
    })?)
}

/// Rewrites each record of one table that `change` gives new bytes for (`None`: left as it
/// is), a thousand per batch. Returns the records rewritten.
fn rewrite_where(
    tree: &sled::Tree,
    table: u8,
    change: impl Fn(&[u8]) -> SledResult<Option<Vec<u8>>>,
) -> SledResult<usize> {
    const PER_BATCH: usize = 1000;
    let mut rewritten = 0;
    let mut batch = sled::Batch::default();
    let mut staged = 0;
    for entry in tree.scan_prefix([table]) {
        let (k, v) = entry?;
        let Some(new) = change(&v)? else {
            continue;
        };
        batch.insert(k, new);
        staged += 1;
        if staged == PER_BATCH {
            tree.apply_batch(std::mem::take(&mut batch))?;
            rewritten += staged;
            staged = 0;
        }
    }
    tree.apply_batch(batch)?;
    Ok(rewritten + staged)
}
