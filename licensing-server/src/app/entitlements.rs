//! (ext) Entitlements: create, list with search, read, update (never the code), delete (which
//! detaches it from every license and product). Licenses and products name theirs by id; the
//! client API checks codes.

pub(crate) use licensing_core::operations::entitlements::{
    CreateEntitlement, DeleteEntitlement, GetEntitlement, ListEntitlements, UpdateEntitlement,
};

use licensing_core::api::Deleted;
use licensing_core::model::{Action, Entitlement, Resource, Scope};
use licensing_core::store::{
    EntitlementStore, Entity, Page, StoreError, compare_entitlements, entitlement_matches, page_of,
};
use licensing_core::{ApiError, EntitlementId};

use super::{Cx, Operation, Run};

/// Every entitlement of the team, oldest first (the dashboard's lists and forms: a team has at
/// most a thousand).
pub(crate) struct AllEntitlements;

impl Run for CreateEntitlement {
    async fn run(self, cx: &Cx) -> Result<Entitlement, ApiError> {
        let entitlement = self.0.validate(true)?.into_new(cx.team, cx.now);
        let journal = cx.created(Action::EntitlementCreated, entitlement.id, &entitlement);
        cx.state
            .store
            .create_entitlement(&entitlement, &journal)
            .await?;
        Ok(entitlement)
    }
}

impl Run for ListEntitlements {
    async fn run(self, cx: &Cx) -> Result<Page<Entitlement>, ApiError> {
        let query = self.0;
        // A team has at most MAX_ENTITLEMENTS: the list is read whole and paged here.
        let all = cx.state.store.list_entitlements(cx.team).await?;
        let matching = all
            .into_iter()
            .filter(|e| entitlement_matches(e, query.filter.as_ref()))
            .collect();
        Ok(page_of(matching, &query.paging, |a, b| {
            compare_entitlements(a, b, query.sort, query.paging.direction)
        }))
    }
}

impl Operation for AllEntitlements {
    const NAME: &'static str = "all_entitlements";
    type Output = Vec<Entitlement>;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Entitlements));
    const READ_ONLY: bool = true;
}

impl Run for AllEntitlements {
    async fn run(self, cx: &Cx) -> Result<Vec<Entitlement>, ApiError> {
        Ok(cx.state.store.list_entitlements(cx.team).await?)
    }
}

impl Run for GetEntitlement {
    async fn run(self, cx: &Cx) -> Result<Entitlement, ApiError> {
        lookup(cx, self.0).await
    }
}

impl Run for UpdateEntitlement {
    async fn run(self, cx: &Cx) -> Result<Entitlement, ApiError> {
        // The body is checked (400) before the entitlement is looked up (404).
        let input = self.1.validate(false)?;
        let existing = lookup(cx, self.0).await?;
        let updated = input.apply_to(&existing, cx.now)?;
        let journal = cx.change(
            Action::EntitlementUpdated,
            updated.id,
            Some(&existing),
            Some(&updated),
        );
        cx.state
            .store
            .update_entitlement(&updated, &journal)
            .await?;
        Ok(updated)
    }
}

impl Run for DeleteEntitlement {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let entitlement = lookup(cx, self.0).await?;
        let journal = cx.change(
            Action::EntitlementDeleted,
            entitlement.id,
            Some(&entitlement),
            None,
        );
        cx.state
            .store
            .delete_entitlement(cx.team, entitlement.id, &journal)
            .await?;
        Ok(Deleted {
            id: *entitlement.id.as_uuid(),
            deleted: true,
        })
    }
}

/// The entitlement `id` of the team (404 when there is none).
async fn lookup(cx: &Cx, id: EntitlementId) -> Result<Entitlement, ApiError> {
    Ok(cx
        .state
        .store
        .get_entitlement(cx.team, id)
        .await?
        .ok_or(StoreError::NotFound(Entity::Entitlement))?)
}

/// 404 unless every id names an entitlement of the team (what a license or product is given).
pub(crate) async fn require(cx: &Cx, ids: &[EntitlementId]) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Ok(());
    }
    let known = cx.state.store.list_entitlements(cx.team).await?;
    if ids.iter().all(|id| known.iter().any(|e| e.id == *id)) {
        Ok(())
    } else {
        Err(StoreError::NotFound(Entity::Entitlement).into())
    }
}
