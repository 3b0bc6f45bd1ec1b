//! Idempotency keys (protocol.md section 6).
//!
//! What a claim needs is in this process's memory ([`Kept`]): the running claims (a sled store
//! belongs to one process, and a claim whose process stopped is free again when the store
//! opens), where each kept answer is in its file (`kept_files.rs`), and the claims whose write
//! landed without an answer. A claim of a new key reads nothing from disk. On disk:
//! - a write made under a claim (its journal carries [`KeyedWrite`]) marks the claim applied in
//!   its own batch (`J | day | name`, the day of the claim first so that the purge drops whole
//!   days), and does not wait for a flush;
//! - its answer is queued after that batch is applied, and counted like a batch: the flush
//!   the request waits for makes the records (the write and its mark) durable, then appends
//!   the answers queued before it to their day's file in one write and syncs it, before the
//!   reply (one sync of the records and one of the answers per round of the flusher, however
//!   many requests it covers);
//! - at open an answer is believed only where its mark is among the records: a crash that kept
//!   the answer but not the write leaves the key free, one that kept the write but not the
//!   answer leaves it applied without an answer ([`Claim::AnswerLost`]: never run twice).
//!
//! An answer that no write marked (a refusal, which writes nothing) has its mark written with
//! it. An answer's name is SHA-256 of `owner|0|key`. Earlier stores kept answers among the
//! records (`J|day|name`, holding the answer; before that `Y|name`), in a sled database of
//! their own (`answers`), or in files without marks (`kept-answers/`); [`open`] moves them to
//! the files when the store opens.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer, KeyedWrite,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};

use super::SledResult;
use super::kept_files::{Appender, Frame, Index, NAME, day_of};
use super::keys::{key, tag};
use super::{SledStore, Tx, backend};

/// An answer's name: SHA-256 of `owner|0|key`.
type Name = [u8; NAME];

/// SHA-256 of `owner|0|key` (an owner holds no NUL, a key only visible ASCII).
fn name(owner: &IdempotencyOwner, k: &IdempotencyKey) -> Name {
    use sha2::Digest as _;
    sha2::Sha256::digest(key(&[
        owner.as_str().as_bytes(),
        &[0],
        k.as_str().as_bytes(),
    ]))
    .into()
}

/// Where the mark of a claim made at `claimed_at` named `name` is.
fn mark_key(claimed_at: Timestamp, name: &[u8]) -> Vec<u8> {
    key(&[&[tag::KEPT], &day_of(claimed_at).to_be_bytes(), name])
}
/// The directory of the kept answers' sled database, where stores before the answers' files
/// kept them.
pub(crate) const ANSWERS_DIR: &str = "answers";

/// `fingerprint (32) | created (8, big-endian) | state`: state `0` running (stores that wrote
/// running claims down), `2` applied without an answer, or `1 | status (2) | content type |
/// header count (1) | (name, value) each | body`, each text as `length (2) | bytes`.
fn encode(record: &IdempotencyRecord) -> Vec<u8> {
    encode_parts(
        record.fingerprint,
        record.created_at,
        record.answer.as_ref(),
        record.applied,
    )
}

