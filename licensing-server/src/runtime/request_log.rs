//! (ext) The request history of licenses, written behind: the client path hands each entry to
//! [`RequestLog::record`] (a lookup and a push under a short lock, nothing else), a task writes
//! what gathered in batches every second, and the developer API's list writes what is waiting
//! before it reads. Identical requests waiting together (the same license, endpoint, answer,
//! address, device, product and version) become one entry with a count, so that a client
//! retrying in a loop, or a benchmark, writes one entry a second, not one per request. One
//! license gets at most [`NEW_PER_LICENSE`] entries of its own in a second; past them, its
//! requests are counted in the waiting entry of the same endpoint and answer (a flood of
//! refusals with ever new devices or versions writes a few entries a second, not thousands), and
//! the device and version kept are cut to [`MAX_TEXT`] characters. Memory is bounded: past
//! [`MAX_PENDING`] waiting entries (a store that cannot keep up) new ones are dropped and
//! counted. A pruner deletes entries past the retention, each license's oldest past its cap,
//! then each team's oldest past its cap, every hour (the first time ten minutes after start-up).

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::model::RequestLogEntry;
use licensing_core::store::{RequestLogStore, StoreResult};
use tokio::sync::watch;

/// How often waiting entries are written.
pub const WRITE_EVERY: Duration = Duration::from_secs(1);

/// The most entries waiting to be written; more are dropped (and counted).
pub const MAX_PENDING: usize = 100_000;

/// The most entries one statement or batch writes.
const BATCH: usize = 5_000;

/// How often old entries are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How long after start-up the first prune waits: a prune walks the whole history (millions of
/// entries on a busy store), which would otherwise compete with opening the store and fill its
/// cache before the first request.
const FIRST_PRUNE_AFTER: Duration = Duration::from_secs(600);

/// Entries of their own one license gets per write (a second); its other requests are counted
/// in the waiting entry of the same endpoint and answer.
pub const NEW_PER_LICENSE: u32 = 20;

/// The longest hardware identifier or version kept, in characters (longer ones are cut and end
/// in `…`).
pub const MAX_TEXT: usize = 100;

/// How long history is kept, and how much of it per team and per license.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Days an entry is kept; 0 records no history at all.
    pub days: u32,
    /// Entries kept per team, the newest.
    pub per_team: u64,
    /// Entries kept per license, the newest.
    pub per_license: u64,
}

/// The entries waiting, and where each distinct request sits among them (by a hash of what
/// makes requests the same; a hit is compared in full); per license, how many entries of its
/// own it has, and where its first entry of each endpoint and answer is.
#[derive(Debug, Default)]
struct Pending {
    entries: Vec<RequestLogEntry>,
    by_request: HashMap<u64, usize>,
    per_license: HashMap<licensing_core::LicenseId, u32>,
    by_outcome: HashMap<
        (
            licensing_core::LicenseId,
            licensing_core::model::ClientEndpoint,
            licensing_core::ResultCode,
        ),
        usize,
    >,
}

/// `text` cut to [`MAX_TEXT`] characters.
fn bounded(text: Option<String>) -> Option<String> {
    text.map(|t| match t.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => format!("{}…", &t[..cut]),
        None => t,
    })
}

#[derive(Debug, Default)]
struct Inner {
    pending: Mutex<Pending>,
    dropped: AtomicU64,
    /// Held while a flush writes: a flush waits for the one under way, so that what was
    /// recorded before it began is stored when it returns.
    writing: tokio::sync::Mutex<()>,
}

/// What makes two requests the same, hashed (see [`RequestLogEntry::same_request`]).
fn request_hash(e: &RequestLogEntry) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    (
        e.team_id.as_bytes(),
        e.license_id.as_bytes(),
        e.endpoint,
        e.code,
        e.ip_address,
        &e.hardware_identifier,
        e.product_id.map(|p| *p.as_bytes()),
        &e.version,
        &e.country,
    )
        .hash(&mut h);
    h.finish()
}

/// The recorder. Clones share the waiting entries.
#[derive(Clone, Debug)]
pub struct RequestLog {
    retention: Retention,
    inner: Arc<Inner>,
}

impl RequestLog {
    /// A recorder keeping history as `retention` says.
    pub fn new(retention: Retention) -> Self {
        Self {
            retention,
            inner: Arc::default(),
        }
    }

    /// Whether history is recorded at all.
    pub fn on(&self) -> bool {
        self.retention.days > 0
    }

    /// How long history is kept.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// Entries waiting to be written.
    pub fn waiting(&self) -> u64 {
        self.lock().entries.len() as u64
    }

