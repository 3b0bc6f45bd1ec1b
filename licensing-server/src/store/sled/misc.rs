//! The blacklist, the e-mail outbox and statistics.

use super::*;

impl BlacklistStore for SledStore {
    async fn create_blacklist_entry(
        &self,
        e: &BlacklistEntry,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(e.team_id)?;
            let existing: Vec<BlacklistEntry> =
                self.scan(&key(&[&[tag::BLACKLIST], e.team_id.as_bytes()]))?;
            if existing
                .iter()
                .any(|o| o.kind == e.kind && o.value == e.value)
            {
                return Err(StoreError::conflict("value", "is already on the blacklist"));
            }
            tx.put_record(blacklist_key(e.team_id, e.id), e)
        })
        .await
    }

    async fn list_blacklist(&self, team: TeamId) -> StoreResult<Vec<BlacklistEntry>> {
        let mut entries: Vec<BlacklistEntry> =
            self.scan(&key(&[&[tag::BLACKLIST], team.as_bytes()]))?;
        entries.sort_by_key(|e| (e.created_at, e.id));
        Ok(entries)
    }

    async fn delete_blacklist_entry(
        &self,
        team: TeamId,
        id: BlacklistId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.get(&blacklist_key(team, id))?
                .ok_or(StoreError::NotFound(Entity::Blacklist))?;
            tx.del(blacklist_key(team, id));
            Ok(())
        })
        .await
    }

    async fn add_blacklist_hits(
        &self,
        team: TeamId,
        hits: &[(BlacklistId, u64)],
    ) -> StoreResult<()> {
        self.durable(|tx| {
            for (id, n) in hits {
                if let Some(mut e) = tx.get_record::<BlacklistEntry>(&blacklist_key(team, *id))? {
                    e.hits += n;
                    tx.put_record(blacklist_key(team, *id), &e)?;
                }
            }
            Ok(())
        })
        .await
    }
}

impl OutboxStore for SledStore {
    async fn queue_messages(
        &self,
        team: TeamId,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.durable(|tx| {
            tx.require_team(team)?;
            tx.queue_mail(team, mail, (daily_limit, "e-mails"), now)
        })
        .await
    }

    async fn due_messages(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<OutboxMessage>> {
        let prefix = [tag::INDEX, tag::OUTBOX];
        let end = key(&[&prefix, &keys::time(now), &[0xff; 17]]);
        let mut out = Vec::new();
        for k in self.first_keys(&prefix, end, limit)? {
            let id = MessageId::from_uuid(uuid::Uuid::from_bytes(id16(&k)?));
            if let Some(m) = self.get_record(&outbox_key(id))? {
                out.push(m);
            }
        }
        Ok(out)
    }

    async fn message_sent(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.durable(|tx| {
            if let Some(old) = tx.get_record::<OutboxMessage>(&outbox_key(message.id))? {
                tx.del(outbox_due_key(&old));
            }
            tx.del(outbox_key(message.id));
            Ok(())
        })
        .await
    }

    async fn message_failed(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.durable(|tx| {
            let Some(old) = tx.get_record::<OutboxMessage>(&outbox_key(message.id))? else {
                return Ok(());
            };
            tx.del(outbox_due_key(&old));
            tx.put(outbox_due_key(message), Vec::new());
            tx.put_record(outbox_key(message.id), message)
        })
        .await
    }
}

impl StatsStore for SledStore {
    async fn add_hourly(&self, team: TeamId, counts: &HourlyStats) -> StoreResult<()> {
        self.durable(|tx| {
            let k = stats_key(team, counts.hour);
            let mut bucket = tx.get_record::<HourlyStats>(&k)?.unwrap_or(HourlyStats {
                hour: counts.hour,
                ..HourlyStats::default()
            });
            bucket.merge(counts);
            tx.put_record(k, &bucket)
        })
        .await
    }

    async fn hourly_since(&self, team: TeamId, since: i64) -> StoreResult<Vec<HourlyStats>> {
        let start = stats_key(team, since);
        let end = keys::prefix_end(&key(&[&[tag::STATS], team.as_bytes()]));
        self.inner
            .tree
            .range(start..end)
            .map(|kv| kv.map_err(backend).and_then(|(_, v)| decode(&v)))
            .collect()
    }

