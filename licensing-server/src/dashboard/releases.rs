//! Releases: the list, uploading one (its file streamed into the file store as it arrives, with
//! a progress bar when scripts run), a release's page with its checksum, its status, "latest"
//! and the licenses allowed to download it, and deleting one.
//!
//! A browser's upload form sends its fields and then the file, as `multipart/form-data`. The
//! dashboard reads the fields (the CSRF token among them), then hands the file's bytes to the
//! release operation as they arrive, so that a large file is never held in memory and every
//! rule of the API applies.

use futures_util::StreamExt as _;
use licensing_core::api::requests::{Patch, ReleaseData, ReleaseInput, ReleaseMode};
use licensing_core::model::{
    Arch, Artifact, Platform, ReleaseStatus, Resource, RolloutPercent, Scope,
};
use licensing_core::{ApiError, LicenseKey, ReleaseId};
use maud::html;
use warp::http::header;

use super::api::{self, Failure};
use super::page::{self, After, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::app::artifacts::{
    ArtifactInput, DeleteArtifact, IncomingArtifact, ReceivedArtifact, UploadArtifact,
};
use crate::app::licenses::GetLicenseByKey;
use crate::app::releases::{
    CreateRelease, DRAIN_BUDGET, DeleteRelease, GetRelease, IncomingFile, ListReleases, Received,
    UpdateRelease, upload_allowed,
};
use crate::dashboard::words::{t, tm, tm_counted, tw};
use crate::http::{Body, Response};
use crate::i18n::Arg;

/// A release's status in words.
fn status_words(status: ReleaseStatus) -> &'static str {
    match status {
        ReleaseStatus::Published => t("releases-published"),
        ReleaseStatus::Draft => t("releases-draft-not-offered"),
        ReleaseStatus::Deprecated => t("releases-deprecated-offered-replaced"),
        ReleaseStatus::Archived => t("releases-archived-withdrawn"),
    }
}

/// An artifact's signatures in words.
fn signature_words(a: &Artifact) -> String {
    let mut kinds = Vec::new();
    if a.signature.is_some() {
        kinds.push(t("releases-tauri-minisign"));
    }
    if a.ed_signature.is_some() {
        kinds.push(t("releases-sparkle-ed25519"));
    }
    match (kinds.is_empty(), a.server_signed) {
        (true, _) => t("releases-unsigned").to_owned(),
        (false, true) => tw(
            "releases-signed-by-server",
            &[("kinds", Arg::Text(&kinds.join(t("releases-and"))))],
        ),
        (false, false) => tw(
            "releases-signed-by-vendor",
            &[("kinds", Arg::Text(&kinds.join(t("releases-and"))))],
        ),
    }
}

/// Largest text field of an upload form.
const MAX_FIELD: usize = 64 * 1024;

fn may_write(staff: &Staff) -> bool {
    staff.may_perform::<CreateRelease<Received>>()
}

