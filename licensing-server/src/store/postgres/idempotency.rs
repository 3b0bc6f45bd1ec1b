//! Idempotency keys (protocol.md section 6), one row per owner and key, shared by every instance.
//!
//! - **A running request holds a session advisory lock** on its key, on a connection of its own
//!   (`PgStore::locks`), from its claim to its answer; a claim writes nothing. Another claim of
//!   the key, through any instance, finds the lock taken (409; 422 for another request when the
//!   claim runs on the same instance, which knows its fingerprint) unless the row already holds
//!   the answer (replayed). A server that stops loses its connections, and with them its locks:
//!   a retry after a crash never waits for a claim to count as abandoned.
//! - **The write marks the row applied in its own transaction** ([`mark_applied`], called with
//!   the write's journal), and that transaction commits without waiting for the disk: the
//!   answer, written next with a commit that waits, makes both durable (the log is flushed in
//!   order). So a write and its answer cost one flush, as a write alone did, and the answer is
//!   durable before the request is answered; a crash between the two leaves the write marked
//!   applied without an answer, which is never run again ([`Claim::AnswerLost`]).

use std::collections::HashMap;
use std::sync::Arc;

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    ABANDONED_AFTER_MS, Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord,
    KEPT_FOR_MS, KeptAnswer, KeyedWrite,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};
use sqlx::Row as _;
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres};

use super::PgResult;
use super::{PgStore, backend, ms};

/// The advisory lock of `owner`'s `key`: the first 8 bytes of SHA-256 of `owner|0|key`.
fn lock_of(owner: &IdempotencyOwner, key: &IdempotencyKey) -> i64 {
    use sha2::Digest as _;
    let digest = sha2::Sha256::new()
        .chain_update(owner.as_str().as_bytes())
        .chain_update([0])
        .chain_update(key.as_str().as_bytes())
        .finalize();
    i64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
}

/// A claim's lock: the connection that holds it, and when the key was claimed.
struct Held {
    /// `None` for a claim taken over after its holder ran past
    /// [`ABANDONED_AFTER_MS`] (its lock is still the holder's).
    conn: Option<PoolConnection<Postgres>>,
    lock: i64,
    fingerprint: Fingerprint,
    claimed_at: Timestamp,
    /// Where it notes its lock while letting it go.
    letting: Arc<Letting>,
}

/// The locks this instance is letting go of (each in a task of its own): a claim that finds
/// one of them taken waits for it to go rather than answer that its key is in use.
#[derive(Default)]
pub(super) struct Letting {
    locks: std::sync::Mutex<std::collections::HashSet<i64>>,
    gone: tokio::sync::Notify,
}

impl Letting {
    /// Waits (up to a second) until `lock` is let go, if it is being let go here; whether it
    /// was.
    async fn wait_for(&self, lock: i64) -> bool {
        let gone = self.gone.notified();
        tokio::pin!(gone);
        gone.as_mut().enable();
        let pending = self.locks.lock().is_ok_and(|locks| locks.contains(&lock));
        if pending {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), gone).await;
        }
        pending
    }
}

impl Drop for Held {
    /// Lets go of the lock however the claim ends (kept, released, replaced by a claim that
    /// took it over): never back to the pool still locked.
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            unlock(conn, self.lock, self.letting.clone());
        } else {
            // A store dropped after its runtime (the end of a test): the connection, and its
            // lock, go with the process.
            std::mem::forget(conn);
        }
    }
}

/// The claims this instance runs, by owner and key.
#[derive(Default)]
pub(super) struct Claims {
    held: std::sync::Mutex<HashMap<(String, String), Held>>,
    letting: Arc<Letting>,
}

impl Claims {
    fn slot(owner: &IdempotencyOwner, key: &IdempotencyKey) -> (String, String) {
        (owner.as_str().to_owned(), key.as_str().to_owned())
    }

    fn hold(&self, owner: &IdempotencyOwner, key: &IdempotencyKey, held: Held) {
        if let Ok(mut map) = self.held.lock() {
            map.insert(Self::slot(owner, key), held);
        }
    }

