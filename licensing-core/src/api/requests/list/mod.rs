use std::borrow::Cow;

use super::{finish, id_list, int_in, one_of};
use crate::Timestamp;
use crate::error::{ApiError, Validator};
use crate::model::{ExpirationType, ReleaseStatus};
use crate::validate::{SearchText, check_length};
use crate::{CustomerId, EntitlementId, PolicyId, ProductId};

/// A parsed query string: known parameters only, each at most once.
pub(crate) struct Query<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Query<'a> {
    /// Parses `raw`, recording unknown and repeated parameters in `v`.
    pub(crate) fn parse(raw: &'a str, known: &[&str], v: &mut Validator) -> Self {
        Self::parse_with(raw, known, v, false)
    }

    /// Parses `raw` as a GET that clients build by hand: unknown parameters (a tracking
    /// parameter a client appends) are ignored, and an empty value is no value; a known one
    /// given twice is still recorded in `v`.
    pub(crate) fn parse_lenient(raw: &'a str, known: &[&str], v: &mut Validator) -> Self {
        Self::parse_with(raw, known, v, true)
    }

    fn parse_with(raw: &'a str, known: &[&str], v: &mut Validator, lenient: bool) -> Self {
        let mut pairs: Vec<(Cow<'a, str>, Cow<'a, str>)> = Vec::new();
        if let Err(problem) = check_encoding(raw) {
            // Lenient decoding would turn `%ff` into U+FFFD and `%` into itself, so a filter
            // would silently search for something else than was sent.
            v.push("query", problem);
            return Self { pairs };
        }
        for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
            let known_name = known.contains(&name.as_ref());
            if lenient && (!known_name || value.is_empty()) {
                continue;
            }
            if !known_name {
                v.push(
                    name.as_ref(),
                    format!(
                        "is not a known query parameter here (known: {})",
                        known.join(", ")
                    ),
                );
            } else if pairs.iter().any(|(n, _)| *n == name) {
                v.push(name.as_ref(), "is given more than once");
            } else {
                pairs.push((name, value));
            }
        }
        Self { pairs }
    }

    /// The value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_ref())
    }
}

/// Sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortDirection {
    /// Smallest first.
    Asc,
    /// Largest first (the default).
    #[default]
    Desc,
}

/// Page, page size and direction of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Paging {
    /// 1-based page number.
    pub page: u32,
    /// Items per page: 10, 25, 50 or 100.
    pub page_size: u32,
    /// Sort direction.
    pub direction: SortDirection,
}

impl Default for Paging {
    fn default() -> Self {
        Self {
            page: 1,
            page_size: 25,
            direction: SortDirection::Desc,
        }
    }
}

impl Paging {
    /// The query string `parse_paging_query` reads back (what the SDK sends).
    pub fn to_query_string(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("page", &self.page.to_string())
            .append_pair("pageSize", &self.page_size.to_string())
            .append_pair(
                "sortDirection",
                match self.direction {
                    SortDirection::Asc => "asc",
                    SortDirection::Desc => "desc",
                },
            )
            .finish()
    }

    /// Items to skip.
    pub fn offset(&self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.page_size)
    }

    /// Cuts one page out of an already sorted sequence: the items and whether more follow.
    pub fn slice<T>(&self, sorted: impl IntoIterator<Item = T>) -> (Vec<T>, bool) {
        let offset = usize::try_from(self.offset()).unwrap_or(usize::MAX);
        let size = self.page_size as usize;
        let mut rest = sorted.into_iter().skip(offset);
        let items: Vec<T> = rest.by_ref().take(size).collect();
        let more = rest.next().is_some();
        (items, more)
    }

    pub(crate) fn parse(q: &Query<'_>, v: &mut Validator) -> Self {
        let mut paging = Self::default();
        if let Some(text) = q.get("page") {
            match text.parse::<u32>() {
                Ok(page) if (1..=1_000_000).contains(&page) => paging.page = page,
                _ => v.push("page", "must be an integer from 1 to 1000000"),
            }
        }
        if let Some(text) = q.get("pageSize") {
            match text {
                "10" | "25" | "50" | "100" => paging.page_size = text.parse().unwrap_or(25),
                _ => v.push("pageSize", "must be one of 10, 25, 50, 100"),
            }
        }
        if let Some(text) = q.get("sortDirection") {
            match text {
                "asc" => paging.direction = SortDirection::Asc,
                "desc" => paging.direction = SortDirection::Desc,
                _ => v.push("sortDirection", "must be one of asc, desc"),
            }
        }
        paging
    }
}

