//! Customers.

use super::*;

impl CustomerStore for SledStore {
    async fn create_customer(&self, c: &Customer, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(c.team_id)?;
            put_customer(tx, c, None)
        })
        .await
    }

    async fn get_customer(&self, team: TeamId, id: CustomerId) -> StoreResult<Option<Customer>> {
        Ok(self.get_record(&customer_key(team, id))?)
    }

    async fn get_customers(&self, team: TeamId, ids: &[CustomerId]) -> StoreResult<Vec<Customer>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(c) = self.get_record(&customer_key(team, *id))? {
                out.push(c);
            }
        }
        Ok(out)
    }

    async fn update_customer(&self, c: &Customer, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let old: Customer = tx
                .get_record(&customer_key(c.team_id, c.id))?
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            put_customer(tx, c, Some(&old))
        })
        .await
    }

    async fn delete_customer(
        &self,
        team: TeamId,
        id: CustomerId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled_touching(journal, Touch::Licenses, |tx| {
            let old: Customer = tx
                .get_record(&customer_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            self.update_licenses_of(tx, ix::BY_CUSTOMER, team, id.as_bytes(), |l| {
                l.customer_ids.retain(|c| *c != id)
            })?;
            reindex(tx, customer_indexes(&old), Vec::new());
            tx.del(customer_key(team, id));
            tx.add_count(count_key(tag::CUSTOMER, team), -1)
        })
        .await
    }

    async fn customers_with_email(&self, team: TeamId, email: &str) -> StoreResult<Vec<Customer>> {
        // The e-mail index's keys: the lower-cased address, a 0, then the id.
        let prefix = key(&[
            &index_prefix(tag::CUSTOMER, ix::EMAIL, team),
            &keys::text(Some(email)),
        ]);
        let mut found = Vec::new();
        for k in self.inner.tree.scan_prefix(&prefix).keys() {
            let k = k.map_err(backend)?;
            let id = &k[prefix.len()..];
            if let Some(c) =
                self.get_record::<Customer>(&key(&[&[tag::CUSTOMER], team.as_bytes(), id]))?
            {
                found.push(c);
            }
        }
        found.sort_by_key(|c| (c.created_at, c.id));
        Ok(found)
    }

    async fn list_customers(
        &self,
        team: TeamId,
        query: &CustomerListQuery,
    ) -> StoreResult<Page<Customer>> {
        let index = match query.sort {
            CustomerSort::CreatedAt => ix::CREATED,
            CustomerSort::UpdatedAt => ix::UPDATED,
            CustomerSort::FullName => ix::NAME,
            CustomerSort::Email => ix::EMAIL,
            CustomerSort::Username => ix::USERNAME,
        };
        let search = query.filter.as_ref();
        let accept = |c: &Customer| customer_matches(c, search);
        self.walk_index(
            &index_prefix(tag::CUSTOMER, index, team),
            &query.paging,
            |id| Ok(self.get_record(&key(&[&[tag::CUSTOMER], team.as_bytes(), &id]))?),
            search
                .is_some()
                .then_some(&accept as &dyn Fn(&Customer) -> bool),
            self.count(tag::CUSTOMER, team)?,
        )
    }
}
