//! The staff dashboard under `/dashboard`: server-rendered HTML for a vendor's staff, served by
//! the server itself, with nothing else to build or run.
//!
//! - **One permission model.** A page never reaches the store for what the developer API does:
//!   it performs the same typed operation (`crate::app`) as the signed-in staff member, with the
//!   scopes of their role. Every check of the API (validation, scopes, tenant isolation)
//!   therefore holds here too, and the audit log names the staff member as the actor. The dashboard has no team in its paths: a session belongs to one
//!   team, and every call is made for that team.
//! - **Sessions** live in the store, so that every instance on one PostgreSQL database shares
//!   them; the cookie carries a random 256-bit secret of which the store keeps the SHA-256
//!   (see the `session` module).
//! - **Forms** work without JavaScript. Every form that changes something carries the session's
//!   CSRF token, and every answer carries a `Content-Security-Policy` that allows no inline
//!   script or style and nothing from elsewhere (see the `page` module).

mod account;
mod api;
mod api_keys;
pub(crate) mod assets;
pub(crate) mod audit;
mod catalog;
mod charts;
mod entitlements;
mod licenses;
mod overview;
pub(crate) mod page;
mod payments;
mod policies;
mod releases;
mod settings;
pub(crate) mod sign_in;
mod users;
mod webhooks;
pub(crate) mod words;

use std::net::IpAddr;

use licensing_core::Timestamp;
use licensing_core::idempotency::{Fingerprint, IdempotencyKey, IdempotencyOwner, body_digest};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderMap, Method};

use self::page::After;
use crate::http::idempotency::Keyed;
use crate::http::{Body, Response};
use crate::state::AppState;

pub(crate) use page::redirect;
pub(crate) use sign_in::Staff;
pub use sign_in::{DEFAULT_IDLE_MINUTES, DEFAULT_SESSION_HOURS};

use crate::state::DashboardSettings;

/// Everything a dashboard handler reads of its request.
pub(crate) struct Ctx {
    /// The server.
    pub(crate) state: AppState,
    /// The client's address (behind trusted proxies, the one they name).
    pub(crate) client: IpAddr,
    /// The request headers.
    pub(crate) headers: HeaderMap,
    /// The raw query string.
    pub(crate) query: String,
    /// The path below `/dashboard/`, without the query.
    pub(crate) path: String,
    /// When the request is handled.
    pub(crate) now: Timestamp,
    /// Whether the browser reached us over HTTPS (or a proxy says so), which decides the
    /// cookie's name and `Secure` attribute.
    pub(crate) secure: bool,
}

impl Ctx {
    /// The request's sender as someone at the dashboard's door.
    pub(crate) fn visitor(&self) -> crate::app::sign_in::Visitor<'_> {
        crate::app::sign_in::Visitor::new(&self.state, self.client, self.now)
    }

    /// The dashboard settings (the dashboard is only routed when they exist).
    pub(crate) fn settings(&self) -> &DashboardSettings {
        self.state
            .dashboard
            .as_ref()
            .expect("the dashboard is routed only when it is on")
    }

    /// The value of query parameter `name`, if given.
    pub(crate) fn param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// The dashboard's routes, when it is on.
pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    warp::path("dashboard")
        .and(crate::http::incoming(state))
        .then(|request: crate::http::Incoming| async move {
            let crate::http::Incoming {
                path,
                method,
                state,
                client,
                input,
            } = request;
            if state.dashboard.is_none() {
                return crate::http::error(&licensing_core::ApiError::route_not_found());
            }
            let secure = sign_in::is_secure(client, &input.headers);
            let ctx = Ctx {
                state,
                client,
                headers: input.headers,
                query: input.query,
                path: path.as_str().to_owned(),
                now: Timestamp::now(),
                secure,
            };
            let lang = words::choose(
                ctx.headers
                    .get(warp::http::header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok()),
            );
            let mut response = words::speaking(lang, route(ctx, method, input.body)).await;
            page::protect(response.headers_mut());
            response
        })
        .boxed()
}

