//! (ext) Webhook endpoints: create, list, read, change, delete, rotate the secret, send a test
//! event; the delivery log and redelivery.

use licensing_core::api::requests::{WebhookBody, WebhookInput, parse_delivery_query};
use licensing_core::api::{Deleted, DeliveryPage, WebhookList};
use licensing_core::crypto::webhook::WebhookSecret;
use licensing_core::model::{
    Action, FieldChange, WebhookDelivery, WebhookEndpoint, WebhookView, WebhookWithSecret,
};
use licensing_core::store::{Entity, StoreError, WebhookStore};
use licensing_core::{ApiError, DeliveryId, EventId, Timestamp, WebhookId};

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};
use crate::services::keyring::webhook_purpose;
use crate::services::webhooks::check_url;

/// Endpoints a team may have.
const MAX_ENDPOINTS: usize = 20;

/// Hours the previous secret still signs after a rotation.
const ROTATION_OVERLAP_HOURS: i64 = 24;

fn checked_url(dev: &Dev, url: &str) -> Result<String, ApiError> {
    check_url(url, dev.state.webhooks.settings())
        .map(|u| u.to_string())
        .map_err(|why| ApiError::bad_field("url", &why))
}

async fn existing(dev: &Dev, id: WebhookId) -> Result<WebhookEndpoint, ApiError> {
    dev.state
        .store
        .get_webhook(dev.team, id)
        .await
        .map_err(store_error)?
        .filter(|e| visible(dev, e))
        .ok_or(StoreError::NotFound(Entity::Webhook).into())
}

/// An endpoint's signing secret as stored: sealed under the master key, when there is one.
fn sealed(dev: &Dev, endpoint: WebhookId, secret: &str) -> Result<String, ApiError> {
    dev.state
        .keyring
        .seal_secret(&webhook_purpose(endpoint), secret)
        .map_err(|e| crate::http::internal("sealing a webhook secret failed", e))
}

/// Whether the caller may see (and manage) endpoint `e`: only when it could have created it,
/// its scopes and products within the caller's. An endpoint receives what its creator could
/// read, so its delivery log is no more than that either.
fn visible(dev: &Dev, e: &WebhookEndpoint) -> bool {
    dev.cannot_grant(&e.scopes, &e.product_ids).is_none()
}

/// The journal of a change to an endpoint: the view's fields, the secret as changed.
fn journal(
    dev: &Dev,
    action: Action,
    old: Option<&WebhookEndpoint>,
    new: Option<&WebhookEndpoint>,
    secret_changed: bool,
) -> licensing_core::store::Journal {
    let id = new.or(old).map(|e| e.id);
    let view = |e: &WebhookEndpoint| WebhookView::of(e, dev.now);
    let mut journal = dev.change(
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

pub(super) async fn create(dev: Dev, (): (), input: Input) -> Handled {
    let WebhookInput {
        url,
        description,
        event_types,
        enabled,
        alert_email,
    } = WebhookBody::parse_create(&input.json().await?)?;
    let url = checked_url(&dev, url.as_deref().unwrap_or_default())?;
    let count = dev
        .state
        .store
        .list_webhooks(dev.team)
        .await
        .map_err(store_error)?
        .len();
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
        team_id: dev.team,
        url,
        description: description.flatten(),
        event_types: event_types.unwrap_or_default(),
        enabled: enabled.unwrap_or(true),
        disabled_reason: None,
        failing_since: None,
        alert_email: alert_email.flatten(),
        // At rest as the keyring says: sealed under the master key, when there is one.
        secret: sealed(&dev, id, &secret.expose())?,
        previous_secret: None,
        previous_secret_until: None,
        created_at: dev.now,
        updated_at: dev.now,
        // It receives what its creator may read, and no more.
        scopes: dev.caller.scopes.clone(),
        product_ids: dev.caller.product_ids.clone(),
    };
    dev.state
        .store
        .create_webhook(
            &endpoint,
            &journal(&dev, Action::WebhookCreated, None, Some(&endpoint), true),
        )
        .await
        .map_err(store_error)?;
    // The client events the team's endpoints want are read with the team.
    dev.state.contexts.invalidate(dev.team);
    Ok(success(
        201,
        WebhookWithSecret {
            endpoint: WebhookView::of(&endpoint, dev.now),
            secret: secret.expose().to_string(),
        },
        "Webhook endpoint created; its secret is shown only in this answer",
    ))
}

pub(super) async fn list(dev: Dev, (): (), _: Input) -> Handled {
    let webhooks = dev
        .state
        .store
        .list_webhooks(dev.team)
        .await
        .map_err(store_error)?
        .iter()
        .filter(|e| visible(&dev, e))
        .map(|e| WebhookView::of(e, dev.now))
        .collect();
    Ok(success(
        200,
        WebhookList { webhooks },
        "Webhook endpoints retrieved",
    ))
}

pub(super) async fn get(dev: Dev, (id,): (WebhookId,), _: Input) -> Handled {
    let endpoint = existing(&dev, id).await?;
    Ok(success(
        200,
        WebhookView::of(&endpoint, dev.now),
        "Webhook endpoint retrieved",
    ))
}

pub(super) async fn update(dev: Dev, (id,): (WebhookId,), input: Input) -> Handled {
    let change = WebhookBody::parse_update(&input.json().await?)?;
    let old = existing(&dev, id).await?;
    let mut new = old.clone();
    if let Some(url) = &change.url {
        new.url = checked_url(&dev, url)?;
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
    new.updated_at = dev.now;
    dev.state
        .store
        .update_webhook(
            &new,
            &journal(&dev, Action::WebhookUpdated, Some(&old), Some(&new), false),
        )
        .await
        .map_err(store_error)?;
    // The client events the team's endpoints want are read with the team.
    dev.state.contexts.invalidate(dev.team);
    Ok(success(
        200,
        WebhookView::of(&new, dev.now),
        "Webhook endpoint updated",
    ))
}

pub(super) async fn delete(dev: Dev, (id,): (WebhookId,), _: Input) -> Handled {
    let old = existing(&dev, id).await?;
    dev.state
        .store
        .delete_webhook(
            dev.team,
            id,
            &journal(&dev, Action::WebhookDeleted, Some(&old), None, false),
        )
        .await
        .map_err(store_error)?;
    // The client events the team's endpoints want are read with the team.
    dev.state.contexts.invalidate(dev.team);
    Ok(success(
        200,
        Deleted {
            id: *id.as_uuid(),
            deleted: true,
        },
        "Webhook endpoint deleted, with its delivery log",
    ))
}

/// `POST …/webhooks/{id}/rotate-secret`: a new secret; the old one still signs for 24 hours.
pub(super) async fn rotate_secret(dev: Dev, (id,): (WebhookId,), _: Input) -> Handled {
    let old = existing(&dev, id).await?;
    let secret = WebhookSecret::generate();
    let mut new = old.clone();
    new.previous_secret = Some(old.secret.clone());
    new.previous_secret_until = Some(Timestamp::from_millis(
        dev.now.as_millis() + ROTATION_OVERLAP_HOURS * 3_600_000,
    ));
    new.secret = sealed(&dev, id, &secret.expose())?;
    new.updated_at = dev.now;
    dev.state
        .store
        .update_webhook(
            &new,
            &journal(&dev, Action::WebhookUpdated, Some(&old), Some(&new), true),
        )
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        WebhookWithSecret {
            endpoint: WebhookView::of(&new, dev.now),
            secret: secret.expose().to_string(),
        },
        "Secret rotated: deliveries carry signatures of both secrets for 24 hours; the new one is shown only in this answer",
    ))
}

