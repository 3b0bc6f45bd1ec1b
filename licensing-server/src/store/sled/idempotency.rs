//! Idempotency keys (protocol.md section 6).
//!
//! Kept answers live in a database of their own, `answers` inside the store's directory, apart
//! from the records: they are many, short-lived and written behind, and in the records' database
//! each one was an insert in the developer writes' batch and in the flush every write waits for
//! (benches/README.md, "A developer write with an idempotency key"). Here a thread of their own
//! writes them ([`run_answer_writer`]): every 50 ms what was kept since, one plain insert each
//! (so that claims reading meanwhile wait for nothing), and a flush of their database at most
//! every half second, so an answer is durable within about half a second of its reply, as
//! before. Until it is written an answer is held in memory, where claims find it at once.
//!
//! Keys: `day | name`: the day (since 1970, 4 bytes big-endian) of the claim, so that the purge
//! drops whole days without an index; the name is SHA-256 of `owner|0|key`. A claim looks in
//! the day of its time and the days either side (a key is kept 24 hours, so its record is in
//! one of them), but only when an answer of its name may be there: the names written are
//! counted in memory ([`Claims`]), so a new key reads nothing. Running claims are held in
//! memory too ([`Running`]): a sled store belongs to one process.
//!
//! Stores written before kept answers had their own database held them in the records' tree
//! (`Y|name`, indexed by `i Y|time|name`); [`move_from_records`] moves them over at start-up.

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};

use super::keys::{key, tag};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{SledStore, backend};

/// SHA-256 of `owner|0|key` (an owner holds no NUL, a key only visible ASCII): short keys,
/// which is most of what a kept answer costs to write besides its body.
fn name(owner: &IdempotencyOwner, k: &IdempotencyKey) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(key(&[
        owner.as_str().as_bytes(),
        &[0],
        k.as_str().as_bytes(),
    ]))
    .to_vec()
}

/// The day (since 1970) of `at`.
fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis().div_euclid(86_400_000).max(0)).unwrap_or(u32::MAX)
}

/// Where the answer kept under `name` on `day` is.
fn answer_key(day: u32, name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + name.len());
    k.extend_from_slice(&day.to_be_bytes());
    k.extend_from_slice(name);
    k
}

/// The database of kept answers for a store in `dir` (or a temporary one), opened with a small
/// cache: what is read back is mostly the last minutes' answers.
pub(super) fn open_answers(dir: Option<&std::path::Path>) -> StoreResult<sled::Db> {
    let config = match dir {
        Some(dir) => sled::Config::new().path(dir.join(ANSWERS_DIR)),
        None => sled::Config::new().temporary(true),
    };
    super::open_db(
        &config.cache_capacity(32 * 1024 * 1024).flush_every_ms(None),
        super::FIRST_OPEN_LOCK_WAIT,
    )
}

/// The directory of the kept answers' database, inside the store's.
pub(crate) const ANSWERS_DIR: &str = "answers";

/// `fingerprint (32) | created (8, big-endian) | 0`, or `… | 1 | status (2) | content type |
/// header count (1) | (name, value) each | body`, each text as `length (2) | bytes`.
fn encode(record: &IdempotencyRecord) -> Vec<u8> {
    let extra = record.answer.as_ref().map_or(0, |a| {
        8 + a.content_type.len()
            + a.headers
                .iter()
                .map(|(n, v)| 4 + n.len() + v.len())
                .sum::<usize>()
            + a.body.len()
    });
    let mut out = Vec::with_capacity(41 + extra);
    out.extend_from_slice(&record.fingerprint.0);
    out.extend_from_slice(&record.created_at.as_millis().to_be_bytes());
    match &record.answer {
        None => out.push(0),
        Some(answer) => {
            out.push(1);
            out.extend_from_slice(&answer.status.to_be_bytes());
            put_text(&mut out, &answer.content_type);
            let count = answer.headers.len().min(usize::from(u8::MAX));
            out.push(count as u8);
            for (name, value) in &answer.headers[..count] {
                put_text(&mut out, name);
                put_text(&mut out, value);
            }
            out.extend_from_slice(&answer.body);
        }
    }
    out
}

/// `length (2) | bytes`, cut to 65,535 bytes (headers and content types are far shorter).
fn put_text(out: &mut Vec<u8>, text: &str) {
    let mut len = text.len().min(usize::from(u16::MAX));
    while !text.is_char_boundary(len) {
        len -= 1;
    }
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&text.as_bytes()[..len]);
}

