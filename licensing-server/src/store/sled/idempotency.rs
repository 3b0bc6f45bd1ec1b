//! Idempotency keys (protocol.md section 6).
//!
//! Kept answers live apart from the records, in files of their own (`answer_log.rs`): they are
//! many, short-lived and written behind, and in the records' database each one was an insert in
//! the developer writes' batch and in the flush every write waits for (benches/README.md, "A
//! developer write with an idempotency key"). A thread of their own writes them
//! ([`run_answer_writer`]): every 50 ms it appends what was kept since, and syncs the files at
//! most every half second, so an answer is durable within about half a second of its reply.
//! Until it is written an answer is held in memory, where claims find it at once.
//!
//! An answer's name is SHA-256 of `owner|0|key`. Where each written answer is, is indexed in
//! memory, so a claim of a new key reads nothing, and a retry reads one frame. Running claims
//! are held in memory too ([`Running`]): a sled store belongs to one process.
//!
//! Earlier stores kept answers among the records (`Y|name`, indexed by `i Y|time|name`), then in
//! a sled database of their own (`answers`); [`move_from_records`] and
//! [`move_from_answers_db`] move them to the files at start-up.

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};

use super::answer_log::{Appender, Frame, Index};
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

/// The directory of the kept answers' sled database, where stores before the answers' files
/// kept them; moved to the files at open ([`move_from_answers_db`]).
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
/// yet written to the files (shared with the answer writer, which tells by its address whether
/// it is still the one it wrote).
#[derive(Clone, Debug)]
enum Held {
    Running(Fingerprint, Timestamp),
    Kept(Arc<IdempotencyRecord>),
}

/// The running claims and freshly kept answers of this process, by name, and the kept answers'
/// files. A sled store belongs to one process, so a claim needs no more than this process's
/// lock; a running claim written to disk would say nothing after a crash that the lost answer
/// does not (the write may or may not have happened). A kept answer is answered from memory at
/// once, until the answer writer has appended it to its file (within 50 ms).
pub(super) struct Running {
    claims: std::sync::Mutex<Claims>,
    /// Taken before `claims` when both are.
    appender: std::sync::Mutex<Appender>,
}

/// What [`Running`] guards.
pub(super) struct Claims {
    held: HashMap<Vec<u8>, Held>,
    /// Where the answers written to the files are: a key never seen, which is what almost
    /// every claim is, is told from memory without reading anything.
    index: Index,
}

fn poisoned<T>(_: T) -> StoreError {
    StoreError::backend("idempotency claims lock poisoned")
}

impl Running {
    /// Opens the kept answers' files of the store in `dir` (or temporary ones) and indexes them.
    pub(super) fn open(dir: Option<&std::path::Path>) -> StoreResult<Self> {
        let (appender, index) = Appender::open(dir)?;
        Ok(Self {
            claims: std::sync::Mutex::new(Claims {
                held: HashMap::new(),
                index,
            }),
            appender: std::sync::Mutex::new(appender),
        })
    }

    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Claims>> {
        self.claims.lock().map_err(poisoned)
    }

    fn appender(&self) -> StoreResult<std::sync::MutexGuard<'_, Appender>> {
        self.appender.lock().map_err(poisoned)
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

    /// Appends the answers waiting in memory to their files, then answers them from there (the
    /// ones that did not change meanwhile); how many it wrote. Not synced: see [`Self::sync`].
    pub(super) fn write_kept(&self) -> StoreResult<usize> {
        let mut appender = self.appender()?;
        let kept = self.kept()?;
        if kept.is_empty() {
            return Ok(0);
        }
        let records: Vec<Vec<u8>> = kept.iter().map(|(_, record)| encode(record)).collect();
        let frames: Vec<Frame<'_>> = kept
            .iter()
            .zip(&records)
            .map(|((name, record), bytes)| Frame {
                name,
                created: record.created_at,
                record: bytes,
            })
            .collect();
        let mut claims = self.lock()?;
        appender.append(&frames, &mut claims.index)?;
        for (name, record) in &kept {
            if matches!(claims.held.get(name), Some(Held::Kept(r)) if Arc::ptr_eq(r, record)) {
                claims.held.remove(name);
            }
        }
        Ok(kept.len())
    }

    /// Makes the answers appended so far durable; whether there were any.
    pub(super) fn sync(&self) -> StoreResult<bool> {
        self.appender()?.sync()
    }