fn size_text(bytes: u64) -> String {
    match bytes {
        0..1024 => page::counted(bytes, "count-bytes"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

/// `GET /dashboard/releases`, or the upload form again with what to fix.
pub(crate) async fn list(ctx: &Ctx, staff: &Staff, after: After<'_>) -> Response {
    let (form, failure) = (after.form(), after.failure());
    let outcome = async {
        let product = ctx.param("product").unwrap_or_default();
        let mut query = licensing_core::api::requests::ReleaseListQuery::default();
        query.paging.page_size = 100;
        if !product.is_empty() {
            query.filter.product_id = Some(
                product
                    .parse()
                    .map_err(|_| ApiError::bad_field("product", t("releases-not-product-id")))?,
            );
        }
        let releases = api::perform(ctx, staff, ListReleases(query)).await?;
        let products = api::all_products(ctx, staff).await?;
        let chosen_product = form.get("productId").unwrap_or(&product);
        let status = form.get("status").unwrap_or("PUBLISHED");
        let content = html! {
            h1 { (t("releases-releases")) }
            form.filters method="get" action="/dashboard/releases" {
                (page::filter(("product", t("releases-product"), t("releases-any-product")), products.items.iter().map(|p| (p.id, &p.name)), &product))
                div { button type="submit" { (t("releases-show")) } }
            }
            (page::table(&[t("releases-version"), t("releases-product"), t("releases-status"), t("releases-file"), t("releases-created")], None, html! {
                @if releases.items.is_empty() {
                    tr { td.empty colspan="5" { (t("releases-no-releases-yet")) } }
                }
                @for r in &releases.items {
                    tr {
                        td {
                            a href={ "/dashboard/releases/" (r.release.id) } { (r.release.version.as_str()) }
                            @if r.release.latest { " " span.badge.ok { (t("releases-latest")) } }
                        }
                        td { (r.product.name) }
                        td { (status_words(r.release.status)) }
                        td { (r.release.file.as_ref().map_or_else(|| "—".to_owned(), |f| format!("{} ({})", f.name, size_text(f.size)))) }
                        td { (page::day(r.release.created_at)) }
                    }
                }
            }))
            @if may_write(staff) {
                h2 { (t("releases-upload-release")) }
                (page::problems(failure))
                @if products.items.is_empty() {
                    p { (t("releases-create-product-first-release-belongs")) }
                } @else {
                    form method="post" action="/dashboard/releases" enctype="multipart/form-data" data-upload {
                        (page::csrf(staff))
                        label for="productId" { (t("releases-product")) }
                        select #productId name="productId" required {
                            @for p in &products.items {
                                option value=(p.id) selected[chosen_product == p.id.to_string()] { (p.name) }
                            }
                        }
                        label for="version" { (t("releases-version")) span.hint { (t("releases-such-1-4-0")) } }
                        input #version type="text" name="version" required value=(form.get("version").unwrap_or(""));
                        label for="status" { (t("releases-status")) }
                        select #status name="status" {
                            @for s in ["PUBLISHED", "DRAFT", "DEPRECATED", "ARCHIVED"] {
                                option value=(s) selected[status == s] { (s) }
                            }
                        }
                        label.choice { input type="checkbox" name="setAsLatest" value="true" checked[form.get("setAsLatest").is_some()]; (t("releases-make-latest-release")) }
                        label for="file" { (t("releases-file")) span.hint { (t("releases-optional-encrypted-download-clients-receive")) } }
                        input #file type="file" name="file";
                        p { progress hidden max="100" value="0" data-progress {} }
                        p { button type="submit" { (t("releases-upload")) } }
                    }
                }
            }
        };
        Ok(page::shown(Nav::Releases, t("releases-releases"), content))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/releases`: the upload.
pub(crate) async fn upload(ctx: &Ctx, staff: &Staff, body: Body) -> Response {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (form, mut file) = match upload_form(body, content_type).await {
        Ok(read) => read,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    if !super::sign_in::csrf_ok(staff, &form) {
        return page::csrf_refused(ctx, staff);
    }
    let cx = api::cx(ctx, staff);
    let outcome = async {
        cx.caller.require(Scope::write(Resource::Releases))?;
        if let Err(refused) = upload_allowed(&cx).await {
            if let Some(field) = file.as_mut() {
                crate::http::drain(field, DRAIN_BUDGET).await;
            }
            return Err(refused);
        }
        // A file input left empty sends a part without a file name and without content.
        let file = match file.filter(|f| f.file_name().is_some_and(|n| !n.is_empty())) {
            Some(field) => {
                let name = field.file_name().map(str::to_owned);
                let chunks = field.map(|chunk| {
                    chunk.map_err(|e| {
                        crate::http::body_error(&e, t("releases-upload-could-not-read"))
                    })
                });
                Some(IncomingFile::receive(&cx, name.as_deref(), chunks).await?)
            }
            None => None,
        };
        let data = ReleaseData {
            version: Some(form.get("version").unwrap_or("").trim().to_owned()),
            product_id: Some(form.get("productId").unwrap_or("").to_owned()),
            status: Some(form.get("status").unwrap_or("PUBLISHED").to_owned()),
            set_as_latest: Patch::Value(form.get("setAsLatest").is_some()),
            ..ReleaseData::default()
        };
        let input = data.validate(ReleaseMode::Create)?;
        cx.perform(CreateRelease(Received { input, file })).await
    };
    match outcome.await.map_err(Failure::from) {
        Ok(created) => page::redirect(&format!(
            "/dashboard/releases/{}?notice=release-created",
            created.release.id
        )),
        Err(f) if f.status == 400 || f.status == 413 => {
            list(ctx, staff, After::Refused(&form, &f)).await
        }
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

fn release_id(text: &str) -> Result<ReleaseId, Failure> {
    page::id_of(text, "release")
}

/// `GET /dashboard/releases/{id}`.
pub(crate) async fn show(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    failure: Option<&Failure>,
) -> Response {
    let outcome = async {
        let id = release_id(id)?;
        let r = api::perform(ctx, staff, GetRelease(id)).await?;
        let write = may_write(staff);
        let allowed: Vec<&str> = r
            .allowed_licenses
            .iter()
            .map(|l| l.license_key.as_str())
            .collect();
        let content = html! {
            div.heading {
                h1 { (r.product.name) " " (r.release.version.as_str()) }
                @if r.release.latest { span.badge.ok { (t("releases-latest")) } }
            }
            (page::problems(failure))
            div.card {
                dl.facts {
                    dt { (t("releases-status")) } dd { (status_words(r.release.status)) }
                    dt { (t("releases-branch")) } dd { (r.branch.as_ref().map_or(t("releases-none"), |b| b.name.as_str())) }
                    dt { (t("releases-created")) } dd { (page::when(staff, r.release.created_at)) }
                    @if let Some(f) = &r.release.file {
                        dt { (t("releases-file")) } dd { (f.name) " (" (size_text(f.size)) ")" }
                        dt { (t("releases-checksum-md5")) } dd { code.checksum { (f.checksum) } }
                    } @else {
                        dt { (t("releases-file")) } dd { (t("releases-none")) }
                    }
                    dt { (t("releases-allowed-licenses")) } dd {
                        @if allowed.is_empty() { (t("releases-any-license-product")) } @else { (allowed.join(", ")) }
                    }
                    dt { (t("releases-rollout")) } dd {
                        @if r.release.rollout_percent.get() == 100 { (t("releases-every-license")) }
                        @else { (tm("releases-get-licenses-always-same-ones", &[("get", html! { (r.release.rollout_percent.get()) })])) }
                        @if r.release.critical { (t("releases-critical-offered-every-license-once")) }
                    }
                    @if let Some(notes) = &r.release.notes {
                        dt { (t("releases-notes")) } dd { pre.notes { (notes) } }
                    }
                }
            }
            h2 { (t("releases-update-artifacts")) }
            (page::table(&[t("releases-platform"), t("releases-file"), t("releases-size"), "SHA-256", t("releases-signatures")], write.then_some(t("releases-action")), html! {
                @if r.release.artifacts.is_empty() { tr { td.empty colspan="6" { (t("releases-no-artifacts-update-feeds-offer")) } } }
                @for a in &r.release.artifacts {
                    tr {
                        td { (a.platform) " " (a.arch) " (" (a.kind) ")" }
                        td { (a.filename) }
                        td { (size_text(a.size)) }
                        td { code.checksum title=(a.sha256) { (a.sha256.get(..16).unwrap_or(&a.sha256)) "…" } }
                        td { (signature_words(a)) }
                        @if write {
                            td {
                                form method="post" action={ "/dashboard/releases/" (id) "/artifacts/" (a.id) "/delete" } {
                                    (page::csrf(staff))
                                    button.secondary.small type="submit" aria-label=(tw("releases-delete-label", &[("file", Arg::Text(&a.filename))])) { (t("releases-delete")) }
                                }
                            }
                        }
                    }
                }
            }))
            @if write {
                h3 { (t("releases-upload-artifact")) }
                form method="post" action={ "/dashboard/releases/" (id) "/artifacts" } enctype="multipart/form-data" data-upload {
                    (page::csrf(staff))
                    label for="platform" { (t("releases-platform")) }
                    select #platform name="platform" {
                        @for p in Platform::ALL { option value=(p.as_str()) { (p.as_str()) } }
                    }
                    label for="arch" { (t("releases-architecture")) }
                    select #arch name="arch" {
                        @for a in Arch::ALL { option value=(a.as_str()) { (a.as_str()) } }
                    }
                    label for="signature" { (t("releases-tauri-signature")) span.hint { (t("releases-optional-content-sig-file-build")) } }
                    input #signature type="text" name="signature";
                    label for="edSignature" { (t("releases-sparkle-signature")) span.hint { (t("releases-optional-edsignature-sign-update-printed")) } }
                    input #edSignature type="text" name="edSignature";
                    label for="artifactFile" { (t("releases-file")) span.hint { (t("releases-kind-follows-name-dmg-zip")) } }
                    input #artifactFile type="file" name="file" required;
                    p { progress hidden max="100" value="0" data-progress {} }
                    p { button type="submit" { (t("releases-upload-artifact-2")) } }
                }
            }
            @if write {
                h2 { (t("releases-change")) }
                form method="post" action={ "/dashboard/releases/" (id) } {
                    (page::csrf(staff))
                    label for="status" { (t("releases-status")) }
                    select #status name="status" {
                        @for s in [ReleaseStatus::Published, ReleaseStatus::Draft, ReleaseStatus::Deprecated, ReleaseStatus::Archived] {
                            option value=(s.as_str()) selected[r.release.status == s] { (status_words(s)) }
                        }
                    }
                    label.choice { input type="checkbox" name="setAsLatest" value="true" checked[r.release.latest]; (t("releases-latest-release")) }
                    label for="licenseKeys" { (t("releases-allowed-licenses")) span.hint { (t("releases-license-keys-one-per-line")) } }
                    textarea #licenseKeys name="licenseKeys" rows="3" { (allowed.join("\n")) }
                    label for="rolloutPercent" { (t("releases-rollout")) span.hint { (t("releases-share-licenses-update-feeds-offer")) } }
                    input #rolloutPercent type="number" name="rolloutPercent" min="0" max="100" value=(r.release.rollout_percent.get());
                    label.choice { input type="checkbox" name="critical" value="true" checked[r.release.critical]; (t("releases-critical-offer-every-license-once")) }
                    label for="notes" { (t("releases-release-notes")) span.hint { (t("releases-markdown-update-feeds-show-them")) } }
                    textarea #notes name="notes" rows="4" { (r.release.notes.as_deref().unwrap_or("")) }
                    p { button type="submit" { (t("releases-save")) } }
                }
                div.actions {
                    a.button.danger href={ "/dashboard/releases/" (id) "/delete" } { (t("releases-delete-2")) }
                }
            }
        };
        Ok(page::shown(
            Nav::Releases,
            r.release.version.as_str(),
            content,
        ))
    };
    page::answer(ctx, staff, failure, outcome.await)
}

/// `POST /dashboard/releases/{id}`: status, latest, allowed licenses.
pub(crate) async fn update(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let outcome = async {
        let rid = release_id(id)?;
        let r = api::perform(ctx, staff, GetRelease(rid)).await?;
        let mut license_ids = Vec::new();
        let mut problems = Vec::new();
        for line in form.get("licenseKeys").unwrap_or("").lines() {
            let key = line.trim();
            if key.is_empty() {
                continue;
            }
            match LicenseKey::parse(key) {
                Ok(key) => {
                    let text = key.as_str().to_owned();
                    match api::perform(ctx, staff, GetLicenseByKey(key)).await {
                        Ok(detail) => license_ids.push(detail.license.id),
                        Err(f) if f.status == 404 => {
                            problems.push(licensing_core::FieldError::new(
                                "licenseKeys",
                                tw("releases-no-license-has-key", &[("key", Arg::Text(&text))]),
                            ));
                        }
                        Err(f) => return Err(f),
                    }
                }
                Err(e) => problems.push(licensing_core::FieldError::new(
                    "licenseKeys",
                    format!("“{key}” {e}"),
                )),
            }
        }
        let status = form.get("status").unwrap_or(r.release.status.as_str());
        let status = match ReleaseStatus::parse(status) {
            Ok(status) => Some(status),
            Err(e) => {
                problems.push(licensing_core::FieldError::new("status", e.to_string()));
                None
            }
        };
        let rollout = match form.get("rolloutPercent").map(str::trim) {
            None | Some("") => None,
            Some(text) => match text
                .parse::<u8>()
                .map_err(|e| e.to_string())
                .and_then(RolloutPercent::new)
            {
                Ok(percent) => Some(percent),
                Err(_) => {
                    problems.push(licensing_core::FieldError::new(
                        "rolloutPercent",
                        t("releases-must-whole-number-from-0"),
                    ));
                    None
                }
            },
        };
        let notes = form.get("notes").map(str::trim).unwrap_or("");
        if notes.chars().count() > licensing_core::api::requests::MAX_NOTES {
            problems.push(licensing_core::FieldError::new(
                "notes",
                tw(
                    "releases-notes-too-long",
                    &[(
                        "most",
                        Arg::Number(licensing_core::api::requests::MAX_NOTES as i64),
                    )],
                ),
            ));
        }
        let feed = licensing_core::api::requests::FeedChange {
            notes: if notes.is_empty() {
                Patch::Null
            } else {
                Patch::Value(notes.replace("\r\n", "\n"))
            },
            critical: Some(form.get("critical").is_some()),
            rollout_percent: rollout,
        };
        let Some(status) = status.filter(|_| problems.is_empty()) else {
            return Err(Failure {
                status: 400,
                details: String::new(),
                fields: problems,
            });
        };
        let release = r.release;
        let input = ReleaseInput {
            version: release.version,
            product_id: release.product_id,
            status,
            set_as_latest: form.get("setAsLatest").is_some(),
            branch_id: release.branch_id,
            metadata: release.metadata,
            license_ids,
            keep_existing_file: true,
            feed,
        };
        let update = UpdateRelease(rid, Received { input, file: None });
        api::perform(ctx, staff, update).await?;
        Ok(page::redirect(&format!(
            "/dashboard/releases/{rid}?notice=release-updated"
        )))
    };
    match outcome.await {
        Ok(response) => response,
        Err(f) if f.status == 400 => show(ctx, staff, id, Some(&f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `GET /dashboard/releases/{id}/delete`: the confirmation.
pub(crate) async fn confirm_delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let outcome = async {
        let id = release_id(id)?;
        let r = api::perform(ctx, staff, GetRelease(id)).await?;
        Ok(page::confirm(
            staff,
            Confirm {
                nav: Nav::Releases,
                title: t("releases-delete-release"),
                what: html! {
                    (tm_counted("releases-delete-what", Some(r.release.artifacts.len() as i64), &[("name", html! { (r.product.name) }), ("version", html! { (r.release.version.as_str()) })]))
                },
                action: format!("/dashboard/releases/{id}/delete"),
                button: t("releases-delete-release-2"),
                back: format!("/dashboard/releases/{id}"),
            },
        ))
    };
    page::answer(ctx, staff, None, outcome.await)
}

/// `POST /dashboard/releases/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    page::done(
        ctx,
        staff,
        release_id(id).map(DeleteRelease),
        "/dashboard/releases?notice=release-deleted",
    )
    .await
}

/// Reads a multipart upload form a browser sends: its text fields first (the CSRF token among
/// them; each at most [`MAX_FIELD`] bytes), then the file part, which is returned unread.
async fn upload_form(
    body: Body,
    content_type: &str,
) -> Result<(Form, Option<multer::Field<'static>>), Failure> {
    let Ok(boundary) = multer::parse_boundary(content_type) else {
        return Err(Failure::new(400, t("releases-upload-form-was-not-sent")));
    };
    let unreadable =
        |e: multer::Error| crate::http::body_error(&e, t("releases-upload-could-not-read"));
    let mut multipart = multer::Multipart::new(body, boundary);
    let mut fields = Vec::new();
    loop {
        let mut field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => return Ok((Form::from_pairs(fields), None)),
            Err(e) => return Err(unreadable(e).into()),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            // The file comes last in the form; anything after it is not read.
            return Ok((Form::from_pairs(fields), Some(field)));
        }
        let mut value = Vec::new();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) if value.len() + chunk.len() <= MAX_FIELD => {
                    value.extend_from_slice(&chunk);
                }
                Ok(Some(_)) => {
                    return Err(Failure::new(
                        413,
                        tw("releases-field-too-long", &[("name", Arg::Text(&name))]),
                    ));
                }
                Ok(None) => break,
                Err(e) => return Err(unreadable(e).into()),
            }
        }
        fields.push((name, String::from_utf8_lossy(&value).into_owned()));
    }
}