/// The `from` (inclusive) and `to` (exclusive) times of a log's query, RFC 3339; `to` before
/// `from` is refused.
pub(crate) fn time_range(
    q: &Query<'_>,
    v: &mut Validator,
) -> (Option<Timestamp>, Option<Timestamp>) {
    let mut time = |name: &str| {
        v.optional(name, q.get(name), |t| {
            Timestamp::parse(t)
                .map_err(|_| "must be an RFC 3339 date-time, such as 2026-11-23T00:00:00Z")
        })
        .flatten()
    };
    let (from, to) = (time("from"), time("to"));
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        v.push("to", "must not be before from");
    }
    (from, to)
}

const PAGING: [&str; 4] = ["page", "pageSize", "sortColumn", "sortDirection"];

pub(crate) fn known(extra: &[&'static str]) -> Vec<&'static str> {
    PAGING.iter().chain(extra).copied().collect()
}

fn sort<T: Copy>(q: &Query<'_>, v: &mut Validator, options: &[(&str, T)], default: T) -> T {
    match q.get("sortColumn") {
        None => default,
        Some(text) => v
            .check("sortColumn", one_of(text, options))
            .unwrap_or(default),
    }
}

/// A validated list query of one endpoint: paging, sort column and filters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListQuery<S, F> {
    /// Page, size, direction.
    pub paging: Paging,
    /// Sort column.
    pub sort: S,
    /// Endpoint-specific filters.
    pub filter: F,
}

/// Sort columns of the license list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum LicenseSort {
    CreatedAt,
    UpdatedAt,
    /// (ext) The expiration date; licenses without one (never expiring, or not yet started)
    /// come last in either direction.
    ExpirationDate,
    /// (ext) When a client last used the license; licenses never used come last in either
    /// direction.
    LastActiveAt,
}

/// Filters of the license list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LicenseFilter {
    /// Licenses with any of these products.
    pub product_ids: Vec<ProductId>,
    /// Licenses with any of these customers.
    pub customer_ids: Vec<CustomerId>,
    /// Part of the license key, case-insensitive.
    pub search: Option<SearchText>,
    /// A metadata key that must be present ...
    pub metadata_key: Option<String>,
    /// ... with a value containing this text.
    pub metadata_value: Option<String>,
    /// Licenses expired, or not, at a moment (`status`).
    pub expiry: Option<ExpiryFilter>,
    /// Licenses of this expiration type.
    pub expiration_type: Option<ExpirationType>,
    /// Suspended licenses, or the others.
    pub suspended: Option<bool>,
    /// (ext) Licenses that grant this entitlement, themselves or through a product.
    pub entitlement: Option<EntitlementFilter>,
    /// (ext) Licenses on this policy (`policyId`).
    pub policy_id: Option<PolicyId>,
    /// (ext) The team's policies that grant one of `product_ids` (filled in by the server
    /// before the store reads): a license on one of them has one of the products too.
    pub product_policies: Vec<PolicyId>,
    /// (ext) Licenses with a customer whose name, e-mail address or user name contains this,
    /// case-insensitively (`customerSearch`; stores resolve the customers, so
    /// [`license_matches`](crate::store::license_matches) leaves it out).
    pub customer_search: Option<SearchText>,
    /// (ext) Licenses with a metadata value (of any key) that contains this, case-insensitively
    /// (`metadataSearch`: an order number finds its license).
    pub metadata_search: Option<SearchText>,
    /// (ext) Licenses with a device whose name or platform contains this, case-insensitively,
    /// or whose hardware identifier is this (`deviceSearch`; stores read the devices, so
    /// [`license_matches`](crate::store::license_matches) leaves it out).
    pub device_search: Option<SearchText>,
    /// (ext) Licenses not expired yet that expire within some days (`expiresWithinDays`).
    pub expires_within: Option<ExpiresWithin>,
}

/// The license list's `expiresWithinDays` filter: licenses whose expiration date is after `at`
/// and at most `days` days later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiresWithin {
    /// Days ahead: 1 to 3650.
    pub days: u32,
    /// The moment counted from: when the request was parsed, unless the server sets its own
    /// clock's reading.
    pub at: Timestamp,
}

