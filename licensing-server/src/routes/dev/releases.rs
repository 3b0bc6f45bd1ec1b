//! Releases: multipart create (201) and update with the file rules, list, and (ext) get and
//! delete. The file streams to disk while it is counted and hashed; it is committed before the
//! record that points at it.

use std::collections::HashMap;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::StreamExt;
use licensing_core::api::requests::{
    MAX_JSON_BODY, ReleaseData, ReleaseInput, ReleaseListQuery, ReleaseMode, parse_no_query,
};
use licensing_core::api::{Deleted, ReleasePage};
use licensing_core::model::{BranchRef, LicenseRef, ProductRef, Release, ReleaseFile, ReleaseView};
use licensing_core::store::{
    Entity, LicenseStore, ProductStore, ReleaseStore, StoreError, TeamStore,
};
use licensing_core::{ApiError, FileId, ReleaseId};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::HeaderMap;
use warp::multipart::{FormData, Part};

use crate::files::{FileError, PendingFile};
use crate::http::{
    Handled, Response, internal, path_param, raw_query, respond, store_error, success,
};
use crate::routes::with_state;
use crate::state::{AppState, DevRequest};

/// Bytes of an oversize file part still read (and thrown away) so the client sees the 413
/// instead of a reset connection.
const DRAIN_BUDGET: usize = 4 * 1024 * 1024;

pub(crate) fn routes(state: AppState) -> BoxedFilter<(Response,)> {
    let s = move || with_state(state.clone());
    let headers = warp::header::headers_cloned;
    let form = || warp::multipart::form().max_length(None);
    let create = warp::path!("api" / "v1" / "dev" / "teams" / String / "releases")
        .and(warp::post())
        .and(s())
        .and(headers())
        .and(form())
        .then(
            |team: String, state: AppState, headers: HeaderMap, form: FormData| async move {
                respond(create(state, team, headers, form).await)
            },
        );
    let list = warp::path!("api" / "v1" / "dev" / "teams" / String / "releases")
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(
            |team: String, state: AppState, headers: HeaderMap, query: String| async move {
                respond(list(state, team, headers, query).await)
            },
        );
    let update = warp::path!("api" / "v1" / "dev" / "teams" / String / "releases" / String)
        .and(warp::put())
        .and(s())
        .and(headers())
        .and(form())
        .then(|team: String, id: String, state: AppState, headers: HeaderMap, form: FormData| async move {
            respond(update(state, team, id, headers, form).await)
        });
    let get = warp::path!("api" / "v1" / "dev" / "teams" / String / "releases" / String)
        .and(warp::get())
        .and(s())
        .and(headers())
        .and(raw_query())
        .then(|team: String, id: String, state: AppState, headers: HeaderMap, query: String| async move {
            respond(get(state, team, id, headers, query).await)
        });
    let delete = warp::path!("api" / "v1" / "dev" / "teams" / String / "releases" / String)
        .and(warp::delete())
        .and(s())
        .and(headers())
        .then(
            |team: String, id: String, state: AppState, headers: HeaderMap| async move {
                respond(delete(state, team, id, headers).await)
            },
        );
    create
        .or(list)
        .unify()
        .or(update)
        .unify()
        .or(get)
        .unify()
        .or(delete)
        .unify()
        .boxed()
}

/// The 429 of a team over its upload limit (with the limiter's headers), before any of the
/// upload is stored. Up to [`DRAIN_BUDGET`] bytes of the body are read and thrown away, so that
/// a client still sending sees the 429 rather than a reset connection.
async fn upload_refused(
    state: &AppState,
    dev: &DevRequest,
    form: &mut FormData,
) -> Option<Response> {
    let status = state.limits.uploads.as_ref()?.check(&dev.team);
    if status.allowed() {
        return None;
    }
    let mut drained = 0;
    'parts: while let Some(Ok(mut part)) = form.next().await {
        while let Some(Ok(chunk)) = part.data().await {
            drained += chunk.remaining();
            if drained >= DRAIN_BUDGET {
                break 'parts;
            }
        }
    }
    Some(crate::http::rate_limited(
        &status,
        "release uploads",
        " per team",
    ))
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

fn malformed(e: warp::Error) -> ApiError {
    crate::http::body_error(&e, "Malformed multipart body")
}

