//! Licenses: the list (search, filters, sorting, paging), a license's page with its devices and
//! addresses, the new-license form, suspend, forget and delete.

use licensing_core::api::requests::{
    CustomerListQuery, DeviceListQuery, ExpiryFilter, ForgottenBody, LicenseCreate,
    LicenseListQuery, LicenseSort, LicenseUpdate, Paging, Patch, RawMetadata, SortDirection,
};
use licensing_core::error::FieldError;
use licensing_core::expiry::Expiration;
use licensing_core::model::{
    Customer, ExpirationStart, ExpirationType, License, LicenseDetail, Product, Resource, Scope,
};
use licensing_core::store::Page;
use licensing_core::validate::SearchText;
use licensing_core::{ApiError, LicenseId, Timestamp};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::customers::ListCustomers;
use crate::app::devices::{ListHwids, ListIps, SetHwidForgotten, SetIpForgotten};
use crate::app::licenses::{
    CreateLicense, DeleteLicense, EmailLicense, GetLicense, ListLicenses, SuspendLicense,
    UnsuspendLicense, UpdateLicense,
};
use crate::http::Response;

/// A license's state in one word, with its badge class.
fn status(license: &License, now: Timestamp) -> (&'static str, &'static str) {
    if license.suspended {
        ("Suspended", "bad")
    } else if Expiration::of(license).is_expired(now) {
        ("Expired", "warn")
    } else {
        ("Active", "ok")
    }
}

/// How a license expires, in words.
fn expiry_text(license: &License) -> String {
    match (license.expiration_type, license.expiration_date) {
        (ExpirationType::Never, _) => "Never".into(),
        (_, Some(date)) => page::day(date),
        (ExpirationType::Duration, None) => format!(
            "{} days after first use",
            license.expiration_days.unwrap_or(0)
        ),
        (ExpirationType::Date, None) => "Unknown".into(),
    }
}

/// Whether search text is shaped like (part of) a license key rather than a name or address.
fn key_like(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// All products of the team (for names and filters), at most 100; none for a role that may
/// not read them.
async fn products(ctx: &Ctx, staff: &Staff) -> Result<Vec<Product>, Failure> {
    if !staff.may(Scope::read(Resource::Products)) {
        return Ok(Vec::new());
    }
    Ok(api::all_products(ctx, staff).await?.items)
}

/// `GET /dashboard/licenses`.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff) -> Response {
    match list_page(ctx, staff).await {
        Ok(markup) => page::html_response(200, markup),
        Err(failure) => page::failure(ctx, Some(staff), &failure),
    }
}

