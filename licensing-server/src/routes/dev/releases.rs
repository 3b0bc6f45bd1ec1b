//! Releases: multipart create (201) and update with the file rules, list, and (ext) get and
//! delete. The file streams to disk while it is counted and hashed; it is committed before the
//! record that points at it.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use licensing_core::api::requests::{
    MAX_JSON_BODY, ReleaseData, ReleaseInput, ReleaseListQuery, ReleaseMode,
};
use licensing_core::api::{Deleted, ReleasePage};
use licensing_core::model::{
    Action, BranchRef, LicenseRef, ProductRef, Release, ReleaseFile, ReleaseStatus, ReleaseView,
};
use licensing_core::store::{
    Entity, LicenseStore, ProductStore, ReleaseStore, StoreError, TeamStore,
};
use licensing_core::{ApiError, FileId, ReleaseId};
use multer::{Field, Multipart};

use super::{Body, Dev, Input};
use crate::files::{FileError, PendingFile};
use crate::http::{Handled, Response, internal, store_error, success};
use crate::state::AppState;

/// Bytes of an oversize file part still read (and thrown away) so the client sees the 413
/// instead of a reset connection.
const DRAIN_BUDGET: usize = 4 * 1024 * 1024;

/// Reads and throws away up to [`DRAIN_BUDGET`] bytes of a body, so that a client still sending
/// sees the answer rather than a reset connection.
async fn drain(body: &mut Body) {
    let mut drained = 0;
    while let Some(Ok(chunk)) = body.next().await {
        drained += chunk.len();
        if drained >= DRAIN_BUDGET {
            break;
        }
    }
}

/// The 429 of a team over its upload limit (with the limiter's headers), before any of the
/// upload is stored.
async fn upload_refused(dev: &Dev, body: &mut Body) -> Option<Response> {
    let status = dev.state.limits.uploads.as_ref()?.check(&dev.team).await;
    if status.allowed() {
        return None;
    }
    drain(body).await;
    Some(crate::http::rate_limited(
        &status,
        "release uploads",
        " per team",
    ))
}

/// The multipart reader of an upload's body: 400 without a multipart `Content-Type` and its
/// boundary.
fn multipart(input: Input) -> Result<Multipart<'static>, ApiError> {
    let content_type = input
        .headers
        .get(warp::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "Missing header content-type: a release is sent as multipart/form-data",
            )
        })?;
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::bad_request(
            "Invalid header content-type: a release is sent as multipart/form-data with a boundary",
        )
    })?;
    Ok(Multipart::new(input.body, boundary))
}

/// The parts of a release upload.
struct Upload {
    data: Option<Bytes>,
    file: Option<(PendingFile, String)>,
}

impl Upload {
    async fn discard(self) {
        if let Some((pending, _)) = self.file {
            pending.discard().await;
        }
    }
}

fn malformed(e: multer::Error) -> ApiError {
    crate::http::body_error(&e, "Malformed multipart body")
}

/// The file name without any directory part, which must have an extension.
fn file_name(part: &Field<'_>) -> Result<String, ApiError> {
    let raw = part.file_name().ok_or_else(|| {
        ApiError::bad_field("file", "needs a file name (Content-Disposition filename)")
    })?;
    let name = raw.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    let has_extension = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    if !has_extension {
        return Err(ApiError::bad_field(
            "file",
            "must have a file extension, such as app.jar",
        ));
    }
    if name.chars().count() > 255 || name.chars().any(char::is_control) {
        return Err(ApiError::bad_field(
            "file",
            "name must be at most 255 characters without control characters",
        ));
    }
    Ok(name.to_owned())
}

async fn read_data(part: &mut Field<'_>) -> Result<Bytes, ApiError> {
    let mut data = BytesMut::new();
    while let Some(chunk) = part.chunk().await.map_err(malformed)? {
        if data.len() + chunk.len() > MAX_JSON_BODY {
            return Err(ApiError::payload_too_large(
                "The data part is larger than 1 MiB",
            ));
        }
        data.extend_from_slice(&chunk);
    }
    Ok(data.freeze())
}

