//! The portal's pages: sign-in (e-mail, code, key, links), a customer's licenses, and what a
//! customer may do with one. Every text comes from the message catalog in the request's
//! language; every change performs an operation as the customer.

use licensing_core::api::requests::{DeviceListQuery, ForgottenBody};
use licensing_core::model::{
    CodeRedeemed, ExpirationStart, ExpirationType, License, PortalGrant, PortalMethod,
    PortalSignIn, PortalTicket, RecordStatus, UsageRef, grace_end,
};
use licensing_core::{ApiError, HwidId, IpId, LicenseId};
use maud::{DOCTYPE, Markup, html};
use warp::http::{HeaderValue, Method, header};

use super::{Cookie, Ctx, constant_eq};
use crate::app::Cx;
use crate::app::client::feed::{self, Access, Credential};
use crate::app::devices::{ListHwids, ListIps, SetHwidForgotten, SetIpForgotten};
use crate::app::floating::{ListSessions, RevokeSession};
use crate::app::license_files::IssueLicenseFile;
use crate::app::licenses::GetLicense;
use crate::app::portal::{Door, SESSION_SECS, Signed};
use crate::dashboard::page::{self, Form};
use crate::http::Response;
use crate::i18n::{Arg, Lang};

/// The stylesheet's path, versioned so that browsers may keep it.
const CSS_PATH: &str = concat!("/portal/static/portal.css?v=", env!("CARGO_PKG_VERSION"));
/// The icon's path (the dashboard's icon, served here too: the portal may be on without it).
const ICON_PATH: &str = concat!("/portal/static/favicon.svg?v=", env!("CARGO_PKG_VERSION"));
const CSS: &str = include_str!("portal.css");

/// `GET /portal/static/{name}`.
pub(super) fn asset(name: &str) -> Response {
    let (body, kind) = match name {
        "portal.css" => (CSS, "text/css; charset=utf-8"),
        "favicon.svg" => (crate::dashboard::assets::FAVICON, "image/svg+xml"),
        _ => return html(404, Lang::En, "", html! { p { "Not found" } }),
    };
    let mut response = Response::new(body.into());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    response
}

/// A whole page.
fn html(status: u16, lang: Lang, title: &str, content: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang=(lang.tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) }
                link rel="icon" type="image/svg+xml" href=(ICON_PATH);
                link rel="stylesheet" href=(CSS_PATH);
            }
            body { (content) }
        }
    };
    page::html_response(status, markup)
}

/// A page of `door`'s portal: the team's name, the language switch, sign-out when signed in.
fn layout(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: Option<&Signed>,
    status: u16,
    content: Markup,
) -> Response {
    let lang = ctx.lang;
    let team = &door.team;
    let title = lang.t_with("portal-title", &[("team", Arg::Text(&team.name))]);
    let base = format!("/portal/{}", team.id);
    // The switch comes back to this page when it was shown for a GET (with its query), else
    // to the portal's first page.
    let back = if ctx.get {
        let mut back = format!("/portal/{}", ctx.path);
        if !ctx.query.is_empty() {
            back.push('?');
            back.push_str(&ctx.query);
        }
        back
    } else {
        base.clone()
    };
    let body = html! {
        header.top {
            a.brand href=(format!("{base}/licenses")) { (team.name) }
            form.lang method="post" action=(format!("{base}/language")) {
                input type="hidden" name="back" value=(back);
                label for="lang" { (lang.t("language")) }
                select #lang name="lang" {
                    @for other in Lang::ALL {
                        option value=(other.tag()) selected[other == lang] { (other.t("language-name")) }
                    }
                }
                button type="submit" { (lang.t("language-apply")) }
            }
            @if let Some(signed) = signed {
                form.out method="post" action=(format!("{base}/sign-out")) {
                    input type="hidden" name="csrf" value=(signed.session.csrf_token);
                    button type="submit" { (lang.t("sign-out")) }
                }
            }
        }
        main id="main" { (content) }
    };
    html(status, lang, &title, body)
}

/// The 404 of a team without an open portal (or of no team), and of what is not there.
pub(super) fn absent(ctx: &Ctx) -> Response {
    let lang = ctx.lang;
    html(
        404,
        lang,
        &lang.t("not-found"),
        html! { main id="main" { h1 { (lang.t("not-found")) } } },
    )
}

/// A failure the customer cannot fix: 5xx in words, the rest with its status.
pub(super) fn trouble(ctx: &Ctx, door: Option<&Door<'_>>, e: &ApiError) -> Response {
    crate::http::log_cause(e);
    let lang = ctx.lang;
    let status = e.status();
    let content = html! {
        h1 { @if status == 404 { (lang.t("not-found")) } @else { (lang.t("problem")) } }
    };
    match door {
        Some(door) => layout(ctx, door, None, status, content),
        None => html(status, lang, &lang.t("problem"), content),
    }
}

/// The form of a signed-in session whose CSRF token did not match.
pub(super) fn refused(ctx: &Ctx, door: &Door<'_>, signed: &Signed) -> Response {
    let content = html! { p.error role="alert" { (ctx.lang.t("csrf-refused")) } };
    layout(ctx, door, Some(signed), 403, content)
}

