//! Licenses: the list (search, filters, sorting, paging) here; a license's page with its
//! devices and addresses, suspend, forget and delete in `show`; the new-license and edit forms
//! in `form`.

mod bulk;
mod export;
mod form;
pub(crate) mod history;
mod show;
mod usage;

pub(crate) use bulk::bulk;
pub(crate) use export::export;
pub(crate) use form::{create, edit_page, new_page, update};
pub(crate) use show::{
    confirm_delete, delete, email, extend, file, forget, revoke_session, show, suspend,
};
pub(crate) use usage::change as change_usage;

use licensing_core::api::requests::{
    ExpiresWithin, ExpiryFilter, LicenseListQuery, LicenseSort, Paging, SortDirection,
};
use licensing_core::expiry::Expiration;
use licensing_core::model::{Customer, ExpirationType, License, Product};
use licensing_core::store::Page;
use licensing_core::validate::SearchText;
use licensing_core::{ApiError, LicenseId, Timestamp};
use maud::{Markup, html};

use super::api::{self, Failure};
use super::page::{self, Nav};
use super::{Ctx, Staff};
use crate::app::customers::GetCustomers;
use crate::app::licenses::ListLicenses;
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

/// A license's state in one word, with its badge class.
fn status(license: &License, now: Timestamp) -> (&'static str, &'static str) {
    if license.suspended {
        (t("licenses-suspended"), "bad")
    } else if Expiration::of(license).is_expired(now) {
        (t("licenses-expired"), "warn")
    } else {
        (t("licenses-active"), "ok")
    }
}

/// How a license expires, in words.
fn expiry_text(license: &License) -> String {
    match (license.expiration_type, license.expiration_date) {
        (ExpirationType::Never, _) => t("licenses-never").into(),
        (_, Some(date)) => page::day(date),
        (ExpirationType::Duration, None) => tw(
            "licenses-days-after-first-use",
            &[(
                "days",
                Arg::Text(&page::counted(
                    license.expiration_days.unwrap_or(0),
                    "count-days",
                )),
            )],
        ),
        (ExpirationType::Date, None) => t("licenses-unknown").into(),
    }
}