impl ExpiresWithin {
    /// The latest expiration date that passes.
    pub fn until(self) -> Timestamp {
        Timestamp::from_millis(
            self.at
                .as_millis()
                .saturating_add(i64::from(self.days) * 86_400_000),
        )
    }

    /// Whether a license expiring at `date` passes.
    pub fn contains(self, date: Option<Timestamp>) -> bool {
        date.is_some_and(|d| d > self.at && d <= self.until())
    }
}

/// The license list's `entitlementId` filter: licenses that list the entitlement, or have one
/// of the products that grant it (which the server fills in before the store reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntitlementFilter {
    /// The entitlement.
    pub id: EntitlementId,
    /// The team's products that grant it.
    pub products: Vec<ProductId>,
    /// (ext) The team's policies that grant it, themselves or through one of their products.
    pub policies: Vec<PolicyId>,
}

/// The license list's `status` filter: `EXPIRED` licenses (their expiry date has passed at `at`)
/// or `ACTIVE` ones (the others, suspended or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryFilter {
    /// `true` for `EXPIRED`, `false` for `ACTIVE`.
    pub expired: bool,
    /// The moment the status is taken at: when the request was parsed, unless the server sets
    /// its own clock's reading.
    pub at: Timestamp,
}

impl ExpiryFilter {
    /// The wire spelling of `status`.
    pub const fn as_str(self) -> &'static str {
        if self.expired { "EXPIRED" } else { "ACTIVE" }
    }
}

/// `GET {dev}/licenses`.
pub type LicenseListQuery = ListQuery<LicenseSort, LicenseFilter>;

impl LicenseListQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(
            raw,
            &known(&[
                "productIds",
                "customerIds",
                "search",
                "metadataKey",
                "metadataValue",
                "status",
                "expirationType",
                "suspended",
                "entitlementId",
                "customerSearch",
                "policyId",
                "metadataSearch",
                "deviceSearch",
                "expiresWithinDays",
            ]),
            &mut v,
        );
        let paging = Paging::parse(&q, &mut v);
        let sort = sort(&q, &mut v, LicenseSort::OPTIONS, LicenseSort::DEFAULT);
        let product_ids = comma_ids(&q, &mut v, "productIds");
        let customer_ids = comma_ids(&q, &mut v, "customerIds");
        let search = v
            .optional("search", q.get("search"), SearchText::parse)
            .flatten();
        let customer_search = v
            .optional("customerSearch", q.get("customerSearch"), SearchText::parse)
            .flatten();
        let metadata_search = v
            .optional("metadataSearch", q.get("metadataSearch"), SearchText::parse)
            .flatten();
        let device_search = v
            .optional("deviceSearch", q.get("deviceSearch"), SearchText::parse)
            .flatten();
        let expires_within = v
            .optional("expiresWithinDays", q.get("expiresWithinDays"), |t| {
                t.parse::<i64>()
                    .map_err(|_| "must be a whole number of days, 1 to 3650".to_owned())
                    .and_then(|d| int_in(d, 1, 3650))
            })
            .flatten()
            .map(|days| ExpiresWithin {
                days,
                at: Timestamp::now(),
            });
        let metadata_key = v
            .optional("metadataKey", q.get("metadataKey"), |t| {
                check_length(t, 1, 255).map(|()| t.to_owned())
            })
            .flatten();
        let metadata_value = v
            .optional("metadataValue", q.get("metadataValue"), |t| {
                check_length(t, 1, 1000).map(|()| t.to_owned())
            })
            .flatten();
        if metadata_value.is_some() && q.get("metadataKey").is_none() {
            v.push("metadataValue", "needs metadataKey");
        }
        let expiry = v
            .optional("status", q.get("status"), |t| match t {
                "ACTIVE" => Ok(false),
                "EXPIRED" => Ok(true),
                _ => Err("must be one of ACTIVE, EXPIRED"),
            })
            .flatten()
            .map(|expired| ExpiryFilter {
                expired,
                at: Timestamp::now(),
            });
        let expiration_type = v
            .optional(
                "expirationType",
                q.get("expirationType"),
                ExpirationType::parse,
            )
            .flatten();
        let suspended = v
            .optional("suspended", q.get("suspended"), boolean)
            .flatten();
        let entitlement = v
            .optional(
                "entitlementId",
                q.get("entitlementId"),
                EntitlementId::parse,
            )
            .flatten()
            .map(|id| EntitlementFilter {
                id,
                products: Vec::new(),
                policies: Vec::new(),
            });
        let policy_id = v
            .optional("policyId", q.get("policyId"), PolicyId::parse)
            .flatten();
        finish(v)?;
        Ok(Self {
            paging,
            sort,
            filter: LicenseFilter {
                policy_id,
                product_policies: Vec::new(),
                product_ids,
                customer_ids,
                search,
                metadata_key,
                metadata_value,
                expiry,
                expiration_type,
                suspended,
                entitlement,
                customer_search,
                metadata_search,
                device_search,
                expires_within,
            },
        })
    }
}

