//! Idempotency keys (protocol.md section 6).
//!
//! A running claim lives in this process's memory ([`Running`]): a sled store belongs to one
//! process, and a claim whose process stopped is free again when the store opens. Kept answers
//! live among the records (`J | day | name`, the day of the claim first so that the purge drops
//! whole days), where a write's own atomic step can reach them:
//! - a write made under a claim (its journal carries [`KeyedWrite`]) marks the claim applied in
//!   its own batch, and does not wait for a flush;
//! - keeping the answer is one batch applied after it; the request waits for the flush that
//!   covers it, which covers the write too (batches are applied, and recovered after a crash,
//!   in order). So one flush makes the write and its answer durable before the reply, and a
//!   crash before it leaves neither, or the write marked applied without an answer
//!   ([`Claim::AnswerLost`]: never run twice).
//!
//! An answer's name is SHA-256 of `owner|0|key`. Earlier stores kept answers in files of their
//! own (`kept-answers/`), in a sled database of their own (`answers`), or among the records
//! under another tag (`Y|name`); [`take_over`] moves them here when the store opens.

use std::collections::HashMap;

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer, KeyedWrite,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};

use super::keys::{key, tag};
use super::{SledStore, Tx, backend};

/// SHA-256 of `owner|0|key` (an owner holds no NUL, a key only visible ASCII).
fn name(owner: &IdempotencyOwner, k: &IdempotencyKey) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(key(&[
        owner.as_str().as_bytes(),
        &[0],
        k.as_str().as_bytes(),
    ]))
    .into()
}

/// The day (since 1970) of `at`.
fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis().div_euclid(86_400_000).max(0)).unwrap_or(u32::MAX)
}

/// Where the answer of a claim made at `claimed_at` named `name` is kept.
fn kept_key(claimed_at: Timestamp, name: &[u8]) -> Vec<u8> {
    key(&[&[tag::KEPT], &day_of(claimed_at).to_be_bytes(), name])
}

/// The directory of the kept answers' sled database, where stores before the answers' files
/// kept them.
pub(crate) const ANSWERS_DIR: &str = "answers";

/// `fingerprint (32) | created (8, big-endian) | state`: state `0` running (stores that wrote
/// running claims down), `2` applied without an answer, or `1 | status (2) | content type |
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
        None => out.push(if record.applied { 2 } else { 0 }),
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

/// The claim time of an encoded record.
fn created_of(v: &[u8]) -> Option<Timestamp> {
    let created: [u8; 8] = v.get(32..40)?.try_into().ok()?;
    Some(Timestamp::from_millis(i64::from_be_bytes(created)))
}

fn decode(v: &[u8]) -> StoreResult<IdempotencyRecord> {
    let bad = || StoreError::backend("bad idempotency record");
    let fingerprint: [u8; 32] = v
        .get(..32)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(bad)?;
    let created_at = created_of(v).ok_or_else(bad)?;
    let (answer, applied) = match v.get(40) {
        Some(0) => (None, false),
        Some(2) => (None, true),
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
            let answer = KeptAnswer {
                status: u16::from_be_bytes(status),
                content_type,
                headers,
                body: v.get(at..).ok_or_else(bad)?.to_vec(),
            };
            (Some(answer), true)
        }
        _ => return Err(bad()),
    };
    Ok(IdempotencyRecord {
        fingerprint: Fingerprint(fingerprint),
        created_at,
        answer,
        applied,
    })
}

/// Running claims: fingerprint and claim time, by name.
type Claims = HashMap<[u8; 32], (Fingerprint, Timestamp)>;

/// The claims whose requests run in this process.
#[derive(Default)]
pub(super) struct Running {
    claims: std::sync::Mutex<Claims>,
}

impl Running {
    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Claims>> {
        self.claims
            .lock()
            .map_err(|_| StoreError::backend("idempotency claims lock poisoned"))
    }
}

impl Tx<'_> {
    /// Marks the claim a write runs under applied, in the write's own batch.
    pub(super) fn mark_applied(&mut self, keyed: &KeyedWrite) {
        let name = name(&keyed.owner, &keyed.key);
        self.put(kept_key(keyed.claimed_at, &name), encode(&keyed.applied()));
    }
}

