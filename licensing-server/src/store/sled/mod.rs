//! The embedded store: sled, implementing every storage trait of `licensing-core`, one file per
//! aggregate (`teams.rs`, `licenses.rs` with `activity.rs`, `customers.rs`, `catalog.rs`,
//! `misc.rs`) around the shared machinery here.
//!
//! - **Atomicity**: every write reads what it needs, stages all its changes (records, indexes,
//!   counters) and applies them with one `apply_batch`, which sled applies atomically. Writes
//!   exclude each other where they must and no further (`locks.rs`): a license's atomic step
//!   (the client API's limits) holds that license's lock stripe only; developer writes hold a
//!   mutex among themselves and the stripes of the licenses they change. Reads take no lock.
//! - **Durability**: a write returns once a flush (fsync) that covers it has completed. Flushes
//!   run on one flusher thread and group-commit: every batch applied before a flush starts is
//!   covered by it. The only writes that do not wait are the plain `lastSeenAt`/`lastActiveAt`
//!   refreshes of devices that already count, which wait in memory (`refresh.rs`), are applied
//!   by the next writer of the license, and are made durable by the flusher within 500 ms.
//! - **Flushes never overlap batches**: in sled 0.34, `apply_batch` takes a global exclusive
//!   lock, and a flush holds the shared side of it while it waits for sled's I/O threads, which
//!   need the shared side too; a batch applied while a flush runs deadlocks the store (seen under
//!   concurrent writes; the `lists` bench reproduced it). So sled's own background flusher is
//!   off, batches take the store's gate shared and the flusher takes it exclusive.
//! - **Devices and addresses** (`activity.rs`) are keyed by value under their license, with
//!   per-license counts, so that a client request reads its own records only; a cap bounds what
//!   one license may hold.
//! - **Indexes**: licenses and customers, the lists that grow large, have order-preserving sort
//!   indexes and per-team counters, so an unfiltered page reads only that page's records; licenses
//!   also have reverse indexes by customer and by product (filters, cascades, statistics). Smaller
//!   collections (products, releases, branches, a license's devices) are read per team or license
//!   and sorted in memory with core's comparators.
//! - **Records** are encoded by `codec.rs`: the many and hot ones in a compact binary form, the
//!   others JSON.
//! - **A client request** reads three keys when its device and address already count: its
//!   license (by an id remembered from its key, `key_ids.rs`, checked against the key read
//!   back), its device record and its address record.
//! - **Format**: the store records its format version (`format.rs`); an older store is migrated
//!   at start-up, a newer one refused.

mod activity;
mod catalog;
mod check;
mod codec;
mod compact;
mod customers;
mod format;
mod key_ids;
mod keys;
mod licenses;
mod locks;
mod misc;
mod refresh;
mod replay;
mod seen;
mod staff;
mod teams;
mod webhooks;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::store::refresh::{self as shared_refresh, Refreshes};
pub use check::Findings;
use codec::{Record, decode, encode};
pub(crate) use compact::{compact, finish_compaction};
pub use format::{FORMAT, migration_copies};
use licensing_core::api::requests::{
    AuditQuery, CustomerListQuery, CustomerSort, DeviceListQuery, LicenseListQuery, LicenseSort,
    Paging, ProductListQuery, ReleaseListQuery, SortDirection,
};
use licensing_core::crypto::ApiKeyHash;
use licensing_core::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, Customer, HourlyStats, Hwid, IpRecord,
    License, OutboxMessage, Overview, Product, Release, Team, TeamFeatures, TeamSettings,
    TopProduct, UsageRecord,
};
use licensing_core::store::*;
use licensing_core::validate::HardwareId;
use licensing_core::verify::Denial;
use licensing_core::{
    ApiKeyId, AuditId, BlacklistId, BranchId, CustomerId, HwidId, IpId, LicenseId, LicenseKey,
    MessageId, ProductId, ReleaseId, TeamId, Timestamp,
};
use locks::Locks;
use tokio::sync::watch;

use keys::{key, tag};

use super::{addr16, hwid_digest};

/// Index ids under a table tag.
mod ix {
    pub(super) const CREATED: u8 = b'c';
    pub(super) const UPDATED: u8 = b'u';
    pub(super) const ACTIVE: u8 = b'a';
    pub(super) const BY_CUSTOMER: u8 = b'C';
    pub(super) const BY_PRODUCT: u8 = b'P';
    pub(super) const NAME: u8 = b'n';
    pub(super) const EMAIL: u8 = b'e';
    pub(super) const USERNAME: u8 = b'x';
}

/// The sled store. Clones share the database.
#[derive(Clone)]
pub struct SledStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: sled::Db,
    tree: sled::Tree,
    /// The write locks (`locks.rs`).
    locks: Arc<Locks>,
    /// Batches applied so far.
    applied: Arc<AtomicU64>,
    flusher: Arc<Flusher>,
    /// The flusher thread, joined on drop so the database is closed when the store is.
    flusher_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The flush progress: batches covered by the last completed flush, or the failure.
    flushed: watch::Receiver<FlushState>,
    /// Refreshes waiting to be written.
    refreshes: Arc<Refreshes>,
    /// License ids by key, remembered (`key_ids.rs`).
    key_ids: key_ids::KeyIds,
    /// Entries read through the index by last use (`seen.rs`).
    seen_reads: seen::Reads,
}

/// What the last flush achieved.
#[derive(Clone, Debug, Default)]
struct FlushState {
    covered: u64,
    failure: Option<Arc<str>>,
}

/// Wakes the flusher thread.
#[derive(Default)]
struct Flusher {
    state: Mutex<FlusherState>,
    wake: Condvar,
}

#[derive(Default)]
struct FlusherState {
    requested: bool,
    stop: bool,
}

/// The default size of sled's page cache, in MiB (sled's own default is 1 GiB). The load
/// benchmark's full data set (100,000 licenses, 1,000,000 devices) keeps the server under 512 MiB
/// with it; see benches/README.md.
pub const DEFAULT_CACHE_MB: u64 = 256;

/// How often the flusher makes undelayed writes (plain refreshes) durable.
const BACKGROUND_FLUSH: Duration = Duration::from_millis(500);

impl Flusher {
    fn request(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.requested = true;
        }
        self.wake.notify_one();
    }

    fn stop(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.stop = true;
        }
        self.wake.notify_one();
    }

    /// Waits for a request, a stop, or the background interval; `false` means stop.
    fn wait(&self) -> bool {
        let Ok(guard) = self.state.lock() else {
            return false;
        };
        let Ok((mut guard, _)) = self
            .wake
            .wait_timeout_while(guard, BACKGROUND_FLUSH, |st| !st.requested && !st.stop)
        else {
            return false;
        };
        guard.requested = false;
        !guard.stop
    }
}

impl Drop for Inner {
    /// Stops the flusher (its last round flushes what is left) and waits for it, so that the
    /// database is closed and can be opened again as soon as the store is dropped.
    fn drop(&mut self) {
        self.flusher.stop();
        if let Some(thread) = self.flusher_thread.lock().ok().and_then(|mut t| t.take())
            && thread.join().is_err()
        {
            tracing::error!("the store flusher panicked");
        }
    }
}

/// Stages waiting refreshes (of licenses whose locks the caller holds) in one batch: the
/// licenses and their indexes, the device and address records and their entries by last use.
fn stage_refreshes(
    tree: &sled::Tree,
    taken: Vec<(LicenseId, shared_refresh::Refresh)>,
) -> StoreResult<Tx<'_>> {
    let mut tx = Tx {
        tree,
        pending: BTreeMap::new(),
    };
    for entry in taken {
        refresh::stage(&mut tx, entry)?;
    }
    Ok(tx)
}

/// The waiting refreshes of shard `i` whose licenses' mutexes are free now, taken with the
/// mutexes held (a refresh is taken only by whoever holds its license's mutex).
fn take_free<'l>(
    locks: &'l Locks,
    refreshes: &Refreshes,
    i: usize,
) -> (
    Vec<locks::LicenseGuard<'l>>,
    Vec<(LicenseId, shared_refresh::Refresh)>,
) {
    let mut guards = Vec::new();
    let mut taken = Vec::new();
    for license in refreshes.licenses_in(i) {
        if let Some(guard) = locks.try_license(license) {
            if let Some(refresh) = refreshes.take_license(license) {
                taken.push(refresh);
            }
            guards.push(guard);
        }
    }
    (guards, taken)
}

