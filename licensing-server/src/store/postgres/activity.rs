//! The client API's atomic unit on PostgreSQL (steps 7 and 8).
//!
//! A request whose device and address already count (the usual heartbeat) is decided from one
//! read of the license with its own two records, and its refresh is written behind
//! (`refresh.rs`): nothing is at stake, so it needs no lock and no commit of its own. Any other request runs in a transaction that locks the license
//! row (`FOR UPDATE OF l`): concurrent requests of that license, through any instance, take
//! turns, so a limit is never exceeded, and other licenses do not wait. A limit is counted only
//! when it is at stake, and records are counted only up to the cap a license may hold.

use licensing_core::model::{Hwid, IpRecord, License, admission_events};
use licensing_core::store::{
    ActivityRules, ActivityStore, Entity, LicenseRead, Recorded, StoreError, StoreResult,
    cap_reached, license_after, prune_batch,
};
use licensing_core::verify::{self, Admission, Denial, RecordChange, RecordKind};
use licensing_core::{LicenseId, LicenseKey, TeamId, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row as _};

use super::licenses::{Prefixed, license};
use super::{PgStore, backend, in_tx, lock_row, ms, opt_ms};
use crate::store::refresh::{EARLY_ROUND, STRIPES};
use crate::store::{addr16, hwid_digest};
use licensing_core::store::Activity;

/// The license with the request's own device and address records, in one read, by `$where`.
macro_rules! own_read {
    ($where:literal) => {
        concat!(
            "SELECT l.doc, l.last_active_at,
       h.id AS h_id, h.identifier AS h_identifier, h.forgotten AS h_forgotten,
       h.last_seen_at AS h_last_seen_at, h.created_at AS h_created_at,
       h.updated_at AS h_updated_at,
       i.id AS i_id, i.address AS i_address, i.forgotten AS i_forgotten, i.country AS i_country,
       i.alpha2 AS i_alpha2, i.alpha3 AS i_alpha3, i.last_seen_at AS i_last_seen_at,
       i.created_at AS i_created_at, i.updated_at AS i_updated_at
     FROM licenses l
     LEFT JOIN hwids h ON h.license_id = l.id AND h.digest = $3
     LEFT JOIN ips i ON i.license_id = l.id AND i.address = $4
     ",
            $where
        )
    };
}

/// [`own_read!`] by the license's id: the atomic step's read.
const READ: &str = own_read!("WHERE l.team_id = $1 AND l.id = $2");

/// [`own_read!`] by the license's key: the client API's first read.
const READ_BY_KEY: &str = own_read!("WHERE l.team_id = $1 AND l.license_key = $2");

/// What the read found.
struct Own {
    license: License,
    hwid: Option<Hwid>,
    ip: Option<IpRecord>,
}

/// Reads the `h_`/`i_` prefixed columns of a joined row as records.
fn own(row: &PgRow, team: TeamId, activity: &Activity) -> StoreResult<Own> {
    let l = license(row)?;
    let license_id = l.id;
    let hwid = match row
        .try_get::<Option<uuid::Uuid>, _>("h_id")
        .map_err(backend)?
    {
        None => None,
        Some(_) => Some(Prefixed { row, prefix: "h_" }.hwid(team, license_id)?),
    }
    .filter(|h| activity.hardware_id.as_ref() == Some(&h.identifier));
    let ip = match row
        .try_get::<Option<uuid::Uuid>, _>("i_id")
        .map_err(backend)?
    {
        None => None,
        Some(_) => Some(Prefixed { row, prefix: "i_" }.ip(team, license_id)?),
    }
    .filter(|r| r.address == activity.ip.to_canonical());
    Ok(Own {
        license: l,
        hwid,
        ip,
    })
}

/// The earliest `lastSeenAt` that is within `timeout` minutes of `now` (none without one).
fn cutoff(timeout: Option<u32>, now: Timestamp) -> Option<i64> {
    timeout.map(|minutes| ms(now) - i64::from(minutes) * 60_000)
}

