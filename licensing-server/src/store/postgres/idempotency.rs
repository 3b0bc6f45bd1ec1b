//! Idempotency keys (protocol.md section 6), one row per owner and key, shared by every instance.
//!
//! A claim is one upsert that takes the row only when it is free (expired, or a claim abandoned
//! by a stopped server): two instances claiming one key at once serialize on the row, and the
//! second reads what the first wrote. Keeping an answer and releasing a claim each touch only a
//! running claim of the same fingerprint.
//!
//! Claims and kept answers are committed without waiting for the disk: a claim is flushed by
//! its write's own (synchronous) commit, which the log orders after it, and a kept answer is on
//! disk within the WAL writer's delay (200 ms by default) of its answer.

use licensing_core::Timestamp;
use licensing_core::idempotency::{
    ABANDONED_AFTER_MS, Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, IdempotencyRecord,
    KEPT_FOR_MS, KeptAnswer,
};
use licensing_core::store::{IdempotencyStore, StoreError, StoreResult};
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
            let record = read_record(&row)?;
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
        sqlx::query(
            "UPDATE idempotency_keys SET status = $4, content_type = $5, headers = $6, body = $7
             WHERE owner = $1 AND key = $2 AND fingerprint = $3 AND status IS NULL",
        )
        .bind(owner.as_str())
        .bind(key.as_str())
        .bind(fingerprint.0.as_slice())
        .bind(i32::from(answer.status))
        .bind(&answer.content_type)
        .bind(sqlx::types::Json(&answer.headers))
        .bind(answer.body.as_slice())
        .execute(&self.behind)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn release_idempotency_key(
        &self,
        owner: &IdempotencyOwner,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
    ) -> StoreResult<()> {
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
