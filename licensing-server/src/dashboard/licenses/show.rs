//! A license's page: its customers, products, devices, addresses, live sessions and request
//! history; suspend, e-mail, forget, revoke and delete.

use licensing_core::api::LicenseFileBody;
use licensing_core::api::requests::{
    DeviceListQuery, ExtendBody, ForgottenBody, MAX_EXTENSION_DAYS, Paging, SuspendBody,
};
use licensing_core::model::{ExpirationType, effective_codes};
use licensing_core::{LicenseId, Timestamp};
use maud::{Markup, html};

use super::super::api::{self, Failure};
use super::super::page::{self, Confirm, Form, Nav};
use super::super::{Ctx, Staff};
use crate::app::devices::{ListHwids, ListIps, SetHwidForgotten, SetIpForgotten};
use crate::app::floating::{ListSessions, RevokeSession};
use crate::app::license_files::IssueLicenseFile;
use crate::app::licenses::{
    DeleteLicense, EmailLicense, ExtendLicense, GetLicense, SuspendLicense, UnsuspendLicense,
};
use crate::http::Response;

use super::{customer_name, expiry_text, license_id, status};
use crate::dashboard::words::{t, tm, tm_counted, tw};
use crate::i18n::Arg;

/// `GET /dashboard/licenses/{id}`.
pub(crate) async fn show(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    match show_page(ctx, staff, id).await {
        Ok(markup) => page::html_response(200, markup),
        Err(failure) => page::failure(ctx, Some(staff), &failure),
    }
}

/// The last time the license's key was e-mailed: when, to whom, by whom (from the audit log, for
/// a role that reads it).
struct Emailed {
    at: Timestamp,
    recipients: String,
    by: String,
}

