//! Each license's device and address records indexed by when they were last seen (`z`), so that
//! the atomic step reads only what it decides on, however many records the license holds:
//!
//! - **counting** a limit with the team's timeout reads the entries seen within the timeout,
//!   and stops at the limit;
//! - **making room** under the cap on stored records reads the least recently seen entries that
//!   count against nothing, and stops at the batch it drops.
//!
//! An entry's key is the table, the team, the license, whether the record is forgotten, its
//! `lastSeenAt` and its own key's last 16 bytes (the identifier's digest, the address); its
//! value is empty. Forgotten records sort apart, so each of the two reads is one range. Every
//! write of a record writes its entry in the same batch ([`Tx::put_usage`]; a record dropped is
//! dropped with its entry); `check` verifies that each record has its entry and no entry is
//! stray.

use licensing_core::model::UsageRecord;
use licensing_core::store::StoreResult;
use licensing_core::{LicenseId, TeamId, Timestamp};

use licensing_core::model::{Hwid, IpRecord};
use licensing_core::store::Entity;

use super::SledResult;
use super::keys::{self, key, tag};
use super::{Record, Tx, backend};
use super::{hwid_key, ip_key};

/// The prefix of a license's entries of one table, of forgotten records or of the others.
fn prefix(table: u8, team: TeamId, license: LicenseId, forgotten: bool) -> Vec<u8> {
    key(&[
        &[tag::SEEN, table],
        team.as_bytes(),
        license.as_bytes(),
        &[u8::from(forgotten)],
    ])
}

/// The prefix of every entry of a license (both tables, both kinds).
pub(super) fn license_prefix(table: u8, team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::SEEN, table], team.as_bytes(), license.as_bytes()])
}

/// The entry of `record`.
pub(super) fn entry_key<R: UsageRecord + Keyed>(record: &R) -> Vec<u8> {
    let own = record.storage_key();
    let suffix = &own[own.len().saturating_sub(16)..];
    key(&[
        &prefix(
            R::TABLE,
            record.team_id(),
            record.license_id(),
            record.forgotten(),
        ),
        &keys::time(record.last_seen_at()),
        suffix,
    ])
}

/// The key of the record an entry of `table` names.
fn record_key(table: u8, team: TeamId, license: LicenseId, entry: &[u8]) -> Vec<u8> {
    let suffix = &entry[entry.len().saturating_sub(16)..];
    key(&[&[table], team.as_bytes(), license.as_bytes(), suffix])
}

/// The time an entry holds.
fn entry_time(entry: &[u8]) -> i64 {
    let at = entry.len().saturating_sub(24);
    let bytes: [u8; 8] = entry
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; 8]);
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

impl Tx<'_> {
    /// Writes `record`, replacing `old` (the same record as stored, if it is), and moves its
    /// entry.
    pub(super) fn put_usage<R: UsageRecord + Keyed + Record>(
        &mut self,
        old: Option<&R>,
        record: &R,
    ) -> StoreResult<()> {
        let entry = entry_key(record);
        if let Some(old) = old {
            let before = entry_key(old);
            if before != entry {
                self.del(before);
            }
        }
        self.put(entry, Vec::new());
        self.put_record(record.storage_key(), record)
    }
}

/// Writes the entry of every record of `R`'s table, a thousand per batch (the migration to
/// format 5, which adds the index); how many. Writing an entry again changes nothing, so a
/// migration cut short is finished by the next start.
pub(super) fn build<R: UsageRecord + Keyed + Record>(tree: &sled::Tree) -> SledResult<usize> {
    let mut written = 0;
    let mut batch = sled::Batch::default();
    for kv in tree.scan_prefix([R::TABLE]) {
        let (_, value) = kv?;
        let record: R = super::decode(&value)?;
        batch.insert(entry_key(&record), Vec::new());
        written += 1;
        if written % 1000 == 0 {
            tree.apply_batch(std::mem::take(&mut batch))?;
        }
    }
    tree.apply_batch(batch)?;
    Ok(written)
}

/// A usage record's place in the store: its table, and its key derived from its value.
pub(super) trait Keyed {
    /// The table tag.
    const TABLE: u8;
    /// What is not found when it is missing.
    const MISSING: Entity;
    /// The key.
    fn storage_key(&self) -> Vec<u8>;
}

