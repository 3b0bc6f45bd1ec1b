//! Signed-in sessions: the cookie, the time-outs, and the CSRF token of a session's forms.
//!
//! The cookie carries 256 random bits; the store keeps only their SHA-256, so that a copy of the
//! store signs nobody in. Over HTTPS (or behind a trusted proxy that says the browser used it)
//! the cookie is `__Host-session` with `Secure`; a browser talking plain HTTP to a server on its
//! own machine (`http://127.0.0.1:3000`) gets `session` without `Secure`, as browsers refuse
//! `__Host-` cookies without it. Both are `HttpOnly`, `SameSite=Strict` and `Path=/`.
//!
//! A session ends after [`DashboardSettings::idle_minutes`](crate::state::DashboardSettings::idle_minutes) without a request, and in any case
//! [`DashboardSettings::session_hours`](crate::state::DashboardSettings::session_hours) after signing in. Its `lastSeenAt` is written at most
//! once a minute, so that browsing costs no write per page. A session that times out is deleted
//! when it is next presented, and the session purger (`workers::sign_in_purger`) deletes the ones never presented again.

use licensing_core::ApiError;
use licensing_core::crypto::sha256_hex;
use licensing_core::model::{StaffSession, StaffUser};
use licensing_core::store::StoreError;
use subtle::ConstantTimeEq as _;
use warp::http::{HeaderMap, HeaderValue, header};

use super::Ctx;
use super::page::{self, Form};
use crate::app::sign_in::Lifetime;
use crate::http::Response;

/// The cookie's name over HTTPS.
pub(crate) const SECURE_COOKIE: &str = "__Host-session";
/// The cookie's name over plain HTTP on the loopback interface.
pub(crate) const PLAIN_COOKIE: &str = "session";
/// The sign-in form's own cookie (its CSRF token, before there is a session), over HTTPS.
const SECURE_SIGN_IN_COOKIE: &str = "__Host-sign-in";
/// The same over plain HTTP on the loopback interface.
const PLAIN_SIGN_IN_COOKIE: &str = "sign-in";
/// A browser's proof that it signed in to an account before (its device cookie), over HTTPS.
const SECURE_DEVICE_COOKIE: &str = "__Host-device";
/// The same over plain HTTP on the loopback interface.
const PLAIN_DEVICE_COOKIE: &str = "device";
/// How long a device cookie is good for.
const DEVICE_COOKIE_DAYS: i64 = 365;

/// Default minutes without a request after which a session ends.
pub const DEFAULT_IDLE_MINUTES: u32 = 30;
/// Default hours after signing in after which a session ends, however active.
pub const DEFAULT_SESSION_HOURS: u32 = 12;

/// A signed-in staff member: the account and the session.
#[derive(Clone, Debug)]
pub(crate) struct Staff {
    /// The account, as stored now.
    pub(crate) user: StaffUser,
    /// The session.
    pub(crate) session: StaffSession,
}

impl Staff {
    /// Whether the staff member's role has `scope` (the API refuses the rest anyway; pages use
    /// this to leave out what would be refused).
    pub(crate) fn may(&self, scope: licensing_core::model::Scope) -> bool {
        self.user.role.scopes().allows(scope)
    }

    /// Whether the staff member's role may perform operation `O` (its declared scope): what a
    /// page asks before it offers the link, button or form that performs it.
    pub(crate) fn may_perform<O: crate::app::Operation>(&self) -> bool {
        O::SCOPE.is_none_or(|scope| self.may(scope))
    }
}

pub(crate) use crate::http::is_secure;

/// The value of cookie `name` in the request.
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim())
}

/// A `Set-Cookie` value: `value` for `max_age` seconds (0 deletes it).
fn set_cookie(secure: bool, name: &str, value: &str, max_age: u64) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn session_cookie_name(secure: bool) -> &'static str {
    if secure { SECURE_COOKIE } else { PLAIN_COOKIE }
}

fn sign_in_cookie_name(secure: bool) -> &'static str {
    if secure {
        SECURE_SIGN_IN_COOKIE
    } else {
        PLAIN_SIGN_IN_COOKIE
    }
}

/// What the request's cookie says.
pub(crate) enum Current {
    /// A live session.
    SignedIn(Box<Staff>),
    /// A cookie of a session that has ended (timed out, signed out elsewhere, account deleted).
    Ended,
    /// No session cookie.
    None,
}

