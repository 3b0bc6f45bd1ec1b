//! The new-license and edit forms, and the typed bodies they send.

use licensing_core::api::requests::{
    CustomerListQuery, CustomerSort, LicenseCreate, LicenseUpdate, Patch, RawMetadata,
    SortDirection,
};
use licensing_core::error::FieldError;
use licensing_core::model::{
    Customer, ExpirationStart, ExpirationType, License, LicenseDetail, Policy, Term,
};
use licensing_core::validate::SearchText;
use licensing_core::{CustomerId, LicenseId};
use maud::html;

use super::super::api::{self, Failure};
use super::super::page::{self, Form, Nav};
use super::super::{Ctx, Staff};
use crate::app::customers::{GetCustomer, ListCustomers};
use crate::app::licenses::{CreateLicense, GetLicense, UpdateLicense};
use crate::app::policies::GetPolicy;
use crate::http::Response;

use super::{customer_name, license_id, products};
use crate::dashboard::words::{t, tm, tw};
use crate::i18n::Arg;

/// `GET /dashboard/licenses/new`.
/// `?customer={id}` starts with that customer chosen (the customer page's "new license for
/// this customer").
pub(crate) async fn new_page(ctx: &Ctx, staff: &Staff) -> Response {
    let form = match ctx.param("customer") {
        Some(id) => Form::from_pairs(vec![("customerIds".to_owned(), id)]),
        None => Form::default(),
    };
    form_page(ctx, staff, &form, None, None).await
}

/// The license being edited: the form shows its customers even when they are not among the
/// newest hundred, so that saving keeps them.
struct Editing {
    id: LicenseId,
    key: String,
    customers: Vec<Customer>,
    /// Its plan, when it is on one.
    plan: Option<Policy>,
}

