//! Teams and their API keys.

use licensing_core::crypto::{ApiKeyHash, StoredTeamKeys};
use licensing_core::model::{ApiKeyRecord, SigningKeyChange, Team, TeamFeatures, TeamSettings};
use licensing_core::store::{ApiKeyStore, Entity, Journal, StoreError, StoreResult, TeamStore};
use licensing_core::{ApiKeyId, TeamId, Timestamp};
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::PgResult;
use super::{PgStore, backend, constraint, doc, in_tx, json, ms, opt_ms, team_missing};
use super::{fetch_doc, fetch_docs};

fn api_key(row: &PgRow) -> PgResult<ApiKeyRecord> {
    let mut key: ApiKeyRecord = doc(row)?;
    let last: Option<i64> = row.try_get("last_used_at")?;
    key.last_used_at = last.map(Timestamp::from_millis);
    Ok(key)
}

impl PgStore {
    /// Changes a team's record under a row lock: `change` edits it.
    async fn change_team(
        &self,
        id: TeamId,
        journal: &Journal,
        change: impl FnOnce(&mut Team) -> StoreResult<()>,
    ) -> PgResult<Team> {
        in_tx!(self.pool, journal, |tx| {
            let row = sqlx::query("SELECT doc FROM teams WHERE id = $1 FOR UPDATE")
                .bind(id.as_uuid())
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound(Entity::Team))?;
            let mut team: Team = doc(&row)?;
            change(&mut team)?;
            sqlx::query("UPDATE teams SET doc = $2 WHERE id = $1")
                .bind(id.as_uuid())
                .bind(json(&team))
                .execute(&mut *tx)
                .await?;
            Ok(team)
        })
    }
}

impl TeamStore for PgStore {
    async fn create_team(
        &self,
        team: &Team,
        first_key: &ApiKeyRecord,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query("INSERT INTO teams (id, created_at, doc) VALUES ($1, $2, $3)")
                .bind(team.id.as_uuid())
                .bind(ms(team.created_at))
                .bind(json(team))
                .execute(&mut *tx)
                .await?;
            insert_api_key(&mut tx, first_key).await
        })
    }

    async fn get_team(&self, id: TeamId) -> StoreResult<Option<Team>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM teams WHERE id = $1").bind(id.as_uuid()),
        )
        .await?)
    }

    async fn list_teams(&self) -> StoreResult<Vec<Team>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM teams ORDER BY created_at, id"),
        )
        .await?)
    }

    async fn update_settings(
        &self,
        id: TeamId,
        settings: &TeamSettings,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        Ok(self
            .change_team(id, journal, |team| {
                team.settings = settings.clone();
                team.updated_at = now;
                Ok(())
            })
            .await?)
    }

    async fn update_features(
        &self,
        id: TeamId,
        features: TeamFeatures,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        Ok(self
            .change_team(id, journal, |team| {
                team.features = features;
                team.updated_at = now;
                Ok(())
            })
            .await?)
    }

    async fn change_signing_keys(
        &self,
        id: TeamId,
        change: &SigningKeyChange,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        Ok(self
            .change_team(id, journal, |team| {
                team.change_signing_keys(change)?;
                team.updated_at = now;
                Ok(())
            })
            .await?)
    }

    async fn update_team_keys(
        &self,
        id: TeamId,
        keys: &StoredTeamKeys,
        next: Option<&StoredTeamKeys>,
        now: Timestamp,
    ) -> StoreResult<Team> {
        Ok(self
            .change_team(id, &Journal::NONE, |team| {
                team.set_keys(keys, next);
                team.updated_at = now;
                Ok(())
            })
            .await?)
    }
}

async fn insert_api_key(conn: &mut sqlx::PgConnection, key: &ApiKeyRecord) -> PgResult<()> {
    sqlx::query(
        "INSERT INTO api_keys (id, team_id, hash, created_at, last_used_at, doc)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(key.id.as_uuid())
    .bind(key.team_id.as_uuid())
    .bind(key.hash.as_bytes().as_slice())
    .bind(ms(key.created_at))
    .bind(opt_ms(key.last_used_at))
    .bind(json(key))
    .execute(conn)
    .await
    .map_err(|e| constraint(e, &[("api_keys_team_id_fkey", team_missing)]))?;
    Ok(())
}

impl ApiKeyStore for PgStore {
    async fn create_api_key(&self, key: &ApiKeyRecord, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| insert_api_key(&mut tx, key).await)
    }

    async fn find_api_key(&self, hash: &ApiKeyHash) -> StoreResult<Option<ApiKeyRecord>> {
        let row = sqlx::query("SELECT doc, last_used_at FROM api_keys WHERE hash = $1")
            .bind(hash.as_bytes().as_slice())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        // The index found the row by its hash; compare in constant time all the same.
        Ok(row
            .map(|row| api_key(&row))
            .transpose()
            .map(|key| key.filter(|k| k.hash.ct_eq(hash)))?)
    }

    async fn list_api_keys(&self, team: TeamId) -> StoreResult<Vec<ApiKeyRecord>> {
        Ok(sqlx::query(
            "SELECT doc, last_used_at FROM api_keys WHERE team_id = $1 ORDER BY created_at, id",
        )
        .bind(team.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?
        .iter()
        .map(api_key)
        .collect::<PgResult<_>>()?)
    }

    async fn delete_api_keys(
        &self,
        team: TeamId,
        ids: &[ApiKeyId],
        journal: &Journal,
    ) -> StoreResult<u64> {
        let ids: Vec<uuid::Uuid> = ids.iter().map(|id| *id.as_uuid()).collect();
        in_tx!(self.pool, journal, |tx| {
            let deleted = sqlx::query("DELETE FROM api_keys WHERE team_id = $1 AND id = ANY($2)")
                .bind(team.as_uuid())
                .bind(&ids)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if deleted == 0 {
                return Err(StoreError::NotFound(Entity::ApiKey).into());
            }
            Ok(deleted)
        })
    }

    async fn record_api_key_use(&self, uses: &[(TeamId, ApiKeyId, Timestamp)]) -> StoreResult<()> {
        if uses.is_empty() {
            return Ok(());
        }
        let teams: Vec<uuid::Uuid> = uses.iter().map(|(t, _, _)| *t.as_uuid()).collect();
        let ids: Vec<uuid::Uuid> = uses.iter().map(|(_, k, _)| *k.as_uuid()).collect();
        let times: Vec<i64> = uses.iter().map(|(_, _, at)| ms(*at)).collect();
        sqlx::query(
            "UPDATE api_keys k SET last_used_at = greatest(k.last_used_at, u.at)
             FROM (SELECT team_id, id, max(at) AS at
                   FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS u (team_id, id, at)
                   GROUP BY team_id, id) u
             WHERE k.team_id = u.team_id AND k.id = u.id",
        )
        .bind(&teams)
        .bind(&ids)
        .bind(&times)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }
}

impl PgStore {
    /// Rewrites the tables that hold private keys and secrets into new files (`VACUUM FULL`),
    /// so that the versions of their rows from before a sealing are gone from the tables'
    /// files. (Older WAL segments and earlier dumps of the database still hold them.)
    pub async fn rewrite_secret_tables(&self) -> StoreResult<()> {
        for table in ["teams", "webhook_endpoints", "staff_users", "integrations"] {
            sqlx::query(sqlx::AssertSqlSafe(format!("VACUUM FULL {table}")))
                .execute(&self.pool)
                .await
                .map_err(backend)?;
        }
        Ok(())
    }
}
