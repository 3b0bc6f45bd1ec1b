//! Signing in and out, setting a password through its link, and the account page.
//!
//! **Guessing is limited.** A failed sign-in counts against the client's address (the limit of
//! failed authentications the API keys share) and against the account name tried, in tiers of
//! growing windows (five a minute, twenty an hour, a hundred a day), whether or not such an
//! account exists. Past a limit the form is refused before the password is looked at, with how
//! long to wait. On PostgreSQL the counters are shared by every instance.

use licensing_core::StaffId;
use licensing_core::store::{StaffStore, TeamStore};
use maud::{Markup, html};
use warp::http::header;

use super::api::Failure;
use super::page::{self, Form, Nav};
use super::session;
use super::{Ctx, Staff};
use crate::http::Response;
use crate::routes::dev::Body;
use crate::services::audit::Acting;
use crate::services::ratelimit::{RateStatus, ip_key};
use crate::services::staff::{self as staff_service, LinkRefused};
use crate::services::two_step;

/// `GET /dashboard/sign-in`.
pub(crate) async fn sign_in_page(ctx: &Ctx) -> Response {
    if let Ok(session::Current::SignedIn(_)) = session::current(ctx).await {
        return page::redirect(&session::safe_next(ctx.param("next").as_deref()));
    }
    let notice = match ctx.param("notice").as_deref() {
        Some("session-ended") => Some("Your session has ended. Please sign in again."),
        Some("signed-out") => Some("You are signed out."),
        Some("signed-out-everywhere") => Some("You are signed out on every device."),
        Some("password-set") => {
            Some("Your password is set. Sign in with it and your two-step code.")
        }
        _ => None,
    };
    sign_in_form(ctx, 200, None, notice, ctx.param("next").as_deref(), "")
}