/// Writes staged refreshes; the caller holds the gate (shared).
fn write_refreshes(tx: Tx<'_>, applied: &AtomicU64) -> StoreResult<()> {
    tx.commit()?;
    applied.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// The flusher thread: applies waiting refreshes (stripe by stripe, under each stripe's lock)
/// and flushes (under the gate, exclusively), when asked, or every 500 ms when there is
/// something to write, and publishes how far each flush reached.
fn run_flusher(
    tree: sled::Tree,
    locks: Arc<Locks>,
    applied: Arc<AtomicU64>,
    refreshes: Arc<Refreshes>,
    flusher: Arc<Flusher>,
    progress: watch::Sender<FlushState>,
) {
    loop {
        let keep_going = flusher.wait();
        let covered = progress.borrow().covered;
        if applied.load(Ordering::Acquire) > covered || !refreshes.is_empty() {
            for i in 0..shared_refresh::STRIPES {
                // The licenses whose mutex is free now; a license held by a step is left to
                // it (it writes its own refreshes first), or to the next round.
                let (guards, taken) = take_free(&locks, &refreshes, i);
                if taken.is_empty() {
                    continue;
                }
                let written = stage_refreshes(&tree, taken).and_then(|tx| {
                    let _gate = locks.gate.blocking_read();
                    write_refreshes(tx, &applied)
                });
                if let Err(e) = written {
                    tracing::error!(error = %e, "writing device refreshes failed");
                }
                drop(guards);
            }
            let gate = locks.gate.blocking_write();
            let target = applied.load(Ordering::Acquire);
            let result = tree.flush();
            drop(gate);
            let state = match result {
                Ok(_) => FlushState {
                    covered: target,
                    failure: None,
                },
                Err(e) => {
                    tracing::error!(error = %e, "store flush failed");
                    FlushState {
                        covered,
                        failure: Some(Arc::from(e.to_string())),
                    }
                }
            };
            progress.send_replace(state);
        }
        if !keep_going {
            return;
        }
    }
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore").finish_non_exhaustive()
    }
}

/// How long a first open waits for another handle of the same database to let go of its lock
/// (a store closed by this process a moment before; a server still running on the directory is
/// refused after it).
const FIRST_OPEN_LOCK_WAIT: Duration = Duration::from_secs(30);
/// How long a reopen right after this process closed the store waits for its lock.
pub(crate) const REOPEN_LOCK_WAIT: Duration = Duration::from_secs(120);

/// Opens the database `config` names. sled lets go of a directory's file lock a moment after
/// the last handle is dropped (its I/O threads finish first), so a store reopened at once (after
/// a migration's copy, a compaction, a command or test that closed it) may find the lock still
/// held: the open is then tried again, with growing pauses, until the lock is free or `wait`
/// has passed.
pub(crate) fn open_db(config: &sled::Config, wait: Duration) -> StoreResult<sled::Db> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(5);
    let mut told = false;
    loop {
        match config.open() {
            Ok(db) => return Ok(db),
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock") && started.elapsed() < wait =>
            {
                if !told && started.elapsed() > Duration::from_secs(1) {
                    tracing::info!(
                        path = %config.path.display(),
                        "waiting for the store's lock (is another process using it?)"
                    );
                    told = true;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            Err(e) => return Err(backend(e)),
        }
    }
}

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::backend_from("sled", e)
}

fn id16(bytes: &[u8]) -> StoreResult<[u8; 16]> {
    bytes
        .get(bytes.len().saturating_sub(16)..)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| StoreError::backend("index key too short"))
}

/// The licenses a developer write changes (records, not just references to them): their locks
/// are held while it stages and applies.
#[derive(Clone, Copy, Debug)]
enum Touch {
    /// None.
    Nothing,
    /// This one.
    License(LicenseId),
    /// Any number (the wide lock is held).
    Licenses,
}

/// Staged changes of one write, readable before they are applied.
struct Tx<'a> {
    tree: &'a sled::Tree,
    pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Tx<'_> {
    fn get(&self, k: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        match self.pending.get(k) {
            Some(v) => Ok(v.clone()),
            None => Ok(self.tree.get(k).map_err(backend)?.map(|v| v.to_vec())),
        }
    }

    fn get_record<T: Record>(&self, k: &[u8]) -> StoreResult<Option<T>> {
        self.get(k)?.map(|v| decode(&v)).transpose()
    }

    fn put(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.pending.insert(k, Some(v));
    }

    fn put_record<T: Record>(&mut self, k: Vec<u8>, v: &T) -> StoreResult<()> {
        self.put(k, encode(v)?);
        Ok(())
    }

    fn del(&mut self, k: Vec<u8>) {
        self.pending.insert(k, None);
    }

    fn add_count(&mut self, k: Vec<u8>, delta: i64) -> StoreResult<()> {
        let current = self.get(&k)?.map_or(0, |v| decode_count(&v));
        let next = current.saturating_add_signed(delta);
        self.put(k, next.to_be_bytes().to_vec());
        Ok(())
    }

    /// Stages a write's journal: its audit entry, by team and time, and by time alone for
    /// pruning; its webhook events, in the queue.
    fn journal(&mut self, journal: &Journal) -> StoreResult<()> {
        for entry in &journal.audit {
            let (by_team, by_time) = audit_keys(entry.team_id, entry.at, entry.id);
            self.put_record(by_team, entry)?;
            self.put(by_time, Vec::new());
        }
        for event in &journal.events {
            self.put_record(webhooks::event_key(event.id), event)?;
        }
        Ok(())
    }

    fn commit(self) -> StoreResult<()> {
        let mut batch = sled::Batch::default();
        for (k, v) in self.pending {
            match v {
                Some(v) => batch.insert(k, v),
                None => batch.remove(k),
            }
        }
        self.tree.apply_batch(batch).map_err(backend)
    }
}

fn decode_count(v: &[u8]) -> u64 {
    v.try_into().map(u64::from_be_bytes).unwrap_or(0)
}

// ---- key builders ----

fn team_key(id: TeamId) -> Vec<u8> {
    key(&[&[tag::TEAM], id.as_bytes()])
}
fn api_key_key(hash: &ApiKeyHash) -> Vec<u8> {
    key(&[&[tag::API_KEY], hash.as_bytes()])
}
fn team_api_key_key(team: TeamId, id: ApiKeyId) -> Vec<u8> {
    key(&[&[tag::TEAM_API_KEY], team.as_bytes(), id.as_bytes()])
}
fn license_key(team: TeamId, id: LicenseId) -> Vec<u8> {
    key(&[&[tag::LICENSE], team.as_bytes(), id.as_bytes()])
}
fn license_by_key(team: TeamId, k: &LicenseKey) -> Vec<u8> {
    key(&[&[tag::LICENSE_KEY], team.as_bytes(), k.as_bytes()])
}
fn customer_key(team: TeamId, id: CustomerId) -> Vec<u8> {
    key(&[&[tag::CUSTOMER], team.as_bytes(), id.as_bytes()])
}
fn product_key(team: TeamId, id: ProductId) -> Vec<u8> {
    key(&[&[tag::PRODUCT], team.as_bytes(), id.as_bytes()])
}
fn branch_key(team: TeamId, product: ProductId, id: BranchId) -> Vec<u8> {
    key(&[
        &[tag::BRANCH],
        team.as_bytes(),
        product.as_bytes(),
        id.as_bytes(),
    ])
}
fn release_key(team: TeamId, id: ReleaseId) -> Vec<u8> {
    key(&[&[tag::RELEASE], team.as_bytes(), id.as_bytes()])
}
/// The key of a license's record of a device, by a digest of its identifier.
fn hwid_key(team: TeamId, license: LicenseId, identifier: &HardwareId) -> Vec<u8> {
    hwid_key_of(team, license, &hwid_digest(identifier))
}
fn hwid_key_of(team: TeamId, license: LicenseId, digest: &[u8; 16]) -> Vec<u8> {
    key(&[&[tag::HWID], team.as_bytes(), license.as_bytes(), digest])
}
/// The key of a license's record of an address.
fn ip_key(team: TeamId, license: LicenseId, ip: IpAddr) -> Vec<u8> {
    ip_key_of(team, license, &addr16(ip))
}
fn ip_key_of(team: TeamId, license: LicenseId, addr: &[u8; 16]) -> Vec<u8> {
    key(&[&[tag::IP], team.as_bytes(), license.as_bytes(), addr])
}
/// A license's count of its records of one kind (`table`: HWID or IP).
fn tally_key(table: u8, team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::COUNT, table], team.as_bytes(), license.as_bytes()])
}

