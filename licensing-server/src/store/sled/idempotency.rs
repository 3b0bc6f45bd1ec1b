//! Idempotency keys (protocol.md section 6).
//!
//! Keys: `Y|name` (the name: SHA-256 of `owner|0|key`) holds the record (fingerprint, claim time, and the kept answer once
//! there is one); `i Y|time|name` orders the records by claim time for the purge. Running
//! claims are held in memory ([`Running`]); only kept answers are written, behind the answer and
//! without a batch or a flush of their own: the next developer write carries them in its batch,
//! or the flusher writes them before its next flush (within half a second).

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};

use super::keys::{self, key, tag};
use std::collections::HashMap;

use super::{SledStore, Tx, backend};

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

fn record_key(name: &[u8]) -> Vec<u8> {
    key(&[&[tag::IDEMPOTENCY], name])
}

fn by_time_prefix() -> Vec<u8> {
    vec![tag::INDEX, tag::IDEMPOTENCY]
}

fn by_time_key(at: Timestamp, name: &[u8]) -> Vec<u8> {
    key(&[&by_time_prefix(), &keys::time(at), name])
}

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
/// yet written to the tree.
#[derive(Clone, Debug)]
enum Held {
    Running(Fingerprint, Timestamp),
    Kept(IdempotencyRecord),
}

/// The running claims and freshly kept answers of this process, by name. A sled store
/// belongs to one process, so a claim needs no more than this process's lock; a running claim
/// written to disk would say nothing after a crash that the lost answer does not (the write may
/// or may not have happened). A kept answer is answered from here at once; the next developer
/// write stages the waiting ones in its own batch, or else the flusher writes them in one batch
/// before its next flush, within half a second, as it does the devices' refreshes (one write of
/// its own per answer made the developer API's writes a fifth slower).
#[derive(Default)]
pub(super) struct Running(std::sync::Mutex<HashMap<Vec<u8>, Held>>);

impl Running {
    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, HashMap<Vec<u8>, Held>>> {
        self.0
            .lock()
            .map_err(|_| StoreError::backend("idempotency claims lock poisoned"))
    }

    /// Whether answers wait to be written.
    pub(super) fn has_kept(&self) -> bool {
        self.lock()
            .map(|held| held.values().any(|h| matches!(h, Held::Kept(_))))
            .unwrap_or(false)
    }

    /// The answers waiting to be written (they stay answered from memory until they are).
    fn kept(&self) -> StoreResult<Vec<(Vec<u8>, IdempotencyRecord)>> {
        Ok(self
            .lock()?
            .iter()
            .filter_map(|(name, held)| match held {
                Held::Kept(record) => Some((name.clone(), record.clone())),
                Held::Running(..) => None,
            })
            .collect())
    }

    /// Forgets the answers `written` to the tree, unless they changed meanwhile.
    pub(super) fn written(&self, written: &[(Vec<u8>, IdempotencyRecord)]) -> StoreResult<()> {
        let mut held = self.lock()?;
        for (name, record) in written {
            if matches!(held.get(name), Some(Held::Kept(r)) if r == record) {
                held.remove(name);
            }
        }
        Ok(())
    }
}

/// Stages the answers waiting in `running` in `tx`, each with its index entry: what to pass to
/// [`Running::written`] once `tx` is applied. The entry of a record it replaces (one expired
/// and claimed again) is left for the purge, which drops an entry whose record is newer.
pub(super) fn stage_kept(
    tx: &mut Tx<'_>,
    running: &Running,
) -> StoreResult<Vec<(Vec<u8>, IdempotencyRecord)>> {
    let kept = running.kept()?;
    for (name, record) in &kept {
        tx.put(by_time_key(record.created_at, name), Vec::new());
        tx.put(record_key(name), encode(record));
    }
    Ok(kept)
}

/// Writes the answers waiting in `running` to `tree` in one batch, counted in `applied` so that
/// the flush that follows covers it; then answers them from the tree. The flusher calls it
/// before each flush, for the answers no developer write has carried meanwhile.
pub(super) fn write_kept(
    tree: &sled::Tree,
    running: &Running,
    gate: &tokio::sync::RwLock<()>,
    applied: &std::sync::atomic::AtomicU64,
) -> StoreResult<()> {
    let mut tx = Tx {
        tree,
        pending: Default::default(),
    };
    let kept = stage_kept(&mut tx, running)?;
    if kept.is_empty() {
        return Ok(());
    }
    {
        let _gate = gate.blocking_read();
        tx.commit()?;
        applied.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
    running.written(&kept)
}

impl SledStore {
    /// The kept answer of `name`, as stored.
    fn kept_record(&self, name: &[u8]) -> StoreResult<Option<IdempotencyRecord>> {
        self.inner
            .tree
            .get(record_key(name))
            .map_err(backend)?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Writes every kept answer still only in memory (before a purge and the store's last
    /// flush).
    pub(super) async fn write_kept_answers(&self) -> StoreResult<()> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            write_kept(
                &store.inner.tree,
                &store.inner.running_claims,
                &store.inner.locks.gate,
                &store.inner.applied,
            )
        })
        .await
        .map_err(|e| StoreError::backend(format!("writing kept answers: {e}")))?
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
        let mut held = self.inner.running_claims.lock()?;
        let existing = match held.get(&name) {
            Some(Held::Running(fingerprint, created_at)) => Some(IdempotencyRecord {
                fingerprint: *fingerprint,
                created_at: *created_at,
                answer: None,
            }),
            Some(Held::Kept(record)) => Some(record.clone()),
            None => self.kept_record(&name)?,
        };
        let claim = Claim::decide(existing.as_ref(), fingerprint, now);
        if claim == Claim::Run {
            held.insert(name, Held::Running(fingerprint, now));
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
            let mut held = self.inner.running_claims.lock()?;
            let Some(&Held::Running(claimed, created_at)) = held.get(&name) else {
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
            held.insert(name, Held::Kept(record));
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
        let mut held = self.inner.running_claims.lock()?;
        if matches!(held.get(&name), Some(Held::Running(f, _)) if *f == fingerprint) {
            held.remove(&name);
        }
        Ok(())
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        // The answers still on their way to the tree first, so that they are purged alike.
        self.write_kept_answers().await?;
        let tree = &self.inner.tree;
        let prefix = by_time_prefix();
        let end = key(&[&prefix, &keys::time(before)]);
        let mut purged = 0;
        for index in tree.range(prefix.clone()..end).keys().take(max as usize) {
            let index = index.map_err(backend)?;
            let name = index.get(prefix.len() + 8..).unwrap_or_default().to_vec();
            let rk = record_key(&name);
            // Only a record claimed before `before` (one kept again since stays), under the
            // claims' lock, so that an answer being written is not deleted in between.
            let _held = self.inner.running_claims.lock()?;
            if let Some(bytes) = tree.get(&rk).map_err(backend)?
                && decode(&bytes)?.created_at < before
            {
                tree.remove(&rk).map_err(backend)?;
                purged += 1;
            }
            tree.remove(&index).map_err(backend)?;
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
}
