//! (ext) Payment integrations, received events and their links. An applied event's mark is
//! inserted in the transaction of its effect ([`stage_inbound`], from the journal): the links it
//! names are locked first, the decision is core's [`record_applied`], and the unique indexes
//! settle a race between instances that both decided before either committed (the later insert
//! waits for the earlier transaction, then fails as the same refusal).

use licensing_core::InboundId;
use licensing_core::api::requests::InboundQuery;
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{
    ALREADY_LINKED, DUPLICATE_EVENT, Inbound, InboundEvent, Integration, LinkChange, PaymentLink,
};
use licensing_core::store::{
    Entity, INBOUND_PRUNE_BATCH, Journal, Page, PaymentStore, StoreError, StoreResult,
    record_applied,
};
use licensing_core::{TeamId, Timestamp};

use super::*;

const INSERT_EVENT: &str =
    "INSERT INTO inbound_events (id, team_id, provider, event_id, status, received_at, doc)
     VALUES ($1, $2, $3, $4, $5, $6, $7)";

fn violated(e: &sqlx::Error, name: &str) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.constraint() == Some(name))
}

async fn insert_event(conn: &mut sqlx::PgConnection, e: &InboundEvent) -> Result<(), sqlx::Error> {
    sqlx::query(INSERT_EVENT)
        .bind(e.id.as_uuid())
        .bind(e.team_id.as_uuid())
        .bind(e.provider.as_str())
        .bind(&e.event_id)
        .bind(e.status.as_str())
        .bind(ms(e.received_at))
        .bind(json(e))
        .execute(conn)
        .await
        .map(drop)
}

/// Inserts an applied event's mark and writes its links, in the caller's transaction.
pub(crate) async fn stage_inbound(
    conn: &mut sqlx::PgConnection,
    inbound: &Inbound,
) -> PgResult<()> {
    let e = &inbound.event;
    let subjects: Vec<&str> = match &inbound.links {
        LinkChange::None => Vec::new(),
        LinkChange::Create(links) => links.iter().map(|l| l.subject.as_str()).collect(),
        LinkChange::Advance { subject, more, .. } => std::iter::once(subject.as_str())
            .chain(more.iter().map(|l| l.subject.as_str()))
            .collect(),
    };
    let stored: Vec<PaymentLink> = fetch_docs(
        &mut *conn,
        sqlx::query(
            "SELECT doc FROM payment_links WHERE team_id = $1 AND provider = $2
               AND subject = ANY($3) ORDER BY subject FOR UPDATE",
        )
        .bind(e.team_id.as_uuid())
        .bind(e.provider.as_str())
        .bind(&subjects),
    )
    .await?;
    let applied: Option<uuid::Uuid> = sqlx::query_scalar(
        "SELECT id FROM inbound_events WHERE team_id = $1 AND provider = $2 AND event_id = $3
           AND status = 'applied'",
    )
    .bind(e.team_id.as_uuid())
    .bind(e.provider.as_str())
    .bind(&e.event_id)
    .fetch_optional(&mut *conn)
    .await?;
    let links = record_applied(inbound, applied.map(InboundId::from), |subject| {
        stored.iter().find(|l| l.subject == subject).cloned()
    })?;
    for link in &links {
        let written = sqlx::query(
            "INSERT INTO payment_links (team_id, provider, subject, doc) VALUES ($1, $2, $3, $4)
             ON CONFLICT (team_id, provider, subject) DO UPDATE SET doc = EXCLUDED.doc
             WHERE (payment_links.doc ->> 'licenseId') = (EXCLUDED.doc ->> 'licenseId')",
        )
        .bind(link.team_id.as_uuid())
        .bind(link.provider.as_str())
        .bind(&link.subject)
        .bind(json(link))
        .execute(&mut *conn)
        .await?;
        if written.rows_affected() == 0 {
            // Another instance linked it to another license meanwhile.
            return Err(StoreError::Conflict {
                field: ALREADY_LINKED,
                message: format!("{} has a license already", link.subject),
            }
            .into());
        }
    }
    match insert_event(conn, e).await {
        Ok(()) => Ok(()),
        Err(err) if violated(&err, "inbound_events_applied_once") => Err(StoreError::Conflict {
            field: DUPLICATE_EVENT,
            message: format!("event {} was applied already", e.event_id),
        }
        .into()),
        Err(err) => Err(err.into()),
    }
}

