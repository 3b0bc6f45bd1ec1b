//! Webhook endpoints, queued events and deliveries.
//!
//! Keys: `W` | team | endpoint holds an endpoint; `E` | event (time-ordered) a queued event;
//! `D` | team | endpoint | delivery (time-ordered) a delivery, and `[i, D]` | event | delivery
//! its place among the pending ones, in chain order (the value is team | endpoint | next attempt
//! | resource, so that a claim reads no record it does not send), removed when it finishes;
//! `e` | team | license the license's mark of a raised client event (its value, big-endian).

use licensing_core::model::{
    DeliveryStatus, HealthChange, WebhookDelivery, WebhookEndpoint, WebhookEvent, apply_health,
    disabled_alert, fan_out,
};
use licensing_core::{DeliveryId, EventId, WebhookId};

use super::SledResult;
use super::*;

/// Pending deliveries a claim looks at, at most (the oldest first).
const PENDING_SCAN: usize = 10_000;

fn endpoint_key(team: TeamId, id: WebhookId) -> Vec<u8> {
    key(&[&[tag::WEBHOOK], team.as_bytes(), id.as_bytes()])
}

pub(super) fn event_key(id: EventId) -> Vec<u8> {
    key(&[&[tag::EVENT], id.as_bytes()])
}

fn delivery_key(team: TeamId, endpoint: WebhookId, id: DeliveryId) -> Vec<u8> {
    key(&[
        &[tag::DELIVERY],
        team.as_bytes(),
        endpoint.as_bytes(),
        id.as_bytes(),
    ])
}

pub(super) fn event_mark_key(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::EVENT_MARK], team.as_bytes(), license.as_bytes()])
}

fn pending_key(d: &WebhookDelivery) -> Vec<u8> {
    key(&[
        &[tag::INDEX, tag::DELIVERY],
        d.event_id.as_bytes(),
        d.id.as_bytes(),
    ])
}

/// Where the team and endpoint end in a pending index value, and where the next attempt ends.
const OWNER_END: usize = 32;
const NEXT_END: usize = 40;

/// The pending index entry of `d`, when it is pending.
pub(super) fn pending_entry(d: &WebhookDelivery) -> Option<(Vec<u8>, Vec<u8>)> {
    (d.status == DeliveryStatus::Pending).then(|| {
        let next = d.next_attempt_at.map_or(i64::MAX, Timestamp::as_millis);
        let value = key(&[
            d.team_id.as_bytes(),
            d.endpoint_id.as_bytes(),
            &next.to_be_bytes(),
            d.resource.as_bytes(),
        ]);
        (pending_key(d), value)
    })
}

fn put_delivery(tx: &mut Tx<'_>, d: &WebhookDelivery) -> StoreResult<()> {
    match pending_entry(d) {
        Some((k, v)) => tx.put(k, v),
        None => tx.del(pending_key(d)),
    }
    tx.put_record(delivery_key(d.team_id, d.endpoint_id, d.id), d)
}

