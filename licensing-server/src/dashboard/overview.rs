//! The overview: the team's statistics as numbers and charts.

use maud::html;

use super::api;
use super::charts;
use super::page::{self, Nav};
use super::{Ctx, Staff};
use crate::app::team::{GetOverview, GetStatistics};
use crate::dashboard::words::{t, tm};
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
            h1 { (t("overview-overview")) }
            div.figures {
                div.figure { span.number { (o.total_licenses) } span.label { (t("overview-licenses")) } }
                div.figure { span.number { (o.active_licenses) } span.label { (t("overview-active-last-hour")) } }
                div.figure { span.number { (o.total_customers) } span.label { (t("overview-customers")) } }
                div.figure { span.number { (o.total_products) } span.label { (t("overview-products")) } }
                div.figure { span.number { (stats.requests.total) } span.label { (t("overview-client-requests-30-days")) } }
                div.figure {
                    span.number {
                        @if stats.requests.total == 0 { "—" } @else { (format!("{:.1} %", stats.requests.success_rate)) }
                    }
                    span.label { (t("overview-answered-valid")) }
                }
            }
            div.card {
                h2 { (t("overview-client-requests-per-day")) }
                p.legend { span.swatch.ok {} (t("overview-valid")) span.swatch.bad {} (t("overview-refused")) }
                (charts::stacked_columns(t("overview-client-requests-per-day-over"), &days))
                details {
                    summary { (t("overview-numbers")) }
                    (page::table(&[t("overview-day-utc"), t("overview-valid-2"), t("overview-refused-2")], None, html! {
                        @for d in stats.daily.iter().rev() {
                            tr { td { (d.date) } td { (d.successful) } td { (d.failed) } }
                        }
                    }))
                }
            }
            div.columns {
                div.card {
                    h2 { (t("overview-top-countries")) }
                    (charts::bars(t("overview-client-requests-country-last-30"), &countries))
                }
                div.card {
                    h2 { (t("overview-top-products")) }
                    (charts::bars(t("overview-licenses-product"), &products))
                }
                div.card {
                    h2 { (t("overview-top-refusal-reasons")) }
                    @if refusals.is_empty() {
                        p.hint { (t("overview-no-request-was-refused-last")) }
                    } @else {
                        (charts::bars(t("overview-refused-client-requests-reason-last"), &refusals))
                        p.hint { (t("overview-licenses-page-lists-each-requests")) }
                    }
                }
            }
            p.hint {
                (tm("overview-last-24-hours-last-24h", &[("last-24h", html! { (stats.recent_activity.last_24h) }), ("last-7d", html! { (stats.recent_activity.last_7d) }), ("verify", html! { (stats.requests.by_type.verify) }), ("heartbeat", html! { (stats.requests.by_type.heartbeat) }), ("download", html! { (stats.requests.by_type.download) })]))
            }
        };
        Ok(page::shown(Nav::Overview, t("overview-overview"), content))
    };
    page::answer(ctx, staff, None, outcome.await)
}