async fn read_file(state: &AppState, part: &mut Field<'_>) -> Result<PendingFile, ApiError> {
    let mut pending = state
        .files
        .begin()
        .await
        .map_err(|e| internal("upload start", e))?;
    loop {
        let chunk = match part.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => {
                pending.discard().await;
                return Err(malformed(e));
            }
        };
        match pending.write(&chunk).await {
            Ok(()) => {}
            Err(FileError::TooLarge) => {
                pending.discard().await;
                let mut drained = 0;
                while drained < DRAIN_BUDGET {
                    match part.chunk().await {
                        Ok(Some(c)) => drained += c.len(),
                        _ => break,
                    }
                }
                return Err(ApiError::payload_too_large(format!(
                    "The file is larger than {} MiB, the largest this server takes",
                    state.files.max_size() / (1024 * 1024)
                )));
            }
            Err(e) => {
                pending.discard().await;
                return Err(internal("upload write", e));
            }
        }
    }
    Ok(pending)
}

/// Reads the parts: `data` (required, JSON) and `file` (optional, needs the classloader feature).
async fn read_upload(dev: &Dev, mut form: Multipart<'static>) -> Result<Upload, ApiError> {
    let state = &dev.state;
    let mut upload = Upload {
        data: None,
        file: None,
    };
    let outcome: Result<(), ApiError> = async {
        while let Some(mut part) = form.next_field().await.map_err(malformed)? {
            let name = part.name().unwrap_or_default().to_owned();
            match name.as_str() {
                "data" if upload.data.is_some() => return Err(ApiError::bad_field("data", "is given more than once")),
                "data" => upload.data = Some(read_data(&mut part).await?),
                "file" if upload.file.is_some() => return Err(ApiError::bad_field("file", "is given more than once")),
                "file" => {
                    let team = state
                        .store
                        .get_team(dev.team)
                        .await
                        .map_err(store_error)?
                        .ok_or(StoreError::NotFound(Entity::Team))?;
                    if !team.features.classloader {
                        return Err(ApiError::forbidden(
                            "File uploads need the team's classloader feature, which is off for this team",
                        ));
                    }
                    let name = file_name(&part)?;
                    upload.file = Some((read_file(state, &mut part).await?, name));
                }
                other => {
                    return Err(ApiError::bad_field(if other.is_empty() { "part" } else { other }, "is not a known part: send `data` (JSON) and optionally `file`"));
                }
            }
        }
        Ok(())
    }
    .await;
    match outcome {
        Ok(()) => Ok(upload),
        Err(e) => {
            upload.discard().await;
            Err(e)
        }
    }
}

/// Commits an uploaded file and describes it.
async fn store_file(
    dev: &Dev,
    pending: PendingFile,
    name: String,
) -> Result<ReleaseFile, ApiError> {
    let state = &dev.state;
    let mut pending = pending;
    // The manifest is read from the complete temporary file, before it is stored.
    if let Err(e) = pending.finish().await {
        pending.discard().await;
        return Err(internal("upload flush", e));
    }
    let main_class_name = if name.to_ascii_lowercase().ends_with(".jar") {
        let path = pending.path().to_path_buf();
        tokio::task::spawn_blocking(move || crate::jar::main_class(&path))
            .await
            .map_err(|e| internal("manifest task", e))?
    } else {
        None
    };
    if let Some(class) = &main_class_name
        && !crate::jar::is_valid_main_class(class)
    {
        pending.discard().await;
        return Err(ApiError::bad_field(
            "file",
            &format!(
                "names a main class (Main-Class of the manifest, or main: of plugin.yml) that is not a Java class name: at most {} letters, digits, _, $ and . without spaces or control characters",
                crate::jar::MAX_MAIN_CLASS
            ),
        ));
    }
    let id = FileId::new();
    let stored = state
        .files
        .commit(pending, dev.team, id)
        .await
        .map_err(|e| internal("upload commit", e))?;
    Ok(ReleaseFile {
        id,
        key: stored.key,
        size: stored.size,
        name,
        checksum: stored.md5,
        main_class_name,
        created_at: dev.now,
    })
}

