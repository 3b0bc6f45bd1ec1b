//! Signing in and out, setting a password through its link, and the account page.
//!
//! **Guessing is limited, and cannot lock people out.** A failed sign-in from a browser that
//! never signed in to the account counts against the client's address (the limit of failed
//! authentications the API keys share), against the account name from that address, in tiers
//! of growing windows (five a minute, twenty an hour, a hundred a day), and against the account
//! name from all such browsers together (a hundred an hour, three hundred a day), whether or
//! not such an account exists. A browser that signed in to the account before carries a device
//! cookie (signed with a key derived from the account's password hash, good for a year) and
//! counts only against itself, in the first tiers: whoever guesses elsewhere, from the
//! person's own address or from a thousand, cannot keep that browser out. Past a limit the form
//! is refused before the password is looked at, with how long to wait. On PostgreSQL the
//! counters are shared by every instance.
//!
//! **One address, several teams.** An address may have an account in several teams (each its
//! own, with its own password). A password that opens more than one asks which team.
//!
//! Sign-ins, sign-outs and failed sign-ins (of an address that has an account) are in the
//! audit log of the account's team.

use licensing_core::model::StaffUser;
use licensing_core::{StaffId, TeamId};
use maud::{Markup, html};
use warp::http::header;

use super::api::{self, Failure};
use super::page::{self, Form, Nav};
use super::sign_in;
use super::{Ctx, Staff};
use crate::app::sign_in::{
    ChangeOwnEmail, ChangeOwnPassword, OwnTeamName, SetOwnTimeZone, SignOut, TurnOffTwoStep,
    TurnOnTwoStep,
};
use crate::app::sign_in_throttle::Guesser;
use crate::app::staff::{LinkRefused, check_sign_in};
use crate::app::two_step;
use crate::http::Body;
use crate::http::Response;

/// `GET /dashboard/sign-in`.
pub(crate) async fn sign_in_page(ctx: &Ctx) -> Response {
    if let Ok(sign_in::Current::SignedIn(_)) = sign_in::current(ctx).await {
        return page::redirect(&sign_in::safe_next(ctx.param("next").as_deref()));
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
    SignInForm {
        status: 200,
        notice,
        next: ctx.param("next").as_deref(),
        ..SignInForm::default()
    }
    .render(ctx)
}

/// The sign-in form as one answer shows it.
#[derive(Default)]
struct SignInForm<'a> {
    status: u16,
    problem: Option<&'a str>,
    notice: Option<&'a str>,
    next: Option<&'a str>,
    email: &'a str,
    /// The teams to choose from, when the password opened accounts in several.
    teams: Vec<(TeamId, String)>,
}

