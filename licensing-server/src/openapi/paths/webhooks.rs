//! Webhook endpoints and their delivery log.

use super::*;

/// (ext) Creates a webhook endpoint. Events are POSTed to it signed in the Standard Webhooks scheme (`webhook-id`, `webhook-timestamp`, `webhook-signature`); the signing secret is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks",
    tag = "extensions",
    request_body = WebhookBody,
    params(TeamPath),
    responses(
        (status = 201, description = "The endpoint, with its secret", body = Envelope<WebhookWithSecret>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        Refused,
    )
)]
pub(in crate::openapi) fn create_webhook() {}

/// (ext) The team's webhook endpoints, oldest first (without their secrets).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks",
    tag = "extensions",
    params(TeamPath),
    responses(
        (status = 200, description = "The endpoints", body = Envelope<WebhookList>),
        (status = 403, description = "FORBIDDEN: an API key of another team, or without the webhooks scope", body = Envelope<Option<ErrorData>>),
        Refused,
    )
)]
pub(in crate::openapi) fn list_webhooks() {}

/// (ext) One webhook endpoint: `enabled`, and `disabledReason: FAILING` with `failingSince` when the server disabled it after three days of failed deliveries.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    params(WebhookPath),
    responses(
        (status = 200, description = "The endpoint", body = Envelope<WebhookView>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn get_webhook() {}

/// (ext) Changes a webhook endpoint: any of `url`, `description`, `eventTypes`, `enabled` (enabling clears a server-side disable).
#[utoipa::path(
    patch,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    request_body = WebhookBody,
    params(WebhookPath),
    responses(
        (status = 200, description = "The endpoint", body = Envelope<WebhookView>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn update_webhook() {}

/// (ext) Deletes a webhook endpoint with its delivery log.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}",
    tag = "extensions",
    params(WebhookPath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn delete_webhook() {}

/// (ext) Gives the endpoint a new signing secret (in this answer only); for 24 hours deliveries carry signatures of both the old and the new secret.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/rotate-secret",
    tag = "extensions",
    params(WebhookPath),
    responses(
        (status = 200, description = "The endpoint, with its new secret", body = Envelope<WebhookWithSecret>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn rotate_webhook_secret() {}

/// (ext) Queues a `webhook.test` event for this endpoint alone.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/test",
    tag = "extensions",
    params(WebhookPath),
    responses(
        (status = 202, description = "The queued delivery", body = Envelope<WebhookDelivery>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn test_webhook() {}

/// (ext) The endpoint's delivery log, newest first: each delivery's status and attempts (time, status code, duration, error, the start of the answer).
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries",
    tag = "extensions",
    params(
        WebhookPath,
        ("page" = Option<u32>, Query, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "`desc` (newest first, the default) or `asc`"),
    ),
    responses(
        (status = 200, description = "One page of deliveries", body = Envelope<DeliveryPage>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn list_webhook_deliveries() {}

/// (ext) One delivery with its attempts and exact body.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}",
    tag = "extensions",
    params(DeliveryPath),
    responses(
        (status = 200, description = "The delivery", body = Envelope<WebhookDelivery>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn get_webhook_delivery() {}

/// (ext) Sends a delivery's event again (same `webhook-id` and body) as a new delivery.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
    tag = "extensions",
    params(DeliveryPath),
    responses(
        (status = 202, description = "The new delivery", body = Envelope<WebhookDelivery>),
        WebhookRefused,
        Refused,
    )
)]
pub(in crate::openapi) fn redeliver_webhook() {}
