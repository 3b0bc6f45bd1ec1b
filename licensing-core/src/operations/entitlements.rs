//! (ext) Entitlements: features that licenses grant, directly or through their products.

use crate::EntitlementId;
use crate::api::requests::{EntitlementBody, EntitlementListQuery};
use crate::api::{Deleted, EntitlementPage};
use crate::model::{Entitlement, Resource, Scope};
use crate::store::Page;

use super::declare;

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

    ListEntitlements() by query EntitlementListQuery;
    Get "entitlements" "list_entitlements" READ;
    Page<Entitlement> => 200 EntitlementPage: |page| page.into(), "Entitlements retrieved";

    GetEntitlement(id: EntitlementId) by ids;
    Get "entitlements/{entitlementId}" "get_entitlement" READ;
    Entitlement => 200 "Entitlement retrieved";

    UpdateEntitlement(id: EntitlementId) by json EntitlementBody;
    Put "entitlements/{entitlementId}" "update_entitlement" WRITE;
    Entitlement => 200 "Entitlement updated";

    DeleteEntitlement(id: EntitlementId) by ids;
    Delete "entitlements/{entitlementId}" "delete_entitlement" WRITE;
    Deleted => 200 "Entitlement deleted: no license or product grants it any more";
}