/// How many records of `kind` count against the license's limit now.
async fn counted(
    conn: &mut PgConnection,
    license: LicenseId,
    kind: RecordKind,
    timeout: Option<u32>,
    now: Timestamp,
) -> StoreResult<u64> {
    let sql: &'static str = match kind {
        RecordKind::Hwid => {
            "SELECT count(*) FROM hwids WHERE license_id = $1 AND NOT forgotten
               AND ($2::bigint IS NULL OR last_seen_at >= $2)"
        }
        RecordKind::Ip => {
            "SELECT count(*) FROM ips WHERE license_id = $1 AND NOT forgotten
               AND ($2::bigint IS NULL OR last_seen_at >= $2)"
        }
    };
    let n: i64 = sqlx::query_scalar(sql)
        .bind(license.as_uuid())
        .bind(cutoff(timeout, now))
        .fetch_one(conn)
        .await
        .map_err(backend)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Room under the cap for one new record of `kind`: the keys of the records to drop first
/// (empty when there is room), or `None` when none may be dropped.
async fn room(
    conn: &mut PgConnection,
    license: &License,
    kind: RecordKind,
    rules: &ActivityRules<'_>,
    now: Timestamp,
) -> StoreResult<Option<Vec<Vec<u8>>>> {
    let (count_sql, victims_sql, limit, timeout): (&'static str, &'static str, _, _) = match kind {
        RecordKind::Hwid => (
            "SELECT count(*) FROM hwids WHERE license_id = $1",
            "SELECT digest FROM hwids WHERE license_id = $1
               AND (NOT $2 OR forgotten OR ($3::bigint IS NOT NULL AND last_seen_at < $3))
             ORDER BY last_seen_at, id LIMIT $4",
            license.hwid_limit,
            rules.settings.hwid_timeout,
        ),
        RecordKind::Ip => (
            "SELECT count(*) FROM ips WHERE license_id = $1",
            "SELECT address FROM ips WHERE license_id = $1
               AND (NOT $2 OR forgotten OR ($3::bigint IS NOT NULL AND last_seen_at < $3))
             ORDER BY last_seen_at, id LIMIT $4",
            license.ip_limit,
            rules.settings.ip_timeout,
        ),
    };
    let held: i64 = sqlx::query_scalar(count_sql)
        .bind(license.id.as_uuid())
        .fetch_one(&mut *conn)
        .await
        .map_err(backend)?;
    if held < i64::from(rules.max_records) {
        return Ok(Some(Vec::new()));
    }
    let victims: Vec<Vec<u8>> = sqlx::query_scalar(victims_sql)
        .bind(license.id.as_uuid())
        .bind(limit.is_some_and(|l| l > 0))
        .bind(cutoff(timeout, now))
        .bind(prune_batch(rules.max_records) as i64)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend)?;
    Ok((!victims.is_empty()).then_some(victims))
}

/// Decides step 7 with the license row locked, counting a limit only when it is at stake.
async fn decide(
    conn: &mut PgConnection,
    own: &Own,
    rules: &ActivityRules<'_>,
    activity: &Activity,
    now: Timestamp,
) -> StoreResult<Result<Admission, Denial>> {
    let settings = rules.settings;
    let mut known: [Option<u64>; 2] = [None, None];
    let slot = |kind: RecordKind| match kind {
        RecordKind::Hwid => 0,
        RecordKind::Ip => 1,
    };
    loop {
        let decided = verify::admit_own(
            &own.license,
            settings,
            own.hwid.as_ref(),
            own.ip.as_ref(),
            activity.hardware_id.as_ref(),
            activity.ip,
            now,
            |kind| known[slot(kind)].ok_or(kind),
        );
        match decided {
            Ok(decided) => return Ok(decided),
            Err(kind) => {
                let timeout = match kind {
                    RecordKind::Hwid => settings.hwid_timeout,
                    RecordKind::Ip => settings.ip_timeout,
                };
                known[slot(kind)] = Some(counted(conn, own.license.id, kind, timeout, now).await?);
            }
        }
    }
}

