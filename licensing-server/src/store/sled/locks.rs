//! The store's locks. None is server-wide for the client API:
//!
//! - **Stripes**: one of 256 mutexes per license (by its id). A license's atomic step (limits
//!   checked, records written) holds its stripe only, so a busy license delays the licenses that
//!   share its stripe for the moment of a write, never the whole server; write-behind refreshes
//!   of a license are applied under its stripe too.
//! - **Developer writes** (licenses, customers, products, releases, settings, keys …) hold one
//!   more mutex among themselves, for their uniqueness checks and counters, and the stripes of the
//!   licenses they change: one stripe for a license, all of them (in order) for the rare writes
//!   that change many licenses at once (deleting a customer or a product).
//! - **The gate**: sled's `apply_batch` takes a global exclusive lock, and a flush holds the
//!   shared side of it while it waits for sled's I/O threads, which need the shared side too; a
//!   batch applied during a flush deadlocks the store. So batches take the gate shared (any
//!   number at once) and the flusher takes it exclusive.
//!
//! Order, to stay free of deadlocks: developer mutex, then stripes in increasing order, then the
//! gate; nobody waits for a stripe while holding the gate.

use licensing_core::LicenseId;
use tokio::sync::{Mutex, MutexGuard, RwLock};

use crate::store::refresh::{STRIPES, stripe_of};

/// The store's locks.
#[derive(Debug)]
pub(super) struct Locks {
    /// Serializes developer writes among themselves.
    pub(super) dev: Mutex<()>,
    stripes: Box<[Mutex<()>]>,
    /// Batches shared, flushes exclusive.
    pub(super) gate: RwLock<()>,
}

impl Default for Locks {
    fn default() -> Self {
        Self {
            dev: Mutex::new(()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            gate: RwLock::new(()),
        }
    }
}

impl Locks {
    /// The stripe of one license.
    pub(super) async fn license(&self, license: LicenseId) -> MutexGuard<'_, ()> {
        self.stripes[stripe_of(license)].lock().await
    }

    /// Stripe `i` (for a caller that goes through them in order).
    pub(super) async fn stripe(&self, i: usize) -> MutexGuard<'_, ()> {
        self.stripes[i % STRIPES].lock().await
    }

    /// Stripe `i`, from a thread outside the runtime (the flusher).
    pub(super) fn blocking_stripe(&self, i: usize) -> MutexGuard<'_, ()> {
        self.stripes[i % STRIPES].blocking_lock()
    }

    /// Every stripe, in order.
    pub(super) async fn all(&self) -> Vec<MutexGuard<'_, ()>> {
        let mut guards = Vec::with_capacity(STRIPES);
        for stripe in self.stripes.iter() {
            guards.push(stripe.lock().await);
        }
        guards
    }
}
