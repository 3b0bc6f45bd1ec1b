//! API keys: the list, a new key with its scopes (shown once), and revoking one.

use licensing_core::api::requests::ApiKeyBody;
use licensing_core::model::{ApiKeyCreated, ApiKeyView, Scope, Scopes};
use licensing_core::{ApiKeyId, Timestamp};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::access::{CreateApiKey, ListApiKeys, RevokeApiKey};
use crate::dashboard::words::{t, tm};
use crate::http::Response;

fn scopes_text(scopes: &Scopes) -> String {
    match scopes {
        Scopes::All => t("api-keys-every-scope").to_owned(),
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
        h1 { (t("api-keys-api-keys")) }
        p.hint { (t("api-keys-your-back-end-uses-these")) }
        @if let Some(created) = after.made() {
            div.card.created role="status" {
                h2 { (tm("api-keys-new-key-name", &[("name", html! { (created.name) })])) }
                p { (t("api-keys-copy-now-not-shown-again")) }
                (page::shown_once("new-key", Some("key"), &created.key))
                p.hint { (tm("api-keys-scopes-scopes-text", &[("scopes-text", html! { (scopes_text(&created.scopes)) })])) }
            }
        }
        (table(staff, &keys, write, ctx.now))
        @if write {
            h2 { (t("api-keys-new-api-key")) }
            (page::problems(failure))
            form method="post" action="/dashboard/api-keys" {
                (page::csrf(staff))
                label for="name" { (t("api-keys-name")) span.hint { (t("api-keys-recognize-such-billing-back-end")) } }
                input #name type="text" name="name" required value=(form.get("name").unwrap_or(""));
                fieldset {
                    legend { (t("api-keys-scopes")) }
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
                label for="expiresAt" { (t("api-keys-expires")) span.hint { (t("api-keys-optional-00-00-utc-day")) } }
                input #expiresAt type="date" name="expiresAt" value=(form.get("expiresAt").unwrap_or(""));
                p { button type="submit" { (t("api-keys-create-key")) } }
            }
        }
    };
    page::html_response(
        after.status(),
        page::layout(ctx, staff, Nav::ApiKeys, t("api-keys-api-keys"), content),
    )
}

fn table(staff: &Staff, keys: &[ApiKeyView], write: bool, now: Timestamp) -> Markup {
    html! {
        (page::table(&[t("api-keys-name"), t("api-keys-scopes"), t("api-keys-expires"), t("api-keys-last-used"), t("api-keys-created")], write.then_some(t("api-keys-action")), html! {
            @for k in keys {
                tr {
                    td { (k.name) }
                    td { (scopes_text(&k.scopes)) }
                    td {
                        @match k.expires_at {
                            Some(at) if at <= now => span.badge.bad { (t("api-keys-expired")) },
                            Some(at) => (page::day(at)),
                            None => (t("api-keys-never")),
                        }
                    }
                    td { (k.last_used_at.map(|at| page::when(staff, at)).unwrap_or_else(|| t("api-keys-never").into())) }
                    td { (page::day(k.created_at)) }
                    @if write {
                        td { a.button.secondary.small href={ "/dashboard/api-keys/" (k.id) "/revoke" } { (t("api-keys-revoke")) } }
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
    page::id_of(text, t("api-keys-api-key"))
}

/// `GET /dashboard/api-keys/{id}/revoke`: the confirmation.
pub(crate) async fn confirm_revoke(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = key_id(id)?;
        let keys = api::perform(ctx, staff, ListApiKeys).await?;
        let key = keys
            .iter()
            .find(|k| k.id == id)
            .ok_or_else(|| Failure::new(404, t("api-keys-there-no-such-api-key")))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::ApiKeys,
                title: t("api-keys-revoke-api-key"),
                what: html! { (tm("api-keys-name-scopes-text-stops-working", &[("name", html! { (key.name) }), ("scopes-text", html! { (scopes_text(&key.scopes)) })])) },
                action: format!("/dashboard/api-keys/{id}/revoke"),
                button: t("api-keys-revoke-key"),
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