/// The session of the request, ending it when it has timed out.
pub(crate) async fn current(ctx: &Ctx) -> Result<Current, StoreError> {
    let Some(secret) = cookie(&ctx.headers, session_cookie_name(ctx.secure)) else {
        return Ok(Current::None);
    };
    let settings = ctx.settings();
    let lifetime = Lifetime {
        idle_minutes: settings.idle_minutes,
        hours: settings.session_hours,
    };
    Ok(
        match ctx
            .visitor()
            .session(&sha256_hex(secret.as_bytes()), lifetime)
            .await?
        {
            Some((user, session)) => Current::SignedIn(Box::new(Staff { user, session })),
            None => Current::Ended,
        },
    )
}

/// A browser that signed in to an account before, as its device cookie says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KnownDevice {
    /// The account it signed in to.
    pub(crate) user: licensing_core::StaffId,
    /// The cookie's random part, which tells browsers apart.
    pub(crate) nonce: [u8; 16],
}

/// What a device cookie's MAC covers: the account, when it was issued and its nonce, under a
/// key of the account's password hash (secret to the server, and changed with the password, so
/// that a new password forgets every browser).
fn device_mac(password_hash: &str, payload: &[u8]) -> [u8; 32] {
    licensing_core::crypto::hmac_sha256(
        password_hash.as_bytes(),
        &[b"licensing dashboard device\n", payload],
    )
}

/// The device cookie for `user` (after a successful sign-in), when the account has a
/// password: account id, time, a random nonce and their MAC, in base64url.
pub(crate) fn device_cookie(ctx: &Ctx, user: &StaffUser) -> Option<HeaderValue> {
    use base64::Engine as _;
    let hash = user.password_hash.as_deref()?;
    let mut payload = Vec::with_capacity(72);
    payload.extend_from_slice(user.id.as_bytes());
    payload.extend_from_slice(&ctx.now.as_millis().to_be_bytes());
    let nonce: [u8; 16] = rand::random();
    payload.extend_from_slice(&nonce);
    let mac = device_mac(hash, &payload);
    payload.extend_from_slice(&mac);
    let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload);
    let max_age = u64::try_from(DEVICE_COOKIE_DAYS * 86_400).unwrap_or(0);
    Some(set_cookie(
        ctx.secure,
        device_cookie_name(ctx.secure),
        &value,
        max_age,
    ))
}

/// The browser's device cookie, when it is one this server issued to one of `accounts` (with
/// its current password) within [`DEVICE_COOKIE_DAYS`].
pub(crate) fn known_device(ctx: &Ctx, accounts: &[StaffUser]) -> Option<KnownDevice> {
    use base64::Engine as _;
    let text = cookie(&ctx.headers, device_cookie_name(ctx.secure))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?;
    if bytes.len() != 72 {
        return None;
    }
    let (payload, mac) = bytes.split_at(40);
    let user = licensing_core::StaffId::from_uuid(uuid::Uuid::from_slice(&payload[..16]).ok()?);
    let issued = i64::from_be_bytes(payload[16..24].try_into().ok()?);
    let account = accounts.iter().find(|a| a.id == user)?;
    let expected = device_mac(account.password_hash.as_deref()?, payload);
    let fresh = ctx.now.as_millis().saturating_sub(issued) < DEVICE_COOKIE_DAYS * 86_400_000;
    (bool::from(expected.ct_eq(mac)) && fresh).then(|| KnownDevice {
        user,
        nonce: payload[24..40].try_into().unwrap_or([0; 16]),
    })
}

fn device_cookie_name(secure: bool) -> &'static str {
    if secure {
        SECURE_DEVICE_COOKIE
    } else {
        PLAIN_DEVICE_COOKIE
    }
}

/// Starts a session for `user`, signed in `how` (audited): stored, and the cookie that carries
/// it.
pub(crate) async fn start(
    ctx: &Ctx,
    user: StaffUser,
    how: &str,
) -> Result<(Staff, HeaderValue), ApiError> {
    let (session, secret) = ctx.visitor().start_session(&user, how).await?;
    let max_age = u64::from(ctx.settings().session_hours) * 3600;
    let cookie = set_cookie(
        ctx.secure,
        session_cookie_name(ctx.secure),
        &secret,
        max_age,
    );
    Ok((Staff { user, session }, cookie))
}

/// The `Set-Cookie` that removes the session cookie.
pub(crate) fn clear(ctx: &Ctx) -> HeaderValue {
    set_cookie(ctx.secure, session_cookie_name(ctx.secure), "", 0)
}

