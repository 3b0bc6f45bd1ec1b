//! The store's locks. None is server-wide for the client API, and none is shared by licenses:
//!
//! - **One mutex per license**, made when a step on it needs one and dropped when nobody holds
//!   or waits for it. A license's atomic step (limits checked, records written) holds its own
//!   only, so a busy license delays nobody but its own requests; a developer write to one
//!   license holds that license's; write-behind refreshes are applied under the mutex of the
//!   license they refresh (the flusher skips a license whose mutex is taken: its holder writes
//!   them).
//! - **The wide lock**: every holder of a license's mutex holds it shared (which costs the
//!   licenses nothing among themselves); the rare developer writes that change many licenses at
//!   once (deleting a customer or a product) hold it exclusively.
//! - **Developer writes** (licenses, customers, products, releases, settings, keys …) hold one
//!   more mutex among themselves, for their uniqueness checks and counters.
//! - **The gate**: sled's `apply_batch` takes a global exclusive lock, and a flush holds the
//!   shared side of it while it waits for sled's I/O threads, which need the shared side too; a
//!   batch applied during a flush deadlocks the store. So batches take the gate shared (any
//!   number at once) and the flusher takes it exclusive.
//!
//! Order, to stay free of deadlocks: developer mutex, then the wide lock, then license mutexes,
//! then the gate. Nobody waits for a license's mutex while holding another's (the flusher and
//! the readers that settle refreshes only try them, or take them one at a time), and nobody
//! waits for anything while holding the gate.

use std::collections::HashMap;
use std::sync::Arc;

use licensing_core::LicenseId;
use tokio::sync::{Mutex, OwnedMutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Shards of the table of license mutexes (each a short-held map lock).
const SHARDS: usize = 64;

/// The store's locks.
#[derive(Debug)]
pub(super) struct Locks {
    /// Serializes developer writes among themselves.
    pub(super) dev: Mutex<()>,
    /// Shared by license holders, exclusive for writes that change many licenses.
    wide: RwLock<()>,
    licenses: LicenseMutexes,
    /// Batches shared, flushes exclusive.
    pub(super) gate: RwLock<()>,
}

impl Default for Locks {
    fn default() -> Self {
        Self {
            dev: Mutex::new(()),
            wide: RwLock::new(()),
            licenses: LicenseMutexes::default(),
            gate: RwLock::new(()),
        }
    }
}

/// One shard of [`LicenseMutexes`].
type Shard = std::sync::Mutex<HashMap<LicenseId, Arc<Mutex<()>>>>;

/// The mutexes of the licenses someone holds or waits for.
#[derive(Debug)]
struct LicenseMutexes {
    shards: Box<[Shard]>,
}

impl Default for LicenseMutexes {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| std::sync::Mutex::new(HashMap::new()))
                .collect(),
        }
    }
}

impl LicenseMutexes {
    fn shard(&self, license: LicenseId) -> &Shard {
        // A license id is random: its last byte spreads the licenses evenly.
        &self.shards[usize::from(license.as_bytes()[15]) % SHARDS]
    }

    /// The mutex of `license`, made when nobody has it.
    fn of(&self, license: LicenseId) -> Arc<Mutex<()>> {
        let mut shard = self
            .shard(license)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shard.entry(license).or_default().clone()
    }

    /// Forgets the mutex of `license` when nobody else holds or waits for it.
    fn release(&self, license: LicenseId) {
        let mut shard = self
            .shard(license)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if shard
            .get(&license)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            shard.remove(&license);
        }
    }

    /// How many licenses have a mutex now (tests: none is left behind).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |s| s.len()))
            .sum()
    }
}

/// A license's mutex, held (with the wide lock shared).
pub(super) struct LicenseGuard<'a> {
    held: Option<OwnedMutexGuard<()>>,
    _wide: RwLockReadGuard<'a, ()>,
    table: &'a LicenseMutexes,
    license: LicenseId,
}

impl Drop for LicenseGuard<'_> {
    fn drop(&mut self) {
        // Let go first, so that the table sees whether anybody else still holds or waits.
        drop(self.held.take());
        self.table.release(self.license);
    }
}

impl Locks {
    /// The mutex of one license.
    pub(super) async fn license(&self, license: LicenseId) -> LicenseGuard<'_> {
        let wide = self.wide.read().await;
        let mutex = self.licenses.of(license);
        let held = mutex.lock_owned().await;
        LicenseGuard {
            held: Some(held),
            _wide: wide,
            table: &self.licenses,
            license,
        }
    }

    /// The mutex of one license when it is free now (the flusher, which never waits for one).
    pub(super) fn try_license(&self, license: LicenseId) -> Option<LicenseGuard<'_>> {
        let wide = self.wide.try_read().ok()?;
        let mutex = self.licenses.of(license);
        match mutex.try_lock_owned() {
            Ok(held) => Some(LicenseGuard {
                held: Some(held),
                _wide: wide,
                table: &self.licenses,
                license,
            }),
            Err(_) => {
                self.licenses.release(license);
                None
            }
        }
    }

    /// Every license at once (a developer write that changes many).
    pub(super) async fn all(&self) -> RwLockWriteGuard<'_, ()> {
        self.wide.write().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_license_held_does_not_hold_another_and_leaves_nothing_behind() {
        let locks = Locks::default();
        let (a, b) = (LicenseId::new(), LicenseId::new());
        let held = locks.license(a).await;
        assert!(locks.try_license(a).is_none(), "a is held");
        let other = locks.try_license(b).expect("b is not a's");
        drop(other);
        drop(held);
        assert_eq!(locks.licenses.len(), 0);
        // Many licenses, each its own.
        let mut guards = Vec::new();
        for _ in 0..1_000 {
            guards.push(locks.license(LicenseId::new()).await);
        }
        assert_eq!(locks.licenses.len(), 1_000);
        drop(guards);
        assert_eq!(locks.licenses.len(), 0);
        // The wide lock waits for every license holder, and holds them all off.
        let one = locks.license(a).await;
        assert!(locks.wide.try_write().is_err());
        drop(one);
        let wide = locks.all().await;
        assert!(locks.try_license(a).is_none());
        drop(wide);
        assert!(locks.try_license(a).is_some());
    }
}
