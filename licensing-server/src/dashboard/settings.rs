//! The settings page: what a client request must name, when seats free up, and the team's
//! signing keys (rotate, retire).

use licensing_core::api::requests::{Patch, SettingsBody};
use licensing_core::model::{Kid, PortalSignIn, SigningKey, SigningKeyState};
use maud::html;

use super::api::{self, Failure};
use super::page::field_error;
use super::page::{self, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::portal::{EndPortalSession, ListPortalSessions, grant_words};
use crate::app::team::{
    ActivateSigningKey, CreateSigningKey, GetPublicKeys, GetSettings, RetireSigningKey,
    RotateSigningKey, UpdateSettings,
};
use crate::http::Response;
use licensing_core::model::PortalSession;

/// `GET /dashboard/settings`, or the form again with what to fix.
pub(crate) async fn settings(ctx: &Ctx, staff: &Staff, failure: Option<&Failure>) -> Response {
    let outcome = async {
        let s = api::perform(ctx, staff, GetSettings).await?;
        let keys = api::perform(ctx, staff, GetPublicKeys).await?.signing_keys;
        let sessions = if staff.may_perform::<ListPortalSessions>() {
            api::perform(ctx, staff, ListPortalSessions).await?
        } else {
            Vec::new()
        };
        let write = staff.may_perform::<crate::app::team::UpdateSettings>();
        let minutes = |m: Option<u32>| m.map(|m| m.to_string()).unwrap_or_default();
        let content = html! {
            h1 { "Settings" }
            (page::problems(failure))
            form method="post" action="/dashboard/settings" {
                (page::csrf(staff))
                fieldset disabled[!write] {
                    legend { "What a client request must name" }
                    label.choice { input type="checkbox" name="requireHardwareIdentifier" value="true" checked[s.require_hardware_identifier]; "A hardware identifier on a verify of a license with a device limit (without one, such a verify is refused; heartbeats always need one)" }
                    label.choice { input type="checkbox" name="strictCustomers" value="true" checked[s.strict_customers]; "One of the license's customers" }
                    label.choice { input type="checkbox" name="strictProducts" value="true" checked[s.strict_products]; "One of the license's products" }
                    label.choice { input type="checkbox" name="strictReleases" value="true" checked[s.strict_releases]; "A release version of the product" }
                }
                fieldset disabled[!write] {
                    legend { "When a device, address or session stops counting" }
                    label for="hwidTimeout" { "Device seat freed after (minutes)" span.hint { "Empty: never; a device counts against the limit until forgotten." } (field_error(failure, "hwidTimeout")) }
                    input #hwidTimeout type="number" min="1" name="hwidTimeout" value=(minutes(s.hwid_timeout));
                    label for="ipTimeout" { "Address freed after (minutes)" span.hint { "Empty: never." } (field_error(failure, "ipTimeout")) }
                    input #ipTimeout type="number" min="1" name="ipTimeout" value=(minutes(s.ip_timeout));
                    label for="sessionTtl" { "Floating session freed after (seconds)" span.hint { "A copy that stops heartbeating frees its seat after this long, unless its license sets its own (10 to 86400)." } (field_error(failure, "sessionTtl")) }
                    input #sessionTtl type="number" min="10" max="86400" name="sessionTtl" value=(s.session_ttl) required;
                    label for="maxLiveSessionsPerLicense" { "Live sessions one license may hold" span.hint { "With or without a concurrent-session limit: a start past it is refused (1 to 100000)." } (field_error(failure, "maxLiveSessionsPerLicense")) }
                    input #maxLiveSessionsPerLicense type="number" min="1" max="100000" name="maxLiveSessionsPerLicense" value=(s.max_live_sessions_per_license) required;
                }
                fieldset disabled[!write] {
                    legend { "Offline use" }
                    label.choice { input type="checkbox" name="checkoutEnabled" value="true" checked[s.checkout_enabled]; "Applications may check out a license file for offline use" }
                    label for="checkoutMaxTtl" { "Longest checkout (seconds)" span.hint { "A checked-out file is valid at most this long, and never past its license's end; a license with a concurrent-session limit lends a seat until the file expires (3600 to 315360000; 2592000 is 30 days)." } (field_error(failure, "checkoutMaxTtl")) }
                    input #checkoutMaxTtl type="number" min="3600" max="315360000" name="checkoutMaxTtl" value=(s.checkout_max_ttl) required;
                }
                fieldset disabled[!write] {
                    legend { "Customer portal" }
                    label.choice { input type="checkbox" name="portalEnabled" value="true" checked[s.portal_enabled]; "Customers may sign in to the portal to see their licenses, free their own devices within their policy's budget, and download" }
                    label.choice { input type="checkbox" name="portalSignInEmail" value="true" checked[s.portal_sign_in.contains(&PortalSignIn::Email)]; "Sign-in with a link and code sent to the customer's e-mail address" }
                    label.choice { input type="checkbox" name="portalSignInLicenseKey" value="true" checked[s.portal_sign_in.contains(&PortalSignIn::LicenseKey)]; "Sign-in with a license key (that license only)" }
                    (field_error(failure, "portalSignIn"))
                    p.hint { "The portal's address: " code #portal-address { (super::users::base(ctx)) "/portal/" (staff.session.team_id) } ". Links from your own site (POST /customers/{customerId}/portal-sessions) work whenever the portal is on." }
                }
                @if write { p { button type="submit" { "Save settings" } } }
                @else { p.hint { "Your role may read the settings, not change them." } }
            }
            (portal_sessions(staff, &sessions))
            (signing_keys(staff, &keys, write))
        };
        Ok(page::shown(Nav::Settings, "Settings", content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// A required whole number of `unit` from the form (left as it is when the form lacks it).
fn whole(
    form: &Form,
    name: &str,
    unit: &str,
    problems: &mut Vec<licensing_core::FieldError>,
) -> Patch<i64> {
    match form.text(name) {
        None => Patch::Missing,
        Some(t) => t.parse::<i64>().map_or_else(
            |_| {
                problems.push(licensing_core::FieldError::new(
                    name,
                    format!("must be a whole number of {unit}"),
                ));
                Patch::Missing
            },
            Patch::Value,
        ),
    }
}

/// `POST /dashboard/settings`.
pub(crate) async fn save_settings(ctx: &Ctx, staff: &Staff, form: &Form) -> Response {
    let mut problems = Vec::new();
    let mut minutes = |name: &str| match form.text(name) {
        None => Patch::Null,
        Some(t) => t.parse::<i64>().map_or_else(
            |_| {
                problems.push(licensing_core::FieldError::new(
                    name,
                    "must be a whole number of minutes",
                ));
                Patch::Null
            },
            Patch::Value,
        ),
    };
    let (hwid_timeout, ip_timeout) = (minutes("hwidTimeout"), minutes("ipTimeout"));
    let checked = |name: &str| Patch::Value(form.get(name).is_some());
    let body = SettingsBody {
        require_hardware_identifier: checked("requireHardwareIdentifier"),
        strict_customers: checked("strictCustomers"),
        strict_products: checked("strictProducts"),
        strict_releases: checked("strictReleases"),
        hwid_timeout,
        ip_timeout,
        session_ttl: whole(form, "sessionTtl", "seconds", &mut problems),
        max_live_sessions_per_license: whole(
            form,
            "maxLiveSessionsPerLicense",
            "sessions",
            &mut problems,
        ),
        checkout_enabled: checked("checkoutEnabled"),
        checkout_max_ttl: whole(form, "checkoutMaxTtl", "seconds", &mut problems),
        portal_enabled: checked("portalEnabled"),
        portal_sign_in: Patch::Value(
            [
                ("portalSignInEmail", PortalSignIn::Email),
                ("portalSignInLicenseKey", PortalSignIn::LicenseKey),
            ]
            .into_iter()
            .filter(|(name, _)| form.get(name).is_some())
            .map(|(_, way)| way.as_str().to_owned())
            .collect(),
        ),
    };
    if !problems.is_empty() {
        let f = Failure {
            status: 400,
            details: String::new(),
            fields: problems,
        };
        return settings(ctx, staff, Some(&f)).await;
    }
    match api::perform(ctx, staff, UpdateSettings(body)).await {
        Ok(_) => page::redirect("/dashboard/settings?notice=settings-saved"),
        Err(f) if f.status == 400 => settings(ctx, staff, Some(&f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// The customers signed in to the portal now, each with the button that ends their session.
fn portal_sessions(staff: &Staff, sessions: &[PortalSession]) -> maud::Markup {
    let end = staff.may_perform::<EndPortalSession>();
    html! {
        h2 #portal-sessions { "Customers signed in to the portal" }
        @if sessions.is_empty() {
            p.hint { "Nobody is signed in to the portal now." }
        } @else {
            (page::table(&["Who", "Signed in with", "Since", "Last seen", ""], None, html! {
                @for s in sessions {
                    tr {
                        td { (grant_words(&s.grant)) }
                        td { (s.method.as_str()) }
                        td { (page::when(staff, s.created_at)) }
                        td { (page::when(staff, s.last_seen_at)) }
                        td {
                            @if end {
                                form method="post" action=(format!("/dashboard/portal-sessions/{}/end", s.id_sha256)) {
                                    (page::csrf(staff))
                                    button.secondary type="submit" { "End session" }
                                }
                            }
                        }
                    }
                }
            }))
        }
    }
}

/// `POST /dashboard/portal-sessions/{id}/end`.
pub(crate) async fn end_portal_session(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    match api::perform(ctx, staff, EndPortalSession(id.to_owned())).await {
        Ok(()) => page::redirect("/dashboard/settings?notice=portal-session-ended#portal-sessions"),
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// The signing keys: which one signs, which is next, since when, and the way to change keys
/// in the order that keeps applications working (publish the next key, then activate it).
fn signing_keys(staff: &Staff, keys: &[SigningKey], write: bool) -> maud::Markup {
    let next = keys.iter().find(|k| k.state == SigningKeyState::Next);
    html! {
        h2 #signing-keys { "Signing keys" }
        p.hint { "Answers to applications and license files are signed with the active key. Applications that trust a key by its id keep accepting files it signed until it is retired." }
        p.hint { "To change keys without breaking applications that embed their keys: " strong { "1." } " create the next key; " strong { "2." } " publish it in an application release (its id and key are listed here and in the API's public keys) and wait until your users have it; " strong { "3." } " activate it. The key it replaces stays trusted until you retire it." }
        (page::table(&["Key id", "Key", "Created", "Status"], write.then_some("Action"), html! {
            @for k in keys {
                tr {
                    td { code { (k.kid) } }
                    td { code.key { (k.key) } }
                    td { (page::when(staff, k.created_at)) }
                    td {
                        @match k.state {
                            SigningKeyState::Active => span.badge.ok { "Active" },
                            SigningKeyState::Next => span.badge { "Next: signs nothing yet" },
                            SigningKeyState::Former => "Former: trusted until retired",
                        }
                    }
                    @if write {
                        td {
                            @if k.state == SigningKeyState::Next {
                                a.button.small href={ "/dashboard/settings/signing-keys/" (k.kid) "/activate" } { "Activate…" }
                                " "
                            }
                            @if !k.active {
                                a.button.secondary.small href={ "/dashboard/settings/signing-keys/" (k.kid) "/retire" } { "Retire…" }
                            }
                        }
                    }
                }
            }
        }))
        @if write {
            @if next.is_none() {
                form method="post" action="/dashboard/settings/signing-keys" {
                    (page::csrf(staff))
                    p {
                        button.secondary type="submit" { "Create the next signing key" }
                        " "
                        a.button.secondary href="/dashboard/settings/signing-keys/rotate" { "Rotate at once…" }
                    }
                }
            }
        }
    }
}

/// `POST /dashboard/settings/signing-keys`: a next key, signing nothing yet.
pub(crate) async fn create_next(ctx: &Ctx, staff: &Staff) -> Response {
    page::done(
        ctx,
        staff,
        Ok(CreateSigningKey),
        "/dashboard/settings?notice=signing-key-created#signing-keys",
    )
    .await
}

/// `GET /dashboard/settings/signing-keys/{kid}/activate`: the confirmation.
pub(crate) async fn confirm_activate(ctx: &Ctx, staff: &Staff, text: &str) -> Response {
    let outcome = async {
        let key = signing_key(ctx, staff, text, |k| k.state == SigningKeyState::Next)
            .await?
            .ok_or_else(|| Failure::new(404, "There is no such next signing key."))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Settings,
                title: "Activate the next signing key?",
                what: html! { "Key " code { (key.kid) } " (created " (page::when(staff, key.created_at)) ") signs every answer and license file from now on. Applications that do not trust it yet refuse the new signatures: activate it once your application releases carry it. The current key stays trusted until you retire it." },
                action: format!("/dashboard/settings/signing-keys/{}/activate", key.kid),
                button: "Activate key",
                back: "/dashboard/settings#signing-keys".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/settings/signing-keys/{kid}/activate`.
pub(crate) async fn activate(ctx: &Ctx, staff: &Staff, text: &str) -> Response {
    page::done(
        ctx,
        staff,
        kid(text).map(ActivateSigningKey),
        "/dashboard/settings?notice=signing-key-rotated#signing-keys",
    )
    .await
}

/// `GET /dashboard/settings/signing-keys/rotate`: the confirmation.
pub(crate) async fn confirm_rotate(ctx: &Ctx, staff: &Staff) -> Response {
    let shown = page::confirm(
        staff,
        Confirm {
            nav: Nav::Settings,
            title: "Rotate the signing key?",
            what: html! { "A new key signs every answer and license file from now on, at once. Applications that know only the current key refuse the new signatures until they trust the new key: to avoid that, create the next key instead, publish it in a release, then activate it. The current key stays trusted until you retire it." },
            action: "/dashboard/settings/signing-keys/rotate".to_owned(),
            button: "Rotate key",
            back: "/dashboard/settings#signing-keys".to_owned(),
        },
    );
    page::answer(ctx, staff, None, Ok(shown))
}

/// `POST /dashboard/settings/signing-keys/rotate`.
pub(crate) async fn rotate(ctx: &Ctx, staff: &Staff) -> Response {
    page::done(
        ctx,
        staff,
        Ok(RotateSigningKey),
        "/dashboard/settings?notice=signing-key-rotated#signing-keys",
    )
    .await
}

fn kid(text: &str) -> Result<Kid, Failure> {
    page::id_of(text, "signing key")
}

/// The team's signing key named by the path's `text`, when it is one `wanted` accepts.
async fn signing_key(
    ctx: &Ctx,
    staff: &Staff,
    text: &str,
    wanted: impl Fn(&SigningKey) -> bool,
) -> Result<Option<SigningKey>, Failure> {
    let kid = kid(text)?;
    let keys = api::perform(ctx, staff, GetPublicKeys).await?.signing_keys;
    Ok(keys
        .into_iter()
        .find(|k| k.kid == kid.as_str() && wanted(k)))
}

/// `GET /dashboard/settings/signing-keys/{kid}/retire`: the confirmation.
pub(crate) async fn confirm_retire(ctx: &Ctx, staff: &Staff, text: &str) -> Response {
    let outcome = async {
        let key = signing_key(ctx, staff, text, |k| !k.active)
            .await?
            .ok_or_else(|| Failure::new(404, "There is no such former or next signing key."))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Settings,
                title: "Retire this signing key?",
                what: html! { "Key " code { (key.kid) } " (created " (page::when(staff, key.created_at)) ") leaves the list of keys applications trust: license files it signed stop verifying in applications that take their keys from this server." },
                action: format!("/dashboard/settings/signing-keys/{}/retire", key.kid),
                button: "Retire key",
                back: "/dashboard/settings#signing-keys".to_owned(),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/settings/signing-keys/{kid}/retire`.
pub(crate) async fn retire(ctx: &Ctx, staff: &Staff, text: &str) -> Response {
    page::done(
        ctx,
        staff,
        kid(text).map(RetireSigningKey),
        "/dashboard/settings?notice=signing-key-retired#signing-keys",
    )
    .await
}