/// Reads what [`put_text`] wrote at `*at`, moving past it.
fn take_text(v: &[u8], at: &mut usize) -> Option<String> {
    let len = usize::from(u16::from_be_bytes(v.get(*at..*at + 2)?.try_into().ok()?));
    let text = std::str::from_utf8(v.get(*at + 2..*at + 2 + len)?).ok()?;
    *at += 2 + len;
    Some(text.to_owned())
}

fn decode(v: &[u8]) -> StoreResult<IdempotencyRecord> {
    let bad = || StoreError::backend("bad idempotency record");
    let fingerprint: [u8; 32] = v
        .get(..32)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(bad)?;
    let created: [u8; 8] = v
        .get(32..40)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(bad)?;
    let answer = match v.get(40) {
        Some(0) => None,
        Some(1) => {
            let status: [u8; 2] = v
                .get(41..43)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(bad)?;
            let mut at = 43;
            let content_type = take_text(v, &mut at).ok_or_else(bad)?;
            let count = *v.get(at).ok_or_else(bad)?;
            at += 1;
            let mut headers = Vec::with_capacity(usize::from(count));
            for _ in 0..count {
                let name = take_text(v, &mut at).ok_or_else(bad)?;
                let value = take_text(v, &mut at).ok_or_else(bad)?;
                headers.push((name, value));
            }
            Some(KeptAnswer {
                status: u16::from_be_bytes(status),
                content_type,
                headers,
                body: v.get(at..).ok_or_else(bad)?.to_vec(),
            })
        }
        _ => return Err(bad()),
    };
    Ok(IdempotencyRecord {
        fingerprint: Fingerprint(fingerprint),
        created_at: Timestamp::from_millis(i64::from_be_bytes(created)),
        answer,
    })
}

/// What this process holds of a key: a claim whose write is running, or an answer kept but not
/// yet written to the tree (shared with the answer writer, which tells by its address whether
/// it is still the one it wrote).
#[derive(Clone, Debug)]
enum Held {
    Running(Fingerprint, Timestamp),
    Kept(Arc<IdempotencyRecord>),
}

/// The running claims and freshly kept answers of this process, by name. A sled store
/// belongs to one process, so a claim needs no more than this process's lock; a running claim
/// written to disk would say nothing after a crash that the lost answer does not (the write may
/// or may not have happened). A kept answer is answered from here at once, until the answer
/// writer has written it to the answers' database (within 50 ms).
#[derive(Default)]
pub(super) struct Running(std::sync::Mutex<Claims>);

/// What [`Running`] guards.
#[derive(Default)]
pub(super) struct Claims {
    held: HashMap<Vec<u8>, Held>,
    /// How many answers in the answers' database have a name beginning with these 8 bytes,
    /// once `complete`: a key never seen, which is what almost every claim is, is told from
    /// memory without looking in the database (three reads in a tree of random keys, which
    /// measured the larger part of a key's cost on sled). About 16 bytes per answer kept. A
    /// count too high (an answer written twice) costs only those reads; it is never too low.
    written: HashMap<u64, u32>,
    /// Whether `written` counts every answer in the database (the answer writer counts them
    /// when the store opens; until then claims look in the database).
    complete: bool,
}

impl Claims {
    /// Whether an answer named `name` may be in the answers' database.
    fn may_be_written(&self, name: &[u8]) -> bool {
        !self.complete || self.written.contains_key(&prefix(name))
    }

    /// Counts an answer whose name begins with `prefix` as written.
    fn count(&mut self, prefix: u64) {
        *self.written.entry(prefix).or_default() += 1;
    }

    /// Counts an answer named `name` as removed from the database.
    fn uncount(&mut self, name: &[u8]) {
        let prefix = prefix(name);
        if let Some(n) = self.written.get_mut(&prefix) {
            *n -= 1;
            if *n == 0 {
                self.written.remove(&prefix);
            }
        }
    }
}

/// The first 8 bytes of a name (a SHA-256 digest, so as good as random).
fn prefix(name: &[u8]) -> u64 {
    let mut first = [0; 8];
    let n = name.len().min(8);
    first[..n].copy_from_slice(&name[..n]);
    u64::from_be_bytes(first)
}

impl Running {
    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Claims>> {
        self.0
            .lock()
            .map_err(|_| StoreError::backend("idempotency claims lock poisoned"))
    }

    /// The answers waiting to be written (they stay answered from memory until they are).
    fn kept(&self) -> StoreResult<Vec<(Vec<u8>, Arc<IdempotencyRecord>)>> {
        Ok(self
            .lock()?
            .held
            .iter()
            .filter_map(|(name, held)| match held {
                Held::Kept(record) => Some((name.clone(), record.clone())),
                Held::Running(..) => None,
            })
            .collect())
    }