/// `POST /dashboard/releases/{id}/artifacts`: an update artifact, its file streamed on as it
/// arrives.
pub(crate) async fn upload_artifact(ctx: &Ctx, staff: &Staff, id: &str, body: Body) -> Response {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let (form, file) = match upload_form(body, &content_type).await {
        Ok(read) => read,
        Err(f) => return page::failure(ctx, Some(staff), &f),
    };
    if !super::sign_in::csrf_ok(staff, &form) {
        return page::csrf_refused(ctx, staff);
    }
    let cx = api::cx(ctx, staff);
    let outcome = async {
        let rid = release_id(id)?;
        cx.caller
            .require(Scope::write(Resource::Releases))
            .map_err(Failure::from)?;
        let mut file = file;
        if let Err(refused) = upload_allowed(&cx).await {
            if let Some(field) = file.as_mut() {
                crate::http::drain(field, DRAIN_BUDGET).await;
            }
            return Err(refused.into());
        }
        let texts: Vec<(String, String)> = ["platform", "arch", "signature", "edSignature"]
            .into_iter()
            .filter_map(|name| {
                form.text(name)
                    .map(|value| (name.to_owned(), value.to_owned()))
            })
            .collect();
        let input = ArtifactInput::parse(&texts)?;
        let Some(mut field) = file.filter(|f| f.file_name().is_some_and(|n| !n.is_empty())) else {
            return Err(Failure::from(ApiError::bad_field(
                "file",
                t("releases-required-choose-file-upload"),
            )));
        };
        let mut incoming = IncomingArtifact::begin(&cx, field.file_name()).await?;
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => {
                    if let Err(refused) = incoming.write(&chunk).await {
                        drop(incoming);
                        crate::http::drain(&mut field, DRAIN_BUDGET).await;
                        return Err(refused.into());
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(
                        crate::http::body_error(&e, t("releases-upload-could-not-read")).into(),
                    );
                }
            }
        }
        cx.perform(UploadArtifact(
            rid,
            ReceivedArtifact {
                input,
                file: incoming,
            },
        ))
        .await
        .map_err(Failure::from)?;
        Ok(rid)
    };
    match outcome.await {
        Ok(rid) => page::redirect(&format!(
            "/dashboard/releases/{rid}?notice=artifact-uploaded"
        )),
        Err(f) if matches!(f.status, 400 | 409 | 413) => show(ctx, staff, id, Some(&f)).await,
        Err(f) => page::failure(ctx, Some(staff), &f),
    }
}

/// `POST /dashboard/releases/{id}/artifacts/{artifactId}/delete`.
pub(crate) async fn delete_artifact(
    ctx: &Ctx,
    staff: &Staff,
    id: &str,
    artifact: &str,
) -> Response {
    let op = release_id(id).and_then(|rid| {
        page::id_of::<licensing_core::ArtifactId>(artifact, "artifact")
            .map(|artifact| DeleteArtifact(rid, artifact))
    });
    let back = format!("/dashboard/releases/{id}?notice=artifact-deleted");
    page::done(ctx, staff, op, &back).await
}
