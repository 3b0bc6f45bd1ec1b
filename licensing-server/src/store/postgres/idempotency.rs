//! Idempotency keys (protocol.md section 6), one row per owner and key, shared by every instance.
//!
//! A claim is one upsert that takes the row only when it is free (expired, or a claim abandoned
//! by a stopped server): two instances claiming one key at once serialize on the row, and the
//! second reads what the first wrote. Keeping an answer and releasing a claim each touch only a
//! running claim of the same fingerprint.
//!
//! Claims are committed without waiting for the disk: a claim is flushed by its write's own
//! (synchronous) commit, which the log orders after it. Kept answers wait in this instance's
//! memory ([`Keeping`]), where its own claims find them at once, and a task of their own writes
//! them every [`ROUND`], the waiting ones in one statement: no request waits for an answer's
//! row. Until its row is written another instance sees the claim as running (409,
//! `Retry-After: 1`), for at most about 100 ms; a claim here of a key whose answer still waits
//! writes it first. A crash in that moment loses the answer, and a retry waits until the claim
//! counts as abandoned.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    ABANDONED_AFTER_MS, Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord,
    KEPT_FOR_MS, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};
use sqlx::PgPool;
use sqlx::Row as _;

use super::{PgStore, backend, ms};

/// How often a claim is tried when the row it found went away in between.
const CLAIM_ATTEMPTS: usize = 4;

