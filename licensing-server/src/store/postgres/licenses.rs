//! Licenses, and the developer API's view of their devices and addresses.

use licensing_core::api::requests::{LicenseFilter, LicenseListQuery, LicenseSort};
use licensing_core::model::{ExpirationType, License, OutboxMessage};
use licensing_core::store::{Entity, Journal, LicenseStore, Page, StoreError, StoreResult};
use licensing_core::{LicenseId, LicenseKey, TeamId, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row as _};
use uuid::Uuid;

use super::PgResult;
use super::tables::LICENSES;
use super::{PgStore, constraint, doc, in_tx, json, like_contains, ms, opt_ms, page, team_missing};
use super::{fetch_page, page_total, sql_direction};

/// A license from a row of `doc, last_active_at` (`last_active_at` moves without the record).
pub(super) fn license(row: &PgRow) -> PgResult<License> {
    let mut l: License = doc(row)?;
    let active: Option<i64> = row.try_get("last_active_at")?;
    l.last_active_at = active.map(Timestamp::from_millis);
    Ok(l)
}

pub(super) fn uuids<T>(ids: &[T], uuid: impl Fn(&T) -> Uuid) -> Vec<Uuid> {
    ids.iter().map(uuid).collect()
}

fn key_taken() -> StoreError {
    StoreError::conflict(
        "licenseKey",
        "is already used by another license of this team",
    )
}

/// Adds `delta` to a team's count of licenses or customers (`what`).
pub(super) async fn add_count(
    conn: &mut PgConnection,
    team: TeamId,
    what: &'static str,
    delta: i64,
) -> PgResult<()> {
    let sql: &'static str = match what {
        "licenses" => {
            "INSERT INTO team_counts (team_id, licenses, customers) VALUES ($1, $2, 0)
             ON CONFLICT (team_id) DO UPDATE SET licenses = team_counts.licenses + $2"
        }
        _ => {
            "INSERT INTO team_counts (team_id, licenses, customers) VALUES ($1, 0, $2)
             ON CONFLICT (team_id) DO UPDATE SET customers = team_counts.customers + $2"
        }
    };
    sqlx::query(sql)
        .bind(team.as_uuid())
        .bind(delta)
        .execute(conn)
        .await
        .map_err(|e| constraint(e, &[("team_counts_team_id_fkey", team_missing)]))?;
    Ok(())
}

/// A team's count of licenses or customers.
pub(super) async fn count(pool: &sqlx::PgPool, team: TeamId, what: &str) -> PgResult<i64> {
    let sql: &'static str = match what {
        "licenses" => "SELECT licenses FROM team_counts WHERE team_id = $1",
        _ => "SELECT customers FROM team_counts WHERE team_id = $1",
    };
    let n: Option<i64> = sqlx::query_scalar(sql)
        .bind(team.as_uuid())
        .fetch_optional(pool)
        .await?;
    Ok(n.unwrap_or(0))
}

/// The checks of create and update: the key free in the team, the customers and products
/// present in it (read `FOR SHARE`, so that deleting one waits for this transaction).
async fn check_refs(conn: &mut PgConnection, l: &License) -> PgResult<()> {
    let owner: Option<Uuid> =
        sqlx::query_scalar("SELECT id FROM licenses WHERE team_id = $1 AND license_key = $2")
            .bind(l.team_id.as_uuid())
            .bind(l.license_key.as_str())
            .fetch_optional(&mut *conn)
            .await?;
    if owner.is_some_and(|o| o != *l.id.as_uuid()) {
        return Err(key_taken().into());
    }
    let customers = uuids(&l.customer_ids, |c| *c.as_uuid());
    if !present(conn, "customers", l.team_id, &customers).await? {
        return Err(StoreError::NotFound(Entity::Customer).into());
    }
    let products = uuids(&l.product_ids, |p| *p.as_uuid());
    if !present(conn, "products", l.team_id, &products).await? {
        return Err(StoreError::NotFound(Entity::Product).into());
    }
    let policy: Vec<Uuid> = l.policy_id.iter().map(|p| *p.as_uuid()).collect();
    if !present(conn, "policies", l.team_id, &policy).await? {
        return Err(StoreError::NotFound(Entity::Policy).into());
    }
    Ok(())
}

