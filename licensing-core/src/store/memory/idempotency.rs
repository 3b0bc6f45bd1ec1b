//! Idempotency keys in memory.

use super::*;
use crate::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord, KeptAnswer,
};

fn slot(owner: &IdempotencyOwner, key: &IdempotencyKey) -> (String, String) {
    (owner.as_str().to_owned(), key.as_str().to_owned())
}

impl IdempotencyStore for MemoryStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        self.with(|s| {
            let slot = slot(owner, key);
            let claim = Claim::decide(s.idempotency.get(&slot), fingerprint, now);
            if claim == Claim::Run {
                s.idempotency.insert(
                    slot,
                    IdempotencyRecord {
                        fingerprint,
                        created_at: now,
                        answer: None,
                        applied: false,
                    },
                );
            }
            Ok(claim)
        })
    }

    async fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> StoreResult<()> {
        self.with(|s| {
            if let Some(record) = s.idempotency.get_mut(&slot(owner, key))
                && record.fingerprint == fingerprint
                && record.answer.is_none()
            {
                record.answer = Some(answer.clone());
            }
            Ok(())
        })
    }

    async fn count_kept_secrets(&self) -> StoreResult<u64> {
        self.with(|s| {
            Ok(s.idempotency
                .values()
                .filter_map(|r| r.answer.as_ref())
                .filter(|a| crate::idempotency::holds_secret(&a.body))
                .count() as u64)
        })
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        self.with(|s| {
            let slot = slot(owner, key);
            if s.idempotency
                .get(&slot)
                .is_some_and(|r| r.fingerprint == fingerprint && r.answer.is_none() && !r.applied)
            {
                s.idempotency.remove(&slot);
            }
            Ok(())
        })
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<_> = s
                .idempotency
                .iter()
                .filter(|(_, r)| r.created_at < before)
                .map(|(slot, r)| (r.created_at, slot.clone()))
                .collect();
            old.sort();
            old.truncate(max as usize);
            for (_, slot) in &old {
                s.idempotency.remove(slot);
            }
            Ok(old.len() as u64)
        })
    }
}
