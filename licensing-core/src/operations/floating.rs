//! (ext) A license's live floating sessions: each holds one of its seats.

use crate::api::SessionPage;
use crate::api::requests::Paging;
use crate::model::{LicenseSession, Resource, Scope};
use crate::store::Page;
use crate::{LicenseId, LicenseSessionId};

use super::declare;

/// One page of the live sessions of a license, newest first.
pub struct ListSessions(pub LicenseId, pub Paging);

/// Revokes a live session of a license: its seat is free at once.
pub struct RevokeSession(pub LicenseId, pub LicenseSessionId);

declare! {
    ListSessions(license: LicenseId) by query Paging;
    Get "licenses/id/{licenseId}/sessions" "list_sessions" Some(Scope::read(Resource::Licenses));
    Page<LicenseSession> => 200 SessionPage: |page| page.into(), "Sessions retrieved";

    RevokeSession(license: LicenseId, id: LicenseSessionId) by ids;
    Delete "licenses/id/{licenseId}/sessions/{sessionId}" "revoke_session" Some(Scope::LICENSE_DEVICES);
    LicenseSession => 200 "Session revoked";
}
