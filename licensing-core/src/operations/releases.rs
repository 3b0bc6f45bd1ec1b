//! Releases and their files. A create or an update is a multipart form (a `data` part and an
//! optional `file` part), held as the caller holds it ([`ReleaseForm`]): a client's in memory,
//! the server's file streamed into its store as it arrives.

use crate::api::ArtifactList;
use crate::api::requests::ReleaseListQuery;
use crate::api::{Deleted, ReleasePage};
use crate::model::Artifact;
use crate::model::{ReleaseView, Resource, Scope};
use crate::store::Page;
use crate::{ApiError, ArtifactId, ReleaseId};

use super::doc::*;
use super::{Body, DevOperation, Form, Method, Operation, Query, declare};

/// A release's form, as whoever holds it holds it.
pub trait ReleaseForm: Send + 'static {
    /// The parts to send, for a form a client holds (`None` for one already received).
    fn parts(&self) -> Option<Form<'_>>;
}

/// Creates a release, with its file if one came.
pub struct CreateRelease<F>(pub F);

/// Replaces a release's members; a new file replaces the stored one, else `keepExistingFile`
/// keeps or removes it.
pub struct UpdateRelease<F>(pub ReleaseId, pub F);

/// One page of the team's releases (a restricted key's products' only).
pub struct ListReleases(pub ReleaseListQuery);

/// A release.
pub struct GetRelease(pub ReleaseId);

/// Deletes a release and its file.
pub struct DeleteRelease(pub ReleaseId);

/// (ext) An artifact's form, as whoever holds it holds it.
pub trait ArtifactForm: Send + 'static {
    /// The parts to send, for a form a client holds (`None` for one already received).
    fn parts(&self) -> Option<Form<'_>>;
}

/// (ext) Uploads an update artifact of a release (multipart: `file`, `platform`, `arch`, and
/// optionally `kind`, `signature`, `edSignature`).
pub struct UploadArtifact<F>(pub ReleaseId, pub F);

/// (ext) A release's artifacts.
pub struct ListArtifacts(pub ReleaseId);

/// (ext) Deletes an artifact of a release and its file.
pub struct DeleteArtifact(pub ReleaseId, pub ArtifactId);

const READ: Option<Scope> = Some(Scope::read(Resource::Releases));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Releases));

declare! {
    ListReleases() by query ReleaseListQuery;
    Get "releases" "list_releases" READ;
    Page<ReleaseView> => 200 ReleasePage: |page| page.into(), "Releases retrieved";
    doc Doc {
        tag: "releases",
        summary: "List releases, a page at a time.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of version, createdAt, updatedAt, latest (default createdAt)", Kind::Text),
            Param::query("productId", "Releases of this product", Kind::Uuid),
            Param::query("search", "Part of the version, case-insensitive", Kind::Text),
            Param::query("status", "PUBLISHED, DRAFT, ARCHIVED or DEPRECATED", Kind::Text),
        ],
        body: "",
        success: "A page of releases",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetRelease(id: ReleaseId) by ids;
    Get "releases/{releaseId}" "get_release" READ;
    ReleaseView => 200 "Release retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A release.",
        description: "",
        params: &[
            RELEASE_ID,
        ],
        body: "",
        success: "The release",
        refusals: &[REFUSED, OTHER_TEAM, NO_RELEASE],
    };

    ListArtifacts(release: ReleaseId) by ids;
    Get "releases/{releaseId}/artifacts" "list_artifacts" READ;
    ArtifactList => 200 "Artifacts retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A release's update artifacts, in the order they were uploaded.",
        description: "",
        params: &[
            RELEASE_ID,
        ],
        body: "",
        success: "The artifacts",
        refusals: &[REFUSED, OTHER_TEAM, NO_RELEASE],
    };

    DeleteArtifact(release: ReleaseId, id: ArtifactId) by ids;
    Delete "releases/{releaseId}/artifacts/{artifactId}" "delete_artifact" WRITE;
    Deleted => 200 "Artifact deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete an update artifact and its file: the feeds stop offering it at once.",
        description: "",
        params: &[
            RELEASE_ID,
            ARTIFACT_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "RELEASE_NOT_FOUND or ARTIFACT_NOT_FOUND")]],
    };

    DeleteRelease(id: ReleaseId) by ids;
    Delete "releases/{releaseId}" "delete_release" WRITE;
    Deleted => 200 "Release deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a release and its file.",
        description: "",
        params: &[
            RELEASE_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_RELEASE],
    };
}

/// What receiving a form takes: a multipart body is read by whoever receives it, streaming.
fn received_elsewhere() -> ApiError {
    ApiError::internal()
}

impl<F: ReleaseForm> Operation for CreateRelease<F> {
    const NAME: &'static str = "create_release";
    type Output = ReleaseView;
    const SCOPE: Option<Scope> = WRITE;
}

impl<F: ReleaseForm> DevOperation for CreateRelease<F> {
    const DOC: Doc = Doc {
        tag: "releases",
        summary: "Create a release, with an optional file (multipart: `data` is the JSON, `file` the file).",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[crate::refusals![
            (
                400,
                "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)"
            ),
            (
                401,
                "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"
            ),
            (
                403,
                "FORBIDDEN: another team's key, or a file without the classloader feature"
            ),
            (
                404,
                "PRODUCT_NOT_FOUND, LICENSE_NOT_FOUND or RELEASE_NOT_FOUND (branch)"
            ),
            (
                408,
                "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)"
            ),
            (413, "BAD_REQUEST: the file is over 10 MiB"),
            (
                429,
                "RATE_LIMIT: too many requests for this API key, or too many release uploads for this team (`Retry-After`)"
            ),
            (500, "INTERNAL_SERVER_ERROR")
        ]],
    };
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "releases";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Form;
    const STATUS: u16 = 201;
    type Ids = ();
    type Answer = ReleaseView;
    type Payload = ();