impl SledStore {
    fn endpoints_of(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>> {
        self.scan(&key(&[&[tag::WEBHOOK], team.as_bytes()]))
    }

    /// The deliveries a worker may send at `now`: the first pending one of each chain (endpoint
    /// and resource), if due, oldest event first, at most `limit`; see
    /// [`first_of_chains`](licensing_core::model::first_of_chains). Walks the pending index in
    /// chain order and stops at `limit`, reading only the records it returns.
    fn due_deliveries(&self, now: Timestamp, limit: usize) -> SledResult<Vec<WebhookDelivery>> {
        let damaged = || StoreError::backend("a pending delivery index entry is damaged");
        let mut chains: HashSet<Vec<u8>> = HashSet::new();
        let mut out = Vec::new();
        let prefix = [tag::INDEX, tag::DELIVERY];
        for kv in self.inner.tree.scan_prefix(prefix).take(PENDING_SCAN) {
            if out.len() >= limit {
                break;
            }
            let (k, v) = kv?;
            let next = v.get(OWNER_END..NEXT_END).ok_or_else(damaged)?;
            let chain = [&v[16..OWNER_END], &v[NEXT_END..]].concat();
            if !chains.insert(chain) {
                continue;
            }
            let next = i64::from_be_bytes(next.try_into().map_err(|_| damaged())?);
            if next > now.as_millis() {
                continue;
            }
            let uuid = |b: &[u8]| uuid::Uuid::from_bytes(b.try_into().unwrap_or_default());
            let (team, endpoint) = (
                TeamId::from_uuid(uuid(&v[..16])),
                WebhookId::from_uuid(uuid(&v[16..OWNER_END])),
            );
            let id = DeliveryId::from_uuid(uuid::Uuid::from_bytes(id16(&k)?));
            if let Some(d) =
                self.get_record::<WebhookDelivery>(&delivery_key(team, endpoint, id))?
                && d.status == DeliveryStatus::Pending
            {
                out.push(d);
            }
        }
        Ok(out)
    }
}

impl WebhookStore for SledStore {
    async fn create_webhook(&self, e: &WebhookEndpoint, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(e.team_id)?;
            tx.put_record(endpoint_key(e.team_id, e.id), e)
        })
        .await
    }

    async fn get_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        Ok(self.get_record(&endpoint_key(team, id))?)
    }

    async fn list_webhooks(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>> {
        let mut out = self.endpoints_of(team)?;
        out.sort_by_key(|e| (e.created_at, e.id));
        Ok(out)
    }

    async fn update_webhook(&self, e: &WebhookEndpoint, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let k = endpoint_key(e.team_id, e.id);
            if tx.get(&k)?.is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            tx.put_record(k, e)
        })
        .await
    }

    async fn delete_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let k = endpoint_key(team, id);
            if tx.get(&k)?.is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            tx.del(k);
            let prefix = key(&[&[tag::DELIVERY], team.as_bytes(), id.as_bytes()]);
            for kv in self.inner.tree.scan_prefix(prefix) {
                let (k, v) = kv.map_err(backend)?;
                let delivery: WebhookDelivery = decode(&v)?;
                tx.del(pending_key(&delivery));
                tx.del(k.to_vec());
            }
            Ok(())
        })
        .await
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
        // A success on a healthy endpoint changes nothing: answered without the write lock.
        if ok {
            let endpoint: Option<WebhookEndpoint> = self.get_record(&endpoint_key(team, id))?;
            if endpoint.as_ref().is_none_or(|e| e.failing_since.is_none()) {
                return Ok(endpoint.map(|endpoint| HealthChange {
                    endpoint,
                    disabled_now: false,
                }));
            }
        }
        self.durable(|tx| {
            let k = endpoint_key(team, id);
            let Some(mut endpoint) = tx.get_record::<WebhookEndpoint>(&k)? else {
                return Ok(None);
            };
            let before = endpoint.clone();
            let disabled_now = apply_health(&mut endpoint, ok, now, disable_after_ms);
            if endpoint != before {
                tx.put_record(k, &endpoint)?;
            }
            if let Some(to) = endpoint
                .alert_email
                .as_deref()
                .filter(|_| disabled_now && alert)
            {
                let m = disabled_alert(&endpoint, to, now);
                tx.put_record(outbox_key(m.id), &m)?;
                tx.put(outbox_due_key(&m), Vec::new());
            }
            Ok(Some(HealthChange {
                endpoint,
                disabled_now,
            }))
        })
        .await
    }

    async fn fan_out_events(&self, now: Timestamp, limit: usize) -> StoreResult<usize> {
        let mut events: Vec<WebhookEvent> = Vec::new();
        for kv in self.inner.tree.scan_prefix([tag::EVENT]).take(limit) {
            let (_, v) = kv.map_err(backend)?;
            events.push(decode(&v)?);
        }
        if events.is_empty() {
            return Ok(0);
        }
        // Not flushed before it returns: lost with the process, the events are still queued
        // (their queueing was durable) and are fanned out again, and their deliveries sent
        // again (at least once, under the same `webhook-id`).
        self.write(Touch::Nothing, &Journal::NONE, |tx| {
            let mut endpoints: HashMap<TeamId, Vec<WebhookEndpoint>> = HashMap::new();
            for event in &events {
                let of_team = match endpoints.entry(event.team_id) {
                    std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(self.endpoints_of(event.team_id)?)
                    }
                };
                for d in fan_out(event, of_team, now) {
                    put_delivery(tx, &d)?;
                }
                tx.del(event_key(event.id));
            }
            Ok(events.len())
        })
        .await
        .map(|(n, _batch)| n)
    }

    async fn raise_events(&self, events: &[RaisedEvent]) -> StoreResult<usize> {
        if events.is_empty() {
            return Ok(0);
        }
        self.durable(|tx| {
            let mut queued = 0;
            for raised in events {
                if let Some((license, mark)) = raised.once {
                    let team = raised.event.team_id;
                    if tx.get(&license_key(team, license))?.is_none() {
                        continue;
                    }
                    let k = event_mark_key(team, license);
                    let value = mark.to_be_bytes();
                    if tx.get(&k)?.as_deref() == Some(value.as_slice()) {
                        continue;
                    }
                    tx.put(k, value.to_vec());
                }
                tx.put_record(event_key(raised.event.id), &raised.event)?;
                queued += 1;
            }
            Ok(queued)
        })
        .await
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        _lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        // One process owns a sled store, and its worker claims a batch only after the last one
        // finished: no lease is needed.
        Ok(self.due_deliveries(now, limit)?)
    }

    async fn insert_delivery(&self, d: &WebhookDelivery, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            if tx.get(&endpoint_key(d.team_id, d.endpoint_id))?.is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            put_delivery(tx, d)
        })
        .await
    }

    async fn update_delivery(&self, d: &WebhookDelivery) -> StoreResult<()> {
        // Not flushed before it returns: an outcome lost with the process leaves the delivery
        // pending, and it is sent again (at least once); the next flush keeps it.
        self.write(Touch::Nothing, &Journal::NONE, |tx| {
            if tx
                .get(&delivery_key(d.team_id, d.endpoint_id, d.id))?
                .is_none()
            {
                return Ok(());
            }
            put_delivery(tx, d)
        })
        .await
        .map(|((), _batch)| ())
    }

    async fn get_delivery(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        id: DeliveryId,
    ) -> StoreResult<Option<WebhookDelivery>> {
        Ok(self.get_record(&delivery_key(team, endpoint, id))?)
    }

    async fn list_deliveries(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        paging: &Paging,
    ) -> StoreResult<Page<WebhookDelivery>> {
        let prefix = key(&[&[tag::DELIVERY], team.as_bytes(), endpoint.as_bytes()]);
        let total = self.inner.tree.scan_prefix(&prefix).count() as u64;
        let newest_first = paging.direction == SortDirection::Desc;
        let skip = usize::try_from(paging.offset()).unwrap_or(usize::MAX);
        let take = paging.page_size as usize;
        let iter = self.inner.tree.scan_prefix(&prefix);
        let rows: Vec<_> = if newest_first {
            iter.rev().skip(skip).take(take).collect()
        } else {
            iter.skip(skip).take(take).collect()
        };
        let items = rows
            .into_iter()
            .map(|kv| kv.map_err(backend).and_then(|(_, v)| decode(&v)))
            .collect::<StoreResult<Vec<WebhookDelivery>>>()?;
        Ok(Page {
            has_next_page: (skip + items.len()) < total as usize,
            items,
            total,
        })
    }

    async fn prune_deliveries(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        // Delivery ids are time-ordered, but their creation time is in the record: walk every
        // team's deliveries oldest first and drop finished ones created before `before`.
        let mut gone = Vec::new();
        for kv in self.inner.tree.scan_prefix([tag::DELIVERY]) {
            let (k, v) = kv.map_err(backend)?;
            let d: WebhookDelivery = decode(&v)?;
            if d.status != DeliveryStatus::Pending && d.created_at < before {
                gone.push(k.to_vec());
                if gone.len() == limit {
                    break;
                }
            }
        }
        if gone.is_empty() {
            return Ok(0);
        }
        let n = gone.len() as u64;
        self.durable(|tx| {
            for k in gone {
                tx.del(k);
            }
            Ok(())
        })
        .await?;
        Ok(n)
    }
}