    /// Appends answers read from an older store's keeping (`(name, encoded record)`) to the
    /// files, durably.
    fn take_over(&self, answers: &[(Vec<u8>, Vec<u8>)]) -> StoreResult<()> {
        let frames = answers
            .iter()
            .map(|(name, record)| {
                Ok(Frame {
                    name,
                    created: decode(record)?.created_at,
                    record,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let mut appender = self.appender()?;
        appender.append(&frames, &mut self.lock()?.index)?;
        appender.sync().map(drop)
    }

    /// Bytes the kept answers' files take.
    pub(super) fn on_disk(&self) -> StoreResult<u64> {
        Ok(self.appender()?.on_disk())
    }

    /// How many answers the files hold, and their bytes after the name.
    pub(super) fn usage(&self) -> StoreResult<(u64, u64)> {
        Ok(self.lock()?.index.usage())
    }
}

/// How often the answer writer writes what was kept since its last round.
const WRITE_EVERY: Duration = Duration::from_millis(50);
/// How often at most it syncs the files (when it wrote something).
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// The answer writer thread: every [`WRITE_EVERY`] appends the answers kept since, and syncs
/// them at most every [`FLUSH_EVERY`]; once `stop` is dropped, writes and syncs what is left.
pub(super) fn run_answer_writer(running: Arc<Running>, stop: std::sync::mpsc::Receiver<()>) {
    let mut unsynced = false;
    let mut synced_at = Instant::now();
    loop {
        let stopping = matches!(
            stop.recv_timeout(WRITE_EVERY),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        );
        match running.write_kept() {
            Ok(0) => {}
            Ok(_) => unsynced = true,
            Err(e) => tracing::error!(error = %e, "writing kept idempotent answers failed"),
        }
        if unsynced && (stopping || synced_at.elapsed() >= FLUSH_EVERY) {
            match running.sync() {
                Ok(_) => unsynced = false,
                Err(e) => tracing::error!(error = %e, "syncing kept idempotent answers failed"),
            }
            synced_at = Instant::now();
        }
        if stopping {
            return;
        }
    }
}

/// Moves the kept answers of a store written when they lived among the records to the files
/// (made durable there first); how many.
pub(super) fn move_from_records(tree: &sled::Tree, running: &Running) -> StoreResult<usize> {
    let mut moved = Vec::new();
    for entry in tree.scan_prefix([tag::IDEMPOTENCY]) {
        let (k, v) = entry.map_err(backend)?;
        moved.push((k[1..].to_vec(), v.to_vec()));
    }
    if moved.is_empty() {
        return Ok(0);
    }
    running.take_over(&moved)?;
    let mut batch = sled::Batch::default();
    for (name, _) in &moved {
        batch.remove(key(&[&[tag::IDEMPOTENCY], name]));
    }
    for index in tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).keys() {
        batch.remove(index.map_err(backend)?);
    }
    tree.apply_batch(batch).map_err(backend)?;
    tree.flush().map_err(backend)?;
    Ok(moved.len())
}

/// Moves the kept answers of a store written when they had a sled database of their own
/// (`answers`, keys `day (4) | name`) to the files (made durable there first), and removes
/// the database; how many. A crash in between moves them again at the next open (an answer
/// written twice is read once).
pub(super) fn move_from_answers_db(dir: &std::path::Path, running: &Running) -> StoreResult<usize> {
    let path = dir.join(ANSWERS_DIR);
    if !path.exists() {
        return Ok(0);
    }
    let mut moved = Vec::new();
    {
        let db = super::open_db(&sled::Config::new().path(&path), super::REOPEN_LOCK_WAIT)?;
        for entry in db.iter() {
            let (k, v) = entry.map_err(backend)?;
            moved.push((k.get(4..).unwrap_or_default().to_vec(), v.to_vec()));
        }
    }
    running.take_over(&moved)?;
    std::fs::remove_dir_all(&path).map_err(backend)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(backend)?;
    Ok(moved.len())
}

impl SledStore {
    /// Writes every kept answer still only in memory and syncs them (before a purge and the
    /// store's last flush).
    pub(super) async fn write_kept_answers(&self) -> StoreResult<()> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let running = &store.inner.running_claims;
            running.write_kept()?;
            running.sync().map(drop)
        })
        .await
        .map_err(|e| StoreError::backend(format!("writing kept answers: {e}")))?
    }

    /// Bytes the kept answers' files take.
    pub(super) fn answers_on_disk(&self) -> StoreResult<u64> {
        self.inner.running_claims.on_disk()
    }
}

