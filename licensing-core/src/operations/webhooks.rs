//! (ext) Webhook endpoints and their delivery log.

use crate::api::requests::{Paging, WebhookBody};
use crate::api::{Deleted, DeliveryPage, WebhookList};
use crate::model::{Resource, Scope, WebhookDelivery, WebhookView, WebhookWithSecret};
use crate::store::Page;
use crate::{DeliveryId, WebhookId};

use super::declare;
use super::doc::*;

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
    doc Doc {
        tag: "extensions",
        summary: "(ext) Creates a webhook endpoint. Events are POSTed to it signed in the Standard Webhooks scheme (`webhook-id`, `webhook-timestamp`, `webhook-signature`); the signing secret is in this answer only.",
        description: "",
        params: &[],
        body: "",
        success: "The endpoint, with its secret",
        refusals: &[REFUSED, crate::refusals![(403, "FORBIDDEN: an API key of another team, or without the webhooks scope")]],
    };

    ListWebhooks by ids;
    Get "webhooks" "list_webhooks" READ;
    Vec<WebhookView> => 200 WebhookList: |webhooks| WebhookList { webhooks }, "Webhook endpoints retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The team's webhook endpoints, oldest first (without their secrets).",
        description: "",
        params: &[],
        body: "",
        success: "The endpoints",
        refusals: &[REFUSED, crate::refusals![(403, "FORBIDDEN: an API key of another team, or without the webhooks scope")]],
    };

    GetWebhook(id: WebhookId) by ids;
    Get "webhooks/{webhookId}" "get_webhook" READ;
    WebhookView => 200 "Webhook endpoint retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) One webhook endpoint: `enabled`, and `disabledReason: FAILING` with `failingSince` when the server disabled it after three days of failed deliveries.",
        description: "",
        params: &[
            WEBHOOK_ID,
        ],
        body: "",
        success: "The endpoint",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    UpdateWebhook(id: WebhookId) by json WebhookBody;
    Patch "webhooks/{webhookId}" "update_webhook" WRITE;
    WebhookView => 200 "Webhook endpoint updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Changes a webhook endpoint: any of `url`, `description`, `eventTypes`, `enabled` (enabling clears a server-side disable).",
        description: "",
        params: &[
            WEBHOOK_ID,
        ],
        body: "",
        success: "The endpoint",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    DeleteWebhook(id: WebhookId) by ids;
    Delete "webhooks/{webhookId}" "delete_webhook" WRITE;
    Deleted => 200 "Webhook endpoint deleted, with its delivery log";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Deletes a webhook endpoint with its delivery log.",
        description: "",
        params: &[
            WEBHOOK_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    RotateWebhookSecret(id: WebhookId) by ids;
    Post "webhooks/{webhookId}/rotate-secret" "rotate_webhook_secret" WRITE;
    WebhookWithSecret => 200 "Secret rotated: deliveries carry signatures of both secrets for 24 hours; the new one is shown only in this answer";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Gives the endpoint a new signing secret (in this answer only); for 24 hours deliveries carry signatures of both the old and the new secret.",
        description: "",
        params: &[
            WEBHOOK_ID,
        ],
        body: "",
        success: "The endpoint, with its new secret",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    SendTestEvent(id: WebhookId) by ids;
    Post "webhooks/{webhookId}/test" "test_webhook" WRITE;
    WebhookDelivery => 202 "Test event queued for delivery";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Queues a `webhook.test` event for this endpoint alone.",
        description: "",
        params: &[
            WEBHOOK_ID,
        ],
        body: "",
        success: "The queued delivery",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    ListDeliveries(id: WebhookId) by query Paging;
    Get "webhooks/{webhookId}/deliveries" "list_webhook_deliveries" READ;
    Page<WebhookDelivery> => 200 DeliveryPage: |page| page.into(), "Webhook deliveries retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The endpoint's delivery log, newest first: each delivery's status and attempts (time, status code, duration, error, the start of the answer).",
        description: "",
        params: &[
            WEBHOOK_ID,
            Param::query("page", "1-based page (default 1)", Kind::Integer(0)),
            PAGE_SIZE,
            Param::query("sortDirection", "`desc` (newest first, the default) or `asc`", Kind::Text),
        ],
        body: "",
        success: "One page of deliveries",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    GetDelivery(id: WebhookId, delivery: DeliveryId) by ids;
    Get "webhooks/{webhookId}/deliveries/{deliveryId}" "get_webhook_delivery" READ;
    WebhookDelivery => 200 "Webhook delivery retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) One delivery with its attempts and exact body.",
        description: "",
        params: &[
            WEBHOOK_ID,
            DELIVERY_ID,
        ],
        body: "",
        success: "The delivery",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };

    Redeliver(id: WebhookId, delivery: DeliveryId) by ids;
    Post "webhooks/{webhookId}/deliveries/{deliveryId}/redeliver" "redeliver_webhook" WRITE;
    WebhookDelivery => 202 "Event queued for delivery again";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Sends a delivery's event again (same `webhook-id` and body) as a new delivery.",
        description: "",
        params: &[
            WEBHOOK_ID,
            DELIVERY_ID,
        ],
        body: "",
        success: "The new delivery",
        refusals: &[REFUSED, WEBHOOK_REFUSED],
    };
}
