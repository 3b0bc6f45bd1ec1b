//! Webhook endpoints, the event queue (rows inserted by [`write_journal`](super::write_journal))
//! and deliveries, claimed with `FOR UPDATE SKIP LOCKED` so that the workers of several
//! instances never take one event or send one attempt twice.

use licensing_core::api::requests::{Paging, SortDirection};
use licensing_core::model::{
    DeliveryStatus, HealthChange, WebhookDelivery, WebhookEndpoint, WebhookEvent, apply_health,
    disabled_alert, fan_out,
};
use licensing_core::store::{
    Entity, Journal, Page, RaisedEvent, StoreError, StoreResult, WebhookStore,
};
use licensing_core::{DeliveryId, TeamId, Timestamp, WebhookId};
use sqlx::{PgConnection, Row as _};

use super::PgResult;
use super::fetch_page;
use super::tables::WEBHOOKS;
use super::{PgStore, backend, constraint, doc, in_tx, json, ms, opt_ms, page, team_missing};
use super::{fetch_doc, fetch_docs};

pub(super) async fn insert_event(conn: &mut PgConnection, e: &WebhookEvent) -> PgResult<()> {
    sqlx::query("INSERT INTO webhook_events (id, team_id, doc) VALUES ($1, $2, $3)")
        .bind(e.id.as_uuid())
        .bind(e.team_id.as_uuid())
        .bind(json(e))
        .execute(conn)
        .await
        .map_err(|err| constraint(err, &[("webhook_events_team_id_fkey", team_missing)]))?;
    Ok(())
}

fn status_text(status: DeliveryStatus) -> &'static str {
    match status {
        DeliveryStatus::Pending => "PENDING",
        DeliveryStatus::Succeeded => "SUCCEEDED",
        DeliveryStatus::Failed => "FAILED",
    }
}

async fn insert_delivery_row(conn: &mut PgConnection, d: &WebhookDelivery) -> PgResult<u64> {
    // The endpoint must be the delivery's team's.
    let done = sqlx::query(
        "INSERT INTO webhook_deliveries
           (id, team_id, endpoint_id, event_id, resource, status, next_attempt_at, created_at, doc)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
         WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $3 AND team_id = $2)",
    )
    .bind(d.id.as_uuid())
    .bind(d.team_id.as_uuid())
    .bind(d.endpoint_id.as_uuid())
    .bind(d.event_id.as_uuid())
    .bind(&d.resource)
    .bind(status_text(d.status))
    .bind(opt_ms(d.next_attempt_at))
    .bind(ms(d.created_at))
    .bind(json(d))
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