/// `POST …/webhooks/{id}/test`: queues a `webhook.test` event for this endpoint alone.
pub(super) async fn send_test(dev: Dev, (id,): (WebhookId,), _: Input) -> Handled {
    let endpoint = existing(&dev, id).await?;
    let event = licensing_core::model::WebhookEvent {
        id: EventId::ordered(),
        team_id: dev.team,
        event_type: "webhook.test".into(),
        resource_type: "webhook".into(),
        resource_id: endpoint.id.to_string(),
        created_at: dev.now,
        data: serde_json::json!({
            "webhookId": endpoint.id,
            "message": "A test event sent from the developer API",
        }),
        changed_fields: None,
        product_ids: None,
    };
    let delivery = WebhookDelivery::new(&event, endpoint.id, dev.now);
    dev.state
        .store
        .insert_delivery(
            &delivery,
            &dev.journal(
                Action::WebhookTestSent,
                endpoint.id,
                vec![FieldChange::of(
                    "deliveryId",
                    None,
                    Some(delivery.id.to_string().into()),
                )],
            ),
        )
        .await
        .map_err(store_error)?;
    Ok(success(202, delivery, "Test event queued for delivery"))
}

pub(super) async fn list_deliveries(dev: Dev, (id,): (WebhookId,), input: Input) -> Handled {
    let paging = parse_delivery_query(&input.query)?;
    existing(&dev, id).await?;
    let found = dev
        .state
        .store
        .list_deliveries(dev.team, id, &paging)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        DeliveryPage {
            deliveries: found.items,
            total_results: found.total,
            has_next_page: found.has_next_page,
        },
        "Webhook deliveries retrieved",
    ))
}

async fn delivery(
    dev: &Dev,
    id: WebhookId,
    delivery: DeliveryId,
) -> Result<WebhookDelivery, ApiError> {
    existing(dev, id).await?;
    dev.state
        .store
        .get_delivery(dev.team, id, delivery)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Delivery).into())
}

pub(super) async fn get_delivery(
    dev: Dev,
    (id, delivery_id): (WebhookId, DeliveryId),
    _: Input,
) -> Handled {
    let d = delivery(&dev, id, delivery_id).await?;
    Ok(success(200, d, "Webhook delivery retrieved"))
}

/// `POST …/deliveries/{deliveryId}/redeliver`: the same event (same `webhook-id` and body) as a
/// new delivery, due now.
pub(super) async fn redeliver(
    dev: Dev,
    (id, delivery_id): (WebhookId, DeliveryId),
    _: Input,
) -> Handled {
    let d = delivery(&dev, id, delivery_id).await?;
    let again = WebhookDelivery::of_payload(
        dev.team,
        id,
        d.event_id,
        &d.event_type,
        d.resource.clone(),
        d.payload.clone(),
        dev.now,
    );
    dev.state
        .store
        .insert_delivery(
            &again,
            &dev.journal(
                Action::WebhookRedelivered,
                id,
                vec![
                    FieldChange::of("eventId", None, Some(d.event_id.to_string().into())),
                    FieldChange::of("deliveryId", None, Some(again.id.to_string().into())),
                ],
            ),
        )
        .await
        .map_err(store_error)?;
    Ok(success(202, again, "Event queued for delivery again"))
}