/// How many records of one kind a license holds, and how many of them are forgotten.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    total: u64,
    forgotten: u64,
}

impl Tally {
    fn of(forgotten: impl Iterator<Item = bool>) -> Self {
        let mut tally = Self::default();
        for f in forgotten {
            tally.total += 1;
            if f {
                tally.forgotten += 1;
            }
        }
        tally
    }

    fn read(tx: &Tx<'_>, k: &[u8]) -> StoreResult<Self> {
        Ok(tx.get(k)?.map_or_else(Self::default, |v| Self::decode(&v)))
    }

    fn decode(v: &[u8]) -> Self {
        let half = |range: std::ops::Range<usize>| {
            v.get(range)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        };
        Self {
            total: half(0..8),
            forgotten: half(8..16),
        }
    }

    fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.total.to_be_bytes());
        out[8..].copy_from_slice(&self.forgotten.to_be_bytes());
        out
    }

    /// Records that count when the team sets no timeout.
    fn counting(&self) -> u64 {
        self.total.saturating_sub(self.forgotten)
    }

    fn forget(&mut self) {
        self.forgotten = (self.forgotten + 1).min(self.total);
    }

    fn unforget(&mut self) {
        self.forgotten = self.forgotten.saturating_sub(1);
    }

    fn remove(&mut self, forgotten: bool) {
        self.total = self.total.saturating_sub(1);
        if forgotten {
            self.unforget();
        }
    }
}

/// An audit entry's keys: by team, then time and id (the record); by time, then team and id (an
/// empty value, for pruning oldest first across teams).
fn audit_keys(team: TeamId, at: Timestamp, id: AuditId) -> (Vec<u8>, Vec<u8>) {
    (
        key(&[
            &[tag::AUDIT],
            team.as_bytes(),
            &keys::time(at),
            id.as_bytes(),
        ]),
        key(&[
            &[tag::INDEX, tag::AUDIT],
            &keys::time(at),
            team.as_bytes(),
            id.as_bytes(),
        ]),
    )
}

fn blacklist_key(team: TeamId, id: BlacklistId) -> Vec<u8> {
    key(&[&[tag::BLACKLIST], team.as_bytes(), id.as_bytes()])
}
fn stats_key(team: TeamId, hour: i64) -> Vec<u8> {
    key(&[&[tag::STATS], team.as_bytes(), &keys::hour(hour)])
}
fn outbox_key(id: MessageId) -> Vec<u8> {
    key(&[&[tag::OUTBOX], id.as_bytes()])
}
/// The outbox queue: due time, then id.
fn outbox_due_key(m: &OutboxMessage) -> Vec<u8> {
    key(&[
        &[tag::INDEX, tag::OUTBOX],
        &keys::time(m.next_attempt_at),
        m.id.as_bytes(),
    ])
}
fn mail_day_key(team: TeamId, day: i64) -> Vec<u8> {
    key(&[
        &[tag::COUNT, tag::MAIL_DAY],
        team.as_bytes(),
        &keys::hour(day),
    ])
}
fn count_key(table: u8, team: TeamId) -> Vec<u8> {
    key(&[&[tag::COUNT, table], team.as_bytes()])
}
fn index_prefix(table: u8, index: u8, team: TeamId) -> Vec<u8> {
    key(&[&[tag::INDEX, table, index], team.as_bytes()])
}

fn license_indexes(l: &License) -> Vec<Vec<u8>> {
    let id = l.id.as_bytes();
    let mut keys = vec![
        key(&[
            &index_prefix(tag::LICENSE, ix::CREATED, l.team_id),
            &keys::time(l.created_at),
            id,
        ]),
        key(&[
            &index_prefix(tag::LICENSE, ix::UPDATED, l.team_id),
            &keys::time(l.updated_at),
            id,
        ]),
        key(&[
            &index_prefix(tag::LICENSE, ix::ACTIVE, l.team_id),
            &keys::opt_time(l.last_active_at),
            id,
        ]),
    ];
    for c in &l.customer_ids {
        keys.push(key(&[
            &index_prefix(tag::LICENSE, ix::BY_CUSTOMER, l.team_id),
            c.as_bytes(),
            id,
        ]));
    }
    for p in &l.product_ids {
        keys.push(key(&[
            &index_prefix(tag::LICENSE, ix::BY_PRODUCT, l.team_id),
            p.as_bytes(),
            id,
        ]));
    }
    keys
}

fn customer_indexes(c: &Customer) -> Vec<Vec<u8>> {
    let id = c.id.as_bytes();
    let p = |index| index_prefix(tag::CUSTOMER, index, c.team_id);
    vec![
        key(&[&p(ix::CREATED), &keys::time(c.created_at), id]),
        key(&[&p(ix::UPDATED), &keys::time(c.updated_at), id]),
        key(&[&p(ix::NAME), &keys::text(c.full_name.as_deref()), id]),
        key(&[
            &p(ix::EMAIL),
            &keys::text(c.email.as_ref().map(|e| e.as_str())),
            id,
        ]),
        key(&[&p(ix::USERNAME), &keys::text(c.username.as_deref()), id]),
    ]
}

/// Replaces `old` index keys with `new` ones, writing only those that change (a heartbeat's
/// refresh moves one of a license's index keys, not all of them).
fn reindex(tx: &mut Tx<'_>, old: Vec<Vec<u8>>, new: Vec<Vec<u8>>) {
    let keep: HashSet<&Vec<u8>> = new.iter().collect();
    for k in old.iter().filter(|k| !keep.contains(k)) {
        tx.del(k.clone());
    }
    let had: HashSet<&Vec<u8>> = old.iter().collect();
    for k in new.iter().filter(|k| !had.contains(k)) {
        tx.put(k.clone(), Vec::new());
    }
}

