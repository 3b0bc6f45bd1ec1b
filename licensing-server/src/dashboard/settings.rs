//! The settings page: what a client request must name, when seats free up, and the team's
//! signing keys (rotate, retire).

use licensing_core::api::requests::{Patch, SettingsBody};
use licensing_core::model::{Kid, PortalSignIn, PublicKeys, SigningKey, SigningKeyState};
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
use crate::dashboard::words::{t, tm};
use crate::http::Response;
use licensing_core::model::PortalSession;

/// `GET /dashboard/settings`, or the form again with what to fix.
pub(crate) async fn settings(ctx: &Ctx, staff: &Staff, failure: Option<&Failure>) -> Response {
    let outcome = async {
        let s = api::perform(ctx, staff, GetSettings).await?;
        let public = api::perform(ctx, staff, GetPublicKeys).await?;
        let sessions = if staff.may_perform::<ListPortalSessions>() {
            api::perform(ctx, staff, ListPortalSessions).await?
        } else {
            Vec::new()
        };
        let write = staff.may_perform::<crate::app::team::UpdateSettings>();
        let minutes = |m: Option<u32>| m.map(|m| m.to_string()).unwrap_or_default();
        let content = html! {
            h1 { (t("settings-settings")) }
            (page::problems(failure))
            form method="post" action="/dashboard/settings" {
                (page::csrf(staff))
                fieldset disabled[!write] {
                    legend { (t("settings-what-client-request-must-name")) }
                    label.choice { input type="checkbox" name="requireHardwareIdentifier" value="true" checked[s.require_hardware_identifier]; (t("settings-hardware-identifier-verify-license-with")) }
                    label.choice { input type="checkbox" name="strictCustomers" value="true" checked[s.strict_customers]; (t("settings-one-licenses-customers")) }
                    label.choice { input type="checkbox" name="strictProducts" value="true" checked[s.strict_products]; (t("settings-one-licenses-products")) }
                    label.choice { input type="checkbox" name="strictReleases" value="true" checked[s.strict_releases]; (t("settings-release-version-product")) }
                }
                fieldset disabled[!write] {
                    legend { (t("settings-when-device-address-session-stops")) }
                    label for="hwidTimeout" { (t("settings-device-seat-freed-after-minutes")) span.hint { (t("settings-empty-never-device-counts-against")) } (field_error(failure, "hwidTimeout")) }
                    input #hwidTimeout type="number" min="1" name="hwidTimeout" value=(minutes(s.hwid_timeout));
                    label for="ipTimeout" { (t("settings-address-freed-after-minutes")) span.hint { (t("settings-empty-never")) } (field_error(failure, "ipTimeout")) }
                    input #ipTimeout type="number" min="1" name="ipTimeout" value=(minutes(s.ip_timeout));
                    label for="sessionTtl" { (t("settings-floating-session-freed-after-seconds")) span.hint { (t("settings-copy-stops-heartbeating-frees-seat")) } (field_error(failure, "sessionTtl")) }
                    input #sessionTtl type="number" min="10" max="86400" name="sessionTtl" value=(s.session_ttl) required;
                    label for="maxLiveSessionsPerLicense" { (t("settings-live-sessions-one-license-may")) span.hint { (t("settings-with-without-concurrent-session-limit")) } (field_error(failure, "maxLiveSessionsPerLicense")) }
                    input #maxLiveSessionsPerLicense type="number" min="1" max="100000" name="maxLiveSessionsPerLicense" value=(s.max_live_sessions_per_license) required;
                }
                fieldset disabled[!write] {
                    legend { (t("settings-offline-use")) }
                    label.choice { input type="checkbox" name="checkoutEnabled" value="true" checked[s.checkout_enabled]; (t("settings-applications-may-check-out-license")) }
                    label for="checkoutMaxTtl" { (t("settings-longest-checkout-seconds")) span.hint { (t("settings-checked-out-file-valid-most")) } (field_error(failure, "checkoutMaxTtl")) }
                    input #checkoutMaxTtl type="number" min="3600" max="315360000" name="checkoutMaxTtl" value=(s.checkout_max_ttl) required;
                }
                fieldset disabled[!write] {
                    legend { (t("settings-customer-portal")) }
                    label.choice { input type="checkbox" name="portalEnabled" value="true" checked[s.portal_enabled]; (t("settings-customers-may-sign-portal-see")) }
                    label.choice { input type="checkbox" name="portalSignInEmail" value="true" checked[s.portal_sign_in.contains(&PortalSignIn::Email)]; (t("settings-sign-with-link-code-sent")) }
                    label.choice { input type="checkbox" name="portalSignInLicenseKey" value="true" checked[s.portal_sign_in.contains(&PortalSignIn::LicenseKey)]; (t("settings-sign-with-license-key-license")) }
                    (field_error(failure, "portalSignIn"))
                    p.hint { (tm("settings-portals-address-links-from-your", &[("code", html! { code #portal-address { (super::users::base(ctx)) "/portal/" (staff.session.team_id) } })])) }
                }
                @if write { p { button type="submit" { (t("settings-save-settings")) } } }
                @else { p.hint { (t("settings-your-role-may-read-settings")) } }
            }
            (portal_sessions(staff, &sessions))
            (developer_information(staff, &public))
            (signing_keys(staff, &public.signing_keys, write))
        };
        Ok(page::shown(Nav::Settings, t("settings-settings"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// A required whole number from the form (left as it is when the form lacks it), refused with
/// message `refusal` when it is not one.
fn whole(
    form: &Form,
    name: &str,
    refusal: &str,
    problems: &mut Vec<licensing_core::FieldError>,
) -> Patch<i64> {
    match form.text(name) {
        None => Patch::Missing,
        Some(text) => text.parse::<i64>().map_or_else(
            |_| {
                problems.push(licensing_core::FieldError::new(name, t(refusal)));
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
        Some(text) => text.parse::<i64>().map_or_else(
            |_| {
                problems.push(licensing_core::FieldError::new(
                    name,
                    t("settings-must-whole-number-minutes"),
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
        session_ttl: whole(form, "sessionTtl", "settings-whole-seconds", &mut problems),
        max_live_sessions_per_license: whole(
            form,
            "maxLiveSessionsPerLicense",
            "settings-whole-sessions",
            &mut problems,
        ),
        checkout_enabled: checked("checkoutEnabled"),
        checkout_max_ttl: whole(
            form,
            "checkoutMaxTtl",
            "settings-whole-seconds",
            &mut problems,
        ),
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
        h2 #portal-sessions { (t("settings-customers-signed-portal")) }
        @if sessions.is_empty() {
            p.hint { (t("settings-nobody-signed-portal-now")) }
        } @else {
            (page::table(&[t("settings-who"), t("settings-signed-with"), t("settings-since"), t("settings-last-seen"), ""], None, html! {
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
                                    button.secondary type="submit" { (t("settings-end-session")) }
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

/// What a developer embeds in an application: the team's id, its RSA public key (PEM, and the
/// base64 of the PEM as clients take it) and the active signing key (Ed25519, and as Tauri's
/// updater takes it), each with a copy button.
fn developer_information(staff: &Staff, keys: &PublicKeys) -> maud::Markup {
    let team = staff.session.team_id.to_string();
    let active = keys.signing_keys.iter().find(|k| k.active);
    html! {
        h2 #developer { (t("settings-developer-information")) }
        p.hint { (t("settings-developer-information-hint")) }
        dl.facts.developer {
            dt { (t("settings-team-id")) }
            dd { (page::shown_once("team-id", Some("key"), &team)) }
            dt { (t("settings-rsa-public-key")) span.hint { (t("settings-rsa-public-key-hint")) } }
            dd {
                pre.key #rsa-public-key { (keys.public_key) }
                button.secondary.small.copy type="button" data-copy=(keys.public_key) data-copied=(t("page-copied")) data-copy-failed=(t("page-copy-failed")) hidden { (t("page-copy")) }
            }
            dt { (t("settings-rsa-public-key-base64")) }
            dd { (page::shown_once("rsa-public-key-base64", Some("key wrap"), &keys.public_key_base64)) }
            dt { (t("settings-active-signing-key")) span.hint { (t("settings-active-signing-key-hint")) } }
            dd {
                (page::shown_once("signing-key", Some("key"), &keys.signing_key))
                @if let Some(active) = active {
                    p.hint { (tm("settings-active-signing-key-id", &[("kid", html! { code { (active.kid) } })])) }
                }
            }
            @if let Some(updater) = &keys.updater_keys {
                dt { (t("settings-tauri-public-key")) span.hint { (t("settings-tauri-public-key-hint")) } }
                dd { (page::shown_once("tauri-public-key", Some("key wrap"), &updater.minisign)) }
            }
        }
    }
}

/// The signing keys: which one signs, which is next, since when, and the way to change keys
/// in the order that keeps applications working (publish the next key, then activate it).
fn signing_keys(staff: &Staff, keys: &[SigningKey], write: bool) -> maud::Markup {
    let next = keys.iter().find(|k| k.state == SigningKeyState::Next);
    html! {
        h2 #signing-keys { (t("settings-signing-keys")) }
        p.hint { (t("settings-answers-applications-license-files-signed")) }
        p.hint { (tm("settings-change-keys-without-breaking-applications", &[("strong", html! { strong { "1." } }), ("strong2", html! { strong { "2." } }), ("strong3", html! { strong { "3." } })])) }
        (page::table(&[t("settings-key-id"), t("settings-key-2"), t("settings-created"), t("settings-status")], write.then_some(t("settings-action")), html! {
            @for k in keys {
                tr {
                    td { code { (k.kid) } }
                    td { code.key { (k.key) } }
                    td { (page::when(staff, k.created_at)) }
                    td {
                        @match k.state {
                            SigningKeyState::Active => span.badge.ok { (t("settings-active")) },
                            SigningKeyState::Next => span.badge { (t("settings-next-signs-nothing-yet")) },
                            SigningKeyState::Former => (t("settings-former-trusted-until-retired")),
                        }
                    }
                    @if write {
                        td {
                            @if k.state == SigningKeyState::Next {
                                a.button.small href={ "/dashboard/settings/signing-keys/" (k.kid) "/activate" } { (t("settings-activate")) }
                                " "
                            }
                            @if !k.active {
                                a.button.secondary.small href={ "/dashboard/settings/signing-keys/" (k.kid) "/retire" } { (t("settings-retire")) }
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
                        button.secondary type="submit" { (t("settings-create-next-signing-key")) }
                        " "
                        a.button.secondary href="/dashboard/settings/signing-keys/rotate" { (t("settings-rotate-once")) }
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
            .ok_or_else(|| Failure::new(404, t("settings-there-no-such-next-signing")))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Settings,
                title: t("settings-activate-next-signing-key"),
                what: html! { (tm("settings-key-created-signs-every-answer", &[("code", html! { code { (key.kid) } }), ("when", html! { (page::when(staff, key.created_at)) })])) },
                action: format!("/dashboard/settings/signing-keys/{}/activate", key.kid),
                button: t("settings-activate-key"),
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
            title: t("settings-rotate-signing-key"),
            what: html! { (t("settings-new-key-signs-every-answer")) },
            action: "/dashboard/settings/signing-keys/rotate".to_owned(),
            button: t("settings-rotate-key"),
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
    page::id_of(text, t("settings-signing-key"))
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
            .ok_or_else(|| Failure::new(404, t("settings-there-no-such-former-next")))?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Settings,
                title: t("settings-retire-signing-key"),
                what: html! { (tm("settings-key-created-leaves-list-keys", &[("code", html! { code { (key.kid) } }), ("when", html! { (page::when(staff, key.created_at)) })])) },
                action: format!("/dashboard/settings/signing-keys/{}/retire", key.kid),
                button: t("settings-retire-key"),
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