fn boolean(text: &str) -> Result<bool, &'static str> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("must be true or false"),
    }
}

fn comma_ids<Id: From<uuid::Uuid> + PartialEq>(
    q: &Query<'_>,
    v: &mut Validator,
    name: &str,
) -> Vec<Id> {
    match q.get(name) {
        None => Vec::new(),
        Some(text) => {
            let parts: Vec<String> = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            id_list(v, name, &parts, super::MAX_IDS)
        }
    }
}

/// Sort columns of the customer list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CustomerSort {
    FullName,
    CreatedAt,
    UpdatedAt,
    Email,
    Username,
}

/// `GET {dev}/customers`: the filter is the search text.
pub type CustomerListQuery = ListQuery<CustomerSort, Option<SearchText>>;

/// A list whose only filter is a search text (customers, entitlements).
impl<S: SortColumn> ListQuery<S, Option<SearchText>> {
    /// Parses the query string: paging, sort and `search`.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &known(&["search"]), &mut v);
        let paging = Paging::parse(&q, &mut v);
        let sort = sort(&q, &mut v, S::OPTIONS, S::DEFAULT);
        let search = v
            .optional("search", q.get("search"), SearchText::parse)
            .flatten();
        finish(v)?;
        Ok(Self {
            paging,
            sort,
            filter: search,
        })
    }
}

/// Sort columns of the entitlement list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum EntitlementSort {
    Name,
    Code,
    CreatedAt,
}

/// (ext) `GET {dev}/entitlements`: the filter is the search text (in the name or the code).
pub type EntitlementListQuery = ListQuery<EntitlementSort, Option<SearchText>>;

/// Sort columns of the policy list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum PolicySort {
    Name,
    CreatedAt,
}

/// (ext) `GET {dev}/policies`: the filter is the search text (in the name).
pub type PolicyListQuery = ListQuery<PolicySort, Option<SearchText>>;

/// Sort columns of the release list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReleaseSort {
    Version,
    CreatedAt,
    UpdatedAt,
    Latest,
}

/// Filters of the release list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReleaseFilter {
    /// Releases of this product.
    pub product_id: Option<ProductId>,
    /// Part of the version, case-insensitive.
    pub search: Option<SearchText>,
    /// Releases with this status.
    pub status: Option<ReleaseStatus>,
    /// Only releases of these products (not a query parameter: the products of a restricted API
    /// key); `None`: every product.
    pub within_products: Option<Vec<ProductId>>,
}

/// `GET {dev}/releases`.
pub type ReleaseListQuery = ListQuery<ReleaseSort, ReleaseFilter>;

impl ReleaseListQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &known(&["productId", "search", "status"]), &mut v);
        let paging = Paging::parse(&q, &mut v);
        let sort = sort(&q, &mut v, ReleaseSort::OPTIONS, ReleaseSort::DEFAULT);
        let product_id = v
            .optional("productId", q.get("productId"), ProductId::parse)
            .flatten();
        let search = v
            .optional("search", q.get("search"), SearchText::parse)
            .flatten();
        let status = v
            .optional("status", q.get("status"), ReleaseStatus::parse)
            .flatten();
        finish(v)?;
        Ok(Self {
            paging,
            sort,
            filter: ReleaseFilter {
                product_id,
                search,
                status,
                within_products: None,
            },
        })
    }
}

/// Sort columns of the hardware-identifier and IP-address lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum DeviceSort {
    LastSeenAt,
    CreatedAt,
}

/// `GET {dev}/licenses/id/{id}/hwid` and `/ip-address`: the filter is `showForgotten`.
pub type DeviceListQuery = ListQuery<DeviceSort, bool>;