/// [`encode`], of a record's parts.
fn encode_parts(
    fingerprint: Fingerprint,
    created_at: Timestamp,
    answer: Option<&KeptAnswer>,
    applied: bool,
) -> Vec<u8> {
    let extra = answer.map_or(0, |a| {
        8 + a.content_type.len()
            + a.headers
                .iter()
                .map(|(n, v)| 4 + n.len() + v.len())
                .sum::<usize>()
            + a.body.len()
    });
    let mut out = Vec::with_capacity(41 + extra);
    out.extend_from_slice(&fingerprint.0);
    out.extend_from_slice(&created_at.as_millis().to_be_bytes());
    match answer {
        None => out.push(if applied { 2 } else { 0 }),
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

/// A claim this process holds, or one whose answer was lost.
#[derive(Clone, Copy, Debug)]
enum Held {
    /// Its request runs; `applied` once a write made under it is applied. `superseded`: the
    /// claim time of the name's record it replaces (expired), when that record's mark is under
    /// another day, for the answer's batch to delete (a name has one mark).
    Running {
        fingerprint: Fingerprint,
        created_at: Timestamp,
        applied: bool,
        superseded: Option<Timestamp>,
    },
    /// Its write landed and its answer was not kept (a crash, or a failure to keep it).
    Lost {
        fingerprint: Fingerprint,
        created_at: Timestamp,
    },
}

/// What [`Kept`]'s lock guards.
struct Claims {
    held: HashMap<Name, Held>,
    /// Where the kept answers are: a key never seen, which is what almost every claim is, is
    /// told from memory without reading anything.
    index: Index,
}

/// An answer waiting for the flusher to append it.
struct Queued {
    name: Name,
    created: Timestamp,
    record: Vec<u8>,
}

/// The claims of this process and the kept answers' files.
pub(super) struct Kept {
    claims: Mutex<Claims>,
    /// Taken before `claims` when both are.
    appender: Mutex<Appender>,
    /// Answers kept since the flusher's last round.
    queue: Mutex<Vec<Queued>>,
}

fn poisoned<T>(_: T) -> StoreError {
    StoreError::backend("idempotency claims lock poisoned")
}

impl Kept {
    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Claims>> {
        self.claims.lock().map_err(poisoned)
    }

    fn appender(&self) -> StoreResult<std::sync::MutexGuard<'_, Appender>> {
        self.appender.lock().map_err(poisoned)
    }

    /// Appends the answers kept since the last round to their files, in one write, makes them
    /// durable, and notes where they are: from then claims find them. The flusher calls it after
    /// each flush of the records. What fails is tried again by the next round.
    pub(super) fn write(&self) -> StoreResult<()> {
        let queued = std::mem::take(&mut *self.queue.lock().map_err(poisoned)?);
        let (appended, files) = {
            let mut appender = self.appender()?;
            let frames: Vec<Frame<'_>> = queued
                .iter()
                .map(|q| Frame {
                    name: &q.name,
                    created: q.created,
                    record: &q.record,
                })
                .collect();
            let appended = match appender.append(&frames) {
                Ok(appended) => appended,
                Err(e) => {
                    drop(frames);
                    let mut queue = self.queue.lock().map_err(poisoned)?;
                    let later = std::mem::replace(&mut *queue, queued);
                    queue.extend(later);
                    return Err(e.into());
                }
            };
            (appended, appender.take_unsynced())
        };
        if let Err(e) = super::kept_files::sync_files(&files) {
            self.appender()?.unsynced_again(&files);
            return Err(e.into());
        }
        if !appended.is_empty() {
            let mut claims = self.lock()?;
            for answer in &appended {
                claims.index.note(answer);
            }
        }
        Ok(())
    }

    /// Notes that a write made under the claim named `name` is applied.
    pub(super) fn applied(&self, name: &Name, fingerprint: Fingerprint) -> StoreResult<()> {
        if let Some(Held::Running {
            fingerprint: f,
            applied,
            ..
        }) = self.lock()?.held.get_mut(name)
            && *f == fingerprint
        {
            *applied = true;
        }
        Ok(())
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

impl Tx<'_> {
    /// Marks the claim a write runs under applied, in the write's own batch; its name.
    pub(super) fn mark_applied(&mut self, keyed: &KeyedWrite) -> Name {
        let name = name(&keyed.owner, &keyed.key);
        self.put(mark_key(keyed.claimed_at, &name), encode(&keyed.applied()));
        name
    }
}

/// Opens the kept answers of the store in `dir` (temporary files when it has none) beside its
/// records `tree`: moves what earlier stores kept elsewhere to the files (durably, then removes
/// it), and reads the marks and the files.
pub(super) fn open(tree: &sled::Tree, dir: Option<&std::path::Path>) -> SledResult<Kept> {
    // Every mark, and the answers kept among the records by earlier stores.
    let mut marks: HashMap<Name, (Fingerprint, Timestamp)> = HashMap::new();
    let mut moved: Vec<(Name, IdempotencyRecord)> = Vec::new();
    for entry in tree.scan_prefix([tag::KEPT]) {
        let (k, v) = entry?;
        let Some(name) = k.get(5..).and_then(|n| Name::try_from(n).ok()) else {
            continue;
        };
        let record = decode(&v)?;
        marks.insert(name, (record.fingerprint, record.created_at));
        if record.answer.is_some() {
            moved.push((name, record));
        }
    }
    let older = older_answers(tree, dir)?;
    let from_elsewhere = !older.is_empty();
    for (name, v) in older {
        let (Ok(name), Ok(record)) = (Name::try_from(name.as_slice()), decode(&v)) else {
            continue;
        };
        if record.answer.is_some() {
            marks.insert(name, (record.fingerprint, record.created_at));
            moved.push((name, record));
        }
    }
    let mut answered = HashSet::new();
    let (mut appender, mut index) = Appender::open(dir, |name| {
        let believed = marks.contains_key(name);
        if believed {
            answered.extend(Name::try_from(name).ok());
        }
        believed
    })?;
    if !moved.is_empty() {
        let mut batch = sled::Batch::default();
        for (name, record) in &moved {
            let encoded = encode(record);
            let frame = Frame {
                name,
                created: record.created_at,
                record: &encoded,
            };
            for appended in appender.append(&[frame])? {
                index.note(&appended);
            }
            answered.insert(*name);
            let mark = IdempotencyRecord {
                answer: None,
                ..record.clone()
            };
            batch.insert(mark_key(record.created_at, name), encode(&mark));
        }
        appender.sync()?;
        // The old places go once the answers and their marks are durable.
        for k in tree.scan_prefix([tag::IDEMPOTENCY]).keys() {
            batch.remove(k?);
        }
        for index in tree.scan_prefix([tag::INDEX, tag::IDEMPOTENCY]).keys() {
            batch.remove(index?);
        }
        tree.apply_batch(batch)?;
        tree.flush()?;
        tracing::info!(
            moved = moved.len(),
            "kept idempotent answers moved to their files"
        );
    }
    if from_elsewhere && let Some(dir) = dir {
        let answers_db = dir.join(ANSWERS_DIR);
        if answers_db.exists() {
            std::fs::remove_dir_all(&answers_db)?;
        }
        super::answer_log::remove(dir)?;
    }
    let held = marks
        .into_iter()
        .filter(|(name, _)| !answered.contains(name))
        .map(|(name, (fingerprint, created_at))| {
            let lost = Held::Lost {
                fingerprint,
                created_at,
            };
            (name, lost)
        })
        .collect();
    Ok(Kept {
        claims: Mutex::new(Claims { held, index }),
        appender: Mutex::new(appender),
        queue: Mutex::new(Vec::new()),
    })
}

/// The answers earlier stores kept apart from the marks: `(name, encoded record)`.
fn older_answers(
    tree: &sled::Tree,
    dir: Option<&std::path::Path>,
) -> SledResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Among the records under the tag of the first stores, with an entry by time.
    for entry in tree.scan_prefix([tag::IDEMPOTENCY]) {
        let (k, v) = entry?;
        found.push((k[1..].to_vec(), v.to_vec()));
    }
    let Some(dir) = dir else {
        return Ok(found);
    };
    let answers_db = dir.join(ANSWERS_DIR);
    if answers_db.exists() {
        let db = super::open_db(
            &sled::Config::new().path(&answers_db),
            super::REOPEN_LOCK_WAIT,
        )?;
        for entry in db.iter() {
            let (k, v) = entry?;
            found.push((k.get(4..).unwrap_or_default().to_vec(), v.to_vec()));
        }
    }
    found.extend(super::answer_log::read_all(dir)?);
    Ok(found)
}

impl SledStore {
    /// Bytes the kept answers' files take.
    pub(super) fn answers_on_disk(&self) -> StoreResult<u64> {
        self.inner.kept.on_disk()
    }
}

// A claim is decided under the lock of this process's claims, from them and the index of the
// kept answers.
impl IdempotencyStore for SledStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        let name = name(owner, k);
        let mut claims = self.inner.kept.lock()?;
        let (existing, running_applied) = match claims.held.get(&name) {
            // A claim held: decided as a record without an answer, applied when it was lost.
            Some(held) => {
                let (fingerprint, created_at, lost, running_applied) = match *held {
                    Held::Running {
                        fingerprint,
                        created_at,
                        applied,
                        ..
                    } => (fingerprint, created_at, false, applied),
                    Held::Lost {
                        fingerprint,
                        created_at,
                    } => (fingerprint, created_at, true, false),
                };
                let record = IdempotencyRecord {
                    fingerprint,
                    created_at,
                    answer: None,
                    applied: lost,
                };
                (Some(record), running_applied)
            }
            None => (claims.index.find(&name, decode)?, false),
        };
        let claim = match Claim::decide(existing.as_ref(), fingerprint, now) {
            // A request whose write landed is never run again, however long it takes to end.
            Claim::Run if running_applied => Claim::InUse,
            claim => claim,
        };
        if claim == Claim::Run {
            let running = Held::Running {
                fingerprint,
                created_at: now,
                applied: false,
                superseded: existing
                    .map(|r| r.created_at)
                    .filter(|at| day_of(*at) != day_of(now)),
            };
            claims.held.insert(name, running);
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
        let kept = &self.inner.kept;
        let Some((created_at, applied, superseded)) = (match kept.lock()?.held.get(&name) {
            Some(&Held::Running {
                fingerprint: f,
                created_at,
                applied,
                superseded,
            }) if f == fingerprint => Some((created_at, applied, superseded)),
            _ => None,
        }) else {
            return Ok(());
        };
        if !applied || superseded.is_some() {
            // No write marked it (a refusal writes nothing): its mark goes first. The mark of
            // an expired record of the name under another day goes with it.
            let mut tx = self.tx();
            if !applied {
                let mark = encode_parts(fingerprint, created_at, None, true);
                tx.put(mark_key(created_at, &name), mark);
            }
            if let Some(old) = superseded {
                tx.del(mark_key(old, &name));
            }
            self.commit(tx).await?;
            kept.applied(&name, fingerprint)?;
        }
        let queued = Queued {
            name,
            created: created_at,
            record: encode_parts(fingerprint, created_at, Some(answer), true),
        };
        kept.queue.lock().map_err(poisoned)?.push(queued);
        // Counted like a batch: the flush that covers it appends and syncs the answers after
        // the records (`flusher.rs`), and covers the write and its mark, applied before.
        let batch = self.inner.applied.fetch_add(1, Ordering::AcqRel) + 1;
        self.flushed_up_to(batch).await?;
        // The flusher noted the answer: from here a claim finds it in its file.
        let mut claims = kept.lock()?;
        if matches!(claims.held.get(&name), Some(Held::Running { fingerprint: f, .. }) if *f == fingerprint)
        {
            claims.held.remove(&name);
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
        let mut claims = self.inner.kept.lock()?;
        if let Some(&Held::Running {
            fingerprint: f,
            created_at,
            applied,
            ..
        }) = claims.held.get(&name)
            && f == fingerprint
        {
            if applied {
                // Its write landed: never run again.
                let lost = Held::Lost {
                    fingerprint,
                    created_at,
                };
                claims.held.insert(name, lost);
            } else {
                claims.held.remove(&name);
            }
        }
        Ok(())
    }

    async fn count_kept_secrets(&self) -> StoreResult<u64> {
        self.inner.kept.lock()?.index.count(|record| {
            Ok(decode(record)?
                .answer
                .is_some_and(|a| licensing_core::idempotency::holds_secret(&a.body)))
        })
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
        // The answers of the marks gone (a file whose answers are all gone is deleted), and the
        // lost ones.
        let kept = &self.inner.kept;
        let mut appender = kept.appender()?;
        let emptied = {
            let mut claims = kept.lock()?;
            claims.held.retain(|_, held| match held {
                Held::Lost { created_at, .. } => *created_at >= before,
                Held::Running { .. } => true,
            });
            claims.index.purge(before, u64::from(max)).1
        };
        appender.remove(&emptied)?;
        Ok(count)
    }
}

#[cfg(test)]
#[path = "idempotency_tests.rs"]
mod tests;