/// Moves the kept answers of stores written by earlier versions among the records (`J|day|name`)
/// and removes where they were, made durable first; how many. A crash in between moves them
/// again at the next open (an answer written twice is read once).
pub(super) fn take_over(tree: &sled::Tree, dir: Option<&std::path::Path>) -> StoreResult<usize> {
    let mut moved: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Among the records under the tag of the first stores, with an entry by time.
    for entry in tree.scan_prefix([tag::IDEMPOTENCY]) {
        let (k, v) = entry.map_err(backend)?;
        moved.push((k[1..].to_vec(), v.to_vec()));
    }
    let answers_db = dir.map(|d| d.join(ANSWERS_DIR)).filter(|p| p.exists());
    if let Some(path) = &answers_db {
        let db = super::open_db(&sled::Config::new().path(path), super::REOPEN_LOCK_WAIT)?;
        for entry in db.iter() {
            let (k, v) = entry.map_err(backend)?;
            moved.push((k.get(4..).unwrap_or_default().to_vec(), v.to_vec()));
        }
    }
    let files = match dir {
        Some(dir) => super::answer_log::read_all(dir)?,
        None => Vec::new(),
    };
    moved.extend(files);
    let mut batch = sled::Batch::default();
    let mut count = 0;
    for (name, record) in &moved {
        let Some(created) = created_of(record) else {
            continue;
        };
        batch.insert(kept_key(created, name), record.as_slice());
        count += 1;
    }
    for k in tree.scan_prefix([tag::IDEMPOTENCY]).keys() {
        batch.remove(k.map_err(backend)?);
    }
    for index in tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).keys() {
        batch.remove(index.map_err(backend)?);
    }
    tree.apply_batch(batch).map_err(backend)?;
    tree.flush().map_err(backend)?;
    if let Some(path) = answers_db {
        std::fs::remove_dir_all(&path).map_err(backend)?;
    }
    if let Some(dir) = dir {
        super::answer_log::remove(dir)?;
    }
    Ok(count)
}

impl SledStore {
    /// The kept record of `name`, claimed today or the day before (a key is kept 24 hours).
    fn kept(&self, name: &[u8], now: Timestamp) -> StoreResult<Option<IdempotencyRecord>> {
        let today = day_of(now);
        for day in [today, today.saturating_sub(1)] {
            let k = key(&[&[tag::KEPT], &day.to_be_bytes(), name]);
            if let Some(v) = self.inner.tree.get(k).map_err(backend)? {
                return decode(&v).map(Some);
            }
        }
        Ok(None)
    }
}