impl DeviceListQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &known(&["showForgotten"]), &mut v);
        let paging = Paging::parse(&q, &mut v);
        let sort = sort(&q, &mut v, DeviceSort::OPTIONS, DeviceSort::DEFAULT);
        let show_forgotten = v
            .optional("showForgotten", q.get("showForgotten"), boolean)
            .flatten()
            .unwrap_or(false);
        finish(v)?;
        Ok(Self {
            paging,
            sort,
            filter: show_forgotten,
        })
    }
}

/// Sort columns of the product list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ProductSort {
    Name,
    CreatedAt,
    UpdatedAt,
}

/// What the product list is narrowed to: not a query parameter, but the products of the API key
/// that asks, when it is restricted to some.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProductFilter {
    /// Only these products; `None`: all of the team's.
    pub within: Option<Vec<ProductId>>,
}

/// `GET {dev}/products` (ext).
pub type ProductListQuery = ListQuery<ProductSort, ProductFilter>;

impl ProductListQuery {
    /// Parses the query string.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut v = Validator::new();
        let q = Query::parse(raw, &known(&[]), &mut v);
        let paging = Paging::parse(&q, &mut v);
        let sort = sort(&q, &mut v, ProductSort::OPTIONS, ProductSort::DEFAULT);
        finish(v)?;
        Ok(Self {
            paging,
            sort,
            filter: ProductFilter::default(),
        })
    }
}

/// A list's sort column: its wire names and its default.
pub trait SortColumn: Copy + PartialEq + Sized + 'static {
    /// Every column with its wire name.
    const OPTIONS: &'static [(&'static str, Self)];
    /// The column used when none is given.
    const DEFAULT: Self;

    /// The wire name.
    fn name(self) -> &'static str {
        Self::OPTIONS
            .iter()
            .find(|(_, column)| *column == self)
            .map_or("createdAt", |(name, _)| *name)
    }
}

/// A list's filters, written back as query parameters (what the SDK sends).
pub trait QueryFilter {
    /// Appends the filters that are set.
    fn append_to(&self, query: &mut form_urlencoded::Serializer<'_, String>);
}

impl QueryFilter for () {
    fn append_to(&self, _: &mut form_urlencoded::Serializer<'_, String>) {}
}

impl QueryFilter for ProductFilter {
    /// Nothing: the restriction is the server's, not the client's.
    fn append_to(&self, _: &mut form_urlencoded::Serializer<'_, String>) {}
}

impl QueryFilter for bool {
    /// `showForgotten`.
    fn append_to(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        if *self {
            query.append_pair("showForgotten", "true");
        }
    }
}

impl QueryFilter for Option<SearchText> {
    /// `search`.
    fn append_to(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        if let Some(search) = self {
            query.append_pair("search", search.as_str());
        }
    }
}

impl QueryFilter for LicenseFilter {
    fn append_to(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        let join = |ids: Vec<String>| ids.join(",");
        if !self.product_ids.is_empty() {
            query.append_pair(
                "productIds",
                &join(self.product_ids.iter().map(ToString::to_string).collect()),
            );
        }
        if !self.customer_ids.is_empty() {
            query.append_pair(
                "customerIds",
                &join(self.customer_ids.iter().map(ToString::to_string).collect()),
            );
        }
        self.search.append_to(query);
        if let Some(key) = &self.metadata_key {
            query.append_pair("metadataKey", key);
        }
        if let Some(value) = &self.metadata_value {
            query.append_pair("metadataValue", value);
        }
        if let Some(expiry) = self.expiry {
            query.append_pair("status", expiry.as_str());
        }
        if let Some(kind) = self.expiration_type {
            query.append_pair("expirationType", kind.as_str());
        }
        if let Some(suspended) = self.suspended {
            query.append_pair("suspended", if suspended { "true" } else { "false" });
        }
        if let Some(policy) = &self.policy_id {
            query.append_pair("policyId", &policy.to_string());
        }
        if let Some(entitlement) = &self.entitlement {
            query.append_pair("entitlementId", &entitlement.id.to_string());
        }
        if let Some(text) = &self.customer_search {
            query.append_pair("customerSearch", text.as_str());
        }
        if let Some(text) = &self.metadata_search {
            query.append_pair("metadataSearch", text.as_str());
        }
        if let Some(text) = &self.device_search {
            query.append_pair("deviceSearch", text.as_str());
        }
        if let Some(within) = self.expires_within {
            query.append_pair("expiresWithinDays", &within.days.to_string());
        }
    }
}

impl QueryFilter for ReleaseFilter {
    fn append_to(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        if let Some(product) = &self.product_id {
            query.append_pair("productId", &product.to_string());
        }
        self.search.append_to(query);
        if let Some(status) = self.status {
            query.append_pair("status", status.as_str());
        }
    }
}

impl<S: SortColumn, F: Default> Default for ListQuery<S, F> {
    /// Page 1 of 25, the default column, descending, no filters.
    fn default() -> Self {
        Self {
            paging: Paging::default(),
            sort: S::DEFAULT,
            filter: F::default(),
        }
    }
}

impl<S: SortColumn, F: QueryFilter> ListQuery<S, F> {
    /// The query string that [`Self`]'s `parse` reads back (what the SDK sends).
    pub fn to_query_string(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("page", &self.paging.page.to_string())
            .append_pair("pageSize", &self.paging.page_size.to_string())
            .append_pair("sortColumn", self.sort.name())
            .append_pair(
                "sortDirection",
                match self.paging.direction {
                    SortDirection::Asc => "asc",
                    SortDirection::Desc => "desc",
                },
            );
        self.filter.append_to(&mut query);
        query.finish()
    }
}

impl SortColumn for LicenseSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("expirationDate", Self::ExpirationDate),
        ("lastActiveAt", Self::LastActiveAt),
    ];
    const DEFAULT: Self = Self::CreatedAt;
}

impl SortColumn for CustomerSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("fullName", Self::FullName),
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("email", Self::Email),
        ("username", Self::Username),
    ];
    const DEFAULT: Self = Self::CreatedAt;
}

