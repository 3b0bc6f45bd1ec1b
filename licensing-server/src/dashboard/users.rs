//! The team's staff accounts, for owners and admins: invite (a set-password link, shown once),
//! change a role, issue a new link, delete.

use licensing_core::StaffId;
use licensing_core::model::Role;
use maud::html;

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::accounts::{
    ChangeRole, DeleteAccount, GetAccount, InviteAccount, Invited, ListAccounts, NewLink,
    ResetTwoStep, set_password_link,
};
use crate::app::staff::{self as service, CreatedStaff};
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

/// What a role may do (the message; the README's table says the same).
fn role_hint(role: Role) -> &'static str {
    match role {
        Role::Owner => "users-role-owner",
        Role::Admin => "users-role-admin",
        Role::Developer => "users-role-developer",
        Role::Support => "users-role-support",
        Role::Viewer => "users-role-viewer",
    }
}

/// The dashboard's public address (`--public-url`), else the one the browser used:
/// `scheme://host`.
pub(crate) fn base(ctx: &Ctx) -> String {
    crate::app::base_url(
        ctx.state.public_url.as_deref(),
        crate::http::origin(ctx.client, &ctx.headers),
    )
}

/// The absolute set-password link, from the address the browser used.
fn link(ctx: &Ctx, created: &CreatedStaff) -> String {
    set_password_link(&base(ctx), created)
}

/// `GET /dashboard/users`, or after a change: `made` is a new link to show once.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff, after: After<'_, CreatedStaff>) -> Response {
    let (form, made, failure) = (after.form(), after.made(), after.failure());
    let outcome = async {
        let users = api::perform(ctx, staff, ListAccounts).await?;
        let role = form.get("role").unwrap_or("viewer");
        let content = html! {
            h1 { (t("users-users")) }
            p.hint { (t("users-people-who-sign-dashboard-what")) }
            @if let Some(made) = made {
                div.card role="status" {
                    h2 { (tm("users-set-password-link-email", &[("email", html! { (made.user.email.as_str()) })])) }
                    p { (tm("users-send-them-works-once-within", &[("link-lifetime-hours", html! { (service::LINK_LIFETIME_HOURS) })])) }
                    (page::shown_once("new-link", None, &link(ctx, made)))
                }
            }
            (page::table(&[t("users-e-mail-address"), t("users-role"), t("users-password"), t("users-two-step"), t("users-since")], Some(t("users-actions")), html! {
                @for u in &users {
                    @let managed = u.id != staff.user.id && staff.user.role.manages(u.role);
                    tr {
                        td { (u.email.as_str()) @if u.id == staff.user.id { " " span.hint { (t("users-you")) } } }
                        td {
                            @if managed {
                                form.inline method="post" action={ "/dashboard/users/" (u.id) "/role" } {
                                    (page::csrf(staff))
                                    select name="role" aria-label=(tw("users-role-of", &[("email", Arg::Text(u.email.as_str()))])) {
                                        @for r in Role::ALL {
                                            @if staff.user.role.manages(r) {
                                                option value=(r.as_str()) selected[u.role == r] { (r.as_str()) }
                                            }
                                        }
                                    }
                                    " "
                                    button.secondary.small type="submit" { (t("users-change")) }
                                }
                            } @else {
                                (u.role.as_str())
                            }
                        }
                        td { @if u.password_hash.is_some() { (t("users-set")) } @else { span.badge.warn { (t("users-not-yet")) } } }
                        td { @if u.two_step.is_some() { span.badge.ok { (t("users-on")) } } @else { (t("users-off")) } }
                        td { (page::day(u.created_at)) }
                        td {
                            @if managed {
                                div.actions {
                                    form method="post" action={ "/dashboard/users/" (u.id) "/link" } {
                                        (page::csrf(staff))
                                        button.secondary.small type="submit" { (t("users-new-link")) }
                                    }
                                    @if u.two_step.is_some() {
                                        form method="post" action={ "/dashboard/users/" (u.id) "/two-step/off" } {
                                            (page::csrf(staff))
                                            button.secondary.small type="submit" aria-label=(tw("users-two-step-off-of", &[("email", Arg::Text(u.email.as_str()))])) { (t("users-turn-off-two-step")) }
                                        }
                                    }
                                    a.button.danger.small href={ "/dashboard/users/" (u.id) "/delete" } { (t("users-delete")) }
                                }
                            }
                        }
                    }
                }
            }))
            h2 { (t("users-invite-someone")) }
            (page::problems(failure))
            form method="post" action="/dashboard/users" {
                (page::csrf(staff))
                label for="email" { (t("users-e-mail-address")) }
                input #email type="email" name="email" required value=(form.get("email").unwrap_or(""));
                label for="role" { (t("users-role")) }
                select #role name="role" {
                    @for r in Role::ALL {
                        @if staff.user.role.manages(r) {
                            option value=(r.as_str()) selected[role == r.as_str()] { (r.as_str()) }
                        }
                    }
                }
                dl.facts.roles {
                    @for r in Role::ALL {
                        dt { code { (r.as_str()) } }
                        dd.hint { (t(role_hint(r))) }
                    }
                }
                @if ctx.state.mailer.is_some() {
                    label.choice { input type="checkbox" name="sendEmail" value="true" checked[form.get("email").is_none() || form.get("sendEmail").is_some()]; (t("users-e-mail-them-their-set")) }
                }
                p { button type="submit" { (t("users-create-account")) } }
            }
        };
        Ok(page::shown(Nav::Users, t("users-users"), content))
    };
    page::answer_with(ctx, staff, after.status(), outcome.await)
}