impl IdempotencyStore for PgStore {
    async fn claim_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        now: Timestamp,
    ) -> StoreResult<Claim> {
        // An answer of this key still waiting here is written first, so that the row says
        // what the claim finds (kept, not running or abandoned). Rare: a retry within a round.
        while self.keeping.holds(owner, key)? {
            write_waiting(&self.behind, &self.keeping).await?;
        }
        for _ in 0..CLAIM_ATTEMPTS {
            let taken = sqlx::query(
                "INSERT INTO idempotency_keys (owner, key, fingerprint, created_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (owner, key) DO UPDATE
                 SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                     status = NULL, content_type = NULL, headers = NULL, body = NULL
                 WHERE idempotency_keys.created_at <= $5
                    OR (idempotency_keys.status IS NULL AND idempotency_keys.created_at <= $6)",
            )
            .bind(owner.as_str())
            .bind(key.as_str())
            .bind(fingerprint.0.as_slice())
            .bind(ms(now))
            .bind(ms(now) - KEPT_FOR_MS)
            .bind(ms(now) - ABANDONED_AFTER_MS)
            .execute(&self.behind)
            .await
            .map_err(backend)?;
            if taken.rows_affected() == 1 {
                return Ok(Claim::Run);
            }
            let row = sqlx::query(
                "SELECT fingerprint, created_at, status, content_type, headers, body
                 FROM idempotency_keys WHERE owner = $1 AND key = $2",
            )
            .bind(owner.as_str())
            .bind(key.as_str())
            .fetch_optional(&self.behind)
            .await
            .map_err(backend)?;
            let Some(row) = row else {
                continue; // released in between: claim again
            };
            let mut record = read_record(&row)?;
            if record.answer.is_none() {
                record.answer = self.keeping.answer(owner, key, record.fingerprint)?;
            }
            match Claim::decide(Some(&record), fingerprint, now) {
                Claim::Run => continue, // freed in between: claim again
                found => return Ok(found),
            }
        }
        // Claimed and released again each time: as if running.
        Ok(Claim::InUse)
    }

    async fn keep_idempotent_answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> StoreResult<()> {
        self.keeping.keep(owner, key, fingerprint, answer)
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
        // A claim whose answer waits here to be written is kept, not running.
        if self.keeping.answer(owner, key, fingerprint)?.is_some() {
            return Ok(());
        }
        sqlx::query(
            "DELETE FROM idempotency_keys
             WHERE owner = $1 AND key = $2 AND fingerprint = $3 AND status IS NULL",
        )
        .bind(owner.as_str())
        .bind(key.as_str())
        .bind(fingerprint.0.as_slice())
        .execute(&self.behind)
        .await
        .map_err(backend)?;
        Ok(())
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

/// Kept answers waiting to be written: the claim's fingerprint and the answer, by owner and key.
type Waiting = HashMap<(String, String), (Fingerprint, KeptAnswer)>;

/// Kept answers waiting to be written (see the module documentation).
#[derive(Default)]
pub(super) struct Keeping {
    waiting: std::sync::Mutex<Waiting>,
}

/// Answers per statement.
const CHUNK: usize = 500;

impl Keeping {
    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Waiting>> {
        self.waiting
            .lock()
            .map_err(|_| StoreError::backend("kept answers lock poisoned"))
    }

    fn keep(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        answer: &KeptAnswer,
    ) -> StoreResult<()> {
        self.lock()?.insert(
            (owner.as_str().to_owned(), key.as_str().to_owned()),
            (fingerprint, answer.clone()),
        );
        Ok(())
    }

    /// The answer waiting for the claim of `key` with `fingerprint`, if any.
    fn answer(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<Option<KeptAnswer>> {
        let waiting = self.lock()?;
        Ok(waiting
            .get(&(owner.as_str().to_owned(), key.as_str().to_owned()))
            .filter(|(f, _)| *f == fingerprint)
            .map(|(_, answer)| answer.clone()))
    }

    /// Whether an answer of `key` waits to be written.
    fn holds(&self, owner: &IdempotencyOwner, key: &IdempotencyKey) -> StoreResult<bool> {
        let waiting = self.lock()?;
        Ok(waiting.contains_key(&(owner.as_str().to_owned(), key.as_str().to_owned())))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lock().map(|w| w.is_empty()).unwrap_or(true)
    }
}

/// Writes up to [`CHUNK`] waiting answers in one statement, then forgets those that did not
/// change meanwhile (they are answered from the table from then on).
pub(super) async fn write_waiting(pool: &PgPool, keeping: &Keeping) -> StoreResult<()> {
    type Entry = ((String, String), (Fingerprint, KeptAnswer));
    let taken: Vec<Entry> = keeping
        .lock()?
        .iter()
        .take(CHUNK)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    let mut owners = Vec::with_capacity(taken.len());
    let mut keys = Vec::with_capacity(taken.len());
    let mut fingerprints: Vec<&[u8]> = Vec::with_capacity(taken.len());
    let mut statuses = Vec::with_capacity(taken.len());
    let mut content_types = Vec::with_capacity(taken.len());
    let mut headers = Vec::with_capacity(taken.len());
    let mut bodies: Vec<&[u8]> = Vec::with_capacity(taken.len());
    for ((owner, key), (fingerprint, answer)) in &taken {
        owners.push(owner.as_str());
        keys.push(key.as_str());
        fingerprints.push(fingerprint.0.as_slice());
        statuses.push(i32::from(answer.status));
        content_types.push(answer.content_type.as_str());
        headers.push(
            serde_json::to_string(&answer.headers)
                .map_err(|e| StoreError::backend(format!("kept answer headers: {e}")))?,
        );
        bodies.push(answer.body.as_slice());
    }
    sqlx::query(
        "UPDATE idempotency_keys AS k
         SET status = a.status, content_type = a.content_type, headers = a.headers::jsonb,
             body = a.body
         FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int4[], $5::text[], $6::text[],
                     $7::bytea[])
              AS a(owner, key, fingerprint, status, content_type, headers, body)
         WHERE k.owner = a.owner AND k.key = a.key AND k.fingerprint = a.fingerprint
           AND k.status IS NULL",
    )
    .bind(&owners)
    .bind(&keys)
    .bind(&fingerprints)
    .bind(&statuses)
    .bind(&content_types)
    .bind(&headers)
    .bind(&bodies)
    .execute(pool)
    .await
    .map_err(backend)?;
    let mut waiting = keeping.lock()?;
    for (k, written) in taken {
        if waiting.get(&k) == Some(&written) {
            waiting.remove(&k);
        }
    }
    Ok(())
}

/// How often the writer writes the answers kept meanwhile: a round writes many rows in one
/// statement, where one statement per answer made a keyed write a third slower at 8
/// connections (benches/README.md).
pub(super) const ROUND: Duration = Duration::from_millis(100);

/// The writer of kept answers: every [`ROUND`] while some wait, until the store is dropped.
pub(super) async fn run(keeping: Weak<Keeping>, pool: PgPool) {
    let mut round = tokio::time::interval(ROUND);
    round.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        round.tick().await;
        let Some(keeping) = keeping.upgrade() else {
            return;
        };
        while !keeping.is_empty() {
            if let Err(e) = write_waiting(&pool, &keeping).await {
                tracing::error!(error = %e, "writing kept idempotent answers failed");
                break;
            }
        }
    }
}

fn read_record(row: &sqlx::postgres::PgRow) -> StoreResult<IdempotencyRecord> {
    let bad = || StoreError::backend("bad idempotency row");
    let fingerprint: Vec<u8> = row.try_get("fingerprint").map_err(backend)?;
    let fingerprint: [u8; 32] = fingerprint.try_into().map_err(|_| bad())?;
    let created_at: i64 = row.try_get("created_at").map_err(backend)?;
    let status: Option<i32> = row.try_get("status").map_err(backend)?;
    let answer = match status {
        None => None,
        Some(status) => Some(KeptAnswer {
            status: u16::try_from(status).map_err(|_| bad())?,
            content_type: row
                .try_get::<Option<String>, _>("content_type")
                .map_err(backend)?
                .unwrap_or_default(),
            headers: row
                .try_get::<Option<sqlx::types::Json<Vec<(String, String)>>>, _>("headers")
                .map_err(backend)?
                .map(|h| h.0)
                .unwrap_or_default(),
            body: row
                .try_get::<Option<Vec<u8>>, _>("body")
                .map_err(backend)?
                .unwrap_or_default(),
        }),
    };
    Ok(IdempotencyRecord {
        fingerprint: Fingerprint(fingerprint),
        created_at: Timestamp::from_millis(created_at),
        answer,
    })
}
