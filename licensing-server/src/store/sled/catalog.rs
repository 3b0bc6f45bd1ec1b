//! Products, their branches, and releases.

use super::*;

impl EntitlementStore for SledStore {
    async fn create_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(e.team_id)?;
            // Developer writes are serialized: the scan sees every entitlement there is.
            let existing: Vec<Entitlement> =
                self.scan(&key(&[&[tag::ENTITLEMENT], e.team_id.as_bytes()]))?;
            admit_entitlement(&existing, e)?;
            tx.put_record(entitlement_key(e.team_id, e.id), e)
        })
        .await
    }

    async fn get_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
    ) -> StoreResult<Option<Entitlement>> {
        Ok(self.get_record(&entitlement_key(team, id))?)
    }

    async fn list_entitlements(&self, team: TeamId) -> StoreResult<Vec<Entitlement>> {
        let mut all: Vec<Entitlement> = self.scan(&key(&[&[tag::ENTITLEMENT], team.as_bytes()]))?;
        all.sort_by_key(|e| (e.created_at, e.id));
        Ok(all)
    }

    async fn update_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let stored: Entitlement = tx
                .get_record(&entitlement_key(e.team_id, e.id))?
                .ok_or(StoreError::NotFound(Entity::Entitlement))?;
            let mut next = e.clone();
            next.code = stored.code;
            tx.put_record(entitlement_key(e.team_id, e.id), &next)
        })
        .await
    }

    async fn delete_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled_touching(journal, Touch::Licenses, |tx| {
            tx.get(&entitlement_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Entitlement))?;
            self.update_licenses_of(tx, ix::BY_ENTITLEMENT, team, id.as_bytes(), |l| {
                l.entitlement_ids.retain(|e| *e != id)
            })?;
            for mut p in self.scan::<Product>(&key(&[&[tag::PRODUCT], team.as_bytes()]))? {
                if p.entitlement_ids.contains(&id) {
                    p.entitlement_ids.retain(|e| *e != id);
                    tx.put_record(product_key(team, p.id), &p)?;
                }
            }
            self.update_policies_of(tx, team, |p| {
                let before = p.entitlement_ids.len();
                p.entitlement_ids.retain(|e| *e != id);
                p.entitlement_ids.len() != before
            })?;
            tx.del(entitlement_key(team, id));
            Ok(())
        })
        .await
    }
}

impl SledStore {
    /// Rewrites each policy of the team that `change` changes (it says whether it did).
    fn update_policies_of(
        &self,
        tx: &mut Tx<'_>,
        team: TeamId,
        change: impl Fn(&mut Policy) -> bool,
    ) -> StoreResult<()> {
        for mut p in self.scan::<Policy>(&key(&[&[tag::POLICY], team.as_bytes()]))? {
            if change(&mut p) {
                tx.put_record(policy_key(team, p.id), &p)?;
            }
        }
        Ok(())
    }
}

