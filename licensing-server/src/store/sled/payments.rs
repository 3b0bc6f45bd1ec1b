//! (ext) Payment integrations, received events and their links. An applied event's mark is
//! staged with the write of its effect ([`stage_inbound`], from the journal), under the
//! developer mutex that serializes every developer write: the decision reads what no other
//! write can change meanwhile.

use licensing_core::InboundId;
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{Inbound, InboundEvent, Integration, PaymentLink};
use licensing_core::store::{INBOUND_PRUNE_BATCH, PaymentStore, record_applied};

use super::*;

fn provider_byte(p: Provider) -> u8 {
    match p {
        Provider::Stripe => 1,
        Provider::Paddle => 2,
        Provider::LemonSqueezy => 3,
    }
}

fn integration_key(team: TeamId, p: Provider) -> Vec<u8> {
    key(&[&[tag::INTEGRATION], team.as_bytes(), &[provider_byte(p)]])
}

fn inbound_key(team: TeamId, id: InboundId) -> Vec<u8> {
    key(&[&[tag::INBOUND], team.as_bytes(), id.as_bytes()])
}

/// The pruning index: tags (2), time (8), team (16), id (16).
fn inbound_time_key(e: &InboundEvent) -> Vec<u8> {
    key(&[
        &[tag::INDEX, tag::INBOUND],
        &keys::time(e.received_at),
        e.team_id.as_bytes(),
        e.id.as_bytes(),
    ])
}

fn applied_key(team: TeamId, p: Provider, event_id: &str) -> Vec<u8> {
    key(&[
        &[tag::INBOUND_APPLIED],
        team.as_bytes(),
        &[provider_byte(p)],
        event_id.as_bytes(),
    ])
}

fn link_key(team: TeamId, p: Provider, subject: &str) -> Vec<u8> {
    key(&[
        &[tag::PAYMENT_LINK],
        team.as_bytes(),
        &[provider_byte(p)],
        subject.as_bytes(),
    ])
}

fn stage_event(tx: &mut Tx<'_>, e: &InboundEvent) -> StoreResult<()> {
    tx.put_record(inbound_key(e.team_id, e.id), e)?;
    tx.put(inbound_time_key(e), Vec::new());
    Ok(())
}

