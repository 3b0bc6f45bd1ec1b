//! The customer portal: sign-in tickets, sessions, and the self-service resets of licenses. A
//! ticket is spent by one `DELETE … RETURNING` (or an `UPDATE` of its tries under its row
//! lock), so that two instances never both redeem it; a budgeted forget runs under the
//! license's row lock, which orders concurrent forgets of one license across instances.

use licensing_core::model::{
    CodeRedeemed, PortalSession, PortalTicket, SelfServiceReset, SelfServiceResets, UsageRef,
};
use licensing_core::store::{Entity, Journal, PortalStore, StoreError, StoreResult};
use licensing_core::{LicenseId, TeamId, Timestamp};
use sqlx::Row as _;

use super::tables::LICENSES;
use super::{PgResult, PgStore, backend, constraint, doc, in_tx, json, ms, team_missing};

impl PortalStore for PgStore {
    async fn create_portal_ticket(&self, ticket: &PortalTicket) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO portal_tickets (token_sha256, id, team_id, expires_at, doc)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&ticket.token_sha256)
        .bind(ticket.id)
        .bind(ticket.team_id.as_uuid())
        .bind(ms(ticket.expires_at))
        .bind(json(ticket))
        .execute(&self.pool)
        .await
        .map_err(|e| constraint(e, &[("portal_tickets_team_id_fkey", team_missing)]))?;
        Ok(())
    }

    async fn redeem_portal_link(
        &self,
        token_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<Option<PortalTicket>> {
        let row = sqlx::query("DELETE FROM portal_tickets WHERE token_sha256 = $1 RETURNING doc")
            .bind(token_sha256)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let ticket: PortalTicket = doc(&row)?;
        Ok((ticket.expires_at > now).then_some(ticket))
    }

    async fn redeem_portal_code(
        &self,
        team: TeamId,
        id: uuid::Uuid,
        code_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<CodeRedeemed> {
        in_tx!(self.pool, |tx| {
            let row = sqlx::query(
                "SELECT token_sha256, doc FROM portal_tickets WHERE team_id = $1 AND id = $2
                 FOR UPDATE",
            )
            .bind(team.as_uuid())
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                return Ok(CodeRedeemed::Gone);
            };
            let token: String = row.try_get("token_sha256")?;
            let mut ticket: PortalTicket = doc(&row)?;
            let spend = |token: String| {
                sqlx::query("DELETE FROM portal_tickets WHERE token_sha256 = $1").bind(token)
            };
            if ticket.expires_at <= now || ticket.tries_left == 0 {
                spend(token).execute(&mut *tx).await?;
                return Ok(CodeRedeemed::Gone);
            }
            let Some(code) = ticket.code_sha256.as_deref() else {
                return Ok(CodeRedeemed::Gone);
            };
            if code == code_sha256 {
                spend(token).execute(&mut *tx).await?;
                return Ok(CodeRedeemed::Signed(ticket));
            }
            ticket.tries_left -= 1;
            if ticket.tries_left == 0 {
                spend(token).execute(&mut *tx).await?;
            } else {
                sqlx::query("UPDATE portal_tickets SET doc = $2 WHERE token_sha256 = $1")
                    .bind(token)
                    .bind(json(&ticket))
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(CodeRedeemed::Wrong {
                tries_left: ticket.tries_left,
            })
        })
    }

    async fn create_portal_session(
        &self,
        session: &PortalSession,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO portal_sessions (id_sha256, team_id, created_at, last_seen_at, doc)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&session.id_sha256)
            .bind(session.team_id.as_uuid())
            .bind(ms(session.created_at))
            .bind(ms(session.last_seen_at))
            .bind(json(session))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("portal_sessions_team_id_fkey", team_missing)]))?;
            Ok(())
        })
    }

    async fn get_portal_session(&self, id_sha256: &str) -> StoreResult<Option<PortalSession>> {
        let row = sqlx::query("SELECT doc, last_seen_at FROM portal_sessions WHERE id_sha256 = $1")
            .bind(id_sha256)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        row.map(|row| session_of(&row)).transpose()
    }

    async fn touch_portal_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        sqlx::query(
            "UPDATE portal_sessions SET last_seen_at = greatest(last_seen_at, $2)
             WHERE id_sha256 = $1",
        )
        .bind(id_sha256)
        .bind(ms(now))
        .execute(&self.behind)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn list_portal_sessions(&self, team: TeamId) -> StoreResult<Vec<PortalSession>> {
        let rows = sqlx::query(
            "SELECT doc, last_seen_at FROM portal_sessions WHERE team_id = $1
             ORDER BY created_at DESC",
        )
        .bind(team.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter().map(session_of).collect()
    }

    async fn delete_portal_session(
        &self,
        team: TeamId,
        id_sha256: &str,
        journal: &Journal,
    ) -> StoreResult<bool> {
        in_tx!(self.pool, |tx| {
            let gone =
                sqlx::query("DELETE FROM portal_sessions WHERE id_sha256 = $1 AND team_id = $2")
                    .bind(id_sha256)
                    .bind(team.as_uuid())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
                    > 0;
            if gone {
                super::write_journal(&mut tx, journal).await?;
            }
            Ok(gone)
        })
    }

    async fn prune_portal(&self, now: Timestamp, created_before: Timestamp) -> StoreResult<u64> {
        let tickets = sqlx::query("DELETE FROM portal_tickets WHERE expires_at <= $1")
            .bind(ms(now))
            .execute(&self.pool)
            .await
            .map_err(backend)?
            .rows_affected();
        let sessions = sqlx::query("DELETE FROM portal_sessions WHERE created_at < $1")
            .bind(ms(created_before))
            .execute(&self.pool)
            .await
            .map_err(backend)?
            .rows_affected();
        Ok(tickets + sessions)
    }
}

