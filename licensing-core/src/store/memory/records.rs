//! Licenses, customers, products and releases in memory.

use super::*;

impl LicenseStore for MemoryStore {
    async fn create_license(&self, license: &License, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_license_refs(license)?;
            s.licenses.insert(license.id, license.clone());
            Ok(())
        })
    }

    async fn create_license_with_mail(
        &self,
        license: &License,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_license_refs(license)?;
            let day = (license.team_id, OutboxMessage::day_of(now));
            let queued = s.mail_per_day.get(&day).copied().unwrap_or(0);
            if queued + mail.len() as u64 > u64::from(daily_limit) {
                return Err(StoreError::Limit(format!(
                    "at most {daily_limit} license e-mails a day per team; try again tomorrow"
                )));
            }
            s.licenses.insert(license.id, license.clone());
            for m in mail {
                s.outbox.insert(m.id, m.clone());
            }
            *s.mail_per_day.entry(day).or_default() += mail.len() as u64;
            Ok(())
        })
    }

    async fn get_license(&self, team: TeamId, id: LicenseId) -> StoreResult<Option<License>> {
        self.with(|s| Ok(owned(&s.licenses, &id, team, |l| l.team_id).cloned()))
    }

    async fn get_license_by_key(
        &self,
        team: TeamId,
        key: &LicenseKey,
    ) -> StoreResult<Option<License>> {
        self.with(|s| {
            Ok(s.licenses
                .values()
                .find(|l| l.team_id == team && &l.license_key == key)
                .cloned())
        })
    }

    async fn update_license(&self, license: &License, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.license(license.team_id, license.id)?;
            s.check_license_refs(license)?;
            s.licenses.insert(license.id, license.clone());
            Ok(())
        })
    }

    async fn delete_license(
        &self,
        team: TeamId,
        id: LicenseId,
        journal: &Journal,
    ) -> StoreResult<License> {
        self.write(journal, |s| {
            s.license(team, id)?;
            let license = s
                .licenses
                .remove(&id)
                .ok_or(StoreError::NotFound(Entity::License))?;
            s.hwids.retain(|_, h| h.license_id != id);
            s.ips.retain(|_, r| r.license_id != id);
            s.floating.retain(|_, f| f.license_id != id);
            s.event_marks.remove(&id);
            s.usage.retain(|(l, _, _), _| *l != id);
            s.usage_answers.retain(|(l, _), _| *l != id);
            for r in s.releases.values_mut() {
                r.allowed_license_ids.retain(|l| *l != id);
            }
            Ok(license)
        })
    }

    async fn list_licenses(
        &self,
        team: TeamId,
        query: &LicenseListQuery,
    ) -> StoreResult<Page<License>> {
        self.with(|s| {
            // `customerSearch`: the team's customers it finds.
            let found: Option<HashSet<CustomerId>> =
                query.filter.customer_search.as_ref().map(|text| {
                    s.customers
                        .values()
                        .filter(|c| c.team_id == team && customer_matches(c, Some(text)))
                        .map(|c| c.id)
                        .collect()
                });
            // `deviceSearch`: the licenses of the team's devices it finds.
            let with_device: Option<HashSet<LicenseId>> =
                query.filter.device_search.as_ref().map(|text| {
                    s.hwids
                        .values()
                        .filter(|h| h.team_id == team && device_matches(h, text))
                        .map(|h| h.license_id)
                        .collect()
                });
            let items = s
                .licenses
                .values()
                .filter(|l| {
                    l.team_id == team
                        && license_matches(l, &query.filter)
                        && with_device.as_ref().is_none_or(|ids| ids.contains(&l.id))
                        && found
                            .as_ref()
                            .is_none_or(|f| l.customer_ids.iter().any(|c| f.contains(c)))
                })
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_licenses(a, b, query.sort, query.paging.direction)
            }))
        })
    }
}