/// Parses the data part, or throws the upload away.
async fn parse_input(
    upload: Upload,
    mode: ReleaseMode,
) -> Result<(ReleaseInput, Option<(PendingFile, String)>), ApiError> {
    let Some(data) = upload.data.clone() else {
        upload.discard().await;
        return Err(ApiError::bad_field(
            "data",
            "is required: a part named data holding the release JSON",
        ));
    };
    match ReleaseData::parse(&data, mode) {
        Ok(input) => Ok((input, upload.file)),
        Err(e) => {
            upload.discard().await;
            Err(e)
        }
    }
}

pub(super) async fn create(dev: Dev, (): (), mut input: Input) -> Handled {
    if let Some(refused) = upload_refused(&dev, &mut input.body).await {
        return Ok(refused);
    }
    let upload = read_upload(&dev, multipart(input)?).await?;
    let (input, file) = parse_input(upload, ReleaseMode::Create).await?;
    if let Err(e) = dev.must_cover(&[input.product_id]) {
        discard(file).await;
        return Err(e);
    }
    let file = match file {
        Some((pending, name)) => Some(store_file(&dev, pending, name).await?),
        None => None,
    };
    let release = Release {
        id: ReleaseId::new(),
        version: input.version,
        status: input.status,
        latest: input.set_as_latest,
        product_id: input.product_id,
        branch_id: input.branch_id,
        team_id: dev.team,
        created_by_user_id: dev.user(),
        created_at: dev.now,
        updated_at: dev.now,
        metadata: input.metadata,
        file,
        allowed_license_ids: input.license_ids,
    };
    let state = &dev.state;
    let journal = dev.change(Action::ReleaseCreated, release.id, None, Some(&release));
    if let Err(e) = state.store.create_release(&release, &journal).await {
        state
            .files
            .remove_release_files(std::slice::from_ref(&release))
            .await;
        return Err(store_error(e));
    }
    Ok(success(201, view(state, release).await?, "Release created"))
}

async fn discard(file: Option<(PendingFile, String)>) {
    if let Some((pending, _)) = file {
        pending.discard().await;
    }
}

/// The release of the path, when it exists in the team and the key may see its product.
async fn find(dev: &Dev, id: ReleaseId) -> Result<Release, ApiError> {
    Ok(dev
        .state
        .store
        .get_release(dev.team, id)
        .await
        .map_err(store_error)?
        .filter(|r| dev.sees(&[r.product_id]))
        .ok_or(StoreError::NotFound(Entity::Release))?)
}

pub(super) async fn update(dev: Dev, (id,): (ReleaseId,), mut input: Input) -> Handled {
    if let Some(refused) = upload_refused(&dev, &mut input.body).await {
        return Ok(refused);
    }
    // The body is read and checked (400, 413) before the release is looked up (404).
    let upload = read_upload(&dev, multipart(input)?).await?;
    let (input, file) = parse_input(upload, ReleaseMode::Update).await?;
    let existing = match find(&dev, id).await {
        Ok(existing) => existing,
        Err(e) => {
            discard(file).await;
            return Err(e);
        }
    };
    if let Err(e) = dev.must_cover(&[existing.product_id, input.product_id]) {
        discard(file).await;
        return Err(e);
    }
    // The three file rules: a new file replaces, else keep or remove.
    let new_file = match file {
        Some((pending, name)) => Some(store_file(&dev, pending, name).await?),
        None => None,
    };
    let replaced = new_file.is_some() || !input.keep_existing_file;
    let file = match new_file {
        Some(f) => Some(f),
        None if input.keep_existing_file => existing.file.clone(),
        None => None,
    };
    let release = Release {
        version: input.version,
        status: input.status,
        latest: input.set_as_latest,
        product_id: input.product_id,
        branch_id: input.branch_id,
        updated_at: dev.now,
        metadata: input.metadata,
        file,
        allowed_license_ids: input.license_ids,
        ..existing.clone()
    };
    let state = &dev.state;
    let action = if release.status == ReleaseStatus::Published
        && existing.status != ReleaseStatus::Published
    {
        Action::ReleasePublished
    } else {
        Action::ReleaseUpdated
    };
    let journal = dev.change(action, release.id, Some(&existing), Some(&release));
    if let Err(e) = state.store.update_release(&release, &journal).await {
        if replaced && release.file != existing.file {
            state
                .files
                .remove_release_files(std::slice::from_ref(&release))
                .await;
        }
        return Err(store_error(e));
    }
    if replaced && existing.file.is_some() && release.file != existing.file {
        state
            .files
            .remove_release_files(std::slice::from_ref(&existing))
            .await;
    }
    Ok(success(200, view(state, release).await?, "Release updated"))
}