/// Whether search text is shaped like (part of) a license key rather than a name or address.
fn key_like(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// All products of the team (for names and filters), at most 100; none for a role that may
/// not read them.
async fn products(ctx: &Ctx, staff: &Staff) -> Result<Vec<Product>, Failure> {
    if !staff.may_perform::<crate::app::products::ListProducts>() {
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

/// The list's filters as the page's query gives them: a value the list does not know is
/// dropped, as if not chosen.
struct Listing {
    search: String,
    product: String,
    entitlement: String,
    policy: String,
    state: &'static str,
    kind: &'static str,
    suspended: &'static str,
    expiring: &'static str,
    sort: &'static str,
    direction: &'static str,
    page_size: &'static str,
}

impl Listing {
    fn of(ctx: &Ctx) -> Self {
        let chosen = |name: &str, known: &[&'static str]| {
            let value = ctx.param(name).unwrap_or_default();
            known.iter().find(|k| **k == value).copied().unwrap_or("")
        };
        let or = |chosen: &'static str, default| if chosen.is_empty() { default } else { chosen };
        Self {
            search: ctx.param("search").unwrap_or_default().trim().to_owned(),
            product: ctx.param("product").unwrap_or_default(),
            entitlement: ctx.param("entitlement").unwrap_or_default(),
            policy: ctx.param("policy").unwrap_or_default(),
            state: chosen("status", &["ACTIVE", "EXPIRED"]),
            kind: chosen("expirationType", &["NEVER", "DATE", "DURATION"]),
            suspended: chosen("suspended", &["true", "false"]),
            expiring: chosen("expiring", &["7", "30", "90"]),
            sort: or(
                chosen("sort", &["updatedAt", "expirationDate", "lastActiveAt"]),
                "createdAt",
            ),
            direction: or(chosen("direction", &["asc"]), "desc"),
            page_size: or(chosen("pageSize", &["10", "50", "100"]), "25"),
        }
    }

    /// The filters as query pairs (those chosen), for links to the same list.
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        [
            ("search", self.search.as_str()),
            ("product", self.product.as_str()),
            ("entitlement", self.entitlement.as_str()),
            ("policy", self.policy.as_str()),
            ("status", self.state),
            ("expirationType", self.kind),
            ("suspended", self.suspended),
            ("expiring", self.expiring),
            ("sort", self.sort),
            ("direction", self.direction),
            ("pageSize", self.page_size),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .collect()
    }

    /// The address of the list (`page`) or of its export with these filters.
    fn link(&self, path: &str, page: Option<u32>) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (name, value) in self.pairs() {
            q.append_pair(name, value);
        }
        if let Some(page) = page {
            q.append_pair("page", &page.to_string());
        }
        format!("{path}?{}", q.finish())
    }

    /// The operation's query (page 1 of the chosen size and order) and the search text.
    fn query(&self, now: Timestamp) -> Result<(LicenseListQuery, Option<SearchText>), Failure> {
        let mut query = LicenseListQuery {
            paging: Paging {
                page: 1,
                page_size: self.page_size.parse().unwrap_or(25),
                direction: if self.direction == "asc" {
                    SortDirection::Asc
                } else {
                    SortDirection::Desc
                },
            },
            ..LicenseListQuery::default()
        };
        query.sort = match self.sort {
            "updatedAt" => LicenseSort::UpdatedAt,
            "expirationDate" => LicenseSort::ExpirationDate,
            "lastActiveAt" => LicenseSort::LastActiveAt,
            _ => LicenseSort::CreatedAt,
        };
        if let Ok(days) = self.expiring.parse() {
            query.filter.expires_within = Some(ExpiresWithin { days, at: now });
        }
        if !self.product.is_empty() {
            let id = self
                .product
                .parse()
                .map_err(|_| ApiError::bad_field("product", t("licenses-not-product-id")))?;
            query.filter.product_ids = vec![id];
        }
        if !self.entitlement.is_empty() {
            let id = self.entitlement.parse().map_err(|_| {
                ApiError::bad_field("entitlement", t("licenses-not-entitlement-id"))
            })?;
            query.filter.entitlement = Some(licensing_core::api::requests::EntitlementFilter {
                id,
                products: Vec::new(),
                policies: Vec::new(),
            });
        }
        if !self.policy.is_empty() {
            let id = self
                .policy
                .parse()
                .map_err(|_| ApiError::bad_field("policy", t("licenses-not-policy-id")))?;
            query.filter.policy_id = Some(id);
        }
        if !self.state.is_empty() {
            query.filter.expiry = Some(ExpiryFilter {
                expired: self.state == "EXPIRED",
                at: now,
            });
        }
        query.filter.expiration_type = match self.kind {
            "NEVER" => Some(ExpirationType::Never),
            "DATE" => Some(ExpirationType::Date),
            "DURATION" => Some(ExpirationType::Duration),
            _ => None,
        };
        query.filter.suspended = (!self.suspended.is_empty()).then_some(self.suspended == "true");
        let text = if self.search.is_empty() {
            None
        } else {
            Some(
                SearchText::parse(&self.search)
                    .map_err(|e| ApiError::bad_field("search", &e.to_string()))?,
            )
        };
        Ok((query, text))
    }
}

/// How a search found the licenses listed: by their key, or by their customers' names and
/// addresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FoundBy {
    Key,
    Customer,
    Metadata,
    Device,
}

/// `query` searching `text` the way `by` says.
fn searching(mut query: LicenseListQuery, text: &SearchText, by: FoundBy) -> LicenseListQuery {
    match by {
        FoundBy::Key => query.filter.search = Some(text.clone()),
        FoundBy::Customer => query.filter.customer_search = Some(text.clone()),
        FoundBy::Metadata => query.filter.metadata_search = Some(text.clone()),
        FoundBy::Device => query.filter.device_search = Some(text.clone()),
    }
    query
}

/// One page of the licenses `query` lists, searching `text`: a key-shaped search looks for keys
/// first; a name or address, or a key search that finds nothing, lists the licenses of every
/// customer it finds (however many).
async fn find(
    cx: &crate::app::Cx,
    query: LicenseListQuery,
    text: Option<&SearchText>,
) -> Result<(Page<License>, Option<FoundBy>), ApiError> {
    let Some(text) = text else {
        return Ok((cx.perform(ListLicenses(query)).await?, None));
    };
    if key_like(text.as_str()) {
        let page = cx
            .perform(ListLicenses(searching(query.clone(), text, FoundBy::Key)))
            .await?;
        if page.total > 0 {
            return Ok((page, Some(FoundBy::Key)));
        }
    }
    let by = FoundBy::Customer;
    let page = cx
        .perform(ListLicenses(searching(query.clone(), text, by)))
        .await?;
    if page.total > 0 {
        return Ok((page, Some(by)));
    }
    // No customer either: an order number, a seat name, anything kept in the metadata.
    let by = FoundBy::Metadata;
    let page = cx
        .perform(ListLicenses(searching(query.clone(), text, by)))
        .await?;
    if page.total > 0 {
        return Ok((page, Some(by)));
    }
    // Nor metadata: a device's name or platform as its client sent it, or its identifier.
    let by = FoundBy::Device;
    let page = cx.perform(ListLicenses(searching(query, text, by))).await?;
    Ok((page, Some(by)))
}

async fn list_page(ctx: &Ctx, staff: &Staff) -> Result<Markup, Failure> {
    let listing = Listing::of(ctx);
    let page_number: u32 = page::page_number(ctx);
    let products = products(ctx, staff).await?;
    let entitlements = crate::dashboard::entitlements::readable(ctx, staff).await?;
    let policies = crate::dashboard::policies::readable(ctx, staff).await?;
    let (mut query, text) = listing.query(ctx.now)?;
    query.paging.page = page_number;
    let (result, found_by) = find(&api::cx(ctx, staff), query, text.as_ref()).await?;
    // The customers the page's licenses name, for a role that may read them.
    let customers = if staff.may_perform::<crate::app::customers::GetCustomers>() {
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
    let size: u64 = listing.page_size.parse().unwrap_or(25);
    let bulk = bulk::actions(staff);
    let l = &listing;
    let content = html! {
        div.heading {
            h1 { (t("licenses-licenses")) }
            div.actions {
                a.button.secondary href=(l.link("/dashboard/licenses/export", None)) download { (t("licenses-export-csv")) }
                @if staff.may_perform::<crate::app::licenses::CreateLicense>() {
                    a.button href="/dashboard/licenses/new" { (t("licenses-new-license")) }
                }
            }
        }
        form.filters method="get" action="/dashboard/licenses" role="search" {
            div {
                label for="search" { (t("licenses-search")) }
                input #search type="search" name="search" value=(l.search) placeholder=(t("licenses-key-customer-name-e-mail"));
            }
            (page::filter(("product", t("licenses-product"), t("licenses-any-product")), products.iter().map(|p| (p.id, &p.name)), &l.product))
            @if !entitlements.is_empty() {
                (page::filter(("entitlement", t("licenses-entitlement"), t("licenses-any")), entitlements.iter().map(|e| (e.id, &e.code)), &l.entitlement))
            }
            @if !policies.is_empty() {
                (page::filter(("policy", t("licenses-plan"), t("licenses-any")), policies.iter().map(|p| (p.id, &p.name)), &l.policy))
            }
            (page::filter(("status", t("licenses-status"), t("licenses-any")), [("ACTIVE", t("licenses-not-expired")), ("EXPIRED", t("licenses-expired"))], l.state))
            (page::filter(
                ("expirationType", t("licenses-expiration"), t("licenses-any")),
                [("NEVER", t("licenses-never-expires")), ("DATE", t("licenses-date")), ("DURATION", t("licenses-after-duration"))],
                l.kind,
            ))
            (page::filter(("suspended", t("licenses-suspended"), t("licenses-either")), [("true", t("licenses-suspended")), ("false", t("licenses-not-suspended"))], l.suspended))
            (page::filter(("expiring", t("licenses-expiring-within"), t("licenses-any")), [("7", t("licenses-within-7-days")), ("30", t("licenses-within-30-days")), ("90", t("licenses-within-90-days"))], l.expiring))
            (page::filter(("sort", t("licenses-sort"), t("licenses-created")), [("updatedAt", t("licenses-last-changed")), ("expirationDate", t("licenses-expiry")), ("lastActiveAt", t("licenses-last-active"))], l.sort))
            (page::filter(("direction", t("licenses-order"), t("licenses-newest-first")), [("asc", t("licenses-oldest-first"))], l.direction))
            (page::filter(("pageSize", t("licenses-per-page"), "25"), [("10", "10"), ("50", "50"), ("100", "100")], l.page_size))
            div { button type="submit" { (t("licenses-show")) } }
        }
        @if let Some(by) = found_by {
            p.hint {
                @match by {
                    FoundBy::Key => { (tm("licenses-licenses-whose-key-contains-search", &[("search", html! { (l.search) })])) },
                    FoundBy::Customer => { (tm("licenses-licenses-customers-whose-name-e", &[("search", html! { (l.search) })])) },
                    FoundBy::Metadata => { (tm("licenses-licenses-whose-metadata-contains", &[("search", html! { (l.search) })])) },
                    FoundBy::Device => { (tm("licenses-licenses-with-device-named", &[("search", html! { (l.search) })])) },
                }
            }
        }
        form #bulk method="post" action="/dashboard/licenses/bulk" {
            (page::csrf(staff))
            input type="hidden" name="back" value=(l.link("/dashboard/licenses", Some(page_number)));
            (page::table(&["", t("licenses-key"), t("licenses-customer"), t("licenses-status"), t("licenses-products"), t("licenses-expires"), t("licenses-created"), t("licenses-last-active")], None, html! {
                @if result.items.is_empty() {
                    tr { td.empty colspan="8" { (t("licenses-no-licenses-match")) } }
                }
                @for l in &result.items {
                    @let (word, class) = status(l, ctx.now);
                    tr {
                        td.pick {
                            @if !bulk.is_empty() {
                                input type="checkbox" name="id" value=(l.id) aria-label=(tw("licenses-choose", &[("key", Arg::Text(l.license_key.as_str()))]));
                            }
                        }
                        td { a.key href={ "/dashboard/licenses/" (l.id) } { (l.license_key.as_str()) } }
                        td.names { (customers_of(l)) }
                        td { span.badge.(class) { (word) } }
                        td.names { (l.product_ids.iter().map(&product_name).collect::<Vec<_>>().join(", ")) }
                        td { (expiry_text(l)) }
                        td { (page::day(l.created_at)) }
                        td { (l.last_active_at.map(|at| page::when(staff, at)).unwrap_or_else(|| t("licenses-never").into())) }
                    }
                }
            }))
            @if !bulk.is_empty() && !result.items.is_empty() {
                div.bulk {
                    label.choice hidden { input type="checkbox" data-select-all="id"; (t("licenses-choose-all-on-page")) }
                    label for="bulk-action" { (t("licenses-with-licenses-chosen")) }
                    select #bulk-action name="action" {
                        @for (value, words) in &bulk { option value=(value) { (words) } }
                    }
                    button.secondary type="submit" { (t("licenses-apply")) }
                }
            }
        }
        (page::pager(result.total, page_number, size, |n| l.link("/dashboard/licenses", Some(n))))
    };
    Ok(page::layout(
        ctx,
        staff,
        Nav::Licenses,
        t("licenses-licenses"),
        content,
    ))
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