/// The file name without any directory part, which must have an extension.
fn file_name(part: &Part) -> Result<String, ApiError> {
    let raw = part.filename().ok_or_else(|| {
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

async fn read_data(part: &mut Part) -> Result<Bytes, ApiError> {
    let mut data = BytesMut::new();
    while let Some(chunk) = part.data().await {
        let chunk = chunk.map_err(malformed)?;
        if data.len() + chunk.remaining() > MAX_JSON_BODY {
            return Err(ApiError::payload_too_large(
                "The data part is larger than 1 MiB",
            ));
        }
        data.extend_from_slice(chunk.chunk());
    }
    Ok(data.freeze())
}

async fn read_file(state: &AppState, part: &mut Part) -> Result<PendingFile, ApiError> {
    let mut pending = state
        .files
        .begin()
        .await
        .map_err(|e| internal("upload start", e))?;
    while let Some(chunk) = part.data().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                pending.discard().await;
                return Err(malformed(e));
            }
        };
        match pending.write(chunk.chunk()).await {
            Ok(()) => {}
            Err(FileError::TooLarge) => {
                pending.discard().await;
                let mut drained = 0;
                while drained < DRAIN_BUDGET {
                    match part.data().await {
                        Some(Ok(c)) => drained += c.remaining(),
                        _ => break,
                    }
                }
                return Err(ApiError::payload_too_large(
                    "The file is larger than 10 MiB",
                ));
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
async fn read_upload(
    state: &AppState,
    dev: &DevRequest,
    mut form: FormData,
) -> Result<Upload, ApiError> {
    let mut upload = Upload {
        data: None,
        file: None,
    };
    let outcome: Result<(), ApiError> = async {
        while let Some(part) = form.next().await {
            let mut part = part.map_err(malformed)?;
            match part.name() {
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
                    return Err(ApiError::bad_field(other, "is not a known part: send `data` (JSON) and optionally `file`"));
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
    state: &AppState,
    dev: &DevRequest,
    pending: PendingFile,
    name: String,
) -> Result<ReleaseFile, ApiError> {
    let id = FileId::new();
    let stored = state
        .files
        .commit(pending, dev.team, id)
        .await
        .map_err(|e| internal("upload commit", e))?;
    // Read back after the commit: a tokio file's last write may still be in flight until it is
    // flushed, so reading the temporary file beside it could miss the zip's central directory.
    let main_class_name = if name.to_ascii_lowercase().ends_with(".jar") {
        let path = state.files.path(&stored.key);
        tokio::task::spawn_blocking(move || crate::jar::main_class(&path))
            .await
            .map_err(|e| internal("manifest task", e))?
    } else {
        None
    };
    if let Some(class) = &main_class_name
        && !crate::jar::is_valid_main_class(class)
    {
        state.files.remove(&stored.key).await;
        return Err(ApiError::bad_field(
            "file",
            &format!(
                "names a main class (Main-Class of the manifest, or main: of plugin.yml) that is not a Java class name: at most {} letters, digits, _, $ and . without spaces or control characters",
                crate::jar::MAX_MAIN_CLASS
            ),
        ));
    }
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

async fn create(state: AppState, team: String, headers: HeaderMap, mut form: FormData) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    if let Some(refused) = upload_refused(&state, &dev, &mut form).await {
        return Ok(refused);
    }
    let upload = read_upload(&state, &dev, form).await?;
    let (input, file) = parse_input(upload, ReleaseMode::Create).await?;
    let file = match file {
        Some((pending, name)) => Some(store_file(&state, &dev, pending, name).await?),
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
        created_by_user_id: dev.key.id.into(),
        created_at: dev.now,
        updated_at: dev.now,
        metadata: input.metadata,
        file,
        allowed_license_ids: input.license_ids,
    };
    if let Err(e) = state.store.create_release(&release).await {
        state
            .files
            .remove_release_files(std::slice::from_ref(&release))
            .await;
        return Err(store_error(e));
    }
    Ok(success(
        201,
        view(&state, release).await?,
        "Release created",
    ))
}

async fn find(state: &AppState, dev: &DevRequest, id: &str) -> Result<Release, ApiError> {
    let id: ReleaseId = path_param("releaseId", id)?;
    Ok(state
        .store
        .get_release(dev.team, id)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Release))?)
}

async fn update(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    mut form: FormData,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    if let Some(refused) = upload_refused(&state, &dev, &mut form).await {
        return Ok(refused);
    }
    // The body is read and checked (400, 413) before the release is looked up (404).
    let upload = read_upload(&state, &dev, form).await?;
    let (input, file) = parse_input(upload, ReleaseMode::Update).await?;
    let existing = match find(&state, &dev, &id).await {
        Ok(existing) => existing,
        Err(e) => {
            if let Some((pending, _)) = file {
                pending.discard().await;
            }
            return Err(e);
        }
    };
    // The three file rules: a new file replaces, else keep or remove.
    let new_file = match file {
        Some((pending, name)) => Some(store_file(&state, &dev, pending, name).await?),
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
    if let Err(e) = state.store.update_release(&release).await {
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
    Ok(success(
        200,
        view(&state, release).await?,
        "Release updated",
    ))
}

async fn get(
    state: AppState,
    team: String,
    id: String,
    headers: HeaderMap,
    query: String,
) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let release = find(&state, &dev, &id).await?;
    parse_no_query(&query)?;
    Ok(success(
        200,
        view(&state, release).await?,
        "Release retrieved",
    ))
}

async fn delete(state: AppState, team: String, id: String, headers: HeaderMap) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let release = find(&state, &dev, &id).await?;
    let deleted = state
        .store
        .delete_release(dev.team, release.id)
        .await
        .map_err(store_error)?;
    state
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

async fn list(state: AppState, team: String, headers: HeaderMap, query: String) -> Handled {
    let dev = state.dev(&team, &headers).await?;
    let query = ReleaseListQuery::parse(&query)?;
    let page = state
        .store
        .list_releases(dev.team, &query)
        .await
        .map_err(store_error)?;
    let mut views = Viewer::default();
    let mut releases = Vec::with_capacity(page.items.len());
    for r in page.items {
        releases.push(views.view(&state, r).await?);
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
