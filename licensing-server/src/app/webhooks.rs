//! (ext) Webhook endpoints: create, list, read, change, delete, rotate the secret, send a test
//! event; the delivery log and redelivery.

pub(crate) use licensing_core::operations::webhooks::{
    CreateWebhook, DeleteWebhook, GetDelivery, GetWebhook, ListDeliveries, ListWebhooks, Redeliver,
    RotateWebhookSecret, SendTestEvent, UpdateWebhook,
};

use licensing_core::api::Deleted;
use licensing_core::api::requests::WebhookInput;
use licensing_core::crypto::webhook::WebhookSecret;
use licensing_core::model::{
    Action, FieldChange, WebhookDelivery, WebhookEndpoint, WebhookView, WebhookWithSecret,
};
use licensing_core::store::{Entity, Page, StoreError, WebhookStore};
use licensing_core::{ApiError, DeliveryId, EventId, Timestamp, WebhookId};

use super::{Cx, Run};
use crate::runtime::keyring::webhook_purpose;
use crate::runtime::webhooks::check_url;

/// Endpoints a team may have.
const MAX_ENDPOINTS: usize = 20;

/// Hours the previous secret still signs after a rotation.
const ROTATION_OVERLAP_HOURS: i64 = 24;

impl Run for CreateWebhook {
    async fn run(self, cx: &Cx) -> Result<WebhookWithSecret, ApiError> {
        let WebhookInput {
            url,
            description,
            event_types,
            enabled,
            alert_email,
        } = self.0.validate(true)?;
        let url = checked_url(cx, url.as_deref().unwrap_or_default())?;
        let count = cx.state.store.list_webhooks(cx.team).await?.len();
        if count >= MAX_ENDPOINTS {
            return Err(ApiError::bad_field(
                "url",
                &format!(
                    "the team already has {MAX_ENDPOINTS} endpoints, the most it may have: delete one first"
                ),
            ));
        }
        let secret = WebhookSecret::generate();
        let id = WebhookId::new();
        let endpoint = WebhookEndpoint {
            id,
            team_id: cx.team,
            url,
            description: description.flatten(),
            event_types: event_types.unwrap_or_default(),
            enabled: enabled.unwrap_or(true),
            disabled_reason: None,
            failing_since: None,
            alert_email: alert_email.flatten(),
            // At rest as the keyring says: sealed under the master key, when there is one.
            secret: sealed(cx, id, &secret.expose())?,
            previous_secret: None,
            previous_secret_until: None,
            created_at: cx.now,
            updated_at: cx.now,
            // It receives what its creator may read, and no more.
            scopes: cx.caller.scopes.clone(),
            product_ids: cx.caller.product_ids.clone(),
        };
        cx.state
            .store
            .create_webhook(
                &endpoint,
                &journal(cx, Action::WebhookCreated, None, Some(&endpoint), true),
            )
            .await?;
        // The client events the team's endpoints want are read with the team.
        Ok(WebhookWithSecret {
            endpoint: WebhookView::of(&endpoint, cx.now),
            secret: secret.expose().to_string(),
        })
    }
}

impl Run for ListWebhooks {
    async fn run(self, cx: &Cx) -> Result<Vec<WebhookView>, ApiError> {
        Ok(cx
            .state
            .store
            .list_webhooks(cx.team)
            .await?
            .iter()
            .filter(|e| cx.reach().manages(e))
            .map(|e| WebhookView::of(e, cx.now))
            .collect())
    }
}

impl Run for GetWebhook {
    async fn run(self, cx: &Cx) -> Result<WebhookView, ApiError> {
        Ok(WebhookView::of(&existing(cx, self.0).await?, cx.now))
    }
}

impl Run for UpdateWebhook {
    async fn run(self, cx: &Cx) -> Result<WebhookView, ApiError> {
        let change = self.1.validate(false)?;
        let old = existing(cx, self.0).await?;
        let mut new = old.clone();
        if let Some(url) = &change.url {
            new.url = checked_url(cx, url)?;
        }
        if let Some(description) = change.description {
            new.description = description;
        }
        if let Some(types) = change.event_types {
            new.event_types = types;
        }
        if let Some(alert_email) = change.alert_email {
            new.alert_email = alert_email;
        }
        if let Some(enabled) = change.enabled {
            new.enabled = enabled;
            if enabled {
                // Re-enabled by a person: the failure count starts again.
                new.disabled_reason = None;
                new.failing_since = None;
            }
        }
        update(cx, &old, &mut new, false).await?;
        // The client events the team's endpoints want are read with the team.
        Ok(WebhookView::of(&new, cx.now))
    }
}

impl Run for DeleteWebhook {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let old = existing(cx, self.0).await?;
        cx.state
            .store
            .delete_webhook(
                cx.team,
                old.id,
                &journal(cx, Action::WebhookDeleted, Some(&old), None, false),
            )
            .await?;
        // The client events the team's endpoints want are read with the team.
        Ok(Deleted {
            id: *old.id.as_uuid(),
            deleted: true,
        })
    }
}

