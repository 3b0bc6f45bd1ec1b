//! Webhook endpoints: the list, a new endpoint (its signing secret shown once), an endpoint's
//! delivery log with redelivery, a test event, editing (address, description, events from the
//! known types), enabling and disabling, a new signing secret, and deleting one.

use licensing_core::WebhookId;
use licensing_core::api::requests::{Paging, WebhookBody};
use licensing_core::model::{WebhookView, WebhookWithSecret};
use maud::html;

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::webhooks::{
    CreateWebhook, DeleteWebhook, GetWebhook, ListDeliveries, ListWebhooks, Redeliver,
    RotateWebhookSecret, SendTestEvent, UpdateWebhook,
};
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

fn may_write(staff: &Staff) -> bool {
    staff.may_perform::<crate::app::webhooks::CreateWebhook>()
}

/// A serialized enum's name (`"DELIVERED"`), for display.
fn name_of<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn state(w: &WebhookView) -> (&'static str, String) {
    if w.enabled {
        ("ok", t("webhooks-enabled").to_owned())
    } else {
        (
            "bad",
            match &w.disabled_reason {
                Some(reason) => tw(
                    "webhooks-disabled-why",
                    &[("why", Arg::Text(&name_of(reason).to_lowercase()))],
                ),
                None => t("webhooks-disabled").to_owned(),
            },
        )
    }
}

/// `GET /dashboard/webhooks`, or after a create (`made`: the secret, shown once).
pub(crate) async fn list(
    ctx: &Ctx,
    staff: &Staff,
    after: After<'_, WebhookWithSecret>,
) -> Response {
    let (form, made, failure) = (after.form(), after.made(), after.failure());
    let outcome = async {
        let list = api::perform(ctx, staff, ListWebhooks).await?;
        let content = html! {
            h1 { (t("webhooks-webhooks")) }
            p.hint { (t("webhooks-each-change-your-records-each")) }
            @if let Some(made) = made {
                div.card role="status" {
                    h2 { (tm("webhooks-signing-secret-url", &[("url", html! { (made.endpoint.url) })])) }
                    p { (t("webhooks-your-receiver-checks-each-events")) }
                    (page::shown_once("new-secret", None, &made.secret))
                }
            }
            (page::table(&[t("webhooks-address"), t("webhooks-events"), t("webhooks-state"), t("webhooks-since")], None, html! {
                @if list.is_empty() { tr { td.empty colspan="4" { (t("webhooks-no-endpoints-yet")) } } }
                @for w in &list {
                    @let (class, text) = state(w);
                    tr {
                        td { a href={ "/dashboard/webhooks/" (w.id) } { (w.url) } @if let Some(d) = &w.description { br; span.hint { (d) } } }
                        td { (w.event_types.join(", ")) }
                        td { span.badge.(class) { (text) } }
                        td { (page::day(w.created_at)) }
                    }
                }
            }))
            @if may_write(staff) {
                h2 { (t("webhooks-new-endpoint")) }
                (page::problems(failure))
                form method="post" action="/dashboard/webhooks" {
                    (page::csrf(staff))
                    label for="url" { (t("webhooks-address")) span.hint { (t("webhooks-https-url-your-server")) } }
                    input #url type="text" name="url" required value=(form.get("url").unwrap_or(""));
                    label for="description" { (t("webhooks-description")) span.hint { (t("webhooks-optional")) } }
                    input #description type="text" name="description" value=(form.get("description").unwrap_or(""));
                    label for="eventTypes" { (t("webhooks-events")) span.hint { (t("webhooks-comma-separated-license-created-license")) } }
                    input #eventTypes type="text" name="eventTypes" value=(form.get("eventTypes").unwrap_or("*"));
                    p { button type="submit" { (t("webhooks-create-endpoint")) } }
                }
            }
        };
        Ok(page::shown(Nav::Webhooks, t("webhooks-webhooks"), content))
    };
    page::answer_with(ctx, staff, after.status(), outcome.await)
}

