//! Bulk actions on the license list: the licenses chosen with the list's boxes are suspended,
//! unsuspended or deleted after one confirmation that names each of them, by the operation the
//! API's `POST …/licenses/bulk` performs: each license goes through the same operation as on
//! its own page (its permission, audit entry and webhook event); what one of them refuses is
//! listed, the others are done.

use licensing_core::api::requests::{BulkAction as Action, BulkLicenseBody, MAX_BULK_LICENSES};
use licensing_core::{ApiError, LicenseId};
use maud::html;

use super::{license_id, status};
use crate::app::licenses::{BulkLicenses, GetLicense};
use crate::dashboard::api::{self, Failure};
use crate::dashboard::page::{self, Form, Nav};
use crate::dashboard::{Ctx, Staff};
use crate::http::Response;

/// The most licenses one bulk action takes: a list's largest page.
const MOST: usize = MAX_BULK_LICENSES;

/// How the dashboard words an action.
trait Words {
    /// The value of the list menu's choice.
    fn value(self) -> &'static str;
    /// The choice in the list's menu.
    fn words(self) -> &'static str;
    /// What follows from it, after the list of licenses on the confirmation page.
    fn consequence(self) -> &'static str;
}

impl Words for Action {
    fn value(self) -> &'static str {
        match self {
            Action::Suspend => "suspend",
            Action::Unsuspend => "unsuspend",
            Action::Delete => "delete",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Action::Suspend => "Suspend",
            Action::Unsuspend => "Unsuspend",
            Action::Delete => "Delete",
        }
    }

    fn consequence(self) -> &'static str {
        match self {
            Action::Suspend => {
                "Their applications are refused until they are unsuspended; nothing else changes."
            }
            Action::Unsuspend => "Their applications are accepted again.",
            Action::Delete => {
                "They are deleted with their devices and addresses, and their applications are refused from then on. This cannot be undone."
            }
        }
    }
}

/// The actions `staff`'s role may take, as the list's menu offers them (value, words); none:
/// the list shows no boxes.
pub(super) fn actions(staff: &Staff) -> Vec<(&'static str, &'static str)> {
    Action::ALL
        .into_iter()
        .filter(|a| staff.may(a.scope()))
        .map(|a| (a.value(), a.words()))
        .collect()
}

/// Where the list was (`back`, kept only when it is the license list), to return to.
fn back_to(form: &Form) -> String {
    form.get("back")
        .filter(|b| *b == "/dashboard/licenses" || b.starts_with("/dashboard/licenses?"))
        .unwrap_or("/dashboard/licenses")
        .to_owned()
}

/// The action and the licenses a bulk form names.
fn chosen(form: &Form) -> Result<(Action, Vec<LicenseId>), Failure> {
    let action = Action::ALL
        .into_iter()
        .find(|a| form.get("action") == Some(a.value()))
        .ok_or_else(|| Failure::new(400, "Choose what to do: suspend, unsuspend or delete."))?;
    let mut ids = Vec::new();
    for text in form.all("id") {
        let id = license_id(text)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(Failure::new(
            400,
            "No license was chosen: tick the box beside each license first, then apply.",
        ));
    }
    if ids.len() > MOST {
        return Err(Failure::new(
            400,
            format!("Choose at most {MOST} licenses at a time."),
        ));
    }
    Ok((action, ids))
}

/// `POST /dashboard/licenses/bulk`: without `confirmed`, the page that names each license and
/// asks; with it, the action done to each, back to the list (or, when some were refused, a page
/// that says which and why).
pub(crate) async fn bulk(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let (action, ids) = match chosen(form) {
        Ok(chosen) => chosen,
        Err(failure) => return page::failure(ctx, Some(staff), &failure),
    };
    if !staff.may(action.scope()) {
        let failure: Failure = ApiError::forbidden(format!(
            "Your role ({}) may not {}",
            staff.user.role,
            action.scope().words()
        ))
        .into();
        return page::failure(ctx, Some(staff), &failure);
    }
    let back = back_to(form);
    if form.get("confirmed") == Some("yes") {
        return perform(ctx, staff, action, &ids, &back).await;
    }
    let mut found = Vec::with_capacity(ids.len());
    for id in &ids {
        match api::perform(ctx, staff, GetLicense(*id)).await {
            Ok(detail) => found.push(detail.license),
            // Gone meanwhile, or another team's: not listed, not done.
            Err(failure) if failure.status == 404 => {}
            Err(failure) => return page::failure(ctx, Some(staff), &failure),
        }
    }
    let title = format!(
        "{} {}?",
        action.words(),
        page::counted(found.len() as u64, "license", "licenses")
    );
    let content = html! {
        h1 { (title) }
        div.card {
            ul.keys {
                @for l in &found {
                    @let (word, class) = status(l, ctx.now);
                    li { span.key { (l.license_key.as_str()) } " " span.badge.(class) { (word) } }
                }
            }
            p { (action.consequence()) }
            div.actions {
                form method="post" action="/dashboard/licenses/bulk" {
                    (page::csrf(staff))
                    input type="hidden" name="action" value=(action.value());
                    input type="hidden" name="confirmed" value="yes";
                    input type="hidden" name="back" value=(back);
                    @for l in &found { input type="hidden" name="id" value=(l.id); }
                    @if action == Action::Delete {
                        button.danger type="submit" { (title.trim_end_matches('?')) }
                    } @else {
                        button type="submit" { (title.trim_end_matches('?')) }
                    }
                }
                a.button.secondary href=(back) { "Keep them as they are" }
            }
        }
    };
    page::html_response(
        200,
        page::layout(ctx, staff, Nav::Licenses, &title, content),
    )
}

/// Does `action` to each license; back to the list when every one was done.
async fn perform(
    ctx: &Ctx,
    staff: &Staff,
    action: Action,
    ids: &[LicenseId],
    back: &str,
) -> Response {
    let bulk = BulkLicenses(BulkLicenseBody::new(action, ids));
    let result = match api::perform(ctx, staff, bulk).await {
        Ok(result) => result,
        Err(failure) => return page::failure(ctx, Some(staff), &failure),
    };
    let refused = result.refused;
    let done = ids.len() - refused.len();
    if refused.is_empty() {
        let joiner = if back.contains('?') { '&' } else { '?' };
        return page::redirect(&format!(
            "{back}{joiner}notice=licenses-{}",
            match action {
                Action::Suspend => "suspended",
                Action::Unsuspend => "unsuspended",
                Action::Delete => "deleted",
            }
        ));
    }
    let title = format!(
        "{} of {} done",
        done,
        page::counted(ids.len() as u64, "license", "licenses")
    );
    let content = html! {
        h1 { (title) }
        div.problems role="alert" {
            p { strong { "These were not changed:" } }
            ul {
                @for refusal in &refused {
                    @let id = refusal.license_id;
                    li { a href={ "/dashboard/licenses/" (id) } { (id) } ": " (refusal.details) }
                }
            }
        }
        p { a.button href=(back) { "Back to the list" } }
    };
    page::html_response(
        200,
        page::layout(ctx, staff, Nav::Licenses, &title, content),
    )
}