impl Keyed for Hwid {
    const TABLE: u8 = tag::HWID;
    const MISSING: Entity = Entity::Hwid;
    fn storage_key(&self) -> Vec<u8> {
        hwid_key(self.team_id, self.license_id, &self.identifier)
    }
}

impl Keyed for IpRecord {
    const TABLE: u8 = tag::IP;
    const MISSING: Entity = Entity::Ip;
    fn storage_key(&self) -> Vec<u8> {
        ip_key(self.team_id, self.license_id, self.address)
    }
}

/// What the index reads: how many entries a store has read through it, for tests and
/// diagnostics (the cost of an admission is what it reads).
#[derive(Debug, Default)]
pub(crate) struct Reads(std::sync::atomic::AtomicU64);

impl Reads {
    fn add(&self, n: u64) {
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Entries read so far.
    pub(super) fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// How many of a license's records of `table` were seen at or after `since` and are not
/// forgotten, counting no further than `at_most` (the decision needs no more).
pub(super) fn count_since(
    tree: &sled::Tree,
    reads: &Reads,
    table: u8,
    team: TeamId,
    license: LicenseId,
    since: Timestamp,
    at_most: u64,
) -> SledResult<u64> {
    let counted = prefix(table, team, license, false);
    let start = key(&[&counted, &keys::time(since)]);
    let mut n = 0;
    for kv in tree.range(start..keys::prefix_end(&counted)).keys() {
        kv?;
        n += 1;
        if n >= at_most {
            break;
        }
    }
    reads.add(n);
    Ok(n)
}

/// A record to drop to make room: its key, its entry, and whether it is forgotten.
pub(super) struct Victim {
    pub(super) record: Vec<u8>,
    pub(super) entry: Vec<u8>,
    pub(super) forgotten: bool,
}

/// The least recently seen of a license's records of `table` that count against nothing, at
/// most `want`: forgotten ones, and, among the others, every one when the license has no limit
/// (`limited` false), else those seen before `cutoff` (the team's timeout; none without one).
/// Reads at most `want` entries of each kind, and one more.
#[allow(clippy::too_many_arguments)]
pub(super) fn victims(
    tree: &sled::Tree,
    reads: &Reads,
    table: u8,
    team: TeamId,
    license: LicenseId,
    limited: bool,
    cutoff: Option<Timestamp>,
    want: usize,
) -> SledResult<Vec<Victim>> {
    let mut read = 0;
    let mut take = |forgotten: bool| -> StoreResult<Vec<(i64, Vec<u8>)>> {
        let p = prefix(table, team, license, forgotten);
        let end = match (forgotten, limited, cutoff) {
            (true, _, _) | (false, false, _) => keys::prefix_end(&p),
            (false, true, Some(cutoff)) => key(&[&p, &keys::time(cutoff)]),
            (false, true, None) => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        for k in tree.range(p..end).keys().take(want) {
            let k = k.map_err(backend)?;
            read += 1;
            out.push((entry_time(&k), k.to_vec()));
        }
        Ok(out)
    };
    let forgotten = take(true)?;
    let others = take(false)?;
    reads.add(read);
    let mut all: Vec<(i64, bool, Vec<u8>)> = forgotten
        .into_iter()
        .map(|(t, k)| (t, true, k))
        .chain(others.into_iter().map(|(t, k)| (t, false, k)))
        .collect();
    all.sort();
    all.truncate(want);
    Ok(all
        .into_iter()
        .map(|(_, forgotten, entry)| Victim {
            record: record_key(table, team, license, &entry),
            entry,
            forgotten,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_holds_its_time_and_names_its_record() {
        let (team, license) = (TeamId::new(), LicenseId::new());
        let record = key(&[&[tag::IP], team.as_bytes(), license.as_bytes(), &[7; 16]]);
        let entry = key(&[
            &prefix(tag::IP, team, license, false),
            &keys::time(Timestamp::from_millis(1_234)),
            &[7; 16],
        ]);
        assert_eq!(entry_time(&entry), 1_234);
        assert_eq!(record_key(tag::IP, team, license, &entry), record);
        assert!(
            prefix(tag::IP, team, license, false) < prefix(tag::IP, team, license, true),
            "forgotten records sort apart, after the others"
        );
    }
}
