//! (ext) Usage counters (`usage_counters`) and the kept answers of usage events
//! (`usage_answers`). An increment is one conditional upsert of its counter row, so concurrent
//! increments on any instance are serialized by the row and never pass the limit; an event id
//! is claimed by inserting its answer's row first, in the same transaction (a retry arriving
//! meanwhile waits for that transaction, then reads the kept answer).

use licensing_core::model::{
    ClientEvents, License, Meter, USAGE_EVENT_KEPT_MS, UsageChange, UsageCounter, UsageIncrement,
    UsageOutcome, usage_events,
};
use licensing_core::store::{
    Entity, Journal, StoreError, StoreResult, UsageStore, check_counters_owner, count_usage,
};
use licensing_core::{LicenseId, TeamId, Timestamp};
use sqlx::Row as _;

use super::tables::LICENSES;
use super::{PgResult, PgStore, backend, in_tx, ms};

/// A counter's amount as a column (counts stay far below `i64::MAX`).
fn column(used: u64) -> i64 {
    i64::try_from(used).unwrap_or(i64::MAX)
}

/// 404 `License` unless the team has the license; the row is share-locked until the
/// transaction ends, so that it is not deleted under the counters written.
async fn hold_license(
    conn: &mut sqlx::PgConnection,
    team: TeamId,
    license: LicenseId,
) -> PgResult<()> {
    let found: Option<i32> =
        sqlx::query_scalar("SELECT 1 FROM licenses WHERE team_id = $1 AND id = $2 FOR KEY SHARE")
            .bind(team.as_uuid())
            .bind(license.as_uuid())
            .fetch_optional(&mut *conn)
            .await?;
    found
        .map(|_| ())
        .ok_or_else(|| StoreError::NotFound(Entity::License).into())
}

/// The kept answer of event `id` of the license, after claiming it: `None` when this
/// transaction now holds the event (new, or its answer was kept too long ago to count).
async fn claim_event(
    conn: &mut sqlx::PgConnection,
    license: LicenseId,
    id: &str,
    now: Timestamp,
) -> PgResult<Option<UsageOutcome>> {
    let claimed: Option<i32> = sqlx::query_scalar(
        "INSERT INTO usage_answers (license_id, event_id, kept_at, answer)
         VALUES ($1, $2, $3, NULL)
         ON CONFLICT (license_id, event_id) DO UPDATE SET kept_at = excluded.kept_at,
           answer = NULL
         WHERE usage_answers.kept_at <= $4
         RETURNING 1",
    )
    .bind(license.as_uuid())
    .bind(id)
    .bind(ms(now))
    .bind(ms(now) - USAGE_EVENT_KEPT_MS)
    .fetch_optional(&mut *conn)
    .await?;
    if claimed.is_some() {
        return Ok(None);
    }
    let answer: Option<Option<serde_json::Value>> = sqlx::query_scalar(
        "SELECT answer FROM usage_answers WHERE license_id = $1 AND event_id = $2",
    )
    .bind(license.as_uuid())
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    match answer.flatten() {
        Some(answer) => Ok(Some(serde_json::from_value(answer).map_err(|e| {
            StoreError::backend(format!("a kept usage answer is unreadable: {e}"))
        })?)),
        // The same id earlier in this batch, not answered yet: counted as its own event.
        None => Ok(None),
    }
}

