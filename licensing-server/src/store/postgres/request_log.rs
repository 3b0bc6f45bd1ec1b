//! Request history (`request_log`), written behind on the connections that do not wait for the
//! disk: history need not be durable when a batch returns.

use licensing_core::api::requests::RequestLogQuery;
use licensing_core::model::{ClientEndpoint, RequestLogEntry};
use licensing_core::store::{Page, RequestLogStore, StoreError, StoreResult};
use licensing_core::{LicenseId, ProductId, ResultCode, TeamId, Timestamp};
use sqlx::Row as _;
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::query::Query;

use super::PgResult;
use super::{PgStore, backend, ms, page};
use super::{fetch_page, page_total};

/// The filters of a history query, `$1` to `$8`.
const FILTERS: &str = "team_id = $1 AND license_id = $2
    AND ($3::text IS NULL OR code = $3)
    AND ($4::boolean IS NULL OR (code <> 'VALID') = $4)
    AND ($5::text IS NULL OR endpoint = $5)
    AND ($6::bigint IS NULL OR at >= $6)
    AND ($7::bigint IS NULL OR at < $7)";

fn bind_filters<'q>(
    q: Query<'q, Postgres, PgArguments>,
    team: TeamId,
    license: LicenseId,
    query: &RequestLogQuery,
) -> Query<'q, Postgres, PgArguments> {
    q.bind(*team.as_uuid())
        .bind(*license.as_uuid())
        .bind(query.code.map(ResultCode::as_str))
        .bind(query.refused)
        .bind(query.endpoint.map(ClientEndpoint::as_str))
        .bind(query.from.map(ms))
        .bind(query.to.map(ms))
}

fn entry(row: &PgRow) -> PgResult<RequestLogEntry> {
    let bad = |what: &str| StoreError::backend(format!("bad request history row: {what}"));
    let text = |name: &str| row.try_get::<String, _>(name).map_err(backend);
    let endpoint = text("endpoint")?;
    let code = text("code")?;
    Ok(RequestLogEntry {
        team_id: TeamId::from_uuid(row.try_get("team_id")?),
        license_id: LicenseId::from_uuid(row.try_get("license_id")?),
        at: Timestamp::from_millis(row.try_get("at")?),
        count: u32::try_from(row.try_get::<i32, _>("count")?).map_err(|_| bad("count"))?,
        last_at: row
            .try_get::<Option<i64>, _>("last_at")?
            .map(Timestamp::from_millis),
        endpoint: ClientEndpoint::parse(&endpoint).ok_or_else(|| bad("endpoint"))?,
        code: ResultCode::ALL
            .into_iter()
            .find(|c| c.as_str() == code)
            .ok_or_else(|| bad("code"))?,
        ip_address: text("ip_address")?.parse().map_err(|_| bad("address"))?,
        country: row.try_get("country")?,
        hardware_identifier: row.try_get("hardware_identifier")?,
        product_id: row
            .try_get::<Option<uuid::Uuid>, _>("product_id")?
            .map(ProductId::from_uuid),
        version: row.try_get("version")?,
    })
}

