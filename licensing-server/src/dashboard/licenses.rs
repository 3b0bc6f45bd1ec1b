//! Licenses: the list (search, filters, sorting, paging), a license's page with its devices and
//! addresses, the new-license form, suspend, forget and delete.

use licensing_core::api::{CustomerPage, HwidPage, IpPage, LicensePage, ProductPage};
use licensing_core::error::FieldError;
use licensing_core::expiry::Expiration;
use licensing_core::model::{
    Customer, ExpirationStart, ExpirationType, License, LicenseDetail, Product, Resource, Scope,
};
use licensing_core::{LicenseId, Timestamp};
use maud::{Markup, html};
use serde_json::{Value, json};
use warp::http::Method;

use super::api::{self, Failure};
use super::page::{self, Act, Confirm, Form, Nav};
use super::{Ctx, Staff};
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

/// All products of the team (for names and filters), at most 100.
async fn products(ctx: &Ctx, staff: &Staff) -> Result<Vec<Product>, Failure> {
    if !staff.may(Scope::read(Resource::Products)) {
        return Ok(Vec::new());
    }
    let page: ProductPage =
        api::call(ctx, staff, Method::GET, "products", "pageSize=100", None).await?;
    Ok(page.products)
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
    let base = {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("sortColumn", sort)
            .append_pair("sortDirection", direction)
            .append_pair("page", &page_number.to_string())
            .append_pair("pageSize", &page_size);
        if !product.is_empty() {
            query.append_pair("productIds", &product);
        }
        for (name, value) in [
            ("status", state),
            ("expirationType", kind),
            ("suspended", suspended),
        ] {
            if !value.is_empty() {
                query.append_pair(name, value);
            }
        }
        query.finish()
    };
    // A key-shaped search looks for keys first; a name or address, or a key search that finds
    // nothing, looks for customers and lists their licenses.
    let mut found_by = None;
    let mut result: Option<LicensePage> = None;
    if !search.is_empty() && key_like(&search) {
        let q = format!(
            "{base}&search={}",
            form_urlencoded::byte_serialize(search.as_bytes()).collect::<String>()
        );
        let page: LicensePage = api::call(ctx, staff, Method::GET, "licenses", &q, None).await?;
        if page.total_results > 0 {
            found_by = Some("key");
            result = Some(page);
        }
    }
    if !search.is_empty() && result.is_none() {
        let q = format!(
            "pageSize=100&search={}",
            form_urlencoded::byte_serialize(search.as_bytes()).collect::<String>()
        );
        let customers: CustomerPage =
            api::call(ctx, staff, Method::GET, "customers", &q, None).await?;
        found_by = Some("customer");
        result = Some(if customers.customers.is_empty() {
            LicensePage {
                licenses: Vec::new(),
                total_results: 0,
                has_next_page: false,
            }
        } else {
            let ids: Vec<String> = customers
                .customers
                .iter()
                .map(|c| c.id.to_string())
                .collect();
            let q = format!("{base}&customerIds={}", ids.join(","));
            api::call(ctx, staff, Method::GET, "licenses", &q, None).await?
        });
    }
    let result = match result {
        Some(result) => result,
        None => api::call(ctx, staff, Method::GET, "licenses", &base, None).await?,
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
    let last = first + result.licenses.len() as u64 - 1;
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
                    @if result.licenses.is_empty() {
                        tr { td.empty colspan="6" { "No licenses match." } }
                    }
                    @for l in &result.licenses {
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
            @if result.total_results > 0 {
                span { (first) "–" (last) " of " (result.total_results) }
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
    let path = format!("licenses/id/{id}");
    let detail: LicenseDetail = api::call(ctx, staff, Method::GET, &path, "", None).await?;
    let hwids: HwidPage = api::call(
        ctx,
        staff,
        Method::GET,
        &format!("{path}/hwid"),
        "pageSize=100&showForgotten=true",
        None,
    )
    .await?;
    let ips: IpPage = api::call(
        ctx,
        staff,
        Method::GET,
        &format!("{path}/ip-address"),
        "pageSize=100&showForgotten=true",
        None,
    )
    .await?;
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
            hwids.hwids.iter().map(|h| (h.hwid.id.to_string(), h.hwid.identifier.as_str().to_owned(), h.status, h.hwid.last_seen_at)).collect(),
        ))
        h2 { "Addresses" }
        (records(
            staff,
            l.id,
            "addresses",
            devices_allowed,
            ips.ip_addresses.iter().map(|r| (r.ip.id.to_string(), r.ip.address.to_string(), r.status, r.ip.last_seen_at)).collect(),
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
    let verb = if suspend { "suspend" } else { "unsuspend" };
    let act = license_id(id).map(|id| {
        Act::new(
            Method::POST,
            format!("licenses/id/{id}/{verb}"),
            format!("/dashboard/licenses/{id}?notice=license-{verb}ed"),
        )
    });
    page::act(ctx, staff, act).await
}

/// `POST /dashboard/licenses/{id}/email`: the key to each customer with an address.
pub(crate) async fn email(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let act = license_id(id).map(|id| {
        Act::new(
            Method::POST,
            format!("licenses/id/{id}/email"),
            format!("/dashboard/licenses/{id}?notice=license-emailed"),
        )
    });
    page::act(ctx, staff, act).await
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
    let (segment, noun) = if kind == "devices" {
        ("hwid", "device")
    } else {
        ("ip-address", "address")
    };
    let verb = if forget { "forgotten" } else { "remembered" };
    let act = || -> Result<Act, Failure> {
        let id = license_id(id)?;
        let record = page::id_of::<uuid::Uuid>(record, "device or address")?;
        Ok(Act::new(
            Method::PATCH,
            format!("licenses/id/{id}/{segment}/{record}"),
            format!("/dashboard/licenses/{id}?notice={noun}-{verb}"),
        )
        .with_body(json!({ "forgotten": forget })))
    };
    page::act(ctx, staff, act()).await
}

/// `GET /dashboard/licenses/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = license_id(id)?;
        let detail: LicenseDetail = api::call(
            ctx,
            staff,
            Method::GET,
            &format!("licenses/id/{id}"),
            "",
            None,
        )
        .await?;
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
    let act = license_id(id).map(|id| {
        Act::new(
            Method::DELETE,
            format!("licenses/id/{id}"),
            "/dashboard/licenses?notice=license-deleted",
        )
    });
    page::act(ctx, staff, act).await
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
        let mut customers: CustomerPage = if staff.may(Scope::read(Resource::Customers)) {
            api::call(ctx, staff, Method::GET, "customers", "pageSize=100", None).await?
        } else {
            CustomerPage {
                customers: Vec::new(),
                total_results: 0,
                has_next_page: false,
            }
        };
        for c in editing.map_or(&[][..], |e| &e.customers[..]) {
            if !customers.customers.iter().any(|known| known.id == c.id) {
                customers.customers.push(c.clone());
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
            select #customerIds name="customerIds" multiple size=(customers.customers.len().clamp(2, 8)) {
                @for c in &customers.customers {
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
    let detail: LicenseDetail = api::call(
        ctx,
        staff,
        Method::GET,
        &format!("licenses/id/{id}"),
        "",
        None,
    )
    .await?;
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

/// The API's update body from the edit form. Every member is sent (a blank limit clears it),
/// except the expiration members when they say what the license already has: a date is shown
/// by its day, and sending the day back would move an expiry set to another hour.
fn update_body(form: &Form, current: &License) -> Result<Value, Failure> {
    let mut body = create_body(form)?;
    let members = body.as_object_mut().expect("an object");
    members.remove("sendEmailDelivery");
    for name in ["hwidLimit", "ipLimit"] {
        members.entry(name).or_insert(Value::Null);
    }
    members.insert(
        "licenseKey".to_owned(),
        Value::String(form.get("licenseKey").unwrap_or("").trim().to_owned()),
    );
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
        for name in [
            "expirationType",
            "expirationDate",
            "expirationDays",
            "expirationStart",
        ] {
            members.remove(name);
        }
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
    let path = format!("licenses/id/{}", editing.id);
    match api::call::<LicenseDetail>(ctx, staff, Method::PUT, &path, "", Some(&body)).await {
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
fn number(form: &Form, name: &str, problems: &mut Vec<FieldError>) -> Option<Value> {
    let text = form.text(name)?;
    match text.parse::<i64>() {
        Ok(n) => Some(Value::from(n)),
        Err(_) => {
            problems.push(FieldError::new(name, "must be a whole number"));
            None
        }
    }
}

/// The API's create body from the form, or the form's own problems (what the API would not
/// be able to name, such as a number field holding text).
fn create_body(form: &Form) -> Result<Value, Failure> {
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
            Some((key, value)) => {
                metadata.push(json!({ "key": key.trim(), "value": value.trim() }));
            }
            None => problems.push(FieldError::new(
                "metadata",
                format!("line “{line}” needs the form key=value"),
            )),
        }
    }
    let kind = form.get("expirationType").unwrap_or("NEVER");
    let mut body = json!({
        "productIds": form.all("productIds"),
        "customerIds": customers,
        "expirationType": kind,
        "metadata": metadata,
        "suspended": form.get("suspended").is_some(),
        "sendEmailDelivery": form.get("sendEmailDelivery").is_some(),
    });
    for name in ["hwidLimit", "ipLimit"] {
        if let Some(limit) = number(form, name, &mut problems) {
            body[name] = limit;
        }
    }
    match kind {
        "DATE" => {
            if let Some(date) = form.text("expirationDate") {
                body["expirationDate"] = Value::String(format!("{date}T00:00:00Z"));
            }
        }
        "DURATION" => {
            if let Some(days) = number(form, "expirationDays", &mut problems) {
                body["expirationDays"] = days;
            }
            body["expirationStart"] =
                Value::String(form.get("expirationStart").unwrap_or("CREATION").to_owned());
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
    match api::call::<LicenseDetail>(ctx, staff, Method::POST, "licenses", "", Some(&body)).await {
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
