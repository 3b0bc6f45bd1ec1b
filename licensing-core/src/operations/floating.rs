//! (ext) A license's live floating sessions: each holds one of its seats.

use crate::api::SessionPage;
use crate::api::requests::Paging;
use crate::model::{LicenseSession, Resource, Scope};
use crate::store::Page;
use crate::{LicenseId, LicenseSessionId};

use super::declare;
use super::doc::*;

/// One page of the live sessions of a license, newest first.
pub struct ListSessions(pub LicenseId, pub Paging);

/// Revokes a live session of a license: its seat is free at once.
pub struct RevokeSession(pub LicenseId, pub LicenseSessionId);

declare! {
    ListSessions(license: LicenseId) by query Paging;
    Get "licenses/id/{licenseId}/sessions" "list_sessions" Some(Scope::read(Resource::Licenses));
    Page<LicenseSession> => 200 SessionPage: |page| page.into(), "Sessions retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The license's live floating sessions (started or heartbeated within their TTL, not\nended or revoked; a seat borrowed by a checkout until its file expires), one page, newest\nfirst.",
        description: "",
        params: &[
            LICENSE_ID,
            Param::query("page", "1-based page (default 1)", Kind::Integer(0)),
            PAGE_SIZE,
            Param::query("sortDirection", "`desc` (newest first, the default) or `asc`, by start", Kind::Text),
        ],
        body: "",
        success: "One page of live sessions",
        refusals: &[REFUSED, OTHER_TEAM, NO_LICENSE],
    };

    RevokeSession(license: LicenseId, id: LicenseSessionId) by ids;
    Delete "licenses/id/{licenseId}/sessions/{sessionId}" "revoke_session" Some(Scope::LICENSE_DEVICES);
    LicenseSession => 200 "Session revoked";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Revoke a live floating session: its seat is free at once, and the application's next\nheartbeat with it is answered 404 `SESSION_NOT_FOUND`. Scope `licenses:devices`; audited,\nevent `session.revoked`.",
        description: "",
        params: &[
            LICENSE_ID,
            Param::path("sessionId", "The session", Kind::Uuid),
        ],
        body: "",
        success: "Revoked: the session as it was",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "LICENSE_NOT_FOUND, or SESSION_NOT_FOUND (unknown, ended, revoked or expired)")]],
    };
}