// A claim is decided under the lock of this process's claims, from them and the kept answers'
// files.
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
            None => claims.index.find(&name, decode)?,
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
        // The answers still on their way to their files first, so that they are purged alike.
        self.write_kept_answers().await?;
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let running = &store.inner.running_claims;
            let mut appender = running.appender()?;
            let (purged, emptied) = running.lock()?.index.purge(before, u64::from(max));
            appender.remove(&emptied)?;
            Ok(purged)
        })
        .await
        .map_err(|e| StoreError::backend(format!("purging kept answers: {e}")))?
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

    /// Answers written to their files are indexed by name, so that a claim of a new key reads
    /// nothing; a replay is still found, and a purged answer is forgotten.
    #[test]
    fn written_answers_are_indexed_and_purged_ones_forgotten() {
        let owner = IdempotencyOwner::admin();
        let k = IdempotencyKey::parse(b"indexed").unwrap();
        let print = Fingerprint([3; 32]);
        let now = Timestamp::now();
        let indexed = |store: &SledStore| store.inner.running_claims.usage().unwrap().0;
        runtime().block_on(async {
            let store = SledStore::temporary().expect("open");
            store
                .claim_idempotency_key(&owner, &k, print, now)
                .await
                .unwrap();
            store
                .keep_idempotent_answer(&owner, &k, print, &answer("{}"))
                .await
                .unwrap();
            store.write_kept_answers().await.unwrap();
            assert_eq!(indexed(&store), 1);
            assert!(store.inner.running_claims.lock().unwrap().held.is_empty());
            assert!(store.answers_on_disk().unwrap() > 0);
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, print, now)
                    .await
                    .unwrap(),
                Claim::Replay(answer("{}"))
            );
            let later = Timestamp::from_millis(now.as_millis() + 49 * 3_600_000);
            assert_eq!(store.purge_idempotency_keys(later, 100).await.unwrap(), 1);
            assert_eq!(indexed(&store), 0);
            assert_eq!(
                store.answers_on_disk().unwrap(),
                0,
                "the day's file is gone"
            );
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, print, now)
                    .await
                    .unwrap(),
                Claim::Run
            );
        });
    }

    /// Writes an answer into a closed store the way an older version kept it (`put`, given the
    /// store's directory, the answer's name and its record), opens the store and checks that
    /// the answer is replayed; then `after` looks at the open store.
    fn an_older_stores_answer_is_replayed(
        put: impl FnOnce(&std::path::Path, &[u8], &IdempotencyRecord),
        after: impl FnOnce(&SledStore),
    ) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(SledStore::open(dir.path()).expect("open"));
        let owner = IdempotencyOwner::admin();
        let k = IdempotencyKey::parse(b"before-the-move").unwrap();
        let record = IdempotencyRecord {
            fingerprint: Fingerprint([2; 32]),
            created_at: Timestamp::from_millis(Timestamp::now().as_millis() - 60_000),
            answer: Some(answer("{\"id\":1}")),
        };
        put(dir.path(), &name(&owner, &k), &record);
        runtime().block_on(async {
            let store = SledStore::open(dir.path()).expect("reopen");
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &k, record.fingerprint, Timestamp::now())
                    .await
                    .unwrap(),
                Claim::Replay(answer("{\"id\":1}"))
            );
            after(&store);
        });
        dir
    }

    /// A store written when kept answers had a sled database of their own (`answers`, keys
    /// `day | name`) has them moved to the files when it opens, and the database removed.
    #[test]
    fn answers_kept_in_their_own_database_are_moved() {
        let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
            let db = sled::open(dir.join(ANSWERS_DIR)).expect("answers db");
            let day = super::super::answer_log::day_of(record.created_at);
            db.insert(key(&[&day.to_be_bytes(), name]), encode(record))
                .unwrap();
            db.flush().unwrap();
        };
        let dir = an_older_stores_answer_is_replayed(put, |_| {});
        assert!(!dir.path().join(ANSWERS_DIR).exists());
    }

    /// A store written when kept answers lived among the records (`Y|name` and its entry by
    /// time) has them moved to the files when it opens, and replays them.
    #[test]
    fn answers_kept_among_the_records_are_moved() {
        let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
            let db = crate::store::sled::open_db(
                &sled::Config::new().path(dir),
                crate::store::sled::REOPEN_LOCK_WAIT,
            )
            .expect("raw open");
            let tree = db.open_tree("data").unwrap();
            tree.insert(key(&[&[tag::IDEMPOTENCY], name]), encode(record))
                .unwrap();
            let by_time = key(&[
                &[tag::INDEX, tag::IDEMPOTENCY],
                &super::super::keys::time(record.created_at),
                name,
            ]);
            tree.insert(by_time, Vec::new()).unwrap();
            db.flush().unwrap();
        };
        an_older_stores_answer_is_replayed(put, |store| {
            let tree = &store.inner.tree;
            assert_eq!(tree.scan_prefix([tag::IDEMPOTENCY]).count(), 0);
            assert_eq!(tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).count(), 0);
        });
    }
}