/// Whether every id is a record of `table` in the team; the records found are locked
/// `FOR SHARE`.
pub(super) async fn present(
    conn: &mut PgConnection,
    table: &'static str,
    team: TeamId,
    ids: &[Uuid],
) -> PgResult<bool> {
    if ids.is_empty() {
        return Ok(true);
    }
    let sql: &'static str = match table {
        "customers" => {
            "SELECT count(*) FROM (SELECT id FROM customers WHERE team_id = $1 AND id = ANY($2)
             FOR SHARE) found"
        }
        "products" => {
            "SELECT count(*) FROM (SELECT id FROM products WHERE team_id = $1 AND id = ANY($2)
             FOR SHARE) found"
        }
        "policies" => {
            "SELECT count(*) FROM (SELECT id FROM policies WHERE team_id = $1 AND id = ANY($2)
             FOR SHARE) found"
        }
        _ => {
            "SELECT count(*) FROM (SELECT id FROM licenses WHERE team_id = $1 AND id = ANY($2)
             FOR SHARE) found"
        }
    };
    let found: i64 = sqlx::query_scalar(sql)
        .bind(team.as_uuid())
        .bind(ids)
        .fetch_one(&mut *conn)
        .await?;
    let mut distinct = ids.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    Ok(found == distinct.len() as i64)
}

async fn insert(conn: &mut PgConnection, l: &License) -> PgResult<()> {
    let insert = sqlx::query(
        "INSERT INTO licenses (id, team_id, created_at, license_key, updated_at, last_active_at,
           customer_ids, product_ids, doc, suspended, expiration_type, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(l.id.as_uuid())
    .bind(l.team_id.as_uuid())
    .bind(ms(l.created_at));
    with_columns(insert, l)
        .execute(&mut *conn)
        .await
        .map_err(|e| {
            constraint(
                e,
                &[
                    ("licenses_key_unique", key_taken),
                    ("licenses_team_id_fkey", team_missing),
                ],
            )
        })?;
    add_count(conn, l.team_id, "licenses", 1).await
}

/// The license list's filters, `$1` to `$19` (see [`bind_filter`]); `$13`, `customerSearch`,
/// finds the team's customers as their list's search does; `$14` is the policy; `$15` and `$16`
/// the policies that grant the products and the entitlement asked for; `$17` and `$18` the
/// `expiresWithinDays` window; `$19` the `metadataSearch` text, lowercased.
const LICENSE_FILTER: &str = "WHERE team_id = $1
   AND (cardinality($2::uuid[]) = 0 OR product_ids && $2 OR doc ->> 'policyId' = ANY($15))
   AND (cardinality($3::uuid[]) = 0 OR customer_ids && $3)
   AND ($4::text IS NULL OR replace(license_key, '-', '') LIKE $4)
   AND ($5::text IS NULL OR EXISTS (
         SELECT 1 FROM jsonb_array_elements(doc -> 'metadata') m
         WHERE m ->> 'key' = $5 AND ($6::text IS NULL OR strpos(m ->> 'value', $6) > 0)))
   AND ($7::boolean IS NULL
        OR (expires_at IS NOT NULL AND expires_at <= $8) = $7)
   AND ($9::text IS NULL OR expiration_type = $9)
   AND ($10::boolean IS NULL OR suspended = $10)
   AND ($11::text IS NULL OR doc -> 'entitlementIds' ? $11 OR product_ids && $12
        OR doc ->> 'policyId' = ANY($16))
   AND ($13::text IS NULL OR customer_ids && ARRAY(
         SELECT c.id FROM customers c WHERE c.team_id = $1
            AND (strpos(c.full_name_key, $13) > 0 OR strpos(c.email_key, $13) > 0
                 OR strpos(c.username_key, $13) > 0)))
   AND ($14::text IS NULL OR doc ->> 'policyId' = $14)
   AND ($17::bigint IS NULL OR (expires_at > $17 AND expires_at <= $18))
   AND ($19::text IS NULL OR EXISTS (
         SELECT 1 FROM jsonb_array_elements(doc -> 'metadata') m
         WHERE strpos(lower(m ->> 'value'), $19) > 0))
   AND ($20::text IS NULL OR EXISTS (
         SELECT 1 FROM hwids h WHERE h.license_id = licenses.id
            AND (strpos(lower(h.name), $20) > 0 OR strpos(lower(h.platform), $20) > 0
                 OR lower(h.identifier) = $20)))";

/// Binds the values of [`LICENSE_FILTER`].
fn bind_filter<'q>(
    query: super::DocQuery<'q>,
    team: TeamId,
    f: &LicenseFilter,
) -> super::DocQuery<'q> {
    let search = f
        .search
        .as_ref()
        .map(|s| like_contains(&licensing_core::store::key_search_text(s)));
    query
        .bind(*team.as_uuid())
        .bind(uuids(&f.product_ids, |p| *p.as_uuid()))
        .bind(uuids(&f.customer_ids, |c| *c.as_uuid()))
        .bind(search)
        .bind(f.metadata_key.clone())
        .bind(f.metadata_value.clone())
        .bind(f.expiry.map(|e| e.expired))
        .bind(f.expiry.map(|e| ms(e.at)))
        .bind(f.expiration_type.map(ExpirationType::as_str))
        .bind(f.suspended)
        .bind(f.entitlement.as_ref().map(|e| e.id.to_string()))
        .bind(
            f.entitlement
                .as_ref()
                .map_or_else(Vec::new, |e| uuids(&e.products, |p| *p.as_uuid())),
        )
        .bind(
            f.customer_search
                .as_ref()
                .map(|text| text.as_str().to_lowercase()),
        )
        .bind(f.policy_id.map(|p| p.to_string()))
        .bind(texts(&f.product_policies))
        .bind(
            f.entitlement
                .as_ref()
                .map_or_else(Vec::new, |e| texts(&e.policies)),
        )
        .bind(f.expires_within.map(|w| ms(w.at)))
        .bind(f.expires_within.map(|w| ms(w.until())))
        .bind(
            f.metadata_search
                .as_ref()
                .map(|text| text.as_str().to_lowercase()),
        )
        .bind(
            f.device_search
                .as_ref()
                .map(|text| text.as_str().to_lowercase()),
        )
}