    /// Entries dropped since the start (too many waited, or the store refused them).
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Queues one entry to be written, or counts it in the waiting entry of the same request
    /// (or, past its license's share of the second, of the same endpoint and answer).
    pub fn record(&self, mut entry: RequestLogEntry) {
        if !self.on() {
            return;
        }
        entry.hardware_identifier = bounded(entry.hardware_identifier.take());
        entry.version = bounded(entry.version.take());
        let hash = request_hash(&entry);
        let mut pending = self.lock();
        let Pending {
            entries,
            by_request,
            per_license,
            by_outcome,
        } = &mut *pending;
        if let Some(&i) = by_request.get(&hash)
            && let Some(waiting) = entries.get_mut(i)
            && waiting.same_request(&entry)
        {
            waiting.absorb(&entry);
            return;
        }
        let outcome = (entry.license_id, entry.endpoint, entry.code);
        let own = per_license.entry(entry.license_id).or_default();
        if *own >= NEW_PER_LICENSE
            && let Some(&i) = by_outcome.get(&outcome)
            && let Some(waiting) = entries.get_mut(i)
        {
            waiting.absorb(&entry);
            return;
        }
        if entries.len() >= MAX_PENDING {
            drop(pending);
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *own += 1;
        by_request.insert(hash, entries.len());
        by_outcome.entry(outcome).or_insert(entries.len());
        entries.push(entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // Nothing panics while holding the lock; if something did, keep recording.
        self.inner.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes every waiting entry, after any flush under way has written its own: what was
    /// recorded before the call is stored (or dropped) when it returns. Entries a failed write
    /// could not store are dropped and counted: history is kept on a best-effort basis, never
    /// at the expense of the answers.
    pub async fn flush<S: RequestLogStore>(&self, store: &S) -> StoreResult<()> {
        let _writing = self.inner.writing.lock().await;
        let taken = std::mem::take(&mut *self.lock()).entries;
        let mut failure = Ok(());
        for chunk in taken.chunks(BATCH) {
            if let Err(e) = store.append_requests(chunk).await {
                self.inner
                    .dropped
                    .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                failure = Err(e);
            }
        }
        failure
    }

    /// Writes every [`WRITE_EVERY`] until `stop` turns true, then once more.
    pub async fn run<S: RequestLogStore>(self, store: S, stop: watch::Receiver<bool>) {
        let write = || self.flush(&store);
        super::periodic::flush_every(WRITE_EVERY, stop, "writing request history", write).await;
    }

    /// Deletes what is past the retention: how many. Each license is held to its cap before
    /// the team is, so that a license's flood pushes out its own history, not its team's.
    pub async fn prune<S: RequestLogStore>(&self, store: &S, now: Timestamp) -> StoreResult<u64> {
        let before =
            Timestamp::from_millis(now.as_millis() - i64::from(self.retention.days) * 86_400_000);
        let capped = store
            .cap_license_requests(self.retention.per_license)
            .await?;
        Ok(capped
            + store
                .prune_requests(before, self.retention.per_team)
                .await?)
    }

    /// Prunes ten minutes after start-up, then every hour, until `stop`.
    pub async fn run_pruner<S: RequestLogStore>(self, store: S, mut stop: watch::Receiver<bool>) {
        tokio::select! {
            () = tokio::time::sleep(FIRST_PRUNE_AFTER) => {}
            _ = stop.changed() => return,
        }
        let prune = || async {
            match self.prune(&store, Timestamp::now()).await {
                Ok(0) => {}
                Ok(pruned) => tracing::info!(pruned, "old request history deleted"),
                Err(e) => tracing::error!(error = %e, "pruning request history failed"),
            }
        };
        super::periodic::every(PRUNE_EVERY, stop, prune).await;
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::model::ClientEndpoint;
    use licensing_core::store::{MemoryStore, Page};
    use licensing_core::{LicenseId, ResultCode, TeamId};

    use super::*;

    fn entry(team: TeamId, license: LicenseId, at: Timestamp) -> RequestLogEntry {
        RequestLogEntry {
            team_id: team,
            license_id: license,
            at,
            count: 1,
            last_at: None,
            endpoint: ClientEndpoint::Verify,
            code: ResultCode::LicenseSuspended,
            ip_address: "192.0.2.9".parse().unwrap(),
            country: None,
            hardware_identifier: None,
            product_id: None,
            version: None,
        }
    }

    async fn listed(
        store: &MemoryStore,
        team: TeamId,
        license: LicenseId,
    ) -> Page<RequestLogEntry> {
        let query = licensing_core::api::requests::RequestLogQuery::default();
        store.list_requests(team, license, &query).await.unwrap()
    }

    /// A log keeping 30 days, at most `per_team` entries a team and 1,000 a license.
    fn log_of(per_team: u64) -> RequestLog {
        RequestLog::new(Retention {
            days: 30,
            per_team,
            per_license: 1_000,
        })
    }

    #[tokio::test]
    async fn entries_wait_until_flushed_then_age_out() {
        let store = MemoryStore::default();
        let log = log_of(1_000);
        let (team, license) = (TeamId::new(), LicenseId::new());
        let now = Timestamp::now();
        log.record(entry(team, license, now));
        let mut other = entry(team, license, now);
        other.hardware_identifier = Some("machine-2".into());
        log.record(other);
        // The same request again, three times: counted in the first entry.
        for ms in 1..=3 {
            log.record(entry(
                team,
                license,
                Timestamp::from_millis(now.as_millis() + ms),
            ));
        }
        assert_eq!(listed(&store, team, license).await.total, 0);
        log.flush(&store).await.unwrap();
        let page = listed(&store, team, license).await;
        assert_eq!(page.total, 2);
        let repeated = page
            .items
            .iter()
            .find(|e| e.hardware_identifier.is_none())
            .unwrap();
        assert_eq!(repeated.count, 4);
        assert_eq!(repeated.at, now);
        assert_eq!(
            repeated.last_at,
            Some(Timestamp::from_millis(now.as_millis() + 3))
        );
        // 31 days on, both are past the retention.
        let later = Timestamp::from_millis(now.as_millis() + 31 * 86_400_000);
        assert_eq!(log.prune(&store, later).await.unwrap(), 2);
    }

    /// A flood of distinct requests on one license (new devices, versions, refused) writes a
    /// few entries a second, each counting its share; another license's requests are kept as
    /// they are; long identifiers are cut.
    #[tokio::test]
    async fn one_license_floods_no_history() {
        let store = MemoryStore::default();
        let log = log_of(1_000_000);
        let (team, flooded, quiet) = (TeamId::new(), LicenseId::new(), LicenseId::new());
        let now = Timestamp::now();
        for i in 0..5_000u32 {
            let mut e = entry(team, flooded, now);
            e.hardware_identifier = Some(format!("machine-{i:06}-{}", "x".repeat(900)));
            e.version = Some(format!("1.{i}"));
            e.code = if i % 2 == 0 {
                ResultCode::HwidLimitReached
            } else {
                ResultCode::LicenseSuspended
            };
            log.record(e);
        }
        for i in 0..5u32 {
            let mut e = entry(team, quiet, now);
            e.hardware_identifier = Some(format!("machine-{i}"));
            log.record(e);
        }
        log.flush(&store).await.unwrap();
        let page = listed(&store, team, flooded).await;
        assert!(
            page.total <= u64::from(NEW_PER_LICENSE),
            "{} entries",
            page.total
        );
        let mut query = licensing_core::api::requests::RequestLogQuery::default();
        query.paging.page_size = 100;
        let all = store.list_requests(team, flooded, &query).await.unwrap();
        let counted: u64 = all.items.iter().map(|e| u64::from(e.count)).sum();
        assert_eq!(counted, 5_000, "every request counted");
        assert!(all.items.iter().all(|e| {
            e.hardware_identifier
                .as_ref()
                .is_some_and(|h| h.chars().count() == MAX_TEXT + 1 && h.ends_with('…'))
        }));
        assert_eq!(listed(&store, team, quiet).await.total, 5);
        // The pruner holds each license to its cap before the team's.
        let capped = RequestLog::new(Retention {
            days: 30,
            per_team: 1_000_000,
            per_license: 3,
        });
        capped.prune(&store, now).await.unwrap();
        assert_eq!(listed(&store, team, flooded).await.total, 3);
        assert_eq!(listed(&store, team, quiet).await.total, 3);
    }

    #[tokio::test]
    async fn nothing_is_recorded_when_off_and_the_queue_is_bounded() {
        let off = RequestLog::new(Retention {
            days: 0,
            per_team: 1_000,
            per_license: 1_000,
        });
        let (team, license) = (TeamId::new(), LicenseId::new());
        off.record(entry(team, license, Timestamp::now()));
        assert!(off.lock().entries.is_empty());
        let on = RequestLog::new(Retention {
            days: 1,
            per_team: 1_000,
            per_license: 1_000,
        });
        for i in 0..MAX_PENDING + 3 {
            // (Each of another license: one license's share of a second is far smaller.)
            let mut distinct = entry(team, LicenseId::new(), Timestamp::now());
            distinct.hardware_identifier = Some(format!("machine-{i}"));
            on.record(distinct);
        }
        assert_eq!(on.lock().entries.len(), MAX_PENDING);
        assert_eq!(on.dropped(), 3);
    }
}
