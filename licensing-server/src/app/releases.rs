//! Releases: create and update (with the three file rules), list, get and delete.
//!
//! A release's file arrives as an [`IncomingFile`]: whoever reads the request (the developer
//! API's multipart body, the dashboard's upload form) hands its bytes to
//! [`IncomingFile::receive`] as they arrive, so a large file is never held in memory and every
//! rule applies the same way. A file is committed before the record that points at it, and
//! removed again if the record cannot be written; an incoming file that is never used (a
//! refused request, a client gone mid-upload) leaves nothing behind.

pub(crate) use licensing_core::operations::releases::{
    CreateRelease, DeleteRelease, GetRelease, ListReleases, UpdateRelease,
};

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use licensing_core::api::Deleted;
use licensing_core::api::requests::ReleaseInput;
use licensing_core::model::{
    Action, BranchRef, LicenseRef, ProductRef, Release, ReleaseFile, ReleaseStatus, ReleaseView,
};
use licensing_core::store::{
    Entity, LicenseStore, Page, ProductStore, ReleaseStore, StoreError, TeamStore,
};
use licensing_core::{ApiError, FileId, ProductId, ReleaseId};

use super::{Cx, Run};
use crate::files::{FileError, PendingFile};

/// Bytes of an oversize file still read (and thrown away) so that a client still sending sees
/// the 413 rather than a reset connection.
pub(crate) const DRAIN_BUDGET: usize = 4 * 1024 * 1024;

/// A release's form as this server received it: its members checked, its file (if one came)
/// streamed into the file store, not yet committed.
pub(crate) struct Received {
    /// Its members.
    pub(crate) input: ReleaseInput,
    /// Its file.
    pub(crate) file: Option<IncomingFile>,
}

impl licensing_core::operations::releases::ReleaseForm for Received {
    fn parts(&self) -> Option<licensing_core::operations::Form<'_>> {
        None
    }
}

/// 429 when the team is over its upload limit; checked before any of an upload is read.
pub(crate) async fn upload_allowed(cx: &Cx) -> Result<(), ApiError> {
    let Some(limiter) = cx.state.limits.uploads.as_ref() else {
        return Ok(());
    };
    let status = limiter.check(&cx.team).await;
    if status.allowed() {
        Ok(())
    } else {
        Err(status.refusal("release uploads", " per team"))
    }
}

/// A release's file on its way in: its bytes in a temporary file, not yet committed.
pub(crate) struct IncomingFile {
    pending: PendingFile,
    name: String,
}

impl IncomingFile {
    /// Receives a file as its bytes arrive: 403 unless the team has the classloader feature,
    /// 400 for a file name without an extension (`name` is the client's, any directory part
    /// dropped), 413 past the operator's cap (after throwing away up to [`DRAIN_BUDGET`] bytes
    /// more). A chunk's error is answered as it is.
    pub(crate) async fn receive<S>(cx: &Cx, name: Option<&str>, chunks: S) -> Result<Self, ApiError>
    where
        S: Stream<Item = Result<Bytes, ApiError>> + Send,
    {
        let team = cx
            .state
            .store
            .get_team(cx.team)
            .await?
            .ok_or(StoreError::NotFound(Entity::Team))?;
        if !team.features.classloader {
            return Err(ApiError::forbidden(
                "File uploads need the team's classloader feature, which is off for this team",
            ));
        }
        let name = file_name(name)?;
        let files = &cx.state.files;
        let mut pending = files
            .begin()
            .await
            .map_err(|e| ApiError::internal_because("upload start", e))?;
        let mut chunks = std::pin::pin!(chunks);
        while let Some(chunk) = chunks.next().await {
            match pending.write(&chunk?).await {
                Ok(()) => {}
                Err(FileError::TooLarge) => {
                    drop(pending);
                    let mut drained = 0;
                    while drained < DRAIN_BUDGET {
                        match chunks.next().await {
                            Some(Ok(c)) => drained += c.len(),
                            _ => break,
                        }
                    }
                    return Err(ApiError::payload_too_large(format!(
                        "The file is larger than {} MiB, the largest this server takes",
                        files.max_size() / (1024 * 1024)
                    )));
                }
                Err(e) => return Err(ApiError::internal_because("upload write", e)),
            }
        }
        Ok(Self { pending, name })
    }

    /// Commits the file (a jar's main class read from its manifest first) and describes it.
    async fn store(self, cx: &Cx) -> Result<ReleaseFile, ApiError> {
        let Self { mut pending, name } = self;
        pending
            .finish()
            .await
            .map_err(|e| ApiError::internal_because("upload flush", e))?;
        let main_class_name = if name.to_ascii_lowercase().ends_with(".jar") {
            let path = pending.path().to_path_buf();
            tokio::task::spawn_blocking(move || crate::jar::main_class(&path))
                .await
                .map_err(|e| ApiError::internal_because("manifest task", e))?
        } else {
            None
        };
        if let Some(class) = &main_class_name
            && !crate::jar::is_valid_main_class(class)
        {
            return Err(ApiError::bad_field(
                "file",
                &format!(
                    "names a main class (Main-Class of the manifest, or main: of plugin.yml) that is not a Java class name: at most {} letters, digits, _, $ and . without spaces or control characters",
                    crate::jar::MAX_MAIN_CLASS
                ),
            ));
        }
        let id = FileId::new();
        let stored = cx
            .state
            .files
            .commit(pending, cx.team, id)
            .await
            .map_err(|e| ApiError::internal_because("upload commit", e))?;
        Ok(ReleaseFile {
            id,
            key: stored.key,
            size: stored.size,
            name,
            checksum: stored.md5,
            main_class_name,
            created_at: cx.now,
        })
    }
}

