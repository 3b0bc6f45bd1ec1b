//! Releases: the list, uploading one (streamed to the API's own multipart operation, with a
//! progress bar when scripts run), a release's page with its checksum, its status, "latest"
//! and the licenses allowed to download it, and deleting one.
//!
//! A browser's upload form sends its fields and then the file, as `multipart/form-data`. The
//! dashboard reads the fields (the CSRF token among them), then passes the file on to the
//! developer API's create operation as it arrives, in the API's own shape (a `data` part of
//! JSON and a `file` part), so that a large file is never held in memory and every rule of the
//! API applies.

use bytes::Bytes;
use futures_util::StreamExt as _;
use licensing_core::api::{ProductPage, ReleasePage};
use licensing_core::model::{LicenseDetail, ReleaseStatus, ReleaseView, Resource, Scope};
use licensing_core::{LicenseKey, ReleaseId};
use maud::html;
use serde_json::{Value, json};
use warp::http::{HeaderMap, HeaderValue, Method, header};

use super::api::{self, Failure};
use super::page::{self, Act, Confirm, Form, Nav};
use super::{Ctx, Staff};
use crate::http::Response;
use crate::routes::dev::Body;

/// Largest text field of an upload form.
const MAX_FIELD: usize = 64 * 1024;

fn may_write(staff: &Staff) -> bool {
    staff.may(Scope::write(Resource::Releases))
}

async fn products(ctx: &Ctx, staff: &Staff) -> Result<ProductPage, Failure> {
    api::call(ctx, staff, Method::GET, "products", "pageSize=100", None).await
}

fn size_text(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

/// `GET /dashboard/releases`, or the upload form again with what to fix.
pub(crate) async fn list(
    ctx: &Ctx,
    staff: &Staff,
    form: &Form,
    failure: Option<&Failure>,
) -> Response {
    let outcome = async {
        let product = ctx.param("product").unwrap_or_default();
        let mut query = String::from("pageSize=100");
        if !product.is_empty() {
            query.push_str("&productId=");
            query.extend(form_urlencoded::byte_serialize(product.as_bytes()));
        }
        let releases: ReleasePage =
            api::call(ctx, staff, Method::GET, "releases", &query, None).await?;
        let products = products(ctx, staff).await?;
        let chosen_product = form.get("productId").unwrap_or(&product);
        let status = form.get("status").unwrap_or("PUBLISHED");
        let content = html! {
            h1 { "Releases" }
            form.filters method="get" action="/dashboard/releases" {
                div {
                    label for="product" { "Product" }
                    select #product name="product" {
                        option value="" { "Any product" }
                        @for p in &products.products {
                            option value=(p.id) selected[product == p.id.to_string()] { (p.name) }
                        }
                    }
                }
                div { button type="submit" { "Show" } }
            }
            div.table-wrap {
                table {
                    thead {
                        tr {
                            th scope="col" { "Version" }
                            th scope="col" { "Product" }
                            th scope="col" { "Status" }
                            th scope="col" { "File" }
                            th scope="col" { "Created" }
                        }
                    }
                    tbody {
                        @if releases.releases.is_empty() {
                            tr { td.empty colspan="5" { "No releases yet." } }
                        }
                        @for r in &releases.releases {
                            tr {
                                td {
                                    a href={ "/dashboard/releases/" (r.release.id) } { (r.release.version.as_str()) }
                                    @if r.release.latest { " " span.badge.ok { "latest" } }
                                }
                                td { (r.product.name) }
                                td { (r.release.status.as_str()) }
                                td { (r.release.file.as_ref().map_or_else(|| "—".to_owned(), |f| format!("{} ({})", f.name, size_text(f.size)))) }
                                td { (page::day(r.release.created_at)) }
                            }
                        }
                    }
                }
            }
            @if may_write(staff) {
                h2 { "Upload a release" }
                (page::problems(failure))
                @if products.products.is_empty() {
                    p { "Create a product first: a release belongs to one." }
                } @else {
                    form method="post" action="/dashboard/releases" enctype="multipart/form-data" data-upload {
                        (page::csrf(staff))
                        label for="productId" { "Product" }
                        select #productId name="productId" required {
                            @for p in &products.products {
                                option value=(p.id) selected[chosen_product == p.id.to_string()] { (p.name) }
                            }
                        }
                        label for="version" { "Version" span.hint { "Such as 1.4.0." } }
                        input #version type="text" name="version" required value=(form.get("version").unwrap_or(""));
                        label for="status" { "Status" }
                        select #status name="status" {
                            @for s in ["PUBLISHED", "DRAFT", "DEPRECATED", "ARCHIVED"] {
                                option value=(s) selected[status == s] { (s) }
                            }
                        }
                        label.choice { input type="checkbox" name="setAsLatest" value="true" checked[form.get("setAsLatest").is_some()]; "Make it the latest release" }
                        label for="file" { "File" span.hint { "Optional; the encrypted download clients receive." } }
                        input #file type="file" name="file";
                        p { progress hidden max="100" value="0" data-progress {} }
                        p { button type="submit" { "Upload" } }
                    }
                }
            }
        };
        Ok::<_, Failure>(page::html_response(
            failure.map_or(200, |f| f.status),
            page::layout(ctx, staff, Nav::Releases, "Releases", content),
        ))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// A value safe inside a quoted `Content-Disposition` parameter.
