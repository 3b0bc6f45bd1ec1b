//! Webhook endpoints and deliveries in memory.

use super::*;

impl WebhookStore for MemoryStore {
    async fn create_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&endpoint.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.webhooks.insert(endpoint.id, endpoint.clone());
            Ok(())
        })
    }

    async fn get_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        self.with(|s| Ok(owned(&s.webhooks, &id, team, |e| e.team_id).cloned()))
    }

    async fn list_webhooks(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>> {
        self.with(|s| {
            let mut out: Vec<WebhookEndpoint> = s
                .webhooks
                .values()
                .filter(|e| e.team_id == team)
                .cloned()
                .collect();
            out.sort_by_key(|e| (e.created_at, e.id));
            Ok(out)
        })
    }

    async fn update_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &endpoint.id, endpoint.team_id, |e| e.team_id).is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.webhooks.insert(endpoint.id, endpoint.clone());
            Ok(())
        })
    }

    async fn delete_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &id, team, |e| e.team_id).is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.webhooks.remove(&id);
            s.deliveries.retain(|_, d| d.endpoint_id != id);
            Ok(())
        })
    }

    async fn webhook_health(
        &self,
        team: TeamId,
        id: WebhookId,
        ok: bool,
        now: Timestamp,
        disable_after_ms: i64,
        alert: bool,
    ) -> StoreResult<Option<HealthChange>> {
        self.with(|s| {
            let Some(endpoint) = s.webhooks.get_mut(&id).filter(|e| e.team_id == team) else {
                return Ok(None);
            };
            let disabled_now = crate::model::apply_health(endpoint, ok, now, disable_after_ms);
            let endpoint = endpoint.clone();
            if let Some(to) = endpoint
                .alert_email
                .as_deref()
                .filter(|_| disabled_now && alert)
            {
                let m = crate::model::disabled_alert(&endpoint, to, now);
                s.outbox.insert(m.id, m);
            }
            Ok(Some(HealthChange {
                endpoint,
                disabled_now,
            }))
        })
    }

    async fn fan_out_events(&self, now: Timestamp, limit: usize) -> StoreResult<usize> {
        self.with(|s| {
            let taken: Vec<crate::EventId> = s.events.keys().take(limit).copied().collect();
            for id in &taken {
                if let Some(event) = s.events.remove(id) {
                    let endpoints: Vec<WebhookEndpoint> = s
                        .webhooks
                        .values()
                        .filter(|e| e.team_id == event.team_id)
                        .cloned()
                        .collect();
                    for d in crate::model::fan_out(&event, &endpoints, now) {
                        s.deliveries.insert(d.id, d);
                    }
                }
            }
            Ok(taken.len())
        })
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        _lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        self.with(|s| {
            Ok(crate::model::first_of_chains(
                s.deliveries.values().cloned(),
                now,
                limit,
            ))
        })
    }

    async fn insert_delivery(
        &self,
        delivery: &WebhookDelivery,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &delivery.endpoint_id, delivery.team_id, |e| {
                e.team_id
            })
            .is_none()
            {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.deliveries.insert(delivery.id, delivery.clone());
            Ok(())
        })
    }

    async fn update_delivery(&self, delivery: &WebhookDelivery) -> StoreResult<()> {
        self.with(|s| {
            if let Some(d) = s.deliveries.get_mut(&delivery.id) {
                *d = delivery.clone();
            }
            Ok(())
        })
    }

    async fn get_delivery(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        id: DeliveryId,
    ) -> StoreResult<Option<WebhookDelivery>> {
        self.with(|s| {
            Ok(s.deliveries
                .get(&id)
                .filter(|d| d.team_id == team && d.endpoint_id == endpoint)
                .cloned())
        })
    }

    async fn list_deliveries(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        paging: &Paging,
    ) -> StoreResult<Page<WebhookDelivery>> {
        self.with(|s| {
            let mut found: Vec<&WebhookDelivery> = s
                .deliveries
                .values()
                .filter(|d| d.team_id == team && d.endpoint_id == endpoint)
                .collect();
            found.sort_by_key(|d| d.id);
            if paging.direction == crate::api::requests::SortDirection::Desc {
                found.reverse();
            }
            let total = found.len() as u64;
            let (items, has_next_page) = paging.slice(found.into_iter().cloned());
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn raise_events(&self, events: &[RaisedEvent]) -> StoreResult<usize> {
        self.with(|s| {
            let mut queued = 0;
            for raised in events {
                if let Some((license, mark)) = raised.once {
                    if !s.licenses.contains_key(&license)
                        || s.event_marks.get(&license) == Some(&mark)
                    {
                        continue;
                    }
                    s.event_marks.insert(license, mark);
                }
                s.events.insert(raised.event.id, raised.event.clone());
                queued += 1;
            }
            Ok(queued)
        })
    }

    async fn prune_deliveries(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<DeliveryId> = s
                .deliveries
                .values()
                .filter(|d| {
                    d.status != crate::model::DeliveryStatus::Pending && d.created_at < before
                })
                .map(|d| d.id)
                .collect();
            old.sort();
            old.truncate(limit);
            for id in &old {
                s.deliveries.remove(id);
            }
            Ok(old.len() as u64)
        })
    }
}
