//! Usage increments decided but not yet applied: each is staged here under its license's lock
//! (the next increment of that license reads it here first), and the flusher applies everything
//! staged in one batch before its next flush, then tells each increment the batch it went in.
//!
//! An increment with an `eventId` writes three keys (the counter, the kept answer and its entry
//! by time), which must be one atomic batch; a sled batch costs two synchronous writes of its
//! log buffer whatever its size, so many increments in one batch cost about what one does (a
//! plain increment, one key, is written at once by itself when its license has nothing
//! staged). An increment answers only once the flush after its batch completes: nothing staged
//! here has been answered, so a crash loses nothing a client was told.
//!
//! Who applies what: the flusher applies everything, holding the table's mutex until it is
//! applied (an increment reading its license's keys meanwhile waits, so it never reads the tree
//! before its staged values reach it); a developer write to a license (which holds the
//! license's lock, so nothing of it can be staged meanwhile) applies that license's first, and
//! one that changes many licenses (holding them all) applies everything first.

use std::collections::BTreeMap;

use tokio::sync::oneshot;

use super::*;

/// The batch number an increment's writes went in, or why they were not applied.
type Applied = Result<u64, Arc<str>>;

/// What one license has staged.
#[derive(Default)]
struct Staged {
    /// Its writes, the later of a key's winning.
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// The increments waiting for them to be applied.
    waiters: Vec<oneshot::Sender<Applied>>,
}

/// The staged increments of every license.
#[derive(Default)]
pub(super) struct StagedUsage {
    licenses: Mutex<HashMap<LicenseId, Staged>>,
}

/// A staged increment's wait for the batch its writes went in.
pub(super) struct Waiting(oneshot::Receiver<Applied>);

impl Waiting {
    /// The batch number to wait for to make the increment durable.
    pub(super) async fn applied(self) -> StoreResult<u64> {
        match self.0.await {
            Ok(Ok(batch)) => Ok(batch),
            Ok(Err(e)) => Err(StoreError::backend(format!("applying usage failed: {e}"))),
            Err(_) => Err(StoreError::backend("the store flusher stopped")),
        }
    }
}

impl StagedUsage {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<LicenseId, Staged>> {
        // A panic while holding it leaves a consistent map: every change is one insert or take.
        self.licenses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `k` of `license` as its staged writes leave it: `None` when none of them writes it. The
    /// caller holds the license's lock.
    pub(super) fn get(&self, license: LicenseId, k: &[u8]) -> Option<Option<Vec<u8>>> {
        self.lock().get(&license)?.writes.get(k).cloned()
    }

    /// Whether `license` has anything staged (the caller holds its lock). Once it has not, all
    /// it staged is applied: the flusher applies what it takes before it lets go of the table.
    pub(super) fn has(&self, license: LicenseId) -> bool {
        self.lock().contains_key(&license)
    }

    /// Stages `writes` of `license` (the caller holds its lock), returning the wait for the batch
    /// they go in; with no writes, the wait for what the license has staged already (what an
    /// answer read may be among it), or `None` when it has nothing staged.
    pub(super) fn stage(
        &self,
        license: LicenseId,
        writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    ) -> Option<Waiting> {
        let mut licenses = self.lock();
        if writes.is_empty() && !licenses.contains_key(&license) {
            return None;
        }
        let staged = licenses.entry(license).or_default();
        staged.writes.extend(writes);
        let (tell, wait) = oneshot::channel();
        staged.waiters.push(tell);
        Some(Waiting(wait))
    }

    /// Applies everything staged in one batch (the flusher, holding no lock; the gate is taken
    /// shared for the batch), the table's mutex held until it is applied.
    pub(super) fn apply_all(&self, tree: &sled::Tree, tables: &LicenseTables, flush: Flush<'_>) {
        let mut licenses = self.lock();
        if licenses.is_empty() {
            return;
        }
        let mut taken = std::mem::take(&mut *licenses);
        let result = {
            let _gate = flush.gate.blocking_read();
            apply(tree, tables, flush.applied, taken.values_mut())
        };
        drop(licenses);
        tell(taken.into_values(), result);
    }

    /// Takes what `license` has staged (the caller holds its lock, or every license's).
    fn take(&self, license: Option<LicenseId>) -> Vec<Staged> {
        let mut licenses = self.lock();
        match license {
            Some(license) => licenses.remove(&license).into_iter().collect(),
            None => std::mem::take(&mut *licenses).into_values().collect(),
        }
    }
}

/// The flusher's part in applying: the gate and the count of batches applied.
pub(super) struct Flush<'a> {
    pub(super) gate: &'a tokio::sync::RwLock<()>,
    pub(super) applied: &'a AtomicU64,
}

/// Applies the writes of `staged` (moved out, the waiters left) in one batch; its number.
fn apply<'s>(
    tree: &sled::Tree,
    tables: &LicenseTables,
    applied: &AtomicU64,
    staged: impl Iterator<Item = &'s mut Staged>,
) -> Applied {
    let mut tx = Tx::new(tree, tables);
    for s in staged {
        tx.pending.extend(std::mem::take(&mut s.writes));
    }
    if !tx.pending.is_empty() {
        tx.commit().map_err(|e| Arc::from(e.to_string()))?;
    }
    Ok(applied.fetch_add(1, Ordering::AcqRel) + 1)
}

/// Tells the waiters of `staged` how applying them went.
fn tell(staged: impl Iterator<Item = Staged>, result: Applied) {
    if let Err(e) = &result {
        tracing::error!(error = %e, "applying staged usage failed");
    }
    for waiter in staged.flat_map(|s| s.waiters) {
        // A waiter gone (its request dropped) needs no answer.
        let _ = waiter.send(result.clone());
    }
}

impl SledStore {
    /// Applies what `license` has staged, or every license when `None`; the caller holds that
    /// license's lock (or every license's).
    pub(super) async fn apply_staged_usage(&self, license: Option<LicenseId>) {
        let mut taken = self.inner.staged_usage.take(license);
        if taken.is_empty() {
            return;
        }
        let result = {
            let _gate = self.inner.locks.gate.read().await;
            apply(
                &self.inner.tree,
                &self.inner.license_tables,
                &self.inner.applied,
                taken.iter_mut(),
            )
        };
        tell(taken.into_iter(), result);
    }
}
