//! Floating sessions on PostgreSQL. The atomic step of a license (its row locked) counts the
//! license's live sessions and writes a started or extended one; a heartbeat's extension is
//! written behind with the license's refreshes when the session as stored stays live long
//! enough (`activity.rs`); removing a session takes the license row, as a round of refreshes
//! does, so that an end never races an extension that would write it back (and an extension
//! only moves a stored session's expiry forward).

use licensing_core::api::requests::{Paging, SortDirection};
use licensing_core::model::LicenseSession;
use licensing_core::store::{Entity, Journal, LicenseSessionStore, Page, StoreError, StoreResult};
use licensing_core::{LicenseId, LicenseSessionId, TeamId, Timestamp};
use sqlx::PgConnection;

use super::PgResult;
use super::tables::LICENSES;
use super::{PgStore, backend, doc, in_tx, json, ms};

/// Session `id` of `license`, as stored.
pub(super) async fn own_session<'e>(
    conn: impl sqlx::PgExecutor<'e>,
    license: LicenseId,
    id: LicenseSessionId,
) -> PgResult<Option<LicenseSession>> {
    let row = sqlx::query("SELECT doc FROM license_sessions WHERE id = $1 AND license_id = $2")
        .bind(id.as_uuid())
        .bind(license.as_uuid())
        .fetch_optional(conn)
        .await?;
    row.map(|row| doc(&row)).transpose()
}

/// How many of `license`'s sessions are live at `now`, counting no further than `up_to`.
pub(super) async fn count_live(
    conn: &mut PgConnection,
    license: LicenseId,
    now: Timestamp,
    up_to: u32,
) -> PgResult<u64> {
    let live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM license_sessions
           WHERE license_id = $1 AND expires_at > $2 LIMIT $3) live",
    )
    .bind(license.as_uuid())
    .bind(ms(now))
    .bind(i64::from(up_to))
    .fetch_one(conn)
    .await?;
    Ok(live.max(0) as u64)
}

/// How long a session must stay live as stored for a heartbeat's extension of it to be written
/// behind (in the next round of refreshes, `refresh.rs`) instead of at once.
pub(super) const EXTEND_BEHIND_SECONDS: u32 = 10;

/// Of that time, how much a written-behind extension leaves for instances whose clocks run
/// ahead: it is dropped unless written this long before the stored session would expire.
pub(super) const EXTEND_SLACK_SECONDS: u32 = 5;

/// Session `id` of `license` as stored, if a heartbeat of `hardware_id` at `now` may extend it
/// (it is live and that device's).
pub(super) async fn extendable(
    pool: &sqlx::PgPool,
    (license, id): (LicenseId, LicenseSessionId),
    hardware_id: Option<&licensing_core::validate::HardwareId>,
    now: Timestamp,
) -> PgResult<Option<LicenseSession>> {
    let session = own_session(pool, license, id).await?;
    Ok(session.filter(|s| s.extendable_by(hardware_id, now)))
}

/// Extends session `id` of `license` for a heartbeat of `hardware_id` from `ip` by `ttl`
/// seconds from `now`, in one statement, if it is live and that device's. Returns the session
/// extended, or `None`.
pub(super) async fn extend(
    pool: &sqlx::PgPool,
    (license, id): (LicenseId, LicenseSessionId),
    (hardware_id, ip): (
        Option<&licensing_core::validate::HardwareId>,
        std::net::IpAddr,
    ),
    ttl: u32,
    now: Timestamp,
) -> PgResult<Option<LicenseSession>> {
    let Some(hardware_id) = hardware_id else {
        return Ok(None);
    };
    let expires = now.plus_seconds(ttl);
    let row = sqlx::query(
        "UPDATE license_sessions SET expires_at = $4,
           doc = doc || jsonb_build_object('expiresAt', $5::text, 'lastSeenAt', $6::text,
                                           'ipAddress', $7::text, 'ttl', $8::int)
         WHERE id = $1 AND license_id = $2 AND expires_at > $3
           AND doc ->> 'hardwareIdentifier' = $9
         RETURNING doc",
    )
    .bind(id.as_uuid())
    .bind(license.as_uuid())
    .bind(ms(now))
    .bind(ms(expires))
    .bind(expires.to_string())
    .bind(now.to_string())
    .bind(ip.to_canonical().to_string())
    .bind(i32::try_from(ttl).unwrap_or(i32::MAX))
    .bind(hardware_id.as_str())
    .fetch_optional(pool)
    .await?;
    row.map(|row| doc(&row)).transpose()
}

