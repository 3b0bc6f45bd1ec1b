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
use crate::dashboard::words::{t, tm, tw};
use crate::http::Body;
use crate::http::Response;
use crate::i18n::Arg;

/// `GET /dashboard/sign-in`.
pub(crate) async fn sign_in_page(ctx: &Ctx) -> Response {
    if let Ok(sign_in::Current::SignedIn(_)) = sign_in::current(ctx).await {
        return page::redirect(&sign_in::safe_next(ctx.param("next").as_deref()));
    }
    let notice = match ctx.param("notice").as_deref() {
        Some("session-ended") => Some(t("account-your-session-has-ended-please")),
        Some("signed-out") => Some(t("account-you-signed-out")),
        Some("signed-out-everywhere") => Some(t("account-you-signed-out-every-device")),
        Some("password-set") => Some(t("account-your-password-set-sign-with")),
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
        let ask_code = self.status == 401 && self.problem == Some(t(CODE_NEEDED));
        let choose = !self.teams.is_empty();
        let (token, cookie) = sign_in::sign_in_token(ctx);
        let markup = page::bare(
            t("account-sign"),
            html! {
                h1 { (t("account-sign")) }
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
                    label for="email" { (t("account-e-mail-address")) }
                    input #email type="email" name="email" value=(self.email) autocomplete="username" required autofocus[!ask_code && !choose];
                    @if choose {
                        label for="team" { (t("account-team")) span.hint { (t("account-your-address-has-account-each")) } }
                        select #team name="team" required autofocus {
                            @for (id, name) in &self.teams {
                                option value=(id) { (name) }
                            }
                        }
                    }
                    label for="password" { (t("account-password")) }
                    input #password type="password" name="password" autocomplete="current-password" required;
                    label for="code" { (t("account-code")) span.hint { (t("account-only-if-you-turned-two")) } }
                    input #code type="text" name="code" autocomplete="one-time-code" inputmode="numeric" autofocus[ask_code];
                    p { button type="submit" { (t("account-sign")) } }
                }
                @if ctx.state.mailer.is_some() {
                    p { a href="/dashboard/forgot-password" { (t("account-forgot-your-password")) } }
                    p.hint { (t("account-no-password-yet-ask")) }
                } @else {
                    p.hint { (t("account-no-password-yet-forgot-ask")) }
                }
            },
        );
        let mut response = page::html_response(self.status, markup);
        if let Some(cookie) = cookie {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
        response
    }
}

/// `GET /dashboard/forgot-password`: the address to e-mail a set-password link to.
pub(crate) fn forgot_password_page(ctx: &Ctx) -> Response {
    forgot_password_form(ctx, 200, "", None)
}