impl RequestLogStore for PgStore {
    async fn append_requests(&self, entries: &[RequestLogEntry]) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let column = |f: &dyn Fn(&RequestLogEntry) -> Option<String>| -> Vec<Option<String>> {
            entries.iter().map(f).collect()
        };
        sqlx::query(
            "INSERT INTO request_log (team_id, license_id, at, endpoint, code, ip_address,
               country, hardware_identifier, product_id, version, count, last_at)
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::text[],
               $6::text[], $7::text[], $8::text[], $9::uuid[], $10::text[], $11::integer[],
               $12::bigint[])",
        )
        .bind(
            entries
                .iter()
                .map(|e| *e.team_id.as_uuid())
                .collect::<Vec<_>>(),
        )
        .bind(
            entries
                .iter()
                .map(|e| *e.license_id.as_uuid())
                .collect::<Vec<_>>(),
        )
        .bind(entries.iter().map(|e| ms(e.at)).collect::<Vec<_>>())
        .bind(column(&|e| Some(e.endpoint.as_str().to_owned())))
        .bind(column(&|e| Some(e.code.as_str().to_owned())))
        .bind(column(&|e| Some(e.ip_address.to_string())))
        .bind(column(&|e| e.country.clone()))
        .bind(column(&|e| e.hardware_identifier.clone()))
        .bind(
            entries
                .iter()
                .map(|e| e.product_id.map(|p| *p.as_uuid()))
                .collect::<Vec<_>>(),
        )
        .bind(column(&|e| e.version.clone()))
        .bind(
            entries
                .iter()
                .map(|e| i32::try_from(e.count).unwrap_or(i32::MAX))
                .collect::<Vec<_>>(),
        )
        .bind(
            entries
                .iter()
                .map(|e| e.last_at.map(ms))
                .collect::<Vec<_>>(),
        )
        .execute(&self.behind)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn list_requests(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &RequestLogQuery,
    ) -> StoreResult<Page<RequestLogEntry>> {
        // Only fixed fragments are formatted in; every value is bound.
        let dir = if query.newest_first() { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT *, count(*) OVER () AS total FROM request_log WHERE {FILTERS}
             ORDER BY at {dir}, seq {dir} LIMIT $8 OFFSET $9"
        );
        let select = bind_filters(sqlx::query(sqlx::AssertSqlSafe(sql)), team, license, query);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = page_total(&self.pool, &rows, || {
            let sql = format!("SELECT count(*) AS total FROM request_log WHERE {FILTERS}");
            bind_filters(sqlx::query(sqlx::AssertSqlSafe(sql)), team, license, query)
        })
        .await?;
        let items = rows.iter().map(entry).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }

    async fn cap_license_requests(&self, per_license: u64) -> StoreResult<u64> {
        let cap = i64::try_from(per_license).unwrap_or(i64::MAX);
        // Each license over the cap loses what is older than its cap-th newest entry.
        let over = sqlx::query(
            "DELETE FROM request_log r USING (
               SELECT team_id, license_id, at, seq FROM (
                 SELECT team_id, license_id, at, seq,
                        row_number() OVER (PARTITION BY team_id, license_id
                                           ORDER BY at DESC, seq DESC) AS n
                   FROM request_log
                  WHERE (team_id, license_id) IN (
                        SELECT team_id, license_id FROM request_log
                         GROUP BY team_id, license_id HAVING count(*) > $1)) ranked
               WHERE n = $1) edge
             WHERE r.team_id = edge.team_id AND r.license_id = edge.license_id
               AND (r.at, r.seq) < (edge.at, edge.seq)",
        )
        .bind(cap.max(1))
        .execute(&self.pool)
        .await
        .map_err(backend)?
        .rows_affected();
        Ok(over)
    }

    async fn prune_requests(&self, before: Timestamp, per_team: u64) -> StoreResult<u64> {
        let old = sqlx::query("DELETE FROM request_log WHERE at < $1")
            .bind(ms(before))
            .execute(&self.pool)
            .await
            .map_err(backend)?
            .rows_affected();
        let cap = i64::try_from(per_team).unwrap_or(i64::MAX);
        // Each team over the cap loses what is older than its cap-th newest entry.
        let over = sqlx::query(
            "DELETE FROM request_log r USING (
               SELECT team_id, at, seq FROM (
                 SELECT team_id, at, seq,
                        row_number() OVER (PARTITION BY team_id ORDER BY at DESC, seq DESC) AS n
                   FROM request_log
                  WHERE team_id IN (SELECT team_id FROM request_log
                                     GROUP BY team_id HAVING count(*) > $1)) ranked
               WHERE n = $1) edge
             WHERE r.team_id = edge.team_id AND (r.at, r.seq) < (edge.at, edge.seq)",
        )
        .bind(cap)
        .execute(&self.pool)
        .await
        .map_err(backend)?
        .rows_affected();
        // A cap of none: every entry left goes.
        let none = if per_team == 0 {
            sqlx::query("DELETE FROM request_log")
                .execute(&self.pool)
                .await
                .map_err(backend)?
                .rows_affected()
        } else {
            0
        };
        Ok(old + over + none)
    }
}
