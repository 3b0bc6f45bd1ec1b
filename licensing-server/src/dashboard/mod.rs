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
mod assets;
mod audit;
mod catalog;
mod charts;
mod entitlements;
mod licenses;
mod overview;
mod page;
mod policies;
mod releases;
mod settings;
mod sign_in;
mod users;
mod webhooks;

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
            let mut response = route(ctx, method, input.body).await;
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
        ["static", _] | ["sign-in"] | ["set-password", _, _] | ["confirm-email", _, _] => {
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
        let write = async move { dispatch(&ctx, &staff, &form, &method).await };
        return crate::http::idempotency::run_once(&state, keyed, Some(FORM_WAIT), write).await;
    }
    dispatch(&ctx, &staff, &form, &method).await
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

/// The page or change a signed-in staff member's request asks for.
async fn dispatch(
    ctx: &Ctx,
    staff: &sign_in::Staff,
    form: &page::Form,
    method: &Method,
) -> Response {
    let segments: Vec<&str> = ctx.path.split('/').filter(|s| !s.is_empty()).collect();
    let get = *method == Method::GET || *method == Method::HEAD;
    let post = *method == Method::POST;
    match (get, post, segments.as_slice()) {
        (true, _, []) => overview::show(ctx, staff).await,
        (true, _, ["account"]) => account::account_page(ctx, staff).await,
        (true, _, ["account", "two-step"]) => account::two_step_page(ctx, staff).await,
        (_, true, ["account", "two-step"]) => account::turn_on(ctx, staff, form).await,
        (_, true, ["account", "two-step", "off"]) => account::turn_off(ctx, staff, form).await,
        (_, true, ["account", "password"]) => account::change_password(ctx, staff, form).await,
        (_, true, ["account", "email"]) => account::change_email(ctx, staff, form).await,
        (_, true, ["account", "time-zone"]) => account::set_time_zone(ctx, staff, form).await,
        (_, true, ["sign-out"]) => account::sign_out(ctx, staff, false).await,
        (_, true, ["sign-out-everywhere"]) => account::sign_out(ctx, staff, true).await,
        (true, _, ["licenses"]) => licenses::list(ctx, staff).await,
        (_, true, ["licenses"]) => licenses::create(ctx, staff, form).await,
        (true, _, ["licenses", "new"]) => licenses::new_page(ctx, staff).await,
        (true, _, ["licenses", "export"]) => licenses::export(ctx, staff).await,
        (_, true, ["licenses", "bulk"]) => licenses::bulk(ctx, staff, form).await,
        (true, _, ["licenses", id]) => licenses::show(ctx, staff, id).await,
        (true, _, ["licenses", id, "edit"]) => licenses::edit_page(ctx, staff, id).await,
        (_, true, ["licenses", id, "edit"]) => licenses::update(ctx, staff, id, form).await,
        (_, true, ["licenses", id, "email"]) => licenses::email(ctx, staff, id).await,
        (_, true, ["licenses", id, "extend"]) => licenses::extend(ctx, staff, id, form).await,
        (_, true, ["licenses", id, "file"]) => licenses::file(ctx, staff, id, form).await,
        (true, _, ["licenses", id, "delete"]) => licenses::confirm_delete(ctx, staff, id).await,
        (_, true, ["licenses", id, "delete"]) => licenses::delete(ctx, staff, id).await,
        (_, true, ["licenses", id, action @ ("suspend" | "unsuspend")]) => {
            licenses::suspend(ctx, staff, id, *action == "suspend").await
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
        ) => licenses::forget(ctx, staff, id, kind, record, *action == "forget").await,
        (_, true, ["licenses", id, "sessions", session, "revoke"]) => {
            licenses::revoke_session(ctx, staff, id, session).await
        }
        (true, _, ["customers"]) => catalog::customers(ctx, staff, After::Nothing).await,
        (_, true, ["customers"]) => catalog::create_customer(ctx, staff, form).await,
        (true, _, ["customers", id]) => catalog::customer(ctx, staff, id, After::Nothing).await,
        (_, true, ["customers", id]) => catalog::update_customer(ctx, staff, id, form).await,
        (true, _, ["customers", id, "delete"]) => {
            catalog::confirm_delete_customer(ctx, staff, id).await
        }
        (_, true, ["customers", id, "delete"]) => catalog::delete_customer(ctx, staff, id).await,
        (true, _, ["products"]) => catalog::products(ctx, staff, After::Nothing).await,
        (_, true, ["products"]) => catalog::create_product(ctx, staff, form).await,
        (true, _, ["products", id]) => catalog::product(ctx, staff, id, None, None).await,
        (_, true, ["products", id]) => catalog::update_product(ctx, staff, id, form).await,
        (true, _, ["products", id, "delete"]) => {
            catalog::confirm_delete_product(ctx, staff, id).await
        }
        (_, true, ["products", id, "delete"]) => catalog::delete_product(ctx, staff, id).await,
        (_, true, ["products", id, "branches"]) => {
            catalog::create_branch(ctx, staff, id, form).await
        }
        (_, true, ["products", id, "branches", branch, "delete"]) => {
            catalog::delete_branch(ctx, staff, id, branch).await
        }
        (true, _, ["entitlements"]) => entitlements::list(ctx, staff, After::Nothing).await,
        (_, true, ["entitlements"]) => entitlements::create(ctx, staff, form).await,
        (true, _, ["entitlements", id, "delete"]) => {
            entitlements::confirm_delete(ctx, staff, id).await
        }
        (_, true, ["entitlements", id, "delete"]) => entitlements::delete(ctx, staff, id).await,
        (true, _, ["policies"]) => policies::list(ctx, staff, After::Nothing).await,
        (_, true, ["policies"]) => policies::create(ctx, staff, form).await,
        (true, _, ["policies", id]) => policies::show(ctx, staff, id, After::Nothing).await,
        (_, true, ["policies", id]) => policies::update(ctx, staff, id, form).await,
        (true, _, ["policies", id, "delete"]) => policies::confirm_delete(ctx, staff, id).await,
        (_, true, ["policies", id, "delete"]) => policies::delete(ctx, staff, id).await,
        (true, _, ["blacklist"]) => catalog::blacklist(ctx, staff, After::Nothing).await,
        (_, true, ["blacklist"]) => catalog::add_blacklist(ctx, staff, form).await,
        (_, true, ["blacklist", id, "delete"]) => catalog::delete_blacklist(ctx, staff, id).await,
        (true, _, ["settings"]) => settings::settings(ctx, staff, None).await,
        (_, true, ["settings"]) => settings::save_settings(ctx, staff, form).await,
        (true, _, ["settings", "signing-keys", "rotate"]) => {
            settings::confirm_rotate(ctx, staff).await
        }
        (_, true, ["settings", "signing-keys", "rotate"]) => settings::rotate(ctx, staff).await,
        (_, true, ["settings", "signing-keys"]) => settings::create_next(ctx, staff).await,
        (true, _, ["settings", "signing-keys", kid, "activate"]) => {
            settings::confirm_activate(ctx, staff, kid).await
        }
        (_, true, ["settings", "signing-keys", kid, "activate"]) => {
            settings::activate(ctx, staff, kid).await
        }
        (true, _, ["settings", "signing-keys", kid, "retire"]) => {
            settings::confirm_retire(ctx, staff, kid).await
        }
        (_, true, ["settings", "signing-keys", kid, "retire"]) => {
            settings::retire(ctx, staff, kid).await
        }
        (true, _, ["releases"]) => releases::list(ctx, staff, After::Nothing).await,
        (true, _, ["releases", id]) => releases::show(ctx, staff, id, None).await,
        (_, true, ["releases", id]) => releases::update(ctx, staff, id, form).await,
        (true, _, ["releases", id, "delete"]) => releases::confirm_delete(ctx, staff, id).await,
        (_, true, ["releases", id, "delete"]) => releases::delete(ctx, staff, id).await,
        (true, _, ["api-keys"]) => api_keys::list(ctx, staff, After::Nothing).await,
        (_, true, ["api-keys"]) => api_keys::create(ctx, staff, form).await,
        (true, _, ["api-keys", id, "revoke"]) => api_keys::confirm_revoke(ctx, staff, id).await,
        (_, true, ["api-keys", id, "revoke"]) => api_keys::revoke(ctx, staff, id).await,
        (true, _, ["webhooks"]) => webhooks::list(ctx, staff, After::Nothing).await,
        (_, true, ["webhooks"]) => webhooks::create(ctx, staff, form).await,
        (true, _, ["webhooks", id]) => webhooks::show(ctx, staff, id, None, None).await,
        (_, true, ["webhooks", id]) => webhooks::update(ctx, staff, id, form).await,
        (_, true, ["webhooks", id, action @ ("enable" | "disable")]) => {
            webhooks::set_enabled(ctx, staff, id, *action == "enable").await
        }
        (true, _, ["webhooks", id, "rotate-secret"]) => {
            webhooks::confirm_rotate(ctx, staff, id).await
        }
        (_, true, ["webhooks", id, "rotate-secret"]) => webhooks::rotate(ctx, staff, id).await,
        (_, true, ["webhooks", id, "test"]) => webhooks::send_test(ctx, staff, id).await,
        (true, _, ["webhooks", id, "delete"]) => webhooks::confirm_delete(ctx, staff, id).await,
        (_, true, ["webhooks", id, "delete"]) => webhooks::delete(ctx, staff, id).await,
        (_, true, ["webhooks", id, "deliveries", delivery, "redeliver"]) => {
            webhooks::redeliver(ctx, staff, id, delivery).await
        }
        (true, _, ["audit"]) => audit::list(ctx, staff).await,
        (true, _, ["users"]) => users::list(ctx, staff, After::Nothing).await,
        (_, true, ["users"]) => users::create(ctx, staff, form).await,
        (_, true, ["users", id, "role"]) => users::change_role(ctx, staff, id, form).await,
        (_, true, ["users", id, "link"]) => users::new_link(ctx, staff, id).await,
        (_, true, ["users", id, "two-step", "off"]) => users::reset_two_step(ctx, staff, id).await,
        (true, _, ["users", id, "delete"]) => users::confirm_delete(ctx, staff, id).await,
        (_, true, ["users", id, "delete"]) => users::delete(ctx, staff, id).await,
        _ => page::not_found(ctx, staff),
    }
}