/// `POST /dashboard/users`.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let role = match Role::parse(form.get("role").unwrap_or("")) {
        Ok(role) => role,
        Err(e) => {
            let mut f = Failure::new(400, "");
            f.fields.push(licensing_core::FieldError::new("role", e));
            return list(ctx, staff, After::Refused(form, &f)).await;
        }
    };
    let invite = InviteAccount {
        email: form.get("email").unwrap_or("").to_owned(),
        role,
        mail_from: form.get("sendEmail").map(|_| base(ctx)),
    };
    match api::perform(ctx, staff, invite).await {
        Ok(Invited { mailed: true, .. }) => page::redirect("/dashboard/users?notice=user-invited"),
        Ok(Invited { made, .. }) => list(ctx, staff, After::Made(&made)).await,
        // A role the caller may not give is shown with the form; not managing accounts at all
        // is a page of its own.
        Err(f) if f.status == 400 || (f.status == 403 && staff.user.role.manages(Role::Viewer)) => {
            list(ctx, staff, After::Refused(form, &f)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn user_id(text: &str) -> Result<StaffId, Failure> {
    page::id_of(text, "account")
}

/// `POST /dashboard/users/{id}/role`.
pub(crate) async fn change_role(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let outcome = async {
        let id = user_id(id)?;
        let role = Role::parse(form.get("role").unwrap_or("")).map_err(|e| {
            Failure::new(
                400,
                tw("users-role-wrong", &[("why", Arg::Text(&e.to_string()))]),
            )
        })?;
        api::perform(ctx, staff, ChangeRole(id, role)).await?;
        Ok::<_, Failure>(page::redirect("/dashboard/users?notice=user-updated"))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// `POST /dashboard/users/{id}/two-step/off`: for someone who lost their authenticator app and
/// their recovery codes.
pub(crate) async fn reset_two_step(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = user_id(id).map(ResetTwoStep);
    page::done(ctx, staff, op, "/dashboard/users?notice=two-step-reset").await
}

/// `POST /dashboard/users/{id}/link`.
pub(crate) async fn new_link(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = user_id(id)?;
        api::perform(ctx, staff, NewLink(id)).await
    };
    match outcome.await {
        Ok(made) => list(ctx, staff, After::Made(&made)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/users/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = user_id(id)?;
        let user = api::perform(ctx, staff, GetAccount(id)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Users,
                title: t("users-delete-account"),
                what: html! { (tm("users-email-role-can-no-longer", &[("email", html! { (user.email.as_str()) }), ("role", html! { (user.role.as_str()) })])) },
                action: format!("/dashboard/users/{id}/delete"),
                button: t("users-delete-account-2"),
                back: "/dashboard/users".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/users/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = user_id(id).map(DeleteAccount);
    page::done(ctx, staff, op, "/dashboard/users?notice=user-deleted").await
}