impl CustomerStore for MemoryStore {
    async fn create_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&customer.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.customers.insert(customer.id, customer.clone());
            Ok(())
        })
    }

    async fn get_customer(&self, team: TeamId, id: CustomerId) -> StoreResult<Option<Customer>> {
        self.with(|s| Ok(owned(&s.customers, &id, team, |c| c.team_id).cloned()))
    }

    async fn get_customers(&self, team: TeamId, ids: &[CustomerId]) -> StoreResult<Vec<Customer>> {
        self.with(|s| {
            Ok(ids
                .iter()
                .filter_map(|id| owned(&s.customers, id, team, |c| c.team_id).cloned())
                .collect())
        })
    }

    async fn update_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.customers, &customer.id, customer.team_id, |c| c.team_id)
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            s.customers.insert(customer.id, customer.clone());
            Ok(())
        })
    }

    async fn delete_customer(
        &self,
        team: TeamId,
        id: CustomerId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.customers, &id, team, |c| c.team_id)
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            s.customers.remove(&id);
            for l in s.licenses.values_mut().filter(|l| l.team_id == team) {
                l.customer_ids.retain(|c| *c != id);
            }
            Ok(())
        })
    }

    async fn customers_with_email(&self, team: TeamId, email: &str) -> StoreResult<Vec<Customer>> {
        let wanted = email.to_lowercase();
        self.with(|s| {
            let mut found: Vec<Customer> = s
                .customers
                .values()
                .filter(|c| {
                    c.team_id == team
                        && c.email
                            .as_ref()
                            .is_some_and(|e| e.as_str().to_lowercase() == wanted)
                })
                .cloned()
                .collect();
            found.sort_by_key(|c| (c.created_at, c.id));
            Ok(found)
        })
    }

    async fn list_customers(
        &self,
        team: TeamId,
        query: &CustomerListQuery,
    ) -> StoreResult<Page<Customer>> {
        self.with(|s| {
            let items = s
                .customers
                .values()
                .filter(|c| c.team_id == team && customer_matches(c, query.filter.as_ref()))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_customers(a, b, query.sort, query.paging.direction)
            }))
        })
    }
}

impl EntitlementStore for MemoryStore {
    async fn create_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&e.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            admit_entitlement(
                s.entitlements.values().filter(|o| o.team_id == e.team_id),
                e,
            )?;
            s.entitlements.insert(e.id, e.clone());
            Ok(())
        })
    }

    async fn get_entitlement(
        &self,
        team: TeamId,
        id: crate::EntitlementId,
    ) -> StoreResult<Option<Entitlement>> {
        self.with(|s| Ok(owned(&s.entitlements, &id, team, |e| e.team_id).cloned()))
    }

    async fn list_entitlements(&self, team: TeamId) -> StoreResult<Vec<Entitlement>> {
        self.with(|s| {
            let mut all: Vec<Entitlement> = s
                .entitlements
                .values()
                .filter(|e| e.team_id == team)
                .cloned()
                .collect();
            all.sort_by_key(|e| (e.created_at, e.id));
            Ok(all)
        })
    }

    async fn update_entitlement(&self, e: &Entitlement, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            let stored = owned(&s.entitlements, &e.id, e.team_id, |o| o.team_id)
                .ok_or(StoreError::NotFound(Entity::Entitlement))?;
            let mut next = e.clone();
            next.code.clone_from(&stored.code);
            s.entitlements.insert(e.id, next);
            Ok(())
        })
    }

    async fn delete_entitlement(
        &self,
        team: TeamId,
        id: crate::EntitlementId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.entitlements, &id, team, |e| e.team_id)
                .ok_or(StoreError::NotFound(Entity::Entitlement))?;
            s.entitlements.remove(&id);
            for l in s.licenses.values_mut().filter(|l| l.team_id == team) {
                l.entitlement_ids.retain(|e| *e != id);
            }
            for p in s.products.values_mut().filter(|p| p.team_id == team) {
                p.entitlement_ids.retain(|e| *e != id);
            }
            for p in s.policies.values_mut().filter(|p| p.team_id == team) {
                p.entitlement_ids.retain(|e| *e != id);
            }
            Ok(())
        })
    }
}