impl SignInForm<'_> {
    fn render(&self, ctx: &Ctx) -> Response {
        let ask_code = self.status == 401 && self.problem == Some(CODE_NEEDED);
        let choose = !self.teams.is_empty();
        let (token, cookie) = sign_in::sign_in_token(ctx);
        let markup = page::bare(
            "Sign in",
            html! {
                h1 { "Sign in" }
                @if let Some(notice) = self.notice {
                    p.notice role="status" { (notice) }
                }
                @if let Some(problem) = self.problem {
                    div.problems role="alert" { p { (problem) } }
                }
                form method="post" action="/dashboard/sign-in" {
                    input type="hidden" name="csrf" value=(token);
                    @if let Some(next) = self.next {
                        input type="hidden" name="next" value=(next);
                    }
                    label for="email" { "E-mail address" }
                    input #email type="email" name="email" value=(self.email) autocomplete="username" required autofocus[!ask_code && !choose];
                    @if choose {
                        label for="team" { "Team" span.hint { "Your address has an account in each of these teams." } }
                        select #team name="team" required autofocus {
                            @for (id, name) in &self.teams {
                                option value=(id) { (name) }
                            }
                        }
                    }
                    label for="password" { "Password" }
                    input #password type="password" name="password" autocomplete="current-password" required;
                    label for="code" { "Code" span.hint { "Only if you turned on two-step sign-in: the six digits your authenticator app shows, or a recovery code." } }
                    input #code type="text" name="code" autocomplete="one-time-code" inputmode="numeric" autofocus[ask_code];
                    p { button type="submit" { "Sign in" } }
                }
                p.hint { "No password yet, or forgot it? Ask an owner or admin of your team for a set-password link." }
            },
        );
        let mut response = page::html_response(self.status, markup);
        if let Some(cookie) = cookie {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
        response
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
    let again = |status, problem| {
        SignInForm {
            status,
            problem: Some(problem),
            next,
            email,
            ..SignInForm::default()
        }
        .render(ctx)
    };
    if !sign_in::sign_in_token_ok(ctx, &form) {
        return again(403, "This sign-in form has expired. Please try again.");
    }
    let password = form.get("password").unwrap_or("");
    if email.is_empty() || password.is_empty() {
        return again(400, "Enter your e-mail address and your password.");
    }
    let team: Option<TeamId> = match form.get("team").filter(|t| !t.is_empty()) {
        Some(text) => match text.parse() {
            Ok(team) => Some(team),
            Err(_) => return again(400, "Choose one of the teams listed."),
        },
        None => None,
    };
    let accounts = match ctx.visitor().accounts_of(email).await {
        Ok(accounts) => accounts,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let guesser = Guesser::of(
        ctx.client,
        email,
        sign_in::known_device(ctx, &accounts).map(|d| (d.user, d.nonce)),
    );
    if let Some(status) = guesser.throttled(&ctx.state.limits).await {
        let wait = wait_text(status.retry_after_secs.unwrap_or(1));
        let mut response = again(
            429,
            &format!(
                "Too many failed sign-ins for this account or from your address. Wait {wait} before trying again."
            ),
        );
        status.apply(response.headers_mut());
        return response;
    }
    let matching = match check_sign_in(&accounts, password).await {
        Ok(matching) => matching,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let mut matching: Vec<StaffUser> = matching
        .into_iter()
        .filter(|u| team.is_none_or(|t| u.team_id == t))
        .collect();
    if matching.is_empty() {
        guesser.failed(&ctx.state.limits).await;
        ctx.visitor().record_failure(&accounts, "password").await;
        return again(
            401,
            "That e-mail address and password do not match an account.",
        );
    }
    if matching.len() > 1 {
        // The password opens an account in several teams: the person says which.
        let teams = match ctx.visitor().teams_of(&matching).await {
            Ok(teams) => teams,
            Err(e) => return page::failure(ctx, None, &e.into()),
        };
        return SignInForm {
            status: 200,
            notice: Some("Your address has an account in several teams. Choose one, and type your password again."),
            next,
            email,
            teams,
            ..SignInForm::default()
        }
        .render(ctx);
    }
    let user = matching.remove(0);
    let (user, how) = if user.two_step.is_some() {
        let code = form.get("code").unwrap_or("").trim();
        if code.is_empty() {
            return again(401, CODE_NEEDED);
        }
        match ctx.visitor().second_step(&user, code).await {
            Ok(Some(user)) => (user, "password and second step"),
            Ok(None) => {
                guesser.failed(&ctx.state.limits).await;
                ctx.visitor()
                    .record_failure(std::slice::from_ref(&user), "second step")
                    .await;
                return again(
                    401,
                    "That code is not right, or was used already. Type your password and the code your app shows now, or an unused recovery code.",
                );
            }
            Err(e) => return page::failure(ctx, None, &e.into()),
        }
    } else {
        (user, "password")
    };
    signed_in(ctx, user, &sign_in::safe_next(next), how).await
}

/// What the sign-in form says when the password was right and the second step is missing.
const CODE_NEEDED: &str = "This account signs in in two steps: type your password again, and the six-digit code your authenticator app shows (or a recovery code).";

/// Starts a session (signed in `how`) and sends the browser to `target`, remembering the
/// browser as one that signed in to the account.
async fn signed_in(
    ctx: &Ctx,
    user: licensing_core::model::StaffUser,
    target: &str,
    how: &str,
) -> Response {
    let device = sign_in::device_cookie(ctx, &user);
    match sign_in::start(ctx, user, how).await {
        Ok((_, cookie)) => {
            let mut response = page::redirect(target);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            if let Some(device) = device {
                response.headers_mut().append(header::SET_COOKIE, device);
            }
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
                p { "Set-password and address links work once, for three days. Ask an owner or admin of your team for a new set-password link, or change your address again from your account page." }
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
    match ctx.visitor().link_user(id, secret).await {
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
    let user = match ctx.visitor().link_user(id, secret).await {
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
    match ctx.visitor().set_password(id, secret, password).await {
        // A link replaces a password, not the second step: the account signs in with both.
        Ok(Ok(user)) if user.two_step.is_some() => {
            page::redirect("/dashboard/sign-in?notice=password-set")
        }
        Ok(Ok(user)) => {
            signed_in(
                ctx,
                user,
                "/dashboard/?notice=password-set",
                "set-password link",
            )
            .await
        }
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
    let signing_out = SignOut {
        session: staff.session.id_sha256.clone(),
        everywhere,
    };
    if let Err(e) = api::perform(ctx, staff, signing_out).await {
        return page::failure(ctx, Some(staff), &e);
    }
    let notice = if everywhere {
        "signed-out-everywhere"
    } else {
        "signed-out"
    };
    let mut response = page::redirect(&format!("/dashboard/sign-in?notice={notice}"));
    response
        .headers_mut()
        .append(header::SET_COOKIE, sign_in::clear(ctx));
    response
}

/// `GET /dashboard/account`.
pub(crate) async fn account_page(ctx: &Ctx, staff: &Staff) -> Response {
    account_view(ctx, staff, None).await
}

/// One of the account page's forms refused: which (`password`, `email`, `time-zone`), why, and
/// what was sent.
struct Refused<'a> {
    form: &'static str,
    failure: &'a Failure,
    sent: &'a Form,
}

/// The account page again after form `which` was refused.
async fn refused(
    ctx: &Ctx,
    staff: &Staff,
    which: &'static str,
    failure: &Failure,
    sent: &Form,
) -> Response {
    let refused = Refused {
        form: which,
        failure,
        sent,
    };
    account_view(ctx, staff, Some(refused)).await
}

/// The account page, with a refused form's problems beside it.
async fn account_view(ctx: &Ctx, staff: &Staff, refused: Option<Refused<'_>>) -> Response {
    let settings = ctx.settings();
    let problems = |form: &str| {
        page::problems(
            refused
                .as_ref()
                .filter(|r| r.form == form)
                .map(|r| r.failure),
        )
    };
    let sent_email = refused
        .as_ref()
        .filter(|r| r.form == "email")
        .and_then(|r| r.sent.get("email"))
        .unwrap_or_else(|| staff.user.email.as_str());
    let zone = page::zone(staff);
    let status = refused.as_ref().map_or(200, |r| r.failure.status);
    let started = page::when(staff, staff.session.created_at);
    let team = match api::perform(ctx, staff, OwnTeamName).await {
        Ok(team) => team.unwrap_or_default(),
        Err(e) => return page::failure(ctx, Some(staff), &e),
    };
    let content: Markup = html! {
        h1 { "Your account" }
        div.card {
            dl.facts {
                dt { "Team" } dd { (team) }
                dt { "E-mail address" } dd { (staff.user.email.as_str()) }
                dt { "Role" } dd { (staff.user.role.as_str()) }
                dt { "Signed in" } dd { (started) }
                dt { "Session" } dd {
                    "Ends after " (settings.idle_minutes) " minutes without activity, and "
                    (settings.session_hours) " hours after signing in."
                }
            }
        }
        h2 #time-zone { "Time zone" }
        form method="post" action="/dashboard/account/time-zone" {
            (page::csrf(staff))
            (problems("time-zone"))
            label for="timeZone" {
                "Show times in"
                span.hint { "Now " (page::when_exact(staff, ctx.now)) ". Expiry dates stay days in UTC, as licenses keep them." }
            }
            select #timeZone name="timeZone" {
                option value="UTC" selected[zone == chrono_tz::Tz::UTC] { "UTC" }
                @for tz in chrono_tz::TZ_VARIANTS.iter().filter(|tz| **tz != chrono_tz::Tz::UTC && tz.name().contains('/')) {
                    option value=(tz.name()) selected[*tz == zone] { (tz.name()) }
                }
            }
            p { button type="submit" { "Save time zone" } }
        }
        h2 #password { "Password" }
        form method="post" action="/dashboard/account/password" {
            (page::csrf(staff))
            (problems("password"))
            input type="email" name="username" value=(staff.user.email.as_str()) autocomplete="username" hidden;
            label for="currentPassword" { "Current password" }
            input #currentPassword type="password" name="currentPassword" autocomplete="current-password" required;
            label for="newPassword" {
                "New password"
                span.hint { "At least " (licensing_core::validate::MIN_PASSWORD_CHARS) " characters; a few unrelated words make a good one. Your other sessions end." }
            }
            input #newPassword type="password" name="newPassword" autocomplete="new-password" required minlength=(licensing_core::validate::MIN_PASSWORD_CHARS);
            p { button type="submit" { "Change password" } }
        }
        h2 #email { "E-mail address" }
        @if let Some(pending) = staff.user.pending_email.as_ref().filter(|p| p.link.expires_at > ctx.now) {
            p.hint { "Waiting for confirmation: " strong { (pending.email.as_str()) } " (follow the link sent to it). Until then you sign in with " (staff.user.email.as_str()) "." }
        }
        form method="post" action="/dashboard/account/email" {
            (page::csrf(staff))
            (problems("email"))
            label for="new-email" { "E-mail address" span.hint { "You sign in with it." } }
            input #new-email type="email" name="email" value=(sent_email) autocomplete="email" required;
            label for="email-password" { "Your password" span.hint { "To confirm it is you." } }
            input #email-password type="password" name="password" autocomplete="current-password" required;
            p { button type="submit" { "Change e-mail address" } }
        }
        h2 { "Two-step sign-in" }
        @if let Some(two_step) = &staff.user.two_step {
            p {
                "On since " (page::when(staff, two_step.since)) ": signing in takes your password and the code of your authenticator app. "
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
        status,
        page::layout(ctx, staff, Nav::Account, "Your account", content),
    )
}

/// The limiter key of a signed-in session's password checks: only its own wrong guesses hold
/// it back.
fn session_guesser(staff: &Staff) -> Guesser {
    Guesser::session(staff.session.id_sha256.as_bytes())
}

/// Performs a change of the account page that checks the password (`field` holds it): a
/// session that guessed wrong too often waits, and each wrong guess counts.
async fn checked<O: crate::app::Run>(
    ctx: &Ctx,
    staff: &Staff,
    field: &str,
    op: O,
) -> Result<O::Output, Failure> {
    let guesser = session_guesser(staff);
    if let Some(status) = guesser.throttled(&ctx.state.limits).await {
        let wait = wait_text(status.retry_after_secs.unwrap_or(1));
        return Err(Failure::new(
            429,
            format!("Too many wrong passwords in this session. Wait {wait} before trying again."),
        ));
    }
    let outcome = api::perform(ctx, staff, op).await;
    if let Err(failure) = &outcome
        && failure.field(field).is_some()
    {
        guesser.failed(&ctx.state.limits).await;
    }
    outcome
}

/// `POST /dashboard/account/password`: the password changes and every session ends; this
/// browser signs in again at once.
pub(crate) async fn change_password(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let changing = ChangeOwnPassword {
        current: form.get("currentPassword").unwrap_or("").to_owned(),
        new: form.get("newPassword").unwrap_or("").to_owned(),
    };
    match checked(ctx, staff, "currentPassword", changing).await {
        Ok(user) => {
            signed_in(
                ctx,
                user,
                "/dashboard/account?notice=password-changed",
                "password change",
            )
            .await
        }
        Err(failure) => refused(ctx, staff, "password", &failure, form).await,
    }
}

/// `POST /dashboard/account/email`.
pub(crate) async fn change_email(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let changing = ChangeOwnEmail {
        password: form.get("password").unwrap_or("").to_owned(),
        email: form.get("email").unwrap_or("").to_owned(),
        base: super::users::base(ctx),
    };
    match checked(ctx, staff, "password", changing).await {
        Ok(true) => page::redirect("/dashboard/account?notice=email-confirm-sent"),
        Ok(false) => page::redirect("/dashboard/account"),
        Err(failure) => refused(ctx, staff, "email", &failure, form).await,
    }
}

/// `GET /dashboard/confirm-email/{id}/{secret}`: one click confirms (a mail scanner that opens
/// the link changes nothing).
pub(crate) async fn confirm_email_page(id: &str, secret: &str) -> Response {
    if id.parse::<StaffId>().is_err() {
        return link_refused();
    }
    let action = format!("/dashboard/confirm-email/{id}/{secret}");
    page::html_response(
        200,
        page::bare(
            "Confirm your new address",
            html! {
                h1 { "Confirm your new sign-in address" }
                p { "Your dashboard account will sign in with the address this link was sent to." }
                form method="post" action=(action) {
                    button type="submit" { "Confirm the address" }
                }
            },
        ),
    )
}

/// `POST /dashboard/confirm-email/{id}/{secret}`: the account signs in with the new address
/// from now on.
pub(crate) async fn confirm_email(ctx: &Ctx, id: &str, secret: &str) -> Response {
    let Ok(id) = id.parse::<StaffId>() else {
        return link_refused();
    };
    match ctx.visitor().confirm_email(id, secret).await {
        Ok(Some(_)) => page::redirect("/dashboard/sign-in?notice=email-changed"),
        Ok(None) => link_refused(),
        Err(e) => page::failure(ctx, None, &e.into()),
    }
}

/// `POST /dashboard/account/time-zone`.
pub(crate) async fn set_time_zone(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let zone = SetOwnTimeZone(form.get("timeZone").unwrap_or("").to_owned());
    match api::perform(ctx, staff, zone).await {
        Ok(_) => page::redirect("/dashboard/account?notice=time-zone-set"),
        Err(failure) => refused(ctx, staff, "time-zone", &failure, form).await,
    }
}

/// The name an authenticator app shows the account under: the team's name.
async fn issuer(ctx: &Ctx, staff: &Staff) -> String {
    match api::perform(ctx, staff, OwnTeamName).await {
        Ok(Some(team)) => format!("{team} licensing"),
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
    let shown = page::shown(Nav::Account, "Two-step sign-in", content);
    page::answer(ctx, staff, failure, Ok(shown))
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
    let turning_on = TurnOnTwoStep {
        secret: secret.to_owned(),
        code: form.get("code").unwrap_or("").to_owned(),
    };
    match api::cx(ctx, staff).perform(turning_on).await {
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
    if staff.user.two_step.is_none() {
        return page::redirect("/dashboard/account");
    }
    let turning_off = TurnOffTwoStep {
        code: form.get("code").unwrap_or("").to_owned(),
    };
    match api::perform(ctx, staff, turning_off).await {
        Ok(true) => page::redirect("/dashboard/account?notice=two-step-off"),
        Ok(false) => page::failure(
            ctx,
            Some(staff),
            &Failure::new(
                400,
                "That code is not right, or was used already, so two-step sign-in stays on. Go back and type the code your app shows now, or an unused recovery code.",
            ),
        ),
        Err(e) => page::failure(ctx, Some(staff), &e),
    }
}