    /// The claim of `key` run for a request of `fingerprint`, taken out.
    fn take(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> Option<Held> {
        let mut map = self.held.lock().ok()?;
        let slot = Self::slot(owner, key);
        if map.get(&slot)?.fingerprint != fingerprint {
            return None;
        }
        map.remove(&slot)
    }

    /// The fingerprint and claim time of the claim of `key` running here, if any.
    fn running(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
    ) -> Option<(Fingerprint, Timestamp)> {
        let map = self.held.lock().ok()?;
        map.get(&Self::slot(owner, key))
            .map(|h| (h.fingerprint, h.claimed_at))
    }

    /// When the claim of `key` run for a request of `fingerprint` was made.
    fn claimed_at(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> Option<Timestamp> {
        let map = self.held.lock().ok()?;
        map.get(&Self::slot(owner, key))
            .filter(|h| h.fingerprint == fingerprint)
            .map(|h| h.claimed_at)
    }
}

/// Lets go of a lock, in a task of its own (the request needs not wait for it): the
/// connection goes back to the pool, or is closed (which lets go of the lock too) when the
/// unlock fails.
fn unlock(mut conn: PoolConnection<Postgres>, lock: i64, letting: Arc<Letting>) {
    if let Ok(mut locks) = letting.locks.lock() {
        locks.insert(lock);
    }
    tokio::spawn(async move {
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(lock)
            .execute(&mut *conn)
            .await;
        if unlocked.is_err() {
            conn.close_on_drop();
        }
        drop(conn);
        if let Ok(mut locks) = letting.locks.lock() {
            locks.remove(&lock);
        }
        letting.gone.notify_waiters();
    });
}

/// The statement marking a claim's row applied, given its parameters (owner, key,
/// fingerprint, claim time), which lets the transaction it runs in commit without waiting for
/// the disk: the answer's commit will. A write's first audit entry carries it in its own
/// statement (`WITH mark AS (…) INSERT INTO audit_log …`: a data-modifying `WITH` always runs),
/// so that marking costs no statement of its own.
macro_rules! mark_sql {
    ($owner:literal, $key:literal, $fingerprint:literal, $at:literal) => {
        concat!(
            "INSERT INTO idempotency_keys (owner, key, fingerprint, created_at, applied)
             SELECT ", $owner, ", ", $key, ", ", $fingerprint, ", ", $at, ", true
             FROM (SELECT set_config('synchronous_commit', 'off', true)) AS deferred
             ON CONFLICT (owner, key) DO UPDATE
             SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                 applied = true, status = NULL, content_type = NULL, headers = NULL, body = NULL"
        )
    };
}
pub(super) use mark_sql;

/// Binds the parameters of [`mark_sql`] (after the statement's others).
pub(super) fn bind_mark<'q>(
    query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    keyed: &'q KeyedWrite,
) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(keyed.owner.as_str())
        .bind(keyed.key.as_str())
        .bind(keyed.fingerprint.0.as_slice())
        .bind(ms(keyed.claimed_at))
}

/// Marks `keyed`'s row applied in the transaction of the write it runs for (`conn`), in a
/// statement of its own (a write without an audit entry).
pub(super) async fn mark_applied(conn: &mut PgConnection, keyed: &KeyedWrite) -> PgResult<()> {
    bind_mark(sqlx::query(mark_sql!("$1", "$2", "$3", "$4")), keyed)
        .execute(conn)
        .await?;
    Ok(())
}