/// Writes a started or extended session.
pub(super) async fn write(conn: &mut PgConnection, session: &LicenseSession) -> PgResult<()> {
    sqlx::query(
        "INSERT INTO license_sessions (id, team_id, license_id, expires_at, started_at, doc)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at, doc = excluded.doc",
    )
    .bind(session.id.as_uuid())
    .bind(session.team_id.as_uuid())
    .bind(session.license_id.as_uuid())
    .bind(ms(session.expires_at))
    .bind(ms(session.started_at))
    .bind(json(session))
    .execute(conn)
    .await?;
    Ok(())
}

impl LicenseSessionStore for PgStore {
    async fn list_license_sessions(
        &self,
        team: TeamId,
        license: LicenseId,
        now: Timestamp,
        paging: &Paging,
    ) -> StoreResult<Page<LicenseSession>> {
        // This instance's extensions written behind show.
        self.settle().await?;
        self.require_license(team, license).await?;
        let sql = match paging.direction {
            SortDirection::Desc => {
                "SELECT doc FROM license_sessions
                 WHERE license_id = $1 AND team_id = $2 AND expires_at > $3
                 ORDER BY started_at DESC, id DESC LIMIT $4 OFFSET $5"
            }
            SortDirection::Asc => {
                "SELECT doc FROM license_sessions
                 WHERE license_id = $1 AND team_id = $2 AND expires_at > $3
                 ORDER BY started_at, id LIMIT $4 OFFSET $5"
            }
        };
        let select = sqlx::query(sql)
            .bind(license.as_uuid())
            .bind(team.as_uuid())
            .bind(ms(now));
        let items = super::fetch_page(&self.pool, select, paging)
            .await?
            .iter()
            .map(doc)
            .collect::<PgResult<Vec<LicenseSession>>>()?;
        let total: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM license_sessions
             WHERE license_id = $1 AND team_id = $2 AND expires_at > $3",
        )
        .bind(license.as_uuid())
        .bind(team.as_uuid())
        .bind(ms(now))
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?;
        Ok(super::page(items, total, paging))
    }

    async fn get_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
    ) -> StoreResult<Option<LicenseSession>> {
        self.settle().await?;
        let row = sqlx::query(
            "SELECT doc FROM license_sessions WHERE id = $1 AND license_id = $2 AND team_id = $3",
        )
        .bind(id.as_uuid())
        .bind(license.as_uuid())
        .bind(team.as_uuid())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        Ok(row.map(|row| doc(&row)).transpose()?)
    }

    async fn remove_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
        now: Timestamp,
        expired: bool,
        journal: &Journal,
    ) -> StoreResult<Option<LicenseSession>> {
        let removed: StoreResult<LicenseSession> = in_tx!(self.pool, journal, |tx| {
            async {
                LICENSES
                    .lock(&mut tx, team.as_uuid(), license.as_uuid())
                    .await
                    .map_err(|_| StoreError::NotFound(Entity::LicenseSession))?;
                let row = sqlx::query(
                    "DELETE FROM license_sessions
                     WHERE id = $1 AND license_id = $2 AND team_id = $3
                       AND (expires_at <= $4) = $5
                     RETURNING doc",
                )
                .bind(id.as_uuid())
                .bind(license.as_uuid())
                .bind(team.as_uuid())
                .bind(ms(now))
                .bind(expired)
                .fetch_optional(&mut *tx)
                .await?;
                // Nothing in that state: the transaction (and its journal) is dropped.
                let row = row.ok_or(StoreError::NotFound(Entity::LicenseSession))?;
                doc::<LicenseSession>(&row)
            }
            .await
        });
        match removed {
            Ok(session) => Ok(Some(session)),
            Err(StoreError::NotFound(Entity::LicenseSession)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn expired_license_sessions(
        &self,
        now: Timestamp,
        max: u32,
    ) -> StoreResult<Vec<LicenseSession>> {
        self.settle().await?;
        let query = sqlx::query(
            "SELECT doc FROM license_sessions WHERE expires_at <= $1
             ORDER BY expires_at, id LIMIT $2",
        );
        let select = query.bind(ms(now)).bind(i64::from(max));
        Ok(super::fetch_docs(&self.pool, select).await?)
    }

    async fn count_live_sessions(&self, now: Timestamp) -> StoreResult<u64> {
        let live: i64 =
            sqlx::query_scalar("SELECT count(*) FROM license_sessions WHERE expires_at > $1")
                .bind(ms(now))
                .fetch_one(&self.pool)
                .await
                .map_err(backend)?;
        Ok(live.max(0) as u64)
    }
}