pub(super) async fn get(dev: Dev, (id,): (ReleaseId,), _: Input) -> Handled {
    let release = find(&dev, id).await?;
    Ok(success(
        200,
        view(&dev.state, release).await?,
        "Release retrieved",
    ))
}

pub(super) async fn delete(dev: Dev, (id,): (ReleaseId,), _: Input) -> Handled {
    let release = find(&dev, id).await?;
    dev.must_cover(&[release.product_id])?;
    let deleted = dev
        .state
        .store
        .delete_release(
            dev.team,
            release.id,
            &dev.change(Action::ReleaseDeleted, release.id, Some(&release), None),
        )
        .await
        .map_err(store_error)?;
    dev.state
        .files
        .remove_release_files(std::slice::from_ref(&deleted))
        .await;
    Ok(success(
        200,
        Deleted {
            id: *release.id.as_uuid(),
            deleted: true,
        },
        "Release deleted",
    ))
}

pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let mut query = ReleaseListQuery::parse(&input.query)?;
    query.filter.within_products.clone_from(dev.products());
    let state = &dev.state;
    let page = state
        .store
        .list_releases(dev.team, &query)
        .await
        .map_err(store_error)?;
    let mut views = Viewer::default();
    let mut releases = Vec::with_capacity(page.items.len());
    for r in page.items {
        releases.push(views.view(state, r).await?);
    }
    Ok(success(
        200,
        ReleasePage {
            releases,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Releases retrieved",
    ))
}

async fn view(state: &AppState, release: Release) -> Result<ReleaseView, ApiError> {
    Viewer::default().view(state, release).await
}

/// Builds release views, remembering products and branches across one page.
#[derive(Default)]
struct Viewer {
    products: HashMap<licensing_core::ProductId, ProductRef>,
    branches: HashMap<licensing_core::ProductId, Vec<BranchRef>>,
}

impl Viewer {
    async fn view(&mut self, state: &AppState, release: Release) -> Result<ReleaseView, ApiError> {
        let team = release.team_id;
        let product = match self.products.get(&release.product_id) {
            Some(p) => p.clone(),
            None => {
                let p = state
                    .store
                    .get_product(team, release.product_id)
                    .await
                    .map_err(store_error)?
                    .ok_or(StoreError::NotFound(Entity::Product))?;
                let p = ProductRef::from(&p);
                self.products.insert(release.product_id, p.clone());
                p
            }
        };
        let branch = match release.branch_id {
            None => None,
            Some(id) => {
                let known = match self.branches.entry(release.product_id) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        let list = state
                            .store
                            .list_branches(team, release.product_id)
                            .await
                            .map_err(store_error)?;
                        v.insert(list.iter().map(BranchRef::from).collect())
                    }
                };
                known.iter().find(|b| b.id == id).cloned()
            }
        };
        let mut allowed_licenses = Vec::with_capacity(release.allowed_license_ids.len());
        for id in &release.allowed_license_ids {
            if let Some(l) = state
                .store
                .get_license(team, *id)
                .await
                .map_err(store_error)?
            {
                allowed_licenses.push(LicenseRef {
                    id: l.id,
                    license_key: l.license_key,
                });
            }
        }
        Ok(ReleaseView {
            release,
            product,
            branch,
            allowed_licenses,
        })
    }
}