/// The new-license form, or a license's edit form, with what to fix.
async fn form_page(
    ctx: &Ctx,
    staff: &Staff,
    form: &Form,
    failure: Option<&Failure>,
    editing: Option<&Editing>,
) -> Response {
    let search = ctx
        .param("customerSearch")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .and_then(|s| SearchText::parse(&s).ok());
    let lists = async {
        let products = products(ctx, staff).await?;
        // The newest hundred, or the hundred first that match the search; and those chosen.
        let mut customers = if staff.may_perform::<ListCustomers>() {
            let mut listed = CustomerListQuery::default();
            listed.paging.page_size = 100;
            if let Some(text) = &search {
                listed.filter = Some(text.clone());
                listed.sort = CustomerSort::FullName;
                listed.paging.direction = SortDirection::Asc;
            }
            api::perform(ctx, staff, ListCustomers(listed)).await?.items
        } else {
            Vec::new()
        };
        for c in editing.map_or(&[][..], |e| &e.customers[..]) {
            if !customers.iter().any(|known| known.id == c.id) {
                customers.push(c.clone());
            }
        }
        for id in form.all("customerIds") {
            if let Ok(id) = id.parse::<CustomerId>()
                && !customers.iter().any(|known| known.id == id)
                && staff.may_perform::<GetCustomer>()
                && let Ok(c) = api::perform(ctx, staff, GetCustomer(id)).await
            {
                customers.insert(0, c);
            }
        }
        let entitlements = crate::dashboard::entitlements::readable(ctx, staff).await?;
        let policies = crate::dashboard::policies::readable(ctx, staff).await?;
        Ok::<_, Failure>((products, customers, entitlements, policies))
    };
    let (products, customers, entitlements, policies) = match lists.await {
        Ok(lists) => lists,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let start = form.get("expirationStart").unwrap_or("CREATION");
    let chosen_policy = form.text("policyId");
    let plan = chosen_policy.and_then(|id| policies.iter().find(|p| p.id.to_string() == id));
    // With a plan, a blank limit is the plan's (shown as the field's placeholder).
    let inherited = |value: Option<u32>| {
        plan.map(|_| {
            value.map_or_else(
                || t("licenses-form-plans-no-limit").to_owned(),
                |v| {
                    tw(
                        "licenses-form-plans-value",
                        &[("value", Arg::Text(&v.to_string()))],
                    )
                },
            )
        })
    };
    let (hwid_plan, ip_plan, session_plan): (Option<String>, Option<String>, Option<String>) = (
        inherited(plan.and_then(|p| p.hwid_limit)),
        inherited(plan.and_then(|p| p.ip_limit)),
        inherited(plan.and_then(|p| p.session_limit)),
    );
    // On a plan, an overridden limit offers to follow the plan again.
    let chosen_inherit = form.all("inherit");
    let use_plan = |name: &'static str| {
        html! {
            @if plan.is_some() && editing.is_some() && form.text(name).is_some() {
                label.choice {
                    input type="checkbox" name="inherit" value=(name) checked[chosen_inherit.contains(&name)];
                    (t("licenses-form-use-plans-value-instead"))
                }
            }
        }
    };
    let limit_hint = if plan.is_some() {
        t("licenses-form-empty-plans-value-value-here")
    } else {
        t("licenses-form-empty-no-limit")
    };
    let chosen_products = form.all("productIds");
    let chosen_customers = form.all("customerIds");
    let chosen_entitlements = form.all("entitlementIds");
    let field = |name: &str| failure.and_then(|f| f.field(name)).map(str::to_owned);
    let error = |name: &str| {
        html! {
            @if let Some(message) = field(name) {
                span.field-error { (message) }
            }
        }
    };
    let (title, action) = match editing {
        Some(e) => (
            t("licenses-form-edit-license"),
            format!("/dashboard/licenses/{}/edit", e.id),
        ),
        None => (
            t("licenses-form-new-license"),
            "/dashboard/licenses".to_owned(),
        ),
    };
    let content = html! {
        h1 {
            (title)
            @if let Some(e) = editing { " " span.key { (e.key) } }
        }
        (page::problems(failure))
        @if staff.may_perform::<ListCustomers>() {
            form.filters #find-customers method="get" action={ "/dashboard/" (ctx.path) } role="search" {
                div {
                    label for="customerSearch" { (t("licenses-form-find-customers")) span.hint { (t("licenses-form-find-customers-hint")) } }
                    input #customerSearch type="search" name="customerSearch" value=(search.as_ref().map_or("", |s| s.as_str())) placeholder=(t("licenses-form-name-or-e-mail"));
                }
                div { button.secondary type="submit" { (t("licenses-form-find")) } }
            }
        }
        form method="post" action=(action) data-expiration {
            (page::csrf(staff))
            @if !policies.is_empty() {
                label for="policyId" { (t("licenses-form-plan")) span.hint { (t("licenses-form-policy-license-follows-terms-live")) } (error("policyId")) }
                select #policyId name="policyId" {
                    option value="" selected[chosen_policy.is_none()] { (t("licenses-form-no-plan")) }
                    @for p in &policies {
                        option value=(p.id) selected[chosen_policy == Some(p.id.to_string().as_str())] { (p.name) }
                    }
                }
            }
            label for="productIds" { (t("licenses-form-products")) span.hint { (t("licenses-form-hold-ctrl-choose-several")) } (error("productIds")) }
            select #productIds name="productIds" multiple size=(products.len().clamp(2, 8)) {
                @for p in &products {
                    option value=(p.id) selected[chosen_products.contains(&p.id.to_string().as_str())] { (p.name) }
                }
            }
            label for="customerIds" {
                (t("licenses-form-customers"))
                span.hint {
                    @match &search {
                        Some(text) => { (tw("licenses-form-customers-matching", &[("search", Arg::Text(text.as_str()))])) },
                        None => { (t("licenses-form-100-newest-more-id-below")) },
                    }
                }
                (error("customerIds"))
            }
            select #customerIds name="customerIds" multiple size=(customers.len().clamp(2, 8)) {
                @for c in &customers {
                    option value=(c.id) selected[chosen_customers.contains(&c.id.to_string().as_str())] { (customer_name(c)) }
                }
            }
            label for="moreCustomerIds" { (t("licenses-form-other-customer-ids")) span.hint { (t("licenses-form-comma-separated-optional")) } }
            input #moreCustomerIds type="text" name="moreCustomerIds" value=(form.get("moreCustomerIds").unwrap_or(""));
            @if !entitlements.is_empty() {
                fieldset {
                    legend { (t("licenses-form-entitlements")) span.hint { (t("licenses-form-granted-license-itself-products-grant")) } }
                    // Without it (a role that cannot read entitlements), an edit keeps them.
                    input type="hidden" name="entitlementsShown" value="true";
                    (error("entitlementIds"))
                    @for e in &entitlements {
                        label.choice {
                            input type="checkbox" name="entitlementIds" value=(e.id) checked[chosen_entitlements.contains(&e.id.to_string().as_str())];
                            (e.name) " " code { (e.code) }
                        }
                    }
                }
            }
            fieldset {
                legend { (t("licenses-form-expiration")) }
                (error("expirationType"))
                @if !policies.is_empty() && editing.is_none() {
                    label.choice {
                        input type="radio" name="expirationType" value="PLAN" checked[kind == "PLAN"];
                        (t("licenses-form-plan-says-copied-now"))
                    }
                }
                @for (value, text) in [("NEVER", t("licenses-form-never-expires")), ("DATE", t("licenses-form-date")), ("DURATION", t("licenses-form-after-number-days"))] {
                    label.choice {
                        input type="radio" name="expirationType" value=(value) checked[kind == value];
                        (text)
                    }
                }
                div data-for-type="DATE" {
                    label for="expirationDate" { (t("licenses-form-expiration-date")) span.hint { (t("licenses-form-license-stops-working-00-00")) } (error("expirationDate")) }
                    input #expirationDate type="date" name="expirationDate" value=(form.get("expirationDate").unwrap_or(""));
                }
                div data-for-type="DURATION" {
                    label for="expirationDays" { (t("licenses-form-days")) (error("expirationDays")) }
                    input #expirationDays type="number" min="1" name="expirationDays" value=(form.get("expirationDays").unwrap_or(""));
                    span.hint { (t("licenses-form-counted-from")) (error("expirationStart")) }
                    label.choice { input type="radio" name="expirationStart" value="CREATION" checked[start == "CREATION"]; (t("licenses-form-creation")) }
                    label.choice { input type="radio" name="expirationStart" value="ACTIVATION" checked[start == "ACTIVATION"]; (t("licenses-form-first-successful-verification")) }
                    p.hint data-expiry-preview aria-live="polite" data-on-date=(t("licenses-form-preview-on-date")) data-after-days=(t("licenses-form-preview-after-days")) {}
                }
            }
            label for="hwidLimit" { (t("licenses-form-device-limit")) span.hint { (limit_hint) } (error("hwidLimit")) }
            input #hwidLimit type="number" min="0" name="hwidLimit" placeholder=[hwid_plan] value=(form.get("hwidLimit").unwrap_or(""));
            (use_plan("hwidLimit"))
            label for="ipLimit" { (t("licenses-form-address-limit")) span.hint { (limit_hint) } (error("ipLimit")) }
            input #ipLimit type="number" min="0" name="ipLimit" placeholder=[ip_plan] value=(form.get("ipLimit").unwrap_or(""));
            (use_plan("ipLimit"))
            label for="sessionLimit" { (t("licenses-form-concurrent-sessions")) span.hint { (tm("licenses-form-floating-seats-most-many-copies", &[("limit-hint", html! { (limit_hint) })])) } (error("sessionLimit")) }
            input #sessionLimit type="number" min="1" name="sessionLimit" placeholder=[session_plan] value=(form.get("sessionLimit").unwrap_or(""));
            (use_plan("sessionLimit"))
            label for="sessionTtl" { (t("licenses-form-session-lifetime-seconds")) span.hint { (t("licenses-form-copy-stops-heartbeating-frees-seat")) @if plan.is_some() { (t("licenses-form-plans-else-teams-setting")) } @else { (t("licenses-form-teams-setting")) } } (error("sessionTtl")) }
            input #sessionTtl type="number" min="10" max="86400" name="sessionTtl" value=(form.get("sessionTtl").unwrap_or(""));
            (use_plan("sessionTtl"))
            label for="metadata" { (t("licenses-form-metadata")) span.hint { (t("licenses-form-one-key-value-per-line")) } (error("metadata")) }
            textarea #metadata name="metadata" rows="3" { (form.get("metadata").unwrap_or("")) }
            @if let Some(e) = editing {
                label for="licenseKey" { (t("licenses-form-license-key")) span.hint { (t("licenses-form-change-only-replace-leaked-key")) } (error("licenseKey")) }
                input #licenseKey type="text" name="licenseKey" value=(form.get("licenseKey").unwrap_or(&e.key));
                label.choice { input type="checkbox" name="suspended" value="true" checked[form.get("suspended").is_some()]; (t("licenses-form-suspended")) }
            } @else {
                label.choice { input type="checkbox" name="suspended" value="true" checked[form.get("suspended").is_some()]; (t("licenses-form-create-suspended")) }
                @if ctx.state.mailer.is_some() {
                    label.choice { input type="checkbox" name="sendEmailDelivery" value="true" checked[form.get("sendEmailDelivery").is_some()]; (t("licenses-form-e-mail-key-customers")) }
                }
            }
            div.actions {
                button type="submit" { @if editing.is_some() { (t("licenses-form-save-changes")) } @else { (t("licenses-form-create-license")) } }
                @if let Some(e) = editing {
                    a.button.secondary href={ "/dashboard/licenses/" (e.id) } { (t("licenses-form-cancel")) }
                }
            }
        }
    };
    page::answer(
        ctx,
        staff,
        failure,
        Ok(page::shown(Nav::Licenses, title, content)),
    )
}