/// Stages an applied event's mark (refused as [`record_applied`] decides).
pub(super) fn stage_inbound(tx: &mut Tx<'_>, inbound: &Inbound) -> StoreResult<()> {
    let e = &inbound.event;
    let applied = tx
        .get(&applied_key(e.team_id, e.provider, &e.event_id))?
        .and_then(|v| <[u8; 16]>::try_from(v.as_slice()).ok())
        .map(|b| InboundId::from(uuid::Uuid::from_bytes(b)));
    let mut failed = None;
    let links = record_applied(inbound, applied, |subject| {
        match tx.get_record::<PaymentLink>(&link_key(e.team_id, e.provider, subject)) {
            Ok(link) => link,
            Err(err) => {
                failed = Some(err);
                None
            }
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    for link in links? {
        tx.put_record(link_key(link.team_id, link.provider, &link.subject), &link)?;
    }
    tx.put(
        applied_key(e.team_id, e.provider, &e.event_id),
        e.id.as_bytes().to_vec(),
    );
    stage_event(tx, e)
}

impl PaymentStore for SledStore {
    async fn get_integration(
        &self,
        team: TeamId,
        provider: Provider,
    ) -> StoreResult<Option<Integration>> {
        Ok(self.get_record(&integration_key(team, provider))?)
    }

    async fn list_integrations(&self, team: TeamId) -> StoreResult<Vec<Integration>> {
        self.scan(&key(&[&[tag::INTEGRATION], team.as_bytes()]))
    }

    async fn put_integration(&self, i: &Integration, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(i.team_id)?;
            tx.put_record(integration_key(i.team_id, i.provider), i)
        })
        .await
    }

    async fn delete_integration(
        &self,
        team: TeamId,
        provider: Provider,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let k = integration_key(team, provider);
            tx.get(&k)?
                .ok_or(StoreError::NotFound(Entity::Integration))?;
            tx.del(k);
            Ok(())
        })
        .await
    }

    async fn record_inbound(&self, event: &InboundEvent) -> StoreResult<()> {
        self.durable(|tx| stage_event(tx, event)).await
    }

    async fn apply_inbound(&self, inbound: &Inbound) -> StoreResult<()> {
        let journal = Journal {
            inbound: Some(Box::new(inbound.clone())),
            ..Journal::NONE
        };
        self.journaled(&journal, |_| Ok(())).await
    }

    async fn inbound_applied(
        &self,
        team: TeamId,
        provider: Provider,
        event_id: &str,
    ) -> StoreResult<Option<InboundId>> {
        Ok(self
            .inner
            .tree
            .get(applied_key(team, provider, event_id))
            .map_err(backend)?
            .and_then(|v| <[u8; 16]>::try_from(v.as_ref()).ok())
            .map(|b| InboundId::from(uuid::Uuid::from_bytes(b))))
    }

    async fn get_inbound(&self, team: TeamId, id: InboundId) -> StoreResult<Option<InboundEvent>> {
        Ok(self.get_record(&inbound_key(team, id))?)
    }

    async fn list_inbound(
        &self,
        team: TeamId,
        query: &licensing_core::api::requests::InboundQuery,
    ) -> StoreResult<Page<InboundEvent>> {
        let mut matching = Vec::new();
        // Ids are time-ordered: the newest last in the key order.
        for kv in self
            .inner
            .tree
            .scan_prefix(key(&[&[tag::INBOUND], team.as_bytes()]))
            .rev()
        {
            let (_, v) = kv.map_err(backend)?;
            let e: InboundEvent = decode(&v)?;
            if query.provider.is_none_or(|p| p == e.provider)
                && query.status.is_none_or(|s| s == e.status)
            {
                matching.push(e);
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

    async fn payment_link(
        &self,
        team: TeamId,
        provider: Provider,
        subject: &str,
    ) -> StoreResult<Option<PaymentLink>> {
        Ok(self.get_record(&link_key(team, provider, subject))?)
    }

    async fn list_payment_links(&self, team: TeamId) -> StoreResult<Vec<PaymentLink>> {
        self.scan(&key(&[&[tag::PAYMENT_LINK], team.as_bytes()]))
    }

    async fn restore_payment_links(&self, links: &[PaymentLink]) -> StoreResult<()> {
        self.durable(|tx| {
            for link in links {
                tx.put_record(link_key(link.team_id, link.provider, &link.subject), link)?;
            }
            Ok(())
        })
        .await
    }

    async fn prune_inbound(&self, before: Timestamp) -> StoreResult<u64> {
        let prefix = [tag::INDEX, tag::INBOUND];
        let end = key(&[&prefix, &keys::time(before)]);
        let doomed = self.first_keys(&prefix, end, INBOUND_PRUNE_BATCH as usize)?;
        if doomed.is_empty() {
            return Ok(0);
        }
        let count = doomed.len() as u64;
        self.journaled(&Journal::NONE, |tx| {
            for k in doomed {
                let (Some(team), Some(id)) = (k.get(10..26), k.get(26..42)) else {
                    return Err(StoreError::backend("inbound index key of the wrong length"));
                };
                let record = key(&[&[tag::INBOUND], team, id]);
                if let Some(e) = tx.get_record::<InboundEvent>(&record)? {
                    let mark = applied_key(e.team_id, e.provider, &e.event_id);
                    if tx.get(&mark)?.as_deref() == Some(e.id.as_bytes().as_slice()) {
                        tx.del(mark);
                    }
                }
                tx.del(record);
                tx.del(k.to_vec());
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }
}
