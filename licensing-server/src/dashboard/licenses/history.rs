//! A license's request history on its page: every client request that reached it, refusals
//! highlighted and said in words, filtered by outcome, code and day, in pages.

use licensing_core::api::requests::{Paging, RequestLogQuery, SortDirection};
use licensing_core::model::{ClientEndpoint, Product, RequestLogEntry};
use licensing_core::{LicenseId, ResultCode, Timestamp};
use maud::{Markup, html};

use super::super::api::{self, Failure};
use super::super::page;
use super::super::{Ctx, Staff};
use crate::app::devices::ListRequests;
use crate::dashboard::words::{t, tm};

/// A result code in a support person's words.
pub(crate) fn code_words(code: ResultCode) -> &'static str {
    match code {
        ResultCode::Valid => t("licenses-history-accepted"),
        ResultCode::InternalServerError => t("licenses-history-server-error"),
        ResultCode::BadRequest => t("licenses-history-malformed-request"),
        ResultCode::LicenseNotFound => t("licenses-history-license-not-found"),
        ResultCode::IpLimitReached => t("licenses-history-address-limit-reached"),
        ResultCode::HwidLimitReached => t("licenses-history-device-limit-reached"),
        ResultCode::ProductNotFound => t("licenses-history-product-not-licensed"),
        ResultCode::CustomerNotFound => t("licenses-history-wrong-customer"),
        ResultCode::LicenseExpired => t("licenses-history-license-expired"),
        ResultCode::LicenseSuspended => t("licenses-history-license-suspended"),
        ResultCode::TeamNotFound => t("licenses-history-team-not-found"),
        ResultCode::RateLimit => t("licenses-history-too-many-requests"),
        ResultCode::HardwareIdentifierBlacklisted => t("licenses-history-device-blacklisted"),
        ResultCode::CountryBlacklisted => t("licenses-history-country-blacklisted"),
        ResultCode::IpBlacklisted => t("licenses-history-address-blacklisted"),
        ResultCode::ReleaseNotFound => t("licenses-history-release-not-found"),
        ResultCode::Forbidden => t("licenses-history-not-allowed"),
        ResultCode::Unauthorized => t("licenses-history-not-signed"),
        ResultCode::InvalidSessionKey => t("licenses-history-bad-session-key"),
        ResultCode::NoAccessToRelease => t("licenses-history-release-not-granted"),
        ResultCode::ReleaseArchived => t("licenses-history-release-archived"),
        ResultCode::ReleaseDraft => t("licenses-history-release-still-draft"),
        ResultCode::EntitlementsMissing => t("licenses-history-entitlement-missing"),
        ResultCode::SessionLimitReached => t("licenses-history-all-seats-use"),
        ResultCode::SessionNotFound => t("licenses-history-session-not-found"),
        ResultCode::IdempotencyKeyMismatch => t("licenses-history-retried-with-other-content"),
        ResultCode::IdempotencyKeyInUse => t("licenses-history-retried-too-soon"),
        ResultCode::SigningKeyNotFound => t("licenses-history-signing-key-not-found"),
        ResultCode::Conflict => t("licenses-history-conflicting-change"),
        ResultCode::ArtifactNotFound => t("licenses-history-download-not-found"),
        ResultCode::ReleaseYanked => t("licenses-history-release-withdrawn"),
        ResultCode::UsageLimitReached => t("licenses-history-usage-limit-reached"),
        ResultCode::MeterNotFound => t("licenses-history-meter-not-found"),
    }
}

/// The refusals a license's history can hold: those the client API answers once it has found
/// the license (a request refused before, for its rate, its team or its body, names no
/// license).
const LICENSE_REFUSALS: [ResultCode; 22] = [
    ResultCode::LicenseSuspended,
    ResultCode::LicenseExpired,
    ResultCode::HwidLimitReached,
    ResultCode::IpLimitReached,
    ResultCode::SessionLimitReached,
    ResultCode::SessionNotFound,
    ResultCode::ProductNotFound,
    ResultCode::CustomerNotFound,
    ResultCode::EntitlementsMissing,
    ResultCode::UsageLimitReached,
    ResultCode::MeterNotFound,
    ResultCode::HardwareIdentifierBlacklisted,
    ResultCode::IpBlacklisted,
    ResultCode::CountryBlacklisted,
    ResultCode::ReleaseNotFound,
    ResultCode::NoAccessToRelease,
    ResultCode::ReleaseArchived,
    ResultCode::ReleaseDraft,
    ResultCode::ReleaseYanked,
    ResultCode::ArtifactNotFound,
    ResultCode::InvalidSessionKey,
    ResultCode::BadRequest,
];

