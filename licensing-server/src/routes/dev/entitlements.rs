//! (ext) Entitlements over HTTP: each operation from its request, and its answer.

use licensing_core::EntitlementId;
use licensing_core::api::EntitlementPage;
use licensing_core::api::requests::EntitlementListQuery;

use crate::app::entitlements::{
    CreateEntitlement, DeleteEntitlement, GetEntitlement, ListEntitlements, UpdateEntitlement,
};

with_body!(CreateEntitlement() => 201, "Entitlement created");
listed!(ListEntitlements() query EntitlementListQuery::parse => EntitlementPage { entitlements }, "Entitlements retrieved");
by_ids!(GetEntitlement(id: EntitlementId) => 200, "Entitlement retrieved");
with_body!(UpdateEntitlement(id: EntitlementId) => 200, "Entitlement updated");
by_ids!(DeleteEntitlement(id: EntitlementId) => 200, "Entitlement deleted: no license or product grants it any more");
