//! A license's usage meters on its page: each meter as a bar of what was used in the current
//! period against its limit, the period and when it resets, the periods before; and, for staff
//! who may, an adjustment with a reason and a reset.

use licensing_core::LicenseId;
use licensing_core::api::requests::{AdjustUsageBody, ResetUsageBody};
use licensing_core::model::{MeterPeriod, MeterUsage};
use maud::{Markup, html};

use super::super::api::{self, Failure};
use super::super::page;
use super::super::{Ctx, Staff};
use crate::app::usage::{AdjustUsage, GetUsage, MeterCode, ResetUsage};
use crate::dashboard::words::{t, tm};
use crate::http::Response;

/// The section, or nothing for a license without meters (or a role that may not read them).
pub(crate) async fn section(ctx: &Ctx, staff: &Staff, id: LicenseId) -> Result<Markup, Failure> {
    if !staff.may_perform::<GetUsage>() {
        return Ok(html! {});
    }
    let usage = api::perform(ctx, staff, GetUsage(id)).await?;
    if usage.meters.is_empty() {
        return Ok(html! {});
    }
    let change_allowed = staff.may_perform::<AdjustUsage>();
    Ok(html! {
        h2 #usage { (t("licenses-usage")) }
        p.hint { (t("licenses-usage-hint")) }
        @for meter in &usage.meters {
            (one(staff, id, meter, change_allowed))
        }
    })
}

/// A period's name.
fn period_words(period: MeterPeriod) -> &'static str {
    match period {
        MeterPeriod::None => t("licenses-usage-period-none"),
        MeterPeriod::Day => t("licenses-usage-period-day"),
        MeterPeriod::Week => t("licenses-usage-period-week"),
        MeterPeriod::Month => t("licenses-usage-period-month"),
        MeterPeriod::Year => t("licenses-usage-period-year"),
    }
}

fn one(staff: &Staff, id: LicenseId, m: &MeterUsage, change_allowed: bool) -> Markup {
    let code = m.code.as_str();
    let used = html! { (m.used) };
    html! {
        section.meter data-meter=(code) {
            h3 { span.key { (code) } " · " (period_words(m.period)) }
            @match m.limit {
                Some(limit) => {
                    p {
                        meter min="0" max=(limit.max(1)) value=(m.used.min(limit)) high=((limit * 4).div_ceil(5)) optimum="0" aria-label=(code) {}
                        " "
                        (tm("licenses-usage-used-of-limit", &[("used", used), ("limit", html! { (limit) })]))
                    }
                }
                None => {
                    p { (tm("licenses-usage-used-unlimited", &[("used", used)])) }
                }
            }
            p.hint {
                @match m.resets_at {
                    Some(at) => { (tm("licenses-usage-resets", &[("at", html! { (page::when(staff, at)) })])) }
                    None => { (t("licenses-usage-never-resets")) }
                }
            }
            @let past: Vec<_> = m.history.iter().filter(|p| p.used > 0).collect();
            @if !past.is_empty() {
                details {
                    summary { (t("licenses-usage-earlier-periods")) }
                    (page::table(&[t("licenses-usage-period-from"), t("licenses-usage-used")], None, html! {
                        @for p in &past {
                            tr { td { (page::when(staff, p.period_start)) } td { (p.used) } }
                        }
                    }))
                }
            }
            @if change_allowed {
                form.inline method="post" action={ "/dashboard/licenses/" (id) "/usage/" (code) "/adjust" } {
                    (page::csrf(staff))
                    label for={ "delta-" (code) } { (t("licenses-usage-adjust-by")) }
                    input id={ "delta-" (code) } type="number" name="delta" required step="1";
                    label for={ "reason-" (code) } { (t("licenses-usage-reason")) }
                    input id={ "reason-" (code) } type="text" name="reason" required maxlength="500";
                    button.secondary type="submit" { (t("licenses-usage-adjust")) }
                }
                form.inline method="post" action={ "/dashboard/licenses/" (id) "/usage/" (code) "/reset" } {
                    (page::csrf(staff))
                    input type="hidden" name="reason" value="";
                    button.secondary type="submit" { (t("licenses-usage-reset")) }
                }
            }
        }
    }
}

/// `POST /dashboard/licenses/{id}/usage/{meter}/adjust` and `…/reset`.
pub(crate) async fn change(
    ctx: &Ctx,
    staff: &Staff,
    (id, meter): (&str, &str),
    reset: bool,
    form: &page::Form,
) -> Response {
    let ids = super::license_id(id).and_then(|id| {
        let code = meter
            .parse::<MeterCode>()
            .map_err(|_| Failure::new(404, t("licenses-usage-no-such-meter")))?;
        Ok((id, code))
    });
    let (id, code) = match ids {
        Ok(ids) => ids,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let reason = form
        .get("reason")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    if reset {
        let then = format!("/dashboard/licenses/{id}?notice=usage-reset#usage");
        let op = ResetUsage(id, code, ResetUsageBody { reason });
        return page::done(ctx, staff, Ok(op), &then).await;
    }
    let delta = form
        .text("delta")
        .and_then(|d| d.trim().parse::<i64>().ok());
    let then = format!("/dashboard/licenses/{id}?notice=usage-adjusted#usage");
    let op = AdjustUsage(id, code, AdjustUsageBody { delta, reason });
    page::done(ctx, staff, Ok(op), &then).await
}