/// Policy ids as the text a license's document holds them in.
fn texts(ids: &[licensing_core::PolicyId]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

/// The moment a license expires, as the `expires_at` column holds it (none for `NEVER`, and
/// none for a license whose clock has not started).
fn expires_at(l: &License) -> Option<i64> {
    match l.expiration_type {
        ExpirationType::Never => None,
        ExpirationType::Date | ExpirationType::Duration => opt_ms(l.expiration_date),
    }
}

/// `query` with the license's columns that an insert and an update both write bound next, in
/// this order: key, last change, last activity, customers, products, document, suspension,
/// expiration type, expiry.
fn with_columns<'q>(query: super::DocQuery<'q>, l: &'q License) -> super::DocQuery<'q> {
    query
        .bind(l.license_key.as_str())
        .bind(ms(l.updated_at))
        .bind(opt_ms(l.last_active_at))
        .bind(uuids(&l.customer_ids, |c| *c.as_uuid()))
        .bind(uuids(&l.product_ids, |p| *p.as_uuid()))
        .bind(json(l))
        .bind(l.suspended)
        .bind(l.expiration_type.as_str())
        .bind(expires_at(l))
}

/// Replaces a license's row.
pub(super) async fn write(conn: &mut PgConnection, l: &License) -> PgResult<u64> {
    let update = sqlx::query(
        "UPDATE licenses SET license_key = $3, updated_at = $4, last_active_at = $5,
           customer_ids = $6, product_ids = $7, doc = $8, suspended = $9, expiration_type = $10,
           expires_at = $11
         WHERE team_id = $1 AND id = $2",
    )
    .bind(l.team_id.as_uuid())
    .bind(l.id.as_uuid());
    let done = with_columns(update, l)
        .execute(conn)
        .await
        .map_err(|e| constraint(e, &[("licenses_key_unique", key_taken)]))?;
    Ok(done.rows_affected())
}

/// Removes `id` from the array `column` (and its `field` in the record) of every license of
/// the team that lists it.
pub(super) async fn detach(
    conn: &mut PgConnection,
    team: TeamId,
    column: &'static str,
    field: &'static str,
    id: &Uuid,
) -> PgResult<()> {
    let sql: &'static str = match (column, field) {
        ("customer_ids", "customerIds") => {
            "UPDATE licenses SET customer_ids = array_remove(customer_ids, $2),
               doc = jsonb_set(doc, '{customerIds}', to_jsonb(array_remove(customer_ids, $2)))
             WHERE team_id = $1 AND customer_ids @> ARRAY[$2]"
        }
        _ => {
            "UPDATE licenses SET product_ids = array_remove(product_ids, $2),
               doc = jsonb_set(doc, '{productIds}', to_jsonb(array_remove(product_ids, $2)))
             WHERE team_id = $1 AND product_ids @> ARRAY[$2]"
        }
    };
    sqlx::query(sql)
        .bind(team.as_uuid())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

impl PgStore {
    /// The license `select` finds (its `doc` and `last_active_at`), with the activity not
    /// written yet laid over it.
    async fn read_license(&self, select: super::DocQuery<'_>) -> PgResult<Option<License>> {
        let row = select.fetch_optional(&self.pool).await?;
        row.map(|row| license(&row).map(|l| self.refreshes.overlay(l)))
            .transpose()
    }
}

impl LicenseStore for PgStore {
    async fn create_license(&self, l: &License, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            check_refs(&mut tx, l).await?;
            insert(&mut tx, l).await
        })
    }

    async fn get_license(&self, team: TeamId, id: LicenseId) -> StoreResult<Option<License>> {
        let select =
            sqlx::query("SELECT doc, last_active_at FROM licenses WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid());
        Ok(self.read_license(select).await?)
    }

    async fn get_license_by_key(
        &self,
        team: TeamId,
        key: &LicenseKey,
    ) -> StoreResult<Option<License>> {
        let select = sqlx::query(
            "SELECT doc, last_active_at FROM licenses WHERE team_id = $1 AND license_key = $2",
        )
        .bind(team.as_uuid())
        .bind(key.as_str());
        Ok(self.read_license(select).await?)
    }

    async fn update_license(&self, l: &License, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            LICENSES
                .lock(&mut tx, l.team_id.as_uuid(), l.id.as_uuid())
                .await?;
            check_refs(&mut tx, l).await?;
            write(&mut tx, l).await.map(|_| ())
        })
    }

    async fn delete_license(
        &self,
        team: TeamId,
        id: LicenseId,
        journal: &Journal,
    ) -> StoreResult<License> {
        in_tx!(self.pool, journal, |tx| {
            let row = sqlx::query(
                "DELETE FROM licenses WHERE team_id = $1 AND id = $2
                 RETURNING doc, last_active_at",
            )
            .bind(team.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound(Entity::License))?;
            sqlx::query(
                "UPDATE releases SET allowed_license_ids = array_remove(allowed_license_ids, $2),
                   doc = jsonb_set(doc, '{allowedLicenseIds}',
                                   to_jsonb(array_remove(allowed_license_ids, $2)))
                 WHERE team_id = $1 AND allowed_license_ids @> ARRAY[$2]",
            )
            .bind(team.as_uuid())
            .bind(id.as_uuid())
            .execute(&mut *tx)
            .await?;
            add_count(&mut tx, team, "licenses", -1).await?;
            license(&row)
        })
    }

    async fn create_license_with_mail(
        &self,
        l: &License,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            check_refs(&mut tx, l).await?;
            let today = (OutboxMessage::day_of(now), daily_limit);
            super::misc::count_mail(&mut tx, l.team_id, mail.len(), today, "license e-mails")
                .await?;
            insert(&mut tx, l).await?;
            for m in mail {
                super::misc::insert_message(&mut tx, m).await?;
            }
            Ok(())
        })
    }

    async fn list_licenses(
        &self,
        team: TeamId,
        query: &LicenseListQuery,
    ) -> StoreResult<Page<License>> {
        self.settle().await?;
        let f = &query.filter;
        // Licenses without an expiration date, or never used, last in either direction (the
        // direction follows the column).
        let column = match query.sort {
            LicenseSort::CreatedAt => "created_at",
            LicenseSort::UpdatedAt => "updated_at",
            LicenseSort::ExpirationDate => "expires_at IS NULL, expires_at",
            LicenseSort::LastActiveAt => "last_active_at IS NULL, last_active_at",
        };
        let dir = sql_direction(query.paging.direction);
        let filtered = !f.product_ids.is_empty()
            || !f.customer_ids.is_empty()
            || f.search.is_some()
            || f.metadata_key.is_some()
            || f.expiry.is_some()
            || f.expiration_type.is_some()
            || f.suspended.is_some()
            || f.entitlement.is_some()
            || f.customer_search.is_some()
            || f.policy_id.is_some()
            || f.metadata_search.is_some()
            || f.device_search.is_some()
            || f.expires_within.is_some();
        // Only fixed fragments are formatted in; every value is bound.
        let sql = format!(
            "SELECT doc, last_active_at{total} FROM licenses {LICENSE_FILTER}
             ORDER BY {column} {dir}, id {dir}
             LIMIT $21 OFFSET $22",
            total = if filtered {
                ", count(*) OVER () AS total"
            } else {
                ""
            },
        );
        let select = bind_filter(sqlx::query(sqlx::AssertSqlSafe(sql)), team, f);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = if filtered {
            page_total(&self.pool, &rows, || {
                let sql = format!("SELECT count(*) AS total FROM licenses {LICENSE_FILTER}");
                bind_filter(sqlx::query(sqlx::AssertSqlSafe(sql)), team, f)
            })
            .await?
        } else {
            count(&self.pool, team, "licenses").await?
        };
        let items = rows.iter().map(license).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }
}

// ---- devices and addresses ----