/// An endpoint in words.
fn endpoint_words(endpoint: ClientEndpoint) -> &'static str {
    match endpoint {
        ClientEndpoint::Verify => t("licenses-history-verify"),
        ClientEndpoint::Heartbeat => t("licenses-history-heartbeat"),
        ClientEndpoint::Classloader => t("licenses-history-download"),
        ClientEndpoint::Checkout => t("licenses-history-license-file"),
        ClientEndpoint::SessionStart => t("licenses-history-session-start"),
        ClientEndpoint::SessionEnd => t("licenses-history-session-end"),
        ClientEndpoint::UpdateCheck => t("licenses-history-update-check"),
        ClientEndpoint::Download => t("licenses-history-update-download"),
        ClientEndpoint::Usage => t("licenses-history-usage"),
    }
}

/// The filters the page's query asks for (`requests`, `code`, `day`, `requestsPage`): what a
/// value the list does not know is dropped, as if not chosen.
struct Chosen {
    outcome: &'static str,
    code: Option<ResultCode>,
    /// A day in the reader's time zone, `YYYY-MM-DD`, its first moment and the next day's.
    day: Option<(String, Timestamp, Timestamp)>,
    page: u32,
}

impl Chosen {
    fn of(ctx: &Ctx, zone: chrono_tz::Tz) -> Self {
        let outcome = match ctx.param("requests").as_deref() {
            Some("refused") => "refused",
            Some("accepted") => "accepted",
            _ => "",
        };
        let code = ctx
            .param("code")
            .and_then(|c| ResultCode::ALL.into_iter().find(|k| k.as_str() == c));
        let day = ctx.param("day").and_then(|d| {
            let date = chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()?;
            let start = day_start(zone, date)?;
            let end = day_start(zone, date.succ_opt()?)?;
            Some((d, start, end))
        });
        let page = ctx
            .param("requestsPage")
            .and_then(|p| p.parse().ok())
            .filter(|p| (1..=100_000).contains(p))
            .unwrap_or(1);
        Self {
            outcome,
            code,
            day,
            page,
        }
    }

    fn query(&self) -> RequestLogQuery {
        let day = self.day.as_ref().map(|&(_, from, to)| (from, to));
        RequestLogQuery {
            paging: Paging {
                page: self.page,
                page_size: 25,
                direction: SortDirection::Desc,
            },
            code: self.code,
            refused: match self.outcome {
                "refused" => Some(true),
                "accepted" => Some(false),
                _ => None,
            },
            endpoint: None,
            from: day.map(|(from, _)| from),
            to: day.map(|(_, to)| to),
        }
    }

    /// The license page's address with these filters and page `page`.
    fn link(&self, license: LicenseId, page: u32) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        if !self.outcome.is_empty() {
            q.append_pair("requests", self.outcome);
        }
        if let Some(code) = self.code {
            q.append_pair("code", code.as_str());
        }
        if let Some((day, _, _)) = &self.day {
            q.append_pair("day", day);
        }
        q.append_pair("requestsPage", &page.to_string());
        format!("/dashboard/licenses/{license}?{}#requests", q.finish())
    }
}

/// The first moment of `date` in `zone` (the earliest, where a clock change repeats it; the
/// first after, where one skips it).
fn day_start(zone: chrono_tz::Tz, date: chrono::NaiveDate) -> Option<Timestamp> {
    use chrono::TimeZone as _;
    let midnight = date.and_hms_opt(0, 0, 0)?;
    let at = zone.from_local_datetime(&midnight).earliest().or_else(|| {
        // Midnight skipped by a clock change: the day starts an hour later.
        zone.from_local_datetime(&(midnight + chrono::Duration::hours(1)))
            .earliest()
    })?;
    Some(Timestamp::from_millis(at.timestamp_millis()))
}

/// What each device of a license is called ([`Hwid::label`]), by identifier.
///
/// [`Hwid::label`]: licensing_core::model::Hwid::label
pub(crate) type DeviceNames = std::collections::HashMap<String, String>;

/// A device's cell: what it is called, when its client said, over its identifier.
pub(crate) fn device_cell(names: &DeviceNames, identifier: &str) -> Markup {
    html! {
        @if let Some(label) = names.get(identifier) {
            span.device-name { (label) }
            br;
        }
        span.mono { (identifier) }
    }
}

