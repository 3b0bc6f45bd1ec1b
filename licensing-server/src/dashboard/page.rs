//! The page shell (head, navigation, account menu), forms, redirects, and the error pages, with
//! the headers every dashboard answer carries.

use bytes::Bytes;
use licensing_core::model::{Resource, Role, Scope};
use licensing_core::{ApiError, Timestamp};
use maud::{DOCTYPE, Markup, html};
use warp::http::{HeaderMap, HeaderValue, StatusCode, header};

use super::api::{self, Failure};
use super::{Ctx, Staff};
use crate::dashboard::words::{t, tm, tw};
use crate::http::Response;
use crate::i18n::Arg;

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

/// `n` and the noun of message `id` (`count-…`), singular or plural as the language says:
/// "1 customer", "2 customers".
pub(crate) fn counted(n: impl Into<u64>, id: &str) -> String {
    let n = i64::try_from(n.into()).unwrap_or(i64::MAX);
    tw(id, &[("count", Arg::Number(n))])
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
            button.secondary.small.copy type="button" data-copy=(value) data-copied=(t("page-copied")) data-copy-failed=(t("page-copy-failed")) hidden { (t("page-copy")) }
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

/// The navigation's entries: section, title (its message), target, and the scope that shows it (`None`:
/// owners and admins, who manage accounts).
#[rustfmt::skip]
const NAV: &[(Nav, &str, &str, Option<Resource>)] = &[
    (Nav::Overview, "page-overview", "/dashboard/", Some(Resource::Statistics)),
    (Nav::Licenses, "page-licenses", "/dashboard/licenses", Some(Resource::Licenses)),
    (Nav::Customers, "page-customers", "/dashboard/customers", Some(Resource::Customers)),
    (Nav::Products, "page-products", "/dashboard/products", Some(Resource::Products)),
    (Nav::Entitlements, "page-entitlements", "/dashboard/entitlements", Some(Resource::Entitlements)),
    (Nav::Policies, "page-policies", "/dashboard/policies", Some(Resource::Policies)),
    (Nav::Payments, "page-payments", "/dashboard/payments", Some(Resource::Integrations)),
    (Nav::Releases, "page-releases", "/dashboard/releases", Some(Resource::Releases)),
    (Nav::Blacklist, "page-blacklist", "/dashboard/blacklist", Some(Resource::Blacklist)),
    (Nav::ApiKeys, "page-api-keys", "/dashboard/api-keys", Some(Resource::ApiKeys)),
    (Nav::Webhooks, "page-webhooks", "/dashboard/webhooks", Some(Resource::Webhooks)),
    (Nav::Audit, "page-audit-log", "/dashboard/audit", Some(Resource::AuditLog)),
    (Nav::Users, "page-users", "/dashboard/users", None),
    (Nav::Settings, "page-settings", "/dashboard/settings", Some(Resource::Settings)),
];

/// A page of the dashboard for a signed-in staff member.
pub(crate) fn layout(ctx: &Ctx, staff: &Staff, nav: Nav, title: &str, content: Markup) -> Markup {
    let scopes = staff.user.role.scopes();
    html! {
        (DOCTYPE)
        html lang=(super::words::lang().tag()) {
            (head(title))
            body {
                a.skip href="#main" { (t("page-skip-content")) }
                header.top {
                    a.brand href="/dashboard/" { (t("page-licensing")) }
                    nav.main aria-label=(t("page-sections")) {
                        ul {
                            @for (section, title, href, resource) in NAV {
                                @let name = t(title);
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
                            button.link type="submit" { (t("page-sign-out")) }
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
        html lang=(super::words::lang().tag()) {
            (head(title))
            body.bare {
                main id="main" {
                    p.brand { (t("page-licensing")) }
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
            title { (tm("page-title-licensing", &[("title", html! { (title) })])) }
            link rel="icon" type="image/svg+xml" href=(super::assets::FAVICON_PATH);
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
        "signed-in" => t("page-signed"),
        "password-set" => t("page-your-password-set-you-signed"),
        "license-created" => t("page-license-created"),
        "license-updated" => t("page-changes-saved"),
        "user-invited" => t("page-account-created-set-password-link"),
        "two-step-off" => t("page-two-step-sign-off"),
        "two-step-reset" => t("page-two-step-sign-off-account"),
        "license-deleted" => t("page-license-deleted"),
        "license-suspended" => t("page-license-suspended-clients-refused-until"),
        "license-unsuspended" => t("page-license-unsuspended"),
        "license-extended" => t("page-license-extended-new-expiry-below"),
        "device-forgotten" => t("page-device-forgotten-seat-free"),
        "device-remembered" => t("page-device-remembered"),
        "address-forgotten" => t("page-address-forgotten"),
        "address-remembered" => t("page-address-remembered"),
        "session-revoked" => t("page-session-revoked-seat-free"),
        "usage-adjusted" => t("page-usage-adjusted"),
        "usage-reset" => t("page-usage-reset"),
        "key-revoked" => t("page-api-key-revoked"),
        "release-created" => t("page-release-uploaded"),
        "release-updated" => t("page-release-updated"),
        "artifact-uploaded" => t("page-artifact-uploaded-update-feeds-offer"),
        "artifact-deleted" => t("page-artifact-deleted"),
        "release-deleted" => t("page-release-deleted"),
        "user-deleted" => t("page-account-deleted"),
        "user-updated" => t("page-account-updated"),
        "customer-created" => t("page-customer-created"),
        "customer-updated" => t("page-customer-saved"),
        "customer-deleted" => t("page-customer-deleted"),
        "product-created" => t("page-product-created"),
        "product-updated" => t("page-product-saved"),
        "product-deleted" => t("page-product-deleted"),
        "branch-created" => t("page-branch-created"),
        "branch-deleted" => t("page-branch-deleted"),
        "blacklist-added" => t("page-added-blacklist"),
        "blacklist-removed" => t("page-removed-from-blacklist"),
        "settings-saved" => t("page-settings-saved"),
        "portal-session-ended" => t("page-customers-portal-session-was-ended"),
        "signing-key-rotated" => t("page-signing-key-rotated-new-key"),
        "signing-key-retired" => t("page-signing-key-retired"),
        "signing-key-created" => t("page-next-signing-key-created-publish"),
        "entitlement-created" => t("page-entitlement-created"),
        "policy-created" => t("page-policy-created-choose-licenses-form"),
        "policy-updated" => t("page-policy-saved-every-license-follows"),
        "policy-deleted" => t("page-policy-deleted-licenses-keep-terms"),
        "integration-saved" => t("page-integration-saved-give-provider-address"),
        "integration-deleted" => t("page-integration-removed-events-answered-not"),
        "rule-created" => t("page-rule-added-next-purchase-matches"),
        "rule-deleted" => t("page-rule-deleted"),
        "event-replayed-applied" => t("page-event-replayed-applied"),
        "event-replayed-duplicate" => t("page-event-replayed-had-been-applied"),
        "event-replayed-skipped" => t("page-event-replayed-skipped-again-see"),
        "event-replayed-failed" => t("page-event-replayed-failed-again-see"),
        "entitlement-deleted" => t("page-entitlement-deleted-taken-from-every"),
        "licenses-suspended" => t("page-licenses-chosen-suspended"),
        "licenses-unsuspended" => t("page-licenses-chosen-no-longer-suspended"),
        "licenses-deleted" => t("page-licenses-chosen-deleted"),
        "password-changed" => t("page-password-changed-your-other-sessions"),
        "email-changed" => t("page-e-mail-address-changed-sign"),
        "email-confirm-sent" => t("page-link-was-sent-new-address"),
        "time-zone-set" => t("page-time-zone-saved-times-shown"),
        "webhook-test" => t("page-test-event-queued-appears-below"),
        "webhook-redelivered" => t("page-delivery-queued-again"),
        "webhook-deleted" => t("page-webhook-endpoint-deleted"),
        "webhook-updated" => t("page-webhook-endpoint-saved"),
        "webhook-enabled" => t("page-webhook-endpoint-enabled-events-go"),
        "webhook-disabled" => t("page-webhook-endpoint-disabled-no-events"),
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
        p { a href="/dashboard/" { (t("page-back-dashboard")) } }
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
        nav.pager aria-label=(t("page-pages")) {
            @if total > 0 && first <= total {
                span { (tm("page-first-last-total", &[("first", html! { (first) }), ("last", html! { (last) }), ("total", html! { (total) })])) }
            }
            @if page > 1 {
                a href=(link(page - 1)) rel="prev" { (t("page-previous")) }
            }
            @if pages > 1 {
                @for (i, n) in numbers.iter().enumerate() {
                    @if i > 0 && numbers[i - 1] + 1 < *n { span.gap aria-hidden="true" { "…" } }
                    @if *n == page {
                        span.current aria-current="page" { (n) }
                    } @else {
                        a href=(link(*n)) aria-label=(tw("page-page-label", &[("page", Arg::Number(i64::from(*n)))])) { (n) }
                    }
                }
            }
            @if page < pages {
                a href=(link(page + 1)) rel="next" { (t("page-next")) }
            }
        }
    }
}

/// The id in a dashboard path, or a 404 that names what was looked for.
pub(crate) fn id_of<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, Failure> {
    text.parse()
        .map_err(|_| Failure::new(404, tw("page-no-such", &[("what", Arg::Text(what))])))
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
            p { (tm("page-what-cannot-undone", &[("what", html! { (c.what) })])) }
            div.actions {
                form method="post" action=(c.action) {
                    (csrf(staff))
                    button.danger type="submit" { (c.button) }
                }
                a.button.secondary href=(c.back) { (t("page-keep")) }
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
        &Failure::new(404, t("page-there-no-such-page-dashboard")),
    )
}

/// 405 for a page asked for with a method it does not answer.
pub(crate) fn method_not_allowed() -> Response {
    html_response(
        405,
        bare(
            t("page-not-allowed"),
            html! { h1 { (t("page-not-allowed")) } p { (t("page-page-cannot-asked-way")) } },
        ),
    )
}

/// 403 for a form without the session's token.
pub(crate) fn csrf_refused(ctx: &Ctx, staff: &Staff) -> Response {
    failure(
        ctx,
        Some(staff),
        &Failure::new(403, t("page-form-did-not-come-from")),
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
