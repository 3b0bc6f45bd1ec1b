//! The client API's atomic unit on PostgreSQL (steps 7 and 8), three ways.
//!
//! - A request whose device and address already count (the usual heartbeat) is decided from one
//!   read of the license with its own two records, and its refresh is written behind
//!   (`refresh.rs`): nothing is at stake, so it needs no lock and no commit of its own.
//! - A request that makes or revives records with room under the cap and no session step (a
//!   new device, a new address) is decided from that read too, counting a limit when it is at
//!   stake, and written in one statement that updates the license row only if it is still the
//!   version read (its `xmin`), and the records and events only if the license was updated:
//!   one round trip, no transaction. Every writer that may make a record count writes the
//!   license row (the step below, a registration, a revived record, a restore: `lock_changing`),
//!   so a record counted since the read, or a license changed, changes the version; the update
//!   then waits for that writer's commit, finds another version and writes nothing, and the
//!   request is decided again the third way. A refusal is always decided the third way.
//! - Any other request runs in a transaction that locks the license row (`FOR UPDATE`):
//!   concurrent requests of that license, through any instance, take turns, so a limit is never
//!   exceeded, and other licenses do not wait.
//!
//! A limit is counted only when it is at stake, and records are counted only up to the cap a
//! license may hold.

use licensing_core::model::LicenseSession;
use licensing_core::store::{
    ActivityRules, ActivityStore, Entity, LicenseRead, ReadMark, Recorded, RegisteredDevice,
    StoreError, StoreResult, license_after,
};
use licensing_core::verify::{self, Denial, RecordChange, RecordKind};
use licensing_core::{LicenseId, LicenseKey, LicenseSessionId, TeamId, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row as _};

use super::PgResult;
use super::admission::*;
use super::devices::Prefixed;
use super::licenses::license;
use super::tables::LICENSES;
use super::{PgStore, backend, in_tx, ms};
use crate::store::refresh::{EARLY_ROUND, STRIPES};
use crate::store::{addr16, hwid_digest};
use licensing_core::model::{ClientEvent, DeviceLabel, SessionStep};
use licensing_core::store::Activity;

