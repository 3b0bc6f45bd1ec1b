//! The overview: the team's statistics as numbers and charts.

use maud::html;

use super::api;
use super::charts;
use super::page::{self, Nav};
use super::{Ctx, Staff};
use crate::app::team::{GetOverview, GetStatistics};
use crate::http::Response;

/// `GET /dashboard/`: the overview, or the licenses for a role without statistics.
pub(crate) async fn show(ctx: &Ctx, staff: &Staff) -> Response {
    if !staff.may_perform::<crate::app::team::GetStatistics>() {
        return page::redirect("/dashboard/licenses");
    }
    let outcome = async {
        let stats = api::perform(ctx, staff, GetStatistics).await?;
        let days: Vec<(String, u64, u64)> = stats
            .daily
            .iter()
            .map(|d| {
                (
                    d.date.get(5..).unwrap_or(&d.date).to_owned(),
                    d.successful,
                    d.failed,
                )
            })
            .collect();
        let countries: Vec<(String, u64)> = stats
            .top_countries
            .iter()
            .map(|c| (c.country.clone(), c.requests))
            .collect();
        let products: Vec<(String, u64)> = stats
            .top_products
            .iter()
            .map(|p| (p.name.clone(), p.licenses))
            .collect();
        let refusals: Vec<(String, u64)> = stats
            .top_refusals
            .iter()
            .map(|r| {
                (
                    super::licenses::history::code_words(r.code).to_owned(),
                    r.requests,
                )
            })
            .collect();
        // The headline counts are current; the charts' history may be 15 minutes old.
        let o = &api::perform(ctx, staff, GetOverview).await?;
        let content = html! {
            h1 { "Overview" }
            div.figures {
                div.figure { span.number { (o.total_licenses) } span.label { "licenses" } }
                div.figure { span.number { (o.active_licenses) } span.label { "active in the last hour" } }
                div.figure { span.number { (o.total_customers) } span.label { "customers" } }
                div.figure { span.number { (o.total_products) } span.label { "products" } }
                div.figure { span.number { (stats.requests.total) } span.label { "client requests, 30 days" } }
                div.figure {
                    span.number {
                        @if stats.requests.total == 0 { "—" } @else { (format!("{:.1} %", stats.requests.success_rate)) }
                    }
                    span.label { "answered valid" }
                }
            }
            div.card {
                h2 { "Client requests per day" }
                p.legend { span.swatch.ok {} "valid " span.swatch.bad {} "refused" }
                (charts::stacked_columns("Client requests per day over the last 30 days", &days))
                details {
                    summary { "The numbers" }
                    (page::table(&["Day (UTC)", "Valid", "Refused"], None, html! {
                        @for d in stats.daily.iter().rev() {
                            tr { td { (d.date) } td { (d.successful) } td { (d.failed) } }
                        }
                    }))
                }
            }
            div.columns {
                div.card {
                    h2 { "Top countries" }
                    (charts::bars("Client requests by country, last 30 days", &countries))
                }
                div.card {
                    h2 { "Top products" }
                    (charts::bars("Licenses by product", &products))
                }
                div.card {
                    h2 { "Top refusal reasons" }
                    @if refusals.is_empty() {
                        p.hint { "No request was refused in the last 30 days." }
                    } @else {
                        (charts::bars("Refused client requests by reason, last 30 days", &refusals))
                        p.hint { "A license's page lists each of its requests, refusals highlighted." }
                    }
                }
            }
            p.hint {
                "Last 24 hours: " (stats.recent_activity.last_24h) " requests · 7 days: "
                (stats.recent_activity.last_7d) " · verify " (stats.requests.by_type.verify)
                ", heartbeat " (stats.requests.by_type.heartbeat) ", download "
                (stats.requests.by_type.download) " in 30 days. Refreshed every 15 minutes."
            }
        };
        Ok(page::shown(Nav::Overview, "Overview", content))
    };
    page::answer(ctx, staff, None, outcome.await)
}