    fn from_parts((): (), _: &str, _: &[u8]) -> Result<Self, ApiError> {
        Err(received_elsewhere())
    }

    fn answer(release: ReleaseView) -> (ReleaseView, &'static str) {
        (release, "Release created")
    }

    fn path_values(&self) -> Vec<String> {
        Vec::new()
    }

    fn form(&self) -> Option<Form<'_>> {
        self.0.parts()
    }
}

impl<F: ReleaseForm> Operation for UpdateRelease<F> {
    const NAME: &'static str = "update_release";
    type Output = ReleaseView;
    const SCOPE: Option<Scope> = WRITE;
}

impl<F: ReleaseForm> DevOperation for UpdateRelease<F> {
    const DOC: Doc = Doc {
        tag: "releases",
        summary: "Update a release (multipart): every member of `data`, and a new file or `keepExistingFile`.",
        description: "",
        params: &[RELEASE_ID],
        body: "",
        success: "Updated",
        refusals: &[crate::refusals![
            (
                400,
                "BAD_REQUEST: a malformed id, body or query parameter (`data.errors` names each)"
            ),
            (
                401,
                "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"
            ),
            (
                403,
                "FORBIDDEN: another team's key, or a file without the classloader feature"
            ),
            (
                404,
                "RELEASE_NOT_FOUND, PRODUCT_NOT_FOUND or LICENSE_NOT_FOUND"
            ),
            (
                408,
                "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)"
            ),
            (413, "BAD_REQUEST: the file is over 10 MiB"),
            (
                429,
                "RATE_LIMIT: too many requests for this API key, or too many release uploads for this team (`Retry-After`)"
            ),
            (500, "INTERNAL_SERVER_ERROR")
        ]],
    };
    const METHOD: Method = Method::Put;
    const PATH: &'static str = "releases/{releaseId}";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Form;
    const STATUS: u16 = 200;
    type Ids = (ReleaseId,);
    type Answer = ReleaseView;
    type Payload = ();

    fn from_parts(_: (ReleaseId,), _: &str, _: &[u8]) -> Result<Self, ApiError> {
        Err(received_elsewhere())
    }

    fn answer(release: ReleaseView) -> (ReleaseView, &'static str) {
        (release, "Release updated")
    }

    fn path_values(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn form(&self) -> Option<Form<'_>> {
        self.1.parts()
    }
}

impl<F: ArtifactForm> Operation for UploadArtifact<F> {
    const NAME: &'static str = "upload_artifact";
    type Output = Artifact;
    const SCOPE: Option<Scope> = WRITE;
}

impl<F: ArtifactForm> DevOperation for UploadArtifact<F> {
    const DOC: Doc = Doc {
        tag: "extensions",
        summary: "(ext) Upload an update artifact of a release (multipart: `file`, `platform` (windows, darwin,\nlinux), `arch` (x86_64, aarch64, i686, armv7, universal), and optionally `kind` (from the\nfile name unless given), `signature` (the minisign signature a Tauri build writes) and\n`edSignature` (Sparkle's)). The file is streamed to the store (up to\n`LICENSING_MAX_ARTIFACT_MB`, 2 GiB by default) and hashed as it arrives; signatures are checked\nagainst the product's `updaterPublicKey` and `sparklePublicKey`, and made by the server when\nthe product has `signUpdates`. The release's version must be a semantic version.",
        description: "",
        params: &[RELEASE_ID],
        body: "",
        success: "Uploaded",
        refusals: &[crate::refusals![
            (
                400,
                "BAD_REQUEST: a missing or unknown part, platform, architecture or kind, an empty file, a signature that does not verify, or a release version the updaters cannot compare"
            ),
            (
                401,
                "UNAUTHORIZED: missing, malformed, unknown, revoked or expired API key"
            ),
            (
                403,
                "FORBIDDEN: another team's key, or a key without releases:write"
            ),
            (404, "RELEASE_NOT_FOUND"),
            (
                408,
                "BAD_REQUEST: the body did not arrive within the body timeout (`LICENSING_BODY_TIMEOUT_SECS`)"
            ),
            (
                409,
                "CONFLICT: the release already has an artifact for this platform, architecture and kind"
            ),
            (
                413,
                "BAD_REQUEST: the file is larger than the largest artifact this server takes"
            ),
            (
                429,
                "RATE_LIMIT: too many requests for this API key, or too many uploads for this team (`Retry-After`)"
            ),
            (500, "INTERNAL_SERVER_ERROR")
        ]],
    };
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "releases/{releaseId}/artifacts";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Form;
    const STATUS: u16 = 201;
    type Ids = (ReleaseId,);
    type Answer = Artifact;
    type Payload = crate::api::requests::ArtifactParts;

    fn from_parts(_: (ReleaseId,), _: &str, _: &[u8]) -> Result<Self, ApiError> {
        Err(received_elsewhere())
    }

    fn answer(artifact: Artifact) -> (Artifact, &'static str) {
        (artifact, "Artifact uploaded")
    }

    fn path_values(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn form(&self) -> Option<Form<'_>> {
        self.1.parts()
    }
}
