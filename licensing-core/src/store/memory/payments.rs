//! (ext) Payment integrations, received events and their links, in memory.

use super::*;

impl State {
    /// The links an applied event's mark writes, or its refusal (see [`record_applied`]).
    pub(super) fn decide_inbound(&self, inbound: &Inbound) -> StoreResult<Vec<PaymentLink>> {
        let e = &inbound.event;
        let applied = self
            .applied
            .get(&(e.team_id, e.provider, e.event_id.clone()))
            .copied();
        record_applied(inbound, applied, |subject| {
            self.links
                .get(&(e.team_id, e.provider, subject.to_owned()))
                .cloned()
        })
    }

    /// Writes an applied event's mark and its `links`.
    pub(super) fn record_inbound(&mut self, inbound: &Inbound, links: Vec<PaymentLink>) {
        let e = &inbound.event;
        self.applied
            .insert((e.team_id, e.provider, e.event_id.clone()), e.id);
        self.inbound.insert(e.id, e.clone());
        for link in links {
            self.links
                .insert((link.team_id, link.provider, link.subject.clone()), link);
        }
    }
}

impl PaymentStore for MemoryStore {
    async fn get_integration(
        &self,
        team: TeamId,
        provider: Provider,
    ) -> StoreResult<Option<Integration>> {
        self.with(|s| Ok(s.integrations.get(&(team, provider)).cloned()))
    }

    async fn list_integrations(&self, team: TeamId) -> StoreResult<Vec<Integration>> {
        self.with(|s| {
            let mut all: Vec<Integration> = s
                .integrations
                .values()
                .filter(|i| i.team_id == team)
                .cloned()
                .collect();
            all.sort_by_key(|i| i.provider);
            Ok(all)
        })
    }

    async fn put_integration(
        &self,
        integration: &Integration,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&integration.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.integrations.insert(
                (integration.team_id, integration.provider),
                integration.clone(),
            );
            Ok(())
        })
    }

    async fn delete_integration(
        &self,
        team: TeamId,
        provider: Provider,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            s.integrations
                .remove(&(team, provider))
                .map(drop)
                .ok_or(StoreError::NotFound(Entity::Integration))
        })
    }

    async fn record_inbound(&self, event: &InboundEvent) -> StoreResult<()> {
        self.with(|s| {
            s.inbound.insert(event.id, event.clone());
            Ok(())
        })
    }

    async fn apply_inbound(&self, inbound: &Inbound) -> StoreResult<()> {
        self.with(|s| {
            let links = s.decide_inbound(inbound)?;
            s.record_inbound(inbound, links);
            Ok(())
        })
    }

    async fn inbound_applied(
        &self,
        team: TeamId,
        provider: Provider,
        event_id: &str,
    ) -> StoreResult<Option<InboundId>> {
        self.with(|s| {
            Ok(s.applied
                .get(&(team, provider, event_id.to_owned()))
                .copied())
        })
    }

    async fn get_inbound(&self, team: TeamId, id: InboundId) -> StoreResult<Option<InboundEvent>> {
        self.with(|s| Ok(s.inbound.get(&id).filter(|e| e.team_id == team).cloned()))
    }

    async fn list_inbound(
        &self,
        team: TeamId,
        query: &InboundQuery,
    ) -> StoreResult<Page<InboundEvent>> {
        self.with(|s| {
            let matching: Vec<&InboundEvent> = s
                .inbound
                .values()
                .rev()
                .filter(|e| {
                    e.team_id == team
                        && query.provider.is_none_or(|p| p == e.provider)
                        && query.status.is_none_or(|st| st == e.status)
                })
                .collect();
            let total = matching.len() as u64;
            let (items, has_next_page) = query.paging.slice(matching.into_iter().cloned());
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn payment_link(
        &self,
        team: TeamId,
        provider: Provider,
        subject: &str,
    ) -> StoreResult<Option<PaymentLink>> {
        self.with(|s| Ok(s.links.get(&(team, provider, subject.to_owned())).cloned()))
    }

    async fn list_payment_links(&self, team: TeamId) -> StoreResult<Vec<PaymentLink>> {
        self.with(|s| {
            let mut all: Vec<PaymentLink> = s
                .links
                .values()
                .filter(|l| l.team_id == team)
                .cloned()
                .collect();
            all.sort_by(|a, b| (a.provider, &a.subject).cmp(&(b.provider, &b.subject)));
            Ok(all)
        })
    }

    async fn restore_payment_links(&self, links: &[PaymentLink]) -> StoreResult<()> {
        self.with(|s| {
            for link in links {
                s.links.insert(
                    (link.team_id, link.provider, link.subject.clone()),
                    link.clone(),
                );
            }
            Ok(())
        })
    }

    async fn prune_inbound(&self, before: Timestamp) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<(Timestamp, InboundId)> = s
                .inbound
                .values()
                .filter(|e| e.received_at < before)
                .map(|e| (e.received_at, e.id))
                .collect();
            old.sort_unstable();
            old.truncate(INBOUND_PRUNE_BATCH as usize);
            let old: Vec<InboundId> = old.into_iter().map(|(_, id)| id).collect();
            for id in &old {
                s.inbound.remove(id);
            }
            s.applied.retain(|_, id| !old.contains(id));
            Ok(old.len() as u64)
        })
    }
}
