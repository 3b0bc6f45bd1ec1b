//! The blacklist, statistics, the e-mail outbox and used session keys.

use licensing_core::model::{BlacklistEntry, HourlyStats, OutboxMessage, Overview, TopProduct};
use licensing_core::store::{
    BlacklistStore, Journal, OutboxStore, SessionKeyRefused, SessionKeyStore, StatsStore,
    StoreError, StoreResult, rank_top_products,
};
use licensing_core::{BlacklistId, ProductId, TeamId, Timestamp};
use sqlx::{PgConnection, Row as _};

use super::PgResult;
use super::fetch_docs;
use super::tables::BLACKLIST;
use super::{PgStore, backend, constraint, doc, in_tx, json, ms, team_missing};

pub(super) async fn insert_message(conn: &mut PgConnection, m: &OutboxMessage) -> PgResult<()> {
    sqlx::query("INSERT INTO outbox (id, team_id, next_attempt_at, doc) VALUES ($1, $2, $3, $4)")
        .bind(m.id.as_uuid())
        .bind(m.team_id.as_uuid())
        .bind(ms(m.next_attempt_at))
        .bind(json(m))
        .execute(conn)
        .await
        .map_err(|e| constraint(e, &[("outbox_team_id_fkey", team_missing)]))?;
    Ok(())
}

fn blacklist_entry(row: &sqlx::postgres::PgRow) -> PgResult<BlacklistEntry> {
    let mut entry: BlacklistEntry = doc(row)?;
    let hits: i64 = row.try_get("hits")?;
    entry.hits = u64::try_from(hits).unwrap_or(0);
    Ok(entry)
}

fn kind_text(entry: &BlacklistEntry) -> PgResult<String> {
    match serde_json::to_value(entry.kind) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::backend("a blacklist type is not a string").into()),
    }
}

impl BlacklistStore for PgStore {
    async fn create_blacklist_entry(
        &self,
        e: &BlacklistEntry,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO blacklist (id, team_id, kind, value, created_at, hits, doc)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(e.id.as_uuid())
            .bind(e.team_id.as_uuid())
            .bind(kind_text(e)?)
            .bind(&e.value)
            .bind(ms(e.created_at))
            .bind(i64::try_from(e.hits).unwrap_or(i64::MAX))
            .bind(json(e))
            .execute(&mut *tx)
            .await
            .map_err(|err| {
                constraint(
                    err,
                    &[
                        ("blacklist_unique", || {
                            StoreError::conflict("value", "is already on the blacklist")
                        }),
                        ("blacklist_team_id_fkey", team_missing),
                    ],
                )
            })?;
            Ok(())
        })
    }

    async fn list_blacklist(&self, team: TeamId) -> StoreResult<Vec<BlacklistEntry>> {
        Ok(sqlx::query(
            "SELECT doc, hits FROM blacklist WHERE team_id = $1 ORDER BY created_at, id",
        )
        .bind(team.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?
        .iter()
        .map(blacklist_entry)
        .collect::<PgResult<_>>()?)
    }

    async fn delete_blacklist_entry(
        &self,
        team: TeamId,
        id: BlacklistId,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            BLACKLIST
                .delete(&mut tx, team.as_uuid(), id.as_uuid())
                .await
        })
    }

    async fn add_blacklist_hits(
        &self,
        team: TeamId,
        hits: &[(BlacklistId, u64)],
    ) -> StoreResult<()> {
        if hits.is_empty() {
            return Ok(());
        }
        let ids: Vec<uuid::Uuid> = hits.iter().map(|(id, _)| *id.as_uuid()).collect();
        let counts: Vec<i64> = hits
            .iter()
            .map(|(_, n)| i64::try_from(*n).unwrap_or(i64::MAX))
            .collect();
        sqlx::query(
            "UPDATE blacklist b SET hits = b.hits + h.n
             FROM (SELECT id, sum(n)::bigint AS n FROM unnest($2::uuid[], $3::bigint[]) AS h (id, n)
                   GROUP BY id) h
             WHERE b.team_id = $1 AND b.id = h.id",
        )
        .bind(team.as_uuid())
        .bind(&ids)
        .bind(&counts)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }
}

