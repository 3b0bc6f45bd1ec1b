//! The page shell (head, navigation, account menu), forms, redirects, and the error pages, with
//! the headers every dashboard answer carries.

use bytes::Bytes;
use licensing_core::model::{Resource, Role, Scope};
use licensing_core::{ApiError, Timestamp};
use maud::{DOCTYPE, Markup, html};
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};

use super::api::{self, Failure};
use super::{Ctx, Staff};
use crate::http::Response;

/// Largest form body (every form but a release upload).
pub(crate) const MAX_FORM: usize = 64 * 1024;

/// Nothing but this server's own stylesheet, script and images; no framing, no plugins, forms
/// only to this server. No `unsafe-inline`: the pages have no inline script or style.
const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Adds the headers of every dashboard answer.
pub(crate) fn protect(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Set-password links carry their secret in the path: no page may leak it onwards.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
}

/// An HTML answer.
pub(crate) fn html_response(status: u16, markup: Markup) -> Response {
    let mut response = Response::new(markup.into_string().into());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// What a page shows: its section, its title and its content.
pub(crate) struct Shown {
    nav: Nav,
    title: String,
    content: Markup,
}

/// A page of section `nav` titled `title`, showing `content`.
pub(crate) fn shown(nav: Nav, title: impl Into<String>, content: Markup) -> Shown {
    Shown {
        nav,
        title: title.into(),
        content,
    }
}

/// The page `outcome` shows, in the layout, answered with the status of the `failure` it shows
/// again (200 without one: a form shown again after a refusal keeps the API's status); the
/// failure's page when the outcome is a failure.
pub(crate) fn answer(
    ctx: &Ctx,
    staff: &Staff,
    failure: Option<&Failure>,
    outcome: Result<Shown, Failure>,
) -> Response {
    answer_with(ctx, staff, failure.map_or(200, |f| f.status), outcome)
}

/// The page `outcome` shows, in the layout, answered with `status`; the failure's page when the
/// outcome is a failure.
pub(crate) fn answer_with(
    ctx: &Ctx,
    staff: &Staff,
    status: u16,
    outcome: Result<Shown, Failure>,
) -> Response {
    match outcome {
        Ok(page) => html_response(
            status,
            layout(ctx, staff, page.nav, &page.title, page.content),
        ),
        Err(f) => self::failure(ctx, Some(staff), &f),
    }
}

/// `n` and the noun, singular for one: "1 customer", "2 customers".
pub(crate) fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `303 See Other` to `location` (after a form, the browser GETs the next page).
pub(crate) fn redirect(location: &str) -> Response {
    let mut response = Response::new(Vec::new().into());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// What a page with a form shows besides its records: nothing more (a plain `GET`), the form
/// again as it was sent with why it was refused, or what the form made (a secret or a link,
/// shown this once).
pub(crate) enum After<'a, M = ()> {
    /// A plain visit.
    Nothing,
    /// The form as sent, and why it was refused.
    Refused(&'a Form, &'a Failure),
    /// What the form made.
    Made(&'a M),
}

impl<'a, M> After<'a, M> {
    /// The form to fill the fields from: as sent when refused, else empty.
    pub(crate) fn form(&self) -> &'a Form {
        static EMPTY: Form = Form(Vec::new());
        match self {
            Self::Refused(form, _) => form,
            Self::Nothing | Self::Made(_) => &EMPTY,
        }
    }

    /// Why the form was refused.
    pub(crate) fn failure(&self) -> Option<&'a Failure> {
        match self {
            Self::Refused(_, failure) => Some(failure),
            Self::Nothing | Self::Made(_) => None,
        }
    }

    /// What the form made.
    pub(crate) fn made(&self) -> Option<&'a M> {
        match self {
            Self::Made(made) => Some(made),
            Self::Nothing | Self::Refused(..) => None,
        }
    }

    /// The page's status: the refusal's (a form shown again keeps the API's status), 201 after
    /// a create, else 200.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Nothing => 200,
            Self::Refused(_, failure) => failure.status,
            Self::Made(_) => 201,
        }
    }
}

/// A value shown this once (a new key, secret or link), in `code` of element id `id` (and
/// `class`, when given), with a button that copies it where the browser allows.
pub(crate) fn shown_once(id: &str, class: Option<&str>, value: &str) -> Markup {
    html! {
        p {
            code class=[class] id=(id) { (value) }
            button.secondary.small.copy type="button" data-copy=(value) hidden { "Copy" }
        }
    }
}

