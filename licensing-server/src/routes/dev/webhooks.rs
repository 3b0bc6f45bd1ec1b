//! (ext) Webhook endpoints and their delivery log over HTTP.

use licensing_core::api::requests::{parse_delivery_query, parse_json};
use licensing_core::api::{Deleted, DeliveryPage, WebhookList};
use licensing_core::model::{WebhookDelivery, WebhookView, WebhookWithSecret};
use licensing_core::store::Page;
use licensing_core::{ApiError, DeliveryId, WebhookId};

use super::{Dev, Endpoint, Input, Query};
use crate::app::webhooks::{
    CreateWebhook, DeleteWebhook, GetDelivery, GetWebhook, ListDeliveries, ListWebhooks, Redeliver,
    RotateWebhookSecret, SendTestEvent, UpdateWebhook,
};
use crate::http::{Response, success};

impl Endpoint for CreateWebhook {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(created: WebhookWithSecret) -> Response {
        success(
            201,
            created,
            "Webhook endpoint created; its secret is shown only in this answer",
        )
    }
}

impl Endpoint for ListWebhooks {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), _: Input) -> Result<Self, ApiError> {
        Ok(Self)
    }

    fn answer(webhooks: Vec<WebhookView>) -> Response {
        success(200, WebhookList { webhooks }, "Webhook endpoints retrieved")
    }
}

impl Endpoint for GetWebhook {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (WebhookId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(endpoint: WebhookView) -> Response {
        success(200, endpoint, "Webhook endpoint retrieved")
    }
}

impl Endpoint for UpdateWebhook {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (WebhookId,), input: Input) -> Result<Self, ApiError> {
        Ok(Self(id, parse_json(&input.json().await?)?))
    }

    fn answer(endpoint: WebhookView) -> Response {
        success(200, endpoint, "Webhook endpoint updated")
    }
}

impl Endpoint for DeleteWebhook {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (WebhookId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(deleted: Deleted) -> Response {
        success(
            200,
            deleted,
            "Webhook endpoint deleted, with its delivery log",
        )
    }
}

impl Endpoint for RotateWebhookSecret {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (WebhookId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(rotated: WebhookWithSecret) -> Response {
        success(
            200,
            rotated,
            "Secret rotated: deliveries carry signatures of both secrets for 24 hours; the new one is shown only in this answer",
        )
    }
}

impl Endpoint for SendTestEvent {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (WebhookId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(delivery: WebhookDelivery) -> Response {
        success(202, delivery, "Test event queued for delivery")
    }
}

impl Endpoint for ListDeliveries {
    type Ids = (WebhookId,);
    const QUERY: Query = Query::Parsed;

    async fn from_request(_: &Dev, (id,): (WebhookId,), input: Input) -> Result<Self, ApiError> {
        Ok(Self(id, parse_delivery_query(&input.query)?))
    }

    fn answer(page: Page<WebhookDelivery>) -> Response {
        success(
            200,
            DeliveryPage {
                deliveries: page.items,
                total_results: page.total,
                has_next_page: page.has_next_page,
            },
            "Webhook deliveries retrieved",
        )
    }
}

impl Endpoint for GetDelivery {
    type Ids = (WebhookId, DeliveryId);
    const QUERY: Query = Query::None;

    async fn from_request(
        _: &Dev,
        (id, delivery): (WebhookId, DeliveryId),
        _: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(id, delivery))
    }

    fn answer(delivery: WebhookDelivery) -> Response {
        success(200, delivery, "Webhook delivery retrieved")
    }
}

impl Endpoint for Redeliver {
    type Ids = (WebhookId, DeliveryId);
    const QUERY: Query = Query::None;

    async fn from_request(
        _: &Dev,
        (id, delivery): (WebhookId, DeliveryId),
        _: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(id, delivery))
    }

    fn answer(delivery: WebhookDelivery) -> Response {
        success(202, delivery, "Event queued for delivery again")
    }
}
