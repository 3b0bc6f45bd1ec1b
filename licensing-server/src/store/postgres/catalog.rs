//! Products, their branches, and releases.

use licensing_core::api::requests::{ProductListQuery, ProductSort, ReleaseListQuery, ReleaseSort};
use licensing_core::model::{Branch, Entitlement, License, Policy, Product, Release};
use licensing_core::store::{
    EntitlementStore, Entity, Journal, Page, PolicyStore, ProductStore, ReleaseStore, StoreError,
    StoreResult, admit_entitlement, admit_policy, policy_in_use,
};
use licensing_core::{BranchId, EntitlementId, PolicyId, ProductId, ReleaseId, TeamId};
use sqlx::{PgConnection, Row as _};
use uuid::Uuid;

use super::PgResult;
use super::tables::{PRODUCTS, RELEASES};
use super::{PgStore, backend, constraint, doc, in_tx, json, ms, page, team_missing};
use super::{fetch_doc, fetch_docs, fetch_page, page_total, sql_direction};

fn version_taken() -> StoreError {
    StoreError::conflict("version", "already exists for this product and branch")
}

fn branch_name_taken() -> StoreError {
    StoreError::conflict(
        "name",
        "a branch of this name already exists for this product",
    )
}

fn code_taken() -> StoreError {
    licensing_core::store::code_taken()
}

impl EntitlementStore for PgStore {
    async fn create_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            // The team's row lock orders concurrent creates, so the count is exact.
            let team: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE")
                    .bind(e.team_id.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?;
            if team.is_none() {
                return Err(StoreError::NotFound(Entity::Team).into());
            }
            let existing = sqlx::query("SELECT doc FROM entitlements WHERE team_id = $1")
                .bind(e.team_id.as_uuid())
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(doc)
                .collect::<PgResult<Vec<Entitlement>>>()?;
            admit_entitlement(&existing, e)?;
            sqlx::query(
                "INSERT INTO entitlements (id, team_id, code, created_at, doc)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(e.id.as_uuid())
            .bind(e.team_id.as_uuid())
            .bind(&e.code)
            .bind(ms(e.created_at))
            .bind(json(e))
            .execute(&mut *tx)
            .await
            .map_err(|err| constraint(err, &[("entitlements_code_unique", code_taken)]))?;
            Ok(())
        })
    }

    async fn get_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
    ) -> StoreResult<Option<Entitlement>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM entitlements WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid()),
        )
        .await?)
    }

    async fn list_entitlements(&self, team: TeamId) -> StoreResult<Vec<Entitlement>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM entitlements WHERE team_id = $1 ORDER BY created_at, id")
                .bind(team.as_uuid()),
        )
        .await?)
    }

    async fn update_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            // The code stays as stored, whatever `e` says.
            let done = sqlx::query(
                "UPDATE entitlements SET doc = jsonb_set($3, '{code}', to_jsonb(code))
                 WHERE team_id = $1 AND id = $2",
            )
            .bind(e.team_id.as_uuid())
            .bind(e.id.as_uuid())
            .bind(json(e))
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(Entity::Entitlement).into());
            }
            Ok(())
        })
    }

    async fn delete_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query("DELETE FROM entitlements WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid())
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(Entity::Entitlement).into());
            }
            let text = id.to_string();
            for sql in [
                "UPDATE licenses SET doc = jsonb_set(doc, '{entitlementIds}', (doc -> 'entitlementIds') - $2)
                 WHERE team_id = $1 AND doc -> 'entitlementIds' ? $2",
                "UPDATE products SET doc = jsonb_set(doc, '{entitlementIds}', (doc -> 'entitlementIds') - $2)
                 WHERE team_id = $1 AND doc -> 'entitlementIds' ? $2",
                "UPDATE policies SET doc = jsonb_set(doc, '{entitlementIds}', (doc -> 'entitlementIds') - $2)
                 WHERE team_id = $1 AND doc -> 'entitlementIds' ? $2",
            ] {
                sqlx::query(sql)
                    .bind(team.as_uuid())
                    .bind(&text)
                    .execute(&mut *tx)
                    .await
                    ?;
            }
            Ok(())
        })
    }
}

