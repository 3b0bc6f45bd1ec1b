//! Durability: the flusher thread that group-commits (one fsync covers every batch applied
//! before it starts), writes the waiting device refreshes, and publishes how far each flush
//! reached; and the store's closing, which stops it.

use super::*;

/// What the last flush achieved.
#[derive(Clone, Debug, Default)]
pub(super) struct FlushState {
    pub(super) covered: u64,
    pub(super) failure: Option<Arc<str>>,
}

/// Wakes the flusher thread.
#[derive(Default)]
pub(super) struct Flusher {
    pub(super) state: Mutex<FlusherState>,
    pub(super) wake: Condvar,
}

#[derive(Default)]
pub(super) struct FlusherState {
    pub(super) requested: bool,
    pub(super) stop: bool,
}

/// How often the flusher makes undelayed writes (plain refreshes) durable.
pub(super) const BACKGROUND_FLUSH: Duration = Duration::from_millis(500);

impl Flusher {
    pub(super) fn request(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.requested = true;
        }
        self.wake.notify_one();
    }

    pub(super) fn stop(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.stop = true;
        }
        self.wake.notify_one();
    }

    /// Whether a flush was asked for since the last wait or look; takes the request.
    pub(super) fn take_request(&self) -> bool {
        self.state
            .lock()
            .map(|mut st| std::mem::take(&mut st.requested))
            .unwrap_or(false)
    }

    /// Waits for a request, a stop, or the background interval; `false` means stop.
    pub(super) fn wait(&self) -> bool {
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
pub(super) fn stage_refreshes<'a>(
    tree: &'a sled::Tree,
    tables: &'a LicenseTables,
    taken: Vec<(LicenseId, shared_refresh::Refresh)>,
) -> StoreResult<Tx<'a>> {
    let mut tx = Tx::new(tree, tables);
    for entry in taken {
        refresh::stage(&mut tx, entry)?;
    }
    Ok(tx)
}

/// The waiting refreshes of shard `i` whose licenses' mutexes are free now, taken with the
/// mutexes held (a refresh is taken only by whoever holds its license's mutex).
pub(super) fn take_free<'l>(
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
pub(super) fn write_refreshes(tx: Tx<'_>, applied: &AtomicU64) -> StoreResult<()> {
    tx.commit()?;
    applied.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// What the flusher writes and makes durable: the records (and the license tables the
/// refreshes it writes update), and the kept answers' files.
pub(super) struct FlushTargets {
    pub(super) tree: sled::Tree,
    pub(super) tables: Arc<LicenseTables>,
    pub(super) kept: Arc<super::idempotency::Kept>,
    /// Usage increments waiting to be applied (`staged_usage.rs`).
    pub(super) staged: Arc<super::staged_usage::StagedUsage>,
}

/// The flusher thread: when asked, or every 500 ms when there is something to write, applies
/// the staged usage increments (`staged_usage.rs`) in one batch, flushes what was applied
/// (under the gate, exclusively), appends and syncs the kept answers queued before
/// (`idempotency.rs`), and publishes how far it reached, then applies the waiting refreshes
/// (stripe by stripe, under each stripe's lock, flushing between stripes when a step asks),
/// which the next round flushes.
pub(super) fn run_flusher(
    targets: FlushTargets,
    locks: Arc<Locks>,
    applied: Arc<AtomicU64>,
    refreshes: Arc<Refreshes>,
    flusher: Arc<Flusher>,
    progress: watch::Sender<FlushState>,
) {
    let FlushTargets {
        tree,
        tables,
        kept,
        staged,
    } = targets;
    let flush = |covered: u64| {
        let gate = locks.gate.blocking_write();
        let target = applied.load(Ordering::Acquire);
        let result = tree.flush().map_err(|e| e.to_string());
        drop(gate);
        // The kept answers counted up to `target` were queued before they were counted.
        let result = result.and_then(|_| kept.write().map_err(|e| e.to_string()));
        let state = match result {
            Ok(_) => FlushState {
                covered: target,
                failure: None,
            },
            Err(e) => {
                tracing::error!(error = %e, "store flush failed");
                FlushState {
                    covered,
                    failure: Some(Arc::from(e)),
                }
            }
        };
        progress.send_replace(state);
    };
    let flush_applied = || {
        // The staged usage increments first, in one batch, so that this flush covers them.
        let batches = super::staged_usage::Flush {
            gate: &locks.gate,
            applied: &applied,
        };
        staged.apply_all(&tree, &tables, batches);
        let covered = progress.borrow().covered;
        if applied.load(Ordering::Acquire) > covered {
            flush(covered);
        }
    };
    loop {
        let keep_going = flusher.wait();
        // First what steps applied, so that a step waiting for its flush does not wait for the
        // refreshes to be written too; the refreshes written below are flushed by the next
        // round (at most 500 ms later, sooner when asked) or the last one.
        flush_applied();
        if !refreshes.is_empty() {
            for i in 0..shared_refresh::STRIPES {
                // A step that asked for a flush meanwhile waits for one stripe's refreshes at
                // most, not for all of them: writing them reads records sled may have to fetch
                // from disk (the license cache answers their requests without reading them).
                if flusher.take_request() {
                    flush_applied();
                }
                // The licenses whose mutex is free now; a license held by a step is left to
                // it (it writes its own refreshes first), or to the next round.
                let (guards, taken) = take_free(&locks, &refreshes, i);
                if taken.is_empty() {
                    continue;
                }
                let written = stage_refreshes(&tree, &tables, taken).and_then(|tx| {
                    let _gate = locks.gate.blocking_read();
                    write_refreshes(tx, &applied)
                });
                if let Err(e) = written {
                    tracing::error!(error = %e, "writing device refreshes failed");
                }
                drop(guards);
            }
        }
        if !keep_going {
            flush_applied();
            return;
        }
    }
}