fn forgot_password_form(ctx: &Ctx, status: u16, email: &str, problem: Option<&str>) -> Response {
    let (token, cookie) = sign_in::sign_in_token(ctx);
    let markup = page::bare(
        t("account-forgot-your-password"),
        html! {
            h1 { (t("account-forgot-your-password")) }
            @if ctx.state.mailer.is_none() {
                p { (t("account-no-mail-ask-for-link")) }
            } @else {
                p { (t("account-forgot-we-mail-a-link")) }
                @if let Some(problem) = problem {
                    div.problems role="alert" { p { (problem) } }
                }
                form method="post" action="/dashboard/forgot-password" {
                    input type="hidden" name="csrf" value=(token);
                    label for="email" { (t("account-e-mail-address")) }
                    input #email type="email" name="email" value=(email) autocomplete="username" required autofocus;
                    p { button type="submit" { (t("account-e-mail-me-link")) } }
                }
            }
            p { a href="/dashboard/sign-in" { (t("account-back-to-sign-in")) } }
        },
    );
    let mut response = page::html_response(status, markup);
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /dashboard/forgot-password`: the same answer for every address; an account's address
/// gets a set-password link by e-mail.
pub(crate) async fn forgot_password(ctx: &Ctx, body: Body) -> Response {
    let form = match Form::read(body).await {
        Ok(form) => form,
        Err(e) => return page::failure(ctx, None, &e.into()),
    };
    let email = form.get("email").unwrap_or("").trim();
    if ctx.state.mailer.is_none() {
        return forgot_password_form(ctx, 404, email, None);
    }
    if !sign_in::sign_in_token_ok(ctx, &form) {
        return forgot_password_form(
            ctx,
            403,
            email,
            Some(t("account-sign-form-has-expired-please")),
        );
    }
    let base = super::users::base(ctx);
    match ctx.visitor().forgot_password(email, base).await {
        Ok(()) => page::html_response(
            200,
            page::bare(
                t("account-check-your-e-mail"),
                html! {
                    h1 { (t("account-check-your-e-mail")) }
                    p { (tm("account-if-address-has-account", &[("address", html! { strong { (email) } })])) }
                    p { (t("account-link-works-one-hour")) }
                    p { a href="/dashboard/sign-in" { (t("account-back-to-sign-in")) } }
                },
            ),
        ),
        Err(e) if e.status() == 429 => {
            let wait = wait_text(e.retry_after().unwrap_or(1));
            let mut response = forgot_password_form(
                ctx,
                429,
                email,
                Some(&tw("account-too-many-links", &[("wait", Arg::Text(&wait))])),
            );
            if let Some(secs) = e.retry_after()
                && let Ok(value) = header::HeaderValue::from_str(&secs.to_string())
            {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        Err(e) if e.status() == 400 => {
            forgot_password_form(ctx, 400, email, Some(t("account-not-an-address")))
        }
        Err(e) => page::failure(ctx, None, &e.into()),
    }
}

/// "N seconds" or "N minutes" or "N hours", rounded up.
fn wait_text(seconds: u64) -> String {
    match seconds {
        0..=90 => page::counted(seconds.max(1), "count-seconds"),
        91..=5400 => page::counted(seconds.div_ceil(60), "count-minutes"),
        _ => page::counted(seconds.div_ceil(3600), "count-hours"),
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
        return again(403, t("account-sign-form-has-expired-please"));
    }
    let password = form.get("password").unwrap_or("");
    if email.is_empty() || password.is_empty() {
        return again(400, t("account-enter-your-e-mail-address"));
    }
    let team: Option<TeamId> = match form.get("team").filter(|t| !t.is_empty()) {
        Some(text) => match text.parse() {
            Ok(team) => Some(team),
            Err(_) => return again(400, t("account-choose-one-teams-listed")),
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
            &tw("account-too-many-sign-ins", &[("wait", Arg::Text(&wait))]),
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
        return again(401, t("account-e-mail-address-password-do"));
    }
    if matching.len() > 1 {
        // The password opens an account in several teams: the person says which.
        let teams = match ctx.visitor().teams_of(&matching).await {
            Ok(teams) => teams,
            Err(e) => return page::failure(ctx, None, &e.into()),
        };
        return SignInForm {
            status: 200,
            notice: Some(t("account-your-address-has-account-several")),
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
            return again(401, t(CODE_NEEDED));
        }
        match ctx.visitor().second_step(&user, code).await {
            Ok(Some(user)) => (user, t("account-password-second-step")),
            Ok(None) => {
                guesser.failed(&ctx.state.limits).await;
                ctx.visitor()
                    .record_failure(std::slice::from_ref(&user), t("account-second-step"))
                    .await;
                return again(401, t("account-code-not-right-was-used"));
            }
            Err(e) => return page::failure(ctx, None, &e.into()),
        }
    } else {
        (user, "password")
    };
    signed_in(ctx, user, &sign_in::safe_next(next), how).await
}

/// What the sign-in form says when the password was right and the second step is missing (its
/// message).
const CODE_NEEDED: &str = "account-account-signs-two-steps-type";

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
            t("account-link-not-valid-2"),
            html! {
                h1 { (t("account-link-not-valid")) }
                p { (t("account-set-password-address-links-work")) }
                p { a href="/dashboard/sign-in" { (t("account-sign")) } }
            },
        ),
    )
}

fn set_password_form(ctx: &Ctx, email: &str, status: u16, problem: Option<&str>) -> Response {
    let action = format!("/dashboard/{}", ctx.path);
    page::html_response(
        status,
        page::bare(
            t("account-set-your-password"),
            html! {
                h1 { (t("account-set-your-password")) }
                p { (tm("account-for", &[("strong", html! { strong { (email) } })])) "." }
                @if let Some(problem) = problem {
                    div.problems role="alert" { p { (problem) } }
                }
                form method="post" action=(action) {
                    input type="email" name="email" value=(email) autocomplete="username" hidden;
                    label for="password" {
                        (t("account-new-password"))
                        span.hint { (t("account-least-12-characters-few-unrelated")) }
                    }
                    input #password type="password" name="password" autocomplete="new-password" minlength="12" required autofocus;
                    label for="confirm" { (t("account-same-again")) }
                    input #confirm type="password" name="confirm" autocomplete="new-password" required;
                    p { button type="submit" { (t("account-set-password-sign")) } }
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
            Some(t("account-two-passwords-differ-type-same")),
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
                t("account-set-password-link"),
            )
            .await
        }
        Ok(Err(LinkRefused::Invalid)) => link_refused(),
        Ok(Err(LinkRefused::Password(rule))) => set_password_form(
            ctx,
            user.email.as_str(),
            400,
            Some(&tw(
                "account-password-rule",
                &[("rule", Arg::Text(&rule.to_string()))],
            )),
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
        h1 { (t("account-your-account")) }
        div.card {
            dl.facts {
                dt { (t("account-team")) } dd { (team) }
                dt { (t("account-e-mail-address")) } dd { (staff.user.email.as_str()) }
                dt { (t("account-role")) } dd { (staff.user.role.as_str()) }
                dt { (t("account-signed")) } dd { (started) }
                dt { (t("account-session")) } dd {
                    (tm("account-ends-after-idle-minutes-minutes", &[("idle-minutes", html! { (settings.idle_minutes) }), ("session-hours", html! { (settings.session_hours) })]))
                }
            }
        }
        h2 #time-zone { (t("account-time-zone")) }
        form method="post" action="/dashboard/account/time-zone" {
            (page::csrf(staff))
            (problems("time-zone"))
            label for="timeZone" {
                (t("account-show-times"))
                span.hint { (tm("account-now-when-exact-expiry-dates", &[("when-exact", html! { (page::when_exact(staff, ctx.now)) })])) }
            }
            select #timeZone name="timeZone" {
                option value="UTC" selected[zone == chrono_tz::Tz::UTC] { "UTC" }
                @for tz in chrono_tz::TZ_VARIANTS.iter().filter(|tz| **tz != chrono_tz::Tz::UTC && tz.name().contains('/')) {
                    option value=(tz.name()) selected[*tz == zone] { (tz.name()) }
                }
            }
            p { button type="submit" { (t("account-save-time-zone")) } }
        }
        h2 #password { (t("account-password")) }
        form method="post" action="/dashboard/account/password" {
            (page::csrf(staff))
            (problems("password"))
            input type="email" name="username" value=(staff.user.email.as_str()) autocomplete="username" hidden;
            label for="currentPassword" { (t("account-current-password")) }
            input #currentPassword type="password" name="currentPassword" autocomplete="current-password" required;
            label for="newPassword" {
                (t("account-new-password"))
                span.hint { (tm("account-least-min-password-chars-characters", &[("min-password-chars", html! { (licensing_core::validate::MIN_PASSWORD_CHARS) })])) }
            }
            input #newPassword type="password" name="newPassword" autocomplete="new-password" required minlength=(licensing_core::validate::MIN_PASSWORD_CHARS);
            p { button type="submit" { (t("account-change-password")) } }
        }
        h2 #email { (t("account-e-mail-address")) }
        @if let Some(pending) = staff.user.pending_email.as_ref().filter(|p| p.link.expires_at > ctx.now) {
            p.hint { (tm("account-waiting-confirmation-follow-link-sent", &[("strong", html! { strong { (pending.email.as_str()) } }), ("email", html! { (staff.user.email.as_str()) })])) }
        }
        form method="post" action="/dashboard/account/email" {
            (page::csrf(staff))
            (problems("email"))
            label for="new-email" { (t("account-e-mail-address")) span.hint { (t("account-you-sign-with")) } }
            input #new-email type="email" name="email" value=(sent_email) autocomplete="email" required;
            label for="email-password" { (t("account-your-password")) span.hint { (t("account-confirm-you")) } }
            input #email-password type="password" name="password" autocomplete="current-password" required;
            p { button type="submit" { (t("account-change-e-mail-address")) } }
        }
        h2 { (t("account-two-step-sign")) }
        @if let Some(two_step) = &staff.user.two_step {
            p {
                (tm("account-since-when-signing-takes-your", &[("when", html! { (page::when(staff, two_step.since)) }), ("recovery-codes", html! { (two_step.recovery_codes.len()) }), ("recovery-codes2", html! { (two_step::RECOVERY_CODES) })]))
            }
            form method="post" action="/dashboard/account/two-step/off" {
                (page::csrf(staff))
                label for="off-code" { (t("account-code")) span.hint { (t("account-turn-off-code-your-app")) } }
                input #off-code type="text" name="code" autocomplete="one-time-code" required;
                p { button.secondary type="submit" { (t("account-turn-two-step-sign-off")) } }
            }
        } @else {
            p { (t("account-off-with-signing-also-takes")) }
            p { a.button href="/dashboard/account/two-step" { (t("account-turn-two-step-sign")) } }
        }
        h2 { (t("account-sessions")) }
        p { (t("account-signed-another-computer-you-no")) }
        form method="post" action="/dashboard/sign-out-everywhere" {
            (page::csrf(staff))
            button.secondary type="submit" { (t("account-sign-out-everywhere")) }
        }
    };
    page::html_response(
        status,
        page::layout(ctx, staff, Nav::Account, t("account-your-account"), content),
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
            tw(
                "account-too-many-wrong-passwords",
                &[("wait", Arg::Text(&wait))],
            ),
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
                t("account-password-change"),
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
            t("account-confirm-your-new-address"),
            html! {
                h1 { (t("account-confirm-your-new-sign-address")) }
                p { (t("account-your-dashboard-account-will-sign")) }
                form method="post" action=(action) {
                    button type="submit" { (t("account-confirm-address")) }
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
        Ok(Some(team)) => tw("account-issuer", &[("team", Arg::Text(&team))]),
        _ => t("account-licensing").to_owned(),
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
        h1 { (t("account-turn-two-step-sign")) }
        (page::problems(failure))
        ol.steps {
            li {
                (t("account-scan-code-with-authenticator-app"))
                @if let Ok(svg) = &qr {
                    figure.qr role="img" aria-label=(t("account-qr-code-authenticator-entry")) { (maud::PreEscaped(svg)) }
                }
                (tm("account-phone-add-entry-hand-with", &[("link", html! { a href=(url) { (t("account-open-authenticator-app")) } })]))
                p { code.secret { (grouped.join(" ")) } }
            }
            li {
                (t("account-type-six-digits-app-shows"))
                form method="post" action="/dashboard/account/two-step" {
                    (page::csrf(staff))
                    input type="hidden" name="secret" value=(secret);
                    label for="code" { (t("account-code")) @if let Some(m) = failure.and_then(|f| f.field("code")) { span.field-error { (m) } } }
                    input #code type="text" name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus;
                    p { button type="submit" { (t("account-turn")) } }
                }
            }
        }
    };
    let shown = page::shown(Nav::Account, t("account-two-step-sign"), content);
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
                h1 { (t("account-two-step-sign-2")) }
                div.card {
                    p { (t("account-keep-these-recovery-codes-somewhere")) }
                    ul.recovery-codes {
                        @for code in &codes { li { code { (code) } } }
                    }
                    p { button.secondary.small.copy type="button" data-copy=(codes.join("\n")) data-copied=(t("page-copied")) data-copy-failed=(t("page-copy-failed")) hidden { (t("account-copy-all")) } }
                }
                p { a.button href="/dashboard/account" { (t("account-done")) } }
            };
            page::html_response(
                200,
                page::layout(
                    ctx,
                    staff,
                    Nav::Account,
                    t("account-two-step-sign"),
                    content,
                ),
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
            &Failure::new(400, t("account-code-not-right-was-used-2")),
        ),
        Err(e) => page::failure(ctx, Some(staff), &e),
    }
}
