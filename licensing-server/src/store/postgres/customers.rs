//! Customers.

use licensing_core::api::requests::{CustomerListQuery, CustomerSort};
use licensing_core::model::Customer;
use licensing_core::store::{CustomerStore, Journal, Page, StoreResult};
use licensing_core::{CustomerId, TeamId};

use super::PgResult;
use super::tables::CUSTOMERS;
use super::{
    DocQuery, PgStore, backend, constraint, doc, in_tx, json, ms, order, page, team_missing,
};
use super::{fetch_page, window_total};

/// The lower-cased text a customer is sorted and searched by.
fn key(text: Option<&str>) -> Option<String> {
    text.map(str::to_lowercase)
}

/// `query` with the customer's last change, its sort keys and its document bound next (the
/// columns an insert and an update both write, in that order).
fn with_keys<'q>(query: DocQuery<'q>, c: &'q Customer) -> DocQuery<'q> {
    query
        .bind(ms(c.updated_at))
        .bind(key(c.full_name.as_deref()))
        .bind(key(c.email.as_ref().map(|e| e.as_str())))
        .bind(key(c.username.as_deref()))
        .bind(json(c))
}

impl CustomerStore for PgStore {
    async fn create_customer(&self, c: &Customer, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let insert = sqlx::query(
                "INSERT INTO customers
               (id, team_id, created_at, updated_at, full_name_key, email_key, username_key, doc)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(c.id.as_uuid())
            .bind(c.team_id.as_uuid())
            .bind(ms(c.created_at));
            with_keys(insert, c)
                .execute(&mut *tx)
                .await
                .map_err(|e| constraint(e, &[("customers_team_id_fkey", team_missing)]))?;
            super::licenses::add_count(&mut tx, c.team_id, "customers", 1).await
        })
    }

    async fn get_customer(&self, team: TeamId, id: CustomerId) -> StoreResult<Option<Customer>> {
        Ok(CUSTOMERS.get(&self.pool, team, id.as_uuid()).await?)
    }

    async fn get_customers(&self, team: TeamId, ids: &[CustomerId]) -> StoreResult<Vec<Customer>> {
        Ok(CUSTOMERS
            .get_many(&self.pool, team, ids, |c: &Customer| c.id)
            .await?)
    }

    async fn update_customer(&self, c: &Customer, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let update = sqlx::query(
                "UPDATE customers SET updated_at = $3, full_name_key = $4, email_key = $5,
                   username_key = $6, doc = $7
                 WHERE team_id = $1 AND id = $2",
            )
            .bind(c.team_id.as_uuid())
            .bind(c.id.as_uuid());
            let done = with_keys(update, c).execute(&mut *tx).await?;
            CUSTOMERS.changed(done)
        })
    }

    async fn delete_customer(
        &self,
        team: TeamId,
        id: CustomerId,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            CUSTOMERS
                .delete(&mut tx, team.as_uuid(), id.as_uuid())
                .await?;
            super::licenses::add_count(&mut tx, team, "customers", -1).await?;
            super::licenses::detach(&mut tx, team, "customer_ids", "customerIds", id.as_uuid())
                .await
        })
    }

    async fn customers_with_email(&self, team: TeamId, email: &str) -> StoreResult<Vec<Customer>> {
        Ok(super::fetch_docs(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM customers WHERE team_id = $1 AND email_key = $2
                 ORDER BY created_at, id",
            )
            .bind(team.as_uuid())
            .bind(email.to_lowercase()),
        )
        .await?)
    }

    async fn list_customers(
        &self,
        team: TeamId,
        query: &CustomerListQuery,
    ) -> StoreResult<Page<Customer>> {
        let column = match query.sort {
            CustomerSort::FullName => "full_name_key",
            CustomerSort::Email => "email_key",
            CustomerSort::Username => "username_key",
            CustomerSort::CreatedAt => "created_at",
            CustomerSort::UpdatedAt => "updated_at",
        };
        let dir = order(query.paging.direction);
        let id_dir = super::sql_direction(query.paging.direction);
        // Only fixed fragments are formatted in; every value is bound.
        let sql = format!(
            "SELECT doc, count(*) OVER () AS total FROM customers
             WHERE team_id = $1 AND ($2::text IS NULL
                OR strpos(full_name_key, $2) > 0 OR strpos(email_key, $2) > 0
                OR strpos(username_key, $2) > 0)
             ORDER BY {column} {dir}, id {id_dir}
             LIMIT $3 OFFSET $4"
        );
        let needle = query.filter.as_ref().map(|s| s.as_str().to_lowercase());
        let select = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(team.as_uuid())
            .bind(needle);
        let rows = fetch_page(&self.pool, select, &query.paging).await?;
        let total = match window_total(&rows)? {
            Some(total) => total,
            None if query.filter.is_none() => {
                super::licenses::count(&self.pool, team, "customers").await?
            }
            None => self.count_customers(team, query).await?,
        };
        let items = rows.iter().map(doc).collect::<PgResult<_>>()?;
        Ok(page(items, total, &query.paging))
    }
}

impl PgStore {
    /// Customers matching a list's filter (for a page past the end, which has no rows to carry
    /// the total).
    async fn count_customers(&self, team: TeamId, query: &CustomerListQuery) -> PgResult<i64> {
        let needle = query.filter.as_ref().map(|s| s.as_str().to_lowercase());
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM customers
             WHERE team_id = $1 AND ($2::text IS NULL
                OR strpos(full_name_key, $2) > 0 OR strpos(email_key, $2) > 0
                OR strpos(username_key, $2) > 0)",
        )
        .bind(team.as_uuid())
        .bind(needle)
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?)
    }
}