impl PolicyStore for PgStore {
    async fn create_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            // The team's row lock orders concurrent creates, so the count is exact.
            let team: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE")
                    .bind(p.team_id.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?;
            if team.is_none() {
                return Err(StoreError::NotFound(Entity::Team).into());
            }
            let existing = fetch_docs::<Policy>(
                &mut *tx,
                sqlx::query("SELECT doc FROM policies WHERE team_id = $1")
                    .bind(p.team_id.as_uuid()),
            )
            .await?;
            admit_policy(&existing, p)?;
            sqlx::query(
                "INSERT INTO policies (id, team_id, created_at, doc) VALUES ($1, $2, $3, $4)",
            )
            .bind(p.id.as_uuid())
            .bind(p.team_id.as_uuid())
            .bind(ms(p.created_at))
            .bind(json(p))
            .execute(&mut *tx)
            .await?;
            Ok(())
        })
    }

    async fn get_policy(&self, team: TeamId, id: PolicyId) -> StoreResult<Option<Policy>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM policies WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid()),
        )
        .await?)
    }

    async fn list_policies(&self, team: TeamId) -> StoreResult<Vec<Policy>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM policies WHERE team_id = $1 ORDER BY created_at, id")
                .bind(team.as_uuid()),
        )
        .await?)
    }

    async fn update_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query("UPDATE policies SET doc = $3 WHERE team_id = $1 AND id = $2")
                .bind(p.team_id.as_uuid())
                .bind(p.id.as_uuid())
                .bind(json(p))
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(Entity::Policy).into());
            }
            Ok(())
        })
    }

    async fn count_policy_licenses(&self, team: TeamId, id: PolicyId) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM licenses WHERE team_id = $1 AND doc ->> 'policyId' = $2",
        )
        .bind(team.as_uuid())
        .bind(id.to_string())
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn delete_policy(
        &self,
        team: TeamId,
        id: PolicyId,
        detach: bool,
        journal: &Journal,
    ) -> StoreResult<u64> {
        in_tx!(self.pool, journal, |tx| {
            // Locked first: a license being put on it waits (it reads the policy FOR SHARE).
            let Some(row) =
                sqlx::query("SELECT doc FROM policies WHERE team_id = $1 AND id = $2 FOR UPDATE")
                    .bind(team.as_uuid())
                    .bind(id.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?
            else {
                return Err(StoreError::NotFound(Entity::Policy).into());
            };
            let policy: Policy = doc(&row)?;
            let on_it = sqlx::query(
                "SELECT doc, last_active_at FROM licenses
                 WHERE team_id = $1 AND doc ->> 'policyId' = $2 FOR UPDATE",
            )
            .bind(team.as_uuid())
            .bind(id.to_string())
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(super::licenses::license)
            .collect::<PgResult<Vec<License>>>()?;
            if !on_it.is_empty() && !detach {
                return Err(policy_in_use(on_it.len() as u64).into());
            }
            for license in &on_it {
                super::licenses::write(&mut tx, &license.detached(&policy)).await?;
            }
            sqlx::query("DELETE FROM policies WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid())
                .execute(&mut *tx)
                .await?;
            Ok(on_it.len() as u64)
        })
    }
}

/// Locks a product of the team; `false` when the team has no such product.
async fn lock_product(conn: &mut PgConnection, team: TeamId, id: ProductId) -> PgResult<bool> {
    let found: Option<i32> =
        sqlx::query_scalar("SELECT 1 FROM products WHERE team_id = $1 AND id = $2 FOR SHARE")
            .bind(team.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(conn)
            .await?;
    Ok(found.is_some())
}

async fn delete_releases_returning(
    conn: &mut PgConnection,
    sql: &'static str,
    team: TeamId,
    owner: &Uuid,
) -> PgResult<Vec<Release>> {
    fetch_docs(conn, sqlx::query(sql).bind(team.as_uuid()).bind(owner)).await
}

impl ProductStore for PgStore {
    async fn create_product(&self, p: &Product, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO products (id, team_id, name_key, created_at, updated_at, doc)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(p.id.as_uuid())
            .bind(p.team_id.as_uuid())
            .bind(p.name.to_lowercase())
            .bind(ms(p.created_at))
            .bind(ms(p.updated_at))
            .bind(json(p))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("products_team_id_fkey", team_missing)]))?;
            Ok(())
        })
    }

    async fn get_product(&self, team: TeamId, id: ProductId) -> StoreResult<Option<Product>> {
        Ok(PRODUCTS.get(&self.pool, team, id.as_uuid()).await?)
    }

    async fn get_products(&self, team: TeamId, ids: &[ProductId]) -> StoreResult<Vec<Product>> {
        Ok(PRODUCTS
            .get_many(&self.pool, team, ids, |p: &Product| p.id)
            .await?)
    }

    async fn update_product(&self, p: &Product, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query(
                "UPDATE products SET name_key = $3, updated_at = $4, doc = $5
                 WHERE team_id = $1 AND id = $2",
            )
            .bind(p.team_id.as_uuid())
            .bind(p.id.as_uuid())
            .bind(p.name.to_lowercase())
            .bind(ms(p.updated_at))
            .bind(json(p))
            .execute(&mut *tx)
            .await?;
            PRODUCTS.changed(done)
        })
    }

    async fn delete_product(
        &self,
        team: TeamId,
        id: ProductId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        in_tx!(self.pool, journal, |tx| {
            PRODUCTS.lock(&mut tx, team.as_uuid(), id.as_uuid()).await?;
            let gone = delete_releases_returning(
                &mut tx,
                "DELETE FROM releases WHERE team_id = $1 AND product_id = $2 RETURNING doc",
                team,
                id.as_uuid(),
            )
            .await?;
            sqlx::query("DELETE FROM products WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid())
                .execute(&mut *tx)
                .await?;
            super::licenses::detach(&mut tx, team, "product_ids", "productIds", id.as_uuid())
                .await?;
            sqlx::query(
                "UPDATE policies SET doc = jsonb_set(doc, '{productIds}', (doc -> 'productIds') - $2)
                 WHERE team_id = $1 AND doc -> 'productIds' ? $2",
            )
            .bind(team.as_uuid())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
            Ok(gone)
        })
    }

    async fn list_products(
        &self,
        team: TeamId,
        query: &ProductListQuery,
    ) -> StoreResult<Page<Product>> {
        let column = match query.sort {
            ProductSort::Name => "name_key",
            ProductSort::CreatedAt => "created_at",
            ProductSort::UpdatedAt => "updated_at",
        };
        let dir = sql_direction(query.paging.direction);
        // Only fixed fragments are formatted in; every value is bound.
        let sql = format!(
            "SELECT doc, count(*) OVER () AS total FROM products
             WHERE team_id = $1 AND ($2::uuid[] IS NULL OR id = ANY($2))
             ORDER BY {column} {dir}, id {dir} LIMIT $3 OFFSET $4"
        );
        let within: Option<Vec<Uuid>> = query
            .filter
            .within
            .as_ref()
            .map(|ids| ids.iter().map(|id| *id.as_uuid()).collect());
        let select = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(team.as_uuid())
            .bind(&within);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = page_total(&self.pool, &rows, || {
            sqlx::query(
                "SELECT count(*) AS total FROM products
                 WHERE team_id = $1 AND ($2::uuid[] IS NULL OR id = ANY($2))",
            )
            .bind(team.as_uuid())
            .bind(&within)
        })
        .await?;
        let items = rows.iter().map(doc).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }

    async fn create_branch(&self, b: &Branch, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query(
                "INSERT INTO branches (id, team_id, product_id, name, doc)
                 SELECT $1, $2, $3, $4, $5
                 WHERE EXISTS (SELECT 1 FROM products WHERE team_id = $2 AND id = $3 FOR SHARE)",
            )
            .bind(b.id.as_uuid())
            .bind(b.team_id.as_uuid())
            .bind(b.product_id.as_uuid())
            .bind(b.name.as_str())
            .bind(json(b))
            .execute(&mut *tx)
            .await
            .map_err(|e| {
                constraint(
                    e,
                    &[
                        ("branches_name_unique", branch_name_taken),
                        ("branches_product_id_fkey", || {
                            StoreError::NotFound(Entity::Product)
                        }),
                    ],
                )
            })?;
            PRODUCTS.changed(done)
        })
    }

    async fn list_branches(&self, team: TeamId, product: ProductId) -> StoreResult<Vec<Branch>> {
        let mut conn = self.pool.acquire().await.map_err(backend)?;
        if !lock_product(&mut conn, team, product).await? {
            return Err(StoreError::NotFound(Entity::Product));
        }
        let query = sqlx::query(
            "SELECT doc FROM branches WHERE team_id = $1 AND product_id = $2 ORDER BY name",
        );
        let select = query.bind(team.as_uuid()).bind(product.as_uuid());
        Ok(fetch_docs(&mut *conn, select).await?)
    }

    async fn delete_branch(
        &self,
        team: TeamId,
        product: ProductId,
        id: BranchId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        in_tx!(self.pool, journal, |tx| {
            if !lock_product(&mut tx, team, product).await? {
                return Err(StoreError::NotFound(Entity::Product).into());
            }
            let found: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM branches WHERE team_id = $1 AND product_id = $2 AND id = $3
                 FOR UPDATE",
            )
            .bind(team.as_uuid())
            .bind(product.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
            if found.is_none() {
                return Err(StoreError::NotFound(Entity::Branch).into());
            }
            let gone = delete_releases_returning(
                &mut tx,
                "DELETE FROM releases WHERE team_id = $1 AND branch_id = $2 RETURNING doc",
                team,
                id.as_uuid(),
            )
            .await?;
            sqlx::query("DELETE FROM branches WHERE id = $1")
                .bind(id.as_uuid())
                .execute(&mut *tx)
                .await?;
            Ok(gone)
        })
    }
}