impl WebhookStore for PgStore {
    async fn create_webhook(&self, e: &WebhookEndpoint, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            sqlx::query(
                "INSERT INTO webhook_endpoints (id, team_id, created_at, doc) VALUES ($1, $2, $3, $4)",
            )
            .bind(e.id.as_uuid())
            .bind(e.team_id.as_uuid())
            .bind(ms(e.created_at))
            .bind(json(e))
            .execute(&mut *tx)
            .await
            .map_err(|err| constraint(err, &[("webhook_endpoints_team_id_fkey", team_missing)]))?;
            Ok(())
        })
    }

    async fn get_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        Ok(WEBHOOKS.get(&self.pool, team, id.as_uuid()).await?)
    }

    async fn list_webhooks(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>> {
        Ok(fetch_docs(
            &self.pool,
            sqlx::query(
                "SELECT doc FROM webhook_endpoints WHERE team_id = $1 ORDER BY created_at, id",
            )
            .bind(team.as_uuid()),
        )
        .await?)
    }

    async fn update_webhook(&self, e: &WebhookEndpoint, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            let done =
                sqlx::query("UPDATE webhook_endpoints SET doc = $3 WHERE team_id = $1 AND id = $2")
                    .bind(e.team_id.as_uuid())
                    .bind(e.id.as_uuid())
                    .bind(json(e))
                    .execute(&mut *tx)
                    .await?;
            WEBHOOKS.changed(done)
        })
    }

    async fn delete_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
        journal: &Journal,
    ) -> StoreResult<()> {
        // Its deliveries go with it (ON DELETE CASCADE).
        in_tx!(self.pool, journal, |tx| {
            WEBHOOKS.delete(&mut tx, team.as_uuid(), id.as_uuid()).await
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
        // A success on a healthy endpoint changes nothing: answered without a row lock, so that
        // the deliveries of one endpoint do not queue on it.
        if ok {
            let endpoint = self.get_webhook(team, id).await?;
            if endpoint.as_ref().is_none_or(|e| e.failing_since.is_none()) {
                return Ok(endpoint.map(|endpoint| HealthChange {
                    endpoint,
                    disabled_now: false,
                }));
            }
        }
        in_tx!(self.pool, |tx| {
            let row = sqlx::query(
                "SELECT doc FROM webhook_endpoints WHERE team_id = $1 AND id = $2 FOR UPDATE",
            )
            .bind(team.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
            match row {
                None => Ok(None),
                Some(row) => {
                    let mut endpoint: WebhookEndpoint = doc(&row)?;
                    let before = endpoint.clone();
                    let disabled_now = apply_health(&mut endpoint, ok, now, disable_after_ms);
                    if endpoint != before {
                        sqlx::query("UPDATE webhook_endpoints SET doc = $2 WHERE id = $1")
                            .bind(id.as_uuid())
                            .bind(json(&endpoint))
                            .execute(&mut *tx)
                            .await?;
                    }
                    if let Some(to) = endpoint
                        .alert_email
                        .as_deref()
                        .filter(|_| disabled_now && alert)
                    {
                        let m = disabled_alert(&endpoint, to, now);
                        super::misc::insert_message(&mut tx, &m).await?;
                    }
                    Ok(Some(HealthChange {
                        endpoint,
                        disabled_now,
                    }))
                }
            }
        })
    }

    async fn fan_out_events(&self, now: Timestamp, limit: usize) -> StoreResult<usize> {
        in_tx!(self.pool, |tx| {
            let query = sqlx::query(
                "SELECT doc FROM webhook_events ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
            );
            let select = query.bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let events: Vec<WebhookEvent> = super::fetch_docs(&mut *tx, select).await?;
            if !events.is_empty() {
                let mut teams: Vec<uuid::Uuid> =
                    events.iter().map(|e| *e.team_id.as_uuid()).collect();
                teams.sort();
                teams.dedup();
                // FOR SHARE: an endpoint deleted meanwhile waits for this fan-out.
                let query = sqlx::query(
                    "SELECT doc FROM webhook_endpoints WHERE team_id = ANY($1) FOR SHARE",
                );
                let endpoints: Vec<WebhookEndpoint> =
                    super::fetch_docs(&mut *tx, query.bind(&teams)).await?;
                for event in &events {
                    for d in fan_out(event, &endpoints, now) {
                        insert_delivery_row(&mut tx, &d).await?;
                    }
                }
                let ids: Vec<uuid::Uuid> = events.iter().map(|e| *e.id.as_uuid()).collect();
                sqlx::query("DELETE FROM webhook_events WHERE id = ANY($1)")
                    .bind(&ids)
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(events.len())
        })
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        // The first pending delivery of each chain (endpoint and resource), due and unclaimed.
        const CLAIM: &str = "UPDATE webhook_deliveries SET claimed_until = $2 WHERE id IN (
               SELECT d.id FROM webhook_deliveries d
               WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1
                 AND (d.claimed_until IS NULL OR d.claimed_until <= $1)
                 AND NOT EXISTS (
                   SELECT 1 FROM webhook_deliveries e
                   WHERE e.status = 'PENDING' AND e.endpoint_id = d.endpoint_id
                     AND e.resource = d.resource AND (e.event_id, e.id) < (d.event_id, d.id))
               ORDER BY d.next_attempt_at, d.id LIMIT $3
               FOR UPDATE SKIP LOCKED)
             RETURNING doc";
        let mut claimed: Vec<WebhookDelivery> =
            super::claim(&self.pool, CLAIM, now, lease_ms, limit).await?;
        claimed.sort_by_key(|d| (d.next_attempt_at, d.order()));
        Ok(claimed)
    }

    async fn insert_delivery(&self, d: &WebhookDelivery, journal: &Journal) -> StoreResult<()> {
        in_tx!(self.pool, journal, |tx| {
            if insert_delivery_row(&mut tx, d).await? == 0 {
                return Err(StoreError::NotFound(Entity::Webhook).into());
            }
            Ok(())
        })
    }

    async fn update_delivery(&self, d: &WebhookDelivery) -> StoreResult<()> {
        sqlx::query(
            "UPDATE webhook_deliveries
             SET status = $2, next_attempt_at = $3, claimed_until = NULL, doc = $4
             WHERE id = $1",
        )
        .bind(d.id.as_uuid())
        .bind(status_text(d.status))
        .bind(opt_ms(d.next_attempt_at))
        .bind(json(d))
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn get_delivery(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        id: DeliveryId,
    ) -> StoreResult<Option<WebhookDelivery>> {
        Ok(fetch_doc(&self.pool, sqlx::query("SELECT doc FROM webhook_deliveries WHERE team_id = $1 AND endpoint_id = $2 AND id = $3")
        .bind(team.as_uuid())
        .bind(endpoint.as_uuid())
        .bind(id.as_uuid())).await?)
    }

    async fn list_deliveries(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        paging: &Paging,
    ) -> StoreResult<Page<WebhookDelivery>> {
        let sql = if paging.direction == SortDirection::Desc {
            "SELECT doc FROM webhook_deliveries WHERE team_id = $1 AND endpoint_id = $2
             ORDER BY id DESC LIMIT $3 OFFSET $4"
        } else {
            "SELECT doc FROM webhook_deliveries WHERE team_id = $1 AND endpoint_id = $2
             ORDER BY id LIMIT $3 OFFSET $4"
        };
        let select = sqlx::query(sql)
            .bind(team.as_uuid())
            .bind(endpoint.as_uuid());
        let items = fetch_page(&self.pool, select, paging)
            .await?
            .iter()
            .map(doc)
            .collect::<PgResult<Vec<WebhookDelivery>>>()?;
        let total: i64 = sqlx::query(
            "SELECT count(*) AS total FROM webhook_deliveries WHERE team_id = $1 AND endpoint_id = $2",
        )
        .bind(team.as_uuid())
        .bind(endpoint.as_uuid())
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?
        .try_get("total")
        .map_err(backend)?;
        Ok(page(items, total, paging))
    }

    async fn raise_events(&self, events: &[RaisedEvent]) -> StoreResult<usize> {
        if events.is_empty() {
            return Ok(0);
        }
        in_tx!(self.pool, |tx| {
            let mut queued = 0;
            for raised in events {
                if let Some((license, mark)) = raised.once {
                    // Stored only for a license of the event's team that exists, and only when
                    // the mark changes: no row back means the event was raised already.
                    let changed = sqlx::query(
                        "INSERT INTO license_event_marks (license_id, mark)
                         SELECT id, $3 FROM licenses WHERE id = $1 AND team_id = $2
                         ON CONFLICT (license_id) DO UPDATE SET mark = EXCLUDED.mark
                           WHERE license_event_marks.mark <> EXCLUDED.mark
                         RETURNING 1",
                    )
                    .bind(license.as_uuid())
                    .bind(raised.event.team_id.as_uuid())
                    .bind(mark)
                    .fetch_optional(&mut *tx)
                    .await?;
                    if changed.is_none() {
                        continue;
                    }
                }
                insert_event(&mut tx, &raised.event).await?;
                queued += 1;
            }
            Ok(queued)
        })
    }

    async fn prune_deliveries(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        const DELETE: &str = "DELETE FROM webhook_deliveries WHERE id IN
               (SELECT id FROM webhook_deliveries
                WHERE status <> 'PENDING' AND created_at < $1 ORDER BY created_at LIMIT $2)";
        Ok(super::prune(&self.pool, DELETE, before, limit).await?)
    }
}