async fn list_page(ctx: &Ctx, staff: &Staff) -> Result<Markup, Failure> {
    let search = ctx.param("search").unwrap_or_default().trim().to_owned();
    let product = ctx.param("product").unwrap_or_default();
    let sort = match ctx.param("sort").as_deref() {
        Some("updatedAt") => "updatedAt",
        _ => "createdAt",
    };
    let direction = match ctx.param("direction").as_deref() {
        Some("asc") => "asc",
        _ => "desc",
    };
    let page_number: u32 = page::page_number(ctx);
    let page_size = match ctx.param("pageSize").as_deref() {
        Some(size @ ("10" | "50" | "100")) => size.to_owned(),
        _ => "25".to_owned(),
    };
    // The list's own filters: a value the API does not know is dropped, as if not chosen.
    let chosen = |name: &str, known: &[&'static str]| {
        let value = ctx.param(name).unwrap_or_default();
        known.iter().find(|k| **k == value).copied().unwrap_or("")
    };
    let state = chosen("status", &["ACTIVE", "EXPIRED"]);
    let kind = chosen("expirationType", &["NEVER", "DATE", "DURATION"]);
    let suspended = chosen("suspended", &["true", "false"]);
    let products = products(ctx, staff).await?;
    let mut query = LicenseListQuery {
        paging: Paging {
            page: page_number,
            page_size: page_size.parse().unwrap_or(25),
            direction: if direction == "asc" {
                SortDirection::Asc
            } else {
                SortDirection::Desc
            },
        },
        ..LicenseListQuery::default()
    };
    if sort == "updatedAt" {
        query.sort = LicenseSort::UpdatedAt;
    }
    if !product.is_empty() {
        let id = product
            .parse()
            .map_err(|_| ApiError::bad_field("product", "is not a product id"))?;
        query.filter.product_ids = vec![id];
    }
    if !state.is_empty() {
        query.filter.expiry = Some(ExpiryFilter {
            expired: state == "EXPIRED",
            at: ctx.now,
        });
    }
    query.filter.expiration_type = match kind {
        "NEVER" => Some(ExpirationType::Never),
        "DATE" => Some(ExpirationType::Date),
        "DURATION" => Some(ExpirationType::Duration),
        _ => None,
    };
    query.filter.suspended = (!suspended.is_empty()).then_some(suspended == "true");
    // A key-shaped search looks for keys first; a name or address, or a key search that finds
    // nothing, looks for customers and lists their licenses.
    let text = if search.is_empty() {
        None
    } else {
        Some(
            SearchText::parse(&search)
                .map_err(|e| ApiError::bad_field("search", &e.to_string()))?,
        )
    };
    let mut found_by = None;
    let mut result: Option<Page<License>> = None;
    if let Some(text) = text.as_ref().filter(|_| key_like(&search)) {
        let mut by_key = query.clone();
        by_key.filter.search = Some(text.clone());
        let page = api::perform(ctx, staff, ListLicenses(by_key)).await?;
        if page.total > 0 {
            found_by = Some("key");
            result = Some(page);
        }
    }
    if let Some(text) = text.filter(|_| result.is_none()) {
        let mut customers = CustomerListQuery::default();
        customers.paging.page_size = 100;
        customers.filter = Some(text);
        let customers = api::perform(ctx, staff, ListCustomers(customers)).await?;
        found_by = Some("customer");
        result = Some(if customers.items.is_empty() {
            Page {
                items: Vec::new(),
                total: 0,
                has_next_page: false,
            }
        } else {
            let mut theirs = query.clone();
            theirs.filter.customer_ids = customers.items.iter().map(|c| c.id).collect();
            api::perform(ctx, staff, ListLicenses(theirs)).await?
        });
    }
    let result = match result {
        Some(result) => result,
        None => api::perform(ctx, staff, ListLicenses(query)).await?,
    };
    let product_name = |id: &licensing_core::ProductId| {
        products
            .iter()
            .find(|p| p.id == *id)
            .map_or_else(|| id.to_string(), |p| p.name.clone())
    };
    let link = |page: u32| {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("search", search.as_str()),
            ("product", product.as_str()),
            ("status", state),
            ("expirationType", kind),
            ("suspended", suspended),
            ("sort", sort),
            ("direction", direction),
            ("pageSize", page_size.as_str()),
        ] {
            if !value.is_empty() {
                q.append_pair(name, value);
            }
        }
        q.append_pair("page", &page.to_string());
        format!("/dashboard/licenses?{}", q.finish())
    };
    let size: u64 = page_size.parse().unwrap_or(25);
    let first = (u64::from(page_number) - 1) * size + 1;
    let last = first + result.items.len() as u64 - 1;
    let content = html! {
        div.heading {
            h1 { "Licenses" }
            @if staff.may(Scope::write(Resource::Licenses)) {
                a.button href="/dashboard/licenses/new" { "New license" }
            }
        }
        form.filters method="get" action="/dashboard/licenses" role="search" {
            div {
                label for="search" { "Search" }
                input #search type="search" name="search" value=(search) placeholder="Key, customer name or e-mail";
            }
            div {
                label for="product" { "Product" }
                select #product name="product" {
                    option value="" { "Any product" }
                    @for p in &products {
                        option value=(p.id) selected[product == p.id.to_string()] { (p.name) }
                    }
                }
            }
            div {
                label for="status" { "Status" }
                select #status name="status" {
                    option value="" { "Any" }
                    option value="ACTIVE" selected[state == "ACTIVE"] { "Not expired" }
                    option value="EXPIRED" selected[state == "EXPIRED"] { "Expired" }
                }
            }
            div {
                label for="expirationType" { "Expiration" }
                select #expirationType name="expirationType" {
                    option value="" { "Any" }
                    option value="NEVER" selected[kind == "NEVER"] { "Never expires" }
                    option value="DATE" selected[kind == "DATE"] { "On a date" }
                    option value="DURATION" selected[kind == "DURATION"] { "After a duration" }
                }
            }
            div {
                label for="suspended" { "Suspended" }
                select #suspended name="suspended" {
                    option value="" { "Either" }
                    option value="true" selected[suspended == "true"] { "Suspended" }
                    option value="false" selected[suspended == "false"] { "Not suspended" }
                }
            }
            div {
                label for="sort" { "Sort by" }
                select #sort name="sort" {
                    option value="createdAt" selected[sort == "createdAt"] { "Created" }
                    option value="updatedAt" selected[sort == "updatedAt"] { "Last changed" }
                }
            }
            div {
                label for="direction" { "Order" }
                select #direction name="direction" {
                    option value="desc" selected[direction == "desc"] { "Newest first" }
                    option value="asc" selected[direction == "asc"] { "Oldest first" }
                }
            }
            div {
                label for="pageSize" { "Per page" }
                select #pageSize name="pageSize" {
                    @for n in ["10", "25", "50", "100"] {
                        option value=(n) selected[page_size == n] { (n) }
                    }
                }
            }
            div { button type="submit" { "Show" } }
        }
        @if let Some(by) = found_by {
            p.hint {
                @if by == "key" { "Licenses whose key contains “" (search) "”." }
                @else { "Licenses of customers whose name or e-mail contains “" (search) "”." }
            }
        }
        div.table-wrap {
            table {
                thead {
                    tr {
                        th scope="col" { "Key" }
                        th scope="col" { "Status" }
                        th scope="col" { "Products" }
                        th scope="col" { "Expires" }
                        th scope="col" { "Created" }
                        th scope="col" { "Last active" }
                    }
                }
                tbody {
                    @if result.items.is_empty() {
                        tr { td.empty colspan="6" { "No licenses match." } }
                    }
                    @for l in &result.items {
                        @let (word, class) = status(l, ctx.now);
                        tr {
                            td { a.key href={ "/dashboard/licenses/" (l.id) } { (l.license_key.as_str()) } }
                            td { span.badge.(class) { (word) } }
                            td { (l.product_ids.iter().map(&product_name).collect::<Vec<_>>().join(", ")) }
                            td { (expiry_text(l)) }
                            td { (page::day(l.created_at)) }
                            td { (l.last_active_at.map(page::when).unwrap_or_else(|| "Never".into())) }
                        }
                    }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if result.total > 0 {
                span { (first) "–" (last) " of " (result.total) }
            }
            @if page_number > 1 {
                a href=(link(page_number - 1)) rel="prev" { "Previous" }
            }
            @if result.has_next_page {
                a href=(link(page_number + 1)) rel="next" { "Next" }
            }
        }
    };
    Ok(page::layout(ctx, staff, Nav::Licenses, "Licenses", content))
}