impl SortColumn for EntitlementSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("name", Self::Name),
        ("code", Self::Code),
        ("createdAt", Self::CreatedAt),
    ];
    const DEFAULT: Self = Self::CreatedAt;
}

impl SortColumn for PolicySort {
    const OPTIONS: &'static [(&'static str, Self)] =
        &[("name", Self::Name), ("createdAt", Self::CreatedAt)];
    const DEFAULT: Self = Self::CreatedAt;
}

impl SortColumn for ReleaseSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("version", Self::Version),
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("latest", Self::Latest),
    ];
    const DEFAULT: Self = Self::CreatedAt;
}

impl SortColumn for DeviceSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("lastSeenAt", Self::LastSeenAt),
        ("createdAt", Self::CreatedAt),
    ];
    const DEFAULT: Self = Self::LastSeenAt;
}

impl SortColumn for ProductSort {
    const OPTIONS: &'static [(&'static str, Self)] = &[
        ("name", Self::Name),
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
    ];
    const DEFAULT: Self = Self::CreatedAt;
}

/// Checks that a raw query string is well-formed percent-encoding of UTF-8 text: every `%` is
/// followed by two hex digits, and the decoded bytes are UTF-8.
pub(crate) fn check_encoding(raw: &str) -> Result<(), String> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let digit = |k: usize| bytes.get(k).and_then(|&b| char::from(b).to_digit(16));
                let (Some(high), Some(low)) = (digit(i + 1), digit(i + 2)) else {
                    return Err(format!(
                        "has invalid percent-encoding at character {}: every % must be followed by two hex digits (write a literal % as %25)",
                        i + 1
                    ));
                };
                let byte = (high * 16 + low) as u8;
                decoded.push(byte);
                i += 3;
            }
            b => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    std::str::from_utf8(&decoded).map(|_| ()).map_err(|_| {
        "does not decode to UTF-8 text: percent-encode the UTF-8 bytes of each character".into()
    })
}

/// For endpoints that take no query parameters: any parameter is an error naming it.
pub fn parse_no_query(raw: &str) -> Result<(), ApiError> {
    let mut v = Validator::new();
    if let Err(problem) = check_encoding(raw) {
        v.push("query", problem);
        return finish(v);
    }
    for (name, _) in form_urlencoded::parse(raw.as_bytes()) {
        v.push(
            name.as_ref(),
            "is not a known query parameter: this endpoint takes none",
        );
    }
    finish(v)
}

#[cfg(test)]
mod tests;