/// `POST /dashboard/webhooks`.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let events: Vec<&str> = form
        .get("eventTypes")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let body = WebhookBody {
        url: Some(form.get("url").unwrap_or("").trim().to_owned()),
        description: form.text("description").map(str::to_owned),
        event_types: Some(events.into_iter().map(str::to_owned).collect()),
        ..WebhookBody::default()
    };
    match api::perform(ctx, staff, CreateWebhook(body)).await {
        Ok(made) => list(ctx, staff, After::Made(&made)).await,
        Err(f) if f.status == 400 => list(ctx, staff, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn webhook_id(text: &str) -> Result<WebhookId, Failure> {
    page::id_of(text, t("webhooks-webhook-endpoint"))
}

/// `GET /dashboard/webhooks/{id}`: the endpoint, its delivery log, and for who may change
/// webhooks: enable or disable, a new signing secret (shown once, `rotated`), and the edit form
/// (filled with what was sent when it was refused: `edit`, `failure`).
pub(crate) async fn show(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    rotated: Option<&WebhookWithSecret>,
    edit: Option<(&Form, &Failure)>,
) -> Response {
    let outcome = async {
        let id = webhook_id(id)?;
        let w = api::perform(ctx, staff, GetWebhook(id)).await?;
        let failure = edit.map(|(_, f)| f);
        let sent = edit.map(|(form, _)| form);
        let chosen: Vec<String> = match sent {
            Some(form) => form
                .all("eventTypes")
                .into_iter()
                .map(str::to_owned)
                .collect(),
            None => w.event_types.clone(),
        };
        // The known types, then any pattern the endpoint has besides (`license.*`).
        let known = licensing_core::model::event_types();
        let patterns: Vec<&String> = chosen
            .iter()
            .filter(|c| *c != "*" && !known.contains(&c.as_str()))
            .collect();
        let paging = Paging {
            page_size: 50,
            ..Paging::default()
        };
        let deliveries = api::perform(ctx, staff, ListDeliveries(id, paging)).await?;
        let write = may_write(staff);
        let (class, text) = state(&w);
        let content = html! {
            div.heading {
                h1 { (w.url) }
                span.badge.(class) { (text) }
            }
            @if let Some(made) = rotated {
                div.card role="status" {
                    h2 { (t("webhooks-new-signing-secret")) }
                    p { (t("webhooks-give-your-receiver-now-not")) }
                    (page::shown_once("new-secret", None, &made.secret))
                }
            }
            @if write {
                div.actions {
                    form method="post" action={ "/dashboard/webhooks/" (id) "/test" } {
                        (page::csrf(staff))
                        button.secondary type="submit" { (t("webhooks-send-test-event")) }
                    }
                    @if w.enabled {
                        form method="post" action={ "/dashboard/webhooks/" (id) "/disable" } {
                            (page::csrf(staff))
                            button.secondary type="submit" { (t("webhooks-disable")) }
                        }
                    } @else {
                        form method="post" action={ "/dashboard/webhooks/" (id) "/enable" } {
                            (page::csrf(staff))
                            button type="submit" { (t("webhooks-enable")) }
                        }
                    }
                    a.button.secondary href={ "/dashboard/webhooks/" (id) "/rotate-secret" } { (t("webhooks-new-signing-secret-2")) }
                    a.button.danger href={ "/dashboard/webhooks/" (id) "/delete" } { (t("webhooks-delete")) }
                }
            }
            div.card {
                dl.facts {
                    dt { (t("webhooks-events")) } dd { (w.event_types.join(", ")) }
                    dt { (t("webhooks-description")) } dd { (w.description.as_deref().unwrap_or(t("webhooks-none"))) }
                    dt { (t("webhooks-failing-since")) } dd { (w.failing_since.map(|at| page::when(staff, at)).unwrap_or_else(|| t("webhooks-not-failing").into())) }
                    dt { (t("webhooks-since")) } dd { (page::when(staff, w.created_at)) }
                }
            }
            @if write {
                details.edit open[failure.is_some()] {
                    summary { (t("webhooks-edit")) }
                    (page::problems(failure))
                    form method="post" action={ "/dashboard/webhooks/" (id) } {
                        (page::csrf(staff))
                        label for="url" { (t("webhooks-address")) (super::page::field_error(failure, "url")) }
                        input #url type="text" name="url" required value=(sent.map_or(w.url.as_str(), |f| f.get("url").unwrap_or("")));
                        label for="description" { (t("webhooks-description")) span.hint { (t("webhooks-optional")) } }
                        input #description type="text" name="description" value=(sent.map_or(w.description.as_deref().unwrap_or(""), |f| f.get("description").unwrap_or("")));
                        fieldset {
                            legend { (t("webhooks-events")) (super::page::field_error(failure, "eventTypes")) }
                            label.choice {
                                input type="checkbox" name="eventTypes" value="*" checked[chosen.iter().any(|c| c == "*")];
                                (t("webhooks-every-event-those-added-later"))
                            }
                            @for pattern in &patterns {
                                label.choice {
                                    input type="checkbox" name="eventTypes" value=(pattern) checked;
                                    code { (pattern) }
                                }
                            }
                            @for t in &known {
                                label.choice {
                                    input type="checkbox" name="eventTypes" value=(t) checked[chosen.iter().any(|c| c == t)];
                                    code { (t) }
                                }
                            }
                        }
                        p { button type="submit" { (t("webhooks-save-endpoint")) } }
                    }
                }
            }
            h2 { (t("webhooks-deliveries")) }
            (page::table(&[t("webhooks-when"), t("webhooks-event"), t("webhooks-state"), t("webhooks-attempts"), t("webhooks-last-answer")], write.then_some(t("webhooks-action")), html! {
                @if deliveries.items.is_empty() { tr { td.empty colspan="6" { (t("webhooks-nothing-sent-yet")) } } }
                @for d in &deliveries.items {
                    tr {
                        td.nowrap { (page::when_exact(staff, d.created_at)) }
                        td { code { (d.event_type) } }
                        td { (name_of(&d.status).to_lowercase()) }
                        td { (d.attempt_count) }
                        td {
                            @if let Some(a) = d.attempts.last() {
                                @if let Some(code) = a.status_code { "HTTP " (code) } @else { (a.error.as_deref().unwrap_or(t("webhooks-no-answer"))) }
                            } @else { "—" }
                        }
                        @if write {
                            td {
                                form method="post" action={ "/dashboard/webhooks/" (id) "/deliveries/" (d.id) "/redeliver" } {
                                    (page::csrf(staff))
                                    button.secondary.small type="submit" { (t("webhooks-send-again")) }
                                }
                            }
                        }
                    }
                }
            }))
        };
        Ok(page::shown(
            Nav::Webhooks,
            t("webhooks-webhook-endpoint-2"),
            content,
        ))
    };
    page::answer(ctx, staff, edit.map(|(_, f)| f), outcome.await)
}

/// `POST /dashboard/webhooks/{id}`: the edit form (address, description, events); a refusal
/// shows the page again with what was sent and why.
pub(crate) async fn update(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let webhook = match webhook_id(id) {
        Ok(webhook) => webhook,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let events = form.all("eventTypes");
    if events.is_empty() {
        let f = Failure::new(400, t("webhooks-choose-least-one-event-every"));
        return show(ctx, staff, id, None, Some((form, &f))).await;
    }
    let body = WebhookBody {
        url: Some(form.get("url").unwrap_or("").trim().to_owned()),
        description: Some(form.get("description").unwrap_or("").trim().to_owned()),
        event_types: Some(events.into_iter().map(str::to_owned).collect()),
        ..WebhookBody::default()
    };
    match api::perform(ctx, staff, UpdateWebhook(webhook, body)).await {
        Ok(_) => page::redirect(&format!(
            "/dashboard/webhooks/{webhook}?notice=webhook-updated"
        )),
        Err(f) if f.status == 400 => show(ctx, staff, id, None, Some((form, &f))).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/webhooks/{id}/enable` and `…/disable`.
pub(crate) async fn set_enabled(ctx: &Ctx, staff: &Staff, id: &str, enabled: bool) -> Response {
    let op = webhook_id(id).map(|id| {
        UpdateWebhook(
            id,
            WebhookBody {
                enabled: Some(enabled),
                ..WebhookBody::default()
            },
        )
    });
    let verb = if enabled { "enabled" } else { "disabled" };
    let then = format!("/dashboard/webhooks/{id}?notice=webhook-{verb}");
    page::done(ctx, staff, op, &then).await
}

/// `GET /dashboard/webhooks/{id}/rotate-secret`.
pub(crate) async fn confirm_rotate(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let what = |url: &str| {
        html! { (tm("webhooks-events-signed-with-new-secret", &[("strong", html! { strong { (url) } })])) }
    };
    let asking = (
        t("webhooks-make-new-signing-secret"),
        "rotate-secret",
        t("webhooks-make-new-secret"),
    );
    ask(ctx, staff, id, asking, what).await
}

/// The confirmation page of an action on endpoint `id`: its (title, path after the endpoint's,
/// button), and what follows, said of the endpoint's address by `what`.
async fn ask(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    (title, action, button): (&str, &str, &str),
    what: impl FnOnce(&str) -> maud::Markup,
) -> Response {
    let outcome = async {
        let id = webhook_id(id)?;
        let w = api::perform(ctx, staff, GetWebhook(id)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Webhooks,
                title,
                what: what(&w.url),
                action: format!("/dashboard/webhooks/{id}/{action}"),
                button,
                back: format!("/dashboard/webhooks/{id}"),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/webhooks/{id}/rotate-secret`: the page again, with the new secret.
pub(crate) async fn rotate(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let webhook = webhook_id(id)?;
        api::perform(ctx, staff, RotateWebhookSecret(webhook)).await
    };
    match outcome.await {
        Ok(made) => show(ctx, staff, id, Some(&made), None).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/webhooks/{id}/test`.
pub(crate) async fn send_test(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = webhook_id(id).map(SendTestEvent);
    let then = op.as_ref().map_or_else(
        |_| String::new(),
        |SendTestEvent(id)| format!("/dashboard/webhooks/{id}?notice=webhook-test"),
    );
    page::done(ctx, staff, op, &then).await
}

/// `POST /dashboard/webhooks/{id}/deliveries/{deliveryId}/redeliver`.
pub(crate) async fn redeliver(ctx: &Ctx, staff: &Staff, id: &str, delivery: &str) -> Response {
    let op = webhook_id(id).and_then(|id| Ok(Redeliver(id, page::id_of(delivery, "delivery")?)));
    let then = op.as_ref().map_or_else(
        |_| String::new(),
        |Redeliver(id, _)| format!("/dashboard/webhooks/{id}?notice=webhook-redelivered"),
    );
    page::done(ctx, staff, op, &then).await
}

/// `GET /dashboard/webhooks/{id}/delete`.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let what = |url: &str| {
        html! { (tm("webhooks-events-stop-going-delivery-log", &[("strong", html! { strong { (url) } })])) }
    };
    let asking = (
        t("webhooks-delete-endpoint"),
        "delete",
        t("webhooks-delete-endpoint-2"),
    );
    ask(ctx, staff, id, asking, what).await
}

/// `POST /dashboard/webhooks/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = webhook_id(id).map(DeleteWebhook);
    page::done(ctx, staff, op, "/dashboard/webhooks?notice=webhook-deleted").await
}
