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

/// A result code in a support person's words.
pub(crate) fn code_words(code: ResultCode) -> &'static str {
    match code {
        ResultCode::Valid => "Accepted",
        ResultCode::InternalServerError => "Server error",
        ResultCode::BadRequest => "Malformed request",
        ResultCode::LicenseNotFound => "License not found",
        ResultCode::IpLimitReached => "Address limit reached",
        ResultCode::HwidLimitReached => "Device limit reached",
        ResultCode::ProductNotFound => "Product not licensed",
        ResultCode::CustomerNotFound => "Wrong customer",
        ResultCode::LicenseExpired => "License expired",
        ResultCode::LicenseSuspended => "License suspended",
        ResultCode::TeamNotFound => "Team not found",
        ResultCode::RateLimit => "Too many requests",
        ResultCode::HardwareIdentifierBlacklisted => "Device blacklisted",
        ResultCode::CountryBlacklisted => "Country blacklisted",
        ResultCode::IpBlacklisted => "Address blacklisted",
        ResultCode::ReleaseNotFound => "Release not found",
        ResultCode::Forbidden => "Not allowed",
        ResultCode::Unauthorized => "Not signed in",
        ResultCode::InvalidSessionKey => "Bad session key",
        ResultCode::NoAccessToRelease => "Release not granted",
        ResultCode::ReleaseArchived => "Release archived",
        ResultCode::ReleaseDraft => "Release still a draft",
        ResultCode::EntitlementsMissing => "Entitlement missing",
        ResultCode::SessionLimitReached => "All seats in use",
        ResultCode::SessionNotFound => "Session not found",
        ResultCode::IdempotencyKeyMismatch => "Retried with other content",
        ResultCode::IdempotencyKeyInUse => "Retried too soon",
        ResultCode::SigningKeyNotFound => "Signing key not found",
        ResultCode::Conflict => "Conflicting change",
        ResultCode::ArtifactNotFound => "Download not found",
        ResultCode::ReleaseYanked => "Release withdrawn",
    }
}

/// An endpoint in words.
fn endpoint_words(endpoint: ClientEndpoint) -> &'static str {
    match endpoint {
        ClientEndpoint::Verify => "Verify",
        ClientEndpoint::Heartbeat => "Heartbeat",
        ClientEndpoint::Classloader => "Download",
        ClientEndpoint::Checkout => "License file",
        ClientEndpoint::SessionStart => "Session start",
        ClientEndpoint::SessionEnd => "Session end",
        ClientEndpoint::UpdateCheck => "Update check",
        ClientEndpoint::Download => "Update download",
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

/// The section: filters, the table (refusals highlighted) and the pager.
pub(crate) async fn section(
    ctx: &Ctx,
    staff: &Staff,
    license: LicenseId,
    products: &[Product],
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
        h2 #requests { "Requests" }
        @if !ctx.state.request_log.on() {
            p.hint { "This server keeps no request history (its request-history-days setting is 0)." }
        } @else {
            p.hint {
                "Every request the application made with this key, accepted or refused, newest first; kept "
                (retention.days) (if retention.days == 1 { " day." } else { " days." })
            }
            form.filters method="get" action={ "/dashboard/licenses/" (license) "#requests" } {
                (page::filter(("requests", "Outcome", "Any"), [("refused", "Refused"), ("accepted", "Accepted")], chosen.outcome))
                (page::filter(
                    ("code", "Reason", "Any"),
                    ResultCode::ALL.into_iter().filter(|c| !c.is_success()).map(|c| (c.as_str(), code_words(c))),
                    chosen.code.map_or("", ResultCode::as_str),
                ))
                div {
                    label for="day" { "Day" span.hint { (zone.name()) } }
                    input #day type="date" name="day" value=(chosen.day.as_ref().map_or("", |(d, _, _)| d.as_str()));
                }
                div { button type="submit" { "Show" } }
            }
            (page::table(&["Time", "Request", "Result", "Device", "Address", "Product", "Version"], None, html! {
                @if result.items.is_empty() {
                    tr { td.empty colspan="7" {
                        @if filtered { "No request matches." } @else { "No request has reached this license yet." }
                    } }
                }
                @for e in &result.items {
                    (row(staff, e, &product_name))
                }
            }))
            nav.pager aria-label="Request pages" {
                @if result.total > 0 {
                    span { (result.total) (if result.total == 1 { " request" } else { " requests" }) }
                }
                @if chosen.page > 1 {
                    a href=(chosen.link(license, chosen.page - 1)) rel="prev" { "Newer" }
                }
                @if result.has_next_page {
                    a href=(chosen.link(license, chosen.page + 1)) rel="next" { "Older" }
                }
            }
        }
    })
}

fn row(
    staff: &Staff,
    e: &RequestLogEntry,
    product_name: &dyn Fn(licensing_core::ProductId) -> String,
) -> Markup {
    let refused = e.refused();
    html! {
        tr.refused[refused] {
            td.nowrap {
                (page::when_exact(staff, e.at))
                @if e.count > 1 {
                    br;
                    span.hint {
                        "×" (e.count) " to "
                        (e.last_at.map(|l| l.as_datetime().with_timezone(&page::zone(staff)).format("%H:%M:%S").to_string()).unwrap_or_default())
                    }
                }
            }
            td { (endpoint_words(e.endpoint)) }
            td {
                @if refused {
                    span.badge.bad title=(e.code.as_str()) { (code_words(e.code)) }
                } @else {
                    span.badge.ok { (code_words(e.code)) }
                }
            }
            td.mono { (e.hardware_identifier.as_deref().unwrap_or("—")) }
            td.mono {
                (e.ip_address)
                @if let Some(country) = &e.country { " (" (country) ")" }
            }
            td { (e.product_id.map(product_name).unwrap_or_else(|| "—".into())) }
            td { (e.version.as_deref().unwrap_or("—")) }
        }
    }
}