/// The checks of create and update (references in the team, the version free), then the row
/// written, with the latest rule: a latest release makes the others of its product and branch
/// not latest.
async fn put_release(conn: &mut PgConnection, r: &Release, insert: bool) -> PgResult<()> {
    if !lock_product(conn, r.team_id, r.product_id).await? {
        return Err(StoreError::NotFound(Entity::Product).into());
    }
    if let Some(b) = r.branch_id {
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM branches WHERE team_id = $1 AND product_id = $2 AND id = $3 FOR SHARE",
        )
        .bind(r.team_id.as_uuid())
        .bind(r.product_id.as_uuid())
        .bind(b.as_uuid())
        .fetch_optional(&mut *conn)
        .await?;
        if found.is_none() {
            return Err(StoreError::NotFound(Entity::Branch).into());
        }
    }
    let allowed: Vec<Uuid> = r.allowed_license_ids.iter().map(|l| *l.as_uuid()).collect();
    if !super::licenses::present(conn, "licenses", r.team_id, &allowed).await? {
        return Err(StoreError::NotFound(Entity::License).into());
    }
    let taken: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM releases WHERE product_id = $1 AND branch_id IS NOT DISTINCT FROM $2
           AND version = $3 AND id <> $4",
    )
    .bind(r.product_id.as_uuid())
    .bind(r.branch_id.map(|b| *b.as_uuid()))
    .bind(r.version.as_str())
    .bind(r.id.as_uuid())
    .fetch_optional(&mut *conn)
    .await?;
    if taken.is_some() {
        return Err(version_taken().into());
    }
    if r.latest {
        sqlx::query(
            "UPDATE releases SET latest = false, doc = jsonb_set(doc, '{latest}', 'false')
             WHERE team_id = $1 AND product_id = $2 AND branch_id IS NOT DISTINCT FROM $3
               AND id <> $4 AND latest",
        )
        .bind(r.team_id.as_uuid())
        .bind(r.product_id.as_uuid())
        .bind(r.branch_id.map(|b| *b.as_uuid()))
        .bind(r.id.as_uuid())
        .execute(&mut *conn)
        .await?;
    }
    let sql = if insert {
        "INSERT INTO releases (id, team_id, product_id, branch_id, version, version_key, status,
           latest, created_at, updated_at, allowed_license_ids, doc)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    } else {
        "UPDATE releases SET product_id = $3, branch_id = $4, version = $5, version_key = $6,
           status = $7, latest = $8, created_at = $9, updated_at = $10,
           allowed_license_ids = $11, doc = $12
         WHERE id = $1 AND team_id = $2"
    };
    sqlx::query(sql)
        .bind(r.id.as_uuid())
        .bind(r.team_id.as_uuid())
        .bind(r.product_id.as_uuid())
        .bind(r.branch_id.map(|b| *b.as_uuid()))
        .bind(r.version.as_str())
        .bind(r.version.as_str().to_lowercase())
        .bind(r.status.as_str())
        .bind(r.latest)
        .bind(ms(r.created_at))
        .bind(ms(r.updated_at))
        .bind(&allowed)
        .bind(json(r))
        .execute(conn)
        .await
        .map_err(|e| constraint(e, &[("releases_version_unique", version_taken)]))?;
    Ok(())
}