/// The section: filters, the table (refusals highlighted) and the pager.
pub(crate) async fn section(
    ctx: &Ctx,
    staff: &Staff,
    license: LicenseId,
    products: &[Product],
    names: &DeviceNames,
) -> Result<Markup, Failure> {
    let zone = page::zone(staff);
    let chosen = Chosen::of(ctx, zone);
    let result = api::perform(ctx, staff, ListRequests(license, chosen.query())).await?;
    let product_name = |id: licensing_core::ProductId| {
        products
            .iter()
            .find(|p| p.id == id)
            .map_or_else(|| id.to_string(), |p| p.name.clone())
    };
    let retention = ctx.state.request_log.retention();
    let filtered = !chosen.outcome.is_empty() || chosen.code.is_some() || chosen.day.is_some();
    Ok(html! {
        h2 #requests { (t("licenses-history-requests")) }
        @if !ctx.state.request_log.on() {
            p.hint { (t("licenses-history-server-keeps-no-request-history")) }
        } @else {
            p.hint {
                (tm("licenses-history-every-request-application-made-with", &[("days", html! { (page::counted(retention.days, "count-days")) })]))
            }
            form.filters method="get" action={ "/dashboard/licenses/" (license) "#requests" } {
                (page::filter(("requests", t("licenses-history-outcome"), t("licenses-history-any")), [("refused", t("licenses-history-refused")), ("accepted", t("licenses-history-accepted"))], chosen.outcome))
                (page::filter(
                    ("code", t("licenses-history-reason"), t("licenses-history-any")),
                    LICENSE_REFUSALS.into_iter().map(|c| (c.as_str(), code_words(c))),
                    chosen.code.map_or("", ResultCode::as_str),
                ))
                div {
                    label for="day" { (t("licenses-history-day")) span.hint { (zone.name()) } }
                    input #day type="date" name="day" value=(chosen.day.as_ref().map_or("", |(d, _, _)| d.as_str()));
                }
                div { button type="submit" { (t("licenses-history-show")) } }
            }
            div.history { (page::table(&[t("licenses-history-time"), t("licenses-history-request"), t("licenses-history-result"), t("licenses-history-device"), t("licenses-history-address"), t("licenses-history-product"), t("licenses-history-version")], None, html! {
                @if result.items.is_empty() {
                    tr { td.empty colspan="7" {
                        @if filtered { (t("licenses-history-no-request-matches")) } @else { (t("licenses-history-no-request-has-reached-license")) }
                    } }
                }
                @for e in &result.items {
                    (row(staff, e, &product_name, names))
                }
            })) }
            nav.pager aria-label=(t("licenses-history-request-pages")) {
                @if result.total > 0 {
                    span { (page::counted(result.total, "count-requests")) }
                }
                @if chosen.page > 1 {
                    a href=(chosen.link(license, chosen.page - 1)) rel="prev" { (t("licenses-history-newer")) }
                }
                @if result.has_next_page {
                    a href=(chosen.link(license, chosen.page + 1)) rel="next" { (t("licenses-history-older")) }
                }
            }
        }
    })
}

fn row(
    staff: &Staff,
    e: &RequestLogEntry,
    product_name: &dyn Fn(licensing_core::ProductId) -> String,
    names: &DeviceNames,
) -> Markup {
    let refused = e.refused();
    html! {
        tr.refused[refused] {
            td.nowrap {
                (page::when_exact(staff, e.at))
                @if e.count > 1 {
                    br;
                    span.hint {
                        (tm("licenses-history-count-map", &[("count", html! { (e.count) }), ("map", html! { (e.last_at.map(|l| l.as_datetime().with_timezone(&page::zone(staff)).format("%H:%M:%S").to_string()).unwrap_or_default()) })]))
                    }
                }
            }
            td data-label=(t("licenses-history-request")) { (endpoint_words(e.endpoint)) }
            td data-label=(t("licenses-history-result")) {
                @if refused {
                    span.badge.bad title=(e.code.as_str()) { (code_words(e.code)) }
                } @else {
                    span.badge.ok { (code_words(e.code)) }
                }
            }
            td data-label=(t("licenses-history-device")) {
                @match e.hardware_identifier.as_deref() {
                    Some(identifier) => { (device_cell(names, identifier)) },
                    None => { "—" },
                }
            }
            td.mono data-label=(t("licenses-history-address")) {
                (e.ip_address)
                @if let Some(code) = &e.country {
                    " ("
                    @match licensing_core::validate::Country::from_code(code) {
                        Ok(country) => { abbr title=(code) { (country.name) } },
                        Err(_) => { (code) },
                    }
                    ")"
                }
            }
            td data-label=(t("licenses-history-product")) { (e.product_id.map(product_name).unwrap_or_else(|| "—".into())) }
            td data-label=(t("licenses-history-version")) { (e.version.as_deref().unwrap_or("—")) }
        }
    }
}
