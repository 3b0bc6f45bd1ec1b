//! The entitlements page: the team's feature codes, created and deleted here and granted on the
//! license and product forms.

use licensing_core::EntitlementId;
use licensing_core::api::requests::{EntitlementBody, Patch};
use maud::html;

use super::api::{self, Failure};
use super::page::field_error;
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::entitlements::{
    AllEntitlements, CreateEntitlement, DeleteEntitlement, GetEntitlement,
};
use crate::dashboard::words::{t, tm};
use crate::http::Response;

/// The team's entitlements for a page or form, when the role may read them (else none: the page
/// shows no entitlements, and a form leaves them as they are).
pub(super) async fn readable(
    ctx: &Ctx,
    staff: &Staff,
) -> Result<Vec<licensing_core::model::Entitlement>, Failure> {
    if staff.may_perform::<AllEntitlements>() {
        api::perform(ctx, staff, AllEntitlements).await
    } else {
        Ok(Vec::new())
    }
}

/// `GET /dashboard/entitlements`, or the form again with what to fix.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let all = api::perform(ctx, staff, AllEntitlements).await?;
        let write = staff.may_perform::<crate::app::entitlements::UpdateEntitlement>();
        let content = html! {
            h1 { (t("entitlements-entitlements")) }
            p.hint { (t("entitlements-features-license-grants-directly-through")) }
            (page::table(&[t("entitlements-code"), t("entitlements-name"), t("entitlements-created")], write.then_some(t("entitlements-action")), html! {
                @if all.is_empty() { tr { td.empty colspan="4" { (t("entitlements-no-entitlements-yet")) } } }
                @for e in &all {
                    tr {
                        td { code { (e.code) } }
                        td { (e.name) }
                        td { (page::day(e.created_at)) }
                        @if write {
                            td { a.button.secondary.small href={ "/dashboard/entitlements/" (e.id) "/delete" } { (t("entitlements-delete")) } }
                        }
                    }
                }
            }))
            @if write {
                h2 { (t("entitlements-new-entitlement")) }
                (page::problems(failure))
                form method="post" action="/dashboard/entitlements" {
                    (page::csrf(staff))
                    label for="name" { (t("entitlements-name")) (field_error(failure, "name")) }
                    input #name type="text" name="name" required value=(form.get("name").unwrap_or(""));
                    label for="code" { (t("entitlements-code")) span.hint { (t("entitlements-z-0-9-starting-with")) } (field_error(failure, "code")) }
                    input #code type="text" name="code" required pattern="[A-Z][A-Z0-9_]{0,63}" value=(form.get("code").unwrap_or(""));
                    p { button type="submit" { (t("entitlements-create-entitlement")) } }
                }
            }
        };
        Ok(page::shown(
            Nav::Entitlements,
            t("entitlements-entitlements"),
            content,
        ))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/entitlements`.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = EntitlementBody {
        name: Patch::Value(form.get("name").unwrap_or("").trim().to_owned()),
        code: Patch::Value(form.get("code").unwrap_or("").trim().to_owned()),
        ..EntitlementBody::default()
    };
    match api::perform(ctx, staff, CreateEntitlement(body)).await {
        Ok(_) => page::redirect("/dashboard/entitlements?notice=entitlement-created"),
        Err(f) if f.status == 400 => list(ctx, staff, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn entitlement_id(text: &str) -> Result<EntitlementId, Failure> {
    page::id_of(text, "entitlement")
}

/// `GET /dashboard/entitlements/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let e = api::perform(ctx, staff, GetEntitlement(entitlement_id(id)?)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Entitlements,
                title: t("entitlements-delete-entitlement"),
                what: html! { "“" (e.name) "” (" (tm("entitlements-taken-from-every-license-product", &[("code", html! { code { (e.code) } })])) },
                action: format!("/dashboard/entitlements/{}/delete", e.id),
                button: t("entitlements-delete-entitlement-2"),
                back: "/dashboard/entitlements".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/entitlements/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = entitlement_id(id).map(DeleteEntitlement);
    page::done(
        ctx,
        staff,
        op,
        "/dashboard/entitlements?notice=entitlement-deleted",
    )
    .await
}