/// The sign-in forms' token: the one the browser's sign-in cookie holds, else a new one (set by
/// the page that shows the forms).
fn sign_in_token(ctx: &Ctx) -> (String, bool) {
    match ctx.cookie(Cookie::SignIn) {
        Some(token) if token.len() >= 32 => (token.to_owned(), false),
        _ => (crate::app::staff::random_secret(), true),
    }
}

/// Whether a sign-in form carries the browser's sign-in token.
fn sign_in_ok(ctx: &Ctx, form: &Form) -> bool {
    match (ctx.cookie(Cookie::SignIn), form.get("csrf")) {
        (Some(cookie), Some(sent)) => constant_eq(cookie, sent),
        _ => false,
    }
}

/// A page with sign-in forms, setting the sign-in cookie when it is new.
fn with_sign_in_cookie(
    ctx: &Ctx,
    (token, new): (String, bool),
    mut response: Response,
) -> Response {
    if new {
        response
            .headers_mut()
            .append(header::SET_COOKIE, Cookie::SignIn.set(ctx, &token, 3600));
    }
    response
}

/// `GET /portal/{teamId}`: the sign-in forms the team offers (with `notice`, a message id, at
/// the top).
pub(super) async fn sign_in_page(ctx: &Ctx, door: &Door<'_>, notice: Option<&str>) -> Response {
    sign_in_with(ctx, door, notice, 200, "")
}

fn sign_in_with(
    ctx: &Ctx,
    door: &Door<'_>,
    notice: Option<&str>,
    status: u16,
    email: &str,
) -> Response {
    let lang = ctx.lang;
    let token = sign_in_token(ctx);
    let base = format!("/portal/{}", door.team.id);
    let (by_email, by_key) = (
        door.offers(PortalSignIn::Email),
        door.offers(PortalSignIn::LicenseKey),
    );
    let content = html! {
        h1 { (lang.t("sign-in-heading")) }
        p { (lang.t("sign-in-intro")) }
        @if let Some(notice) = notice { p.error role="alert" { (lang.t(notice)) } }
        @if by_email {
            form.card method="post" action=(format!("{base}/email")) {
                input type="hidden" name="csrf" value=(token.0);
                label for="email" { (lang.t("email-label")) }
                input #email type="email" name="email" autocomplete="email" required value=(email);
                button type="submit" { (lang.t("email-button")) }
            }
        }
        @if by_email && by_key { p.or { (lang.t("or")) } }
        @if by_key {
            form.card method="post" action=(format!("{base}/key")) {
                input type="hidden" name="csrf" value=(token.0);
                label for="licenseKey" { (lang.t("key-label")) }
                input #licenseKey type="text" name="licenseKey" autocomplete="off" spellcheck="false" required;
                button type="submit" { (lang.t("key-button")) }
            }
        }
        @if !by_email && !by_key { p { (lang.t("sign-in-off")) } }
    };
    let response = layout(ctx, door, None, status, content);
    with_sign_in_cookie(ctx, token, response)
}