fn session_of(row: &sqlx::postgres::PgRow) -> StoreResult<PortalSession> {
    let mut session: PortalSession = doc(row)?;
    let last: i64 = row.try_get("last_seen_at").map_err(backend)?;
    session.last_seen_at = Timestamp::from_millis(last);
    Ok(session)
}

impl PgStore {
    /// Forgets a record for its customer within `budget` (see
    /// [`DeviceStore::forget_within_budget`](licensing_core::store::DeviceStore::forget_within_budget)).
    pub(super) async fn forget_usage_within_budget(
        &self,
        (team, license): (TeamId, LicenseId),
        record: UsageRef,
        budget: SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> PgResult<SelfServiceReset> {
        let (table, id, missing) = match record {
            UsageRef::Hwid(id) => ("hwids", *id.as_uuid(), Entity::Hwid),
            UsageRef::Ip(id) => ("ips", *id.as_uuid(), Entity::Ip),
        };
        in_tx!(self.pool, |tx| {
            LICENSES
                .lock(&mut tx, team.as_uuid(), license.as_uuid())
                .await?;
            let sql = format!("SELECT forgotten FROM {table} WHERE license_id = $1 AND id = $2");
            let forgotten: Option<bool> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(license.as_uuid())
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            match forgotten {
                None => return Err(StoreError::NotFound(missing).into()),
                Some(true) => return Ok(SelfServiceReset::AlreadyForgotten),
                Some(false) => {}
            }
            let earlier: Vec<i64> =
                sqlx::query_scalar("SELECT at FROM self_service_resets WHERE license_id = $1")
                    .bind(license.as_uuid())
                    .fetch_all(&mut *tx)
                    .await?;
            let earlier: Vec<Timestamp> = earlier.into_iter().map(Timestamp::from_millis).collect();
            if let Err(refills_at) = budget.admit(&earlier, now) {
                return Ok(SelfServiceReset::Spent { refills_at });
            }
            sqlx::query("DELETE FROM self_service_resets WHERE license_id = $1 AND at <= $2")
                .bind(license.as_uuid())
                .bind(ms(now) - budget.window_ms())
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO self_service_resets (license_id, at) VALUES ($1, $2)")
                .bind(license.as_uuid())
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
            let sql = format!(
                "UPDATE {table} SET forgotten = true, updated_at = $3
                 WHERE license_id = $1 AND id = $2"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(license.as_uuid())
                .bind(id)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
            super::write_journal(&mut tx, journal).await?;
            Ok(SelfServiceReset::Forgotten)
        })
    }
}