async fn last_emailed(ctx: &Ctx, staff: &Staff, id: LicenseId) -> Result<Option<Emailed>, Failure> {
    if !staff.may_perform::<crate::app::team::ListAudit>() {
        return Ok(None);
    }
    let query = licensing_core::api::requests::AuditQuery::parse(&format!(
        "pageSize=10&resourceId={id}&action=license.emailed"
    ))?;
    let entries = api::perform(ctx, staff, crate::app::team::ListAudit(query)).await?;
    Ok(entries.items.into_iter().next().map(|entry| {
        let recipients = entry
            .changes
            .iter()
            .find(|c| c.field == "recipients")
            .and_then(|c| c.new.as_ref())
            .and_then(|v| v.as_array())
            .map(|all| {
                all.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        Emailed {
            at: entry.at,
            recipients,
            by: crate::dashboard::audit::actor(&entry),
        }
    }))
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
    // The newest sessions (a license may hold many: the page shows a hundred and their count).
    let newest = Paging {
        page_size: SESSIONS_SHOWN,
        ..Paging::default()
    };
    let sessions = api::perform(ctx, staff, ListSessions(id, newest)).await?;
    let live = sessions.total;
    let sessions = sessions.items;
    let entitlements = crate::dashboard::entitlements::readable(ctx, staff).await?;
    // What each device is called, by identifier, for the sessions and the request history.
    let names: super::history::DeviceNames = hwids
        .items
        .iter()
        .filter_map(|h| Some((h.hwid.identifier.as_str().to_owned(), h.hwid.label()?)))
        .collect();
    let requests = super::history::section(ctx, staff, id, &detail.products, &names).await?;
    let usage = super::usage::section(ctx, staff, id).await?;
    let emailed = last_emailed(ctx, staff, id).await?;
    let l = &detail.license;
    // Its plan, named when the role may read policies.
    let plan = match l.policy_id {
        Some(policy) if staff.may_perform::<crate::app::policies::GetPolicy>() => {
            Some(api::perform(ctx, staff, crate::app::policies::GetPolicy(policy)).await?)
        }
        _ => None,
    };
    // Where a limit comes from, on a plan: the plan, or the license itself.
    let source = |term: licensing_core::model::Term| match l.policy_id {
        None => "",
        Some(_) if l.overrides.contains(&term) => t("licenses-show-set-license"),
        Some(_) => t("licenses-show-plans"),
    };
    let granted = effective_codes(
        &l.entitlement_ids,
        detail.products.iter().map(|p| p.entitlement_ids.as_slice()),
        |id| {
            entitlements
                .iter()
                .find(|e| e.id == id)
                .map(|e| e.code.as_str())
        },
    );
    let (word, class) = status(l, ctx.now);
    let devices_allowed = staff.may_perform::<crate::app::devices::SetHwidForgotten>();
    let suspend_allowed = staff.may_perform::<crate::app::licenses::SuspendLicense>();
    let write_allowed = staff.may_perform::<crate::app::licenses::UpdateLicense>();
    let extend_allowed = staff.may_perform::<crate::app::licenses::ExtendLicense>();
    let email_allowed = staff.may_perform::<crate::app::licenses::EmailLicense>();
    let limit = |n: Option<u32>| {
        n.map_or_else(|| t("licenses-show-no-limit").to_owned(), |n| n.to_string())
    };
    let content = html! {
        div.heading {
            h1 {
                span.key { (l.license_key.as_str()) }
                button.secondary.small.copy type="button" data-copy=(l.license_key.as_str()) data-copied=(t("page-copied")) data-copy-failed=(t("page-copy-failed")) hidden { (t("licenses-show-copy")) }
            }
            span.badge.(class) { (word) }
        }
        div.actions {
            @if suspend_allowed {
                @if l.suspended {
                    form method="post" action={ "/dashboard/licenses/" (l.id) "/unsuspend" } {
                        (page::csrf(staff))
                        button type="submit" { (t("licenses-show-unsuspend")) }
                    }
                } @else {
                    form.inline method="post" action={ "/dashboard/licenses/" (l.id) "/suspend" } {
                        (page::csrf(staff))
                        label for="suspend-reason" { (t("licenses-show-suspension-reason")) }
                        input #suspend-reason type="text" name="reason" maxlength="500";
                        button.secondary type="submit" { (t("licenses-show-suspend")) }
                    }
                }
            }
            @if extend_allowed && l.expiration_type != ExpirationType::Never {
                form.inline method="post" action={ "/dashboard/licenses/" (l.id) "/extend" } {
                    (page::csrf(staff))
                    label for="extend-days" { (t("licenses-show-extend")) }
                    input #extend-days type="number" name="days" min="1" max="3650" value="30" required;
                    span { (t("licenses-show-days")) }
                    button.secondary type="submit" { (t("licenses-show-extend-2")) }
                }
            }
            @if email_allowed && ctx.state.mailer.is_some() && detail.customers.iter().any(|c| c.email.is_some()) {
                form method="post" action={ "/dashboard/licenses/" (l.id) "/email" } {
                    (page::csrf(staff))
                    button.secondary type="submit" { (t("licenses-show-e-mail-key-customers")) }
                }
            }
            @if write_allowed {
                a.button.secondary href={ "/dashboard/licenses/" (l.id) "/edit" } { (t("licenses-show-edit")) }
                a.button.danger href={ "/dashboard/licenses/" (l.id) "/delete" } { (t("licenses-show-delete")) }
            }
        }
        @if let (Some(sent), Some("license-emailed")) = (&emailed, ctx.param("notice").as_deref()) {
            p.notice role="status" { (tw("licenses-show-key-on-its-way", &[("recipients", Arg::Text(&sent.recipients))])) }
        }
        div.card {
            dl.facts {
                @if l.suspended {
                    dt { (t("licenses-show-suspended-because")) }
                    dd #suspension-reason {
                        @match &l.suspension_reason {
                            Some(reason) => { (reason) },
                            None => { span.hint { (t("licenses-show-no-reason-given")) } },
                        }
                    }
                }
                @if let Some(policy_id) = l.policy_id {
                    dt { (t("licenses-show-plan")) }
                    dd {
                        @if let Some(p) = &plan {
                            a href={ "/dashboard/policies/" (p.id) } { (p.name) }
                        } @else {
                            code { (policy_id) }
                        }
                    }
                }
                dt { (t("licenses-show-customers")) }
                dd {
                    @if detail.customers.is_empty() { (t("licenses-show-none")) }
                    @for (i, c) in detail.customers.iter().enumerate() {
                        @if i > 0 { ", " }
                        (customer_name(c))
                    }
                }
                dt { (t("licenses-show-products")) }
                dd {
                    @if detail.products.is_empty() { (t("licenses-show-none")) }
                    (detail.products.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "))
                }
                @if !entitlements.is_empty() {
                    dt { (t("licenses-show-entitlements")) }
                    dd {
                        @if granted.is_empty() { (t("licenses-show-none")) }
                        @for (i, code) in granted.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (code) }
                        }
                    }
                }
                dt { (t("licenses-show-expires")) } dd { (expiry_text(l)) }
                dt { (t("licenses-show-device-limit")) } dd { (limit(l.hwid_limit)) (source(licensing_core::model::Term::HwidLimit)) }
                dt { (t("licenses-show-address-limit")) } dd { (limit(l.ip_limit)) (source(licensing_core::model::Term::IpLimit)) }
                dt { (t("licenses-show-concurrent-sessions")) } dd { (limit(l.session_limit)) (source(licensing_core::model::Term::SessionLimit)) }
                dt { (t("licenses-show-created")) } dd { (page::when(staff, l.created_at)) }
                dt { (t("licenses-show-last-changed")) } dd { (page::when(staff, l.updated_at)) }
                dt { (t("licenses-show-last-active")) } dd { (l.last_active_at.map(|at| page::when(staff, at)).unwrap_or_else(|| t("licenses-show-never").into())) }
                @if let Some(sent) = &emailed {
                    dt { (t("licenses-show-key-emailed")) }
                    dd #key-emailed { (tm("licenses-show-key-emailed-to", &[("when", html! { (page::when(staff, sent.at)) }), ("recipients", html! { (sent.recipients) }), ("who", html! { (sent.by) })])) }
                }
                @for m in &l.metadata {
                    dt { code { (m.key) } } dd { (m.value) }
                }
            }
        }
        h2 #devices { (t("licenses-show-devices")) }
        (records(
            staff,
            l.id,
            "devices",
            devices_allowed,
            hwids.items.iter().map(|h| Row { id: h.hwid.id.to_string(), key: h.hwid.identifier.as_str().to_owned(), label: h.hwid.label(), status: h.status, seen: h.hwid.last_seen_at }).collect(),
        ))
        h2 { (t("licenses-show-addresses")) }
        (records(
            staff,
            l.id,
            "addresses",
            devices_allowed,
            ips.items.iter().map(|r| Row { id: r.ip.id.to_string(), key: r.ip.address.to_string(), label: None, status: r.status, seen: r.ip.last_seen_at }).collect(),
        ))
        // Floating licenses, and any license whose application starts sessions.
        @if l.session_limit.is_some() || !sessions.is_empty() {
            h2 #sessions { (t("licenses-show-sessions")) }
            p.hint {
                @match l.session_limit {
                    Some(limit) => { (tm_counted("licenses-show-live-limit-concurrent-seats-use", Some(i64::from(limit)), &[("live", html! { (live) })])) },
                    None => { (tm("licenses-show-live-live-sessions-not-limited", &[("live", html! { (live) })])) },
                }
                @if live > sessions.len() as u64 {
                    (tm("licenses-show-newest-sessions-shown", &[("sessions", html! { (sessions.len()) })]))
                }
                (t("licenses-show-running-copy-application-holds-session"))
            }
            (live_sessions(staff, l.id, devices_allowed, &sessions, &names))
        }
        (usage)
        (requests)
        @if write_allowed {
            h2 #license-file { (t("licenses-show-license-file")) }
            p.hint { (t("licenses-show-signed-file-application-checks-without")) }
            form method="post" action={ "/dashboard/licenses/" (l.id) "/file" } {
                (page::csrf(staff))
                label for="machine" { (t("licenses-show-machine")) span.hint { (t("licenses-show-machine-hint")) } }
                input #machine type="text" name="machine" list="known-machines" minlength="10" maxlength="1000" autocomplete="off" spellcheck="false";
                datalist #known-machines {
                    @for h in hwids.items.iter().filter(|h| !h.hwid.forgotten) {
                        option value=(h.hwid.identifier.as_str()) {
                            @if let Some(label) = h.hwid.label() { (label) }
                        }
                    }
                }
                label.choice { input type="checkbox" name="override" value="true"; (t("licenses-show-override-device-limit")) }
                label for="days" { (t("licenses-show-valid-days")) span.hint { (t("licenses-show-empty-long-license")) } }
                input #days type="number" min="1" max="3650" name="days";
                label.choice { input type="checkbox" name="encrypt" value="true" checked; (t("licenses-show-encrypted-with-license-key-machine")) }
                p { button.secondary type="submit" { (t("licenses-show-download-license-file")) } }
            }
        }
    };
    Ok(page::layout(
        ctx,
        staff,
        Nav::Licenses,
        l.license_key.as_str(),
        content,
    ))
}

