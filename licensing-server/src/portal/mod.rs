//! The customer portal under `/portal/{teamId}`: server-rendered pages where a vendor's
//! customers sign in (an e-mailed link or code, a license key, a link from the vendor's own
//! site), see their licenses, free devices within their policy's budget, end running copies,
//! and download their software and license files, in their language.
//!
//! - **The dashboard's rules**: a `Content-Security-Policy` without inline script or style,
//!   CSRF tokens on every form (before sign-in, tied to a cookie the sign-in page sets), an
//!   `HttpOnly` session cookie named `__Host-portal` over HTTPS (`portal` over plain HTTP on
//!   loopback) that ends 12 hours after sign-in. The cookies are `SameSite=Lax`, not `Strict`:
//!   a link from the vendor's site signs in and redirects, and a strict cookie would not follow
//!   that redirect; every change is a POST with a CSRF token either way.
//! - **One permission model**: a page performs the same operations as the developer API, as a
//!   [`Caller::portal`](crate::app::Caller) whose reach is the session's licenses.
//! - **A closed portal is absent**: every address of a team whose portal is off, or of no team,
//!   answers the same 404.

mod pages;

use std::net::IpAddr;

use licensing_core::{TeamId, Timestamp};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderMap, HeaderValue, Method, header};

use crate::app::portal::{Door, Signed};
use crate::dashboard::page::{self, Form};
use crate::dashboard::sign_in::{cookie, is_secure};
use crate::http::{Body, Response};
use crate::i18n::Lang;
use crate::state::AppState;

/// The portal's routes.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path("portal")
        .and(crate::http::incoming(state))
        .then(|request: crate::http::Incoming| async move {
            let crate::http::Incoming {
                path,
                method,
                state,
                client,
                input,
            } = request;
            let secure = is_secure(client, &input.headers);
            let lang = Lang::choose(
                cookie(&input.headers, lang_cookie(secure)),
                input
                    .headers
                    .get(header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok()),
            );
            let ctx = Ctx {
                state,
                client,
                headers: input.headers,
                get: method == Method::GET || method == Method::HEAD,
                query: input.query,
                path: path.as_str().to_owned(),
                now: Timestamp::now(),
                secure,
                lang,
            };
            let mut response = Box::pin(route(ctx, method, input.body)).await;
            page::protect(response.headers_mut());
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-store"),
            );
            response.headers_mut().insert(
                header::CONTENT_LANGUAGE,
                HeaderValue::from_static(lang.tag()),
            );
            response
        })
        .boxed()
}

/// Everything a portal page reads of its request.
pub(crate) struct Ctx {
    /// The server.
    pub(crate) state: AppState,
    /// The client's address.
    pub(crate) client: IpAddr,
    /// The request headers.
    pub(crate) headers: HeaderMap,
    /// The path below `/portal/`.
    pub(crate) path: String,
    /// The raw query string.
    pub(crate) query: String,
    /// Whether the request is a `GET` (or `HEAD`): a page a link may come back to.
    pub(crate) get: bool,
    /// When the request is handled.
    pub(crate) now: Timestamp,
    /// Whether the browser reached us over HTTPS (the cookies' names and `Secure`).
    pub(crate) secure: bool,
    /// The language of the answer.
    pub(crate) lang: Lang,
}

impl Ctx {
    /// The server's public address, else the one the browser used: `scheme://host`.
    pub(crate) fn base(&self) -> String {
        crate::app::base_url(
            self.state.public_url.as_deref(),
            crate::http::origin(self.client, &self.headers),
        )
    }

    /// The value of cookie `name` (as named over this connection).
    pub(crate) fn cookie(&self, name: Cookie) -> Option<&str> {
        cookie(&self.headers, name.named(self.secure))
    }
}

/// The portal's cookies.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cookie {
    /// The session.
    Session,
    /// The sign-in forms' CSRF token, before there is a session.
    SignIn,
    /// The language the switch chose.
    Lang,
}

impl Cookie {
    fn named(self, secure: bool) -> &'static str {
        match (self, secure) {
            (Self::Session, true) => "__Host-portal",
            (Self::Session, false) => "portal",
            (Self::SignIn, true) => "__Host-portal-sign-in",
            (Self::SignIn, false) => "portal-sign-in",
            (Self::Lang, _) => lang_cookie(secure),
        }
    }

    /// Its `Set-Cookie` value: `value` for `max_age` seconds (0 deletes it).
    pub(crate) fn set(self, ctx: &Ctx, value: &str, max_age: u64) -> HeaderValue {
        let secure = if ctx.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
            self.named(ctx.secure)
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

fn lang_cookie(secure: bool) -> &'static str {
    if secure {
        "__Host-portal-lang"
    } else {
        "portal-lang"
    }
}

/// Finds the page for the request.
async fn route(ctx: Ctx, method: Method, body: Body) -> Response {
    let path = ctx.path.clone();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    if let ["static", name] = segments.as_slice() {
        return if get {
            pages::asset(name)
        } else {
            page::method_not_allowed()
        };
    }
    let Some((team, rest)) = segments.split_first() else {
        return pages::absent(&ctx);
    };
    let Ok(team) = team.parse::<TeamId>() else {
        return pages::absent(&ctx);
    };
    let door = match Door::open(&ctx.state, team, ctx.client, ctx.now).await {
        Ok(Some(door)) => door,
        Ok(None) => return pages::absent(&ctx),
        Err(e) => return pages::trouble(&ctx, None, &e),
    };
    let form = if post {
        match crate::http::read_body(body, page::MAX_FORM).await {
            Ok(raw) => Form::parse(&raw),
            Err(e) => return pages::trouble(&ctx, Some(&door), &e),
        }
    } else {
        Form::default()
    };
    // The pages before sign-in.
    match rest {
        [] if get => return pages::sign_in_page(&ctx, &door, None).await,
        ["email"] if post => return pages::mail_link(&ctx, &door, &form).await,
        ["code"] if post => return pages::code(&ctx, &door, &form).await,
        ["key"] if post => return pages::key(&ctx, &door, &form).await,
        ["link", token] if get => return pages::link_page(&ctx, &door, token),
        ["link", token] if post => return pages::link(&ctx, &door, token, &form).await,
        ["enter", token] if get => return pages::enter(&ctx, &door, token).await,
        ["language"] if post => return pages::language(&ctx, &door, &form),
        [] | ["email"] | ["code"] | ["key"] | ["link", _] | ["enter", _] | ["language"] => {
            return page::method_not_allowed();
        }
        _ => {}
    }
    let signed = match ctx.cookie(Cookie::Session) {
        None => None,
        Some(secret) => match Signed::of(&ctx.state, team, secret, ctx.now).await {
            Ok(signed) => signed,
            Err(e) => return pages::trouble(&ctx, Some(&door), &e),
        },
    };
    let Some(signed) = signed else {
        return if get {
            page::redirect(&format!("/portal/{team}"))
        } else {
            pages::sign_in_page(&ctx, &door, Some("csrf-refused")).await
        };
    };
    if post
        && !form
            .get("csrf")
            .is_some_and(|t| constant_eq(t, &signed.session.csrf_token))
    {
        return pages::refused(&ctx, &door, &signed);
    }
    Box::pin(pages::signed_in(&ctx, &door, &signed, rest, &method, &form)).await
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub(crate) fn constant_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}