/// Adds `inc` to its counter when the limit leaves room, in one statement; the counter
/// before and the outcome.
async fn increment(
    conn: &mut sqlx::PgConnection,
    license: LicenseId,
    inc: &UsageIncrement,
) -> PgResult<(u64, UsageOutcome)> {
    let start = inc.meter.period.bounds(inc.at).0;
    let limit = inc.meter.limit.map(column);
    let after: Option<i64> = sqlx::query_scalar(
        "INSERT INTO usage_counters AS c (license_id, meter, period_start, used)
         SELECT $1, $2, $3, $4 WHERE $5::int8 IS NULL OR $4 <= $5
         ON CONFLICT (license_id, meter, period_start) DO UPDATE SET used = c.used + excluded.used
         WHERE $5::int8 IS NULL OR c.used + excluded.used <= $5
         RETURNING used",
    )
    .bind(license.as_uuid())
    .bind(&inc.meter.code)
    .bind(ms(start))
    .bind(column(inc.quantity))
    .bind(limit)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(after) = after {
        let after = u64::try_from(after).unwrap_or(0);
        let before = after.saturating_sub(inc.quantity);
        let outcome = count_usage(inc, before);
        return Ok((before, outcome));
    }
    let used: Option<i64> = sqlx::query_scalar(
        "SELECT used FROM usage_counters WHERE license_id = $1 AND meter = $2 AND period_start = $3",
    )
    .bind(license.as_uuid())
    .bind(&inc.meter.code)
    .bind(ms(start))
    .fetch_optional(&mut *conn)
    .await?;
    let used = used.map_or(0, |u| u64::try_from(u).unwrap_or(0));
    // The row refused: nothing counted, whatever a racing request changed since.
    let outcome = UsageOutcome {
        counted: false,
        state: inc.meter.state(used, inc.at),
        replayed: false,
    };
    Ok((used, outcome))
}

impl UsageStore for PgStore {
    async fn record_usage(
        &self,
        license: &License,
        increments: &[UsageIncrement],
        wants: ClientEvents,
        now: Timestamp,
    ) -> StoreResult<Vec<UsageOutcome>> {
        in_tx!(self.pool, |tx| {
            hold_license(&mut tx, license.team_id, license.id).await?;
            // Counters taken in one order (by meter and period; a counter's events keep theirs),
            // so that two batches of the license never each hold a row the other waits for.
            let mut order: Vec<usize> = (0..increments.len()).collect();
            order.sort_by_key(|&i| {
                let inc = &increments[i];
                (&inc.meter.code, inc.meter.period.bounds(inc.at).0)
            });
            let mut out: Vec<Option<UsageOutcome>> = vec![None; increments.len()];
            let mut events = Vec::new();
            for i in order {
                let inc = &increments[i];
                if let Some(id) = &inc.event_id
                    && let Some(kept) = claim_event(&mut tx, license.id, id, now).await?
                {
                    out[i] = Some(UsageOutcome {
                        replayed: true,
                        ..kept
                    });
                    continue;
                }
                let (before, outcome) = increment(&mut tx, license.id, inc).await?;
                if outcome.counted {
                    events.extend(usage_events(
                        wants,
                        license,
                        &inc.meter,
                        (before, outcome.state.used),
                        inc.at,
                        now,
                    ));
                }
                if let Some(id) = &inc.event_id {
                    let answer = serde_json::to_value(&outcome)
                        .map_err(|e| StoreError::backend(format!("keeping a usage answer: {e}")))?;
                    sqlx::query(
                        "UPDATE usage_answers SET answer = $3
                         WHERE license_id = $1 AND event_id = $2",
                    )
                    .bind(license.id.as_uuid())
                    .bind(id)
                    .bind(answer)
                    .execute(&mut *tx)
                    .await?;
                }
                out[i] = Some(outcome);
            }
            if !events.is_empty() {
                let journal = Journal {
                    audit: Vec::new(),
                    events,
                    keyed: None,
                    inbound: None,
                };
                super::write_journal(&mut tx, &journal).await?;
            }
            Ok(out.into_iter().flatten().collect())
        })
    }