/// Writes step 8 of an admission whose license row the transaction holds, with the events the
/// team wants of it. Returns the license after it.
async fn apply(
    conn: &mut PgConnection,
    own: &Own,
    admission: &Admission,
    rules: &ActivityRules<'_>,
    activity: &Activity,
    now: Timestamp,
) -> StoreResult<License> {
    let l = &own.license;
    let at = ms(now);
    let mut new_device = None;
    match (admission.hwid, &activity.hardware_id) {
        (Some(RecordChange::Create), Some(h)) => {
            let record = licensing_core::store::new_hwid(l, h, now);
            sqlx::query(
                "INSERT INTO hwids (license_id, digest, id, identifier, forgotten, last_seen_at,
                   created_at, updated_at)
                 VALUES ($1, $2, $3, $4, false, $5, $5, $5)",
            )
            .bind(l.id.as_uuid())
            .bind(hwid_digest(h).as_slice())
            .bind(record.id.as_uuid())
            .bind(h.as_str())
            .bind(at)
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
            new_device = Some(record);
        }
        (Some(RecordChange::Refresh { .. }), Some(h)) => {
            sqlx::query(
                "UPDATE hwids SET last_seen_at = $3,
                   updated_at = CASE WHEN forgotten THEN $3 ELSE updated_at END,
                   forgotten = false
                 WHERE license_id = $1 AND digest = $2",
            )
            .bind(l.id.as_uuid())
            .bind(hwid_digest(h).as_slice())
            .bind(at)
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
        }
        _ => {}
    }
    let country = activity.country;
    match admission.ip {
        RecordChange::Create => {
            sqlx::query(
                "INSERT INTO ips (license_id, address, id, forgotten, country, alpha2, alpha3,
                   last_seen_at, created_at, updated_at)
                 VALUES ($1, $2, $3, false, $4, $5, $6, $7, $7, $7)",
            )
            .bind(l.id.as_uuid())
            .bind(addr16(activity.ip).as_slice())
            .bind(uuid::Uuid::new_v4())
            .bind(country.map(|c| c.name))
            .bind(country.map(|c| c.alpha2))
            .bind(country.map(|c| c.alpha3))
            .bind(at)
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
        }
        RecordChange::Refresh { .. } => refresh_ip(conn, l.id, activity, at).await?,
    }
    let next = license_after(l, admission, now);
    if admission.activate.is_some() {
        super::licenses::write(conn, &next).await?;
    } else {
        sqlx::query("UPDATE licenses SET last_active_at = $2 WHERE id = $1")
            .bind(l.id.as_uuid())
            .bind(opt_ms(next.last_active_at))
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
    }
    for event in admission_events(
        rules.events,
        new_device.as_ref(),
        &next,
        admission.activate.is_some(),
        now,
    ) {
        super::webhooks::insert_event(&mut *conn, &event).await?;
    }
    Ok(next)
}

async fn refresh_ip(
    conn: &mut PgConnection,
    license: LicenseId,
    activity: &Activity,
    at: i64,
) -> StoreResult<()> {
    let country = activity.country;
    sqlx::query(
        "UPDATE ips SET last_seen_at = $3,
           updated_at = CASE WHEN forgotten THEN $3 ELSE updated_at END,
           forgotten = false,
           country = coalesce($4, country), alpha2 = coalesce($5, alpha2),
           alpha3 = coalesce($6, alpha3)
         WHERE license_id = $1 AND address = $2",
    )
    .bind(license.as_uuid())
    .bind(addr16(activity.ip).as_slice())
    .bind(at)
    .bind(country.map(|c| c.name))
    .bind(country.map(|c| c.alpha2))
    .bind(country.map(|c| c.alpha3))
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(())
}