/// How many of a license's live sessions its page shows, newest first.
const SESSIONS_SHOWN: u32 = 100;

/// The live sessions, with a revoke button each.
fn live_sessions(
    staff: &Staff,
    license: LicenseId,
    allowed: bool,
    sessions: &[licensing_core::model::LicenseSession],
    names: &super::history::DeviceNames,
) -> Markup {
    html! {
        (page::table(&[t("licenses-show-device"), t("licenses-show-address"), t("licenses-show-started"), t("licenses-show-last-seen"), t("licenses-show-expires")], allowed.then_some(t("licenses-show-action")), html! {
            @if sessions.is_empty() {
                tr { td.empty colspan="6" { (t("licenses-show-no-copy-application-runs-with")) } }
            }
            @for s in sessions {
                tr {
                    td { (super::history::device_cell(names, s.hardware_identifier.as_str())) }
                    td.mono { (s.ip_address) }
                    td { (page::when(staff, s.started_at)) }
                    td { (page::when(staff, s.last_seen_at)) }
                    td { (page::when(staff, s.expires_at)) }
                    @if allowed {
                        td {
                            form method="post" action={ "/dashboard/licenses/" (license) "/sessions/" (s.id) "/revoke" } {
                                (page::csrf(staff))
                                button.secondary.small type="submit" aria-label=(tw("licenses-show-revoke-session-of", &[("device", Arg::Text(s.hardware_identifier.as_str()))])) { (t("licenses-show-revoke")) }
                            }
                        }
                    }
                }
            }
        }))
    }
}