    async fn list_usage(&self, team: TeamId, license: LicenseId) -> StoreResult<Vec<UsageCounter>> {
        let rows = sqlx::query(
            "SELECT u.meter, u.period_start, u.used FROM licenses l
             LEFT JOIN usage_counters u ON u.license_id = l.id
             WHERE l.team_id = $1 AND l.id = $2",
        )
        .bind(team.as_uuid())
        .bind(license.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(Entity::License));
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let meter: Option<String> = row.try_get("meter").map_err(backend)?;
            let Some(meter) = meter else { continue };
            let start: i64 = row.try_get("period_start").map_err(backend)?;
            let used: i64 = row.try_get("used").map_err(backend)?;
            out.push(UsageCounter {
                license_id: license,
                meter,
                period_start: Timestamp::from_millis(start),
                used: u64::try_from(used).unwrap_or(0),
            });
        }
        Ok(out)
    }

    async fn used_now(
        &self,
        _team: TeamId,
        license: LicenseId,
        meters: &[Meter],
        now: Timestamp,
    ) -> StoreResult<Vec<u64>> {
        if meters.is_empty() {
            return Ok(Vec::new());
        }
        let (codes, starts): (Vec<&str>, Vec<i64>) = meters
            .iter()
            .map(|m| (m.code.as_str(), m.period.bounds(now).0.as_millis()))
            .unzip();
        // One row a meter, in order: its counter of the period, or none.
        let used: Vec<Option<i64>> = sqlx::query_scalar(
            "SELECT u.used FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS w(meter, start, n)
             LEFT JOIN usage_counters u
               ON u.license_id = $1 AND u.meter = w.meter AND u.period_start = w.start
             ORDER BY w.n",
        )
        .bind(license.as_uuid())
        .bind(&codes)
        .bind(&starts)
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Ok(used
            .into_iter()
            .map(|u| u.and_then(|u| u64::try_from(u).ok()).unwrap_or(0))
            .collect())
    }

    async fn change_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        meter: &Meter,
        change: UsageChange,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<UsageCounter> {
        let start = meter.period.bounds(now).0;
        let (delta, reset) = match change {
            UsageChange::Adjust(delta) => (delta, false),
            UsageChange::Reset => (0, true),
        };
        in_tx!(self.pool, journal, |tx| {
            LICENSES
                .lock(&mut tx, team.as_uuid(), license.as_uuid())
                .await?;
            let used: i64 = sqlx::query_scalar(
                "INSERT INTO usage_counters AS c (license_id, meter, period_start, used)
                 VALUES ($1, $2, $3, CASE WHEN $5 THEN 0 ELSE GREATEST($4, 0) END)
                 ON CONFLICT (license_id, meter, period_start) DO UPDATE SET
                   used = CASE WHEN $5 THEN 0 ELSE GREATEST(c.used + $4, 0) END
                 RETURNING used",
            )
            .bind(license.as_uuid())
            .bind(&meter.code)
            .bind(ms(start))
            .bind(delta)
            .bind(reset)
            .fetch_one(&mut *tx)
            .await?;
            Ok(UsageCounter {
                license_id: license,
                meter: meter.code.clone(),
                period_start: start,
                used: u64::try_from(used).unwrap_or(0),
            })
        })
    }

    async fn restore_usage_counters(
        &self,
        team: TeamId,
        license: LicenseId,
        counters: &[UsageCounter],
    ) -> StoreResult<()> {
        check_counters_owner(license, counters)?;
        in_tx!(self.pool, |tx| {
            LICENSES
                .lock(&mut tx, team.as_uuid(), license.as_uuid())
                .await?;
            sqlx::query(
                "INSERT INTO usage_counters (license_id, meter, period_start, used)
                 SELECT $1, * FROM unnest($2::text[], $3::int8[], $4::int8[])
                 ON CONFLICT (license_id, meter, period_start) DO UPDATE SET used = excluded.used",
            )
            .bind(license.as_uuid())
            .bind(
                counters
                    .iter()
                    .map(|c| c.meter.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                counters
                    .iter()
                    .map(|c| ms(c.period_start))
                    .collect::<Vec<_>>(),
            )
            .bind(counters.iter().map(|c| column(c.used)).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
            Ok(())
        })
    }

    async fn prune_usage_events(&self, before: Timestamp) -> StoreResult<u64> {
        let done = sqlx::query("DELETE FROM usage_answers WHERE kept_at < $1")
            .bind(ms(before))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected())
    }
}
