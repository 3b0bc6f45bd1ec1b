//! Staff accounts and their sessions: a row each, the record in `doc`, with the columns the
//! lookups use (the lower-cased address is unique in a team).

use licensing_core::model::{StaffSession, StaffUser};
use licensing_core::store::{
    Entity, Journal, STAFF_EMAIL_TAKEN, StaffStore, StoreError, StoreResult,
};
use licensing_core::{StaffId, TeamId, Timestamp};

use super::tables::STAFF;
use super::{PgStore, backend, constraint, doc, in_tx, json, ms, team_missing};
use super::{fetch_doc, fetch_docs};

fn email_taken() -> StoreError {
    StoreError::conflict("email", STAFF_EMAIL_TAKEN)
}

fn user_missing() -> StoreError {
    StoreError::NotFound(Entity::Staff)
}

impl StaffStore for PgStore {
    async fn create_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO staff_users (id, team_id, email, created_at, doc)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(user.id.as_uuid())
            .bind(user.team_id.as_uuid())
            .bind(user.email.as_str().to_lowercase())
            .bind(ms(user.created_at))
            .bind(json(user))
            .execute(&mut *tx)
            .await
            .map_err(|e| {
                constraint(
                    e,
                    &[
                        ("staff_users_team_email_unique", email_taken),
                        ("staff_users_team_id_fkey", team_missing),
                    ],
                )
            })?;
            Ok(())
        })
    }

    async fn get_staff(&self, id: StaffId) -> StoreResult<Option<StaffUser>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM staff_users WHERE id = $1").bind(id.as_uuid()),
        )
        .await?)
    }

    async fn find_staff_by_email(&self, email: &str) -> StoreResult<Vec<StaffUser>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM staff_users WHERE email = $1 ORDER BY created_at, id")
                .bind(email.to_lowercase()),
        )
        .await?)
    }

    async fn list_staff(&self, team: TeamId) -> StoreResult<Vec<StaffUser>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM staff_users WHERE team_id = $1 ORDER BY created_at, id")
                .bind(team.as_uuid()),
        )
        .await?)
    }

    async fn update_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query(
                "UPDATE staff_users SET email = $3, doc = $4 WHERE team_id = $1 AND id = $2",
            )
            .bind(user.team_id.as_uuid())
            .bind(user.id.as_uuid())
            .bind(user.email.as_str().to_lowercase())
            .bind(json(user))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("staff_users_team_email_unique", email_taken)]))?;
            STAFF.changed(done)
        })
    }

    async fn delete_staff(&self, team: TeamId, id: StaffId, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            // Its sessions go with it (ON DELETE CASCADE).
            STAFF.delete(&mut tx, team.as_uuid(), id.as_uuid()).await
        })
    }

    async fn create_session(&self, session: &StaffSession, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO staff_sessions (id_sha256, user_id, last_seen_at, doc)
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(&session.id_sha256)
            .bind(session.user_id.as_uuid())
            .bind(ms(session.last_seen_at))
            .bind(json(session))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("staff_sessions_user_id_fkey", user_missing)]))?;
            Ok(())
        })
    }

    async fn get_session(&self, id_sha256: &str) -> StoreResult<Option<StaffSession>> {
        let row = sqlx::query("SELECT doc, last_seen_at FROM staff_sessions WHERE id_sha256 = $1")
            .bind(id_sha256)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        row.map(|row| {
            use sqlx::Row as _;
            let mut session: StaffSession = doc(&row)?;
            let last: i64 = row.try_get("last_seen_at").map_err(backend)?;
            session.last_seen_at = Timestamp::from_millis(last);
            Ok(session)
        })
        .transpose()
    }

    async fn touch_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        sqlx::query(
            "UPDATE staff_sessions SET last_seen_at = greatest(last_seen_at, $2)
             WHERE id_sha256 = $1",
        )
        .bind(id_sha256)
        .bind(ms(now))
        .execute(&self.pool)
        .await
        .map_err(backend)
        .map(drop)
    }

    async fn delete_session(&self, id_sha256: &str, journal: &Journal) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let gone = sqlx::query("DELETE FROM staff_sessions WHERE id_sha256 = $1")
            .bind(id_sha256)
            .execute(&mut *tx)
            .await
            .map_err(backend)?
            .rows_affected();
        if gone > 0 {
            super::write_journal(&mut tx, journal).await?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn delete_sessions_of(&self, user: StaffId) -> StoreResult<u64> {
        sqlx::query("DELETE FROM staff_sessions WHERE user_id = $1")
            .bind(user.as_uuid())
            .execute(&self.pool)
            .await
            .map_err(backend)
            .map(|done| done.rows_affected())
    }

    async fn delete_stale_sessions(
        &self,
        seen_before: Timestamp,
        created_before: Timestamp,
    ) -> StoreResult<u64> {
        sqlx::query(
            "DELETE FROM staff_sessions
             WHERE last_seen_at < $1
                OR (extract(epoch FROM (doc ->> 'createdAt')::timestamptz) * 1000)::bigint < $2",
        )
        .bind(ms(seen_before))
        .bind(ms(created_before))
        .execute(&self.pool)
        .await
        .map_err(backend)
        .map(|done| done.rows_affected())
    }
}