/// Whether a form carries the session's CSRF token (compared in constant time).
pub(crate) fn csrf_ok(staff: &Staff, form: &Form) -> bool {
    form.get("csrf").is_some_and(|given| {
        bool::from(given.as_bytes().ct_eq(staff.session.csrf_token.as_bytes()))
    })
}

/// The sign-in form's token: the one its cookie already holds, or a new one with the
/// `Set-Cookie` that stores it.
pub(crate) fn sign_in_token(ctx: &Ctx) -> (String, Option<HeaderValue>) {
    match cookie(&ctx.headers, sign_in_cookie_name(ctx.secure)) {
        Some(token) if token.len() == 43 => (token.to_owned(), None),
        _ => {
            let token = crate::app::staff::random_secret();
            let cookie = set_cookie(ctx.secure, sign_in_cookie_name(ctx.secure), &token, 3600);
            (token, Some(cookie))
        }
    }
}

/// Whether a sign-in form carries the token of its cookie.
pub(crate) fn sign_in_token_ok(ctx: &Ctx, form: &Form) -> bool {
    match (
        cookie(&ctx.headers, sign_in_cookie_name(ctx.secure)),
        form.get("csrf"),
    ) {
        (Some(expected), Some(given)) if expected.len() == 43 => {
            bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
        }
        _ => false,
    }
}

/// The answer to a request without a live session: a page is sent to the sign-in page (which
/// then returns to it), a form post is told its session ended.
pub(crate) fn to_sign_in(ctx: &Ctx, get: bool, ended: bool) -> Response {
    let mut target = String::from("/dashboard/sign-in");
    let mut params = form_urlencoded::Serializer::new(String::new());
    if ended {
        params.append_pair("notice", "session-ended");
    }
    if get {
        let mut next = format!("/dashboard/{}", ctx.path);
        if !ctx.query.is_empty() {
            next.push('?');
            next.push_str(&ctx.query);
        }
        params.append_pair("next", &next);
    }
    let params = params.finish();
    if !params.is_empty() {
        target.push('?');
        target.push_str(&params);
    }
    let mut response = page::redirect(&target);
    if ended {
        response
            .headers_mut()
            .append(header::SET_COOKIE, clear(ctx));
    }
    response
}

/// Where a sign-in returns to: `next` when it is a dashboard page, else the start page.
pub(crate) fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with("/dashboard/")
                && !n.starts_with("/dashboard/sign-in")
                && !n.contains("//")
                && !n.contains('\\')
                && n.bytes().all(|b| (0x21..0x7f).contains(&b)) =>
        {
            n.to_owned()
        }
        _ => "/dashboard/".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn only_plain_http_on_this_machine_goes_without_secure() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let remote: IpAddr = "203.0.113.7".parse().unwrap();
        for host in [
            "127.0.0.1:3000",
            "localhost:3000",
            "[::1]:3000",
            "localhost",
        ] {
            assert!(!is_secure(local, &headers(&[("host", host)])), "{host}");
        }
        assert!(is_secure(
            local,
            &headers(&[("host", "licenses.example.com")])
        ));
        assert!(is_secure(remote, &headers(&[("host", "127.0.0.1:3000")])));
        assert!(is_secure(
            local,
            &headers(&[("host", "127.0.0.1:3000"), ("x-forwarded-proto", "https")])
        ));
        assert!(is_secure(
            remote,
            &headers(&[("host", "x"), ("x-forwarded-proto", "http")])
        ));
    }

    #[test]
    fn cookies_are_found_among_others() {
        let h = headers(&[("cookie", "a=1; session=abc ; b=2"), ("cookie", "c=3")]);
        assert_eq!(cookie(&h, "session"), Some("abc"));
        assert_eq!(cookie(&h, "c"), Some("3"));
        assert_eq!(cookie(&h, "__Host-session"), None);
    }

    #[test]
    fn sign_in_returns_only_to_dashboard_pages() {
        assert_eq!(
            safe_next(Some("/dashboard/licenses?page=2")),
            "/dashboard/licenses?page=2"
        );
        for bad in [
            "https://evil.example/",
            "//evil.example/dashboard/",
            "/dashboard//evil",
            "/dashboard/sign-in",
            "/api/v1/admin/teams",
            "/dashboard/a\\b",
            "/dashboard/a b",
        ] {
            assert_eq!(safe_next(Some(bad)), "/dashboard/", "{bad}");
        }
        assert_eq!(safe_next(None), "/dashboard/");
    }
}
