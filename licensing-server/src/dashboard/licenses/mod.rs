//! Licenses: the list (search, filters, sorting, paging) here; a license's page with its
//! devices and addresses, suspend, forget and delete in `show`; the new-license and edit forms
//! in `form`.

mod form;
pub(crate) mod history;
mod show;

pub(crate) use form::{create, edit_page, new_page, update};
pub(crate) use show::{
    confirm_delete, delete, email, extend, file, forget, revoke_session, show, suspend,
};

use licensing_core::api::requests::{
    ExpiryFilter, LicenseListQuery, LicenseSort, Paging, SortDirection,
};
use licensing_core::expiry::Expiration;
use licensing_core::model::{Customer, ExpirationType, License, Product, Resource, Scope};
use licensing_core::store::Page;
use licensing_core::validate::SearchText;
use licensing_core::{ApiError, LicenseId, Timestamp};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, Nav};
use super::{Ctx, Staff};
use crate::app::customers::GetCustomers;
use crate::app::licenses::ListLicenses;
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
    let entitlement = ctx.param("entitlement").unwrap_or_default();
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
    let entitlements = crate::dashboard::entitlements::readable(ctx, staff).await?;
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
    if !entitlement.is_empty() {
        let id = entitlement
            .parse()
            .map_err(|_| ApiError::bad_field("entitlement", "is not an entitlement id"))?;
        query.filter.entitlement = Some(licensing_core::api::requests::EntitlementFilter {
            id,
            products: Vec::new(),
        });
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
    // nothing, lists the licenses of every customer it finds (however many).
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
        let mut theirs = query.clone();
        theirs.filter.customer_search = Some(text);
        found_by = Some("customer");
        result = Some(api::perform(ctx, staff, ListLicenses(theirs)).await?);
    }
    let result = match result {
        Some(result) => result,
        None => api::perform(ctx, staff, ListLicenses(query)).await?,
    };
    // The customers the page's licenses name, for a role that may read them.
    let customers = if staff.may(Scope::read(Resource::Customers)) {
        let ids = result
            .items
            .iter()
            .flat_map(|l| l.customer_ids.iter().copied())
            .collect();
        api::perform(ctx, staff, GetCustomers(ids)).await?
    } else {
        Vec::new()
    };
    let customers_of = |l: &License| {
        l.customer_ids
            .iter()
            .filter_map(|id| customers.iter().find(|c| c.id == *id))
            .map(customer_name)
            .collect::<Vec<_>>()
            .join(", ")
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
            ("entitlement", entitlement.as_str()),
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
            (page::filter(("product", "Product", "Any product"), products.iter().map(|p| (p.id, &p.name)), &product))
            @if !entitlements.is_empty() {
                (page::filter(("entitlement", "Entitlement", "Any"), entitlements.iter().map(|e| (e.id, &e.code)), &entitlement))
            }
            (page::filter(("status", "Status", "Any"), [("ACTIVE", "Not expired"), ("EXPIRED", "Expired")], state))
            (page::filter(
                ("expirationType", "Expiration", "Any"),
                [("NEVER", "Never expires"), ("DATE", "On a date"), ("DURATION", "After a duration")],
                kind,
            ))
            (page::filter(("suspended", "Suspended", "Either"), [("true", "Suspended"), ("false", "Not suspended")], suspended))
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
        (page::table(&["Key", "Customer", "Status", "Products", "Expires", "Created", "Last active"], None, html! {
            @if result.items.is_empty() {
                tr { td.empty colspan="7" { "No licenses match." } }
            }
            @for l in &result.items {
                @let (word, class) = status(l, ctx.now);
                tr {
                    td { a.key href={ "/dashboard/licenses/" (l.id) } { (l.license_key.as_str()) } }
                    td { (customers_of(l)) }
                    td { span.badge.(class) { (word) } }
                    td { (l.product_ids.iter().map(&product_name).collect::<Vec<_>>().join(", ")) }
                    td { (expiry_text(l)) }
                    td { (page::day(l.created_at)) }
                    td { (l.last_active_at.map(page::when).unwrap_or_else(|| "Never".into())) }
                }
            }
        }))
        (page::pager(result.total, page_number, size, link))
    };
    Ok(page::layout(ctx, staff, Nav::Licenses, "Licenses", content))
}

/// Parses a license id of the path (404 page otherwise).
fn license_id(text: &str) -> Result<LicenseId, Failure> {
    page::id_of(text, "license")
}

fn customer_name(c: &Customer) -> String {
    match (&c.full_name, &c.email) {
        (Some(name), Some(email)) => format!("{name} <{}>", email.as_str()),
        (Some(name), None) => name.clone(),
        (None, Some(email)) => email.as_str().to_owned(),
        (None, None) => c.id.to_string(),
    }
}