fn sign_in_form(
    ctx: &Ctx,
    status: u16,
    problem: Option<&str>,
    notice: Option<&str>,
    next: Option<&str>,
    email: &str,
) -> Response {
    let ask_code = status == 401 && problem == Some(CODE_NEEDED);
    let (token, cookie) = session::sign_in_token(ctx);
    let markup = page::bare(
        "Sign in",
        html! {
            h1 { "Sign in" }
            @if let Some(notice) = notice {
                p.notice role="status" { (notice) }
            }
            @if let Some(problem) = problem {
                div.problems role="alert" { p { (problem) } }
            }
            form method="post" action="/dashboard/sign-in" {
                input type="hidden" name="csrf" value=(token);
                @if let Some(next) = next {
                    input type="hidden" name="next" value=(next);
                }
                label for="email" { "E-mail address" }
                input #email type="email" name="email" value=(email) autocomplete="username" required autofocus[!ask_code];
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
                label for="code" { "Code" span.hint { "Only if you turned on two-step sign-in: the six digits your authenticator app shows, or a recovery code." } }
                input #code type="text" name="code" autocomplete="one-time-code" inputmode="numeric" autofocus[ask_code];
                p { button type="submit" { "Sign in" } }
            }
            p.hint { "No password yet, or forgot it? Ask an owner or admin of your team for a set-password link." }
        },
    );
    let mut response = page::html_response(status, markup);
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The limiter key of an account name: the SHA-256 of the trimmed, lower-cased address.
fn account_key(email: &str) -> [u8; 32] {
    <sha2::Sha256 as sha2::Digest>::digest(email.trim().to_lowercase().as_bytes()).into()
}

/// The first limit the address or the account name has passed, if any.
async fn throttled(ctx: &Ctx, account: &[u8; 32]) -> Option<RateStatus> {
    let limits = &ctx.state.limits;
    if let Some(limiter) = &limits.auth_failures
        && let Some(status) = limiter.blocked(&ip_key(ctx.client)).await
    {
        return Some(status);
    }
    for limiter in &limits.sign_in_account {
        if let Some(status) = limiter.blocked(account).await {
            return Some(status);
        }
    }
    None
}

/// Counts a failed sign-in against the address and every tier of the account name.
async fn count_failure(ctx: &Ctx, account: &[u8; 32]) {
    let limits = &ctx.state.limits;
    if let Some(limiter) = &limits.auth_failures {
        limiter.check(&ip_key(ctx.client)).await;
    }
    for limiter in &limits.sign_in_account {
        limiter.check(account).await;
    }
}

/// "N seconds" or "N minutes" or "N hours", rounded up.
fn wait_text(seconds: u64) -> String {
    match seconds {
        0..=90 => format!("{} seconds", seconds.max(1)),
        91..=5400 => format!("{} minutes", seconds.div_ceil(60)),
        _ => format!("{} hours", seconds.div_ceil(3600)),
    }
}

/// `POST /dashboard/sign-in`.
pub(crate) async fn sign_in(ctx: &Ctx, body: Body) -> Response {
    let form = match Form::read(body).await {
        Ok(form) => form,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let next = form.get("next");
    let email = form.get("email").unwrap_or("").trim();
    if !session::sign_in_token_ok(ctx, &form) {
        return sign_in_form(
            ctx,
            403,
            Some("This sign-in form has expired. Please try again."),
            None,
            next,
            email,
        );
    }
    let password = form.get("password").unwrap_or("");
    if email.is_empty() || password.is_empty() {
        return sign_in_form(
            ctx,
            400,
            Some("Enter your e-mail address and your password."),
            None,
            next,
            email,
        );
    }
    let account = account_key(email);
    if let Some(status) = throttled(ctx, &account).await {
        let wait = wait_text(status.retry_after_secs.unwrap_or(1));
        let mut response = sign_in_form(
            ctx,
            429,
            Some(&format!(
                "Too many failed sign-ins for this account or from your address. Wait {wait} before trying again."
            )),
            None,
            next,
            email,
        );
        status.apply(response.headers_mut());
        return response;
    }
    let user = match staff_service::check_sign_in(&ctx.state.store, email, password).await {
        Ok(user) => user,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let Some(user) = user else {
        count_failure(ctx, &account).await;
        return sign_in_form(
            ctx,
            401,
            Some("That e-mail address and password do not match an account."),
            None,
            next,
            email,
        );
    };
    let user = if user.two_step.is_some() {
        let code = form.get("code").unwrap_or("").trim();
        if code.is_empty() {
            return sign_in_form(ctx, 401, Some(CODE_NEEDED), None, next, email);
        }
        let acting = Acting::staff(&user, Some(ctx.client));
        match two_step::sign_in(&ctx.state.store, &user, code, ctx.now, &acting).await {
            Ok(Some(user)) => user,
            Ok(None) => {
                count_failure(ctx, &account).await;
                return sign_in_form(
                    ctx,
                    401,
                    Some(
                        "That code is not right, or was used already. Type your password and the code your app shows now, or an unused recovery code.",
                    ),
                    None,
                    next,
                    email,
                );
            }
            Err(e) => return page::failure(ctx, None, &e.into()),
        }
    } else {
        user
    };
    signed_in(ctx, user, &session::safe_next(next)).await
}

/// What the sign-in form says when the password was right and the second step is missing.
const CODE_NEEDED: &str = "This account signs in in two steps: type your password again, and the six-digit code your authenticator app shows (or a recovery code).";

/// Starts a session and sends the browser to `target`.
async fn signed_in(ctx: &Ctx, user: licensing_core::model::StaffUser, target: &str) -> Response {
    match session::start(ctx, user).await {
        Ok((_, cookie)) => {
            let mut response = page::redirect(target);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }
        Err(e) => page::failure(ctx, None, &e.into()),
    }
}

/// The page of an invalid set-password link.
fn link_refused() -> Response {
    page::html_response(
        404,
        page::bare(
            "Link not valid",
            html! {
                h1 { "This link is not valid" }
                p { "Set-password links work once, for three days. Ask an owner or admin of your team for a new one." }
                p { a href="/dashboard/sign-in" { "Sign in" } }
            },
        ),
    )
}

fn set_password_form(ctx: &Ctx, email: &str, status: u16, problem: Option<&str>) -> Response {
    let action = format!("/dashboard/{}", ctx.path);
    page::html_response(
        status,
        page::bare(
            "Set your password",
            html! {
                h1 { "Set your password" }
                p { "For " strong { (email) } "." }
                @if let Some(problem) = problem {
                    div.problems role="alert" { p { (problem) } }
                }
                form method="post" action=(action) {
                    input type="email" name="email" value=(email) autocomplete="username" hidden;
                    label for="password" {
                        "New password"
                        span.hint { "At least 12 characters. A few unrelated words make a good one." }
                    }
                    input #password type="password" name="password" autocomplete="new-password" minlength="12" required autofocus;
                    label for="confirm" { "The same again" }
                    input #confirm type="password" name="confirm" autocomplete="new-password" required;
                    p { button type="submit" { "Set password and sign in" } }
                }
            },
        ),
    )
}

/// `GET /dashboard/set-password/{id}/{secret}`.
pub(crate) async fn set_password_page(ctx: &Ctx, id: &str, secret: &str) -> Response {
    let Ok(id) = id.parse::<StaffId>() else {
        return link_refused();
    };
    match staff_service::link_user(&ctx.state.store, id, secret, ctx.now).await {
        Ok(Some(user)) => set_password_form(ctx, user.email.as_str(), 200, None),
        Ok(None) => link_refused(),
        Err(e) => page::failure(ctx, None, &e.into()),
    }
}

/// `POST /dashboard/set-password/{id}/{secret}`: the password is set, the link used up, every
/// other session of the account ended, and this browser signed in.
pub(crate) async fn set_password(ctx: &Ctx, id: &str, secret: &str, body: Body) -> Response {
    let Ok(id) = id.parse::<StaffId>() else {
        return link_refused();
    };
    let form = match Form::read(body).await {
        Ok(form) => form,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let user = match staff_service::link_user(&ctx.state.store, id, secret, ctx.now).await {
        Ok(Some(user)) => user,
        Ok(None) => return link_refused(),
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let password = form.get("password").unwrap_or("");
    if form.get("confirm") != Some(password) {
        return set_password_form(
            ctx,
            user.email.as_str(),
            400,
            Some("The two passwords differ. Type the same password twice."),
        );
    }
    match staff_service::set_password(
        &ctx.state.store,
        id,
        secret,
        password,
        ctx.now,
        Some(ctx.client),
    )
    .await
    {
        // A link replaces a password, not the second step: the account signs in with both.
        Ok(Ok(user)) if user.two_step.is_some() => {
            page::redirect("/dashboard/sign-in?notice=password-set")
        }
        Ok(Ok(user)) => signed_in(ctx, user, "/dashboard/?notice=password-set").await,
        Ok(Err(LinkRefused::Invalid)) => link_refused(),
        Ok(Err(LinkRefused::Password(rule))) => set_password_form(
            ctx,
            user.email.as_str(),
            400,
            Some(&format!("This password {rule}.")),
        ),
        Err(e) => page::failure(ctx, None, &e.into()),
    }
}

/// `POST /dashboard/sign-out` and `/dashboard/sign-out-everywhere`.
pub(crate) async fn sign_out(ctx: &Ctx, staff: &Staff, everywhere: bool) -> Response {
    let store = &ctx.state.store;
    let ended = if everywhere {
        store.delete_sessions_of(staff.user.id).await.map(|_| ())
    } else {
        store.delete_session(&staff.session.id_sha256).await
    };
    if let Err(e) = ended {
        return page::failure(ctx, Some(staff), &Failure::from(e));
    }
    let notice = if everywhere {
        "signed-out-everywhere"
    } else {
        "signed-out"
    };
    let mut response = page::redirect(&format!("/dashboard/sign-in?notice={notice}"));
    response
        .headers_mut()
        .append(header::SET_COOKIE, session::clear(ctx));
    response
}

/// `GET /dashboard/account`.
pub(crate) fn account_page(ctx: &Ctx, staff: &Staff) -> Response {
    let settings = ctx.settings();
    let started = page::when(staff.session.created_at);
    let content: Markup = html! {
        h1 { "Your account" }
        div.card {
            dl.facts {
                dt { "E-mail address" } dd { (staff.user.email.as_str()) }
                dt { "Role" } dd { (staff.user.role.as_str()) }
                dt { "Signed in" } dd { (started) }
                dt { "Session" } dd {
                    "Ends after " (settings.idle_minutes) " minutes without activity, and "
                    (settings.session_hours) " hours after signing in."
                }
            }
        }
        h2 { "Two-step sign-in" }
        @if let Some(two_step) = &staff.user.two_step {
            p {
                "On since " (page::when(two_step.since)) ": signing in takes your password and the code of your authenticator app. "
                (two_step.recovery_codes.len()) " of " (two_step::RECOVERY_CODES) " recovery codes are unused."
            }
            form method="post" action="/dashboard/account/two-step/off" {
                (page::csrf(staff))
                label for="off-code" { "Code" span.hint { "To turn it off: the code your app shows now, or a recovery code." } }
                input #off-code type="text" name="code" autocomplete="one-time-code" required;
                p { button.secondary type="submit" { "Turn two-step sign-in off" } }
            }
        } @else {
            p { "Off. With it on, signing in also takes a code from an authenticator app on your phone, so a stolen password is not enough." }
            p { a.button href="/dashboard/account/two-step" { "Turn on two-step sign-in" } }
        }
        h2 { "Sessions" }
        p { "Signed in on another computer you no longer use, or lost one? End every session of your account, this one included." }
        form method="post" action="/dashboard/sign-out-everywhere" {
            (page::csrf(staff))
            button.secondary type="submit" { "Sign out everywhere" }
        }
    };
    page::html_response(
        200,
        page::layout(ctx, staff, Nav::Account, "Your account", content),
    )
}

/// The name an authenticator app shows the account under: the team's name.
async fn issuer(ctx: &Ctx, staff: &Staff) -> String {
    match ctx.state.store.get_team(staff.user.team_id).await {
        Ok(Some(team)) => format!("{} licensing", team.name),
        _ => "Licensing".to_owned(),
    }
}

/// The setup page: the QR code and the secret of a new authenticator entry, and the form that
/// turns two-step sign-in on with the code the app then shows.
async fn setup_page(ctx: &Ctx, staff: &Staff, secret: &str, failure: Option<&Failure>) -> Response {
    let issuer = issuer(ctx, staff).await;
    let url = two_step::setup_url(secret, &issuer, staff.user.email.as_str()).unwrap_or_default();
    let qr = qrcode::QrCode::new(url.as_bytes()).map(|code| {
        code.render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build()
            // Inline in HTML: the XML declaration has no place there.
            .split_once("?>")
            .map_or_else(String::new, |(_, svg)| svg.to_owned())
    });
    let grouped: Vec<&str> = secret
        .as_bytes()
        .chunks(4)
        .filter_map(|c| std::str::from_utf8(c).ok())
        .collect();
    let content = html! {
        h1 { "Turn on two-step sign-in" }
        (page::problems(failure))
        ol.steps {
            li {
                "Scan this code with an authenticator app (such as Aegis, Google Authenticator, 1Password or Microsoft Authenticator):"
                @if let Ok(svg) = &qr {
                    figure.qr role="img" aria-label="QR code of the authenticator entry" { (maud::PreEscaped(svg)) }
                }
                "On a phone, "
                a href=(url) { "open it in the authenticator app" }
                ", or add the entry by hand, with this key (time-based):"
                p { code.secret { (grouped.join(" ")) } }
            }
            li {
                "Type the six digits the app shows:"
                form method="post" action="/dashboard/account/two-step" {
                    (page::csrf(staff))
                    input type="hidden" name="secret" value=(secret);
                    label for="code" { "Code" @if let Some(m) = failure.and_then(|f| f.field("code")) { span.field-error { (m) } } }
                    input #code type="text" name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus;
                    p { button type="submit" { "Turn on" } }
                }
            }
        }
    };
    page::html_response(
        failure.map_or(200, |f| f.status),
        page::layout(ctx, staff, Nav::Account, "Two-step sign-in", content),
    )
}

/// `GET /dashboard/account/two-step`.
pub(crate) async fn two_step_page(ctx: &Ctx, staff: &Staff) -> Response {
    if staff.user.two_step.is_some() {
        return page::redirect("/dashboard/account");
    }
    setup_page(ctx, staff, &two_step::new_secret(), None).await
}

/// `POST /dashboard/account/two-step`: turns it on, and shows the recovery codes once.
pub(crate) async fn turn_on(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let secret = form.get("secret").unwrap_or("");
    // The secret came back from the page this session was shown; it must still be one.
    if two_step::setup_url(secret, "x", "x").is_none() || secret.len() < 32 {
        return setup_page(ctx, staff, &two_step::new_secret(), None).await;
    }
    let acting = Acting::staff(&staff.user, Some(ctx.client));
    let code = form.get("code").unwrap_or("");
    match two_step::turn_on(
        &ctx.state.store,
        &staff.user,
        secret,
        code,
        ctx.now,
        &acting,
    )
    .await
    {
        Ok(codes) => {
            let content = html! {
                h1 { "Two-step sign-in is on" }
                div.card {
                    p { "Keep these recovery codes somewhere safe, away from your phone. Each signs you in once instead of the app's code, if you lose it. They are shown only now." }
                    ul.recovery-codes {
                        @for code in &codes { li { code { (code) } } }
                    }
                    p { button.secondary.small.copy type="button" data-copy=(codes.join("\n")) hidden { "Copy all" } }
                }
                p { a.button href="/dashboard/account" { "Done" } }
            };
            page::html_response(
                200,
                page::layout(ctx, staff, Nav::Account, "Two-step sign-in", content),
            )
        }
        Err(e) => setup_page(ctx, staff, secret, Some(&e.into())).await,
    }
}

/// `POST /dashboard/account/two-step/off`: with a good code, turns it off.
pub(crate) async fn turn_off(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let Some(current) = &staff.user.two_step else {
        return page::redirect("/dashboard/account");
    };
    let code = form.get("code").unwrap_or("");
    if two_step::spend(current, code, ctx.now).is_none() {
        return page::failure(
            ctx,
            Some(staff),
            &Failure::new(
                400,
                "That code is not right, or was used already, so two-step sign-in stays on. Go back and type the code your app shows now, or an unused recovery code.",
            ),
        );
    }
    let acting = Acting::staff(&staff.user, Some(ctx.client));
    match two_step::turn_off(&ctx.state.store, &staff.user, ctx.now, &acting).await {
        Ok(()) => page::redirect("/dashboard/account?notice=two-step-off"),
        Err(e) => page::failure(ctx, Some(staff), &e.into()),
    }
}