/// Finds the page for the request: the public ones (assets, sign-in, set-password), then,
/// for a signed-in staff member, the others.
async fn route(ctx: Ctx, method: Method, body: Body) -> Response {
    let path = ctx.path.clone();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    match segments.as_slice() {
        ["static", name] if get => return assets::serve(name),
        ["sign-in"] if get => return account::sign_in_page(&ctx).await,
        ["sign-in"] if post => return account::sign_in(&ctx, body).await,
        ["forgot-password"] if get => return account::forgot_password_page(&ctx),
        ["forgot-password"] if post => return account::forgot_password(&ctx, body).await,
        ["set-password", id, secret] if get => {
            return account::set_password_page(&ctx, id, secret).await;
        }
        ["set-password", id, secret] if post => {
            return account::set_password(&ctx, id, secret, body).await;
        }
        ["confirm-email", id, secret] if get => {
            return account::confirm_email_page(id, secret).await;
        }
        ["confirm-email", id, secret] if post => {
            return account::confirm_email(&ctx, id, secret).await;
        }
        ["static", _]
        | ["sign-in"]
        | ["forgot-password"]
        | ["set-password", _, _]
        | ["confirm-email", _, _] => {
            return page::method_not_allowed();
        }
        _ => {}
    }
    let staff = match sign_in::current(&ctx).await {
        Ok(sign_in::Current::SignedIn(staff)) => staff,
        Ok(sign_in::Current::Ended) => return sign_in::to_sign_in(&ctx, get, true),
        Ok(sign_in::Current::None) => return sign_in::to_sign_in(&ctx, get, false),
        Err(e) => return page::failure(&ctx, None, &e.into()),
    };
    // A release upload streams its file on; its token is checked among its fields.
    if post && segments.as_slice() == ["releases"] {
        return releases::upload(&ctx, &staff, body).await;
    }
    if let (true, ["releases", id, "artifacts"]) = (post, segments.as_slice()) {
        return Box::pin(releases::upload_artifact(&ctx, &staff, id, body)).await;
    }
    // Every other change arrives as a form with the session's token; the form is read here, once.
    let (form, raw) = if post {
        match crate::http::read_body(body, page::MAX_FORM).await {
            Ok(raw) => {
                let form = page::Form::parse(&raw);
                if !sign_in::csrf_ok(&staff, &form) {
                    return page::csrf_refused(&ctx, &staff);
                }
                (form, raw)
            }
            Err(e) => return page::failure(&ctx, Some(&staff), &e.into()),
        }
    } else {
        (page::Form::default(), bytes::Bytes::new())
    };
    // A form sent again (a double click, a reload that posts again) is answered what it was
    // answered the first time, and does nothing twice: its token makes it a write with an
    // idempotency key, like the API's.
    if let Some(keyed) = form_key(&ctx, &staff, &form, &raw) {
        let state = ctx.state.clone();
        let write = async move { Box::pin(dispatch(&ctx, &staff, &form, &method)).await };
        return crate::http::idempotency::run_once(&state, keyed, Some(FORM_WAIT), write).await;
    }
    // Boxed: the pages' futures together are large, in debug builds above all; kept off the
    // stack of the connection's task.
    Box::pin(dispatch(&ctx, &staff, &form, &method)).await
}