impl ActivityStore for PgStore {
    async fn read_license_for_activity(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> StoreResult<Option<LicenseRead>> {
        let digest = activity.hardware_id.as_ref().map(hwid_digest);
        let row = sqlx::query(READ_BY_KEY)
            .bind(team.as_uuid())
            .bind(key.as_str())
            .bind(digest.as_ref().map(|d| d.as_slice()).unwrap_or_default())
            .bind(addr16(activity.ip).as_slice())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let found = own(&row, team, activity)?;
        Ok(Some(LicenseRead {
            license: self.refreshes.overlay(found.license),
            own: Some((found.hwid, found.ip)),
        }))
    }

    async fn record_activity_after(
        &self,
        read: &LicenseRead,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let Some((hwid, ip)) = &read.own else {
            let license = &read.license;
            return self
                .record_activity(license.team_id, license.id, rules, activity, now)
                .await;
        };
        let found = Own {
            license: read.license.clone(),
            hwid: hwid.clone(),
            ip: ip.clone(),
        };
        if let Some(recorded) = self.admit_counted(&found, rules, activity, now).await? {
            return Ok(Ok(recorded));
        }
        self.locked_step(read.license.team_id, read.license.id, rules, activity, now)
            .await
    }

    async fn record_activity(
        &self,
        team: TeamId,
        license_id: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let digest = activity.hardware_id.as_ref().map(hwid_digest);
        let digest = digest.as_ref().map(|d| d.as_slice()).unwrap_or_default();
        let address = addr16(activity.ip);
        // The hot path: records that already count need no lock (see the module docs).
        let row = sqlx::query(READ)
            .bind(team.as_uuid())
            .bind(license_id.as_uuid())
            .bind(digest)
            .bind(address.as_slice())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?
            .ok_or(StoreError::NotFound(Entity::License))?;
        let found = own(&row, team, activity)?;
        if let Some(recorded) = self.admit_counted(&found, rules, activity, now).await? {
            return Ok(Ok(recorded));
        }
        self.locked_step(team, license_id, rules, activity, now)
            .await
    }
}

impl PgStore {
    /// Admits a request whose records already count, from what was read: its refresh is
    /// written behind while the records as stored keep counting for the margin (see
    /// `refresh.rs`), at once otherwise. `None` when the request needs the atomic step.
    async fn admit_counted(
        &self,
        found: &Own,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Option<Recorded>> {
        let admit = |at: Timestamp| {
            verify::admit_counted_own(
                &found.license,
                rules.settings,
                found.hwid.as_ref(),
                found.ip.as_ref(),
                activity.hardware_id.as_ref(),
                activity.ip,
                at,
            )
        };
        let Some(admission) = admit(now) else {
            return Ok(None);
        };
        let license = &found.license;
        if admit(now.plus_seconds(super::refresh::MARGIN_SECONDS)).is_some() {
            let waiting = self.refreshes.add(
                license.team_id,
                license.id,
                activity.hardware_id.as_ref().map(hwid_digest),
                addr16(activity.ip),
                activity.country,
                now,
            );
            if waiting >= EARLY_ROUND / STRIPES {
                self.wake.notify_one();
            }
        } else {
            self.refresh(license.id, activity, now).await?;
        }
        Ok(Some(Recorded {
            license: license_after(license, &admission, now),
            admission,
        }))
    }

    /// The atomic step, in a transaction that holds the license row. It commits whatever the
    /// step decides (a refusal writes nothing of the request, but the waiting refreshes it
    /// wrote stay).
    async fn locked_step(
        &self,
        team: TeamId,
        license_id: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let digest = activity.hardware_id.as_ref().map(hwid_digest);
        let digest = digest.as_ref().map(|d| d.as_slice()).unwrap_or_default();
        let address = addr16(activity.ip);
        in_tx!(self.pool, |tx| {
            self.step_in(
                &mut tx,
                (team, license_id),
                rules,
                activity,
                (digest, &address),
                now,
            )
            .await
        })
    }

    /// The atomic step's body, on the transaction of [`locked_step`](Self::locked_step).
    async fn step_in(
        &self,
        tx: &mut PgConnection,
        (team, license_id): (TeamId, LicenseId),
        rules: &ActivityRules<'_>,
        activity: &Activity,
        (digest, address): (&[u8], &[u8; 16]),
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        // Lock first, then read in a statement of its own: under READ COMMITTED a
        // statement sees what committed before it started, so the read sees every record
        // the previous holder of the lock wrote (a join locked in one statement would not).
        lock_row(tx, Entity::License, team.as_uuid(), license_id.as_uuid()).await?;
        // This instance's waiting refreshes of the license first, so that its records are
        // counted and pruned by their latest times.
        if let Some(waiting) = self.refreshes.take_license(license_id) {
            super::refresh::write(&mut *tx, &[&waiting]).await?;
        }
        let row = sqlx::query(READ)
            .bind(team.as_uuid())
            .bind(license_id.as_uuid())
            .bind(digest)
            .bind(address.as_slice())
            .fetch_optional(&mut *tx)
            .await
            .map_err(backend)?
            .ok_or(StoreError::NotFound(Entity::License))?;
        let found = own(&row, team, activity)?;
        let admission = match decide(&mut *tx, &found, rules, activity, now).await? {
            Ok(admission) => admission,
            Err(denial) => return Ok(Err(denial)),
        };
        // Room under the cap, decided before anything changes.
        let mut drop_hwids = Vec::new();
        if matches!(admission.hwid, Some(RecordChange::Create)) {
            match room(&mut *tx, &found.license, RecordKind::Hwid, rules, now).await? {
                Some(victims) => drop_hwids = victims,
                None => return Ok(Err(cap_reached(RecordKind::Hwid, rules.max_records))),
            }
        }
        let mut drop_ips = Vec::new();
        if admission.ip == RecordChange::Create {
            match room(&mut *tx, &found.license, RecordKind::Ip, rules, now).await? {
                Some(victims) => drop_ips = victims,
                None => return Ok(Err(cap_reached(RecordKind::Ip, rules.max_records))),
            }
        }
        if !drop_hwids.is_empty() {
            sqlx::query("DELETE FROM hwids WHERE license_id = $1 AND digest = ANY($2)")
                .bind(license_id.as_uuid())
                .bind(&drop_hwids)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        if !drop_ips.is_empty() {
            sqlx::query("DELETE FROM ips WHERE license_id = $1 AND address = ANY($2)")
                .bind(license_id.as_uuid())
                .bind(&drop_ips)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        let license = apply(&mut *tx, &found, &admission, rules, activity, now).await?;
        Ok(Ok(Recorded { license, admission }))
    }
}

impl PgStore {
    /// Refreshes records that already count (`lastSeenAt`, the address's country) and the
    /// license's `lastActiveAt`, in one statement.
    async fn refresh(
        &self,
        license: LicenseId,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<()> {
        let digest = activity.hardware_id.as_ref().map(hwid_digest);
        let country = activity.country;
        sqlx::query(
            "WITH h AS (
               UPDATE hwids SET last_seen_at = greatest(last_seen_at, $4)
               WHERE license_id = $1 AND digest = $2
             ), i AS (
               UPDATE ips SET last_seen_at = greatest(last_seen_at, $4),
                 country = coalesce($5, country), alpha2 = coalesce($6, alpha2),
                 alpha3 = coalesce($7, alpha3)
               WHERE license_id = $1 AND address = $3
             )
             UPDATE licenses SET last_active_at = greatest(last_active_at, $4) WHERE id = $1",
        )
        .bind(license.as_uuid())
        .bind(digest.as_ref().map(|d| d.as_slice()))
        .bind(addr16(activity.ip).as_slice())
        .bind(ms(now))
        .bind(country.map(|c| c.name))
        .bind(country.map(|c| c.alpha2))
        .bind(country.map(|c| c.alpha3))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }
}