// A claim is decided under the lock of this process's claims, from them and the records.
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
        let existing = match claims.get(&name) {
            Some(&(fingerprint, created_at)) => Some(IdempotencyRecord {
                fingerprint,
                created_at,
                answer: None,
                applied: false,
            }),
            None => self.kept(&name, now)?,
        };
        let claim = Claim::decide(existing.as_ref(), fingerprint, now);
        if claim == Claim::Run {
            claims.insert(name, (fingerprint, now));
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
        let Some(created_at) = ({
            let claims = self.inner.running_claims.lock()?;
            claims
                .get(&name)
                .filter(|(claimed, _)| *claimed == fingerprint)
                .map(|&(_, created_at)| created_at)
        }) else {
            return Ok(());
        };
        let record = IdempotencyRecord {
            fingerprint,
            created_at,
            answer: Some(answer.clone()),
            applied: true,
        };
        let mut tx = self.tx();
        tx.put(kept_key(created_at, &name), encode(&record));
        // An expired answer of the name, kept the day before, goes (a name has one record).
        let day_before = key(&[
            &[tag::KEPT],
            &day_of(created_at).saturating_sub(1).to_be_bytes(),
            &name,
        ]);
        if self.inner.tree.contains_key(&day_before).map_err(backend)? {
            tx.del(day_before);
        }
        // Applied after every write of the claim: the flush that covers it covers them.
        let batch = self.commit(tx).await?;
        let durable = self.flushed_up_to(batch).await;
        // From here a claim finds the answer among the records.
        let mut claims = self.inner.running_claims.lock()?;
        if claims.get(&name).is_some_and(|(f, _)| *f == fingerprint) {
            claims.remove(&name);
        }
        durable
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        let name = name(owner, k);
        let mut claims = self.inner.running_claims.lock()?;
        if claims.get(&name).is_some_and(|(f, _)| *f == fingerprint) {
            claims.remove(&name);
        }
        Ok(())
    }

    async fn count_kept_secrets(&self) -> StoreResult<u64> {
        let mut found = 0;
        for entry in self.inner.tree.scan_prefix([tag::KEPT]) {
            let (_, v) = entry.map_err(backend)?;
            if decode(&v)?
                .answer
                .is_some_and(|a| licensing_core::idempotency::holds_secret(&a.body))
            {
                found += 1;
            }
        }
        Ok(found)
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        let last_day = day_of(before);
        let mut purged = Vec::new();
        for entry in self.inner.tree.scan_prefix([tag::KEPT]) {
            let (k, v) = entry.map_err(backend)?;
            let day = k
                .get(1..5)
                .and_then(|d| d.try_into().ok())
                .map_or(0, u32::from_be_bytes);
            if day > last_day || purged.len() >= max as usize {
                break;
            }
            if created_of(&v).is_none_or(|created| created < before) {
                purged.push(k.to_vec());
            }
        }
        let count = purged.len() as u64;
        if count > 0 {
            self.durable(|tx| {
                for k in purged {
                    tx.del(k);
                }
                Ok(())
            })
            .await?;
        }
        Ok(count)
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
            applied: false,
        };
        assert_eq!(decode(&encode(&running)).unwrap(), running);
        let applied = IdempotencyRecord {
            applied: true,
            ..running.clone()
        };
        assert_eq!(decode(&encode(&applied)).unwrap(), applied);
        let done = IdempotencyRecord {
            answer: Some(KeptAnswer {
                status: 201,
                content_type: "application/json".into(),
                headers: vec![("location".into(), "/dashboard/é".into())],
                body: vec![0, 1, 2, 255],
            }),
            applied: true,
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

    /// A kept answer is durable when keeping it returns: the store dropped without closing
    /// (as a crash leaves it) replays it, and a key of yesterday is still found; a purge
    /// forgets what was claimed before its time.
    #[test]
    fn kept_answers_are_durable_at_once_and_purged_by_day() {
        let dir = tempfile::tempdir().expect("tempdir");
        let owner = IdempotencyOwner::admin();
        let (today, yesterday) = (
            IdempotencyKey::parse(b"today").unwrap(),
            IdempotencyKey::parse(b"yesterday").unwrap(),
        );
        let print = Fingerprint([1; 32]);
        let now = Timestamp::now();
        let earlier = Timestamp::from_millis(now.as_millis() - 20 * 3_600_000);
        let copy = tempfile::tempdir().expect("tempdir");
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
            // What is on disk now, copied while the store is open (no closing flush).
            copy_dir(dir.path(), copy.path());
        });
        runtime().block_on(async {
            let store = SledStore::open(copy.path()).expect("reopen the copy");
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
            let later = Timestamp::from_millis(now.as_millis() - 3_600_000);
            assert_eq!(store.purge_idempotency_keys(later, 100).await.unwrap(), 1);
            assert_eq!(
                store
                    .claim_idempotency_key(&owner, &yesterday, print, now)
                    .await
                    .unwrap(),
                Claim::Run
            );
        });
    }

    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                copy_dir(&entry.path(), &target);
            } else if entry.file_name() != "lock" {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
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
            applied: true,
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
    /// `day | name`) has them moved among the records when it opens, and the database removed.
    #[test]
    fn answers_kept_in_their_own_database_are_moved() {
        let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
            let db = sled::open(dir.join(ANSWERS_DIR)).expect("answers db");
            let day = day_of(record.created_at);
            db.insert(key(&[&day.to_be_bytes(), name]), encode(record))
                .unwrap();
            db.flush().unwrap();
        };
        let dir = an_older_stores_answer_is_replayed(put, |_| {});
        assert!(!dir.path().join(ANSWERS_DIR).exists());
    }

    /// A store written when kept answers were files of their own has them moved among the
    /// records when it opens, and the files removed.
    #[test]
    fn answers_kept_in_files_are_moved() {
        let put = |dir: &std::path::Path, name: &[u8], record: &IdempotencyRecord| {
            super::super::answer_log::write_for_tests(dir, name, &encode(record));
        };
        let dir = an_older_stores_answer_is_replayed(put, |_| {});
        assert!(!dir.path().join(super::super::answer_log::LOG_DIR).exists());
    }

    /// A store written when kept answers lived among the records under their first tag
    /// (`Y|name` and its entry by time) has them moved, and replays them.
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