/// The file name without any directory part, which must have an extension.
pub(crate) fn file_name(raw: Option<&str>) -> Result<String, ApiError> {
    let raw = raw.ok_or_else(|| {
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

impl Run for CreateRelease<Received> {
    async fn run(self, cx: &Cx) -> Result<ReleaseView, ApiError> {
        let Received { input, file } = self.0;
        cx.reach().may_change(&input)?;
        let file = match file {
            Some(incoming) => Some(incoming.store(cx).await?),
            None => None,
        };
        let mut release = Release {
            id: ReleaseId::new(),
            version: input.version,
            status: input.status,
            latest: input.set_as_latest,
            product_id: input.product_id,
            branch_id: input.branch_id,
            team_id: cx.team,
            created_by_user_id: cx.user(),
            created_at: cx.now,
            updated_at: cx.now,
            metadata: input.metadata,
            file,
            allowed_license_ids: input.license_ids,
            notes: None,
            critical: false,
            rollout_percent: Default::default(),
            artifacts: Vec::new(),
        };
        input.feed.apply(&mut release);
        let journal = cx.created(Action::ReleaseCreated, release.id, &release);
        if let Err(e) = cx.state.store.create_release(&release, &journal).await {
            cx.state
                .files
                .remove_release_files(std::slice::from_ref(&release))
                .await;
            return Err(e.into());
        }
        Viewer::default().view(cx, release).await
    }
}

impl Run for UpdateRelease<Received> {
    async fn run(self, cx: &Cx) -> Result<ReleaseView, ApiError> {
        let (id, Received { input, file }) = (self.0, self.1);
        let existing = cx.write::<Release>(id).await?;
        cx.reach().may_change(&input)?;
        // The three file rules: a new file replaces, else keep or remove.
        let new_file = match file {
            Some(incoming) => Some(incoming.store(cx).await?),
            None => None,
        };
        let replaced = new_file.is_some() || !input.keep_existing_file;
        let file = match new_file {
            Some(f) => Some(f),
            None if input.keep_existing_file => existing.file.clone(),
            None => None,
        };
        let mut release = Release {
            version: input.version,
            status: input.status,
            latest: input.set_as_latest,
            product_id: input.product_id,
            branch_id: input.branch_id,
            updated_at: cx.now,
            metadata: input.metadata,
            file,
            allowed_license_ids: input.license_ids,
            ..existing.clone()
        };
        input.feed.apply(&mut release);
        let action = if release.status == ReleaseStatus::Published
            && existing.status != ReleaseStatus::Published
        {
            Action::ReleasePublished
        } else {
            Action::ReleaseUpdated
        };
        let files = &cx.state.files;
        let journal = cx.change(action, release.id, Some(&existing), Some(&release));
        if let Err(e) = cx.state.store.update_release(&release, &journal).await {
            if replaced
                && release.file != existing.file
                && let Some(file) = &release.file
            {
                files.remove(&file.key).await;
            }
            return Err(e.into());
        }
        if replaced
            && release.file != existing.file
            && let Some(file) = &existing.file
        {
            files.remove(&file.key).await;
        }
        Viewer::default().view(cx, release).await
    }
}

impl Run for ListReleases {
    async fn run(self, cx: &Cx) -> Result<Page<ReleaseView>, ApiError> {
        let mut query = self.0;
        cx.reach().bound(&mut query);
        let page = cx.state.store.list_releases(cx.team, &query).await?;
        let mut viewer = Viewer::default();
        let mut items = Vec::with_capacity(page.items.len());
        for release in page.items {
            items.push(viewer.view(cx, release).await?);
        }
        Ok(Page {
            items,
            total: page.total,
            has_next_page: page.has_next_page,
        })
    }
}

impl Run for GetRelease {
    async fn run(self, cx: &Cx) -> Result<ReleaseView, ApiError> {
        let release = cx.read::<Release>(self.0).await?;
        Viewer::default().view(cx, release).await
    }
}

impl Run for DeleteRelease {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let release = cx.write::<Release>(self.0).await?;
        let deleted = cx
            .state
            .store
            .delete_release(
                cx.team,
                release.id,
                &cx.change(Action::ReleaseDeleted, release.id, Some(&release), None),
            )
            .await?;
        cx.state
            .files
            .remove_release_files(std::slice::from_ref(&deleted))
            .await;
        Ok(Deleted {
            id: *release.id.as_uuid(),
            deleted: true,
        })
    }
}

/// Builds release views, remembering products and branches across one page.
#[derive(Default)]
struct Viewer {
    products: HashMap<ProductId, ProductRef>,
    branches: HashMap<ProductId, Vec<BranchRef>>,
}

impl Viewer {
    async fn view(&mut self, cx: &Cx, release: Release) -> Result<ReleaseView, ApiError> {
        let store = &cx.state.store;
        let team = release.team_id;
        let product = match self.products.entry(release.product_id) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(v) => {
                let p = store
                    .get_product(team, release.product_id)
                    .await?
                    .ok_or(StoreError::NotFound(Entity::Product))?;
                v.insert(ProductRef::from(&p)).clone()
            }
        };
        let branch = match release.branch_id {
            None => None,
            Some(id) => {
                let known = match self.branches.entry(release.product_id) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(v) => {
                        let list = store.list_branches(team, release.product_id).await?;
                        v.insert(list.iter().map(BranchRef::from).collect())
                    }
                };
                known.iter().find(|b| b.id == id).cloned()
            }
        };
        let mut allowed_licenses = Vec::with_capacity(release.allowed_license_ids.len());
        for id in &release.allowed_license_ids {
            if let Some(l) = store.get_license(team, *id).await? {
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
