//! (ext) Webhook endpoints and their delivery log.

use crate::api::requests::{Paging, WebhookBody};
use crate::api::{Deleted, DeliveryPage, WebhookList};
use crate::model::{Resource, Scope, WebhookDelivery, WebhookView, WebhookWithSecret};
use crate::store::Page;
use crate::{DeliveryId, WebhookId};

use super::declare;

/// Creates an endpoint; it receives what its creator may read, and no more.
pub struct CreateWebhook(pub WebhookBody);

/// The endpoints the caller may manage.
pub struct ListWebhooks;

/// An endpoint.
pub struct GetWebhook(pub WebhookId);

/// Changes an endpoint: members left out keep their value.
pub struct UpdateWebhook(pub WebhookId, pub WebhookBody);

/// Deletes an endpoint with its delivery log.
pub struct DeleteWebhook(pub WebhookId);

/// A new secret for an endpoint; the old one still signs for 24 hours.
pub struct RotateWebhookSecret(pub WebhookId);

/// Queues a `webhook.test` event for one endpoint alone.
pub struct SendTestEvent(pub WebhookId);

/// One page of an endpoint's delivery log, newest first by default.
pub struct ListDeliveries(pub WebhookId, pub Paging);

/// One delivery of an endpoint.
pub struct GetDelivery(pub WebhookId, pub DeliveryId);

/// The same event again (same `webhook-id` and body) as a new delivery, due now.
pub struct Redeliver(pub WebhookId, pub DeliveryId);

const READ: Option<Scope> = Some(Scope::read(Resource::Webhooks));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Webhooks));

declare! {
    CreateWebhook() by json WebhookBody;
    Post "webhooks" "create_webhook" WRITE;
    WebhookWithSecret => 201 "Webhook endpoint created; its secret is shown only in this answer";

    ListWebhooks by ids;
    Get "webhooks" "list_webhooks" READ;
    Vec<WebhookView> => 200 WebhookList: |webhooks| WebhookList { webhooks }, "Webhook endpoints retrieved";

    GetWebhook(id: WebhookId) by ids;
    Get "webhooks/{webhookId}" "get_webhook" READ;
    WebhookView => 200 "Webhook endpoint retrieved";

    UpdateWebhook(id: WebhookId) by json WebhookBody;
    Patch "webhooks/{webhookId}" "update_webhook" WRITE;
    WebhookView => 200 "Webhook endpoint updated";

    DeleteWebhook(id: WebhookId) by ids;
    Delete "webhooks/{webhookId}" "delete_webhook" WRITE;
    Deleted => 200 "Webhook endpoint deleted, with its delivery log";

    RotateWebhookSecret(id: WebhookId) by ids;
    Post "webhooks/{webhookId}/rotate-secret" "rotate_webhook_secret" WRITE;
    WebhookWithSecret => 200 "Secret rotated: deliveries carry signatures of both secrets for 24 hours; the new one is shown only in this answer";

    SendTestEvent(id: WebhookId) by ids;
    Post "webhooks/{webhookId}/test" "test_webhook" WRITE;
    WebhookDelivery => 202 "Test event queued for delivery";

    ListDeliveries(id: WebhookId) by query Paging;
    Get "webhooks/{webhookId}/deliveries" "list_webhook_deliveries" READ;
    Page<WebhookDelivery> => 200 DeliveryPage: |page| page.into(), "Webhook deliveries retrieved";

    GetDelivery(id: WebhookId, delivery: DeliveryId) by ids;
    Get "webhooks/{webhookId}/deliveries/{deliveryId}" "get_webhook_delivery" READ;
    WebhookDelivery => 200 "Webhook delivery retrieved";

    Redeliver(id: WebhookId, delivery: DeliveryId) by ids;
    Post "webhooks/{webhookId}/deliveries/{deliveryId}/redeliver" "redeliver_webhook" WRITE;
    WebhookDelivery => 202 "Event queued for delivery again";
}
