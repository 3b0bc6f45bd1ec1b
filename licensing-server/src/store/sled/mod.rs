//! The embedded store: sled, implementing every storage trait of `licensing-core`, one file per
//! aggregate (`teams.rs`, `licenses.rs` with `activity.rs`, `customers.rs`, `catalog.rs`,
//! `misc.rs`) around the shared machinery here.
//!
//! - **Atomicity**: every write reads what it needs, stages all its changes (records, indexes,
//!   counters) and applies them with one `apply_batch`, which sled applies atomically (a write
//!   of one key is one `insert`, atomic by itself and much cheaper: sled's batch rolls its log
//!   buffer twice, each a synchronous write on sled's I/O threads). Writes
//!   exclude each other where they must and no further (`locks.rs`): a license's atomic step
//!   (the client API's limits) holds that license's lock stripe only; developer writes hold a
//!   mutex among themselves and the stripes of the licenses they change. Reads take no lock.
//! - **Durability**: a write returns once a flush (fsync) that covers it has completed. Flushes
//!   run on one flusher thread and group-commit: every batch applied before a flush starts is
//!   covered by it. The only writes that do not wait are the plain `lastSeenAt`/`lastActiveAt`
//!   refreshes of devices that already count, which wait in memory (`refresh.rs`), are applied
//!   by the next writer of the license or the flusher within 500 ms, and are durable after the
//!   flush that follows (within a second).
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
mod answer_log;
mod catalog;
mod check;
mod codec;
mod compact;
mod customers;
mod error;
mod floating;
mod flusher;
mod format;
mod idempotency;
mod kept_files;
mod key_ids;
mod keys;
mod layout;
mod license_table;
mod licenses;
mod locks;
mod misc;
mod payments;
mod portal;
mod refresh;
mod replay;
mod request_log;
mod seen;
mod space;
mod staff;
mod staged_usage;
mod teams;
mod tx;
mod usage;
mod webhooks;

pub(crate) use error::{SledResult, backend};
use std::collections::{HashMap, HashSet};
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
use license_table::LicenseTables;
use licensing_core::api::requests::{
    AuditQuery, CustomerListQuery, CustomerSort, DeviceListQuery, LicenseListQuery, LicenseSort,
    Paging, ProductListQuery, ReleaseListQuery, SortDirection,
};
use licensing_core::crypto::ApiKeyHash;
use licensing_core::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, Customer, Entitlement, HourlyStats, Hwid,
    IpRecord, License, OutboxMessage, Overview, Policy, Product, Release, Team, TeamFeatures,
    TeamSettings, TopProduct, UsageRecord,
};
use licensing_core::store::*;
use licensing_core::validate::HardwareId;
use licensing_core::verify::Denial;
use licensing_core::{
    ApiKeyId, AuditId, BlacklistId, BranchId, CustomerId, EntitlementId, HwidId, IpId, LicenseId,
    LicenseKey, MessageId, PolicyId, ProductId, ReleaseId, TeamId, Timestamp,
};
use locks::Locks;
pub use space::{Space, SpaceUse};
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
    pub(super) const BY_ENTITLEMENT: u8 = b'E';
    pub(super) const BY_POLICY: u8 = b'O';
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
    /// Teams' licenses as filtered lists read them (`license_table.rs`).
    license_tables: Arc<LicenseTables>,
    /// License ids by key, remembered (`key_ids.rs`).
    key_ids: key_ids::KeyIds,
    /// Entries read through the index by last use (`seen.rs`).
    seen_reads: seen::Reads,
    /// Idempotency claims and the kept answers' files (`idempotency.rs`, `kept_files.rs`).
    kept: Arc<idempotency::Kept>,
    /// Usage increments decided and waiting for the flusher's batch (`staged_usage.rs`).
    staged_usage: Arc<staged_usage::StagedUsage>,
}

