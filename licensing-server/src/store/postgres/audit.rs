//! The audit log (rows inserted by [`write_journal`](super::write_journal)).

use licensing_core::api::requests::{ActorFilter, AuditQuery};
use licensing_core::model::AuditEntry;
use licensing_core::store::{AuditStore, Journal, Page, StoreResult};
use licensing_core::{TeamId, Timestamp};
use sqlx::postgres::{PgArguments, Postgres};
use sqlx::query::Query;

use super::PgResult;
use super::{PgStore, backend, doc, ms, page};
use super::{fetch_page, page_total};

/// The filters of an audit query, `$1` to `$9`. `$9` is the caller's product restriction: an
/// entry of a record tied to products passes when one of them is among it (an entry without
/// recorded products, when its record type is not tied to products).
const FILTERS: &str = "team_id = $1
    AND ($2::text IS NULL OR resource_type = $2)
    AND ($3::text IS NULL OR resource_id = $3)
    AND ($4::uuid IS NULL OR actor_id = $4)
    AND ($5::text IS NULL OR actor_kind = $5)
    AND ($6::text IS NULL OR action = $6)
    AND ($7::bigint IS NULL OR at >= $7)
    AND ($8::bigint IS NULL OR at < $8)
    AND ($9::uuid[] IS NULL
         OR product_ids && $9
         OR (product_ids IS NULL AND NOT (resource_type = ANY($10))))";

/// Binds [`FILTERS`].
fn bind_filters<'q>(
    q: Query<'q, Postgres, PgArguments>,
    team: TeamId,
    query: &'q AuditQuery,
) -> Query<'q, Postgres, PgArguments> {
    let (actor_id, actor_kind) = match query.actor {
        Some(ActorFilter::Id(id)) => (Some(id), None),
        Some(ActorFilter::Kind(kind)) => (
            None,
            serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned)),
        ),
        None => (None, None),
    };
    q.bind(*team.as_uuid())
        .bind(query.resource_type.as_deref())
        .bind(query.resource_id.as_deref())
        .bind(actor_id)
        .bind(actor_kind)
        .bind(query.action.map(|a| a.as_str()))
        .bind(query.from.map(ms))
        .bind(query.to.map(ms))
        .bind(query.products.as_ref().map(|ids| {
            ids.iter()
                .map(|p| *p.as_uuid())
                .collect::<Vec<uuid::Uuid>>()
        }))
        .bind(licensing_core::model::PRODUCT_TIED_KINDS)
}

impl AuditStore for PgStore {
    async fn record_journal(&self, journal: &Journal) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        super::write_journal(&mut tx, journal).await?;
        tx.commit().await.map_err(backend)
    }

    async fn list_audit(&self, team: TeamId, query: &AuditQuery) -> StoreResult<Page<AuditEntry>> {
        // Only fixed fragments are formatted in; every value is bound.
        let dir = if query.newest_first() { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT doc, count(*) OVER () AS total FROM audit_log WHERE {FILTERS}
             ORDER BY at {dir}, id {dir} LIMIT $11 OFFSET $12"
        );
        let select = bind_filters(sqlx::query(sqlx::AssertSqlSafe(sql)), team, query);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = page_total(&self.pool, &rows, || {
            let sql = format!("SELECT count(*) AS total FROM audit_log WHERE {FILTERS}");
            bind_filters(sqlx::query(sqlx::AssertSqlSafe(sql)), team, query)
        })
        .await?;
        let items = rows.iter().map(doc).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }

    async fn restore_audit(&self, entries: &[AuditEntry]) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        for entry in entries {
            sqlx::query("DELETE FROM audit_log WHERE id = $1")
                .bind(entry.id.as_uuid())
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            super::write_journal(&mut tx, &Journal::audit(entry.clone())).await?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn prune_audit(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        const DELETE: &str = "DELETE FROM audit_log WHERE id IN
               (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)";
        Ok(super::prune(&self.pool, DELETE, before, limit).await?)
    }
}