    async fn overview(&self, team: TeamId, active_since: Timestamp) -> StoreResult<Overview> {
        self.settle().await?;
        let active_prefix = index_prefix(tag::LICENSE, ix::ACTIVE, team);
        let since = key(&[&active_prefix, &keys::time(active_since)]);
        let active = self
            .inner
            .tree
            .range(since..keys::prefix_end(&active_prefix))
            .count() as u64;
        Ok(Overview {
            total_licenses: self.count(tag::LICENSE, team)?,
            total_customers: self.count(tag::CUSTOMER, team)?,
            total_products: self
                .inner
                .tree
                .scan_prefix(key(&[&[tag::PRODUCT], team.as_bytes()]))
                .count() as u64,
            active_licenses: active,
            total_requests: 0,
        })
    }

    async fn top_products(&self, team: TeamId, limit: usize) -> StoreResult<Vec<TopProduct>> {
        let prefix = index_prefix(tag::LICENSE, ix::BY_PRODUCT, team);
        let mut counts: HashMap<[u8; 16], u64> = HashMap::new();
        for k in self.inner.tree.scan_prefix(&prefix).keys() {
            let k = k.map_err(backend)?;
            let product: [u8; 16] = k
                .get(prefix.len()..prefix.len() + 16)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| StoreError::backend("bad product index key"))?;
            *counts.entry(product).or_default() += 1;
        }
        let products: Vec<Product> = self.scan(&key(&[&[tag::PRODUCT], team.as_bytes()]))?;
        let top: Vec<TopProduct> = products
            .into_iter()
            .map(|p| TopProduct {
                licenses: counts.get(p.id.as_bytes()).copied().unwrap_or(0),
                id: p.id,
                name: p.name,
            })
            .collect();
        Ok(rank_top_products(top, limit))
    }

    async fn backlog(&self) -> StoreResult<licensing_core::model::Backlog> {
        let count = |prefix: &[u8]| self.inner.tree.scan_prefix(prefix).keys().count() as u64;
        Ok(licensing_core::model::Backlog {
            outbox_messages: count(&[tag::OUTBOX]),
            queued_events: count(&[tag::EVENT]),
            // The index of pending deliveries (`webhooks.rs`).
            pending_deliveries: count(&[tag::INDEX, tag::DELIVERY]),
        })
    }
}

impl AuditStore for SledStore {
    async fn record_journal(&self, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |_| Ok(())).await
    }

    async fn list_audit(&self, team: TeamId, query: &AuditQuery) -> StoreResult<Page<AuditEntry>> {
        let prefix = key(&[&[tag::AUDIT], team.as_bytes()]);
        // The time range narrows the scan; the other filters are checked per entry.
        let start = match query.from {
            Some(from) => key(&[&prefix, &keys::time(from)]),
            None => prefix.clone(),
        };
        let end = match query.to {
            Some(to) => key(&[&prefix, &keys::time(to)]),
            None => keys::prefix_end(&prefix),
        };
        let range = self.inner.tree.range(start..end).values();
        let decoded = |v: sled::Result<sled::IVec>| -> StoreResult<AuditEntry> {
            decode(&v.map_err(backend)?)
        };
        let mut matching = Vec::new();
        if query.newest_first() {
            for v in range.rev() {
                let e = decoded(v)?;
                if query.matches(&e) {
                    matching.push(e);
                }
            }
        } else {
            for v in range {
                let e = decoded(v)?;
                if query.matches(&e) {
                    matching.push(e);
                }
            }
        }
        let total = matching.len() as u64;
        let (items, has_next_page) = query.paging.slice(matching);
        Ok(Page {
            items,
            total,
            has_next_page,
        })
    }

    async fn restore_audit(&self, entries: &[AuditEntry]) -> StoreResult<()> {
        self.durable(|tx| {
            for entry in entries {
                tx.journal(&Journal::audit(entry.clone()))?;
            }
            Ok(())
        })
        .await
    }

    async fn prune_audit(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        let prefix = [tag::INDEX, tag::AUDIT];
        let end = key(&[&prefix, &keys::time(before)]);
        let doomed = self.first_keys(&prefix, end, limit)?;
        if doomed.is_empty() {
            return Ok(0);
        }
        let count = doomed.len() as u64;
        self.durable(|tx| {
            for k in doomed {
                // The index key: tags (2), time (8), team (16), id (16).
                let (Some(time), Some(team), Some(id)) =
                    (k.get(2..10), k.get(10..26), k.get(26..42))
                else {
                    return Err(StoreError::backend("audit index key of the wrong length"));
                };
                tx.del(key(&[&[tag::AUDIT], team, time, id]));
                tx.del(k.to_vec());
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }
}