impl Run for RotateWebhookSecret {
    async fn run(self, cx: &Cx) -> Result<WebhookWithSecret, ApiError> {
        let old = existing(cx, self.0).await?;
        let secret = WebhookSecret::generate();
        let mut new = old.clone();
        new.previous_secret = Some(old.secret.clone());
        new.previous_secret_until = Some(Timestamp::from_millis(
            cx.now.as_millis() + ROTATION_OVERLAP_HOURS * 3_600_000,
        ));
        new.secret = sealed(cx, old.id, &secret.expose())?;
        update(cx, &old, &mut new, true).await?;
        Ok(WebhookWithSecret {
            endpoint: WebhookView::of(&new, cx.now),
            secret: secret.expose().to_string(),
        })
    }
}

impl Run for SendTestEvent {
    async fn run(self, cx: &Cx) -> Result<WebhookDelivery, ApiError> {
        let endpoint = existing(cx, self.0).await?;
        let event = licensing_core::model::WebhookEvent {
            id: EventId::ordered(),
            team_id: cx.team,
            event_type: "webhook.test".into(),
            resource_type: "webhook".into(),
            resource_id: endpoint.id.to_string(),
            created_at: cx.now,
            data: serde_json::json!({
                "webhookId": endpoint.id,
                "message": "A test event sent from the developer API",
            }),
            changed_fields: None,
            product_ids: None,
        };
        let delivery = WebhookDelivery::new(&event, endpoint.id, cx.now);
        cx.state
            .store
            .insert_delivery(
                &delivery,
                &cx.journal(
                    Action::WebhookTestSent,
                    endpoint.id,
                    vec![FieldChange::of(
                        "deliveryId",
                        None,
                        Some(delivery.id.to_string().into()),
                    )],
                ),
            )
            .await?;
        Ok(delivery)
    }
}

impl Run for ListDeliveries {
    async fn run(self, cx: &Cx) -> Result<Page<WebhookDelivery>, ApiError> {
        let endpoint = existing(cx, self.0).await?;
        Ok(cx
            .state
            .store
            .list_deliveries(cx.team, endpoint.id, &self.1)
            .await?)
    }
}

impl Run for GetDelivery {
    async fn run(self, cx: &Cx) -> Result<WebhookDelivery, ApiError> {
        delivery(cx, self.0, self.1).await
    }
}

impl Run for Redeliver {
    async fn run(self, cx: &Cx) -> Result<WebhookDelivery, ApiError> {
        let id = self.0;
        let d = delivery(cx, id, self.1).await?;
        let again = WebhookDelivery::of_payload(
            cx.team,
            id,
            d.event_id,
            &d.event_type,
            d.resource.clone(),
            d.payload.clone(),
            cx.now,
        );
        cx.state
            .store
            .insert_delivery(
                &again,
                &cx.journal(
                    Action::WebhookRedelivered,
                    id,
                    vec![
                        FieldChange::of("eventId", None, Some(d.event_id.to_string().into())),
                        FieldChange::of("deliveryId", None, Some(again.id.to_string().into())),
                    ],
                ),
            )
            .await?;
        Ok(again)
    }
}

fn checked_url(cx: &Cx, url: &str) -> Result<String, ApiError> {
    check_url(url, cx.state.webhooks.settings())
        .map(|u| u.to_string())
        .map_err(|why| ApiError::bad_field("url", &why))
}

/// Stores endpoint `old` as `new`, changed now (`secret_changed`: its secret among the changes).
async fn update(
    cx: &Cx,
    old: &WebhookEndpoint,
    new: &mut WebhookEndpoint,
    secret_changed: bool,
) -> Result<(), ApiError> {
    new.updated_at = cx.now;
    let journal = journal(
        cx,
        Action::WebhookUpdated,
        Some(old),
        Some(new),
        secret_changed,
    );
    cx.state.store.update_webhook(new, &journal).await?;
    Ok(())
}

async fn existing(cx: &Cx, id: WebhookId) -> Result<WebhookEndpoint, ApiError> {
    cx.state
        .store
        .get_webhook(cx.team, id)
        .await?
        .filter(|e| cx.reach().manages(e))
        .ok_or(StoreError::NotFound(Entity::Webhook).into())
}

/// An endpoint's signing secret as stored: sealed under the master key, when there is one.
fn sealed(cx: &Cx, endpoint: WebhookId, secret: &str) -> Result<String, ApiError> {
    cx.state
        .keyring
        .seal_secret(&webhook_purpose(endpoint), secret)
        .map_err(|e| ApiError::internal_because("sealing a webhook secret failed", e))
}

/// The journal of a change to an endpoint: the view's fields, the secret as changed.
fn journal(
    cx: &Cx,
    action: Action,
    old: Option<&WebhookEndpoint>,
    new: Option<&WebhookEndpoint>,
    secret_changed: bool,
) -> licensing_core::store::Journal {
    let id = new.or(old).map(|e| e.id);
    let view = |e: &WebhookEndpoint| WebhookView::of(e, cx.now);
    let mut journal = cx.change(
        action,
        id.map(|i| i.to_string()).unwrap_or_default(),
        old.map(view).as_ref(),
        new.map(view).as_ref(),
    );
    if secret_changed && let Some(entry) = journal.audit.first_mut() {
        entry.changes.push(FieldChange::secret("secret"));
    }
    journal
}

async fn delivery(
    cx: &Cx,
    id: WebhookId,
    delivery: DeliveryId,
) -> Result<WebhookDelivery, ApiError> {
    existing(cx, id).await?;
    cx.state
        .store
        .get_delivery(cx.team, id, delivery)
        .await?
        .ok_or(StoreError::NotFound(Entity::Delivery).into())
}