fn quoted(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// `POST /dashboard/releases`: the upload.
pub(crate) async fn upload(ctx: &Ctx, staff: &Staff, body: Body) -> Response {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Ok(boundary) = multer::parse_boundary(content_type) else {
        return page::failure(
            ctx,
            Some(staff),
            &Failure::new(400, "The upload form was not sent as multipart/form-data."),
        );
    };
    let mut multipart = multer::Multipart::new(body, boundary);
    let mut fields = Vec::new();
    let mut file = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => {
                return page::failure(
                    ctx,
                    Some(staff),
                    &Failure::new(400, format!("The upload could not be read: {e}")),
                );
            }
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            // The file comes last in the form; anything after it is not read.
            let file_name = field.file_name().unwrap_or_default().to_owned();
            file = Some((file_name, field));
            break;
        }
        let mut value = Vec::new();
        let mut field = field;
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) if value.len() + chunk.len() <= MAX_FIELD => {
                    value.extend_from_slice(&chunk);
                }
                Ok(Some(_)) => {
                    return page::failure(
                        ctx,
                        Some(staff),
                        &Failure::new(413, format!("The form field {name} is too long.")),
                    );
                }
                Ok(None) => break,
                Err(e) => {
                    return page::failure(
                        ctx,
                        Some(staff),
                        &Failure::new(400, format!("The upload could not be read: {e}")),
                    );
                }
            }
        }
        fields.push((name, String::from_utf8_lossy(&value).into_owned()));
    }
    let form = Form::from_pairs(fields);
    if !super::session::csrf_ok(staff, &form) {
        return page::csrf_refused(ctx, staff);
    }
    let data = json!({
        "version": form.get("version").unwrap_or("").trim(),
        "productId": form.get("productId").unwrap_or(""),
        "status": form.get("status").unwrap_or("PUBLISHED"),
        "setAsLatest": form.get("setAsLatest").is_some(),
    });
    let boundary = format!("dashboard-{}", crate::services::staff::random_secret());
    let mut head = format!(
        "--{boundary}\r\ncontent-disposition: form-data; name=\"data\"\r\ncontent-type: application/json\r\n\r\n{data}\r\n"
    );
    // A file input left empty sends a part without a file name and without content.
    let file = file.filter(|(name, _)| !name.is_empty());
    let outgoing: Body = match file {
        Some((name, field)) => {
            head.push_str(&format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"{}\"\r\ncontent-type: application/octet-stream\r\n\r\n",
                quoted(&name)
            ));
            let tail = format!("\r\n--{boundary}--\r\n");
            // The file's chunks as they arrive, then the closing boundary. Should the browser's
            // body break off, the stream ends without it, and the API refuses the incomplete
            // upload (storing nothing).
            let parts = futures_util::stream::unfold(Some((field, tail)), |state| async move {
                let (mut field, tail) = state?;
                match field.chunk().await {
                    Ok(Some(chunk)) => Some((Ok(chunk), Some((field, tail)))),
                    Ok(None) => Some((Ok(Bytes::from(tail)), None)),
                    Err(e) => {
                        tracing::debug!(error = %e, "a dashboard upload broke off");
                        None
                    }
                }
            });
            Box::pin(futures_util::stream::once(async move { Ok(Bytes::from(head)) }).chain(parts))
        }
        None => {
            head.push_str(&format!("--{boundary}--\r\n"));
            Box::pin(futures_util::stream::once(
                async move { Ok(Bytes::from(head)) },
            ))
        }
    };
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}")) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    match api::call_stream::<ReleaseView>(
        ctx,
        staff,
        Method::POST,
        "releases",
        "",
        headers,
        outgoing,
    )
    .await
    {
        Ok(created) => page::redirect(&format!(
            "/dashboard/releases/{}?notice=release-created",
            created.release.id
        )),
        Err(f) if f.status == 400 || f.status == 413 => list(ctx, staff, &form, Some(&f)).await,
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
        let r: ReleaseView =
            api::call(ctx, staff, Method::GET, &format!("releases/{id}"), "", None).await?;
        let write = may_write(staff);
        let allowed: Vec<&str> = r
            .allowed_licenses
            .iter()
            .map(|l| l.license_key.as_str())
            .collect();
        let content = html! {
            div.heading {
                h1 { (r.product.name) " " (r.release.version.as_str()) }
                @if r.release.latest { span.badge.ok { "latest" } }
            }
            (page::problems(failure))
            div.card {
                dl.facts {
                    dt { "Status" } dd { (r.release.status.as_str()) }
                    dt { "Branch" } dd { (r.branch.as_ref().map_or("None", |b| b.name.as_str())) }
                    dt { "Created" } dd { (page::when(r.release.created_at)) }
                    @if let Some(f) = &r.release.file {
                        dt { "File" } dd { (f.name) " (" (size_text(f.size)) ")" }
                        dt { "Checksum (MD5)" } dd { code.checksum { (f.checksum) } }
                    } @else {
                        dt { "File" } dd { "None" }
                    }
                    dt { "Allowed licenses" } dd {
                        @if allowed.is_empty() { "Any license of the product" } @else { (allowed.join(", ")) }
                    }
                }
            }
            @if write {
                h2 { "Change" }
                form method="post" action={ "/dashboard/releases/" (id) } {
                    (page::csrf(staff))
                    label for="status" { "Status" }
                    select #status name="status" {
                        @for s in [ReleaseStatus::Published, ReleaseStatus::Draft, ReleaseStatus::Deprecated, ReleaseStatus::Archived] {
                            option value=(s.as_str()) selected[r.release.status == s] { (s.as_str()) }
                        }
                    }
                    label.choice { input type="checkbox" name="setAsLatest" value="true" checked[r.release.latest]; "The latest release" }
                    label for="licenseKeys" { "Allowed licenses" span.hint { "License keys, one per line; empty: any license of the product." } }
                    textarea #licenseKeys name="licenseKeys" rows="3" { (allowed.join("\n")) }
                    p { button type="submit" { "Save" } }
                }
                div.actions {
                    a.button.danger href={ "/dashboard/releases/" (id) "/delete" } { "Delete…" }
                }
            }
        };
        Ok::<_, Failure>(page::html_response(
            failure.map_or(200, |f| f.status),
            page::layout(
                ctx,
                staff,
                Nav::Releases,
                r.release.version.as_str(),
                content,
            ),
        ))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// `POST /dashboard/releases/{id}`: status, latest, allowed licenses.