impl StatsStore for PgStore {
    async fn add_hourly(&self, team: TeamId, counts: &HourlyStats) -> StoreResult<()> {
        in_tx!(self.pool, |tx| {
            let empty = HourlyStats {
                hour: counts.hour,
                ..HourlyStats::default()
            };
            sqlx::query(
                "INSERT INTO hourly_stats (team_id, hour, doc) VALUES ($1, $2, $3)
                 ON CONFLICT (team_id, hour) DO NOTHING",
            )
            .bind(team.as_uuid())
            .bind(counts.hour)
            .bind(json(&empty))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("hourly_stats_team_id_fkey", team_missing)]))?;
            let row = sqlx::query(
                "SELECT doc FROM hourly_stats WHERE team_id = $1 AND hour = $2 FOR UPDATE",
            )
            .bind(team.as_uuid())
            .bind(counts.hour)
            .fetch_one(&mut *tx)
            .await?;
            let mut bucket: HourlyStats = doc(&row)?;
            bucket.merge(counts);
            sqlx::query("UPDATE hourly_stats SET doc = $3 WHERE team_id = $1 AND hour = $2")
                .bind(team.as_uuid())
                .bind(counts.hour)
                .bind(json(&bucket))
                .execute(&mut *tx)
                .await?;
            Ok(())
        })
    }

    async fn hourly_since(&self, team: TeamId, since: i64) -> StoreResult<Vec<HourlyStats>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM hourly_stats WHERE team_id = $1 AND hour >= $2 ORDER BY hour",
            )
            .bind(team.as_uuid())
            .bind(since),
        )
        .await?)
    }

    async fn overview(&self, team: TeamId, active_since: Timestamp) -> StoreResult<Overview> {
        self.settle().await?;
        let row = sqlx::query(
            "SELECT
               coalesce((SELECT licenses FROM team_counts WHERE team_id = $1), 0) AS licenses,
               coalesce((SELECT customers FROM team_counts WHERE team_id = $1), 0) AS customers,
               (SELECT count(*) FROM products WHERE team_id = $1) AS products,
               (SELECT count(*) FROM licenses
                  WHERE team_id = $1 AND active_day >= $3 AND last_active_at >= $2) AS active",
        )
        .bind(team.as_uuid())
        .bind(ms(active_since))
        // The day of last use, as the column holds it (the index reads from that day on).
        .bind(i32::try_from(ms(active_since).div_euclid(86_400_000)).unwrap_or(i32::MIN))
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?;
        let n = |name: &str| count_of(&row, name);
        Ok(Overview {
            total_licenses: n("licenses")?,
            total_customers: n("customers")?,
            total_products: n("products")?,
            active_licenses: n("active")?,
            total_requests: 0,
        })
    }

    async fn top_products(&self, team: TeamId, limit: usize) -> StoreResult<Vec<TopProduct>> {
        let rows = sqlx::query(
            "SELECT p.id, p.doc ->> 'name' AS name,
               (SELECT count(*) FROM licenses l WHERE l.team_id = $1 AND l.product_ids @> ARRAY[p.id])
                 AS licenses
             FROM products p WHERE p.team_id = $1",
        )
        .bind(team.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        let products = rows
            .iter()
            .map(|row| {
                Ok(TopProduct {
                    id: ProductId::from_uuid(row.try_get("id").map_err(backend)?),
                    name: row.try_get("name").map_err(backend)?,
                    licenses: u64::try_from(row.try_get::<i64, _>("licenses").map_err(backend)?)
                        .unwrap_or(0),
                })
            })
            .collect::<PgResult<Vec<_>>>()?;
        Ok(rank_top_products(products, limit))
    }

    async fn backlog(&self) -> StoreResult<licensing_core::model::Backlog> {
        let row = sqlx::query(
            "SELECT (SELECT count(*) FROM outbox) AS outbox,
                    (SELECT count(*) FROM webhook_events) AS events,
                    (SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING')
                      AS deliveries",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?;
        let n = |name: &str| count_of(&row, name);
        Ok(licensing_core::model::Backlog {
            outbox_messages: n("outbox")?,
            queued_events: n("events")?,
            pending_deliveries: n("deliveries")?,
        })
    }
}

/// Counts `n` more e-mails queued for `team` on the day of `today` (its day and the team's daily
/// limit); `Limit` (naming `what`) when that takes the day over the limit.
pub(super) async fn count_mail(
    tx: &mut sqlx::PgConnection,
    team: TeamId,
    n: usize,
    (day, daily_limit): (i64, u32),
    what: &str,
) -> PgResult<()> {
    let queued: i64 = sqlx::query_scalar(
        "INSERT INTO mail_days (team_id, day, queued) VALUES ($1, $2, $3)
         ON CONFLICT (team_id, day) DO UPDATE SET queued = mail_days.queued + $3
         RETURNING queued",
    )
    .bind(team.as_uuid())
    .bind(day)
    .bind(n as i64)
    .fetch_one(tx)
    .await
    .map_err(|e| constraint(e, &[("mail_days_team_id_fkey", team_missing)]))?;
    if queued > i64::from(daily_limit) {
        return Err(StoreError::Limit(format!(
            "at most {daily_limit} {what} a day per team; try again tomorrow"
        ))
        .into());
    }
    Ok(())
}

impl OutboxStore for PgStore {
    async fn queue_messages(
        &self,
        team: TeamId,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        in_tx!(self.pool, |tx| {
            let today = (OutboxMessage::day_of(now), daily_limit);
            count_mail(&mut tx, team, mail.len(), today, "e-mails").await?;
            for m in mail {
                insert_message(&mut tx, m).await?;
            }
            Ok(())
        })
    }

    async fn due_messages(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<OutboxMessage>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM outbox WHERE next_attempt_at <= $1 ORDER BY next_attempt_at, id
             LIMIT $2",
            )
            .bind(ms(now))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
        )
        .await?)
    }

    async fn claim_messages(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<OutboxMessage>> {
        const CLAIM: &str = "UPDATE outbox SET claimed_until = $2 WHERE id IN (
               SELECT id FROM outbox
               WHERE next_attempt_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1)
               ORDER BY next_attempt_at, id LIMIT $3
               FOR UPDATE SKIP LOCKED)
             RETURNING doc";
        Ok(super::claim(&self.pool, CLAIM, now, lease_ms, limit)
            .await
            .map(|mut claimed: Vec<OutboxMessage>| {
                claimed.sort_by_key(|m| (m.next_attempt_at, m.id));
                claimed
            })?)
    }

    async fn message_sent(&self, message: &OutboxMessage) -> StoreResult<()> {
        sqlx::query("DELETE FROM outbox WHERE id = $1")
            .bind(message.id.as_uuid())
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn message_failed(&self, message: &OutboxMessage) -> StoreResult<()> {
        sqlx::query(
            "UPDATE outbox SET next_attempt_at = $2, doc = $3, claimed_until = NULL WHERE id = $1",
        )
        .bind(message.id.as_uuid())
        .bind(ms(message.next_attempt_at))
        .bind(json(message))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }
}