impl SledStore {
    /// Opens (or creates) the store in `dir`, with the default cache.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        Self::open_with_cache(dir, DEFAULT_CACHE_MB * 1024 * 1024)
    }

    /// Opens (or creates) the store in `dir`, with `cache_bytes` for sled's page cache.
    ///
    /// A store of an older format is copied first (to `<dir>.format-<N>-backup`, beside it), then
    /// migrated in place; see `format.rs`.
    pub fn open_with_cache(dir: &Path, cache_bytes: u64) -> StoreResult<Self> {
        Self::with_config(
            sled::Config::new().path(dir).cache_capacity(cache_bytes),
            Some(dir),
        )
    }

    /// A store in a temporary directory that sled removes when the store is dropped (tests).
    pub fn temporary() -> StoreResult<Self> {
        Self::with_config(sled::Config::new().temporary(true), None)
    }

    /// Opens the store `config` describes; one in `dir` that must be migrated is copied first.
    fn with_config(config: sled::Config, dir: Option<&Path>) -> StoreResult<Self> {
        // sled's own periodic flusher stays off: see the module documentation.
        let config = config.flush_every_ms(None);
        let mut db = open_db(&config, FIRST_OPEN_LOCK_WAIT)?;
        let mut tree = db.open_tree("data").map_err(backend)?;
        if let Some(dir) = dir
            && let Some(found) = format::needs_migration(&tree)?
        {
            drop(tree);
            db.flush().map_err(backend)?;
            drop(db);
            format::copy_before_migrating(dir, found)?;
            db = open_db(&config, REOPEN_LOCK_WAIT)?;
            tree = db.open_tree("data").map_err(backend)?;
        }
        format::upgrade(&tree)?;
        let locks = Arc::new(Locks::default());
        let applied = Arc::new(AtomicU64::new(0));
        let flusher = Arc::new(Flusher::default());
        let refreshes = Arc::new(Refreshes::default());
        let (progress, flushed) = watch::channel(FlushState::default());
        let flusher_thread = {
            let (tree, locks, applied, refreshes, flusher) = (
                tree.clone(),
                locks.clone(),
                applied.clone(),
                refreshes.clone(),
                flusher.clone(),
            );
            std::thread::Builder::new()
                .name("store-flusher".into())
                .spawn(move || run_flusher(tree, locks, applied, refreshes, flusher, progress))
                .map_err(backend)?
        };
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                tree,
                locks,
                applied,
                flusher,
                flusher_thread: Mutex::new(Some(flusher_thread)),
                flushed,
                refreshes,
                key_ids: Default::default(),
                seen_reads: Default::default(),
            }),
        })
    }

    /// Makes everything written so far durable.
    pub async fn flush(&self) -> StoreResult<()> {
        self.flushed_up_to(self.inner.applied.load(Ordering::Acquire))
            .await
    }

    /// Waits until a flush covers batch number `batch`.
    async fn flushed_up_to(&self, batch: u64) -> StoreResult<()> {
        let mut flushed = self.inner.flushed.clone();
        if flushed.borrow().covered >= batch {
            return Ok(());
        }
        self.inner.flusher.request();
        let state = flushed
            .wait_for(|st| st.covered >= batch || st.failure.is_some())
            .await
            .map_err(|_| StoreError::backend("the store flusher stopped"))?
            .clone();
        match state.failure {
            Some(e) if state.covered < batch => {
                Err(StoreError::backend(format!("flush failed: {e}")))
            }
            _ => Ok(()),
        }
    }

    /// Whether the store holds no team yet.
    pub fn is_empty(&self) -> StoreResult<bool> {
        Ok(self
            .inner
            .tree
            .scan_prefix([tag::TEAM])
            .next()
            .transpose()
            .map_err(backend)?
            .is_none())
    }

    /// Bytes the database occupies on disk.
    pub fn size_on_disk(&self) -> StoreResult<u64> {
        self.inner.db.size_on_disk().map_err(backend)
    }

    /// Applies a staged write under the gate; the batch number to wait for to make it durable.
    async fn commit(&self, tx: Tx<'_>) -> StoreResult<u64> {
        if tx.pending.is_empty() {
            // Nothing to write: durable once what it read is.
            return Ok(self.inner.applied.load(Ordering::Acquire));
        }
        let _gate = self.inner.locks.gate.read().await;
        tx.commit()?;
        Ok(self.inner.applied.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// Writes the waiting refreshes of one license; the caller holds its stripe.
    async fn apply_license_refresh(&self, license: LicenseId) -> StoreResult<()> {
        let Some(taken) = self.inner.refreshes.take_license(license) else {
            return Ok(());
        };
        let tx = stage_refreshes(&self.inner.tree, vec![taken])?;
        let _gate = self.inner.locks.gate.read().await;
        write_refreshes(tx, &self.inner.applied)
    }

    /// Writes every waiting refresh; the caller holds every license (the wide lock).
    async fn apply_every_refresh(&self) -> StoreResult<()> {
        let taken = self.inner.refreshes.take_all();
        if taken.is_empty() {
            return Ok(());
        }
        let tx = stage_refreshes(&self.inner.tree, taken)?;
        let _gate = self.inner.locks.gate.read().await;
        write_refreshes(tx, &self.inner.applied)
    }

    /// Runs one developer write: `f` stages changes, which are applied together, holding the
    /// developer mutex and the licenses `touch` names (whose waiting refreshes are written
    /// first, so the write reads exact times). Returns the result and the batch number to wait
    /// for to make it durable.
    async fn write<T>(
        &self,
        touch: Touch,
        journal: &Journal,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<(T, u64)> {
        let locks = &self.inner.locks;
        let _dev = locks.dev.lock().await;
        let (_one, _all) = match touch {
            Touch::Nothing => (None, None),
            Touch::License(license) => {
                let held = locks.license(license).await;
                self.apply_license_refresh(license).await?;
                (Some(held), None)
            }
            Touch::Licenses => {
                let all = locks.all().await;
                self.apply_every_refresh().await?;
                (None, Some(all))
            }
        };
        let mut tx = Tx {
            tree: &self.inner.tree,
            pending: BTreeMap::new(),
        };
        let out = f(&mut tx)?;
        tx.journal(journal)?;
        let batch = self.commit(tx).await?;
        Ok((out, batch))
    }

    /// Applies waiting refreshes, so that a read of many records sees them (lists, statistics):
    /// those of free licenses a shard at a time, each of the others once its license is free.
    async fn settle(&self) -> StoreResult<()> {
        if self.inner.refreshes.is_empty() {
            return Ok(());
        }
        let locks = &self.inner.locks;
        for i in 0..shared_refresh::STRIPES {
            let (guards, taken) = take_free(locks, &self.inner.refreshes, i);
            if !taken.is_empty() {
                let tx = stage_refreshes(&self.inner.tree, taken)?;
                let _gate = locks.gate.read().await;
                write_refreshes(tx, &self.inner.applied)?;
            }
            drop(guards);
            for license in self.inner.refreshes.licenses_in(i) {
                let _held = locks.license(license).await;
                self.apply_license_refresh(license).await?;
            }
        }
        Ok(())
    }

    /// A write that changes no license and records no journal, flushed before it returns.
    async fn durable<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>) -> StoreResult<T> {
        self.journaled_touching(&Journal::NONE, Touch::Nothing, f)
            .await
    }

    /// A write that changes the licenses `touch` names and records no journal, flushed before
    /// it returns.
    async fn durable_touching<T>(
        &self,
        touch: Touch,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.journaled_touching(&licensing_core::store::Journal::NONE, touch, f)
            .await
    }

    /// A developer write that changes no license, with its journal, flushed before it returns.
    async fn journaled<T>(
        &self,
        journal: &Journal,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.journaled_touching(journal, Touch::Nothing, f).await
    }

    /// A developer write that changes the licenses `touch` names, with its journal (staged in
    /// the same batch when `f` succeeds), flushed before it returns.
    async fn journaled_touching<T>(
        &self,
        journal: &Journal,
        touch: Touch,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let (out, batch) = self.write(touch, journal, f).await?;
        self.flushed_up_to(batch).await?;
        Ok(out)
    }

    fn get_record<T: Record>(&self, k: &[u8]) -> StoreResult<Option<T>> {
        self.inner
            .tree
            .get(k)
            .map_err(backend)?
            .map(|v| decode(&v))
            .transpose()
    }

    fn scan<T: Record>(&self, prefix: &[u8]) -> StoreResult<Vec<T>> {
        self.inner
            .tree
            .scan_prefix(prefix)
            .map(|kv| kv.map_err(backend).and_then(|(_, v)| decode(&v)))
            .collect()
    }

    fn count(&self, table: u8, team: TeamId) -> StoreResult<u64> {
        Ok(self
            .inner
            .tree
            .get(count_key(table, team))
            .map_err(backend)?
            .map_or(0, |v| decode_count(&v)))
    }

    /// Walks an index in order, loading records; `accept` filters. Unfiltered walks stop after the
    /// page and take the total from the counter.
    fn walk_index<T>(
        &self,
        prefix: &[u8],
        paging: &Paging,
        load: impl Fn([u8; 16]) -> StoreResult<Option<T>>,
        accept: Option<&dyn Fn(&T) -> bool>,
        unfiltered_total: u64,
    ) -> StoreResult<Page<T>> {
        let iter = self.inner.tree.scan_prefix(prefix);
        let iter: Box<dyn Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> =
            match paging.direction {
                SortDirection::Asc => Box::new(iter),
                SortDirection::Desc => Box::new(iter.rev()),
            };
        let offset = paging.offset();
        let size = u64::from(paging.page_size);
        let mut seen: u64 = 0;
        let mut items = Vec::new();
        for kv in iter {
            let (k, _) = kv.map_err(backend)?;
            let id = id16(&k)?;
            match accept {
                None => {
                    if seen >= offset + size {
                        break;
                    }
                    if seen >= offset
                        && let Some(item) = load(id)?
                    {
                        items.push(item);
                    }
                    seen += 1;
                }
                Some(accept) => {
                    let Some(item) = load(id)? else { continue };
                    if !accept(&item) {
                        continue;
                    }
                    if seen >= offset && seen < offset + size {
                        items.push(item);
                    }
                    seen += 1;
                }
            }
        }
        let total = if accept.is_none() {
            unfiltered_total
        } else {
            seen
        };
        let has_next_page = offset + (items.len() as u64) < total;
        Ok(Page {
            items,
            total,
            has_next_page,
        })
    }

    fn license_ids_by(&self, index: u8, team: TeamId, owner: &[u8]) -> StoreResult<Vec<LicenseId>> {
        let prefix = key(&[&index_prefix(tag::LICENSE, index, team), owner]);
        self.inner
            .tree
            .scan_prefix(prefix)
            .keys()
            .map(|k| {
                k.map_err(backend)
                    .and_then(|k| id16(&k))
                    .map(|b| LicenseId::from_uuid(uuid::Uuid::from_bytes(b)))
            })
            .collect()
    }
}

// ---- shared write steps ----

fn check_license_refs(tx: &Tx<'_>, l: &License) -> StoreResult<()> {
    if let Some(owner) = tx.get(&license_by_key(l.team_id, &l.license_key))?
        && owner.as_slice() != l.id.as_bytes()
    {
        return Err(StoreError::conflict(
            "licenseKey",
            "is already used by another license of this team",
        ));
    }
    for c in &l.customer_ids {
        if tx.get(&customer_key(l.team_id, *c))?.is_none() {
            return Err(StoreError::NotFound(Entity::Customer));
        }
    }
    for p in &l.product_ids {
        if tx.get(&product_key(l.team_id, *p))?.is_none() {
            return Err(StoreError::NotFound(Entity::Product));
        }
    }
    Ok(())
}

fn put_license(tx: &mut Tx<'_>, l: &License, old: Option<&License>) -> StoreResult<()> {
    let key_changed = match old {
        Some(old) => {
            let changed = old.license_key != l.license_key;
            if changed {
                tx.del(license_by_key(old.team_id, &old.license_key));
            }
            reindex(tx, license_indexes(old), license_indexes(l));
            changed
        }
        None => {
            reindex(tx, Vec::new(), license_indexes(l));
            tx.add_count(count_key(tag::LICENSE, l.team_id), 1)?;
            true
        }
    };
    if key_changed {
        tx.put(
            license_by_key(l.team_id, &l.license_key),
            l.id.as_bytes().to_vec(),
        );
    }
    tx.put_record(license_key(l.team_id, l.id), l)
}

fn put_customer(tx: &mut Tx<'_>, c: &Customer, old: Option<&Customer>) -> StoreResult<()> {
    match old {
        Some(old) => reindex(tx, customer_indexes(old), customer_indexes(c)),
        None => {
            reindex(tx, Vec::new(), customer_indexes(c));
            tx.add_count(count_key(tag::CUSTOMER, c.team_id), 1)?;
        }
    }
    tx.put_record(customer_key(c.team_id, c.id), c)
}

impl SledStore {
    fn team_releases(&self, team: TeamId) -> StoreResult<Vec<Release>> {
        self.scan(&key(&[&[tag::RELEASE], team.as_bytes()]))
    }

    fn check_release_refs(&self, tx: &Tx<'_>, r: &Release) -> StoreResult<()> {
        if tx.get(&product_key(r.team_id, r.product_id))?.is_none() {
            return Err(StoreError::NotFound(Entity::Product));
        }
        if let Some(b) = r.branch_id
            && tx.get(&branch_key(r.team_id, r.product_id, b))?.is_none()
        {
            return Err(StoreError::NotFound(Entity::Branch));
        }
        for l in &r.allowed_license_ids {
            if tx.get(&license_key(r.team_id, *l))?.is_none() {
                return Err(StoreError::NotFound(Entity::License));
            }
        }
        let taken = self.team_releases(r.team_id)?.iter().any(|o| {
            o.product_id == r.product_id
                && o.branch_id == r.branch_id
                && o.version == r.version
                && o.id != r.id
        });
        if taken {
            return Err(StoreError::conflict(
                "version",
                "already exists for this product and branch",
            ));
        }
        Ok(())
    }

    fn put_release(&self, tx: &mut Tx<'_>, r: &Release) -> StoreResult<()> {
        if r.latest {
            for mut o in self.team_releases(r.team_id)? {
                if o.product_id == r.product_id
                    && o.branch_id == r.branch_id
                    && o.id != r.id
                    && o.latest
                {
                    o.latest = false;
                    tx.put_record(release_key(o.team_id, o.id), &o)?;
                }
            }
        }
        tx.put_record(release_key(r.team_id, r.id), r)
    }

    fn delete_releases_where(
        &self,
        tx: &mut Tx<'_>,
        team: TeamId,
        doomed: impl Fn(&Release) -> bool,
    ) -> StoreResult<Vec<Release>> {
        let gone: Vec<Release> = self
            .team_releases(team)?
            .into_iter()
            .filter(|r| doomed(r))
            .collect();
        for r in &gone {
            tx.del(release_key(team, r.id));
        }
        Ok(gone)
    }

    /// Rewrites the licenses listed under a reverse index, with `change` applied.
    fn update_licenses_of(
        &self,
        tx: &mut Tx<'_>,
        index: u8,
        team: TeamId,
        owner: &[u8],
        change: impl Fn(&mut License),
    ) -> StoreResult<()> {
        for id in self.license_ids_by(index, team, owner)? {
            if let Some(old) = tx.get_record::<License>(&license_key(team, id))? {
                let mut next = old.clone();
                change(&mut next);
                put_license(tx, &next, Some(&old))?;
            }
        }
        Ok(())
    }

    fn usage<R: Record>(&self, table: u8, team: TeamId, license: LicenseId) -> StoreResult<Vec<R>> {
        self.scan(&key(&[&[table], team.as_bytes(), license.as_bytes()]))
    }

    /// How many entries of the index by last use the store has read (`seen.rs`): what deciding
    /// limits and making room under the cap cost, for tests and diagnostics.
    pub fn index_reads(&self) -> u64 {
        self.inner.seen_reads.get()
    }

    fn require_license(&self, team: TeamId, id: LicenseId) -> StoreResult<License> {
        self.get_record(&license_key(team, id))?
            .ok_or(StoreError::NotFound(Entity::License))
    }
}

fn list_usage<R: UsageRecord>(records: Vec<R>, query: &DeviceListQuery) -> Page<R> {
    let items = records
        .into_iter()
        .filter(|r| query.filter || !r.forgotten())
        .collect();
    page_of(items, &query.paging, |a, b| {
        compare_usage(a, b, query.sort, query.paging.direction)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use licensing_core::store::testing::BlockOn;

    /// Runs the suite's futures on one shared tokio runtime (the store needs none, but the
    /// server's own futures will).
    struct Tokio;

    fn runtime() -> &'static tokio::runtime::Runtime {
        static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
        RT.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime")
        })
    }

    impl BlockOn for Tokio {
        fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
            runtime().block_on(f)
        }
    }

    #[test]
    fn records_and_counters_survive_reopening() {
        use licensing_core::api::requests::LicenseListQuery;
        use licensing_core::store::{LicenseStore, StatsStore, TeamStore, testing};

        let dir = tempfile::tempdir().expect("tempdir");
        let (team, license) = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let license = testing::license(team.id, licensing_core::Timestamp::now());
            store
                .create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .expect("create");
            (team, license)
        });
        // The first handle is dropped; a new one sees everything.
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("reopen");
            assert!(!store.is_empty().expect("is_empty"));
            assert_eq!(
                store.get_team(team.id).await.expect("team"),
                Some(team.clone())
            );
            assert_eq!(
                store
                    .get_license(team.id, license.id)
                    .await
                    .expect("license"),
                Some(license.clone())
            );
            let page = store
                .list_licenses(team.id, &LicenseListQuery::parse("").expect("query"))
                .await
                .expect("list");
            assert_eq!((page.total, page.items.len()), (1, 1));
            let overview = store
                .overview(team.id, licensing_core::Timestamp::from_millis(0))
                .await
                .expect("overview");
            assert_eq!(overview.total_licenses, 1);
        });
    }

    /// Many concurrent durable writes (each waiting for a flush that covers it) complete. A
    /// stress check: the deadlock that `apply_batch` next to sled's flushes caused showed at once
    /// in the release-build `lists` bench, but rarely in a debug build.
    #[test]
    fn concurrent_durable_writes_do_not_deadlock() {
        use licensing_core::store::{LicenseStore, testing};

        Tokio.block_on(async {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let writers: Vec<_> = (0..64)
                .map(|_| {
                    let store = store.clone();
                    tokio::spawn(async move {
                        for _ in 0..30 {
                            let license =
                                testing::license(team.id, licensing_core::Timestamp::now());
                            store
                                .create_license(&license, &licensing_core::store::Journal::NONE)
                                .await
                                .expect("create");
                        }
                    })
                })
                .collect();
            let all = async {
                for w in writers {
                    w.await.expect("writer");
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(60), all)
                .await
                .expect("concurrent writes must finish (no deadlock)");
            let q = licensing_core::api::requests::LicenseListQuery::parse("").expect("query");
            assert_eq!(
                store.list_licenses(team.id, &q).await.expect("list").total,
                64 * 30
            );
        });
    }

    /// The hot path: a device that already counts is admitted without a write; its refresh
    /// waits in memory, yet readers, limit checks and a reopened store all see it, and it never
    /// brings back a deleted record.
    #[test]
    fn refreshes_of_counted_devices_wait_in_memory_but_are_never_lost_or_stale() {
        use licensing_core::api::ResultCode;
        use licensing_core::api::requests::DeviceListQuery;
        use licensing_core::model::{Hwid, TeamSettings};
        use licensing_core::store::{
            Activity, ActivityStore, DeviceStore, LicenseStore, Recorded, testing,
        };
        use licensing_core::validate::HardwareId;
        use licensing_core::verify::RecordChange;

        let dir = tempfile::tempdir().expect("tempdir");
        let t0 = licensing_core::Timestamp::from_millis(1_800_000_000_000);
        let at = |seconds: i64| {
            licensing_core::Timestamp::from_millis(1_800_000_000_000 + seconds * 1000)
        };
        let settings = TeamSettings {
            hwid_timeout: Some(60),
            ..TeamSettings::default()
        };
        let activity = |device: &str| Activity {
            hardware_id: Some(HardwareId::parse(device).expect("hwid")),
            ip: std::net::IpAddr::from([198, 51, 100, 7]),
            country: None,
        };
        let stored_hwids = |store: &super::SledStore, team, license| -> Vec<Hwid> {
            store.usage(super::tag::HWID, team, license).expect("scan")
        };
        let (team, license) = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let mut license = testing::license(team.id, t0);
            license.hwid_limit = Some(1);
            store
                .create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .expect("create");
            let record = |device: &'static str, now| {
                let (store, settings) = (store.clone(), settings.clone());
                async move {
                    store
                        .record_activity(
                            team.id,
                            license.id,
                            &licensing_core::store::ActivityRules::new(&settings),
                            &activity(device),
                            now,
                        )
                        .await
                        .expect("store")
                }
            };
            let first: Recorded = record("device-a-0000", t0).await.expect("first device");
            assert_eq!(first.admission.hwid, Some(RecordChange::Create));

            // 59 minutes later the device still counts: admitted, nothing written yet.
            let seen = at(59 * 60);
            let again = record("device-a-0000", seen).await.expect("known device");
            assert_eq!(again.license.last_active_at, Some(seen));
            assert_eq!(
                stored_hwids(&store, team.id, license.id)[0].last_seen_at,
                t0
            );
            // Readers see it all the same.
            let fetched = store.get_license(team.id, license.id).await.expect("get");
            assert_eq!(fetched.expect("license").last_active_at, Some(seen));
            let listed = store
                .list_hwids(
                    team.id,
                    license.id,
                    &DeviceListQuery::parse("").expect("query"),
                )
                .await
                .expect("list");
            assert_eq!(listed.items[0].last_seen_at, seen);

            // A later refresh waits again; a new device two minutes on is counted against it,
            // exactly: the first device was seen 60 minutes before, not 62.
            let last = at(60 * 60);
            record("device-a-0000", last).await.expect("known device");
            assert_eq!(
                stored_hwids(&store, team.id, license.id)[0].last_seen_at,
                seen
            );
            let refused = record("device-b-0000", at(62 * 60))
                .await
                .expect_err("limit");
            assert_eq!(refused.code, ResultCode::HwidLimitReached);
            assert_eq!(
                stored_hwids(&store, team.id, license.id)[0].last_seen_at,
                last
            );

            // One more refresh is left waiting when the store is dropped.
            record("device-a-0000", at(61 * 60))
                .await
                .expect("known device");
            (team, license)
        });
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("reopen");
            let hwids = stored_hwids(&store, team.id, license.id);
            assert_eq!(hwids.len(), 1);
            assert_eq!(hwids[0].last_seen_at, at(61 * 60), "flushed when dropped");
            // A refresh that raced the license's deletion (admitted from a read before it,
            // added after it) does not bring anything back.
            let ips: Vec<licensing_core::model::IpRecord> = store
                .usage(super::tag::IP, team.id, license.id)
                .expect("scan");
            store
                .delete_license(team.id, license.id, &licensing_core::store::Journal::NONE)
                .await
                .expect("delete");
            store.inner.refreshes.add(
                team.id,
                license.id,
                Some(super::hwid_digest(&hwids[0].identifier)),
                super::addr16(ips[0].address),
                None,
                at(62 * 60),
            );
            store.flush().await.expect("flush");
            assert_eq!(
                store.get_license(team.id, license.id).await.expect("get"),
                None
            );
            assert!(stored_hwids(&store, team.id, license.id).is_empty());
        });
    }

    /// BUG-9: at the cap on stored records, or with a limit and a team timeout, each new address
    /// read every record of its license (6.4 ms at 10,000) under a lock other licenses shared.
    /// Now the atomic step reads the index by last use: the entries that decide, never what the
    /// license holds besides.
    #[test]
    fn a_full_license_admits_reading_only_what_decides() {
        use licensing_core::api::ResultCode;
        use licensing_core::model::{IpRecord, TeamSettings};
        use licensing_core::store::{
            Activity, ActivityRules, ActivityStore, DeviceStore, Journal, LicenseStore, testing,
        };
        use licensing_core::{IpId, Timestamp};

        const HELD: u32 = 2_000;
        let now = Timestamp::from_millis(1_800_000_000_000);
        let hours_ago = |h: i64| Timestamp::from_millis(now.as_millis() - h * 3_600_000);
        Tokio.block_on(async {
            let store = super::SledStore::temporary().expect("open");
            let team = testing::team(&store, "A").await;
            // A license holding HELD addresses, all but three seen long ago.
            let full = |ip_limit: Option<u32>| {
                let store = store.clone();
                async move {
                    let mut license = testing::license(team.id, now);
                    license.ip_limit = ip_limit;
                    store
                        .create_license(&license, &Journal::NONE)
                        .await
                        .expect("create");
                    let ips: Vec<IpRecord> = (0..HELD)
                        .map(|i| IpRecord {
                            id: IpId::new(),
                            address: std::net::IpAddr::from([10, 0, (i / 256) as u8, i as u8]),
                            forgotten: false,
                            country: None,
                            alpha2: None,
                            alpha3: None,
                            license_id: license.id,
                            team_id: team.id,
                            last_seen_at: if i < 3 { now } else { hours_ago(48) },
                            created_at: hours_ago(48),
                            updated_at: hours_ago(48),
                        })
                        .collect();
                    store
                        .restore_usage(team.id, license.id, &[], &ips)
                        .await
                        .expect("restore");
                    license
                }
            };
            let new_address = |n: u8| Activity {
                hardware_id: None,
                ip: std::net::IpAddr::from([198, 51, 100, n]),
                country: None,
            };
            let admit = |license: licensing_core::LicenseId, settings: TeamSettings, n: u8| {
                let store = store.clone();
                async move {
                    let before = store.index_reads();
                    let mut rules = ActivityRules::new(&settings);
                    rules.max_records = HELD;
                    let outcome = store
                        .record_activity(team.id, license, &rules, &new_address(n), now)
                        .await
                        .expect("store");
                    (outcome, store.index_reads() - before)
                }
            };
            let timeout = TeamSettings {
                ip_timeout: Some(60),
                ..TeamSettings::default()
            };

            // A limit of 5 with a timeout: three count, so a new address is admitted (the
            // cap makes room first); what is read is the entries within the timeout, and the
            // oldest that count against nothing, a batch of them.
            let limited = full(Some(5)).await;
            let (outcome, reads) = admit(limited.id, timeout.clone(), 1).await;
            outcome.expect("admitted");
            let batch = licensing_core::store::prune_batch(HELD) as u64;
            assert!(reads <= 3 + batch + 1, "read {reads} of {HELD}");
            // The next new address: room was made, so only the counting is read.
            let (outcome, reads) = admit(limited.id, timeout.clone(), 2).await;
            outcome.expect("admitted");
            assert!(reads <= 5, "read {reads}");
            // Five count now: refused, having read no more than the limit.
            let (refused, reads) = admit(limited.id, timeout.clone(), 3).await;
            assert_eq!(refused.expect_err("limit").code, ResultCode::IpLimitReached);
            assert!(reads <= 5, "read {reads}");

            // Full, and nothing may be dropped (every record counts against a limit above the
            // cap): refused without reading the records.
            let stuck = full(Some(HELD + 1)).await;
            let (refused, reads) = admit(stuck.id, TeamSettings::default(), 5).await;
            assert_eq!(refused.expect_err("cap").code, ResultCode::IpLimitReached);
            assert_eq!(reads, 0);
            // The store is sound: every record has its entry, and no entry is stray.
            let report = store.check().expect("check");
            assert!(report.problems.is_empty(), "{:?}", report.problems);
        });
    }

    /// A store of format 1 (devices and addresses keyed by record id, no counts, no version) is
    /// migrated when opened: records keep their ids, a request finds its own records, the counts
    /// hold, and a device stored twice keeps its latest record.
    #[test]
    fn a_format_1_store_is_migrated_when_opened() {
        use licensing_core::api::requests::DeviceListQuery;
        use licensing_core::model::{Hwid, IpRecord};
        use licensing_core::store::{ActivityRules, ActivityStore, DeviceStore, testing};
        use licensing_core::validate::HardwareId;
        use licensing_core::verify::RecordChange;
        use licensing_core::{HwidId, IpId, Timestamp};

        let dir = tempfile::tempdir().expect("tempdir");
        let t0 = Timestamp::from_millis(1_800_000_000_000);
        let (team, license) = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let mut license = testing::license(team.id, t0);
            license.hwid_limit = Some(2);
            use licensing_core::store::LicenseStore;
            store
                .create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .expect("create");
            (team, license)
        });
        // Rewrite the store as format 1 would have left it.
        let hwid = |id: HwidId, device: &str, seen: i64| Hwid {
            id,
            identifier: HardwareId::parse(device).expect("hwid"),
            forgotten: false,
            license_id: license.id,
            team_id: team.id,
            last_seen_at: Timestamp::from_millis(1_800_000_000_000 + seen),
            created_at: t0,
            updated_at: t0,
        };
        let kept = HwidId::new();
        let records = [
            hwid(kept, "device-a-0000", 2_000),
            hwid(HwidId::new(), "device-a-0000", 1_000),
        ];
        let ip = IpRecord {
            id: IpId::new(),
            address: "198.51.100.7".parse().expect("ip"),
            forgotten: true,
            country: None,
            alpha2: None,
            alpha3: None,
            license_id: license.id,
            team_id: team.id,
            last_seen_at: t0,
            created_at: t0,
            updated_at: t0,
        };
        {
            let db = sled::open(dir.path()).expect("raw open");
            let tree = db.open_tree("data").expect("tree");
            tree.remove(super::format::version_key())
                .expect("unversion");
            for table in [super::tag::HWID, super::tag::IP] {
                tree.remove(super::tally_key(table, team.id, license.id))
                    .expect("uncount");
            }
            for h in &records {
                let k = super::key(&[
                    &[super::tag::HWID],
                    team.id.as_bytes(),
                    license.id.as_bytes(),
                    h.id.as_bytes(),
                ]);
                tree.insert(k, serde_json::to_vec(h).expect("json"))
                    .expect("put");
            }
            let k = super::key(&[
                &[super::tag::IP],
                team.id.as_bytes(),
                license.id.as_bytes(),
                ip.id.as_bytes(),
            ]);
            tree.insert(k, serde_json::to_vec(&ip).expect("json"))
                .expect("put");
            db.flush().expect("flush");
        }
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("migrating open");
            assert_eq!(
                super::format::version(&store.inner.tree).expect("version"),
                super::format::FORMAT
            );
            let q = DeviceListQuery::parse("showForgotten=true").expect("query");
            let hwids = store
                .list_hwids(team.id, license.id, &q)
                .await
                .expect("list");
            assert_eq!(hwids.total, 1, "the duplicate is merged");
            assert_eq!(
                hwids.items[0].id, kept,
                "the latest record is kept, with its id"
            );
            let ips = store.list_ips(team.id, license.id, &q).await.expect("list");
            assert_eq!((ips.total, ips.items[0].id), (1, ip.id));
            // The migrated device is found as the request's own; the counts are right: one
            // more device fits under the limit of two, a third does not.
            let settings = licensing_core::model::TeamSettings::default();
            let rules = ActivityRules::new(&settings);
            let record = |device: &'static str| {
                let (store, rules) = (store.clone(), rules);
                async move {
                    let activity = licensing_core::store::Activity {
                        hardware_id: Some(HardwareId::parse(device).expect("hwid")),
                        ip: "198.51.100.7".parse().expect("ip"),
                        country: None,
                    };
                    store
                        .record_activity(team.id, license.id, &rules, &activity, Timestamp::now())
                        .await
                        .expect("store")
                }
            };
            let own = record("device-a-0000").await.expect("known device");
            assert_eq!(
                own.admission.hwid,
                Some(RecordChange::Refresh {
                    id: kept,
                    was_forgotten: false
                })
            );
            record("device-b-0000").await.expect("second device");
            assert!(record("device-c-0000").await.is_err(), "the limit holds");
        });
        // The store as it was is copied beside it before the migration.
        let copy = super::format::backup_path(dir.path(), 1);
        assert!(copy.join("conf").exists(), "{}", copy.display());
        std::fs::remove_dir_all(&copy).expect("remove the copy");
    }

    /// The sled database of a store just dropped, opened as it is. The store's background
    /// threads let go of the directory's lock a moment after the drop; under a loaded machine
    /// that moment can be long.
    fn raw_open(dir: &std::path::Path) -> sled::Db {
        let mut tries = 0;
        loop {
            match sled::open(dir) {
                Ok(db) => return db,
                Err(_) if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => panic!("raw open: {e}"),
            }
        }
    }

    /// A store of format 2 (pending deliveries indexed by delivery id) is migrated when opened:
    /// its pending delivery is still claimed.
    #[test]
    fn a_format_2_store_keeps_its_pending_deliveries() {
        use licensing_core::model::WebhookDelivery;
        use licensing_core::store::{Journal, WebhookStore, testing};
        use licensing_core::{EventId, Timestamp};

        let dir = tempfile::tempdir().expect("tempdir");
        let now = Timestamp::from_millis(1_800_000_000_000);
        let delivery = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let endpoint = testing::endpoint(team.id, &[], true);
            store
                .create_webhook(&endpoint, &Journal::NONE)
                .await
                .expect("create");
            let d = WebhookDelivery::of_payload(
                team.id,
                endpoint.id,
                EventId::ordered(),
                "license.created",
                "license:1".into(),
                "{}".into(),
                now,
            );
            store
                .insert_delivery(&d, &Journal::NONE)
                .await
                .expect("insert");
            d
        });
        {
            let db = raw_open(dir.path());
            let tree = db.open_tree("data").expect("tree");
            set_format(&tree, 2);
            let prefix = [super::tag::INDEX, super::tag::DELIVERY];
            for kv in tree.scan_prefix(prefix) {
                tree.remove(kv.expect("scan").0).expect("remove");
            }
            tree.insert(
                super::key(&[&prefix, delivery.id.as_bytes()]),
                super::key(&[delivery.team_id.as_bytes(), delivery.endpoint_id.as_bytes()]),
            )
            .expect("old entry");
            db.flush().expect("flush");
        }
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("migrating open");
            assert_eq!(
                super::format::version(&store.inner.tree).expect("version"),
                super::format::FORMAT
            );
            let claimed = store
                .claim_deliveries(now, 60_000, 10)
                .await
                .expect("claim");
            assert_eq!(
                claimed.iter().map(|d| d.id).collect::<Vec<_>>(),
                vec![delivery.id]
            );
        });
        // The store as it was before, copied beside it, still of format 2.
        let copy = super::format::backup_path(dir.path(), 2);
        {
            let db = raw_open(&copy);
            let tree = db.open_tree("data").expect("tree");
            assert_eq!(super::format::version(&tree).expect("version"), 2);
        }
        std::fs::remove_dir_all(&copy).expect("remove the copy");
        // A store of this format is not copied again.
        drop(super::SledStore::open(dir.path()).expect("reopen"));
        assert!(!copy.exists());
    }

    /// Marks a closed store's tree as written in `format`.
    /// A store of format 4 (a staff address indexed without its team, no index of records by
    /// last use) is migrated when opened: its accounts are found by address, each record gets
    /// its entry, and `check` finds it sound.
    #[test]
    fn a_format_4_store_gets_its_addresses_by_team_and_its_records_by_last_use() {
        use licensing_core::Timestamp;
        use licensing_core::model::{Role, StaffUser};
        use licensing_core::store::{
            Activity, ActivityRules, ActivityStore, Journal, LicenseStore, StaffStore, testing,
        };
        use licensing_core::validate::{Email, HardwareId};

        let dir = tempfile::tempdir().expect("tempdir");
        let now = Timestamp::from_millis(1_800_000_000_000);
        let ann = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let license = testing::license(team.id, now);
            store
                .create_license(&license, &Journal::NONE)
                .await
                .expect("create");
            let activity = Activity {
                hardware_id: Some(HardwareId::parse("device-a-0000").expect("hwid")),
                ip: "198.51.100.7".parse().expect("ip"),
                country: None,
            };
            store
                .record_activity(
                    team.id,
                    license.id,
                    &ActivityRules::new(&licensing_core::model::TeamSettings::default()),
                    &activity,
                    now,
                )
                .await
                .expect("store")
                .expect("admitted");
            let ann = StaffUser {
                id: licensing_core::StaffId::new(),
                team_id: team.id,
                email: Email::parse("ann@example.com").expect("email"),
                role: Role::Owner,
                password_hash: None,
                password_link: None,
                created_at: now,
                updated_at: now,
                two_step: None,
            };
            store
                .create_staff(&ann, &Journal::NONE)
                .await
                .expect("staff");
            ann
        });
        // Back to format 4's layout: the address alone as the key, no index by last use.
        {
            let db = raw_open(dir.path());
            let tree = db.open_tree("data").expect("tree");
            set_format(&tree, 4);
            let new = super::staff::email_key("ann@example.com", ann.team_id);
            tree.remove(&new).expect("remove");
            tree.insert(
                super::keys::key(&[&[super::tag::STAFF_EMAIL], b"ann@example.com"]),
                ann.id.as_bytes().to_vec(),
            )
            .expect("put");
            let entries: Vec<_> = tree
                .scan_prefix([super::tag::SEEN])
                .keys()
                .map(|k| k.expect("key"))
                .collect();
            assert_eq!(entries.len(), 2, "a device and an address");
            for k in entries {
                tree.remove(k).expect("remove");
            }
            db.flush().expect("flush");
        }
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("migrating open");
            assert_eq!(
                super::format::version(&store.inner.tree).expect("version"),
                super::format::FORMAT
            );
            assert_eq!(
                store
                    .find_staff_by_email("ann@example.com")
                    .await
                    .expect("find"),
                std::slice::from_ref(&ann)
            );
            assert_eq!(store.inner.tree.scan_prefix([super::tag::SEEN]).count(), 2);
            let report = store.check().expect("check");
            assert!(report.problems.is_empty(), "{:?}", report.problems);
        });
    }

    fn set_format(tree: &sled::Tree, format: u32) {
        tree.insert(super::format::version_key(), &format.to_be_bytes())
            .expect("version");
    }

    /// Rewrites every record of `table` as JSON, as format 3 stored it; returns how many.
    fn as_json<T: super::Record>(tree: &sled::Tree, table: u8) -> usize {
        let mut rewritten = 0;
        for kv in tree.scan_prefix([table]) {
            let (k, v) = kv.expect("scan");
            let record: T = super::decode(&v).expect("record");
            tree.insert(k, serde_json::to_vec(&record).expect("json"))
                .expect("put");
            rewritten += 1;
        }
        rewritten
    }

    /// A store of format 3 (every record JSON) is migrated when opened: the records of the
    /// binary kinds are rewritten in it and read back the same; a migration cut short (some
    /// records rewritten, the version not yet) reads the same too.
    #[test]
    fn a_format_3_store_is_rewritten_in_the_binary_form() {
        use licensing_core::Timestamp;
        use licensing_core::model::{Hwid, License};
        use licensing_core::store::{
            Activity, ActivityRules, ActivityStore, DeviceStore, LicenseStore, TeamStore, testing,
        };
        use licensing_core::validate::HardwareId;

        let dir = tempfile::tempdir().expect("tempdir");
        let now = Timestamp::from_millis(1_800_000_000_000);
        let (team, license) = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            let team = testing::team(&store, "A").await;
            let license = testing::license(team.id, now);
            store
                .create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .expect("create");
            let settings = licensing_core::model::TeamSettings::default();
            let activity = Activity {
                hardware_id: Some(HardwareId::parse("device-a-0000").expect("hwid")),
                ip: "198.51.100.7".parse().expect("ip"),
                country: None,
            };
            store
                .record_activity(
                    team.id,
                    license.id,
                    &ActivityRules::new(&settings),
                    &activity,
                    now,
                )
                .await
                .expect("store")
                .expect("admitted");
            let license = store
                .get_license(team.id, license.id)
                .await
                .expect("read")
                .expect("license");
            (team, license)
        });
        let q = licensing_core::api::requests::DeviceListQuery::parse("").expect("query");
        let hwids_before = Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("open");
            store
                .list_hwids(team.id, license.id, &q)
                .await
                .expect("list")
        });
        assert_eq!(hwids_before.total, 1);
        // Rewrite it as format 3 held it: JSON; the address record is left binary, as a
        // migration cut short leaves some records.
        let tables = [super::tag::LICENSE, super::tag::HWID, super::tag::IP];
        {
            let db = raw_open(dir.path());
            let tree = db.open_tree("data").expect("tree");
            set_format(&tree, 3);
            let rewritten = as_json::<License>(&tree, super::tag::LICENSE)
                + as_json::<Hwid>(&tree, super::tag::HWID);
            assert_eq!(rewritten, 2);
            db.flush().expect("flush");
        }
        Tokio.block_on(async {
            let store = super::SledStore::open(dir.path()).expect("migrating open");
            assert_eq!(
                super::format::version(&store.inner.tree).expect("version"),
                super::format::FORMAT
            );
            for table in tables {
                for kv in store.inner.tree.scan_prefix([table]) {
                    let (_, v) = kv.expect("scan");
                    assert_eq!(v[0], super::codec::BINARY_V1, "table {}", table as char);
                }
            }
            assert_eq!(
                store.get_license(team.id, license.id).await.expect("read"),
                Some(license.clone())
            );
            assert_eq!(
                store
                    .list_hwids(team.id, license.id, &q)
                    .await
                    .expect("list"),
                hwids_before
            );
            assert_eq!(
                store.get_team(team.id).await.expect("team"),
                Some(team.clone())
            );
        });
        let copy = super::format::backup_path(dir.path(), 3);
        assert!(copy.join("conf").exists(), "{}", copy.display());
        std::fs::remove_dir_all(&copy).expect("remove the copy");
    }

    #[test]
    fn a_store_of_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(super::SledStore::open(dir.path()).expect("open"));
        {
            let db = raw_open(dir.path());
            let tree = db.open_tree("data").expect("tree");
            set_format(&tree, 99);
            db.flush().expect("flush");
        }
        let error = super::SledStore::open(dir.path()).expect_err("refused");
        let text = error.to_string();
        assert!(
            text.contains("newer licensing-server (format 99)"),
            "{text}"
        );
    }

    licensing_core::store_test_suite!(
        runner: Tokio,
        store: async { super::SledStore::temporary().expect("temporary store") },
    );
}
