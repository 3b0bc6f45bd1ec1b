//! Licenses, and the developer API's view of their devices and addresses; the client API's atomic unit is in `activity.rs`.

use super::*;

impl LicenseStore for SledStore {
    async fn create_license(&self, l: &License, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            check_license_refs(tx, l)?;
            put_license(tx, l, None)
        })
        .await
    }

    async fn create_license_with_mail(
        &self,
        l: &License,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            check_license_refs(tx, l)?;
            tx.queue_mail(l.team_id, mail, (daily_limit, "license e-mails"), now)?;
            put_license(tx, l, None)
        })
        .await
    }

    async fn get_license(&self, team: TeamId, id: LicenseId) -> StoreResult<Option<License>> {
        Ok(self
            .get_record(&license_key(team, id))?
            .map(|l| self.inner.refreshes.overlay(l)))
    }

    async fn get_license_by_key(
        &self,
        team: TeamId,
        k: &LicenseKey,
    ) -> StoreResult<Option<License>> {
        // A remembered id is used only if its license still has this key (see `key_ids.rs`).
        if let Some(id) = self.inner.key_ids.get(team, k)
            && let Some(l) = self.get_record::<License>(&license_key(team, id))?
            && l.license_key == *k
        {
            return Ok(Some(self.inner.refreshes.overlay(l)));
        }
        match self
            .inner
            .tree
            .get(license_by_key(team, k))
            .map_err(backend)?
        {
            None => {
                self.inner.key_ids.forget(team, k);
                Ok(None)
            }
            Some(id) => {
                let found =
                    self.get_record::<License>(&key(&[&[tag::LICENSE], team.as_bytes(), &id]))?;
                if let Some(l) = &found {
                    self.inner.key_ids.remember(team, *k, l.id);
                }
                Ok(found.map(|l| self.inner.refreshes.overlay(l)))
            }
        }
    }

    async fn update_license(&self, l: &License, journal: &Journal) -> StoreResult<()> {
        self.journaled_touching(journal, Touch::License(l.id), |tx| {
            let old: License = tx
                .get_record(&license_key(l.team_id, l.id))?
                .ok_or(StoreError::NotFound(Entity::License))?;
            check_license_refs(tx, l)?;
            put_license(tx, l, Some(&old))
        })
        .await
    }

    async fn delete_license(
        &self,
        team: TeamId,
        id: LicenseId,
        journal: &Journal,
    ) -> StoreResult<License> {
        self.journaled_touching(journal, Touch::License(id), |tx| {
            let old: License = tx
                .get_record(&license_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::License))?;
            for table in [tag::HWID, tag::IP] {
                for prefix in [
                    key(&[&[table], team.as_bytes(), id.as_bytes()]),
                    super::seen::license_prefix(table, team, id),
                ] {
                    for k in self.inner.tree.scan_prefix(prefix).keys() {
                        tx.del(k.map_err(backend)?.to_vec());
                    }
                }
                tx.del(tally_key(table, team, id));
            }
            for prefix in [
                super::floating::license_prefix(team, id),
                super::usage::counters_prefix(team, id),
                super::usage::answers_prefix(team, id),
            ] {
                for k in self.inner.tree.scan_prefix(prefix).keys() {
                    tx.del(k.map_err(backend)?.to_vec());
                }
            }
            for mut r in self.team_releases(team)? {
                if r.allowed_license_ids.contains(&id) {
                    r.allowed_license_ids.retain(|l| *l != id);
                    tx.put_record(release_key(team, r.id), &r)?;
                }
            }
            reindex(tx, license_indexes(&old), Vec::new());
            tx.del(license_by_key(team, &old.license_key));
            tx.del(super::webhooks::event_mark_key(team, id));
            tx.del(license_key(team, id));
            tx.add_count(count_key(tag::LICENSE, team), -1)?;
            Ok(old)
        })
        .await
    }

    async fn list_licenses(
        &self,
        team: TeamId,
        query: &LicenseListQuery,
    ) -> StoreResult<Page<License>> {
        self.settle().await?;
        let f = &query.filter;
        let load = |id: [u8; 16]| {
            self.get_record::<License>(&key(&[&[tag::LICENSE], team.as_bytes(), &id]))
                .map_err(StoreError::from)
        };
        // Candidates from the reverse indexes: of each filter given, the licenses it lets
        // through, intersected (`customerSearch`'s from the team's customers it finds, every
        // customer read once).
        let mut sets: Vec<HashSet<LicenseId>> = Vec::new();
        if let Some(text) = &f.customer_search {
            let mut ids = HashSet::new();
            let prefix = key(&[&[tag::CUSTOMER], team.as_bytes()]);
            for kv in self.inner.tree.scan_prefix(&prefix) {
                let (k, v) = kv.map_err(backend)?;
                if k.len() != prefix.len() + 16 {
                    continue;
                }
                let customer: Customer = super::codec::decode(&v)?;
                if customer_matches(&customer, Some(text)) {
                    ids.extend(self.license_ids_by(
                        ix::BY_CUSTOMER,
                        team,
                        customer.id.as_bytes(),
                    )?);
                }
            }
            sets.push(ids);
        }
        if let Some(text) = &f.device_search {
            // The licenses of the team's devices it finds, every device record read once
            // (a search from the dashboard, not a path clients take).
            let mut ids = HashSet::new();
            let prefix = key(&[&[tag::HWID], team.as_bytes()]);
            for kv in self.inner.tree.scan_prefix(&prefix) {
                let (k, v) = kv.map_err(backend)?;
                if k.len() != prefix.len() + 32 {
                    continue;
                }
                let device: licensing_core::model::Hwid = super::codec::decode(&v)?;
                if licensing_core::store::device_matches(&device, text) {
                    ids.insert(device.license_id);
                }
            }
            sets.push(ids);
        }
        let any_of = |index: u8, owners: &mut dyn Iterator<Item = &[u8; 16]>| {
            let mut ids = HashSet::new();
            for owner in owners {
                ids.extend(self.license_ids_by(index, team, owner)?);
            }
            Ok::<_, StoreError>(ids)
        };
        if !f.product_ids.is_empty() {
            // Those that list one, and those on a policy that grants one.
            let mut ids = any_of(
                ix::BY_PRODUCT,
                &mut f.product_ids.iter().map(|p| p.as_bytes()),
            )?;
            ids.extend(any_of(
                ix::BY_POLICY,
                &mut f.product_policies.iter().map(|p| p.as_bytes()),
            )?);
            sets.push(ids);
        }
        if !f.customer_ids.is_empty() {
            sets.push(any_of(
                ix::BY_CUSTOMER,
                &mut f.customer_ids.iter().map(|c| c.as_bytes()),
            )?);
        }
        if let Some(p) = &f.policy_id {
            sets.push(any_of(ix::BY_POLICY, &mut std::iter::once(p.as_bytes()))?);
        }
        if let Some(e) = &f.entitlement {
            // The licenses that list it and those of its products.
            let mut ids = any_of(ix::BY_ENTITLEMENT, &mut std::iter::once(e.id.as_bytes()))?;
            ids.extend(any_of(
                ix::BY_PRODUCT,
                &mut e.products.iter().map(|p| p.as_bytes()),
            )?);
            ids.extend(any_of(
                ix::BY_POLICY,
                &mut e.policies.iter().map(|p| p.as_bytes()),
            )?);
            sets.push(ids);
        }
        sets.sort_by_key(HashSet::len);
        let candidates = sets.into_iter().reduce(|mut smallest, other| {
            smallest.retain(|id| other.contains(id));
            smallest
        });
        // The key search, status, expiration type and suspension filters, and the order, from
        // the team's table when it is built (`license_table.rs`): only the page is read.
        let by_row = f.search.is_some()
            || f.expiry.is_some()
            || f.expires_within.is_some()
            || f.expiration_type.is_some()
            || f.suspended.is_some();
        // Only the creation and change times have an index to walk in order.
        let index = match query.sort {
            LicenseSort::CreatedAt => Some(ix::CREATED),
            LicenseSort::UpdatedAt => Some(ix::UPDATED),
            LicenseSort::ExpirationDate | LicenseSort::LastActiveAt => None,
        };
        let by_metadata = f.metadata_key.is_some() || f.metadata_search.is_some();
        if !by_metadata
            && (by_row || candidates.is_some() || index.is_none())
            && let Some(table) = self.license_table(team).await?
        {
            let (ids, total, has_next_page) = table
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .select(f, candidates.as_ref(), query.sort, &query.paging);
            let mut items = Vec::with_capacity(ids.len());
            for id in ids {
                // A license changed since the table was read is checked again.
                if let Some(l) = load(*id.as_bytes())?
                    && license_matches(&l, f)
                {
                    items.push(l);
                }
            }
            return Ok(Page {
                items,
                total,
                has_next_page,
            });
        }
        if let Some(ids) = candidates {
            let mut items = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(l) = load(*id.as_bytes())?
                    && license_matches(&l, f)
                {
                    items.push(l);
                }
            }
            return Ok(page_of(items, &query.paging, |a, b| {
                compare_licenses(a, b, query.sort, query.paging.direction)
            }));
        }
        let Some(index) = index else {
            // An order no index keeps (with a metadata filter, or without the team's table):
            // every license of the team, sorted here.
            let mut items = Vec::new();
            for kv in self
                .inner
                .tree
                .scan_prefix(key(&[&[tag::LICENSE], team.as_bytes()]))
            {
                let l = decode::<License>(&kv.map_err(backend)?.1)?;
                if license_matches(&l, f) {
                    items.push(l);
                }
            }
            return Ok(page_of(items, &query.paging, |a, b| {
                compare_licenses(a, b, query.sort, query.paging.direction)
            }));
        };
        let filtered = by_row || by_metadata;
        let accept = |l: &License| license_matches(l, f);
        self.walk_index(
            &index_prefix(tag::LICENSE, index, team),
            &query.paging,
            load,
            filtered.then_some(&accept as &dyn Fn(&License) -> bool),
            self.count(tag::LICENSE, team)?,
        )
    }
}