/// The default size of sled's page cache, in MiB (sled's own default is 1 GiB). The load
/// benchmark's full data set (100,000 licenses, 1,000,000 devices) keeps the server under 512 MiB
/// with it; see benches/README.md.
pub const DEFAULT_CACHE_MB: u64 = 256;

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

fn id16(bytes: &[u8]) -> StoreResult<[u8; 16]> {
    bytes
        .get(bytes.len().saturating_sub(16)..)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| StoreError::backend("index key too short"))
}

use flusher::*;
use layout::*;
use tx::{Touch, Tx, decode_count};

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
        Ok(Self::with_config(
            sled::Config::new().path(dir).cache_capacity(cache_bytes),
            Some(dir),
        )?)
    }

    /// A store in a temporary directory that sled removes when the store is dropped (tests).
    pub fn temporary() -> StoreResult<Self> {
        Ok(Self::with_config(
            sled::Config::new().temporary(true),
            None,
        )?)
    }

    /// Opens the store `config` describes; one in `dir` that must be migrated is copied first.
    fn with_config(config: sled::Config, dir: Option<&Path>) -> SledResult<Self> {
        // sled's own periodic flusher stays off: see the module documentation.
        let config = config.flush_every_ms(None);
        let mut db = open_db(&config, FIRST_OPEN_LOCK_WAIT)?;
        let mut tree = db.open_tree("data")?;
        if let Some(dir) = dir
            && let Some(found) = format::needs_migration(&tree)?
        {
            drop(tree);
            db.flush()?;
            drop(db);
            format::copy_before_migrating(dir, found)?;
            db = open_db(&config, REOPEN_LOCK_WAIT)?;
            tree = db.open_tree("data")?;
        }
        format::upgrade(&tree)?;
        let kept = Arc::new(idempotency::open(&tree, dir)?);
        let locks = Arc::new(Locks::default());
        let applied = Arc::new(AtomicU64::new(0));
        let flusher = Arc::new(Flusher::default());
        let refreshes = Arc::new(Refreshes::default());
        let license_tables = Arc::new(LicenseTables::default());
        let staged_usage = Arc::new(staged_usage::StagedUsage::default());
        let (progress, flushed) = watch::channel(FlushState::default());
        let flusher_thread = {
            let (tree, tables, locks, applied, refreshes, flusher, kept, staged) = (
                tree.clone(),
                license_tables.clone(),
                locks.clone(),
                applied.clone(),
                refreshes.clone(),
                flusher.clone(),
                kept.clone(),
                staged_usage.clone(),
            );
            std::thread::Builder::new()
                .name("store-flusher".into())
                .spawn(move || {
                    let targets = FlushTargets {
                        tree,
                        tables,
                        kept,
                        staged,
                    };
                    run_flusher(targets, locks, applied, refreshes, flusher, progress)
                })?
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
                license_tables,
                key_ids: Default::default(),
                seen_reads: Default::default(),
                kept,
                staged_usage,
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

    /// Bytes the database occupies on disk, kept answers included.
    pub fn size_on_disk(&self) -> StoreResult<u64> {
        Ok(self.inner.db.size_on_disk().map_err(backend)? + self.answers_on_disk()?)
    }

    /// An empty write.
    fn tx(&self) -> Tx<'_> {
        Tx::new(&self.inner.tree, &self.inner.license_tables)
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
        let tx = stage_refreshes(&self.inner.tree, &self.inner.license_tables, vec![taken])?;
        let _gate = self.inner.locks.gate.read().await;
        write_refreshes(tx, &self.inner.applied)
    }

    /// Writes every waiting refresh; the caller holds every license (the wide lock).
    async fn apply_every_refresh(&self) -> StoreResult<()> {
        let taken = self.inner.refreshes.take_all();
        if taken.is_empty() {
            return Ok(());
        }
        let tx = stage_refreshes(&self.inner.tree, &self.inner.license_tables, taken)?;
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
                self.apply_staged_usage(Some(license)).await;
                (Some(held), None)
            }
            Touch::Licenses => {
                let all = locks.all().await;
                self.apply_every_refresh().await?;
                self.apply_staged_usage(None).await;
                (None, Some(all))
            }
        };
        let mut tx = self.tx();
        let out = f(&mut tx)?;
        tx.journal(journal)?;
        let marked = journal.keyed.as_ref().map(|keyed| tx.mark_applied(keyed));
        let batch = self.commit(tx).await?;
        if let (Some(name), Some(keyed)) = (marked, &journal.keyed) {
            self.inner.kept.applied(&name, keyed.fingerprint)?;
        }
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
                let tx = stage_refreshes(&self.inner.tree, &self.inner.license_tables, taken)?;
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
    /// the same batch when `f` succeeds), flushed before it returns; a write under an
    /// idempotency claim is flushed with its kept answer instead (`idempotency.rs`).
    async fn journaled_touching<T>(
        &self,
        journal: &Journal,
        touch: Touch,
        f: impl FnOnce(&mut Tx<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let (out, batch) = self.write(touch, journal, f).await?;
        if journal.keyed.is_none() {
            self.flushed_up_to(batch).await?;
        }
        Ok(out)
    }

    /// The first `limit` keys from `start` up to (not including) `end`.
    fn first_keys(&self, start: &[u8], end: Vec<u8>, limit: usize) -> StoreResult<Vec<sled::IVec>> {
        let keys = self.inner.tree.range(start.to_vec()..end).keys();
        keys.take(limit).map(|k| k.map_err(backend)).collect()
    }

    fn get_record<T: Record>(&self, k: &[u8]) -> SledResult<Option<T>> {
        Ok(self.inner.tree.get(k)?.map(|v| decode(&v)).transpose()?)
    }

    fn scan<T: Record>(&self, prefix: &[u8]) -> StoreResult<Vec<T>> {
        self.inner
            .tree
            .scan_prefix(prefix)
            .map(|kv| kv.map_err(backend).and_then(|(_, v)| decode(&v)))
            .collect()
    }

    fn count(&self, table: u8, team: TeamId) -> SledResult<u64> {
        Ok(self
            .inner
            .tree
            .get(count_key(table, team))?
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

    /// The team's license table (`license_table.rs`), built now if no list has built it yet,
    /// or once another list has built it; `None` if that build failed.
    async fn license_table(
        &self,
        team: TeamId,
    ) -> SledResult<Option<Arc<std::sync::RwLock<license_table::Table>>>> {
        let tables = &self.inner.license_tables;
        let mut used = tables.usable(team);
        if let license_table::Use::Busy(mut over) = used {
            // Dropped with the build's slot (the sender is never used to send).
            let _ = over.changed().await;
            used = tables.usable(team);
        }
        match used {
            license_table::Use::Ready(table) => Ok(Some(table)),
            license_table::Use::Busy(_) => Ok(None),
            license_table::Use::Build => {
                // Given up unless finished (a failed read, or a panic).
                struct Building<'a>(&'a LicenseTables, TeamId, bool);
                impl Drop for Building<'_> {
                    fn drop(&mut self) {
                        if !self.2 {
                            self.0.abandon(self.1);
                        }
                    }
                }
                let mut building = Building(tables, team, false);
                let licenses = self
                    .inner
                    .tree
                    .scan_prefix(key(&[&[tag::LICENSE], team.as_bytes()]))
                    .map(|kv| decode::<License>(&kv.map_err(backend)?.1));
                let table = LicenseTables::table_of(licenses)?;
                let table = tables.finish(team, table, |id| {
                    Ok(self.get_record::<License>(&license_key(team, id))?)
                })?;
                building.2 = true;
                Ok(Some(table))
            }
        }
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
    if let Some(p) = l.policy_id
        && tx.get(&policy_key(l.team_id, p))?.is_none()
    {
        return Err(StoreError::NotFound(Entity::Policy));
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
mod tests;