impl PaymentStore for PgStore {
    async fn get_integration(
        &self,
        team: TeamId,
        provider: Provider,
    ) -> StoreResult<Option<Integration>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM integrations WHERE team_id = $1 AND provider = $2")
                .bind(team.as_uuid())
                .bind(provider.as_str()),
        )
        .await?)
    }

    async fn list_integrations(&self, team: TeamId) -> StoreResult<Vec<Integration>> {
        let mut all: Vec<Integration> = fetch_docs(
            &self.pool,
            sqlx::query("SELECT doc FROM integrations WHERE team_id = $1").bind(team.as_uuid()),
        )
        .await?;
        all.sort_by_key(|i| i.provider);
        Ok(all)
    }

    async fn put_integration(&self, i: &Integration, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO integrations (team_id, provider, doc) VALUES ($1, $2, $3)
                 ON CONFLICT (team_id, provider) DO UPDATE SET doc = EXCLUDED.doc",
            )
            .bind(i.team_id.as_uuid())
            .bind(i.provider.as_str())
            .bind(json(i))
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, &[("integrations_team_id_fkey", team_missing)]))?;
            Ok(())
        })
    }

    async fn delete_integration(
        &self,
        team: TeamId,
        provider: Provider,
        journal: &Journal,
    ) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done = sqlx::query("DELETE FROM integrations WHERE team_id = $1 AND provider = $2")
                .bind(team.as_uuid())
                .bind(provider.as_str())
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(Entity::Integration).into());
            }
            Ok(())
        })
    }

    async fn record_inbound(&self, event: &InboundEvent) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await.map_err(backend)?;
        insert_event(&mut conn, event).await.map_err(backend)
    }

    async fn apply_inbound(&self, inbound: &Inbound) -> StoreResult<()> {
        let journal = Journal {
            inbound: Some(Box::new(inbound.clone())),
            ..Journal::NONE
        };
        in_tx!(self.pool, &journal, |tx| {
            let _ = &mut tx;
            Ok(())
        })
    }

    async fn inbound_applied(
        &self,
        team: TeamId,
        provider: Provider,
        event_id: &str,
    ) -> StoreResult<Option<InboundId>> {
        let id: Option<uuid::Uuid> = sqlx::query_scalar(
            "SELECT id FROM inbound_events WHERE team_id = $1 AND provider = $2 AND event_id = $3
               AND status = 'applied'",
        )
        .bind(team.as_uuid())
        .bind(provider.as_str())
        .bind(event_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        Ok(id.map(InboundId::from))
    }

    async fn get_inbound(&self, team: TeamId, id: InboundId) -> StoreResult<Option<InboundEvent>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query("SELECT doc FROM inbound_events WHERE team_id = $1 AND id = $2")
                .bind(team.as_uuid())
                .bind(id.as_uuid()),
        )
        .await?)
    }

    async fn list_inbound(
        &self,
        team: TeamId,
        query: &InboundQuery,
    ) -> StoreResult<Page<InboundEvent>> {
        macro_rules! filter {
            () => {
                "FROM inbound_events WHERE team_id = $1
                   AND ($2::text IS NULL OR provider = $2) AND ($3::text IS NULL OR status = $3)"
            };
        }
        const COUNT: &str = concat!("SELECT count(*) ", filter!());
        const PAGE: &str = concat!(
            "SELECT doc ",
            filter!(),
            " ORDER BY id DESC LIMIT $4 OFFSET $5"
        );
        let provider = query.provider.map(Provider::as_str);
        let status = query.status.map(|s| s.as_str());
        let total: i64 = sqlx::query_scalar(COUNT)
            .bind(team.as_uuid())
            .bind(provider)
            .bind(status)
            .fetch_one(&self.pool)
            .await
            .map_err(backend)?;
        let size = i64::from(query.paging.page_size);
        let mut items: Vec<InboundEvent> = fetch_docs(
            &self.pool,
            sqlx::query(PAGE)
                .bind(team.as_uuid())
                .bind(provider)
                .bind(status)
                .bind(size + 1)
                .bind(i64::try_from(query.paging.offset()).unwrap_or(i64::MAX)),
        )
        .await?;
        let has_next_page = items.len() as i64 > size;
        items.truncate(query.paging.page_size as usize);
        Ok(Page {
            items,
            total: u64::try_from(total).unwrap_or(0),
            has_next_page,
        })
    }

    async fn payment_link(
        &self,
        team: TeamId,
        provider: Provider,
        subject: &str,
    ) -> StoreResult<Option<PaymentLink>> {
        Ok(fetch_doc(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM payment_links WHERE team_id = $1 AND provider = $2 AND subject = $3",
            )
            .bind(team.as_uuid())
            .bind(provider.as_str())
            .bind(subject),
        )
        .await?)
    }

    async fn list_payment_links(&self, team: TeamId) -> StoreResult<Vec<PaymentLink>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM payment_links WHERE team_id = $1 ORDER BY provider, subject",
            )
            .bind(team.as_uuid()),
        )
        .await?)
    }

    async fn restore_payment_links(&self, links: &[PaymentLink]) -> StoreResult<()> {
        in_tx!(self.pool, |tx| {
            for link in links {
                sqlx::query(
                    "INSERT INTO payment_links (team_id, provider, subject, doc) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (team_id, provider, subject) DO UPDATE SET doc = EXCLUDED.doc",
                )
                .bind(link.team_id.as_uuid())
                .bind(link.provider.as_str())
                .bind(&link.subject)
                .bind(json(link))
                .execute(&mut *tx)
                .await
                .map_err(|e| constraint(e, &[("payment_links_team_id_fkey", team_missing)]))?;
            }
            Ok(())
        })
    }

    async fn prune_inbound(&self, before: Timestamp) -> StoreResult<u64> {
        const DELETE: &str = "DELETE FROM inbound_events WHERE id IN
               (SELECT id FROM inbound_events WHERE received_at < $1 ORDER BY received_at LIMIT $2)";
        Ok(super::prune(&self.pool, DELETE, before, INBOUND_PRUNE_BATCH as usize).await?)
    }
}