impl PolicyStore for SledStore {
    async fn create_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(p.team_id)?;
            // Developer writes are serialized: the scan sees every policy there is.
            let existing: Vec<Policy> = self.scan(&key(&[&[tag::POLICY], p.team_id.as_bytes()]))?;
            admit_policy(&existing, p)?;
            tx.put_record(policy_key(p.team_id, p.id), p)
        })
        .await
    }

    async fn get_policy(&self, team: TeamId, id: PolicyId) -> StoreResult<Option<Policy>> {
        Ok(self.get_record(&policy_key(team, id))?)
    }

    async fn list_policies(&self, team: TeamId) -> StoreResult<Vec<Policy>> {
        let mut all: Vec<Policy> = self.scan(&key(&[&[tag::POLICY], team.as_bytes()]))?;
        all.sort_by_key(|p| (p.created_at, p.id));
        Ok(all)
    }

    async fn update_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.get(&policy_key(p.team_id, p.id))?
                .ok_or(StoreError::NotFound(Entity::Policy))?;
            tx.put_record(policy_key(p.team_id, p.id), p)
        })
        .await
    }

    async fn count_policy_licenses(&self, team: TeamId, id: PolicyId) -> StoreResult<u64> {
        Ok(self
            .license_ids_by(ix::BY_POLICY, team, id.as_bytes())?
            .len() as u64)
    }

    async fn delete_policy(
        &self,
        team: TeamId,
        id: PolicyId,
        detach: bool,
        journal: &Journal,
    ) -> StoreResult<u64> {
        self.journaled_touching(journal, Touch::Licenses, |tx| {
            let policy: Policy = tx
                .get_record(&policy_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Policy))?;
            let on_it = self
                .license_ids_by(ix::BY_POLICY, team, id.as_bytes())?
                .len() as u64;
            if on_it > 0 && !detach {
                return Err(policy_in_use(on_it));
            }
            self.update_licenses_of(tx, ix::BY_POLICY, team, id.as_bytes(), |l| {
                *l = l.detached(&policy);
            })?;
            tx.del(policy_key(team, id));
            Ok(on_it)
        })
        .await
    }
}

impl ProductStore for SledStore {
    async fn create_product(&self, p: &Product, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(p.team_id)?;
            tx.put_record(product_key(p.team_id, p.id), p)
        })
        .await
    }

    async fn get_product(&self, team: TeamId, id: ProductId) -> StoreResult<Option<Product>> {
        Ok(self.get_record(&product_key(team, id))?)
    }

    async fn get_products(&self, team: TeamId, ids: &[ProductId]) -> StoreResult<Vec<Product>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(p) = self.get_record(&product_key(team, *id))? {
                out.push(p);
            }
        }
        Ok(out)
    }

    async fn update_product(&self, p: &Product, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.get(&product_key(p.team_id, p.id))?
                .ok_or(StoreError::NotFound(Entity::Product))?;
            tx.put_record(product_key(p.team_id, p.id), p)
        })
        .await
    }

    async fn delete_product(
        &self,
        team: TeamId,
        id: ProductId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.journaled_touching(journal, Touch::Licenses, |tx| {
            tx.get(&product_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Product))?;
            for b in self.scan::<Branch>(&key(&[&[tag::BRANCH], team.as_bytes(), id.as_bytes()]))? {
                tx.del(branch_key(team, id, b.id));
            }
            self.update_licenses_of(tx, ix::BY_PRODUCT, team, id.as_bytes(), |l| {
                l.product_ids.retain(|p| *p != id)
            })?;
            self.update_policies_of(tx, team, |p| {
                let before = p.product_ids.len();
                p.product_ids.retain(|other| *other != id);
                p.product_ids.len() != before
            })?;
            let gone = self.delete_releases_where(tx, team, |r| r.product_id == id)?;
            tx.del(product_key(team, id));
            Ok(gone)
        })
        .await
    }

    async fn list_products(
        &self,
        team: TeamId,
        query: &ProductListQuery,
    ) -> StoreResult<Page<Product>> {
        let items = self
            .scan::<Product>(&key(&[&[tag::PRODUCT], team.as_bytes()]))?
            .into_iter()
            .filter(|p| product_matches(p, &query.filter))
            .collect();
        Ok(page_of(items, &query.paging, |a, b| {
            compare_products(a, b, query.sort, query.paging.direction)
        }))
    }

    async fn create_branch(&self, b: &Branch, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.get(&product_key(b.team_id, b.product_id))?
                .ok_or(StoreError::NotFound(Entity::Product))?;
            let existing: Vec<Branch> = self.scan(&key(&[
                &[tag::BRANCH],
                b.team_id.as_bytes(),
                b.product_id.as_bytes(),
            ]))?;
            if existing.iter().any(|o| o.name == b.name) {
                return Err(StoreError::conflict(
                    "name",
                    "a branch of this name already exists for this product",
                ));
            }
            tx.put_record(branch_key(b.team_id, b.product_id, b.id), b)
        })
        .await
    }

    async fn list_branches(&self, team: TeamId, product: ProductId) -> StoreResult<Vec<Branch>> {
        self.get_record::<Product>(&product_key(team, product))?
            .ok_or(StoreError::NotFound(Entity::Product))?;
        let mut branches: Vec<Branch> =
            self.scan(&key(&[&[tag::BRANCH], team.as_bytes(), product.as_bytes()]))?;
        branches.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(branches)
    }

    async fn delete_branch(
        &self,
        team: TeamId,
        product: ProductId,
        id: BranchId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.journaled(journal, |tx| {
            tx.get(&product_key(team, product))?
                .ok_or(StoreError::NotFound(Entity::Product))?;
            tx.get(&branch_key(team, product, id))?
                .ok_or(StoreError::NotFound(Entity::Branch))?;
            let gone = self.delete_releases_where(tx, team, |r| r.branch_id == Some(id))?;
            tx.del(branch_key(team, product, id));
            Ok(gone)
        })
        .await
    }
}