/// A refusal of too many attempts, in minutes.
fn too_many(ctx: &Ctx, door: &Door<'_>, e: &ApiError) -> Response {
    let minutes = e.retry_after().unwrap_or(60).div_ceil(60);
    let text = ctx.lang.t_with(
        "too-many",
        &[("minutes", Arg::Number(i64::try_from(minutes).unwrap_or(60)))],
    );
    let mut response = layout(
        ctx,
        door,
        None,
        429,
        html! { p.error role="alert" { (text) } },
    );
    if let Some(secs) = e.retry_after()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// `POST /portal/{teamId}/email`: the same answer for every address (the mail goes out only
/// to a customer's with licenses), with the code form for this browser.
pub(super) async fn mail_link(ctx: &Ctx, door: &Door<'_>, form: &Form) -> Response {
    if !sign_in_ok(ctx, form) {
        return sign_in_with(ctx, door, Some("csrf-refused"), 403, "");
    }
    if !door.offers(PortalSignIn::Email) {
        return sign_in_with(ctx, door, Some("sign-in-off"), 403, "");
    }
    let address = form.get("email").unwrap_or("").trim().to_owned();
    match door.mail_link(&address, ctx.lang, &ctx.base()).await {
        Ok(ticket) => mail_sent(ctx, door, &address, ticket, None),
        Err(e) if e.status() == 429 => too_many(ctx, door, &e),
        Err(e) if e.status() == 400 => sign_in_with(ctx, door, Some("email-wrong"), 400, &address),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// "Check your e-mail", with the form for the mail's code.
fn mail_sent(
    ctx: &Ctx,
    door: &Door<'_>,
    address: &str,
    ticket: uuid::Uuid,
    wrong: Option<u8>,
) -> Response {
    let lang = ctx.lang;
    let token = sign_in_token(ctx);
    let base = format!("/portal/{}", door.team.id);
    let content = html! {
        h1 { (lang.t("mail-sent-heading")) }
        p #mail-sent { (lang.t_with("mail-sent-body", &[("address", Arg::Text(address))])) }
        @if let Some(left) = wrong {
            p.error role="alert" { (lang.t_with("code-wrong", &[("left", Arg::Number(i64::from(left)))])) }
        }
        form.card method="post" action=(format!("{base}/code")) {
            input type="hidden" name="csrf" value=(token.0);
            input type="hidden" name="ticket" value=(ticket);
            input type="hidden" name="email" value=(address);
            label for="code" { (lang.t("code-label")) }
            input #code type="text" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required;
            button type="submit" { (lang.t("code-button")) }
        }
    };
    let status = if wrong.is_some() { 400 } else { 200 };
    let response = layout(ctx, door, None, status, content);
    with_sign_in_cookie(ctx, token, response)
}

/// Signs in with `grant` and sends the browser to its licenses.
async fn signed(ctx: &Ctx, door: &Door<'_>, grant: PortalGrant, method: PortalMethod) -> Response {
    match door.start(grant, method).await {
        Ok((secret, _)) => {
            let mut response = page::redirect(&format!("/portal/{}/licenses", door.team.id));
            let headers = response.headers_mut();
            headers.append(
                header::SET_COOKIE,
                Cookie::Session.set(ctx, &secret, SESSION_SECS),
            );
            headers.append(header::SET_COOKIE, Cookie::SignIn.set(ctx, "", 0));
            response
        }
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `POST /portal/{teamId}/code`.
pub(super) async fn code(ctx: &Ctx, door: &Door<'_>, form: &Form) -> Response {
    if !sign_in_ok(ctx, form) {
        return sign_in_with(ctx, door, Some("csrf-refused"), 403, "");
    }
    if !door.offers(PortalSignIn::Email) {
        return sign_in_with(ctx, door, Some("sign-in-off"), 403, "");
    }
    let address = form.get("email").unwrap_or("");
    let Some(ticket) = form
        .get("ticket")
        .and_then(|t| t.parse::<uuid::Uuid>().ok())
    else {
        return sign_in_with(ctx, door, Some("code-gone"), 400, address);
    };
    match door.by_code(ticket, form.get("code").unwrap_or("")).await {
        Ok(CodeRedeemed::Signed(t)) => signed(ctx, door, t.grant, PortalMethod::EmailCode).await,
        Ok(CodeRedeemed::Wrong { tries_left }) if tries_left > 0 => {
            mail_sent(ctx, door, address, ticket, Some(tries_left))
        }
        Ok(_) => sign_in_with(ctx, door, Some("code-gone"), 400, address),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `POST /portal/{teamId}/key`.
pub(super) async fn key(ctx: &Ctx, door: &Door<'_>, form: &Form) -> Response {
    if !sign_in_ok(ctx, form) {
        return sign_in_with(ctx, door, Some("csrf-refused"), 403, "");
    }
    if !door.offers(PortalSignIn::LicenseKey) {
        return sign_in_with(ctx, door, Some("sign-in-off"), 403, "");
    }
    match door.by_key(form.get("licenseKey").unwrap_or("")).await {
        Ok(Some(license)) => {
            let grant = PortalGrant::License {
                license_id: license.id,
            };
            signed(ctx, door, grant, PortalMethod::LicenseKey).await
        }
        Ok(None) => sign_in_with(ctx, door, Some("key-wrong"), 400, ""),
        Err(e) if e.status() == 429 => too_many(ctx, door, &e),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `GET /portal/{teamId}/link/{token}`: one button, so that a mail scanner that opens the
/// link spends nothing.
pub(super) fn link_page(ctx: &Ctx, door: &Door<'_>, token: &str) -> Response {
    let lang = ctx.lang;
    let csrf = sign_in_token(ctx);
    let action = format!("/portal/{}/link/{token}", door.team.id);
    let content = html! {
        h1 { (lang.t_with("link-heading", &[("team", Arg::Text(&door.team.name))])) }
        p { (lang.t("link-body")) }
        form.card method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf.0);
            button #continue type="submit" { (lang.t("link-button")) }
        }
    };
    let response = layout(ctx, door, None, 200, content);
    with_sign_in_cookie(ctx, csrf, response)
}

/// The page of a link that has expired or was used.
fn link_gone(ctx: &Ctx, door: &Door<'_>) -> Response {
    sign_in_with(ctx, door, Some("link-gone"), 410, "")
}

/// `POST /portal/{teamId}/link/{token}`: an e-mailed link, clicked.
pub(super) async fn link(ctx: &Ctx, door: &Door<'_>, token: &str, form: &Form) -> Response {
    if !sign_in_ok(ctx, form) {
        return link_page(ctx, door, token);
    }
    if !door.offers(PortalSignIn::Email) {
        return sign_in_with(ctx, door, Some("sign-in-off"), 403, "");
    }
    match door.by_link(token).await {
        Ok(Some(PortalTicket {
            grant: grant @ PortalGrant::Email { .. },
            ..
        })) => signed(ctx, door, grant, PortalMethod::EmailLink).await,
        Ok(_) => link_gone(ctx, door),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `GET /portal/{teamId}/enter/{token}`: a link the vendor's site minted and handed to the
/// browser signs in at once.
pub(super) async fn enter(ctx: &Ctx, door: &Door<'_>, token: &str) -> Response {
    match door.by_link(token).await {
        Ok(Some(PortalTicket {
            grant: grant @ PortalGrant::Customer { .. },
            ..
        })) => signed(ctx, door, grant, PortalMethod::VendorLink).await,
        Ok(_) => link_gone(ctx, door),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `POST /portal/{teamId}/language`: the switch, kept in a cookie for a year.
pub(super) fn language(ctx: &Ctx, door: &Door<'_>, form: &Form) -> Response {
    let lang = form.get("lang").and_then(Lang::of_tag).unwrap_or(Lang::En);
    let own = format!("/portal/{}", door.team.id);
    let back = form
        .get("back")
        .filter(|b| b.starts_with(&own) && !b.contains("//") && !b.contains('\\'))
        .unwrap_or(&own);
    let mut response = page::redirect(back);
    response.headers_mut().append(
        header::SET_COOKIE,
        Cookie::Lang.set(ctx, lang.tag(), 365 * 86_400),
    );
    response
}

/// The pages of a signed-in customer.
pub(super) async fn signed_in(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    rest: &[&str],
    method: &Method,
    form: &Form,
) -> Response {
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    let team = door.team.id;
    match rest {
        [] if get => page::redirect(&format!("/portal/{team}/licenses")),
        ["licenses"] if get => licenses(ctx, door, signed),
        ["licenses", id] if get => match license_of(signed, id) {
            Some(license) => {
                let outcome = Outcome::asked(ctx);
                Box::pin(license_page(ctx, door, signed, license, outcome)).await
            }
            None => absent_signed(ctx, door, signed),
        },
        [
            "licenses",
            id,
            kind @ ("devices" | "addresses"),
            record,
            "forget",
        ] if post => {
            let record = if *kind == "devices" {
                record.parse::<HwidId>().ok().map(UsageRef::Hwid)
            } else {
                record.parse::<IpId>().ok().map(UsageRef::Ip)
            };
            let (Some(license), Some(record)) = (license_of(signed, id), record) else {
                return absent_signed(ctx, door, signed);
            };
            Box::pin(forget(ctx, door, signed, license, record)).await
        }
        ["licenses", id, "sessions", session, "end"] if post => {
            let (Some(license), Ok(session)) = (
                license_of(signed, id),
                session.parse::<licensing_core::LicenseSessionId>(),
            ) else {
                return absent_signed(ctx, door, signed);
            };
            let op = RevokeSession(license.id, session);
            match as_customer(ctx, signed, license).perform(op).await {
                Ok(_) => page::redirect(&format!(
                    "/portal/{team}/licenses/{}?done=ended",
                    license.id
                )),
                Err(e) if e.status() == 404 => absent_signed(ctx, door, signed),
                Err(e) => trouble(ctx, Some(door), &e),
            }
        }
        ["licenses", id, "devices", record, "license-file"] if get => {
            let (Some(license), Ok(record)) = (license_of(signed, id), record.parse::<HwidId>())
            else {
                return absent_signed(ctx, door, signed);
            };
            Box::pin(license_file(ctx, door, signed, license, record)).await
        }
        ["licenses", id, "downloads", product, artifact] if get => {
            let (Some(license), Ok(product), Ok(artifact)) = (
                license_of(signed, id),
                product.parse::<licensing_core::ProductId>(),
                artifact.parse::<licensing_core::ArtifactId>(),
            ) else {
                return absent_signed(ctx, door, signed);
            };
            Box::pin(download(ctx, door, signed, license, (product, artifact))).await
        }
        ["licenses", id, "billing"] if get => {
            let Some(license) = license_of(signed, id) else {
                return absent_signed(ctx, door, signed);
            };
            let page = format!("/portal/{team}/licenses/{}", license.id);
            let cx = as_customer(ctx, signed, license);
            let back = format!("{}{page}", ctx.base());
            match crate::app::billing::billing_page(&cx, license, &back).await {
                Ok(Some(url)) => page::redirect(&url),
                Ok(None) => page::redirect(&format!("{page}?done=no-billing")),
                Err(e) => trouble(ctx, Some(door), &e),
            }
        }
        ["sign-out"] if post => {
            if let Err(e) = signed.end(&ctx.state, ctx.client, ctx.now).await {
                return trouble(ctx, Some(door), &e);
            }
            let mut response = sign_in_with(ctx, door, Some("signed-out"), 200, "");
            response
                .headers_mut()
                .append(header::SET_COOKIE, Cookie::Session.set(ctx, "", 0));
            response
        }
        _ => {
            let _ = form;
            absent_signed(ctx, door, signed)
        }
    }
}

/// A customer frees device or address `record` of `license` (within the budget), confirmed
/// by e-mail when it counted until then; the license's page says what happened.
async fn forget(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    license: &License,
    record: UsageRef,
) -> Response {
    let cx = as_customer(ctx, signed, license);
    let counted = counted(&cx, license, record).await;
    let done = match record {
        UsageRef::Hwid(id) => cx
            .perform(SetHwidForgotten(license.id, id, forget_body()))
            .await
            .map(drop),
        UsageRef::Ip(id) => cx
            .perform(SetIpForgotten(license.id, id, forget_body()))
            .await
            .map(drop),
    };
    if let (Ok(()), Some((what, name))) = (&done, counted) {
        signed
            .confirm_reset(&ctx.state, &door.team, license, (what, &name), ctx.lang)
            .await;
    }
    after_forget(ctx, door, signed, license, done).await
}

/// Record `record` of the license while it counts (not forgotten): the catalog's word for its
/// kind, and its identifier or address.
async fn counted(cx: &Cx, license: &License, record: UsageRef) -> Option<(&'static str, String)> {
    let all = DeviceListQuery {
        paging: newest_hundred(),
        sort: licensing_core::api::requests::DeviceSort::LastSeenAt,
        filter: false,
    };
    match record {
        UsageRef::Hwid(id) => {
            let page = cx.perform(ListHwids(license.id, all)).await.ok()?;
            let found = page.items.into_iter().find(|h| h.hwid.id == id)?;
            Some((
                "reset-what-device",
                found.hwid.identifier.as_str().to_owned(),
            ))
        }
        UsageRef::Ip(id) => {
            let page = cx.perform(ListIps(license.id, all)).await.ok()?;
            let found = page.items.into_iter().find(|r| r.ip.id == id)?;
            Some(("reset-what-address", found.ip.address.to_string()))
        }
    }
}

fn forget_body() -> ForgottenBody {
    ForgottenBody {
        forgotten: Some(true),
    }
}

/// The license of the session named by path segment `id`.
fn license_of<'s>(signed: &'s Signed, id: &str) -> Option<&'s License> {
    id.parse::<LicenseId>()
        .ok()
        .and_then(|id| signed.license(id))
}

/// The operations' context of the signed-in customer, acting on `license`.
fn as_customer(ctx: &Ctx, signed: &Signed, license: &License) -> Cx {
    Cx::new(
        ctx.state.clone(),
        signed.session.team_id,
        signed.caller(license),
        ctx.now,
        ctx.client,
    )
}

/// A 404 inside the portal (another customer's license, say: never told apart).
fn absent_signed(ctx: &Ctx, door: &Door<'_>, signed: &Signed) -> Response {
    let lang = ctx.lang;
    let content = html! {
        h1 { (lang.t("not-found")) }
        p { a href=(format!("/portal/{}/licenses", door.team.id)) { (lang.t("back")) } }
    };
    layout(ctx, door, Some(signed), 404, content)
}

/// How a license stands, in words.
fn standing(ctx: &Ctx, license: &License, grace_days: u32) -> String {
    let lang = ctx.lang;
    if license.suspended {
        return lang.t("status-suspended");
    }
    match license.expiration_date {
        Some(date) if date <= ctx.now => match grace_end(Some(date), grace_days) {
            Some(end) if end > ctx.now => {
                lang.t_with("status-grace", &[("date", Arg::Text(&lang.date(end)))])
            }
            _ => lang.t("status-expired"),
        },
        None if license.expiration_type == ExpirationType::Duration
            && license.expiration_start == ExpirationStart::Activation =>
        {
            lang.t("status-not-started")
        }
        _ => lang.t("status-active"),
    }
}

/// When a license ends, in words.
fn expiry(ctx: &Ctx, license: &License) -> String {
    let lang = ctx.lang;
    match (license.expiration_date, license.expiration_days) {
        (Some(date), _) => lang.date(date),
        (None, Some(days)) if license.expiration_type == ExpirationType::Duration => {
            lang.t_with("expires-on-use", &[("days", Arg::Number(i64::from(days)))])
        }
        _ => lang.t("expires-never"),
    }
}

/// A file size in words a person reads: "12.3 MB".
fn size(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let b = bytes as f64;
    if bytes >= 1_000_000 {
        format!("{:.1} MB", b / 1_000_000.0)
    } else if bytes >= 1_000 {
        format!("{:.1} kB", b / 1_000.0)
    } else {
        format!("{bytes} B")
    }
}

/// `GET /portal/{teamId}/licenses`.
fn licenses(ctx: &Ctx, door: &Door<'_>, signed: &Signed) -> Response {
    let lang = ctx.lang;
    let team = door.team.id;
    let content = html! {
        h1 { (lang.t("licenses-heading")) }
        @if signed.licenses.is_empty() { p { (lang.t("no-licenses")) } }
        ul.licenses {
            @for license in &signed.licenses {
                li.card {
                    p { span.label { (lang.t("key")) } " " code.key { (license.license_key) } }
                    p { span.label { (lang.t("expires")) } " " (expiry(ctx, license)) }
                    p { a href=(format!("/portal/{team}/licenses/{}", license.id)) { (lang.t("details")) } }
                }
            }
        }
    };
    layout(ctx, door, Some(signed), 200, content)
}

/// What happened to the customer's last change, shown on the license's page.
enum Outcome {
    /// A device or address was freed.
    Forgotten,
    /// The budget is spent until `refills` (none: the license allows no resets).
    Spent {
        refills: Option<licensing_core::Timestamp>,
    },
    /// A running copy's session was ended.
    Ended,
    /// No payment provider knows the license's buyer.
    NoBilling,
}

/// A page of up to a hundred, newest first.
fn newest_hundred() -> licensing_core::api::requests::Paging {
    licensing_core::api::requests::Paging {
        page: 1,
        page_size: 100,
        direction: licensing_core::api::requests::SortDirection::Desc,
    }
}

/// What the license may download of `product`: the product's feed as the license reads it
/// (verify's checks), or `None` when it may not.
async fn feed_of(
    ctx: &Ctx,
    license: &License,
    product: licensing_core::ProductId,
) -> Result<Option<Access>, ApiError> {
    let mut seen =
        crate::app::client::Seen::updates(licensing_core::model::ClientEndpoint::Download);
    match feed::access(
        &ctx.state,
        (license.team_id, product),
        &Credential::Key(license.license_key),
        ctx.client,
        None,
        &mut seen,
    )
    .await
    {
        Ok(access) => Ok(Some(access)),
        Err(e) if e.status() < 500 => Ok(None),
        Err(e) => Err(e),
    }
}

/// `GET …/licenses/{licenseId}/downloads/{productId}/{artifactId}`: an artifact of a release
/// the license may update to, as an attachment (`release.downloaded` raised as for an updater).
async fn download(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    license: &License,
    (product, artifact): (licensing_core::ProductId, licensing_core::ArtifactId),
) -> Response {
    let access = match feed_of(ctx, license, product).await {
        Ok(Some(access)) => access,
        Ok(None) => return absent_signed(ctx, door, signed),
        Err(e) => return trouble(ctx, Some(door), &e),
    };
    let (release, artifact) = match access.artifact(artifact) {
        Ok(found) => found,
        Err(_) => return absent_signed(ctx, door, signed),
    };
    if !access
        .offered(release.branch_id)
        .all()
        .any(|offer| offer.release.id == release.id)
    {
        return absent_signed(ctx, door, signed);
    }
    let opened = match ctx.state.files.open_at(&artifact.key, 0).await {
        Ok(Some((reader, _))) => reader,
        Ok(None) => return absent_signed(ctx, door, signed),
        Err(e) => {
            return trouble(
                ctx,
                Some(door),
                &ApiError::internal_because("opening an artifact", e),
            );
        }
    };
    feed::downloaded(&ctx.state, &access, (release, artifact), ctx.client);
    // In the license's request history as an updater's download is.
    ctx.state
        .request_log
        .record(licensing_core::model::RequestLogEntry {
            team_id: license.team_id,
            license_id: license.id,
            at: ctx.now,
            count: 1,
            last_at: None,
            endpoint: licensing_core::model::ClientEndpoint::Download,
            code: licensing_core::ResultCode::Valid,
            ip_address: ctx.client,
            country: ctx
                .state
                .geo
                .country(ctx.client)
                .map(|c| c.alpha2.to_owned()),
            hardware_identifier: None,
            product_id: Some(product),
            version: Some(release.version.as_str().to_owned()),
        });
    let body = opened.into_body(artifact.size, 256 * 1024);
    let mut response = warp::reply::Reply::into_response(warp::reply::stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(artifact.size));
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", artifact.sha256)) {
        headers.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&attachment(&artifact.filename)) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    response
}

/// A `Content-Disposition` that saves as `name` (its unusual characters replaced).
fn attachment(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{safe}\"")
}

/// `GET …/licenses/{licenseId}/devices/{hwidId}/license-file`: a license file bound to that
/// device, issued as the customer (audited), as an attachment.
async fn license_file(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    license: &License,
    record: HwidId,
) -> Response {
    let cx = as_customer(ctx, signed, license);
    let all = DeviceListQuery {
        paging: newest_hundred(),
        sort: licensing_core::api::requests::DeviceSort::LastSeenAt,
        filter: false,
    };
    let devices = match cx.perform(ListHwids(license.id, all)).await {
        Ok(devices) => devices,
        Err(e) => return trouble(ctx, Some(door), &e),
    };
    let Some(device) = devices.items.iter().find(|h| h.hwid.id == record) else {
        return absent_signed(ctx, door, signed);
    };
    let body = licensing_core::api::LicenseFileBody {
        hardware_identifier: Some(device.hwid.identifier.as_str().to_owned()),
        ttl: None,
        encrypt: None,
        override_device_limit: None,
    };
    match cx.perform(IssueLicenseFile(license.id, body)).await {
        Ok(issued) => {
            let mut response = Response::new(issued.certificate.into());
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            let name = format!("license-{}.lic", &license.id.to_string()[..8]);
            if let Ok(v) = HeaderValue::from_str(&attachment(&name)) {
                headers.insert(header::CONTENT_DISPOSITION, v);
            }
            response
        }
        Err(e) if e.status() == 404 => absent_signed(ctx, door, signed),
        Err(e) if e.status() < 500 => {
            let text = e.details().to_owned();
            layout(
                ctx,
                door,
                Some(signed),
                e.status(),
                html! { p.error role="alert" { (text) } },
            )
        }
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

impl Outcome {
    /// What the license page's query says happened (the page a change redirects to).
    fn asked(ctx: &Ctx) -> Option<Self> {
        let param = |name: &str| {
            form_urlencoded::parse(ctx.query.as_bytes())
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.into_owned())
        };
        match (param("done").as_deref(), param("spent")) {
            (Some("forgotten"), _) => Some(Self::Forgotten),
            (Some("ended"), _) => Some(Self::Ended),
            (Some("no-billing"), _) => Some(Self::NoBilling),
            (_, Some(spent)) if spent == "never" => Some(Self::Spent { refills: None }),
            (_, Some(spent)) => spent.parse::<i64>().ok().map(|ms| Self::Spent {
                refills: Some(licensing_core::Timestamp::from_millis(ms)),
            }),
            _ => None,
        }
    }
}

/// After a forget, the license's page (a redirect, so that a reload sends nothing again),
/// saying what happened.
async fn after_forget(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    license: &License,
    done: Result<(), ApiError>,
) -> Response {
    let page = format!("/portal/{}/licenses/{}", door.team.id, license.id);
    match done {
        Ok(()) => page::redirect(&format!("{page}?done=forgotten")),
        Err(e) if e.status() == 403 => {
            let refills = e.retry_after().map_or_else(
                || "never".to_owned(),
                |secs| (ctx.now.as_millis() + i64::try_from(secs).unwrap_or(0) * 1000).to_string(),
            );
            page::redirect(&format!("{page}?spent={refills}"))
        }
        Err(e) if e.status() == 404 => absent_signed(ctx, door, signed),
        Err(e) => trouble(ctx, Some(door), &e),
    }
}

/// `GET /portal/{teamId}/licenses/{licenseId}`: the license with its key, standing, features,
/// devices and addresses (each with the button that frees it), and the budget.
async fn license_page(
    ctx: &Ctx,
    door: &Door<'_>,
    signed: &Signed,
    license: &License,
    outcome: Option<Outcome>,
) -> Response {
    let lang = ctx.lang;
    let cx = as_customer(ctx, signed, license);
    let all = DeviceListQuery {
        paging: licensing_core::api::requests::Paging {
            page: 1,
            page_size: 100,
            direction: licensing_core::api::requests::SortDirection::Desc,
        },
        sort: licensing_core::api::requests::DeviceSort::LastSeenAt,
        filter: true,
    };
    let read = async {
        let detail = cx.perform(GetLicense(license.id)).await?;
        let hwids = cx.perform(ListHwids(license.id, all.clone())).await?;
        let ips = cx.perform(ListIps(license.id, all.clone())).await?;
        let sessions = cx
            .perform(ListSessions(license.id, newest_hundred()))
            .await?;
        let context = crate::app::client::team_context(&ctx.state, door.team.id).await?;
        let mut feeds = Vec::new();
        for product in &detail.products {
            if let Some(access) = feed_of(ctx, license, product.id).await? {
                feeds.push(access);
            }
        }
        let billing = crate::app::billing::offers_billing(&cx).await?;
        Ok::<_, ApiError>((detail, hwids, ips, sessions, context, feeds, billing))
    };
    let (detail, hwids, ips, sessions, context, feeds, billing) = match read.await {
        Ok(read) => read,
        Err(e) if e.status() == 404 => return absent_signed(ctx, door, signed),
        Err(e) => return trouble(ctx, Some(door), &e),
    };
    let budget = context
        .policies
        .of(license)
        .map(|p| p.self_service_resets)
        .unwrap_or_default();
    let grace = context.policies.grace_days(license);
    let features: Vec<&str> = detail
        .license
        .entitlement_ids
        .iter()
        .filter_map(|id| context.entitlements.get(id).map(String::as_str))
        .collect();
    let team = door.team.id;
    let base = format!("/portal/{team}/licenses/{}", license.id);
    let csrf = &signed.session.csrf_token;
    let days = ("days", Arg::Number(i64::from(budget.period_days)));
    let count = ("count", Arg::Number(i64::from(budget.count)));
    let may_forget = budget.count > 0;
    let content = html! {
        p { a href=(format!("/portal/{team}/licenses")) { "← " (lang.t("back")) } }
        h1 { (lang.t("license-heading")) }
        @match &outcome {
            Some(Outcome::Forgotten) => p.notice role="status" { (lang.t("forgotten")) },
            Some(Outcome::Ended) => p.notice role="status" { (lang.t("session-ended")) },
            Some(Outcome::NoBilling) => p.error role="alert" { (lang.t("billing-none")) },
            Some(Outcome::Spent { refills: Some(at) }) => p.error role="alert" #budget-spent {
                (lang.t_with("budget-spent", &[count, days, ("date", Arg::Text(&lang.date(*at)))]))
            },
            Some(Outcome::Spent { refills: None }) => p.error role="alert" #budget-spent {
                (lang.t_with("budget-none", &[("team", Arg::Text(&door.team.name))]))
            },
            None => {},
        }
        dl.facts {
            dt { (lang.t("key")) } dd { code.key { (license.license_key) } }
            dt { (lang.t("status")) } dd #status { (standing(ctx, &detail.license, grace)) }
            dt { (lang.t("expires")) } dd { (expiry(ctx, &detail.license)) }
            @if !detail.products.is_empty() {
                dt { (lang.t("products")) }
                dd { @for (i, p) in detail.products.iter().enumerate() { @if i > 0 { ", " } (p.name) } }
            }
            @if !features.is_empty() {
                dt { (lang.t("entitlements")) }
                dd { @for (i, f) in features.iter().enumerate() { @if i > 0 { ", " } code { (f) } } }
            }
        }
        @if billing {
            p { a #billing href=(format!("{base}/billing")) { (lang.t("billing")) } }
        }
        @if may_forget {
            p.hint { (lang.t_with("budget", &[count, days])) }
        } @else {
            p.hint { (lang.t_with("budget-none", &[("team", Arg::Text(&door.team.name))])) }
        }
        h2 { (lang.t("devices-heading")) }
        @if hwids.items.is_empty() { p { (lang.t("none-yet")) } }
        ul.records #devices {
            @for h in &hwids.items {
                li {
                    span {
                        @if let Some(label) = h.hwid.label() { strong.device-name { (label) } " " }
                        code { (h.hwid.identifier.as_str()) }
                    }
                    span.hint { (lang.t("last-seen")) " " (lang.date(h.hwid.last_seen_at)) }
                    @if h.status != RecordStatus::Forgotten {
                        a.file href=(format!("{base}/devices/{}/license-file", h.hwid.id)) title=(lang.t("license-file-hint")) { (lang.t("license-file")) }
                    }
                    @if h.status == RecordStatus::Forgotten {
                        span.tag { (lang.t("forgotten-state")) }
                    } @else if may_forget {
                        form method="post" action=(format!("{base}/devices/{}/forget", h.hwid.id)) {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { (lang.t("forget-button")) }
                        }
                    }
                }
            }
        }
        @if !sessions.items.is_empty() {
            h2 { (lang.t("sessions-heading")) }
            ul.records #sessions {
                @for session in &sessions.items {
                    li {
                        span {
                            @if let Some(label) = hwids.items.iter().find(|h| h.hwid.identifier == session.hardware_identifier).and_then(|h| h.hwid.label()) {
                                strong.device-name { (label) } " "
                            }
                            code { (session.hardware_identifier.as_str()) }
                        }
                        span.hint { (lang.t("started")) " " (lang.date(session.started_at)) }
                        form method="post" action=(format!("{base}/sessions/{}/end", session.id)) {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { (lang.t("end-button")) }
                        }
                    }
                }
            }
        }
        h2 { (lang.t("downloads-heading")) }
        @let offers: Vec<(&Access, &licensing_core::model::Release)> = feeds.iter().filter_map(|access| {
            let newest = access.offered(None).all().find(|o| !o.release.artifacts.is_empty()).map(|o| o.release.id)?;
            access.releases.iter().find(|r| r.id == newest).map(|r| (access, r))
        }).collect();
        @if offers.is_empty() { p #downloads { (lang.t("downloads-none")) } }
        @for (access, release) in &offers {
            div.card.download {
                p { strong { (access.product.name) } " · " (lang.t_with("version", &[("version", Arg::Text(release.version.as_str()))])) }
                @if let Some(notes) = &release.notes { p.hint { (notes) } }
                ul.records #downloads {
                    @for artifact in &release.artifacts {
                        li {
                            a href=(format!("{base}/downloads/{}/{}", access.product.id, artifact.id)) download=(artifact.filename) { (artifact.filename) }
                            span.hint { (artifact.platform.as_str()) " · " (artifact.arch.as_str()) " · " (size(artifact.size)) }
                        }
                    }
                }
            }
        }
        h2 { (lang.t("addresses-heading")) }
        @if ips.items.is_empty() { p { (lang.t("none-yet")) } }
        ul.records #addresses {
            @for r in &ips.items {
                li {
                    span { code { (r.ip.address) } }
                    span.hint { (lang.t("last-seen")) " " (lang.date(r.ip.last_seen_at)) }
                    @if r.status == RecordStatus::Forgotten {
                        span.tag { (lang.t("forgotten-state")) }
                    } @else if may_forget {
                        form method="post" action=(format!("{base}/addresses/{}/forget", r.ip.id)) {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { (lang.t("forget-button")) }
                        }
                    }
                }
            }
        }
    };
    layout(ctx, door, Some(signed), 200, content)
}
