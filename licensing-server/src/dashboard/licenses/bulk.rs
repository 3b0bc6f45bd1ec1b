//! Bulk actions on the license list: the licenses chosen with the list's boxes are suspended,
//! unsuspended or deleted after one confirmation that names each of them, by the operation the
//! API's `POST …/licenses/bulk` performs: each license goes through the same operation as on
//! its own page (its permission, audit entry and webhook event); what one of them refuses is
//! listed, the others are done.

use licensing_core::api::requests::{BulkAction as Action, BulkLicenseBody, MAX_BULK_LICENSES};
use licensing_core::{ApiError, LicenseId};
use maud::html;

use super::{customer_name, license_id, status};
use crate::app::licenses::{BulkLicenses, GetLicense};
use crate::dashboard::api::{self, Failure};
use crate::dashboard::page::{self, Form, Nav};
use crate::dashboard::words::{t, tw};
use crate::dashboard::{Ctx, Staff};
use crate::http::Response;
use crate::i18n::Arg;

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
            Action::Suspend => t("licenses-bulk-suspend"),
            Action::Unsuspend => t("licenses-bulk-unsuspend"),
            Action::Delete => t("licenses-bulk-delete"),
        }
    }

    fn consequence(self) -> &'static str {
        match self {
            Action::Suspend => t("licenses-bulk-their-applications-refused-until-they"),
            Action::Unsuspend => t("licenses-bulk-their-applications-accepted-again"),
            Action::Delete => t("licenses-bulk-they-deleted-with-their-devices"),
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
        .ok_or_else(|| Failure::new(400, t("licenses-bulk-choose-what-do-suspend-unsuspend")))?;
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
            t("licenses-bulk-no-license-was-chosen-tick"),
        ));
    }
    if ids.len() > MOST {
        return Err(Failure::new(
            400,
            tw(
                "licenses-bulk-at-most",
                &[("most", Arg::Number(MOST as i64))],
            ),
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
        let failure: Failure = ApiError::forbidden(tw(
            "licenses-bulk-role-may-not",
            &[
                ("role", Arg::Text(&staff.user.role.to_string())),
                ("what", Arg::Text(&action.scope().words())),
            ],
        ))
        .into();
        return page::failure(ctx, Some(staff), &failure);
    }
    let back = back_to(form);
    if form.get("confirmed") == Some("yes") {
        let reason = form
            .get("reason")
            .map(str::trim)
            .filter(|r| !r.is_empty() && action == Action::Suspend)
            .map(str::to_owned);
        return perform(ctx, staff, (action, reason), &ids, &back).await;
    }
    let mut found = Vec::with_capacity(ids.len());
    for id in &ids {
        match api::perform(ctx, staff, GetLicense(*id)).await {
            Ok(detail) => found.push(detail),
            // Gone meanwhile, or another team's: not listed, not done.
            Err(failure) if failure.status == 404 => {}
            Err(failure) => return page::failure(ctx, Some(staff), &failure),
        }
    }
    let title = tw(
        "licenses-bulk-confirm-title",
        &[
            ("action", Arg::Text(action.words())),
            (
                "licenses",
                Arg::Text(&page::counted(found.len() as u64, "count-licenses")),
            ),
        ],
    );
    let content = html! {
        h1 { (title) }
        div.card {
            ul.keys {
                @for d in &found {
                    @let l = &d.license;
                    @let (word, class) = status(l, ctx.now);
                    li {
                        span.key { (l.license_key.as_str()) } " " span.badge.(class) { (word) }
                        @if !d.customers.is_empty() {
                            " " (d.customers.iter().map(customer_name).collect::<Vec<_>>().join(", "))
                        }
                    }
                }
            }
            p { (action.consequence()) }
            div.actions {
                form method="post" action="/dashboard/licenses/bulk" {
                    (page::csrf(staff))
                    input type="hidden" name="action" value=(action.value());
                    input type="hidden" name="confirmed" value="yes";
                    input type="hidden" name="back" value=(back);
                    @for d in &found { input type="hidden" name="id" value=(d.license.id); }
                    @if action == Action::Suspend {
                        label for="bulk-reason" { (t("licenses-show-suspension-reason")) }
                        input #bulk-reason type="text" name="reason" maxlength="500";
                    }
                    @if action == Action::Delete {
                        button.danger type="submit" { (title.trim_end_matches('?')) }
                    } @else {
                        button type="submit" { (title.trim_end_matches('?')) }
                    }
                }
                a.button.secondary href=(back) { (t("licenses-bulk-keep-them-they")) }
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
    (action, reason): (Action, Option<String>),
    ids: &[LicenseId],
    back: &str,
) -> Response {
    let bulk = BulkLicenses(BulkLicenseBody {
        reason,
        ..BulkLicenseBody::new(action, ids)
    });
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
    let title = tw(
        "licenses-bulk-done-title",
        &[
            ("done", Arg::Number(done as i64)),
            (
                "licenses",
                Arg::Text(&page::counted(ids.len() as u64, "count-licenses")),
            ),
        ],
    );
    let content = html! {
        h1 { (title) }
        div.problems role="alert" {
            p { strong { (t("licenses-bulk-these-were-not-changed")) } }
            ul {
                @for refusal in &refused {
                    @let id = refusal.license_id;
                    li { a href={ "/dashboard/licenses/" (id) } { (id) } ": " (refusal.details) }
                }
            }
        }
        p { a.button href=(back) { (t("licenses-bulk-back-list")) } }
    };
    page::html_response(
        200,
        page::layout(ctx, staff, Nav::Licenses, &title, content),
    )
}