/// Writes `records` (of one kind, checked to be the license's) in `tx`, each replacing the record
/// with its key, and keeps the kind's tally.
fn restore_records<R: UsageRecord + seen::Keyed + Record>(
    tx: &mut Tx<'_>,
    team: TeamId,
    license: LicenseId,
    records: &[R],
) -> StoreResult<()> {
    let count = tally_key(R::TABLE, team, license);
    let mut tally = Tally::read(tx, &count)?;
    for r in records {
        let old = tx.get_record::<R>(&r.storage_key())?;
        if let Some(old) = &old {
            tally.remove(old.forgotten());
        }
        tally.total += 1;
        if r.forgotten() {
            tally.forget();
        }
        tx.put_usage(old.as_ref(), r)?;
    }
    tx.put(count, tally.encode().to_vec());
    Ok(())
}

impl DeviceStore for SledStore {
    async fn forget_within_budget(
        &self,
        team: TeamId,
        license: LicenseId,
        record: licensing_core::model::UsageRef,
        budget: licensing_core::model::SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<licensing_core::model::SelfServiceReset> {
        Ok(self
            .forget_usage_within_budget((team, license), record, budget, now, journal)
            .await?)
    }

    async fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> StoreResult<()> {
        check_usage_owner(team, license, hwids, ips)?;
        self.durable_touching(Touch::License(license), |tx| {
            if tx.get(&license_key(team, license))?.is_none() {
                return Err(StoreError::NotFound(Entity::License));
            }
            restore_records(tx, team, license, hwids)?;
            restore_records(tx, team, license, ips)?;
            Ok(())
        })
        .await
    }

    async fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<Hwid>> {
        self.settle().await?;
        self.require_license(team, license)?;
        Ok(list_usage(self.usage(tag::HWID, team, license)?, query))
    }

    async fn set_hwid_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: HwidId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Hwid> {
        Ok(self
            .set_forgotten(journal, team, license, *id.as_uuid(), forgotten, now)
            .await?)
    }

    async fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<IpRecord>> {
        self.settle().await?;
        self.require_license(team, license)?;
        Ok(list_usage(self.usage(tag::IP, team, license)?, query))
    }

    async fn set_ip_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: IpId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<IpRecord> {
        Ok(self
            .set_forgotten(journal, team, license, *id.as_uuid(), forgotten, now)
            .await?)
    }
}

impl ActivityStore for SledStore {
    async fn record_activity(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        self.record(team, license, rules, activity, now).await
    }

    async fn register_device(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        hardware_id: &licensing_core::validate::HardwareId,
        override_limit: bool,
        now: Timestamp,
    ) -> StoreResult<Result<licensing_core::store::RegisteredDevice, Denial>> {
        self.register((team, license), rules, hardware_id, override_limit, now)
            .await
    }

    /// The license by key with the request's own device and address records: a request
    /// whose records count already is then admitted from these reads, without reading the
    /// license again.
    async fn read_license_for_activity(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> StoreResult<Option<LicenseRead>> {
        let Some(license) = self.get_license_by_key(team, key).await? else {
            return Ok(None);
        };
        let own = self.own_records(&license, activity)?;
        Ok(Some(LicenseRead {
            license,
            own: Some(own),
            mark: None,
        }))
    }

    async fn record_activity_after(
        &self,
        read: &LicenseRead,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        match &read.own {
            Some((hwid, ip)) => {
                self.record_read(
                    &read.license,
                    hwid.as_ref(),
                    ip.as_ref(),
                    rules,
                    activity,
                    now,
                )
                .await
            }
            None => {
                let license = &read.license;
                self.record(license.team_id, license.id, rules, activity, now)
                    .await
            }
        }
    }
}
