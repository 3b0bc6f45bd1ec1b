//! The policies page: the team's plans of license terms, created, edited (with what the change
//! reaches stated: "changes 1,204 licenses") and deleted here, and chosen on the license form.

use licensing_core::PolicyId;
use licensing_core::api::requests::{Patch, PolicyBody};
use licensing_core::error::FieldError;
use licensing_core::model::{ExpirationType, Policy, Product};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::field_error;
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::policies::{
    AllPolicies, CreatePolicy, DeletePolicy, GetPolicy, PolicyLicenses, UpdatePolicy,
};
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

/// The team's policies for a page or form, when the role may read them (else none: the license
/// form offers no plan).
pub(super) async fn readable(ctx: &Ctx, staff: &Staff) -> Result<Vec<Policy>, Failure> {
    if staff.may_perform::<AllPolicies>() {
        api::perform(ctx, staff, AllPolicies).await
    } else {
        Ok(Vec::new())
    }
}

/// `n` with thousands separated by commas: "1,204".
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A limit as a person reads it.
fn limit(value: Option<u32>) -> String {
    value.map_or_else(|| t("policies-no-limit").to_owned(), |n| n.to_string())
}

/// A policy's expiration in words.
pub(super) fn expiration(p: &Policy) -> String {
    match (p.expiration_type, p.expiration_days) {
        (ExpirationType::Duration, Some(days)) => page::counted(days, "count-days"),
        _ => t("policies-never-expires").to_owned(),
    }
}