impl PolicyStore for MemoryStore {
    async fn create_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&p.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            admit_policy(s.policies.values().filter(|o| o.team_id == p.team_id), p)?;
            s.policies.insert(p.id, p.clone());
            Ok(())
        })
    }

    async fn get_policy(&self, team: TeamId, id: crate::PolicyId) -> StoreResult<Option<Policy>> {
        self.with(|s| Ok(owned(&s.policies, &id, team, |p| p.team_id).cloned()))
    }

    async fn list_policies(&self, team: TeamId) -> StoreResult<Vec<Policy>> {
        self.with(|s| {
            let mut all: Vec<Policy> = s
                .policies
                .values()
                .filter(|p| p.team_id == team)
                .cloned()
                .collect();
            all.sort_by_key(|p| (p.created_at, p.id));
            Ok(all)
        })
    }

    async fn update_policy(&self, p: &Policy, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.policies, &p.id, p.team_id, |o| o.team_id)
                .ok_or(StoreError::NotFound(Entity::Policy))?;
            s.policies.insert(p.id, p.clone());
            Ok(())
        })
    }

    async fn count_policy_licenses(&self, team: TeamId, id: crate::PolicyId) -> StoreResult<u64> {
        self.with(|s| {
            Ok(s.licenses
                .values()
                .filter(|l| l.team_id == team && l.policy_id == Some(id))
                .count() as u64)
        })
    }

    async fn delete_policy(
        &self,
        team: TeamId,
        id: crate::PolicyId,
        detach: bool,
        journal: &Journal,
    ) -> StoreResult<u64> {
        self.write(journal, |s| {
            let policy = owned(&s.policies, &id, team, |p| p.team_id)
                .cloned()
                .ok_or(StoreError::NotFound(Entity::Policy))?;
            let on_it: Vec<LicenseId> = s
                .licenses
                .values()
                .filter(|l| l.team_id == team && l.policy_id == Some(id))
                .map(|l| l.id)
                .collect();
            if !on_it.is_empty() && !detach {
                return Err(policy_in_use(on_it.len() as u64));
            }
            for license in &on_it {
                if let Some(l) = s.licenses.get_mut(license) {
                    *l = l.detached(&policy);
                }
            }
            s.policies.remove(&id);
            Ok(on_it.len() as u64)
        })
    }
}

