//! The blacklist, the outbox, statistics and the audit log in memory.

use super::*;

impl BlacklistStore for MemoryStore {
    async fn create_blacklist_entry(
        &self,
        entry: &BlacklistEntry,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&entry.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            let dup = s.blacklist.values().any(|e| {
                e.team_id == entry.team_id && e.kind == entry.kind && e.value == entry.value
            });
            if dup {
                return Err(StoreError::conflict("value", "is already on the blacklist"));
            }
            s.blacklist.insert(entry.id, entry.clone());
            Ok(())
        })
    }

    async fn list_blacklist(&self, team: TeamId) -> StoreResult<Vec<BlacklistEntry>> {
        self.with(|s| {
            let mut entries: Vec<BlacklistEntry> = s
                .blacklist
                .values()
                .filter(|e| e.team_id == team)
                .cloned()
                .collect();
            entries.sort_by_key(|e| (e.created_at, e.id));
            Ok(entries)
        })
    }

    async fn delete_blacklist_entry(
        &self,
        team: TeamId,
        id: BlacklistId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.blacklist, &id, team, |e| e.team_id)
                .ok_or(StoreError::NotFound(Entity::Blacklist))?;
            s.blacklist.remove(&id);
            Ok(())
        })
    }

    async fn add_blacklist_hits(
        &self,
        team: TeamId,
        hits: &[(BlacklistId, u64)],
    ) -> StoreResult<()> {
        self.with(|s| {
            for (id, n) in hits {
                if let Some(e) = s.blacklist.get_mut(id).filter(|e| e.team_id == team) {
                    e.hits += n;
                }
            }
            Ok(())
        })
    }
}

impl OutboxStore for MemoryStore {
    async fn queue_messages(
        &self,
        team: TeamId,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.with(|s| {
            if !s.teams.contains_key(&team) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            let day = (team, OutboxMessage::day_of(now));
            let queued = s.mail_per_day.get(&day).copied().unwrap_or(0);
            if queued + mail.len() as u64 > u64::from(daily_limit) {
                return Err(StoreError::Limit(format!(
                    "at most {daily_limit} e-mails a day per team; try again tomorrow"
                )));
            }
            for m in mail {
                s.outbox.insert(m.id, m.clone());
            }
            *s.mail_per_day.entry(day).or_default() += mail.len() as u64;
            Ok(())
        })
    }

    async fn due_messages(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<OutboxMessage>> {
        self.with(|s| {
            let mut due: Vec<OutboxMessage> = s
                .outbox
                .values()
                .filter(|m| m.next_attempt_at <= now)
                .cloned()
                .collect();
            due.sort_by_key(|m| (m.next_attempt_at, m.id));
            due.truncate(limit);
            Ok(due)
        })
    }

    async fn message_sent(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.with(|s| {
            s.outbox.remove(&message.id);
            Ok(())
        })
    }

    async fn message_failed(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.with(|s| {
            if let Some(m) = s.outbox.get_mut(&message.id) {
                *m = message.clone();
            }
            Ok(())
        })
    }
}

impl StatsStore for MemoryStore {
    async fn add_hourly(&self, team: TeamId, counts: &HourlyStats) -> StoreResult<()> {
        self.with(|s| {
            s.stats
                .entry((team, counts.hour))
                .or_insert_with(|| HourlyStats {
                    hour: counts.hour,
                    ..HourlyStats::default()
                })
                .merge(counts);
            Ok(())
        })
    }

    async fn hourly_since(&self, team: TeamId, since: i64) -> StoreResult<Vec<HourlyStats>> {
        self.with(|s| {
            let mut buckets: Vec<HourlyStats> = s
                .stats
                .iter()
                .filter(|((t, hour), _)| *t == team && *hour >= since)
                .map(|(_, b)| b.clone())
                .collect();
            buckets.sort_by_key(|b| b.hour);
            Ok(buckets)
        })
    }

    async fn overview(&self, team: TeamId, active_since: Timestamp) -> StoreResult<Overview> {
        self.with(|s| {
            let licenses = s.licenses.values().filter(|l| l.team_id == team);
            Ok(Overview {
                total_licenses: licenses.clone().count() as u64,
                total_customers: s.customers.values().filter(|c| c.team_id == team).count() as u64,
                total_products: s.products.values().filter(|p| p.team_id == team).count() as u64,
                active_licenses: licenses
                    .filter(|l| l.last_active_at.is_some_and(|at| at >= active_since))
                    .count() as u64,
                total_requests: 0,
            })
        })
    }

    async fn top_products(&self, team: TeamId, limit: usize) -> StoreResult<Vec<TopProduct>> {
        self.with(|s| {
            let mut counts: HashMap<ProductId, u64> = HashMap::new();
            for l in s.licenses.values().filter(|l| l.team_id == team) {
                for p in &l.product_ids {
                    *counts.entry(*p).or_default() += 1;
                }
            }
            let top: Vec<TopProduct> = s
                .products
                .values()
                .filter(|p| p.team_id == team)
                .map(|p| TopProduct {
                    id: p.id,
                    name: p.name.clone(),
                    licenses: counts.get(&p.id).copied().unwrap_or(0),
                })
                .collect();
            Ok(rank_top_products(top, limit))
        })
    }

    async fn backlog(&self) -> StoreResult<crate::model::Backlog> {
        self.with(|s| {
            Ok(crate::model::Backlog {
                outbox_messages: s.outbox.len() as u64,
                queued_events: s.events.len() as u64,
                pending_deliveries: s
                    .deliveries
                    .values()
                    .filter(|d| d.status == crate::model::DeliveryStatus::Pending)
                    .count() as u64,
            })
        })
    }
}

impl AuditStore for MemoryStore {
    async fn record_journal(&self, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |_| Ok(()))
    }

    async fn list_audit(&self, team: TeamId, query: &AuditQuery) -> StoreResult<Page<AuditEntry>> {
        self.with(|s| {
            let mut found: Vec<&AuditEntry> = s
                .audit
                .iter()
                .filter(|e| e.team_id == team && query.matches(e))
                .collect();
            found.sort_by_key(|e| (e.at, e.id));
            if query.newest_first() {
                found.reverse();
            }
            let total = found.len() as u64;
            let (items, has_next_page) = query.paging.slice(found.into_iter().cloned());
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn restore_audit(&self, entries: &[AuditEntry]) -> StoreResult<()> {
        self.with(|s| {
            let ids: HashSet<crate::AuditId> = entries.iter().map(|e| e.id).collect();
            s.audit.retain(|e| !ids.contains(&e.id));
            s.audit.extend(entries.iter().cloned());
            Ok(())
        })
    }

    async fn prune_audit(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<(Timestamp, crate::AuditId)> = s
                .audit
                .iter()
                .filter(|e| e.at < before)
                .map(|e| (e.at, e.id))
                .collect();
            old.sort();
            old.truncate(limit);
            let gone: std::collections::HashSet<crate::AuditId> =
                old.iter().map(|(_, id)| *id).collect();
            s.audit.retain(|e| !gone.contains(&e.id));
            Ok(gone.len() as u64)
        })
    }
}