/// The edit form's fields as they stand for `detail` (shown with its plan `plan`: the limits it
/// overrides, and its own products and entitlements, those besides the plan's).
fn form_of(detail: &LicenseDetail, plan: Option<&Policy>) -> Form {
    let l = &detail.license;
    let own = |term: Term| plan.is_none() || l.overrides.contains(&term);
    let mut pairs = vec![
        ("licenseKey".to_owned(), l.license_key.as_str().to_owned()),
        (
            "expirationType".to_owned(),
            l.expiration_type.as_str().to_owned(),
        ),
        (
            "expirationStart".to_owned(),
            match l.expiration_start {
                ExpirationStart::Creation => "CREATION",
                ExpirationStart::Activation => "ACTIVATION",
            }
            .to_owned(),
        ),
        (
            "metadata".to_owned(),
            l.metadata
                .iter()
                .map(|m| format!("{}={}", m.key, m.value))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    ];
    let mut add = |name: &str, value: String| pairs.push((name.to_owned(), value));
    if let (ExpirationType::Date, Some(date)) = (l.expiration_type, l.expiration_date) {
        add("expirationDate", page::day(date));
    }
    if let Some(days) = l.expiration_days {
        add("expirationDays", days.to_string());
    }
    for (term, name, value) in [
        (Term::HwidLimit, "hwidLimit", l.hwid_limit),
        (Term::IpLimit, "ipLimit", l.ip_limit),
        (Term::SessionLimit, "sessionLimit", l.session_limit),
        (Term::SessionTtl, "sessionTtl", l.session_ttl),
    ] {
        if let Some(value) = value.filter(|_| own(term)) {
            add(name, value.to_string());
        }
    }
    if l.suspended {
        add("suspended", "true".to_owned());
    }
    if let Some(p) = plan {
        add("policyId", p.id.to_string());
    }
    for p in &l.product_ids {
        if plan.is_none_or(|plan| !plan.product_ids.contains(p)) {
            add("productIds", p.to_string());
        }
    }
    for c in &l.customer_ids {
        add("customerIds", c.to_string());
    }
    for e in &l.entitlement_ids {
        if plan.is_none_or(|plan| !plan.entitlement_ids.contains(e)) {
            add("entitlementIds", e.to_string());
        }
    }
    Form::from_pairs(pairs)
}

async fn editing(ctx: &Ctx, staff: &Staff, id: &str) -> Result<(Editing, LicenseDetail), Failure> {
    let id = license_id(id)?;
    // The form is of no use to a role that cannot save it (the API refuses the save anyway).
    type Save = crate::app::licenses::UpdateLicense;
    if let Some(scope) = <Save as crate::app::Operation>::SCOPE
        && !staff.may_perform::<Save>()
    {
        return Err(Failure::new(
            403,
            tw(
                "licenses-form-role-may-not",
                &[
                    ("role", Arg::Text(&staff.user.role.to_string())),
                    ("what", Arg::Text(&scope.words())),
                ],
            ),
        ));
    }
    let detail = api::perform(ctx, staff, GetLicense(id)).await?;
    let plan = match detail.license.policy_id {
        Some(policy) => Some(api::perform(ctx, staff, GetPolicy(policy)).await?),
        None => None,
    };
    let editing = Editing {
        id,
        key: detail.license.license_key.as_str().to_owned(),
        customers: detail.customers.clone(),
        plan,
    };
    Ok((editing, detail))
}

/// `GET /dashboard/licenses/{id}/edit`.
pub(crate) async fn edit_page(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    match editing(ctx, staff, id).await {
        Ok((editing, detail)) => {
            let form = form_of(&detail, editing.plan.as_ref());
            form_page(ctx, staff, &form, None, Some(&editing)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// A member given, or left out.
fn given<T>(value: Option<T>) -> Patch<T> {
    value.map_or(Patch::Missing, Patch::Value)
}

/// The update from the edit form. Every member is sent (a blank limit clears it), except the
/// expiration members when they say what the license already has: a date is shown by its day,
/// and sending the day back would move an expiry set to another hour.
fn update_body(form: &Form, current: &License) -> Result<LicenseUpdate, Failure> {
    let c = create_body(form)?;
    let mut body = LicenseUpdate {
        license_key: Patch::Value(form.get("licenseKey").unwrap_or("").trim().to_owned()),
        expiration_type: given(c.expiration_type),
        expiration_start: given(c.expiration_start),
        expiration_date: given(c.expiration_date),
        expiration_days: given(c.expiration_days),
        suspended: given(c.suspended),
        product_ids: given(c.product_ids),
        customer_ids: given(c.customer_ids),
        entitlement_ids: given(c.entitlement_ids),
        metadata: given(c.metadata),
        hwid_limit: c.hwid_limit,
        ip_limit: c.ip_limit,
        session_limit: c.session_limit,
        session_ttl: c.session_ttl,
        ..LicenseUpdate::default()
    };
    // A plan chosen, or none (which takes the license off its plan, keeping what applied).
    match c.policy_id {
        Some(id) => {
            body.policy_id = Patch::Value(id);
            // A blank limit on a plan, or one whose "use the plan's value" is ticked: the plan's
            // value (its override dropped).
            let ticked = form.all("inherit");
            let blank = [
                ("hwidLimit", &mut body.hwid_limit),
                ("ipLimit", &mut body.ip_limit),
                ("sessionLimit", &mut body.session_limit),
                ("sessionTtl", &mut body.session_ttl),
            ];
            let mut inherit = Vec::new();
            for (name, member) in blank {
                if ticked.contains(&name) {
                    *member = Patch::Missing;
                }
                if member.is_missing() {
                    inherit.push(name.to_owned());
                }
            }
            body.inherit = Patch::Value(inherit);
        }
        None if current.policy_id.is_some() => {
            body.policy_id = Patch::Null;
            // Taken off its plan, a blank limit keeps what applied (the license's own from now).
            for member in [
                &mut body.hwid_limit,
                &mut body.ip_limit,
                &mut body.session_limit,
                &mut body.session_ttl,
            ] {
                if matches!(member, Patch::Null) {
                    *member = Patch::Missing;
                }
            }
        }
        None => {}
    }
    let unchanged = match (current.expiration_type, form.get("expirationType")) {
        (ExpirationType::Never, Some("NEVER")) => true,
        (ExpirationType::Date, Some("DATE")) => {
            current.expiration_date.map(page::day).as_deref() == form.text("expirationDate")
        }
        (ExpirationType::Duration, Some("DURATION")) => {
            current.expiration_days.map(|d| d.to_string()).as_deref() == form.text("expirationDays")
                && Some(current.expiration_start)
                    == match form.get("expirationStart") {
                        Some("ACTIVATION") => Some(ExpirationStart::Activation),
                        Some("CREATION") | None => Some(ExpirationStart::Creation),
                        Some(_) => None,
                    }
        }
        _ => false,
    };
    if unchanged {
        body.expiration_type = Patch::Missing;
        body.expiration_date = Patch::Missing;
        body.expiration_days = Patch::Missing;
        body.expiration_start = Patch::Missing;
    }
    Ok(body)
}

/// `POST /dashboard/licenses/{id}/edit`: saves the changes, or shows the form again with what
/// to fix.
pub(crate) async fn update(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let (editing, detail) = match editing(ctx, staff, id).await {
        Ok(found) => found,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let body = match update_body(form, &detail.license) {
        Ok(body) => body,
        Err(failure) => return form_page(ctx, staff, form, Some(&failure), Some(&editing)).await,
    };
    match api::perform(ctx, staff, UpdateLicense(editing.id, body)).await {
        Ok(_) => page::redirect(&format!(
            "/dashboard/licenses/{}?notice=license-updated",
            editing.id
        )),
        Err(failure) if failure.status == 400 => {
            form_page(ctx, staff, form, Some(&failure), Some(&editing)).await
        }
        Err(failure) => page::failure(ctx, Some(staff), &failure),
    }
}

/// A whole-number field of a form: `None` when blank; a problem for `problems` when it is not
/// a whole number.
fn number(form: &Form, name: &str, problems: &mut Vec<FieldError>) -> Option<i64> {
    let text = form.text(name)?;
    match text.parse::<i64>() {
        Ok(n) => Some(n),
        Err(_) => {
            problems.push(FieldError::new(name, t("licenses-form-must-whole-number")));
            None
        }
    }
}

/// The license asked for by the form, or the form's own problems (what the operation would
/// not be able to name, such as a number field holding text).
fn create_body(form: &Form) -> Result<LicenseCreate, Failure> {
    let mut problems = Vec::new();
    let mut customers: Vec<String> = form
        .all("customerIds")
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Some(more) = form.text("moreCustomerIds") {
        customers.extend(
            more.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    let mut metadata = Vec::new();
    for line in form.get("metadata").unwrap_or("").lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line.split_once('=') {
            Some((key, value)) => metadata.push(RawMetadata::new(key.trim(), value.trim())),
            None => problems.push(FieldError::new(
                "metadata",
                tw("licenses-form-metadata-line", &[("line", Arg::Text(line))]),
            )),
        }
    }
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let policy_id = form.text("policyId").map(str::to_owned);
    // With a plan, a blank limit is left out (the plan's); without, it is none.
    let limit = |name: &str, problems: &mut Vec<FieldError>| match number(form, name, problems) {
        Some(n) => Patch::Value(n),
        None if policy_id.is_some() => Patch::Missing,
        None => Patch::Null,
    };
    let mut body = LicenseCreate {
        product_ids: Some(
            form.all("productIds")
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        customer_ids: Some(customers),
        entitlement_ids: form.get("entitlementsShown").map(|_| {
            form.all("entitlementIds")
                .into_iter()
                .map(str::to_owned)
                .collect()
        }),
        expiration_type: (kind != "PLAN").then(|| kind.to_owned()),
        metadata: Some(metadata),
        suspended: Some(form.get("suspended").is_some()),
        send_email_delivery: Some(form.get("sendEmailDelivery").is_some()),
        hwid_limit: limit("hwidLimit", &mut problems),
        ip_limit: limit("ipLimit", &mut problems),
        session_limit: limit("sessionLimit", &mut problems),
        session_ttl: limit("sessionTtl", &mut problems),
        policy_id: policy_id.clone(),
        ..LicenseCreate::default()
    };
    match kind {
        "DATE" => {
            body.expiration_date = form
                .text("expirationDate")
                .map(|date| format!("{date}T00:00:00Z"));
        }
        "DURATION" => {
            body.expiration_days = number(form, "expirationDays", &mut problems);
            body.expiration_start =
                Some(form.get("expirationStart").unwrap_or("CREATION").to_owned());
        }
        _ => {}
    }
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

/// `POST /dashboard/licenses`: creates the license, or shows the form again with what to fix.
pub(crate) async fn create(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let body = match create_body(form) {
        Ok(body) => body,
        Err(failure) => return form_page(ctx, staff, form, Some(&failure), None).await,
    };
    match api::perform(ctx, staff, CreateLicense(body)).await {
        Ok(detail) => page::redirect(&format!(
            "/dashboard/licenses/{}?notice=license-created",
            detail.license.id
        )),
        Err(failure) if failure.status == 400 => {
            form_page(ctx, staff, form, Some(&failure), None).await
        }
        Err(failure) => page::failure(ctx, Some(staff), &failure),
    }
}