impl PgStore {
    /// Claims `key` (see [`IdempotencyStore::claim_idempotency_key`]), once.
    async fn try_claim(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> PgResult<Claim> {
        let lock = lock_of(owner, key);

        let mut conn = self.locks.acquire().await?;
        // One statement, writing nothing: the lock tried, and the key's row read.
        let row = sqlx::query(
            "SELECT pg_try_advisory_lock($1) AS got, k.fingerprint, k.created_at, k.status,
                    k.content_type, k.headers, k.body, k.applied
             FROM (SELECT 1) AS one
             LEFT JOIN idempotency_keys AS k ON k.owner = $2 AND k.key = $3",
        )
        .bind(lock)
        .bind(owner.as_str())
        .bind(key.as_str())
        .fetch_one(&mut *conn)
        .await?;
        let got: bool = row.try_get("got")?;
        let record = read_record(&row)?
            .filter(|r| now.as_millis() - r.created_at.as_millis() < KEPT_FOR_MS)
            .filter(|r| r.answer.is_some() || r.applied);
        if got {
            if record.is_none() {
                self.claims.hold(
                    owner,
                    key,
                    Held {
                        conn: Some(conn),
                        lock,
                        fingerprint,
                        claimed_at: now,
                        letting: self.claims.letting.clone(),
                    },
                );
                return Ok(Claim::Run);
            }
            // Its answer (or its applied write) is stored: the lock is not needed, and is let go
            // before the answer (a replay is rare; the next claim finds the lock free).
            sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(lock)
                .execute(&mut *conn)
                .await?;
            return Ok(Claim::decide(record.as_ref(), fingerprint, now));
        }
        drop(conn);
        // The request runs now, through this or another instance: its answer when it is kept
        // already; else, when it runs here, a mismatch, a wait, or (past the time a claim
        // counts as abandoned) a run again, as every store does; else a wait.
        if record.as_ref().is_some_and(|r| r.answer.is_some()) {
            return Ok(Claim::decide(record.as_ref(), fingerprint, now));
        }
        let running = self.claims.running(owner, key);
        let claim = match running {
            Some((_, claimed_at))
                if now.as_millis() - claimed_at.as_millis() >= ABANDONED_AFTER_MS =>
            {
                Claim::Run
            }
            Some((running, _)) if running != fingerprint => Claim::Mismatch,
            _ => Claim::InUse,
        };
        if claim == Claim::Run {
            self.claims.hold(
                owner,
                key,
                Held {
                    conn: None,
                    lock,
                    fingerprint,
                    claimed_at: now,
                    letting: self.claims.letting.clone(),
                },
            );
        }
        Ok(claim)
    }
}

impl IdempotencyStore for PgStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        match self.try_claim(owner, key, fingerprint, now).await? {
            // The lock is this instance's own, being let go after an answer was kept: once it
            // is gone, the key is claimed again.
            Claim::InUse if self.claims.letting.wait_for(lock_of(owner, key)).await => {
                Ok(self.try_claim(owner, key, fingerprint, now).await?)
            }
            claim => Ok(claim),
        }
    }

    async fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> StoreResult<()> {
        let Some(claimed_at) = self.claims.claimed_at(owner, key, fingerprint) else {
            return Ok(());
        };
        let headers = serde_json::to_string(&answer.headers)
            .map_err(|e| StoreError::backend(format!("kept answer headers: {e}")))?;
        // A commit that waits for the disk: it makes the write's (which did not wait) durable
        // too. Then the lock is let go, after the answer is visible (a session's lock goes
        // the moment it is let go, not at a commit).
        let keep = sqlx::query(
            "INSERT INTO idempotency_keys (owner, key, fingerprint, created_at, status,
                                           content_type, headers, body, applied)
             VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, true)
             ON CONFLICT (owner, key) DO UPDATE
             SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                 status = EXCLUDED.status, content_type = EXCLUDED.content_type,
                 headers = EXCLUDED.headers, body = EXCLUDED.body, applied = true
             WHERE idempotency_keys.fingerprint = EXCLUDED.fingerprint
                OR idempotency_keys.created_at < EXCLUDED.created_at",
        )
        .bind(owner.as_str())
        .bind(key.as_str())
        .bind(fingerprint.0.as_slice())
        .bind(ms(claimed_at))
        .bind(i32::from(answer.status))
        .bind(answer.content_type.as_str())
        .bind(headers)
        .bind(answer.body.as_slice());
        let kept = keep.execute(&self.pool).await.map_err(backend);
        // (Taken out after the answer is visible: until then a claim here waits for it.)
        drop(self.claims.take(owner, key, fingerprint));
        kept.map(drop)
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        // A row marked applied stays: its write happened.
        let Some(mut held) = self.claims.take(owner, key, fingerprint) else {
            return Ok(());
        };
        if let Some(conn) = held.conn.as_mut() {
            sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(held.lock)
                .execute(&mut **conn)
                .await
                .map_err(backend)?;
            held.conn = None;
        }
        Ok(())
    }

    async fn count_kept_secrets(&self) -> StoreResult<u64> {
        use futures_util::TryStreamExt as _;
        let mut rows = sqlx::query_scalar::<_, Vec<u8>>(
            "SELECT body FROM idempotency_keys WHERE body IS NOT NULL",
        )
        .fetch(&self.pool);
        let mut found = 0;
        while let Some(body) = rows.try_next().await.map_err(backend)? {
            if licensing_core::idempotency::holds_secret(&body) {
                found += 1;
            }
        }
        Ok(found)
    }

    async fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64> {
        let deleted = sqlx::query(
            "DELETE FROM idempotency_keys WHERE ctid IN (
                 SELECT ctid FROM idempotency_keys WHERE created_at < $1
                 ORDER BY created_at LIMIT $2)",
        )
        .bind(ms(before))
        .bind(i64::from(max))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(deleted.rows_affected())
    }
}