/// How long a form sent again waits for its first sending's answer.
const FORM_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The idempotency key of a posted form with a [`page::FORM_TOKEN`] (every form the dashboard
/// renders has one): the staff member's, named by the token and the form's fingerprint, so that
/// the same form sent with other values (back, edit, send) is a new write.
fn form_key(ctx: &Ctx, staff: &sign_in::Staff, form: &page::Form, raw: &[u8]) -> Option<Keyed> {
    let token = form.get(page::FORM_TOKEN)?;
    // Signing out ends the session whatever happened before.
    if ctx.path.starts_with("sign-out") {
        return None;
    }
    let fingerprint = Fingerprint::of(
        "POST",
        &format!("/dashboard/{}", ctx.path),
        &ctx.query,
        body_digest(raw),
    );
    let name = format!("form:{token}:{}", hex::encode(&fingerprint.0[..8]));
    let key = IdempotencyKey::parse(name.as_bytes()).ok()?;
    Some(Keyed {
        owner: IdempotencyOwner::staff(staff.user.team_id, staff.user.id),
        key,
        fingerprint,
    })
}

/// The page or change a signed-in staff member's request asks for. Each page's future is made
/// and boxed apart ([`boxed`]): inline, this function's state and frame would hold them all
/// (hundreds of KiB in a debug build, on the connection task's stack).
async fn dispatch(
    ctx: &Ctx,
    staff: &sign_in::Staff,
    form: &page::Form,
    method: &Method,
) -> Response {
    let segments: Vec<&str> = ctx.path.split('/').filter(|s| !s.is_empty()).collect();
    let get = *method == Method::GET || *method == Method::HEAD;
    let post = *method == Method::POST;
    let page = match (get, post, segments.as_slice()) {
        (true, _, []) => boxed(|| overview::show(ctx, staff)),
        (true, _, ["account"]) => boxed(|| account::account_page(ctx, staff)),
        (true, _, ["account", "two-step"]) => boxed(|| account::two_step_page(ctx, staff)),
        (_, true, ["account", "two-step"]) => boxed(|| account::turn_on(ctx, staff, form)),
        (_, true, ["account", "two-step", "off"]) => boxed(|| account::turn_off(ctx, staff, form)),
        (_, true, ["account", "password"]) => boxed(|| account::change_password(ctx, staff, form)),
        (_, true, ["account", "email"]) => boxed(|| account::change_email(ctx, staff, form)),
        (_, true, ["account", "time-zone"]) => boxed(|| account::set_time_zone(ctx, staff, form)),
        (_, true, ["sign-out"]) => boxed(|| account::sign_out(ctx, staff, false)),
        (_, true, ["sign-out-everywhere"]) => boxed(|| account::sign_out(ctx, staff, true)),
        (true, _, ["licenses"]) => boxed(|| licenses::list(ctx, staff)),
        (_, true, ["licenses"]) => boxed(|| licenses::create(ctx, staff, form)),
        (true, _, ["licenses", "new"]) => boxed(|| licenses::new_page(ctx, staff)),
        (true, _, ["licenses", "export"]) => boxed(|| licenses::export(ctx, staff)),
        (_, true, ["licenses", "bulk"]) => boxed(|| licenses::bulk(ctx, staff, form)),
        (true, _, ["licenses", id]) => boxed(|| licenses::show(ctx, staff, id)),
        (true, _, ["licenses", id, "edit"]) => boxed(|| licenses::edit_page(ctx, staff, id)),
        (_, true, ["licenses", id, "edit"]) => boxed(|| licenses::update(ctx, staff, id, form)),
        (_, true, ["licenses", id, "email"]) => boxed(|| licenses::email(ctx, staff, id)),
        (_, true, ["licenses", id, "extend"]) => boxed(|| licenses::extend(ctx, staff, id, form)),
        (_, true, ["licenses", id, "file"]) => boxed(|| licenses::file(ctx, staff, id, form)),
        (true, _, ["licenses", id, "delete"]) => boxed(|| licenses::confirm_delete(ctx, staff, id)),
        (_, true, ["licenses", id, "delete"]) => boxed(|| licenses::delete(ctx, staff, id)),
        (_, true, ["licenses", id, action @ ("suspend" | "unsuspend")]) => {
            boxed(|| licenses::suspend(ctx, staff, id, *action == "suspend", form))
        }
        (
            _,
            true,
            [
                "licenses",
                id,
                kind @ ("devices" | "addresses"),
                record,
                action @ ("forget" | "remember"),
            ],
        ) => boxed(|| licenses::forget(ctx, staff, id, kind, record, *action == "forget")),
        (_, true, ["licenses", id, "sessions", session, "revoke"]) => {
            boxed(|| licenses::revoke_session(ctx, staff, id, session))
        }
        (
            _,
            true,
            [
                "licenses",
                id,
                "usage",
                meter,
                action @ ("adjust" | "reset"),
            ],
        ) => boxed(|| licenses::change_usage(ctx, staff, (id, meter), *action == "reset", form)),
        (true, _, ["customers"]) => boxed(|| catalog::customers(ctx, staff, After::Nothing)),
        (_, true, ["customers"]) => boxed(|| catalog::create_customer(ctx, staff, form)),
        (true, _, ["customers", id]) => boxed(|| catalog::customer(ctx, staff, id, After::Nothing)),
        (_, true, ["customers", id]) => boxed(|| catalog::update_customer(ctx, staff, id, form)),
        (true, _, ["customers", id, "delete"]) => {
            boxed(|| catalog::confirm_delete_customer(ctx, staff, id))
        }
        (_, true, ["customers", id, "delete"]) => {
            boxed(|| catalog::delete_customer(ctx, staff, id))
        }
        (true, _, ["products"]) => boxed(|| catalog::products(ctx, staff, After::Nothing)),
        (_, true, ["products"]) => boxed(|| catalog::create_product(ctx, staff, form)),
        (true, _, ["products", id]) => boxed(|| catalog::product(ctx, staff, id, None, None)),
        (_, true, ["products", id]) => boxed(|| catalog::update_product(ctx, staff, id, form)),
        (true, _, ["products", id, "delete"]) => {
            boxed(|| catalog::confirm_delete_product(ctx, staff, id))
        }
        (_, true, ["products", id, "delete"]) => boxed(|| catalog::delete_product(ctx, staff, id)),
        (_, true, ["products", id, "branches"]) => {
            boxed(|| catalog::create_branch(ctx, staff, id, form))
        }
        (_, true, ["products", id, "branches", branch, "delete"]) => {
            boxed(|| catalog::delete_branch(ctx, staff, id, branch))
        }
        (true, _, ["entitlements"]) => boxed(|| entitlements::list(ctx, staff, After::Nothing)),
        (_, true, ["entitlements"]) => boxed(|| entitlements::create(ctx, staff, form)),
        (true, _, ["entitlements", id, "delete"]) => {
            boxed(|| entitlements::confirm_delete(ctx, staff, id))
        }
        (_, true, ["entitlements", id, "delete"]) => boxed(|| entitlements::delete(ctx, staff, id)),
        (true, _, ["payments"]) => boxed(|| payments::list(ctx, staff, After::Nothing, None)),
        (_, true, ["payments", "events", id, "replay"]) => {
            boxed(|| payments::replay(ctx, staff, id))
        }
        (_, true, ["payments", provider]) => boxed(|| payments::save(ctx, staff, provider, form)),
        (_, true, ["payments", provider, "rules"]) => {
            boxed(|| payments::create_rule(ctx, staff, provider, form))
        }
        (_, true, ["payments", provider, "rules", id, "delete"]) => {
            boxed(|| payments::delete_rule(ctx, staff, provider, id))
        }
        (true, _, ["payments", provider, "delete"]) => {
            boxed(|| payments::confirm_delete(ctx, staff, provider))
        }
        (_, true, ["payments", provider, "delete"]) => {
            boxed(|| payments::delete(ctx, staff, provider))
        }
        (true, _, ["policies"]) => boxed(|| policies::list(ctx, staff, After::Nothing)),
        (_, true, ["policies"]) => boxed(|| policies::create(ctx, staff, form)),
        (true, _, ["policies", id]) => boxed(|| policies::show(ctx, staff, id, After::Nothing)),
        (_, true, ["policies", id]) => boxed(|| policies::update(ctx, staff, id, form)),
        (true, _, ["policies", id, "delete"]) => boxed(|| policies::confirm_delete(ctx, staff, id)),
        (_, true, ["policies", id, "delete"]) => boxed(|| policies::delete(ctx, staff, id)),
        (true, _, ["blacklist"]) => boxed(|| catalog::blacklist(ctx, staff, After::Nothing)),
        (_, true, ["blacklist"]) => boxed(|| catalog::add_blacklist(ctx, staff, form)),
        (_, true, ["blacklist", id, "delete"]) => {
            boxed(|| catalog::delete_blacklist(ctx, staff, id))
        }
        (true, _, ["settings"]) => boxed(|| settings::settings(ctx, staff, None)),
        (_, true, ["settings"]) => boxed(|| settings::save_settings(ctx, staff, form)),
        (_, true, ["portal-sessions", id, "end"]) => {
            boxed(|| settings::end_portal_session(ctx, staff, id))
        }
        (true, _, ["settings", "signing-keys", "rotate"]) => {
            boxed(|| settings::confirm_rotate(ctx, staff))
        }
        (_, true, ["settings", "signing-keys", "rotate"]) => boxed(|| settings::rotate(ctx, staff)),
        (_, true, ["settings", "signing-keys"]) => boxed(|| settings::create_next(ctx, staff)),
        (true, _, ["settings", "signing-keys", kid, "activate"]) => {
            boxed(|| settings::confirm_activate(ctx, staff, kid))
        }
        (_, true, ["settings", "signing-keys", kid, "activate"]) => {
            boxed(|| settings::activate(ctx, staff, kid))
        }
        (true, _, ["settings", "signing-keys", kid, "retire"]) => {
            boxed(|| settings::confirm_retire(ctx, staff, kid))
        }
        (_, true, ["settings", "signing-keys", kid, "retire"]) => {
            boxed(|| settings::retire(ctx, staff, kid))
        }
        (true, _, ["releases"]) => boxed(|| releases::list(ctx, staff, After::Nothing)),
        (true, _, ["releases", id]) => boxed(|| releases::show(ctx, staff, id, None)),
        (_, true, ["releases", id]) => boxed(|| releases::update(ctx, staff, id, form)),
        (true, _, ["releases", id, "delete"]) => boxed(|| releases::confirm_delete(ctx, staff, id)),
        (_, true, ["releases", id, "delete"]) => boxed(|| releases::delete(ctx, staff, id)),
        (_, true, ["releases", id, "artifacts", artifact, "delete"]) => {
            boxed(|| releases::delete_artifact(ctx, staff, id, artifact))
        }
        (true, _, ["api-keys"]) => boxed(|| api_keys::list(ctx, staff, After::Nothing)),
        (_, true, ["api-keys"]) => boxed(|| api_keys::create(ctx, staff, form)),
        (true, _, ["api-keys", id, "revoke"]) => boxed(|| api_keys::confirm_revoke(ctx, staff, id)),
        (_, true, ["api-keys", id, "revoke"]) => boxed(|| api_keys::revoke(ctx, staff, id)),
        (true, _, ["webhooks"]) => boxed(|| webhooks::list(ctx, staff, After::Nothing)),
        (_, true, ["webhooks"]) => boxed(|| webhooks::create(ctx, staff, form)),
        (true, _, ["webhooks", id]) => boxed(|| webhooks::show(ctx, staff, id, None, None)),
        (_, true, ["webhooks", id]) => boxed(|| webhooks::update(ctx, staff, id, form)),
        (_, true, ["webhooks", id, action @ ("enable" | "disable")]) => {
            boxed(|| webhooks::set_enabled(ctx, staff, id, *action == "enable"))
        }
        (true, _, ["webhooks", id, "rotate-secret"]) => {
            boxed(|| webhooks::confirm_rotate(ctx, staff, id))
        }
        (_, true, ["webhooks", id, "rotate-secret"]) => boxed(|| webhooks::rotate(ctx, staff, id)),
        (_, true, ["webhooks", id, "test"]) => boxed(|| webhooks::send_test(ctx, staff, id)),
        (true, _, ["webhooks", id, "delete"]) => boxed(|| webhooks::confirm_delete(ctx, staff, id)),
        (_, true, ["webhooks", id, "delete"]) => boxed(|| webhooks::delete(ctx, staff, id)),
        (_, true, ["webhooks", id, "deliveries", delivery, "redeliver"]) => {
            boxed(|| webhooks::redeliver(ctx, staff, id, delivery))
        }
        (true, _, ["audit"]) => boxed(|| audit::list(ctx, staff)),
        (true, _, ["users"]) => boxed(|| users::list(ctx, staff, After::Nothing)),
        (_, true, ["users"]) => boxed(|| users::create(ctx, staff, form)),
        (_, true, ["users", id, "role"]) => boxed(|| users::change_role(ctx, staff, id, form)),
        (_, true, ["users", id, "link"]) => boxed(|| users::new_link(ctx, staff, id)),
        (_, true, ["users", id, "two-step", "off"]) => {
            boxed(|| users::reset_two_step(ctx, staff, id))
        }
        (true, _, ["users", id, "delete"]) => boxed(|| users::confirm_delete(ctx, staff, id)),
        (_, true, ["users", id, "delete"]) => boxed(|| users::delete(ctx, staff, id)),
        _ => boxed(|| std::future::ready(page::not_found(ctx, staff))),
    };
    page.await
}

/// A page's future, made in a frame of its own and moved to the heap: [`dispatch`]'s frame then
/// holds a pointer for whichever page is asked for, not a slot for every page's future (as a
/// debug build gives each arm of a match).
#[inline(never)]
fn boxed<'a, F>(
    make: impl FnOnce() -> F,
) -> std::pin::Pin<Box<dyn Future<Output = Response> + Send + 'a>>
where
    F: Future<Output = Response> + Send + 'a,
{
    Box::pin(make())
}