/// The license with the request's own device and address records, in one read, by `$where`.
macro_rules! own_read {
    ($where:literal) => {
        concat!(
            "SELECT l.doc, l.last_active_at, l.hwid_records, l.ip_records,
       l.xmin::text::int8 AS version,
       h.id AS h_id, h.identifier AS h_identifier, h.forgotten AS h_forgotten,
       h.last_seen_at AS h_last_seen_at, h.created_at AS h_created_at,
       h.updated_at AS h_updated_at, h.name AS h_name, h.platform AS h_platform,
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

/// Reads the `h_`/`i_` prefixed columns of a joined row as records.
fn own(row: &PgRow, team: TeamId, activity: &Activity) -> PgResult<Own> {
    let l = license(row)?;
    let license_id = l.id;
    let hwid = match row.try_get::<Option<uuid::Uuid>, _>("h_id")? {
        None => None,
        Some(_) => Some(Prefixed { row, prefix: "h_" }.hwid(team, license_id)?),
    }
    .filter(|h| activity.hardware_id.as_ref() == Some(&h.identifier));
    let ip = match row.try_get::<Option<uuid::Uuid>, _>("i_id")? {
        None => None,
        Some(_) => Some(Prefixed { row, prefix: "i_" }.ip(team, license_id)?),
    }
    .filter(|r| r.address == activity.ip.to_canonical());
    let held = (
        i64::from(row.try_get::<i32, _>("hwid_records")?),
        i64::from(row.try_get::<i32, _>("ip_records")?),
    );
    Ok(Own {
        license: l,
        hwid,
        ip,
        held,
        version: Some(row.try_get("version")?),
    })
}

/// The license `select` finds (`$1` the team and `$2` the license's id or key, bound by the
/// caller) with the request's own device and address records (`$3` and `$4`, bound here); `None`
/// without it. A request without a hardware identifier binds none, which no record matches.
async fn read_own<'e>(
    conn: impl sqlx::PgExecutor<'e>,
    select: super::DocQuery<'_>,
    team: TeamId,
    activity: &Activity,
) -> PgResult<Option<Own>> {
    let row = select
        .bind(activity.hardware_id.as_ref().map(hwid_digest))
        .bind(addr16(activity.ip))
        .fetch_optional(conn)
        .await?;
    row.map(|row| own(&row, team, activity)).transpose()
}

impl ActivityStore for PgStore {
    async fn read_license_for_activity(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> StoreResult<Option<LicenseRead>> {
        let select = sqlx::query(READ_BY_KEY)
            .bind(team.as_uuid())
            .bind(key.as_str());
        let Some(found) = read_own(&self.pool, select, team, activity).await? else {
            return Ok(None);
        };
        let counts = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(Some(LicenseRead {
            license: self.refreshes.overlay(found.license),
            own: Some((found.hwid, found.ip)),
            mark: found.version.map(|version| ReadMark {
                version,
                records: (counts(found.held.0), counts(found.held.1)),
            }),
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
        let counts = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let found = Own {
            license: read.license.clone(),
            hwid: hwid.clone(),
            ip: ip.clone(),
            // Without a mark (a cached read), only the locked step needs them, and it reads
            // the license again.
            held: read
                .mark
                .map_or((0, 0), |m| (counts(m.records.0), counts(m.records.1))),
            version: read.mark.map(|m| m.version),
        };
        if let Some(decided) = self.admit_counted(&found, rules, activity, now).await? {
            return Ok(decided);
        }
        if let Some(decided) = self.step_if_unchanged(&found, rules, activity, now).await? {
            return Ok(decided);
        }
        Ok(self
            .locked_step(read.license.team_id, read.license.id, rules, activity, now)
            .await?)
    }

    async fn record_activity(
        &self,
        team: TeamId,
        license_id: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        // The hot path: records that already count need no lock (see the module docs).
        let select = sqlx::query(READ)
            .bind(team.as_uuid())
            .bind(license_id.as_uuid());
        let found = read_own(&self.pool, select, team, activity)
            .await?
            .ok_or(StoreError::NotFound(Entity::License))?;
        if let Some(decided) = self.admit_counted(&found, rules, activity, now).await? {
            return Ok(decided);
        }
        if let Some(decided) = self.step_if_unchanged(&found, rules, activity, now).await? {
            return Ok(decided);
        }
        Ok(self
            .locked_step(team, license_id, rules, activity, now)
            .await?)
    }

    async fn register_device(
        &self,
        team: TeamId,
        license_id: LicenseId,
        rules: &ActivityRules<'_>,
        hardware_id: &licensing_core::validate::HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> StoreResult<Result<RegisteredDevice, Denial>> {
        let registered: PgResult<_> = in_tx!(self.pool, |tx| {
            self.register_in(
                &mut tx,
                (team, license_id),
                rules,
                hardware_id,
                override_limit,
                now,
            )
            .await
        });
        Ok(registered?)
    }
}

impl PgStore {
    /// [`ActivityStore::register_device`]'s body, in a transaction that holds the license row.
    async fn register_in(
        &self,
        tx: &mut PgConnection,
        (team, license_id): (TeamId, LicenseId),
        rules: &ActivityRules<'_>,
        hardware_id: &licensing_core::validate::HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> PgResult<Result<RegisteredDevice, Denial>> {
        // It may revive a forgotten record: the row's version changes (see the module docs).
        LICENSES
            .lock_changing(tx, team.as_uuid(), license_id.as_uuid())
            .await?;
        if let Some(waiting) = self.refreshes.take_license(license_id) {
            super::refresh::write(&mut *tx, &[&waiting]).await?;
        }
        // The device's own record, read as a request's is (the unspecified address is no
        // client's: no address record is read or written).
        let activity = Activity {
            hardware_id: Some(hardware_id.clone()),
            label: DeviceLabel::NONE,
            ip: std::net::IpAddr::from([0, 0, 0, 0]),
            country: None,
            session: SessionStep::None,
        };
        let select = sqlx::query(READ)
            .bind(team.as_uuid())
            .bind(license_id.as_uuid());
        let found = read_own(&mut *tx, select, team, &activity)
            .await?
            .ok_or(StoreError::NotFound(Entity::License))?;
        let decided = found.with_terms(rules.policies);
        let timeout = rules.settings.hwid_timeout;
        // Counted only when the limit is at stake (the counting is a statement of its own).
        let at_stake = decided.license.hwid_limit.is_some_and(|l| l > 0)
            && !found
                .hwid
                .as_ref()
                .is_some_and(|h| verify::counts(h.forgotten, h.last_seen_at, timeout, now));
        let held = if at_stake {
            counted(&mut *tx, &decided.license, RecordKind::Hwid, timeout, now)
                .await?
                .0
        } else {
            0
        };
        let plan = match verify::admit_device(
            &decided.license,
            rules.settings,
            found.hwid.as_ref(),
            now,
            override_limit,
            || Ok::<_, StoreError>(held),
        )? {
            Ok(plan) => plan,
            Err(denial) => return Ok(Err(denial)),
        };
        let digest = hwid_digest(hardware_id).to_vec();
        let (hwid, created) = match (&plan.change, &found.hwid) {
            (RecordChange::Refresh { .. }, Some(old)) => {
                let mut record = old.clone();
                licensing_core::store::refresh_hwid(&mut record, &DeviceLabel::NONE, now);
                sqlx::query(
                    "UPDATE hwids SET last_seen_at = $3, updated_at = $4, forgotten = false
                     WHERE license_id = $1 AND digest = $2",
                )
                .bind(license_id.as_uuid())
                .bind(&digest)
                .bind(ms(record.last_seen_at))
                .bind(ms(record.updated_at))
                .execute(&mut *tx)
                .await?;
                (record, false)
            }
            _ => {
                if found.held.0 >= i64::from(rules.max_records) {
                    return Ok(Err(licensing_core::store::cap_reached(
                        RecordKind::Hwid,
                        rules.max_records,
                    )));
                }
                let record = licensing_core::store::new_hwid(
                    &found.license,
                    hardware_id,
                    &DeviceLabel::NONE,
                    now,
                );
                sqlx::query(
                    "WITH hwid AS (INSERT INTO hwids (license_id, digest, id, identifier,
                       forgotten, last_seen_at, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, false, $5, $5, $5))
                     UPDATE licenses SET hwid_records = hwid_records + 1 WHERE id = $1",
                )
                .bind(license_id.as_uuid())
                .bind(&digest)
                .bind(record.id.as_uuid())
                .bind(hardware_id.as_str())
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
                for event in licensing_core::model::admission_events(
                    rules.events,
                    Some(&record),
                    &decided.license,
                    false,
                    now,
                ) {
                    super::webhooks::insert_event(&mut *tx, &event).await?;
                }
                (record, true)
            }
        };
        Ok(Ok(RegisteredDevice {
            hwid,
            created,
            overrode: plan.overrode,
        }))
    }

    /// Admits a request whose records already count, from what was read: its refresh is
    /// written behind while the records as stored keep counting for the margin (see
    /// `refresh.rs`), at once otherwise. A heartbeat's extension of its session is one
    /// conditional update of the session's row (it decides no limit: a live session stays live,
    /// an ended or expired one is never written back). `None` when the request needs the atomic
    /// step (a session's start always does).
    async fn admit_counted(
        &self,
        found: &Own,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> PgResult<Option<Result<Recorded, Denial>>> {
        if matches!(activity.session, SessionStep::Start { .. })
            || activity.relabels(found.hwid.as_ref())
        {
            return Ok(None);
        }
        let terms = rules.policies.effective(&found.license);
        let admit = |at: Timestamp| {
            verify::admit_counted_own(
                &terms,
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
        let session = match activity.session {
            SessionStep::Extend { id, ttl } => {
                match self
                    .extend_session(license.id, (id, ttl), activity, now)
                    .await?
                {
                    Some(session) => Some(session),
                    None => return Ok(Some(Err(verify::session_not_found()))),
                }
            }
            _ => None,
        };
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
        Ok(Some(Ok(Recorded {
            license: license_after(license, &admission, now),
            admission,
            session,
            decided_from_read: true,
        })))
    }

    /// A heartbeat's extension of session `id` by `ttl` seconds, if the session is live and the
    /// request's device's (it decides no limit: a live session stays live). Written behind,
    /// with the next round of refreshes, when the session as stored stays live for
    /// [`EXTEND_BEHIND_SECONDS`](super::floating::EXTEND_BEHIND_SECONDS) more, so that every
    /// instance counts it as the extension would meanwhile; written at once otherwise. An
    /// extension the round could not write in time is dropped: the session then expires as
    /// stored, and the device's next heartbeat is told so.
    async fn extend_session(
        &self,
        license: LicenseId,
        (id, ttl): (LicenseSessionId, u32),
        activity: &Activity,
        now: Timestamp,
    ) -> PgResult<Option<LicenseSession>> {
        use super::floating::{EXTEND_BEHIND_SECONDS, EXTEND_SLACK_SECONDS, extend, extendable};
        let device = activity.hardware_id.as_ref();
        let Some(stored) = extendable(&self.pool, (license, id), device, now).await? else {
            return Ok(None);
        };
        let left = stored.expires_at.as_millis() - now.as_millis();
        if left < i64::from(EXTEND_BEHIND_SECONDS) * 1_000 {
            return extend(&self.pool, (license, id), (device, activity.ip), ttl, now).await;
        }
        let extended = stored.extended(activity.ip, ttl, now);
        let slack = i64::from(EXTEND_SLACK_SECONDS) * 1_000;
        let until = std::time::Instant::now()
            + std::time::Duration::from_millis(u64::try_from(left - slack).unwrap_or(0));
        if self.refreshes.add_session(extended.clone(), until, now) >= EARLY_ROUND / STRIPES {
            self.wake.notify_one();
        }
        Ok(Some(extended))
    }

    /// The atomic step without the row lock, for a request that makes or revives records with
    /// room under the cap and no session step: decided from the read (a limit counted when it
    /// is at stake), written in one statement only if the license row is still the version read
    /// (see the module docs). `None` when the request needs the locked step: a read without a
    /// version, a session step, a license's first request (which writes the license whole), a
    /// record at the cap, a refusal (decided again under the lock, on what holds then), or a
    /// license row written since the read.
    async fn step_if_unchanged(
        &self,
        found: &Own,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> PgResult<Option<Result<Recorded, Denial>>> {
        let Some(version) = found.version else {
            return Ok(None);
        };
        if !matches!(activity.session, SessionStep::None) {
            return Ok(None);
        }
        let decided = found.with_terms(rules.policies);
        let mut conn = self.pool.acquire().await?;
        let admission = match decide(&mut conn, &decided, rules, activity, now).await? {
            (Ok(admission), _) => admission,
            // Counted on the license as read: the refusal holds at that count's moment.
            (Err(denial), true) => return Ok(Some(Err(denial))),
            (Err(_), false) => return Ok(None),
        };
        let hwid_new = matches!(admission.hwid, Some(RecordChange::Create));
        let ip_new = admission.ip == RecordChange::Create;
        let cap = i64::from(rules.max_records);
        if admission.activate.is_some()
            || (hwid_new && found.held.0 >= cap)
            || (ip_new && found.held.1 >= cap)
        {
            return Ok(None);
        }
        let counts = (i32::from(hwid_new), i32::from(ip_new));
        let written = apply(
            &mut conn,
            found,
            &admission,
            (rules, counts),
            activity,
            (now, Some(version)),
        )
        .await?;
        Ok(written.map(|license| {
            Ok(Recorded {
                license,
                admission,
                session: None,
                decided_from_read: false,
            })
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
    ) -> PgResult<Result<Recorded, Denial>> {
        in_tx!(self.pool, |tx| {
            self.step_in(&mut tx, (team, license_id), rules, activity, now)
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
        now: Timestamp,
    ) -> PgResult<Result<Recorded, Denial>> {
        // Lock first, then read in a statement of its own: under READ COMMITTED a
        // statement sees what committed before it started, so the read sees every record
        // the previous holder of the lock wrote (a join locked in one statement would not).
        LICENSES
            .lock(tx, team.as_uuid(), license_id.as_uuid())
            .await?;
        // This instance's waiting refreshes of the license first, so that its records are
        // counted and pruned by their latest times.
        if let Some(waiting) = self.refreshes.take_license(license_id) {
            super::refresh::write(&mut *tx, &[&waiting]).await?;
        }
        let select = sqlx::query(READ)
            .bind(team.as_uuid())
            .bind(license_id.as_uuid());
        let found = read_own(&mut *tx, select, team, activity)
            .await?
            .ok_or(StoreError::NotFound(Entity::License))?;
        // Decided with the terms in effect (its policy's, live); written as stored.
        let decided = found.with_terms(rules.policies);
        let admission = match decide(&mut *tx, &decided, rules, activity, now).await?.0 {
            Ok(admission) => admission,
            Err(denial) => return Ok(Err(denial)),
        };
        // The session step, decided before anything changes.
        let own_session = match activity.session {
            SessionStep::Extend { id, .. } => {
                super::floating::own_session(&mut *tx, license_id, id).await?
            }
            _ => None,
        };
        let live = match activity.session {
            SessionStep::Start { .. } => {
                let bound = verify::live_session_bound(&decided.license, rules.settings);
                Some(super::floating::count_live(&mut *tx, license_id, now, bound).await?)
            }
            _ => None,
        };
        let session = match verify::admit_session(
            &decided.license,
            rules.settings,
            activity.session,
            (activity.hardware_id.as_ref(), activity.ip),
            own_session.as_ref(),
            now,
            |_| live.ok_or(StoreError::backend("sessions were not counted")),
        )? {
            Ok(session) => session,
            Err(denial) => return Ok(Err(denial)),
        };
        // Room under the cap, decided before anything changes.
        let hwid_new = matches!(admission.hwid, Some(RecordChange::Create));
        let drop_hwids = match room(tx, &decided, (RecordKind::Hwid, hwid_new), rules, now).await? {
            Ok(victims) => victims,
            Err(denial) => return Ok(Err(denial)),
        };
        let ip_new = admission.ip == RecordChange::Create;
        let drop_ips = match room(tx, &decided, (RecordKind::Ip, ip_new), rules, now).await? {
            Ok(victims) => victims,
            Err(denial) => return Ok(Err(denial)),
        };
        drop_records(tx, license_id, RecordKind::Hwid, &drop_hwids).await?;
        drop_records(tx, license_id, RecordKind::Ip, &drop_ips).await?;
        // The license's counts follow the records made and dropped.
        let hwids = i64::from(hwid_new) - drop_hwids.len() as i64;
        let ips = i64::from(ip_new) - drop_ips.len() as i64;
        let counts = (
            i32::try_from(hwids).unwrap_or(0),
            i32::try_from(ips).unwrap_or(0),
        );
        let license = apply(
            &mut *tx,
            &found,
            &admission,
            (rules, counts),
            activity,
            (now, None),
        )
        .await?
        .ok_or_else(|| StoreError::backend("the license row held was not written"))?;
        if let Some(session) = &session {
            super::floating::write(&mut *tx, session).await?;
            if matches!(activity.session, SessionStep::Start { .. })
                && rules.events.wants(ClientEvent::SessionStarted)
            {
                let event = ClientEvent::SessionStarted.session_event(&license, session, now);
                super::webhooks::insert_event(&mut *tx, &event).await?;
            }
        }
        Ok(Ok(Recorded {
            license,
            admission,
            session,
            decided_from_read: false,
        }))
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
    ) -> PgResult<()> {
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
        .await?;
        Ok(())
    }
}

impl PgStore {
    /// The licenses whose counts of device and address records disagree with their records,
    /// one sentence each (`check`).
    pub async fn check_record_counts(&self) -> StoreResult<Vec<String>> {
        let rows = sqlx::query(
            "SELECT l.id, l.hwid_records, l.ip_records,
               (SELECT count(*) FROM hwids h WHERE h.license_id = l.id) AS hwids,
               (SELECT count(*) FROM ips i WHERE i.license_id = l.id) AS ips
             FROM licenses l
             WHERE l.hwid_records <> (SELECT count(*) FROM hwids h WHERE h.license_id = l.id)
                OR l.ip_records <> (SELECT count(*) FROM ips i WHERE i.license_id = l.id)",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let id: uuid::Uuid = row.try_get("id").map_err(backend)?;
                let counted: (i32, i32) = (
                    row.try_get("hwid_records").map_err(backend)?,
                    row.try_get("ip_records").map_err(backend)?,
                );
                let held: (i64, i64) = (
                    row.try_get("hwids").map_err(backend)?,
                    row.try_get("ips").map_err(backend)?,
                );
                Ok(format!(
                    "license {id} counts {} devices and {} addresses but holds {} and {}",
                    counted.0, counted.1, held.0, held.1
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::api::ResultCode;
    use licensing_core::model::{IpRecord, TeamSettings};
    use licensing_core::store::{
        Activity, ActivityRules, ActivityStore, DeviceStore, Journal, LicenseStore, prune_batch,
        testing,
    };
    use licensing_core::{IpId, Timestamp};
    use serde_json::Value;

    use super::*;

    /// Rows the scans of an `EXPLAIN (ANALYZE, FORMAT JSON)` plan read: returned or filtered
    /// out, over every loop.
    fn rows_read(plan: &Value) -> u64 {
        let own = if plan["Node Type"]
            .as_str()
            .is_some_and(|t| t.contains("Scan"))
        {
            let loops = plan["Actual Loops"].as_u64().unwrap_or(1);
            let rows = plan["Actual Rows"].as_u64().unwrap_or(0)
                + plan["Rows Removed by Filter"].as_u64().unwrap_or(0)
                + plan["Rows Removed by Index Recheck"].as_u64().unwrap_or(0);
            rows * loops
        } else {
            0
        };
        own + plan["Plans"]
            .as_array()
            .map_or(0, |plans| plans.iter().map(rows_read).sum())
    }

    /// A store on a fresh database with a team and a license `shape` sets up.
    async fn one_license(
        url: String,
        shape: impl FnOnce(&mut licensing_core::model::License),
    ) -> (
        PgStore,
        licensing_core::model::Team,
        licensing_core::model::License,
    ) {
        let store = PgStore::connect(&url, 4).await.unwrap();
        let team = testing::team(&store, "A").await;
        let mut license = testing::license(team.id, Timestamp::from_millis(1_800_000_000_000));
        shape(&mut license);
        store
            .create_license(&license, &Journal::NONE)
            .await
            .unwrap();
        (store, team, license)
    }

    /// A new device is admitted in one statement, without the row lock, from the read; a read
    /// the license has changed since (its limit lowered) writes nothing that way, and the
    /// request is decided again under the lock, on the license as it is; a refusal counted on
    /// the license as read is answered without the lock.
    #[test]
    fn a_new_device_is_written_in_one_statement_only_if_the_license_is_unchanged() {
        crate::testing::postgres::on_fresh_database(|url| async move {
            let (store, team, mut license) = one_license(url, |l| l.hwid_limit = Some(3)).await;
            let now = license.created_at;
            let rules = ActivityRules::new(&team.settings);
            let device = |name: &str| Activity {
                label: Default::default(),
                hardware_id: Some(
                    licensing_core::validate::HardwareId::parse(&format!("{name}-hardware"))
                        .unwrap(),
                ),
                ip: std::net::IpAddr::from([198, 51, 100, 1]),
                country: None,
                session: Default::default(),
            };
            let read = |activity: Activity| {
                let store = &store;
                let key = license.license_key;
                async move {
                    let select = sqlx::query(READ_BY_KEY)
                        .bind(team.id.as_uuid())
                        .bind(key.as_str());
                    read_own(&store.pool, select, team.id, &activity)
                        .await
                        .unwrap()
                        .unwrap()
                }
            };
            // Two devices, each in one statement (the second read sees the first's records).
            for name in ["first", "second"] {
                let found = read(device(name)).await;
                assert!(found.version.is_some());
                let recorded = store
                    .step_if_unchanged(&found, &rules, &device(name), now)
                    .await
                    .unwrap()
                    .expect("decided without the lock")
                    .expect("admitted");
                assert!(!recorded.decided_from_read);
            }
            // A third read, then the limit lowered to two: the read's version is gone.
            let stale = read(device("third")).await;
            license.hwid_limit = Some(2);
            store
                .update_license(&license, &Journal::NONE)
                .await
                .unwrap();
            let unlocked = store
                .step_if_unchanged(&stale, &rules, &device("third"), now)
                .await
                .unwrap();
            assert!(unlocked.is_none(), "written from a stale read");
            let refused = store
                .record_activity(team.id, license.id, &rules, &device("third"), now)
                .await
                .unwrap()
                .expect_err("the lowered limit");
            assert_eq!(refused.code, ResultCode::HwidLimitReached);
            // A read of the license as it is now refuses without the lock: its count saw the
            // version read.
            let fresh = read(device("third")).await;
            let refused = store
                .step_if_unchanged(&fresh, &rules, &device("third"), now)
                .await
                .unwrap()
                .expect("decided without the lock")
                .expect_err("the limit");
            assert_eq!(refused.code, ResultCode::HwidLimitReached);
            // What is stored: two devices, counted as held, and one address.
            let counts: (i32, i32) =
                sqlx::query_as("SELECT hwid_records, ip_records FROM licenses WHERE id = $1")
                    .bind(license.id.as_uuid())
                    .fetch_one(&store.pool)
                    .await
                    .unwrap();
            assert_eq!(counts, (2, 1));
            assert!(store.check_record_counts().await.unwrap().is_empty());
        });
    }

    /// A heartbeat's extension of a session that stays live as stored is answered at once and
    /// written with the next round; one the round could not write in time is dropped.
    #[test]
    fn a_session_extension_is_written_behind_only_while_the_session_is_live_as_stored() {
        use licensing_core::LicenseSessionId;
        use licensing_core::model::SessionStep;
        crate::testing::postgres::on_fresh_database(|url| async move {
            let (store, team, license) = one_license(url, |l| l.session_limit = Some(1)).await;
            let now = license.created_at;
            let rules = ActivityRules::new(&team.settings);
            let id = LicenseSessionId::new();
            let step = |session: SessionStep| Activity {
                label: Default::default(),
                hardware_id: Some(
                    licensing_core::validate::HardwareId::parse("machine-hardware").unwrap(),
                ),
                ip: std::net::IpAddr::from([198, 51, 100, 1]),
                country: None,
                session,
            };
            let stored = || async {
                sqlx::query_scalar::<_, i64>(
                    "SELECT expires_at FROM license_sessions WHERE id = $1",
                )
                .bind(id.as_uuid())
                .fetch_one(&store.pool)
                .await
                .unwrap()
            };
            let record = |session: SessionStep, at: Timestamp| {
                let (store, rules, activity) = (&store, &rules, step(session));
                async move {
                    store
                        .record_activity(team.id, license.id, rules, &activity, at)
                        .await
                        .unwrap()
                        .unwrap()
                }
            };
            record(SessionStep::Start { id, ttl: 900 }, now).await;
            // The license row held elsewhere: no round writes its refreshes meanwhile.
            let mut holder = store.pool.begin().await.unwrap();
            sqlx::query("SELECT 1 FROM licenses WHERE id = $1 FOR UPDATE")
                .bind(license.id.as_uuid())
                .execute(&mut *holder)
                .await
                .unwrap();
            let later = now.plus_seconds(60);
            let extended = record(SessionStep::Extend { id, ttl: 900 }, later)
                .await
                .session
                .unwrap();
            assert_eq!(extended.expires_at, later.plus_seconds(900));
            // Not written: the stored session is live for 840 s more.
            assert_eq!(stored().await, ms(now.plus_seconds(900)));
            holder.commit().await.unwrap();
            store.flush().await.unwrap();
            assert_eq!(stored().await, ms(later.plus_seconds(900)));
            // An extension whose time to be written has passed is dropped.
            let too_late = extended.extended(extended.ip_address, 900, later.plus_seconds(60));
            store.refreshes.add_session(
                too_late,
                std::time::Instant::now() - std::time::Duration::from_secs(1),
                later,
            );
            store.flush().await.unwrap();
            assert_eq!(stored().await, ms(later.plus_seconds(900)));
            // Near its stored end, an extension is written at once.
            let near_end = later.plus_seconds(895);
            record(SessionStep::Extend { id, ttl: 900 }, near_end).await;
            assert_eq!(stored().await, ms(near_end.plus_seconds(900)));
        });
    }

    /// BUG-9 on PostgreSQL: the admission of a new address to a license holding 2,000 records
    /// reads no more rows than its decision needs, by the plans of the very statements it runs
    /// (generic plans among them: the sixth execution of a prepared statement may use one).
    #[test]
    fn a_full_license_admits_reading_only_what_decides() {
        const HELD: u32 = 2_000;
        crate::testing::postgres::on_fresh_database(|url| async move {
            let store = PgStore::connect(&url, 4).await.unwrap();
            let team = testing::team(&store, "A").await;
            let now = Timestamp::from_millis(1_800_000_000_000);
            let old = Timestamp::from_millis(now.as_millis() - 48 * 3_600_000);
            let mut license = testing::license(team.id, now);
            license.ip_limit = Some(5);
            store
                .create_license(&license, &Journal::NONE)
                .await
                .unwrap();
            let ips: Vec<IpRecord> = (0..HELD)
                .map(|i| IpRecord {
                    id: IpId::new(),
                    address: std::net::IpAddr::from([10, 0, (i / 256) as u8, i as u8]),
                    forgotten: i % 100 == 50,
                    country: None,
                    alpha2: None,
                    alpha3: None,
                    license_id: license.id,
                    team_id: team.id,
                    last_seen_at: if i < 3 { now } else { old },
                    created_at: old,
                    updated_at: old,
                })
                .collect();
            store
                .restore_usage(team.id, license.id, &[], &ips)
                .await
                .unwrap();
            sqlx::query("ANALYZE ips")
                .execute(&store.pool)
                .await
                .unwrap();
            let mut conn = store.pool.acquire().await.unwrap();
            // Force generic plans, the worst case of a prepared statement.
            sqlx::query("SET plan_cache_mode = force_generic_plan")
                .execute(&mut *conn)
                .await
                .unwrap();
            let explain = |sql: &str| format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}");
            let cut = now.as_millis() - 60 * 60_000;
            // Counting with a timeout: the records within it (three), no more.
            let (sql, at_most) = counting_sql(RecordKind::Ip, true, Some(5));
            let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain(sql)))
                .bind(license.id.as_uuid())
                .bind(cut)
                .bind(at_most)
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            // (And the license's row, for its version.)
            assert!(rows_read(&plan[0]["Plan"]) <= 5 + 1, "{plan:#}");
            // Without one: up to the limit.
            let (sql, at_most) = counting_sql(RecordKind::Ip, false, Some(5));
            let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain(sql)))
                .bind(license.id.as_uuid())
                .bind(at_most)
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert!(rows_read(&plan[0]["Plan"]) <= 5 + 1, "{plan:#}");
            // Making room: a batch of the oldest that count against nothing, of each kind.
            let batch = prune_batch(HELD) as i64;
            for (limited, timed) in [(true, true), (false, false), (true, false)] {
                let (sql, binds_cutoff) = victims_sql(RecordKind::Ip, limited, timed);
                let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(explain(sql)))
                    .bind(license.id.as_uuid())
                    .bind(batch);
                if binds_cutoff {
                    query = query.bind(cut);
                }
                let plan: Value = query.fetch_one(&mut *conn).await.unwrap();
                let read = rows_read(&plan[0]["Plan"]);
                assert!(
                    read <= 2 * batch as u64 + 2,
                    "{limited} {timed}: {read}: {plan:#}"
                );
            }
            drop(conn);

            // And the step itself: at the cap, room is made and the new address admitted;
            // then the limit holds.
            let settings = TeamSettings {
                ip_timeout: Some(60),
                ..TeamSettings::default()
            };
            let mut rules = ActivityRules::new(&settings);
            rules.max_records = HELD;
            let new_address = |n: u8| Activity {
                label: Default::default(),
                hardware_id: None,
                ip: std::net::IpAddr::from([198, 51, 100, n]),
                country: None,
                session: Default::default(),
            };
            for n in 1..=2 {
                store
                    .record_activity(team.id, license.id, &rules, &new_address(n), now)
                    .await
                    .unwrap()
                    .expect("admitted");
            }
            let refused = store
                .record_activity(team.id, license.id, &rules, &new_address(3), now)
                .await
                .unwrap()
                .expect_err("the limit");
            assert_eq!(refused.code, ResultCode::IpLimitReached);
            assert!(store.check_record_counts().await.unwrap().is_empty());
        });
    }
}