/// A form's fields, in order.
#[derive(Debug, Default)]
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    /// Reads an `application/x-www-form-urlencoded` body.
    pub(crate) async fn read(body: crate::http::Body) -> Result<Self, ApiError> {
        let bytes: Bytes = crate::http::read_body(body, MAX_FORM).await?;
        Ok(Self::parse(&bytes))
    }

    /// A form of these fields.
    pub(crate) fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Self(pairs)
    }

    /// Parses an urlencoded form.
    pub(crate) fn parse(bytes: &[u8]) -> Self {
        Self(
            form_urlencoded::parse(bytes)
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name`, trimmed; `None` when missing or blank.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.get(name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// Every value of `name`.
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// A section of the navigation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Licenses,
    Customers,
    Products,
    Entitlements,
    Policies,
    Payments,
    Releases,
    Blacklist,
    Settings,
    ApiKeys,
    Webhooks,
    Audit,
    Users,
    Account,
    None,
}

/// The navigation's entries: section, title, target, and the scope that shows it (`None`:
/// owners and admins, who manage accounts).
#[rustfmt::skip]
const NAV: &[(Nav, &str, &str, Option<Resource>)] = &[
    (Nav::Overview, "Overview", "/dashboard/", Some(Resource::Statistics)),
    (Nav::Licenses, "Licenses", "/dashboard/licenses", Some(Resource::Licenses)),
    (Nav::Customers, "Customers", "/dashboard/customers", Some(Resource::Customers)),
    (Nav::Products, "Products", "/dashboard/products", Some(Resource::Products)),
    (Nav::Entitlements, "Entitlements", "/dashboard/entitlements", Some(Resource::Entitlements)),
    (Nav::Policies, "Policies", "/dashboard/policies", Some(Resource::Policies)),
    (Nav::Payments, "Payments", "/dashboard/payments", Some(Resource::Integrations)),
    (Nav::Releases, "Releases", "/dashboard/releases", Some(Resource::Releases)),
    (Nav::Blacklist, "Blacklist", "/dashboard/blacklist", Some(Resource::Blacklist)),
    (Nav::ApiKeys, "API keys", "/dashboard/api-keys", Some(Resource::ApiKeys)),
    (Nav::Webhooks, "Webhooks", "/dashboard/webhooks", Some(Resource::Webhooks)),
    (Nav::Audit, "Audit log", "/dashboard/audit", Some(Resource::AuditLog)),
    (Nav::Users, "Users", "/dashboard/users", None),
    (Nav::Settings, "Settings", "/dashboard/settings", Some(Resource::Settings)),
];

/// A page of the dashboard for a signed-in staff member.
pub(crate) fn layout(ctx: &Ctx, staff: &Staff, nav: Nav, title: &str, content: Markup) -> Markup {
    let scopes = staff.user.role.scopes();
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/dashboard/" { "Licensing" }
                    nav.main aria-label="Sections" {
                        ul {
                            @for (section, name, href, resource) in NAV {
                                @if resource.map_or(staff.user.role.manages(Role::Viewer), |r| scopes.allows(Scope::read(r))) {
                                    li {
                                        a href=(href) aria-current=[(nav == *section).then_some("page")] { (name) }
                                    }
                                }
                            }
                        }
                    }
                    div.who {
                        a href="/dashboard/account" aria-current=[(nav == Nav::Account).then_some("page")] {
                            (staff.user.email.as_str())
                        }
                        span.role { (staff.user.role.as_str()) }
                        form method="post" action="/dashboard/sign-out" {
                            (csrf(staff))
                            button.link type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" {
                    @if let Some(notice) = notice_text(ctx.param("notice").as_deref()) {
                        p.notice role="status" { (notice) }
                    }
                    (content)
                }
            }
        }
    }
}

/// A page without the navigation (sign-in, set-password, errors before signing in).
pub(crate) fn bare(title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main id="main" {
                    p.brand { "Licensing" }
                    (content)
                }
            }
        }
    }
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="referrer" content="no-referrer";
            title { (title) " · Licensing" }
            link rel="stylesheet" href=(super::assets::CSS_PATH);
            script src=(super::assets::JS_PATH) defer {}
        }
    }
}

/// The hidden fields of every form: the session's CSRF token, and the form's own token (new
/// each time a page shows it), which makes sending it again a replay rather than a second write.
pub(crate) fn csrf(staff: &Staff) -> Markup {
    html! {
        input type="hidden" name="csrf" value=(staff.session.csrf_token);
        input type="hidden" name=(FORM_TOKEN) value=(form_token());
    }
}

/// The name of a form's own token.
pub(crate) const FORM_TOKEN: &str = "formToken";

/// A fresh form token: 96 random bits, URL-safe.
fn form_token() -> String {
    let mut bytes = [0u8; 12];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    hex::encode(bytes)
}

/// The sentence a `?notice=` names; unknown names show nothing.
fn notice_text(name: Option<&str>) -> Option<&'static str> {
    Some(match name? {
        "signed-in" => "Signed in.",
        "password-set" => "Your password is set, and you are signed in.",
        "license-created" => "License created.",
        "license-updated" => "Changes saved.",
        "user-invited" => "Account created: its set-password link is on its way by e-mail.",
        "license-emailed" => "The key is on its way to the license's customers.",
        "two-step-off" => "Two-step sign-in is off.",
        "two-step-reset" => {
            "Two-step sign-in is off for that account: they sign in with their password alone until they turn it on again."
        }
        "license-deleted" => "License deleted.",
        "license-suspended" => {
            "License suspended: its clients are refused until it is unsuspended."
        }
        "license-unsuspended" => "License unsuspended.",
        "license-extended" => "License extended: its new expiry is below.",
        "device-forgotten" => "Device forgotten: its seat is free.",
        "device-remembered" => "Device remembered.",
        "address-forgotten" => "Address forgotten.",
        "address-remembered" => "Address remembered.",
        "session-revoked" => "Session revoked: its seat is free.",
        "key-revoked" => "API key revoked.",
        "release-created" => "Release uploaded.",
        "release-updated" => "Release updated.",
        "artifact-uploaded" => "Artifact uploaded: the update feeds offer it.",
        "artifact-deleted" => "Artifact deleted.",
        "release-deleted" => "Release deleted.",
        "user-deleted" => "Account deleted.",
        "user-updated" => "Account updated.",
        "customer-created" => "Customer created.",
        "customer-updated" => "Customer saved.",
        "customer-deleted" => "Customer deleted.",
        "product-created" => "Product created.",
        "product-updated" => "Product saved.",
        "product-deleted" => "Product deleted.",
        "branch-created" => "Branch created.",
        "branch-deleted" => "Branch deleted.",
        "blacklist-added" => "Added to the blacklist.",
        "blacklist-removed" => "Removed from the blacklist.",
        "settings-saved" => "Settings saved.",
        "portal-session-ended" => "The customer's portal session was ended.",
        "signing-key-rotated" => {
            "Signing key rotated: the new key signs from now on; the former one stays trusted until you retire it."
        }
        "signing-key-retired" => "Signing key retired.",
        "signing-key-created" => {
            "Next signing key created: publish it in an application release, then activate it."
        }
        "entitlement-created" => "Entitlement created.",
        "policy-created" => "Policy created: choose it on a license's form.",
        "policy-updated" => "Policy saved: every license on it follows now.",
        "policy-deleted" => "Policy deleted; its licenses keep its terms as their own.",
        "integration-saved" => {
            "Integration saved: give the provider the address shown, and send it a test event."
        }
        "integration-deleted" => {
            "Integration removed: its events are answered “not received” from now on."
        }
        "rule-created" => "Rule added: the next purchase it matches makes a license on its policy.",
        "rule-deleted" => "Rule deleted.",
        "event-replayed-applied" => "Event replayed: applied.",
        "event-replayed-duplicate" => {
            "Event replayed: it had been applied already, nothing changed."
        }
        "event-replayed-skipped" => "Event replayed: skipped again (see why below).",
        "event-replayed-failed" => "Event replayed: it failed again (see why below).",
        "entitlement-deleted" => "Entitlement deleted, and taken from every license and product.",
        "licenses-suspended" => "The licenses chosen are suspended.",
        "licenses-unsuspended" => "The licenses chosen are no longer suspended.",
        "licenses-deleted" => "The licenses chosen are deleted.",
        "password-changed" => "Password changed. Your other sessions have ended.",
        "email-changed" => "E-mail address changed: sign in with the new one from now on.",
        "email-confirm-sent" => {
            "A link was sent to the new address: your account signs in with it once you follow the link (within 72 hours). Until then, sign in with the address you have."
        }
        "time-zone-set" => "Time zone saved: times are shown in it.",
        "webhook-test" => "Test event queued: it appears below once sent.",
        "webhook-redelivered" => "Delivery queued again.",
        "webhook-deleted" => "Webhook endpoint deleted.",
        "webhook-updated" => "Webhook endpoint saved.",
        "webhook-enabled" => "Webhook endpoint enabled: events go to it again.",
        "webhook-disabled" => "Webhook endpoint disabled: no events go to it until it is enabled.",
        _ => return None,
    })
}

/// The time zone `staff` reads times in: the one they chose on their account page, else UTC.
pub(crate) fn zone(staff: &Staff) -> chrono_tz::Tz {
    staff
        .user
        .time_zone
        .as_deref()
        .and_then(|name| name.parse().ok())
        .unwrap_or(chrono_tz::Tz::UTC)
}

/// A date and time in the reader's time zone, to the minute, with the zone's abbreviation.
pub(crate) fn when(staff: &Staff, at: Timestamp) -> String {
    at.as_datetime()
        .with_timezone(&zone(staff))
        .format("%Y-%m-%d %H:%M %Z")
        .to_string()
}

/// A date and time in the reader's time zone, to the second: where the order of events
/// matters (logs, deliveries, requests).
pub(crate) fn when_exact(staff: &Staff, at: Timestamp) -> String {
    at.as_datetime()
        .with_timezone(&zone(staff))
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// A date as UTC.
pub(crate) fn day(at: Timestamp) -> String {
    at.as_datetime().format("%Y-%m-%d").to_string()
}

/// A table: its column headings, a last quiet heading (`hint`) over a column of buttons when
/// there is one, and its rows.
pub(crate) fn table(columns: &[&str], hint: Option<&str>, rows: Markup) -> Markup {
    html! {
        div.table-wrap {
            table {
                thead {
                    tr {
                        @for column in columns { th scope="col" { (column) } }
                        @if let Some(hint) = hint { th scope="col" { span.hint { (hint) } } }
                    }
                }
                tbody { (rows) }
            }
        }
    }
}

/// A form's problems: the summary and each field's message, the field in words.
pub(crate) fn problems(failure: Option<&Failure>) -> Markup {
    html! {
        @if let Some(f) = failure {
            div.problems role="alert" {
                p { strong { (f.summary()) } }
                @if !f.fields.is_empty() {
                    ul {
                        @for e in &f.fields {
                            li { strong { (api::field_words(&e.field)) } " " (e.message) }
                        }
                    }
                }
            }
        }
    }
}

/// A page that says what went wrong, in plain words, with the right status.
pub(crate) fn failure(ctx: &Ctx, staff: Option<&Staff>, failure: &Failure) -> Response {
    let content = html! {
        h1 { (failure.title()) }
        p { (failure.details) }
        p { a href="/dashboard/" { "Back to the dashboard" } }
    };
    let markup = match staff {
        Some(staff) => layout(ctx, staff, Nav::None, failure.title(), content),
        None => bare(failure.title(), content),
    };
    html_response(failure.status, markup)
}

/// The page of an outcome: itself, or its failure.
pub(crate) fn or_failure(ctx: &Ctx, staff: &Staff, outcome: Result<Response, Failure>) -> Response {
    outcome.unwrap_or_else(|f| failure(ctx, Some(staff), &f))
}

/// The `page` parameter of a list (1 to 1,000,000, as the API takes it); 1 when absent or
/// out of range.
pub(crate) fn page_number(ctx: &Ctx) -> u32 {
    ctx.param("page")
        .and_then(|p| p.parse().ok())
        .filter(|p| (1..=1_000_000).contains(p))
        .unwrap_or(1)
}

/// A list's pager: which items of `total` this page shows, Previous and Next, and numbered
/// pages (the first, the last, and two either side of `page`, gaps marked), each linked by
/// `link`.
pub(crate) fn pager(total: u64, page: u32, size: u64, link: impl Fn(u32) -> String) -> Markup {
    let size = size.max(1);
    let pages = u32::try_from(total.div_ceil(size))
        .unwrap_or(u32::MAX)
        .max(1);
    let first = u64::from(page - 1) * size + 1;
    let last = (u64::from(page) * size).min(total);
    let mut numbers: Vec<u32> = [1, pages]
        .into_iter()
        .chain(page.saturating_sub(2).max(1)..=page.saturating_add(2).min(pages))
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    html! {
        nav.pager aria-label="Pages" {
            @if total > 0 && first <= total {
                span { (first) "–" (last) " of " (total) }
            }
            @if page > 1 {
                a href=(link(page - 1)) rel="prev" { "Previous" }
            }
            @if pages > 1 {
                @for (i, n) in numbers.iter().enumerate() {
                    @if i > 0 && numbers[i - 1] + 1 < *n { span.gap aria-hidden="true" { "…" } }
                    @if *n == page {
                        span.current aria-current="page" { (n) }
                    } @else {
                        a href=(link(*n)) aria-label={ "Page " (n) } { (n) }
                    }
                }
            }
            @if page < pages {
                a href=(link(page + 1)) rel="next" { "Next" }
            }
        }
    }
}

/// The id in a dashboard path, or a 404 that names what was looked for.
pub(crate) fn id_of<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, Failure> {
    text.parse()
        .map_err(|_| Failure::new(404, format!("There is no such {what}.")))
}

/// Performs what a form asks (`op`, or why it cannot be asked, such as an id that is no id) and
/// sends the browser to `then`, or shows what went wrong in plain words.
pub(crate) async fn done<O: crate::app::Run>(
    ctx: &Ctx,
    staff: &Staff,
    op: Result<O, Failure>,
    then: &str,
) -> Response {
    let outcome = async {
        api::perform(ctx, staff, op?).await?;
        Ok(redirect(then))
    };
    or_failure(ctx, staff, outcome.await)
}

/// What a confirmation page asks before something is deleted or revoked.
pub(crate) struct Confirm<'a> {
    /// The page's place in the navigation.
    pub(crate) nav: Nav,
    /// The question, as the heading.
    pub(crate) title: &'a str,
    /// What goes and what follows from it; the page adds that it cannot be undone.
    pub(crate) what: Markup,
    /// Where the form posts.
    pub(crate) action: String,
    /// The button's words.
    pub(crate) button: &'a str,
    /// Where "Keep it" leads.
    pub(crate) back: String,
}

/// A list's filter as a select (`name`, its label, the words for no filter first), each option
/// a value with its words, the `chosen` one selected.
pub(crate) fn filter<V: std::fmt::Display, T: maud::Render>(
    (name, label, any): (&str, &str, &str),
    options: impl IntoIterator<Item = (V, T)>,
    chosen: &str,
) -> Markup {
    html! {
        div {
            label for=(name) { (label) }
            select id=(name) name=(name) {
                option value="" { (any) }
                @for (value, text) in options {
                    @let value = value.to_string();
                    option value=(value) selected[chosen == value] { (text) }
                }
            }
        }
    }
}

/// A confirmation page: the question, the consequences, the button, and the way back.
pub(crate) fn confirm(staff: &Staff, c: Confirm<'_>) -> Shown {
    let content = html! {
        h1 { (c.title) }
        div.card {
            p { (c.what) " This cannot be undone." }
            div.actions {
                form method="post" action=(c.action) {
                    (csrf(staff))
                    button.danger type="submit" { (c.button) }
                }
                a.button.secondary href=(c.back) { "Keep it" }
            }
        }
    };
    shown(c.nav, c.title, content)
}

/// 404 for a page that does not exist.
pub(crate) fn not_found(ctx: &Ctx, staff: &Staff) -> Response {
    failure(
        ctx,
        Some(staff),
        &Failure::new(
            404,
            "There is no such page in the dashboard. It may have been moved, or the link may be mistyped.",
        ),
    )
}

/// 405 for a page asked for with a method it does not answer.
pub(crate) fn method_not_allowed() -> Response {
    html_response(
        405,
        bare(
            "Not allowed",
            html! { h1 { "Not allowed" } p { "This page cannot be asked for that way." } },
        ),
    )
}

/// 403 for a form without the session's token.
pub(crate) fn csrf_refused(ctx: &Ctx, staff: &Staff) -> Response {
    failure(
        ctx,
        Some(staff),
        &Failure::new(
            403,
            "This form did not come from a page of your current session, so nothing was changed. Go back, reload the page, and try again.",
        ),
    )
}

/// The message of a form's field `name` that `failure` names, beside the field.
pub(crate) fn field_error(failure: Option<&Failure>, name: &str) -> Markup {
    html! {
        @if let Some(message) = failure.and_then(|f| f.field(name)) {
            span.field-error { (message) }
        }
    }
}