pub(crate) async fn update(ctx: &Ctx, staff: &Staff, id: &str, form: &Form) -> Response {
    let outcome = async {
        let rid = release_id(id)?;
        let path = format!("releases/{rid}");
        let r: ReleaseView = api::call(ctx, staff, Method::GET, &path, "", None).await?;
        let mut license_ids = Vec::new();
        let mut problems = Vec::new();
        for line in form.get("licenseKeys").unwrap_or("").lines() {
            let key = line.trim();
            if key.is_empty() {
                continue;
            }
            match LicenseKey::parse(key) {
                Ok(key) => {
                    match api::call::<LicenseDetail>(
                        ctx,
                        staff,
                        Method::GET,
                        &format!("licenses/{}", key.as_str()),
                        "",
                        None,
                    )
                    .await
                    {
                        Ok(detail) => license_ids.push(detail.license.id.to_string()),
                        Err(f) if f.status == 404 => {
                            problems.push(licensing_core::FieldError::new(
                                "licenseKeys",
                                format!("no license has the key {}", key.as_str()),
                            ))
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
        if !problems.is_empty() {
            return Err(Failure {
                status: 400,
                details: String::new(),
                fields: problems,
            });
        }
        let data = json!({
            "version": r.release.version.as_str(),
            "productId": r.release.product_id,
            "status": form.get("status").unwrap_or(r.release.status.as_str()),
            "setAsLatest": form.get("setAsLatest").is_some(),
            "branchId": r.release.branch_id,
            "metadata": r.release.metadata,
            "licenseIds": license_ids,
            "keepExistingFile": true,
        });
        let boundary = format!("dashboard-{}", crate::services::staff::random_secret());
        let body = format!(
            "--{boundary}\r\ncontent-disposition: form-data; name=\"data\"\r\ncontent-type: application/json\r\n\r\n{data}\r\n--{boundary}--\r\n"
        );
        let mut headers = HeaderMap::new();
        if let Ok(value) =
            HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}"))
        {
            headers.insert(header::CONTENT_TYPE, value);
        }
        let _: Value =
            api::call_raw(ctx, staff, Method::PUT, &path, "", headers, body.into()).await?;
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
        let r: ReleaseView =
            api::call(ctx, staff, Method::GET, &format!("releases/{id}"), "", None).await?;
        Ok::<_, Failure>(page::confirm(
            ctx,
            staff,
            Confirm {
                nav: Nav::Releases,
                title: "Delete this release?",
                what: html! { (r.product.name) " " (r.release.version.as_str()) " and its file will be deleted; clients can no longer download it." },
                action: format!("/dashboard/releases/{id}/delete"),
                button: "Delete release",
                back: format!("/dashboard/releases/{id}"),
            },
        ))
    };
    page::or_failure(ctx, staff, outcome.await)
}

/// `POST /dashboard/releases/{id}/delete`.
pub(crate) async fn delete(ctx: &Ctx, staff: &Staff, id: &str) -> Response {
    let act = release_id(id).map(|id| {
        Act::new(
            Method::DELETE,
            format!("releases/{id}"),
            "/dashboard/releases?notice=release-deleted",
        )
    });
    page::act(ctx, staff, act).await
}