/// A release, its row locked until the transaction ends.
async fn locked_release(
    conn: &mut sqlx::PgConnection,
    team: TeamId,
    id: ReleaseId,
) -> PgResult<Release> {
    let row = sqlx::query("SELECT doc FROM releases WHERE team_id = $1 AND id = $2 FOR UPDATE")
        .bind(team.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound(Entity::Release))?;
    doc(&row)
}

/// Writes a release's document alone (its columns unchanged): an artifact added or removed.
async fn write_release_doc(conn: &mut sqlx::PgConnection, r: &Release) -> PgResult<()> {
    sqlx::query("UPDATE releases SET doc = $3 WHERE team_id = $1 AND id = $2")
        .bind(r.team_id.as_uuid())
        .bind(r.id.as_uuid())
        .bind(json(r))
        .execute(conn)
        .await?;
    Ok(())
}

impl ReleaseStore for PgStore {
    async fn create_release(&self, r: &Release, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| put_release(&mut tx, r, true).await)
    }

    async fn get_release(&self, team: TeamId, id: ReleaseId) -> StoreResult<Option<Release>> {
        Ok(RELEASES.get(&self.pool, team, id.as_uuid()).await?)
    }

    async fn update_release(&self, r: &Release, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let stored = locked_release(&mut tx, r.team_id, r.id).await?;
            let r = Release {
                artifacts: stored.artifacts,
                ..r.clone()
            };
            put_release(&mut tx, &r, false).await
        })
    }

    async fn add_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: &licensing_core::model::Artifact,
        journal: &Journal,
    ) -> StoreResult<Release> {
        in_tx!(self.pool, journal, |tx| {
            let mut stored = locked_release(&mut tx, team, release).await?;
            licensing_core::store::put_artifact(&mut stored, artifact)?;
            write_release_doc(&mut tx, &stored).await?;
            Ok(stored)
        })
    }

    async fn remove_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: licensing_core::ArtifactId,
        journal: &Journal,
    ) -> StoreResult<licensing_core::model::Artifact> {
        in_tx!(self.pool, journal, |tx| {
            let mut stored = locked_release(&mut tx, team, release).await?;
            let gone = licensing_core::store::take_artifact(&mut stored, artifact)?;
            write_release_doc(&mut tx, &stored).await?;
            Ok(gone)
        })
    }

    async fn delete_release(
        &self,
        team: TeamId,
        id: ReleaseId,
        journal: &Journal,
    ) -> StoreResult<Release> {
        in_tx!(self.pool, journal, |tx| {
            let row =
                sqlx::query("DELETE FROM releases WHERE team_id = $1 AND id = $2 RETURNING doc")
                    .bind(team.as_uuid())
                    .bind(id.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?
                    .ok_or(StoreError::NotFound(Entity::Release))?;
            doc(&row)
        })
    }

    async fn list_releases(
        &self,
        team: TeamId,
        query: &ReleaseListQuery,
    ) -> StoreResult<Page<Release>> {
        let f = &query.filter;
        let dir = sql_direction(query.paging.direction);
        let by = match query.sort {
            ReleaseSort::Version => format!("version {dir}"),
            ReleaseSort::CreatedAt => format!("created_at {dir}"),
            ReleaseSort::UpdatedAt => format!("updated_at {dir}"),
            ReleaseSort::Latest => format!("latest {dir}, created_at {dir}"),
        };
        const FILTER: &str = "team_id = $1
               AND ($2::uuid IS NULL OR product_id = $2)
               AND ($3::uuid[] IS NULL OR product_id = ANY($3))
               AND ($4::text IS NULL OR status = $4)
               AND ($5::text IS NULL OR strpos(version_key, $5) > 0)";
        // Only fixed fragments are formatted in; every value is bound.
        let sql = format!(
            "SELECT doc, count(*) OVER () AS total FROM releases WHERE {FILTER}
             ORDER BY {by}, id {dir} LIMIT $6 OFFSET $7"
        );
        let within: Option<Vec<Uuid>> = f
            .within_products
            .as_ref()
            .map(|ids| ids.iter().map(|id| *id.as_uuid()).collect());
        let needle = f.search.as_ref().map(|s| s.as_str().to_lowercase());
        let status = f.status.map(|s| s.as_str());
        let product = f.product_id.map(|p| *p.as_uuid());
        let select = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(team.as_uuid())
            .bind(product)
            .bind(&within)
            .bind(status)
            .bind(needle.as_deref());
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = page_total(&self.pool, &rows, || {
            let sql = format!("SELECT count(*) AS total FROM releases WHERE {FILTER}");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(team.as_uuid())
                .bind(product)
                .bind(&within)
                .bind(status)
                .bind(needle.as_deref())
        })
        .await?;
        let items = rows.iter().map(doc).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }

    async fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> StoreResult<(Vec<Branch>, Vec<Release>)> {
        // One round trip: the branches, then the releases, tagged.
        let rows = sqlx::query(
            "SELECT true AS branch, doc FROM branches WHERE team_id = $1 AND product_id = $2
             UNION ALL
             SELECT false AS branch, doc FROM releases WHERE team_id = $1 AND product_id = $2",
        )
        .bind(team.as_uuid())
        .bind(product.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        let mut branches = Vec::new();
        let mut releases = Vec::new();
        for row in &rows {
            if row.try_get::<bool, _>("branch").map_err(backend)? {
                branches.push(doc(row)?);
            } else {
                releases.push(doc(row)?);
            }
        }
        Ok((branches, releases))
    }
}