/// One device or address of [`records`].
struct Row {
    id: String,
    /// The identifier or address.
    key: String,
    /// What the device is called.
    label: Option<String>,
    status: licensing_core::model::RecordStatus,
    seen: Timestamp,
}

/// A table of devices or addresses with forget and remember buttons.
fn records(staff: &Staff, license: LicenseId, kind: &str, allowed: bool, rows: Vec<Row>) -> Markup {
    use licensing_core::model::RecordStatus;
    let noun = if kind == "devices" {
        "device"
    } else {
        "address"
    };
    html! {
        (page::table(&[if kind == "devices" { t("licenses-show-device") } else { t("licenses-show-address") }, t("licenses-show-status"), t("licenses-show-last-seen")], allowed.then_some(t("licenses-show-action")), html! {
            @if rows.is_empty() {
                tr { td.empty colspan="4" { (tm("licenses-show-no-noun-has-used-license", &[("noun", html! { (noun) })])) } }
            }
            @for Row { id, key, label, status, seen } in &rows {
                @let name = label.as_deref().unwrap_or(key);
                tr {
                    td {
                        @if let Some(label) = label { span.device-name { (label) } br; }
                        span.mono { (key) }
                    }
                    td {
                        @match status {
                            RecordStatus::Active => span.badge.ok { (t("licenses-show-active")) },
                            RecordStatus::Inactive => span.badge.muted { (t("licenses-show-inactive")) },
                            RecordStatus::Forgotten => span.badge.warn { (t("licenses-show-forgotten")) },
                        }
                    }
                    td { (page::when_exact(staff, *seen)) }
                    @if allowed {
                        td {
                            @let forgotten = *status == RecordStatus::Forgotten;
                            form method="post" action={
                                "/dashboard/licenses/" (license) "/" (kind) "/" (id) "/"
                                (if forgotten { "remember" } else { "forget" })
                            } {
                                (page::csrf(staff))
                                button.secondary.small type="submit" aria-label=(tw(if forgotten { "licenses-show-remember-label" } else { "licenses-show-forget-label" }, &[("name", Arg::Text(name))])) {
                                    (if forgotten { t("licenses-show-remember-2") } else { t("licenses-show-forget-2") })
                                }
                            }
                        }
                    }
                }
            }
        }))
    }
}

