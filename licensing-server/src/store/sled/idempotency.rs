//! Idempotency keys (protocol.md section 6).
//!
//! Keys: `Y|owner|0|key` holds the record (fingerprint, claim time, and the kept answer once
//! there is one); `i Y|time|owner|0|key` orders the records by claim time for the purge. A key is
//! claimed under the lock stripe its name hashes to, so concurrent claims of one key take turns
//! and exactly one runs. A kept answer waits for the flush, like any write.

use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};
use licensing_core::{LicenseId, Timestamp};
use sha2::{Digest, Sha256};

use super::keys::{self, key, tag};
use super::{SledStore, Tx, backend};

/// `owner|0|key`: an owner holds no NUL, a key only visible ASCII.
fn name(owner: &IdempotencyOwner, k: &IdempotencyKey) -> Vec<u8> {
    key(&[owner.as_str().as_bytes(), &[0], k.as_str().as_bytes()])
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

/// The stripe a key's claims take turns on.
fn stripe(name: &[u8]) -> LicenseId {
    let digest = Sha256::digest(name);
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    LicenseId::from_uuid(uuid::Uuid::from_bytes(id))
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

impl SledStore {
    fn tx(&self) -> Tx<'_> {
        Tx {
            tree: &self.inner.tree,
            pending: Default::default(),
        }
    }

    /// Replaces the running claim of `name` with `fingerprint` by `with` (a record, or nothing),
    /// under the key's stripe; the batch written, if any.
    async fn settle_claim(
        &self,
        name: &[u8],
        fingerprint: Fingerprint,
        with: Option<&KeptAnswer>,
    ) -> StoreResult<Option<u64>> {
        let _stripe = self.inner.locks.license(stripe(name)).await;
        let mut tx = self.tx();
        let k = record_key(name);
        let Some(mut record) = tx.get(&k)?.map(|v| decode(&v)).transpose()? else {
            return Ok(None);
        };
        if record.fingerprint != fingerprint || record.answer.is_some() {
            return Ok(None);
        }
        match with {
            Some(answer) => {
                record.answer = Some(answer.clone());
                tx.put(k, encode(&record));
            }
            None => {
                tx.del(k);
                tx.del(by_time_key(record.created_at, name));
            }
        }
        self.commit(tx).await.map(Some)
    }
}

impl IdempotencyStore for SledStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        let name = name(owner, k);
        let _stripe = self.inner.locks.license(stripe(&name)).await;
        let mut tx = self.tx();
        let rk = record_key(&name);
        let existing = tx.get(&rk)?.map(|v| decode(&v)).transpose()?;
        let claim = Claim::decide(existing.as_ref(), fingerprint, now);
        if claim == Claim::Run {
            if let Some(old) = &existing {
                tx.del(by_time_key(old.created_at, &name));
            }
            let record = IdempotencyRecord {
                fingerprint,
                created_at: now,
                answer: None,
            };
            tx.put(rk, encode(&record));
            tx.put(by_time_key(now, &name), Vec::new());
            // Not waited for: the write it runs for flushes the claim with it, and a claim
            // lost in a crash was never answered.
            self.commit(tx).await?;
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
        if let Some(batch) = self
            .settle_claim(&name(owner, k), fingerprint, Some(answer))
            .await?
        {
            self.flushed_up_to(batch).await?;
        }
        Ok(())
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        k: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        self.settle_claim(&name(owner, k), fingerprint, None)
            .await?;
        Ok(())
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        let prefix = by_time_prefix();
        let end = key(&[&prefix, &keys::time(before)]);
        let mut purged = 0;
        for index in self
            .inner
            .tree
            .range(prefix.clone()..end)
            .keys()
            .take(max as usize)
        {
            let index = index.map_err(backend)?;
            let name = index.get(prefix.len() + 8..).unwrap_or_default().to_vec();
            // Under the key's stripe, so that a claim taken again meanwhile stays.
            let _stripe = self.inner.locks.license(stripe(&name)).await;
            let mut tx = self.tx();
            let rk = record_key(&name);
            let current = tx.get(&rk)?.map(|v| decode(&v)).transpose()?;
            if current.is_some_and(|r| r.created_at < before) {
                tx.del(rk);
                purged += 1;
            }
            tx.del(index.to_vec());
            self.commit(tx).await?;
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
