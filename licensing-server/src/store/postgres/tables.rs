//! The tables of a team's records: each keyed by `(team_id, id)`, the record as JSON in `doc`,
//! and the statements every such table answers (read one, read several, lock one, delete one).

use licensing_core::TeamId;
use licensing_core::store::{Entity, StoreError};
use serde::de::DeserializeOwned;
use sqlx::PgPool;
use sqlx::postgres::PgQueryResult;
use uuid::Uuid;

use super::PgResult;
use super::{fetch_doc, fetch_docs};

/// A table of a team's records and its statements (`$1` the team, `$2` the id or ids).
pub(crate) struct Table {
    /// What a missing row is reported as.
    entity: Entity,
    get: &'static str,
    get_many: &'static str,
    lock: &'static str,
    lock_changing: &'static str,
    delete: &'static str,
}

macro_rules! tables {
    ($($name:ident = $table:literal: $entity:ident;)*) => {$(
        #[doc = concat!("`", $table, "`.")]
        pub(crate) const $name: Table = Table {
            entity: Entity::$entity,
            get: concat!("SELECT doc FROM ", $table, " WHERE team_id = $1 AND id = $2"),
            get_many: concat!("SELECT doc FROM ", $table, " WHERE team_id = $1 AND id = ANY($2)"),
            lock: concat!("SELECT 1 FROM ", $table, " WHERE team_id = $1 AND id = $2 FOR UPDATE"),
            lock_changing: concat!(
                "UPDATE ", $table, " SET id = id WHERE team_id = $1 AND id = $2 RETURNING 1"
            ),
            delete: concat!("DELETE FROM ", $table, " WHERE team_id = $1 AND id = $2"),
        };
    )*};
}

tables! {
    LICENSES = "licenses": License;
    PRODUCTS = "products": Product;
    RELEASES = "releases": Release;
    CUSTOMERS = "customers": Customer;
    BLACKLIST = "blacklist": Blacklist;
    WEBHOOKS = "webhook_endpoints": Webhook;
    STAFF = "staff_users": Staff;
}

impl Table {
    /// The record `id` of `team`, if there is one.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        pool: &PgPool,
        team: TeamId,
        id: &Uuid,
    ) -> PgResult<Option<T>> {
        fetch_doc(pool, sqlx::query(self.get).bind(team.as_uuid()).bind(id)).await
    }

    /// The records of `team` with ids `ids`, in the order of `ids` (an id not found is left
    /// out); `id_of` reads a record's id.
    pub(crate) async fn get_many<T, I>(
        &self,
        pool: &PgPool,
        team: TeamId,
        ids: &[I],
        id_of: fn(&T) -> I,
    ) -> PgResult<Vec<T>>
    where
        T: DeserializeOwned + Clone,
        I: AsRef<Uuid> + PartialEq,
    {
        let wanted: Vec<Uuid> = ids.iter().map(|id| *id.as_ref()).collect();
        let query = sqlx::query(self.get_many)
            .bind(team.as_uuid())
            .bind(&wanted);
        let found: Vec<T> = fetch_docs(pool, query).await?;
        Ok(ids
            .iter()
            .filter_map(|id| found.iter().find(|record| id_of(record) == *id).cloned())
            .collect())
    }

    /// Locks the row `FOR UPDATE` for the rest of the transaction; `NotFound` when the team has
    /// none with that id. Writers of a license's device and address rows take its row first
    /// (see `refresh.rs`).
    pub(crate) async fn lock(
        &self,
        conn: &mut sqlx::PgConnection,
        team: &Uuid,
        id: &Uuid,
    ) -> PgResult<()> {
        self.hold(self.lock, conn, team, id).await
    }

    /// Locks the row as [`lock`](Self::lock) does, writing it unchanged: the row's version
    /// changes, so a statement conditional on the version read before (the client API's
    /// one-statement admission, `activity.rs`) writes nothing if this transaction commits
    /// first. For a writer of a license's records that may make one count again without
    /// writing the license itself.
    pub(crate) async fn lock_changing(
        &self,
        conn: &mut sqlx::PgConnection,
        team: &Uuid,
        id: &Uuid,
    ) -> PgResult<()> {
        self.hold(self.lock_changing, conn, team, id).await
    }

    async fn hold(
        &self,
        sql: &'static str,
        conn: &mut sqlx::PgConnection,
        team: &Uuid,
        id: &Uuid,
    ) -> PgResult<()> {
        let found: Option<i32> = sqlx::query_scalar(sql)
            .bind(team)
            .bind(id)
            .fetch_optional(conn)
            .await?;
        found
            .map(|_| ())
            .ok_or(StoreError::NotFound(self.entity).into())
    }

    /// Deletes the row; `NotFound` when the team has none with that id.
    pub(crate) async fn delete(
        &self,
        conn: &mut sqlx::PgConnection,
        team: &Uuid,
        id: &Uuid,
    ) -> PgResult<()> {
        let done = sqlx::query(self.delete)
            .bind(team)
            .bind(id)
            .execute(conn)
            .await?;
        self.changed(done)
    }

    /// `NotFound` when a statement on the table changed no row (an update of a record that is
    /// not there).
    pub(crate) fn changed(&self, done: PgQueryResult) -> PgResult<()> {
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(self.entity).into());
        }
        Ok(())
    }
}
