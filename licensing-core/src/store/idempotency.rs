//! (ext) The keys of retried writes ([`crate::idempotency`]).

use std::future::Future;

use super::StoreResult;
use crate::idempotency::{Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer};
use crate::time::Timestamp;

/// Idempotency keys and their kept answers, shared by every instance of a store.
pub trait IdempotencyStore: Send + Sync {
    /// Applies [`Claim::decide`] to what `owner` holds under `key` and, when it says
    /// [`Claim::Run`], holds a running claim of `fingerprint` at `now` in the same atomic step:
    /// of concurrent claims of one key, exactly one runs, across instances. A running claim
    /// whose server stopped is free again at once (or, where a store cannot tell, after
    /// [`ABANDONED_AFTER_MS`](crate::idempotency::ABANDONED_AFTER_MS)); one whose write is
    /// stored (marked applied by the write's journal, [`Journal::keyed`](super::Journal)) is
    /// never run again ([`Claim::AnswerLost`] until its answer is kept).
    fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Claim>> + Send;
    /// Keeps `answer` under the running claim of `key` with `fingerprint`; nothing when there is
    /// no such claim (it was abandoned and taken again). When this returns, the answer and
    /// every write made under the claim (the writes whose journals carry it) are durable and
    /// visible to every instance's claims: an answer sent after it is replayed after any crash.
    fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Drops the running claim of `key` with `fingerprint` (its answer is not kept: a 5xx, a
    /// 429, or a request that never finished), so that a retry runs; a claim marked applied
    /// stays (its write happened: a retry is told so rather than run again).
    fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// How many kept answers show a secret ([`crate::idempotency::holds_secret`]): none are
    /// kept so now, but stores written by earlier versions kept them for a day.
    fn count_kept_secrets(&self) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Deletes at most `max` keys of any owner claimed before `before`: how many it deleted.
    fn purge_idempotency_keys(
        &self,
        before: Timestamp,
        max: u32,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}