impl ProductStore for MemoryStore {
    async fn create_product(&self, product: &Product, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&product.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.products.insert(product.id, product.clone());
            Ok(())
        })
    }

    async fn get_product(&self, team: TeamId, id: ProductId) -> StoreResult<Option<Product>> {
        self.with(|s| Ok(owned(&s.products, &id, team, |p| p.team_id).cloned()))
    }

    async fn get_products(&self, team: TeamId, ids: &[ProductId]) -> StoreResult<Vec<Product>> {
        self.with(|s| {
            Ok(ids
                .iter()
                .filter_map(|id| owned(&s.products, id, team, |p| p.team_id).cloned())
                .collect())
        })
    }

    async fn update_product(&self, product: &Product, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.products, &product.id, product.team_id, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            s.products.insert(product.id, product.clone());
            Ok(())
        })
    }

    async fn delete_product(
        &self,
        team: TeamId,
        id: ProductId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.write(journal, |s| {
            owned(&s.products, &id, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            s.products.remove(&id);
            s.branches.retain(|_, b| b.product_id != id);
            for l in s.licenses.values_mut().filter(|l| l.team_id == team) {
                l.product_ids.retain(|p| *p != id);
            }
            for p in s.policies.values_mut().filter(|p| p.team_id == team) {
                p.product_ids.retain(|p| *p != id);
            }
            Ok(s.remove_releases(|r| r.product_id != id))
        })
    }

    async fn list_products(
        &self,
        team: TeamId,
        query: &ProductListQuery,
    ) -> StoreResult<Page<Product>> {
        self.with(|s| {
            let items = s
                .products
                .values()
                .filter(|p| p.team_id == team && product_matches(p, &query.filter))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_products(a, b, query.sort, query.paging.direction)
            }))
        })
    }

    async fn create_branch(&self, branch: &Branch, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.products, &branch.product_id, branch.team_id, |p| {
                p.team_id
            })
            .ok_or(StoreError::NotFound(Entity::Product))?;
            if s.branches
                .values()
                .any(|b| b.product_id == branch.product_id && b.name == branch.name)
            {
                return Err(StoreError::conflict(
                    "name",
                    "a branch of this name already exists for this product",
                ));
            }
            s.branches.insert(branch.id, branch.clone());
            Ok(())
        })
    }

    async fn list_branches(&self, team: TeamId, product: ProductId) -> StoreResult<Vec<Branch>> {
        self.with(|s| {
            owned(&s.products, &product, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            let mut branches: Vec<Branch> = s
                .branches
                .values()
                .filter(|b| b.product_id == product)
                .cloned()
                .collect();
            branches.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(branches)
        })
    }

    async fn delete_branch(
        &self,
        team: TeamId,
        product: ProductId,
        id: BranchId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.write(journal, |s| {
            owned(&s.products, &product, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            owned(&s.branches, &id, team, |b| b.team_id)
                .filter(|b| b.product_id == product)
                .ok_or(StoreError::NotFound(Entity::Branch))?;
            s.branches.remove(&id);
            Ok(s.remove_releases(|r| r.branch_id != Some(id)))
        })
    }
}

impl ReleaseStore for MemoryStore {
    async fn create_release(&self, release: &Release, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_release_refs(release)?;
            s.put_release(release);
            Ok(())
        })
    }

    async fn get_release(&self, team: TeamId, id: ReleaseId) -> StoreResult<Option<Release>> {
        self.with(|s| Ok(owned(&s.releases, &id, team, |r| r.team_id).cloned()))
    }

    async fn update_release(&self, release: &Release, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            let stored = owned(&s.releases, &release.id, release.team_id, |r| r.team_id)
                .ok_or(StoreError::NotFound(Entity::Release))?;
            let release = Release {
                artifacts: stored.artifacts.clone(),
                ..release.clone()
            };
            s.check_release_refs(&release)?;
            s.put_release(&release);
            Ok(())
        })
    }

    async fn add_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: &crate::model::Artifact,
        journal: &Journal,
    ) -> StoreResult<Release> {
        self.write(journal, |s| {
            let mut stored = owned(&s.releases, &release, team, |r| r.team_id)
                .cloned()
                .ok_or(StoreError::NotFound(Entity::Release))?;
            crate::store::put_artifact(&mut stored, artifact)?;
            s.releases.insert(release, stored.clone());
            Ok(stored)
        })
    }

    async fn remove_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: crate::ArtifactId,
        journal: &Journal,
    ) -> StoreResult<crate::model::Artifact> {
        self.write(journal, |s| {
            let mut stored = owned(&s.releases, &release, team, |r| r.team_id)
                .cloned()
                .ok_or(StoreError::NotFound(Entity::Release))?;
            let gone = crate::store::take_artifact(&mut stored, artifact)?;
            s.releases.insert(release, stored);
            Ok(gone)
        })
    }

    async fn delete_release(
        &self,
        team: TeamId,
        id: ReleaseId,
        journal: &Journal,
    ) -> StoreResult<Release> {
        self.write(journal, |s| {
            owned(&s.releases, &id, team, |r| r.team_id)
                .ok_or(StoreError::NotFound(Entity::Release))?;
            s.releases
                .remove(&id)
                .ok_or(StoreError::NotFound(Entity::Release))
        })
    }

    async fn list_releases(
        &self,
        team: TeamId,
        query: &ReleaseListQuery,
    ) -> StoreResult<Page<Release>> {
        self.with(|s| {
            let items = s
                .releases
                .values()
                .filter(|r| r.team_id == team && release_matches(r, &query.filter))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_releases(a, b, query.sort, query.paging.direction)
            }))
        })
    }

    async fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> StoreResult<(Vec<Branch>, Vec<Release>)> {
        self.with(|s| {
            let branches = s
                .branches
                .values()
                .filter(|b| b.team_id == team && b.product_id == product)
                .cloned()
                .collect();
            let releases = s
                .releases
                .values()
                .filter(|r| r.team_id == team && r.product_id == product)
                .cloned()
                .collect();
            Ok((branches, releases))
        })
    }
}