    /// Counts the answers `written` to their database and forgets them, unless they changed
    /// meanwhile.
    fn written(&self, written: &[(Vec<u8>, Arc<IdempotencyRecord>)]) -> StoreResult<()> {
        let mut claims = self.lock()?;
        for (name, record) in written {
            claims.count(prefix(name));
            if matches!(claims.held.get(name), Some(Held::Kept(r)) if Arc::ptr_eq(r, record)) {
                claims.held.remove(name);
            }
        }
        Ok(())
    }

    /// Counts the answers in `answers` (at start-up, before the writer's first round); claims
    /// meanwhile look in the database.
    fn count_written(&self, answers: &sled::Tree) -> StoreResult<usize> {
        let mut names = Vec::new();
        for k in answers.iter().keys() {
            let k = k.map_err(backend)?;
            names.push(prefix(k.get(4..).unwrap_or_default()));
        }
        let mut claims = self.lock()?;
        for &name in &names {
            claims.count(name);
        }
        claims.complete = true;
        Ok(names.len())
    }
}

/// Writes the answers waiting in `running` to `answers`, one plain insert each, then answers
/// them from there; how many it wrote.
pub(super) fn write_kept(answers: &sled::Tree, running: &Running) -> StoreResult<usize> {
    let kept = running.kept()?;
    for (name, record) in &kept {
        answers
            .insert(answer_key(day_of(record.created_at), name), encode(record))
            .map_err(backend)?;
    }
    running.written(&kept)?;
    Ok(kept.len())
}

/// How often the answer writer writes what was kept since its last round.
const WRITE_EVERY: Duration = Duration::from_millis(50);
/// How often at most it flushes the answers' database (when it wrote something).
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// The answer writer thread: every [`WRITE_EVERY`] writes the answers kept since, and flushes
/// them at most every [`FLUSH_EVERY`]; once `stop` is dropped, writes and flushes what is left.
pub(super) fn run_answer_writer(
    answers: sled::Db,
    running: std::sync::Arc<Running>,
    stop: std::sync::mpsc::Receiver<()>,
) {
    if let Err(e) = running.count_written(&answers) {
        tracing::error!(error = %e, "counting kept idempotent answers failed");
    }
    let mut unflushed = false;
    let mut flushed_at = Instant::now();
    loop {
        let stopping = matches!(
            stop.recv_timeout(WRITE_EVERY),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        );
        match write_kept(&answers, &running) {
            Ok(0) => {}
            Ok(_) => unflushed = true,
            Err(e) => tracing::error!(error = %e, "writing kept idempotent answers failed"),
        }
        if unflushed && (stopping || flushed_at.elapsed() >= FLUSH_EVERY) {
            match answers.flush() {
                Ok(_) => unflushed = false,
                Err(e) => tracing::error!(error = %e, "flushing kept idempotent answers failed"),
            }
            flushed_at = Instant::now();
        }
        if stopping {
            return;
        }
    }
}

/// Moves the kept answers of a store written before they had a database of their own from the
/// records' tree to `answers` (made durable there first); how many.
pub(super) fn move_from_records(tree: &sled::Tree, answers: &sled::Db) -> StoreResult<usize> {
    let mut moved = Vec::new();
    for entry in tree.scan_prefix([tag::IDEMPOTENCY]) {
        let (k, v) = entry.map_err(backend)?;
        let record = decode(&v)?;
        answers
            .insert(answer_key(day_of(record.created_at), &k[1..]), v)
            .map_err(backend)?;
        moved.push(k);
    }
    if moved.is_empty() {
        return Ok(0);
    }
    answers.flush().map_err(backend)?;
    let mut batch = sled::Batch::default();
    for k in &moved {
        batch.remove(k.clone());
    }
    for index in tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).keys() {
        batch.remove(index.map_err(backend)?);
    }
    tree.apply_batch(batch).map_err(backend)?;
    tree.flush().map_err(backend)?;
    Ok(moved.len())
}

impl SledStore {
    /// The answer kept under `name`, as stored, looking in the day of `now` and the days either
    /// side of it.
    fn kept_record(&self, name: &[u8], now: Timestamp) -> StoreResult<Option<IdempotencyRecord>> {
        let day = day_of(now);
        for day in [day, day.saturating_sub(1), day.saturating_add(1)] {
            if let Some(bytes) = self
                .inner
                .answers
                .get(answer_key(day, name))
                .map_err(backend)?
            {
                return decode(&bytes).map(Some);
            }
        }
        Ok(None)
    }

