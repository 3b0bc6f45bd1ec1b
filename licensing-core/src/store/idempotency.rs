//! (ext) The keys of retried writes ([`crate::idempotency`]).

use std::future::Future;

use super::StoreResult;
use crate::idempotency::{Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer};
use crate::time::Timestamp;

/// Idempotency keys and their kept answers, shared by every instance of a store.
pub trait IdempotencyStore: Send + Sync {
    /// Applies [`Claim::decide`] to what `owner` holds under `key` and, when it says
    /// [`Claim::Run`], writes a running claim of `fingerprint` at `now` in the same atomic step:
    /// of concurrent claims of one key, exactly one runs. The claim need not be durable when
    /// this returns, as long as any write made durable after it makes it durable too (the write
    /// it runs for flushes it).
    fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Claim>> + Send;
    /// Keeps `answer` under the running claim of `key` with `fingerprint`; nothing when there is
    /// no such claim (it was abandoned and taken again). It is visible to this instance's claims
    /// when this returns, and to other instances' claims (which see the claim running until
    /// then) and durable within the store's flush interval (well under a second): lost in a
    /// crash, the claim stays running, so a retry waits until it counts as abandoned.
    fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Drops the running claim of `key` with `fingerprint` (its answer is not kept: a 5xx, a
    /// 429, or a request that never finished), so that a retry runs.
    fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes at most `max` keys of any owner claimed before `before`: how many it deleted.
    fn purge_idempotency_keys(
        &self,
        before: Timestamp,
        max: u32,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}