/// The row a claim read, if there is one.
fn read_record(row: &sqlx::postgres::PgRow) -> PgResult<Option<IdempotencyRecord>> {
    let bad = || StoreError::backend("bad idempotency row");
    let Some(fingerprint) = row.try_get::<Option<Vec<u8>>, _>("fingerprint")? else {
        return Ok(None);
    };
    let fingerprint: [u8; 32] = fingerprint.try_into().map_err(|_| bad())?;
    let created_at: i64 = row.try_get("created_at")?;
    let status: Option<i32> = row.try_get("status")?;
    let applied: bool = row.try_get::<Option<bool>, _>("applied")?.unwrap_or(false);
    let answer = match status {
        None => None,
        Some(status) => Some(KeptAnswer {
            status: u16::try_from(status).map_err(|_| bad())?,
            content_type: row
                .try_get::<Option<String>, _>("content_type")?
                .unwrap_or_default(),
            headers: row
                .try_get::<Option<sqlx::types::Json<Vec<(String, String)>>>, _>("headers")?
                .map(|h| h.0)
                .unwrap_or_default(),
            body: row
                .try_get::<Option<Vec<u8>>, _>("body")?
                .unwrap_or_default(),
        }),
    };
    Ok(Some(IdempotencyRecord {
        fingerprint: Fingerprint(fingerprint),
        created_at: Timestamp::from_millis(created_at),
        applied: applied || answer.is_some(),
        answer,
    }))
}

impl PgStore {
    /// Loses the locks of the claims running here the way a crash does (their connections
    /// closed, nothing unlocked), for tests.
    #[cfg(test)]
    pub(super) fn lose_claims(&self) {
        let held: Vec<Held> = match self.claims.held.lock() {
            Ok(mut map) => map.drain().map(|(_, held)| held).collect(),
            Err(_) => Vec::new(),
        };
        for mut held in held {
            if let Some(mut conn) = held.conn.take() {
                conn.close_on_drop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim is held by its instance's connection: another instance is told to wait while it
    /// runs, and takes the key at once when that instance dies (no waiting for the claim to
    /// count as abandoned).
    #[test]
    fn a_claim_dies_with_its_instance() {
        crate::testing::postgres::on_fresh_database(|url| async move {
            let (first, second) = (
                PgStore::connect(&url, 4).await.unwrap(),
                PgStore::connect(&url, 4).await.unwrap(),
            );
            let owner = IdempotencyOwner::admin();
            let key = IdempotencyKey::parse(b"dies-with-its-instance").unwrap();
            let print = Fingerprint([4; 32]);
            let now = Timestamp::now();
            let (owner, key) = (&owner, &key);
            let claim = move |store: PgStore| async move {
                store.claim_idempotency_key(owner, key, print, now).await
            };
            assert_eq!(claim(first.clone()).await.unwrap(), Claim::Run);
            assert_eq!(claim(second.clone()).await.unwrap(), Claim::InUse);
            first.lose_claims();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                match claim(second.clone()).await.unwrap() {
                    Claim::Run => break,
                    Claim::InUse if std::time::Instant::now() < deadline => {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                    other => panic!("the key was not freed by the instance's end: {other:?}"),
                }
            }
        });
    }
}
