//! (ext) Entitlements: features that licenses grant, directly or through their products.

use crate::EntitlementId;
use crate::api::requests::{EntitlementBody, EntitlementListQuery};
use crate::api::{Deleted, EntitlementPage};
use crate::model::{Entitlement, Resource, Scope};
use crate::store::Page;

use super::declare;
use super::doc::*;

/// Creates an entitlement.
pub struct CreateEntitlement(pub EntitlementBody);

/// One page of the team's entitlements.
pub struct ListEntitlements(pub EntitlementListQuery);

/// An entitlement.
pub struct GetEntitlement(pub EntitlementId);

/// Changes an entitlement's name or metadata: members left out keep their value.
pub struct UpdateEntitlement(pub EntitlementId, pub EntitlementBody);

/// Deletes an entitlement: no license or product grants it any more.
pub struct DeleteEntitlement(pub EntitlementId);

const READ: Option<Scope> = Some(Scope::read(Resource::Entitlements));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Entitlements));

declare! {
    CreateEntitlement() by json EntitlementBody;
    Post "entitlements" "create_entitlement" WRITE;
    Entitlement => 201 "Entitlement created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Create an entitlement: a feature licenses grant, directly (`entitlementIds` of a\nlicense) or through their products (`entitlementIds` of a product). Clients ask for its\n`code` in verify, heartbeat and checkout (`entitlements`).",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    ListEntitlements() by query EntitlementListQuery;
    Get "entitlements" "list_entitlements" READ;
    Page<Entitlement> => 200 EntitlementPage: |page| page.into(), "Entitlements retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) List entitlements, a page at a time.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of name, code, createdAt (default createdAt)", Kind::Text),
            Param::query("search", "1 to 255 characters: part of the name or the code", Kind::Text),
        ],
        body: "",
        success: "A page of entitlements",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetEntitlement(id: EntitlementId) by ids;
    Get "entitlements/{entitlementId}" "get_entitlement" READ;
    Entitlement => 200 "Entitlement retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) An entitlement.",
        description: "",
        params: &[
            ENTITLEMENT_ID,
        ],
        body: "",
        success: "The entitlement",
        refusals: &[REFUSED, OTHER_TEAM, NO_ENTITLEMENT],
    };

    UpdateEntitlement(id: EntitlementId) by json EntitlementBody;
    Put "entitlements/{entitlementId}" "update_entitlement" WRITE;
    Entitlement => 200 "Entitlement updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Update an entitlement's name or metadata; its `code` never changes (sending the same\ncode is allowed, another one is 400).",
        description: "",
        params: &[
            ENTITLEMENT_ID,
        ],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_ENTITLEMENT],
    };

    DeleteEntitlement(id: EntitlementId) by ids;
    Delete "entitlements/{entitlementId}" "delete_entitlement" WRITE;
    Deleted => 200 "Entitlement deleted: no license or product grants it any more";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete an entitlement: it is detached from every license and product at once.",
        description: "",
        params: &[
            ENTITLEMENT_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_ENTITLEMENT],
    };
}