impl ReleaseStore for SledStore {
    async fn create_release(&self, r: &Release, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            self.check_release_refs(tx, r)?;
            self.put_release(tx, r)
        })
        .await
    }

    async fn get_release(&self, team: TeamId, id: ReleaseId) -> StoreResult<Option<Release>> {
        Ok(self.get_record(&release_key(team, id))?)
    }

    async fn update_release(&self, r: &Release, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let stored: Release = tx
                .get_record(&release_key(r.team_id, r.id))?
                .ok_or(StoreError::NotFound(Entity::Release))?;
            let r = Release {
                artifacts: stored.artifacts,
                ..r.clone()
            };
            self.check_release_refs(tx, &r)?;
            self.put_release(tx, &r)
        })
        .await
    }

    async fn add_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: &licensing_core::model::Artifact,
        journal: &Journal,
    ) -> StoreResult<Release> {
        self.journaled(journal, |tx| {
            let mut stored: Release = tx
                .get_record(&release_key(team, release))?
                .ok_or(StoreError::NotFound(Entity::Release))?;
            licensing_core::store::put_artifact(&mut stored, artifact)?;
            tx.put_record(release_key(team, release), &stored)?;
            Ok(stored)
        })
        .await
    }

    async fn remove_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: licensing_core::ArtifactId,
        journal: &Journal,
    ) -> StoreResult<licensing_core::model::Artifact> {
        self.journaled(journal, |tx| {
            let mut stored: Release = tx
                .get_record(&release_key(team, release))?
                .ok_or(StoreError::NotFound(Entity::Release))?;
            let gone = licensing_core::store::take_artifact(&mut stored, artifact)?;
            tx.put_record(release_key(team, release), &stored)?;
            Ok(gone)
        })
        .await
    }

    async fn delete_release(
        &self,
        team: TeamId,
        id: ReleaseId,
        journal: &Journal,
    ) -> StoreResult<Release> {
        self.journaled(journal, |tx| {
            let r: Release = tx
                .get_record(&release_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Release))?;
            tx.del(release_key(team, id));
            Ok(r)
        })
        .await
    }

    async fn list_releases(
        &self,
        team: TeamId,
        query: &ReleaseListQuery,
    ) -> StoreResult<Page<Release>> {
        let items = self
            .team_releases(team)?
            .into_iter()
            .filter(|r| release_matches(r, &query.filter))
            .collect();
        Ok(page_of(items, &query.paging, |a, b| {
            compare_releases(a, b, query.sort, query.paging.direction)
        }))
    }

    async fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> StoreResult<(Vec<Branch>, Vec<Release>)> {
        let branches = self.scan(&key(&[&[tag::BRANCH], team.as_bytes(), product.as_bytes()]))?;
        let releases = self
            .team_releases(team)?
            .into_iter()
            .filter(|r| r.product_id == product)
            .collect();
        Ok((branches, releases))
    }
}
