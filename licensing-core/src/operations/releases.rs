//! Releases and their files. A create or an update is a multipart form (a `data` part and an
//! optional `file` part), held as the caller holds it ([`ReleaseForm`]): a client's in memory,
//! the server's file streamed into its store as it arrives.

use crate::api::requests::ReleaseListQuery;
use crate::api::{Deleted, ReleasePage};
use crate::model::{ReleaseView, Resource, Scope};
use crate::store::Page;
use crate::{ApiError, ReleaseId};

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

const READ: Option<Scope> = Some(Scope::read(Resource::Releases));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Releases));

declare! {
    ListReleases() by query ReleaseListQuery;
    Get "releases" "list_releases" READ;
    Page<ReleaseView> => 200 ReleasePage: |page| page.into(), "Releases retrieved";

    GetRelease(id: ReleaseId) by ids;
    Get "releases/{releaseId}" "get_release" READ;
    ReleaseView => 200 "Release retrieved";

    DeleteRelease(id: ReleaseId) by ids;
    Delete "releases/{releaseId}" "delete_release" WRITE;
    Deleted => 200 "Release deleted";
}

/// What receiving a form takes: a multipart body is read by whoever receives it, streaming.
fn received_elsewhere() -> ApiError {
    ApiError::internal()
}

impl<F: ReleaseForm> Operation for CreateRelease<F> {
    type Output = ReleaseView;
    const SCOPE: Option<Scope> = WRITE;
}

impl<F: ReleaseForm> DevOperation for CreateRelease<F> {
    const NAME: &'static str = "create_release";
    const METHOD: Method = Method::Post;
    const PATH: &'static str = "releases";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Form;
    const STATUS: u16 = 201;
    type Ids = ();
    type Answer = ReleaseView;

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
    type Output = ReleaseView;
    const SCOPE: Option<Scope> = WRITE;
}

impl<F: ReleaseForm> DevOperation for UpdateRelease<F> {
    const NAME: &'static str = "update_release";
    const METHOD: Method = Method::Put;
    const PATH: &'static str = "releases/{releaseId}";
    const QUERY: Query = Query::None;
    const BODY: Body = Body::Form;
    const STATUS: u16 = 200;
    type Ids = (ReleaseId,);
    type Answer = ReleaseView;

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