    /// Writes every kept answer still only in memory and flushes them (before a purge and the
    /// store's last flush).
    pub(super) async fn write_kept_answers(&self) -> StoreResult<()> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let answers = &store.inner.answers;
            write_kept(answers, &store.inner.running_claims)?;
            answers.flush().map(drop).map_err(backend)
        })
        .await
        .map_err(|e| StoreError::backend(format!("writing kept answers: {e}")))?
    }

    /// Bytes the kept answers' database occupies on disk.
    pub(super) fn answers_on_disk(&self) -> StoreResult<u64> {
        self.inner.answers.size_on_disk().map_err(backend)
    }
}

// A claim is decided under the lock of this process's claims, from them and the kept answers
// on disk.
impl IdempotencyStore for SledStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        let name = name(owner, k);
        let mut claims = self.inner.running_claims.lock()?;
        let existing = match claims.held.get(&name) {
            Some(Held::Running(fingerprint, created_at)) => Some(IdempotencyRecord {
                fingerprint: *fingerprint,
                created_at: *created_at,
                answer: None,
            }),
            Some(Held::Kept(record)) => Some(IdempotencyRecord::clone(record)),
            None if claims.may_be_written(&name) => self.kept_record(&name, now)?,
            None => None,
        };
        let claim = Claim::decide(existing.as_ref(), fingerprint, now);
        if claim == Claim::Run {
            claims.held.insert(name, Held::Running(fingerprint, now));
        }
        Ok(claim)
    }

    async fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> StoreResult<()> {
        let name = name(owner, k);
        {
            let mut claims = self.inner.running_claims.lock()?;
            let Some(&Held::Running(claimed, created_at)) = claims.held.get(&name) else {
                return Ok(());
            };
            if claimed != fingerprint {
                return Ok(());
            }
            let record = IdempotencyRecord {
                fingerprint,
                created_at,
                answer: Some(answer.clone()),
            };
            claims.held.insert(name, Held::Kept(Arc::new(record)));
        }
        Ok(())
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        let name = name(owner, k);
        let mut claims = self.inner.running_claims.lock()?;
        if matches!(claims.held.get(&name), Some(Held::Running(f, _)) if *f == fingerprint) {
            claims.held.remove(&name);
        }
        Ok(())
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        // The answers still on their way to their database first, so that they are purged
        // alike.
        self.write_kept_answers().await?;
        let answers = &self.inner.answers;
        let last_day = day_of(before);
        let mut purged = 0;
        // Days before `before`'s whole; its own day by each record's claim time, under the
        // claims' lock, so that an answer being written is not deleted in between.
        for entry in answers.range(..answer_key(last_day.saturating_add(1), &[])) {
            if purged >= u64::from(max) {
                break;
            }
            let (k, v) = entry.map_err(backend)?;
            let mut claims = self.inner.running_claims.lock()?;
            let whole_day = k.get(..4).is_some_and(|d| d < &last_day.to_be_bytes()[..]);
            if whole_day || decode(&v)?.created_at < before {
                if answers.remove(&k).map_err(backend)?.is_some() {
                    claims.uncount(k.get(4..).unwrap_or_default());
                }
                purged += 1;
            }
        }
        Ok(purged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        let running = IdempotencyRecord {
            fingerprint: Fingerprint([9; 32]),
            created_at: Timestamp::from_millis(1_764_000_000_000),
            answer: None,
        };
        assert_eq!(decode(&encode(&running)).unwrap(), running);
        let done = IdempotencyRecord {
            answer: Some(KeptAnswer {
                status: 201,
                content_type: "application/json".into(),
                headers: vec![("location".into(), "/dashboard/é".into())],
                body: vec![0, 1, 2, 255],
            }),
            ..running
        };
        assert_eq!(decode(&encode(&done)).unwrap(), done);
        assert!(decode(&encode(&done)[..40]).is_err());
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn answer(body: &str) -> KeptAnswer {
        KeptAnswer {
            status: 201,
            content_type: "application/json".into(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// An answer kept just before the store closes is replayed after it opens again (the
    /// writer's last round writes and flushes it), and a key of yesterday is still found.
    #[test]
    fn kept_answers_survive_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let owner = IdempotencyOwner::admin();
        let (today, yesterday) = (
            IdempotencyKey::parse(b"today").unwrap(),
            IdempotencyKey::parse(b"yesterday").unwrap(),
        );
        let print = Fingerprint([1; 32]);
        let now = Timestamp::now();
        let earlier = Timestamp::from_millis(now.as_millis() - 20 * 3_600_000);
        runtime().block_on(async {
            let store = SledStore::open(dir.path()).expect("open");
            for (k, at) in [(&today, now), (&yesterday, earlier)] {
                assert_eq!(
                    store
                        .claim_idempotency_key(&owner, k, print, at)
                        .await
                        .unwrap(),
                    Claim::Run
                );
                store
                    .keep_idempotent_answer(&owner, k, print, &answer(k.as_str()))
                    .await
                    .unwrap();
            }
        });
        runtime().block_on(async {
            let store = SledStore::open(dir.path()).expect("reopen");
            for k in [&today, &yesterday] {
                assert_eq!(
                    store
                        .claim_idempotency_key(&owner, k, print, now)
                        .await
                        .unwrap(),
                    Claim::Replay(answer(k.as_str())),
                    "{}",
                    k.as_str()
                );
            }
        });
    }

    /// Answers written to their database are counted by name, so that a claim of a new key
    /// looks in no tree; a replay is still found, and a purged answer is counted out.
    #[test]
    fn written_answers_are_counted_and_purged_ones_counted_out() {
        let owner = IdempotencyOwner::admin();
        let k = IdempotencyKey::parse(b"counted").unwrap();
        let print = Fingerprint([3; 32]);
        let now = Timestamp::now();
        let counted = |store: &SledStore| {
            let claims = store.inner.running_claims.lock().unwrap();
            (claims.complete, claims.written.values().sum::<u32>())
        };
        runtime().block_on(async {
            let store = SledStore::temporary().expect("open");
            // The writer counts the database when it starts (an answer written meanwhile may
            // be counted twice, which is harmless); wait for it, so that the count is exact.
            let deadline = Instant::now() + Duration::from_secs(30);
            while !counted(&store).0 {
                assert!(Instant::now() < deadline, "the answers were never counted");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            store
                .claim_idempotency_key(&owner, &k, print, now)
                .await
                .unwrap();
            store
                .keep_idempotent_answer(&owner, &k, print, &answer("{}"))
                .await
                .unwrap();
            store.write_kept_answers().await.unwrap();
            assert_eq!(counted(&store), (true, 1));
            assert!(store.inner.running_claims.lock().unwrap().held.is_empty());
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, print, now)
                    .await
                    .unwrap(),
                Claim::Replay(answer("{}"))
            );
            let later = Timestamp::from_millis(now.as_millis() + 25 * 3_600_000);
            assert_eq!(store.purge_idempotency_keys(later, 100).await.unwrap(), 1);
            assert_eq!(counted(&store), (true, 0));
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, print, now)
                    .await
                    .unwrap(),
                Claim::Run
            );
        });
    }

    /// A store written when kept answers lived among the records (`Y|name` and its entry by
    /// time) has them moved to their own database when it opens, and replays them.
    #[test]
    fn answers_kept_among_the_records_are_moved() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(SledStore::open(dir.path()).expect("open"));
        let owner = IdempotencyOwner::admin();
        let k = IdempotencyKey::parse(b"before-the-move").unwrap();
        let record = IdempotencyRecord {
            fingerprint: Fingerprint([2; 32]),
            created_at: Timestamp::from_millis(Timestamp::now().as_millis() - 60_000),
            answer: Some(answer("{\"id\":1}")),
        };
        {
            let db = crate::store::sled::open_db(
                &sled::Config::new().path(dir.path()),
                crate::store::sled::REOPEN_LOCK_WAIT,
            )
            .expect("raw open");
            let tree = db.open_tree("data").unwrap();
            let n = name(&owner, &k);
            tree.insert(key(&[&[tag::IDEMPOTENCY], &n]), encode(&record))
                .unwrap();
            let by_time = key(&[
                &[tag::INDEX, tag::IDEMPOTENCY],
                &super::super::keys::time(record.created_at),
                &n,
            ]);
            tree.insert(by_time, Vec::new()).unwrap();
            db.flush().unwrap();
        }
        runtime().block_on(async {
            let store = SledStore::open(dir.path()).expect("reopen");
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, record.fingerprint, Timestamp::now())
                    .await
                    .unwrap(),
                Claim::Replay(answer("{\"id\":1}"))
            );
            let tree = &store.inner.tree;
            assert_eq!(tree.scan_prefix([tag::IDEMPOTENCY]).count(), 0);
            assert_eq!(tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).count(), 0);
        });
    }
}