/// `GET /dashboard/policies`, or the new-policy form again with what to fix.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let all = api::perform(ctx, staff, AllPolicies).await?;
        let mut counts = Vec::with_capacity(all.len());
        for p in &all {
            counts.push(api::perform(ctx, staff, PolicyLicenses(p.id)).await?);
        }
        let write = staff.may_perform::<UpdatePolicy>();
        let choices = Choices::read(ctx, staff).await?;
        let content = html! {
            h1 { (t("policies-policies")) }
            p.hint { (t("policies-plans-license-terms-license-policy")) }
            (page::table(&[t("policies-name"), t("policies-devices"), t("policies-addresses"), t("policies-sessions"), t("policies-expiration"), t("policies-grace"), t("policies-licenses")], None, html! {
                @if all.is_empty() { tr { td.empty colspan="7" { (t("policies-no-policies-yet")) } } }
                @for (p, n) in all.iter().zip(&counts) {
                    tr {
                        td { a href={ "/dashboard/policies/" (p.id) } { (p.name) } }
                        td { (limit(p.hwid_limit)) }
                        td { (limit(p.ip_limit)) }
                        td { (limit(p.session_limit)) }
                        td { (expiration(p)) }
                        td { (page::counted(p.grace_days, "count-days")) }
                        td { a href={ "/dashboard/licenses?policy=" (p.id) } { (thousands(*n)) } }
                    }
                }
            }))
            @if write {
                h2 { (t("policies-new-policy")) }
                (page::problems(failure))
                form method="post" action="/dashboard/policies" {
                    (page::csrf(staff))
                    (fields(form, failure, &choices))
                    p { button type="submit" { (t("policies-create-policy")) } }
                }
            }
        };
        Ok(page::shown(Nav::Policies, t("policies-policies"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// What a policy's form offers to choose from.
struct Choices {
    products: Vec<Product>,
    entitlements: Vec<licensing_core::model::Entitlement>,
}

impl Choices {
    async fn read(ctx: &Ctx, staff: &Staff) -> Result<Self, Failure> {
        let products = if staff.may_perform::<crate::app::products::ListProducts>() {
            api::all_products(ctx, staff).await?.items
        } else {
            Vec::new()
        };
        let entitlements = super::entitlements::readable(ctx, staff).await?;
        Ok(Self {
            products,
            entitlements,
        })
    }
}

/// The fields of the new-policy and edit forms.
fn fields(form: &Form, failure: Option<&Failure>, choices: &Choices) -> Markup {
    let value = |name: &str| form.get(name).unwrap_or("").to_owned();
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let chosen_products = form.all("productIds");
    let chosen_entitlements = form.all("entitlementIds");
    html! {
        label for="name" { (t("policies-name")) (field_error(failure, "name")) }
        input #name type="text" name="name" required value=(value("name"));
        @if !choices.products.is_empty() {
            label for="productIds" { (t("policies-products")) span.hint { (t("policies-every-license-policy-has-these")) } (field_error(failure, "productIds")) }
            select #productIds name="productIds" multiple size=(choices.products.len().clamp(2, 8)) {
                @for p in &choices.products {
                    option value=(p.id) selected[chosen_products.contains(&p.id.to_string().as_str())] { (p.name) }
                }
            }
        }
        @if !choices.entitlements.is_empty() {
            fieldset {
                legend { (t("policies-entitlements")) span.hint { (t("policies-granted-every-license-policy")) } }
                input type="hidden" name="entitlementsShown" value="true";
                (field_error(failure, "entitlementIds"))
                @for e in &choices.entitlements {
                    label.choice {
                        input type="checkbox" name="entitlementIds" value=(e.id) checked[chosen_entitlements.contains(&e.id.to_string().as_str())];
                        (e.name) " " code { (e.code) }
                    }
                }
            }
        }
        fieldset {
            legend { (t("policies-expiration-new-licenses")) span.hint { (t("policies-copied-when-license-made-change")) } }
            (field_error(failure, "expirationType"))
            @for (v, text) in [("NEVER", t("policies-never-expires")), ("DURATION", t("policies-after-number-days"))] {
                label.choice { input type="radio" name="expirationType" value=(v) checked[kind == v]; (text) }
            }
            label for="expirationDays" { (t("policies-days")) (field_error(failure, "expirationDays")) }
            input #expirationDays type="number" min="1" name="expirationDays" value=(value("expirationDays"));
        }
        label for="hwidLimit" { (t("policies-device-limit")) span.hint { (t("policies-empty-no-limit")) } (field_error(failure, "hwidLimit")) }
        input #hwidLimit type="number" min="1" name="hwidLimit" value=(value("hwidLimit"));
        label for="ipLimit" { (t("policies-address-limit")) span.hint { (t("policies-empty-no-limit")) } (field_error(failure, "ipLimit")) }
        input #ipLimit type="number" min="0" name="ipLimit" value=(value("ipLimit"));
        label for="sessionLimit" { (t("policies-concurrent-sessions")) span.hint { (t("policies-empty-no-limit")) } (field_error(failure, "sessionLimit")) }
        input #sessionLimit type="number" min="1" name="sessionLimit" value=(value("sessionLimit"));
        label for="graceDays" { (t("policies-grace-period-days")) span.hint { (t("policies-after-license-expires-applications-still")) } (field_error(failure, "graceDays")) }
        input #graceDays type="number" min="0" max="365" name="graceDays" value=(value("graceDays"));
    }
}

/// A whole number of a form: `Null` when blank, a problem when it is not a number.
fn number(form: &Form, name: &str, problems: &mut Vec<FieldError>) -> Patch<i64> {
    match form.text(name) {
        None => Patch::Null,
        Some(text) => match text.parse::<i64>() {
            Ok(n) => Patch::Value(n),
            Err(_) => {
                problems.push(FieldError::new(name, t("policies-must-whole-number")));
                Patch::Missing
            }
        },
    }
}

/// The body of the new-policy and edit forms (every member sent: a blank one clears).
fn body(form: &Form) -> Result<PolicyBody, Failure> {
    let mut problems = Vec::new();
    let kind = form.get("expirationType").unwrap_or("NEVER").to_owned();
    let body = PolicyBody {
        name: Patch::Value(form.get("name").unwrap_or("").trim().to_owned()),
        product_ids: Patch::Value(
            form.all("productIds")
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        entitlement_ids: match form.get("entitlementsShown") {
            Some(_) => Patch::Value(
                form.all("entitlementIds")
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            ),
            None => Patch::Missing,
        },
        expiration_days: if kind == "DURATION" {
            number(form, "expirationDays", &mut problems)
        } else {
            Patch::Null
        },
        expiration_type: Patch::Value(kind),
        hwid_limit: number(form, "hwidLimit", &mut problems),
        ip_limit: number(form, "ipLimit", &mut problems),
        session_limit: number(form, "sessionLimit", &mut problems),
        grace_days: number(form, "graceDays", &mut problems),
        ..PolicyBody::default()
    };
    if problems.is_empty() {
        Ok(body)
    } else {
        Err(Failure {
            status: 400,
            details: String::new(),
            fields: problems,
        })
    }
}

/// `POST /dashboard/policies`.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let made = match body(form) {
        Ok(body) => api::perform(ctx, staff, CreatePolicy(body)).await,
        Err(f) => Err(f),
    };
    match made {
        Ok(p) => page::redirect(&format!(
            "/dashboard/policies/{}?notice=policy-created",
            p.id
        )),
        Err(f) if f.status == 400 || f.status == 404 => {
            list(ctx, staff, After::Refused(form, &f)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn policy_id(text: &str) -> Result<PolicyId, Failure> {
    page::id_of(text, "policy")
}

/// The form's fields as they stand for `p`.
fn form_of(p: &Policy) -> Form {
    let mut pairs = vec![
        ("name".to_owned(), p.name.clone()),
        (
            "expirationType".to_owned(),
            p.expiration_type.as_str().to_owned(),
        ),
        ("graceDays".to_owned(), p.grace_days.to_string()),
    ];
    let mut add = |name: &str, value: Option<u32>| {
        if let Some(v) = value {
            pairs.push((name.to_owned(), v.to_string()));
        }
    };
    add("expirationDays", p.expiration_days);
    add("hwidLimit", p.hwid_limit);
    add("ipLimit", p.ip_limit);
    add("sessionLimit", p.session_limit);
    for id in &p.product_ids {
        pairs.push(("productIds".to_owned(), id.to_string()));
    }
    for id in &p.entitlement_ids {
        pairs.push(("entitlementIds".to_owned(), id.to_string()));
    }
    Form::from_pairs(pairs)
}

/// `GET /dashboard/policies/{id}`: the policy's form, with what a change reaches; or the form
/// again with what to fix.
pub(crate) async fn show(ctx: &Ctx, staff: &Staff, id: &str, after: After<'_>) -> Response {
    let failure = after.failure();
    let outcome = async {
        let id = policy_id(id)?;
        let p = api::perform(ctx, staff, GetPolicy(id)).await?;
        let on_it = api::perform(ctx, staff, PolicyLicenses(id)).await?;
        let stored = form_of(&p);
        let form = match after {
            After::Refused(form, _) => form,
            _ => &stored,
        };
        let write = staff.may_perform::<UpdatePolicy>();
        let choices = Choices::read(ctx, staff).await?;
        let reach = tw(
            "policies-changes-licenses",
            &[
                ("licenses", Arg::Text(&thousands(on_it))),
                (
                    "count",
                    Arg::Number(i64::try_from(on_it).unwrap_or(i64::MAX)),
                ),
            ],
        );
        let content = html! {
            h1 { (p.name) }
            p {
                a href={ "/dashboard/licenses?policy=" (p.id) } { (tm("policies-counted-policy", &[("counted", html! { (page::counted(on_it, "count-licenses-are")) })])) } "."
            }
            @if write {
                (page::problems(failure))
                form method="post" action={ "/dashboard/policies/" (p.id) } {
                    (page::csrf(staff))
                    (fields(form, failure, &choices))
                    p.hint data-effect { (tm("policies-saving-reach-once-each-keeps", &[("reach", html! { (reach) })])) }
                    div.actions {
                        button type="submit" { (t("policies-save-policy")) }
                        a.button.secondary.small href={ "/dashboard/policies/" (p.id) "/delete" } { (t("policies-delete")) }
                    }
                }
            } @else {
                dl.facts {
                    dt { (t("policies-device-limit")) } dd { (limit(p.hwid_limit)) }
                    dt { (t("policies-address-limit")) } dd { (limit(p.ip_limit)) }
                    dt { (t("policies-concurrent-sessions")) } dd { (limit(p.session_limit)) }
                    dt { (t("policies-expiration")) } dd { (expiration(&p)) }
                    dt { (t("policies-grace-period")) } dd { (page::counted(p.grace_days, "count-days")) }
                }
            }
        };
        Ok(page::shown(Nav::Policies, p.name.clone(), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/policies/{id}`.
pub(crate) async fn update(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let saved = match (policy_id(id), body(form)) {
        (Ok(id), Ok(body)) => api::perform(ctx, staff, UpdatePolicy(id, body)).await,
        (Err(f), _) | (_, Err(f)) => Err(f),
    };
    match saved {
        Ok(p) => page::redirect(&format!(
            "/dashboard/policies/{}?notice=policy-updated",
            p.id
        )),
        Err(f) if f.status == 400 => show(ctx, staff, id, After::Refused(form, &f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/policies/{id}/delete`: the confirmation, saying what happens to its licenses.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = policy_id(id)?;
        let p = api::perform(ctx, staff, GetPolicy(id)).await?;
        let on_it = api::perform(ctx, staff, PolicyLicenses(id)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Policies,
                title: t("policies-delete-policy"),
                what: html! {
                    (tm("policies-name-deleted", &[("name", html! { (p.name) })]))
                    @if on_it > 0 {
                        (tm("policies-counted-terms-apply-now-their", &[("counted", html! { (page::counted(on_it, "count-licenses-keep")) })]))
                    }
                },
                action: format!("/dashboard/policies/{}/delete", p.id),
                button: t("policies-delete-policy-2"),
                back: format!("/dashboard/policies/{}", p.id),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/policies/{id}/delete`: deleted, its licenses detached with its terms.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = policy_id(id).map(|id| {
        DeletePolicy(
            id,
            licensing_core::api::requests::DetachQuery { detach: true },
        )
    });
    page::done(ctx, staff, op, "/dashboard/policies?notice=policy-deleted").await
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated_by_commas() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1_204, "1,204"),
            (12_345_678, "12,345,678"),
        ] {
            assert_eq!(super::thousands(n), text);
        }
    }
}