impl SessionKeyStore for PgStore {
    async fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> StoreResult<Result<(), SessionKeyRefused>> {
        let since = ms(now) - window_ms;
        in_tx!(self.pool, |tx| {
            sqlx::query("DELETE FROM session_keys WHERE team_id = $1 AND used_at <= $2")
                .bind(team.as_uuid())
                .bind(since)
                .execute(&mut *tx)
                .await?;
            let used: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM session_keys WHERE team_id = $1 AND fingerprint = $2",
            )
            .bind(team.as_uuid())
            .bind(fingerprint.as_slice())
            .fetch_optional(&mut *tx)
            .await?;
            if used.is_some() {
                return Ok(Err(SessionKeyRefused::Reused));
            }
            let held: i64 =
                sqlx::query_scalar("SELECT count(*) FROM session_keys WHERE team_id = $1")
                    .bind(team.as_uuid())
                    .fetch_one(&mut *tx)
                    .await?;
            if held >= i64::from(per_team) {
                return Ok(Err(SessionKeyRefused::Full));
            }
            // Two instances taking the same key at once: the primary key lets one in.
            let taken = sqlx::query(
                "INSERT INTO session_keys (team_id, fingerprint, used_at) VALUES ($1, $2, $3)
                 ON CONFLICT (team_id, fingerprint) DO NOTHING",
            )
            .bind(team.as_uuid())
            .bind(fingerprint.as_slice())
            .bind(ms(now))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("session_keys_team_id_fkey", team_missing)]))?;
            if taken.rows_affected() == 0 {
                return Ok(Err(SessionKeyRefused::Reused));
            }
            Ok(Ok(()))
        })
    }
}

/// A `count(*)` column of `row`.
fn count_of(row: &sqlx::postgres::PgRow, name: &str) -> PgResult<u64> {
    Ok(row
        .try_get::<i64, _>(name)
        .map(|v| u64::try_from(v).unwrap_or(0))
        .map_err(backend)?)
}
