//! (ext) Webhook endpoints and their delivery log over HTTP.

use licensing_core::api::requests::parse_delivery_query;
use licensing_core::api::{DeliveryPage, WebhookList};
use licensing_core::{DeliveryId, WebhookId};

use crate::app::webhooks::{
    CreateWebhook, DeleteWebhook, GetDelivery, GetWebhook, ListDeliveries, ListWebhooks, Redeliver,
    RotateWebhookSecret, SendTestEvent, UpdateWebhook,
};

with_body!(CreateWebhook() => 201, "Webhook endpoint created; its secret is shown only in this answer");
by_ids!(GetWebhook(id: WebhookId) => 200, "Webhook endpoint retrieved");
with_body!(UpdateWebhook(id: WebhookId) => 200, "Webhook endpoint updated");
by_ids!(DeleteWebhook(id: WebhookId) => 200, "Webhook endpoint deleted, with its delivery log");
by_ids!(RotateWebhookSecret(id: WebhookId) => 200, "Secret rotated: deliveries carry signatures of both secrets for 24 hours; the new one is shown only in this answer");
by_ids!(SendTestEvent(id: WebhookId) => 202, "Test event queued for delivery");
listed!(ListDeliveries(id: WebhookId) query parse_delivery_query => DeliveryPage { deliveries }, "Webhook deliveries retrieved");
by_ids!(GetDelivery(id: WebhookId, delivery: DeliveryId) => 200, "Webhook delivery retrieved");
by_ids!(Redeliver(id: WebhookId, delivery: DeliveryId) => 202, "Event queued for delivery again");
by_ids!(ListWebhooks => 200 |webhooks| WebhookList { webhooks }, "Webhook endpoints retrieved");