/// `POST /dashboard/licenses/{id}/suspend` and `/unsuspend`.
/// Suspending takes the form's `reason`, if any.
pub(crate) async fn suspend(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    suspend: bool,
    form: &Form,
) -> Response {
    let id = match license_id(id) {
        Ok(id) => id,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let then = |verb| format!("/dashboard/licenses/{id}?notice=license-{verb}ed");
    if suspend {
        let reason = form
            .get("reason")
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned);
        let body = SuspendBody { reason };
        page::done(ctx, staff, Ok(SuspendLicense(id, body)), &then("suspend")).await
    } else {
        page::done(ctx, staff, Ok(UnsuspendLicense(id)), &then("unsuspend")).await
    }
}

/// `POST /dashboard/licenses/{id}/extend`: the expiry moved `days` later.
pub(crate) async fn extend(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let op = license_id(id).and_then(|id| {
        let days = form
            .text("days")
            .and_then(|d| d.trim().parse::<i64>().ok())
            .filter(|d| (1..=MAX_EXTENSION_DAYS).contains(d))
            .ok_or_else(|| Failure::new(400, t("licenses-show-give-days-extend-license-whole")))?;
        Ok(ExtendLicense(id, ExtendBody { days: Some(days) }))
    });
    let then = format!("/dashboard/licenses/{id}?notice=license-extended");
    page::done(ctx, staff, op, &then).await
}

/// `POST /dashboard/licenses/{id}/file`: a license file, as a download named after the key.
pub(crate) async fn file(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let outcome = async {
        let id = license_id(id)?;
        let ttl = match form.text("days") {
            None => None,
            Some(days) => Some(
                days.parse::<i64>()
                    .ok()
                    .filter(|d| (1..=3650).contains(d))
                    .map(|d| d * 86_400)
                    .ok_or_else(|| {
                        Failure::new(400, t("licenses-show-days-must-whole-number-from"))
                    })?,
            ),
        };
        let body = LicenseFileBody {
            hardware_identifier: form.text("machine").map(str::to_owned),
            ttl,
            encrypt: Some(form.get("encrypt").is_some()),
            override_device_limit: Some(form.get("override").is_some()),
        };
        let issued = api::perform(ctx, staff, IssueLicenseFile(id, body)).await?;
        let key = api::perform(ctx, staff, GetLicense(id))
            .await?
            .license
            .license_key;
        Ok(download(
            &format!("{}.lic", key.as_str()),
            issued.certificate,
        ))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// A text file the browser saves under `name`.
fn download(name: &str, text: String) -> Response {
    use warp::http::{HeaderValue, header};
    let mut response = Response::new(text.into());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
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
    let ids = license_id(id)
        .and_then(|id| Ok((id, page::id_of(record, t("licenses-show-device-address"))?)));
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

/// `POST /dashboard/licenses/{id}/sessions/{sessionId}/revoke`: the seat is free at once.
pub(crate) async fn revoke_session(ctx: &Ctx, staff: &Staff, id: &str, session: &str) -> Response {
    let ids = license_id(id).and_then(|id| Ok((id, page::id_of(session, "session")?)));
    let (id, session): (LicenseId, uuid::Uuid) = match ids {
        Ok(ids) => ids,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    let then = format!("/dashboard/licenses/{id}?notice=session-revoked#sessions");
    page::done(ctx, staff, Ok(RevokeSession(id, session.into())), &then).await
}

/// `GET /dashboard/licenses/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = license_id(id)?;
        let detail = api::perform(ctx, staff, GetLicense(id)).await?;
        let key = detail.license.license_key.as_str();
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Licenses,
                title: t("licenses-show-delete-license"),
                what: html! { (tm("licenses-show-license-will-be-deleted", &[("key", html! { span.key { (key) } })])) },
                action: format!("/dashboard/licenses/{id}/delete"),
                button: t("licenses-show-delete-license-2"),
                back: format!("/dashboard/licenses/{id}"),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/licenses/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let op = license_id(id).map(DeleteLicense);
    page::done(ctx, staff, op, "/dashboard/licenses?notice=license-deleted").await
}
