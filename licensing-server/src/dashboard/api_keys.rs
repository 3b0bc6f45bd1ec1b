//! API keys: the list, a new key with its scopes (shown once), and revoking one.

use licensing_core::api::requests::ApiKeyBody;
use licensing_core::model::{ApiKeyCreated, ApiKeyView, Scope, Scopes};
use licensing_core::{ApiKeyId, Timestamp};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::access::{CreateApiKey, ListApiKeys, RevokeApiKey};
use crate::http::Response;

fn scopes_text(scopes: &Scopes) -> String {
    match scopes {
        Scopes::All => "every scope".to_owned(),
        Scopes::Only(_) => scopes.names().join(", "),
    }
}

/// `GET /dashboard/api-keys`, or the same page after a create (the new key, shown this once)
/// or a refused one (what to fix in the form).
pub(crate) async fn list(ctx: &Ctx, staff: &Staff, after: After<'_, ApiKeyCreated>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let keys = match api::perform(ctx, staff, ListApiKeys).await {
        Ok(keys) => keys,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let write = staff.may_perform::<crate::app::access::CreateApiKey>();
    let chosen = form.all("scopes");
    let content = html! {
        h1 { "API keys" }
        p.hint { "Your back end uses these to call the developer API. A key is shown once, when it is made." }
        @if let Some(created) = after.made() {
            div.card.created role="status" {
                h2 { "New key “" (created.name) "”" }
                p { "Copy it now: it is not shown again." }
                (page::shown_once("new-key", Some("key"), &created.key))
                p.hint { "Scopes: " (scopes_text(&created.scopes)) }
            }
        }
        (table(staff, &keys, write, ctx.now))
        @if write {
            h2 { "New API key" }
            (page::problems(failure))
            form method="post" action="/dashboard/api-keys" {
                (page::csrf(staff))
                label for="name" { "Name" span.hint { "To recognize it by, such as “billing back end”." } }
                input #name type="text" name="name" required value=(form.get("name").unwrap_or(""));
                fieldset {
                    legend { "Scopes" }
                    @if let Some(message) = failure.and_then(|f| f.field("scopes")) {
                        span.field-error { (message) }
                    }
                    @for scope in Scope::all() {
                        @let name = scope.name();
                        label.choice {
                            input type="checkbox" name="scopes" value=(name) checked[chosen.contains(&name.as_str())];
                            code { (name) }
                        }
                    }
                }
                label for="expiresAt" { "Expires" span.hint { "Optional; at 00:00 UTC on this day." } }
                input #expiresAt type="date" name="expiresAt" value=(form.get("expiresAt").unwrap_or(""));
                p { button type="submit" { "Create key" } }
            }
        }
    };
    page::html_response(
        after.status(),
        page::layout(ctx, staff, Nav::ApiKeys, "API keys", content),
    )
}

fn table(staff: &Staff, keys: &[ApiKeyView], write: bool, now: Timestamp) -> Markup {
    html! {
        (page::table(&["Name", "Scopes", "Expires", "Last used", "Created"], write.then_some("Action"), html! {
            @for k in keys {
                tr {
                    td { (k.name) }
                    td { (scopes_text(&k.scopes)) }
                    td {
                        @match k.expires_at {
                            Some(at) if at <= now => span.badge.bad { "Expired" },
                            Some(at) => (page::day(at)),
                            None => "Never",
                        }
                    }
                    td { (k.last_used_at.map(|at| page::when(staff, at)).unwrap_or_else(|| "Never".into())) }
                    td { (page::day(k.created_at)) }
                    @if write {
                        td { a.button.secondary.small href={ "/dashboard/api-keys/" (k.id) "/revoke" } { "Revoke…" } }
                    }
                }
            }
        }))
    }
}

/// `POST /dashboard/api-keys`.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = ApiKeyBody {
        name: Some(form.get("name").unwrap_or("").trim().to_owned()),
        expires_at: form
            .text("expiresAt")
            .map(|date| format!("{date}T00:00:00Z")),
        scopes: Some(form.all("scopes").into_iter().map(str::to_owned).collect()),
        product_ids: None,
    };
    match api::perform(ctx, staff, CreateApiKey(body)).await {
        Ok(new) => list(ctx, staff, After::Made(&new.created)).await,
        Err(f) if f.status == 400 || f.status == 403 => {
            list(ctx, staff, After::Refused(form, &f)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn key_id(text: &str) -> Result<ApiKeyId, Failure> {
    page::id_of(text, "API key")
}

/// `GET /dashboard/api-keys/{id}/revoke`: the confirmation.
pub(crate) async fn confirm_revoke(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = key_id(id)?;
        let keys = api::perform(ctx, staff, ListApiKeys).await?;
        let key = keys
            .iter()
            .find(|k| k.id == id)
            .ok_or_else(|| Failure::new(404, "There is no such API key."))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::ApiKeys,
                title: "Revoke this API key?",
                what: html! { "“" (key.name) "” (" (scopes_text(&key.scopes)) ") stops working at once: whatever uses it is refused from then on." },
                action: format!("/dashboard/api-keys/{id}/revoke"),
                button: "Revoke key",
                back: "/dashboard/api-keys".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/api-keys/{id}/revoke`.
pub(crate) async fn revoke(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = key_id(id).map(RevokeApiKey);
    page::done(ctx, staff, op, "/dashboard/api-keys?notice=key-revoked").await
}