/// Parses a license id of the path (404 page otherwise).
fn license_id(text: &str) -> Result<LicenseId, Failure> {
    page::id_of(text, "license")
}

/// `GET /dashboard/licenses/{id}`.
pub(crate) async fn show(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    match show_page(ctx, staff, id).await {
        Ok(markup) => page::html_response(200, markup),
        Err(failure) => page::failure(ctx, Some(staff), &failure),
    }
}

async fn show_page(ctx: &Ctx, staff: &Staff, id: &str) -> Result<Markup, Failure> {
    let id = license_id(id)?;
    let detail = api::perform(ctx, staff, GetLicense(id)).await?;
    // Every record, the forgotten ones too, newest use first.
    let mut every = DeviceListQuery::default();
    every.paging.page_size = 100;
    every.filter = true;
    let hwids = api::perform(ctx, staff, ListHwids(id, every.clone())).await?;
    let ips = api::perform(ctx, staff, ListIps(id, every)).await?;
    let l = &detail.license;
    let (word, class) = status(l, ctx.now);
    let devices_allowed = staff.may(Scope::LICENSE_DEVICES);
    let suspend_allowed = staff.may(Scope::LICENSE_SUSPEND);
    let write_allowed = staff.may(Scope::write(Resource::Licenses));
    let limit = |n: Option<u32>| n.map_or_else(|| "No limit".to_owned(), |n| n.to_string());
    let content = html! {
        div.heading {
            h1 {
                span.key { (l.license_key.as_str()) }
                button.secondary.small.copy type="button" data-copy=(l.license_key.as_str()) hidden { "Copy" }
            }
            span.badge.(class) { (word) }
        }
        div.actions {
            @if suspend_allowed {
                @if l.suspended {
                    form method="post" action={ "/dashboard/licenses/" (l.id) "/unsuspend" } {
                        (page::csrf(staff))
                        button type="submit" { "Unsuspend" }
                    }
                } @else {
                    form method="post" action={ "/dashboard/licenses/" (l.id) "/suspend" } {
                        (page::csrf(staff))
                        button.secondary type="submit" { "Suspend" }
                    }
                }
            }
            @if write_allowed && ctx.state.mailer.is_some() && detail.customers.iter().any(|c| c.email.is_some()) {
                form method="post" action={ "/dashboard/licenses/" (l.id) "/email" } {
                    (page::csrf(staff))
                    button.secondary type="submit" { "E-mail the key to its customers" }
                }
            }
            @if write_allowed {
                a.button.secondary href={ "/dashboard/licenses/" (l.id) "/edit" } { "Edit" }
                a.button.danger href={ "/dashboard/licenses/" (l.id) "/delete" } { "Delete…" }
            }
        }
        div.card {
            dl.facts {
                dt { "Customers" }
                dd {
                    @if detail.customers.is_empty() { "None" }
                    @for (i, c) in detail.customers.iter().enumerate() {
                        @if i > 0 { ", " }
                        (customer_name(c))
                    }
                }
                dt { "Products" }
                dd {
                    @if detail.products.is_empty() { "None" }
                    (detail.products.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "))
                }
                dt { "Expires" } dd { (expiry_text(l)) }
                dt { "Device limit" } dd { (limit(l.hwid_limit)) }
                dt { "Address limit" } dd { (limit(l.ip_limit)) }
                dt { "Created" } dd { (page::when(l.created_at)) }
                dt { "Last changed" } dd { (page::when(l.updated_at)) }
                dt { "Last active" } dd { (l.last_active_at.map(page::when).unwrap_or_else(|| "Never".into())) }
                @for m in &l.metadata {
                    dt { code { (m.key) } } dd { (m.value) }
                }
            }
        }
        h2 { "Devices" }
        (records(
            staff,
            l.id,
            "devices",
            devices_allowed,
            hwids.items.iter().map(|h| (h.hwid.id.to_string(), h.hwid.identifier.as_str().to_owned(), h.status, h.hwid.last_seen_at)).collect(),
        ))
        h2 { "Addresses" }
        (records(
            staff,
            l.id,
            "addresses",
            devices_allowed,
            ips.items.iter().map(|r| (r.ip.id.to_string(), r.ip.address.to_string(), r.status, r.ip.last_seen_at)).collect(),
        ))
    };
    Ok(page::layout(
        ctx,
        staff,
        Nav::Licenses,
        l.license_key.as_str(),
        content,
    ))
}

fn customer_name(c: &Customer) -> String {
    match (&c.full_name, &c.email) {
        (Some(name), Some(email)) => format!("{name} <{}>", email.as_str()),
        (Some(name), None) => name.clone(),
        (None, Some(email)) => email.as_str().to_owned(),
        (None, None) => c.id.to_string(),
    }
}

/// A table of devices or addresses with forget and remember buttons.
fn records(
    staff: &Staff,
    license: LicenseId,
    kind: &str,
    allowed: bool,
    rows: Vec<(
        String,
        String,
        licensing_core::model::RecordStatus,
        Timestamp,
    )>,
) -> Markup {
    use licensing_core::model::RecordStatus;
    let noun = if kind == "devices" {
        "device"
    } else {
        "address"
    };
    html! {
        div.table-wrap {
            table {
                thead {
                    tr {
                        th scope="col" { (if kind == "devices" { "Hardware identifier" } else { "Address" }) }
                        th scope="col" { "Status" }
                        th scope="col" { "Last seen" }
                        @if allowed { th scope="col" { span.hint { "Action" } } }
                    }
                }
                tbody {
                    @if rows.is_empty() {
                        tr { td.empty colspan="4" { "No " (noun) " has used this license yet." } }
                    }
                    @for (id, name, status, seen) in &rows {
                        tr {
                            td.mono { (name) }
                            td {
                                @match status {
                                    RecordStatus::Active => span.badge.ok { "Active" },
                                    RecordStatus::Inactive => span.badge.muted { "Inactive" },
                                    RecordStatus::Forgotten => span.badge.warn { "Forgotten" },
                                }
                            }
                            td { (page::when(*seen)) }
                            @if allowed {
                                td {
                                    @let forgotten = *status == RecordStatus::Forgotten;
                                    form method="post" action={
                                        "/dashboard/licenses/" (license) "/" (kind) "/" (id) "/"
                                        (if forgotten { "remember" } else { "forget" })
                                    } {
                                        (page::csrf(staff))
                                        button.secondary.small type="submit" aria-label={ (if forgotten { "Remember " } else { "Forget " }) (name) } {
                                            (if forgotten { "Remember" } else { "Forget" })
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /dashboard/licenses/{id}/suspend` and `/unsuspend`.
pub(crate) async fn suspend(ctx: &Ctx, staff: &Staff, id: &str, suspend: bool) -> Response {
    let id = match license_id(id) {
        Ok(id) => id,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let then = |verb| format!("/dashboard/licenses/{id}?notice=license-{verb}ed");
    if suspend {
        page::done(ctx, staff, Ok(SuspendLicense(id)), &then("suspend")).await
    } else {
        page::done(ctx, staff, Ok(UnsuspendLicense(id)), &then("unsuspend")).await
    }
}

/// `POST /dashboard/licenses/{id}/email`: the key to each customer with an address.
pub(crate) async fn email(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let id = match license_id(id) {
        Ok(id) => id,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let then = format!("/dashboard/licenses/{id}?notice=license-emailed");
    page::done(ctx, staff, Ok(EmailLicense(id)), &then).await
}

/// `POST /dashboard/licenses/{id}/{devices|addresses}/{recordId}/{forget|remember}`.
pub(crate) async fn forget(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    kind: &str,
    record: &str,
    forget: bool,
) -> Response {
    let ids = license_id(id).and_then(|id| Ok((id, page::id_of(record, "device or address")?)));
    let (id, record): (LicenseId, uuid::Uuid) = match ids {
        Ok(ids) => ids,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let verb = if forget { "forgotten" } else { "remembered" };
    let body = ForgottenBody {
        forgotten: Some(forget),
    };
    if kind == "devices" {
        let then = format!("/dashboard/licenses/{id}?notice=device-{verb}");
        let op = SetHwidForgotten(id, record.into(), body);
        page::done(ctx, staff, Ok(op), &then).await
    } else {
        let then = format!("/dashboard/licenses/{id}?notice=address-{verb}");
        let op = SetIpForgotten(id, record.into(), body);
        page::done(ctx, staff, Ok(op), &then).await
    }
}

/// `GET /dashboard/licenses/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = license_id(id)?;
        let detail = api::perform(ctx, staff, GetLicense(id)).await?;
        let key = detail.license.license_key.as_str();
        Ok::<_, Failure>(page::confirm(
            ctx,
            staff,
            Confirm {
                nav: Nav::Licenses,
                title: "Delete this license?",
                what: html! { "License " span.key { (key) } " and its devices and addresses will be deleted. Its clients will be refused from then on." },
                action: format!("/dashboard/licenses/{id}/delete"),
                button: "Delete license",
                back: format!("/dashboard/licenses/{id}"),
            },
        ))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// `POST /dashboard/licenses/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = license_id(id).map(DeleteLicense);
    page::done(ctx, staff, op, "/dashboard/licenses?notice=license-deleted").await
}

/// `GET /dashboard/licenses/new`.
pub(crate) async fn new_page(ctx: &Ctx, staff: &Staff) -> Response {
    form_page(ctx, staff, &Form::default(), None, None).await
}

/// The license being edited: the form shows its customers even when they are not among the
/// newest hundred, so that saving keeps them.
struct Editing {
    id: LicenseId,
    key: String,
    customers: Vec<Customer>,
}

/// The new-license form, or a license's edit form, with what to fix.
async fn form_page(
    ctx: &Ctx,
    staff: &Staff,
    form: &Form,
    failure: Option<&Failure>,
    editing: Option<&Editing>,
) -> Response {
    let lists = async {
        let products = products(ctx, staff).await?;
        let mut customers = if staff.may(Scope::read(Resource::Customers)) {
            let mut newest = CustomerListQuery::default();
            newest.paging.page_size = 100;
            api::perform(ctx, staff, ListCustomers(newest)).await?.items
        } else {
            Vec::new()
        };
        for c in editing.map_or(&[][..], |e| &e.customers[..]) {
            if !customers.iter().any(|known| known.id == c.id) {
                customers.push(c.clone());
            }
        }
        Ok::<_, Failure>((products, customers))
    };
    let (products, customers) = match lists.await {
        Ok(lists) => lists,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let start = form.get("expirationStart").unwrap_or("CREATION");
    let chosen_products = form.all("productIds");
    let chosen_customers = form.all("customerIds");
    let field = |name: &str| failure.and_then(|f| f.field(name)).map(str::to_owned);
    let error = |name: &str| {
        html! {
            @if let Some(message) = field(name) {
                span.field-error { (message) }
            }
        }
    };
    let (title, action) = match editing {
        Some(e) => ("Edit license", format!("/dashboard/licenses/{}/edit", e.id)),
        None => ("New license", "/dashboard/licenses".to_owned()),
    };
    let content = html! {
        h1 {
            (title)
            @if let Some(e) = editing { " " span.key { (e.key) } }
        }
        (page::problems(failure))
        form method="post" action=(action) data-expiration {
            (page::csrf(staff))
            label for="productIds" { "Products" span.hint { "Hold Ctrl (or ⌘) to choose several." } (error("productIds")) }
            select #productIds name="productIds" multiple size=(products.len().clamp(2, 8)) {
                @for p in &products {
                    option value=(p.id) selected[chosen_products.contains(&p.id.to_string().as_str())] { (p.name) }
                }
            }
            label for="customerIds" { "Customers" span.hint { "The 100 newest; more by id below." } (error("customerIds")) }
            select #customerIds name="customerIds" multiple size=(customers.len().clamp(2, 8)) {
                @for c in &customers {
                    option value=(c.id) selected[chosen_customers.contains(&c.id.to_string().as_str())] { (customer_name(c)) }
                }
            }
            label for="moreCustomerIds" { "Other customer ids" span.hint { "Comma-separated, optional." } }
            input #moreCustomerIds type="text" name="moreCustomerIds" value=(form.get("moreCustomerIds").unwrap_or(""));
            fieldset {
                legend { "Expiration" }
                (error("expirationType"))
                @for (value, text) in [("NEVER", "Never expires"), ("DATE", "On a date"), ("DURATION", "After a number of days")] {
                    label.choice {
                        input type="radio" name="expirationType" value=(value) checked[kind == value];
                        (text)
                    }
                }
                div data-for-type="DATE" {
                    label for="expirationDate" { "Expiration date" span.hint { "The license stops working at 00:00 UTC on this day." } (error("expirationDate")) }
                    input #expirationDate type="date" name="expirationDate" value=(form.get("expirationDate").unwrap_or(""));
                }
                div data-for-type="DURATION" {
                    label for="expirationDays" { "Days" (error("expirationDays")) }
                    input #expirationDays type="number" min="1" name="expirationDays" value=(form.get("expirationDays").unwrap_or(""));
                    span.hint { "Counted from:" (error("expirationStart")) }
                    label.choice { input type="radio" name="expirationStart" value="CREATION" checked[start == "CREATION"]; "its creation" }
                    label.choice { input type="radio" name="expirationStart" value="ACTIVATION" checked[start == "ACTIVATION"]; "its first successful verification" }
                    p.hint data-expiry-preview aria-live="polite" {}
                }
            }
            label for="hwidLimit" { "Device limit" span.hint { "Empty: no limit." } (error("hwidLimit")) }
            input #hwidLimit type="number" min="0" name="hwidLimit" value=(form.get("hwidLimit").unwrap_or(""));
            label for="ipLimit" { "Address limit" span.hint { "Empty: no limit." } (error("ipLimit")) }
            input #ipLimit type="number" min="0" name="ipLimit" value=(form.get("ipLimit").unwrap_or(""));
            label for="metadata" { "Metadata" span.hint { "One key=value per line, optional." } (error("metadata")) }
            textarea #metadata name="metadata" rows="3" { (form.get("metadata").unwrap_or("")) }
            @if let Some(e) = editing {
                label for="licenseKey" { "License key" span.hint { "Change it only to replace a leaked key: clients with the old one are refused." } (error("licenseKey")) }
                input #licenseKey type="text" name="licenseKey" value=(form.get("licenseKey").unwrap_or(&e.key));
                label.choice { input type="checkbox" name="suspended" value="true" checked[form.get("suspended").is_some()]; "Suspended" }
            } @else {
                label.choice { input type="checkbox" name="suspended" value="true" checked[form.get("suspended").is_some()]; "Create it suspended" }
                @if ctx.state.mailer.is_some() {
                    label.choice { input type="checkbox" name="sendEmailDelivery" value="true" checked[form.get("sendEmailDelivery").is_some()]; "E-mail the key to its customers" }
                }
            }
            div.actions {
                button type="submit" { @if editing.is_some() { "Save changes" } @else { "Create license" } }
                @if let Some(e) = editing {
                    a.button.secondary href={ "/dashboard/licenses/" (e.id) } { "Cancel" }
                }
            }
        }
    };
    let status = failure.map_or(200, |f| f.status);
    page::html_response(
        status,
        page::layout(ctx, staff, Nav::Licenses, title, content),
    )
}

/// The edit form's fields as they stand for `detail`.
fn form_of(detail: &LicenseDetail) -> Form {
    let l = &detail.license;
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
    if let Some(limit) = l.hwid_limit {
        add("hwidLimit", limit.to_string());
    }
    if let Some(limit) = l.ip_limit {
        add("ipLimit", limit.to_string());
    }
    if l.suspended {
        add("suspended", "true".to_owned());
    }
    for p in &l.product_ids {
        add("productIds", p.to_string());
    }
    for c in &l.customer_ids {
        add("customerIds", c.to_string());
    }
    Form::from_pairs(pairs)
}

async fn editing(ctx: &Ctx, staff: &Staff, id: &str) -> Result<(Editing, LicenseDetail), Failure> {
    let id = license_id(id)?;
    // The form is of no use to a role that cannot save it (the API refuses the save anyway).
    let write = Scope::write(Resource::Licenses);
    if !staff.may(write) {
        return Err(Failure::new(
            403,
            format!("Your role lacks the permission {write} this needs."),
        ));
    }
    let detail = api::perform(ctx, staff, GetLicense(id)).await?;
    let editing = Editing {
        id,
        key: detail.license.license_key.as_str().to_owned(),
        customers: detail.customers.clone(),
    };
    Ok((editing, detail))
}

/// `GET /dashboard/licenses/{id}/edit`.
pub(crate) async fn edit_page(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    match editing(ctx, staff, id).await {
        Ok((editing, detail)) => {
            form_page(ctx, staff, &form_of(&detail), None, Some(&editing)).await
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
        metadata: given(c.metadata),
        hwid_limit: c.hwid_limit.map_or(Patch::Null, Patch::Value),
        ip_limit: c.ip_limit.map_or(Patch::Null, Patch::Value),
    };
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
            problems.push(FieldError::new(name, "must be a whole number"));
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
                format!("line “{line}” needs the form key=value"),
            )),
        }
    }
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let mut body = LicenseCreate {
        product_ids: Some(
            form.all("productIds")
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        customer_ids: Some(customers),
        expiration_type: Some(kind.to_owned()),
        metadata: Some(metadata),
        suspended: Some(form.get("suspended").is_some()),
        send_email_delivery: Some(form.get("sendEmailDelivery").is_some()),
        hwid_limit: number(form, "hwidLimit", &mut problems),
        ip_limit: number(form, "ipLimit", &mut problems),
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
