//! (ext) Policies: create, list with search, read, update (every license on the policy follows at
//! once), delete (refused while licenses use it, unless they are detached with its terms). A
//! policy is the whole team's: only a caller that reaches every product may change one.

pub(crate) use licensing_core::operations::policies::{
    CreatePolicy, DeletePolicy, GetPolicy, ListPolicies, UpdatePolicy,
};

use licensing_core::api::PolicyDeleted;
use licensing_core::model::{Action, License, Policy};
use licensing_core::store::{
    Entity, Page, PolicyStore, ProductStore, StoreError, compare_policies, page_of, policy_matches,
};
use licensing_core::{ApiError, PolicyId, ProductId};

use super::{Cx, Operation, Run};
use licensing_core::model::{Resource, Scope};

/// Every policy of the team, oldest first (the dashboard's lists and forms: a team has at most
/// a thousand).
pub(crate) struct AllPolicies;

impl Operation for AllPolicies {
    const NAME: &'static str = "all_policies";
    type Output = Vec<Policy>;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Policies));
    const READ_ONLY: bool = true;
}

impl Run for AllPolicies {
    async fn run(self, cx: &Cx) -> Result<Vec<Policy>, ApiError> {
        Ok(cx.state.store.list_policies(cx.team).await?)
    }
}

/// How many licenses are on a policy (what a change of it changes).
pub(crate) struct PolicyLicenses(pub(crate) PolicyId);

impl Operation for PolicyLicenses {
    const NAME: &'static str = "policy_licenses";
    type Output = u64;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Policies));
    const READ_ONLY: bool = true;
}

impl Run for PolicyLicenses {
    async fn run(self, cx: &Cx) -> Result<u64, ApiError> {
        lookup(cx, self.0).await?;
        Ok(cx
            .state
            .store
            .count_policy_licenses(cx.team, self.0)
            .await?)
    }
}

const WHOLE_TEAM: &str = "a policy applies to every license on it, whatever its products";

impl Run for CreatePolicy {
    async fn run(self, cx: &Cx) -> Result<Policy, ApiError> {
        let policy = self.0.validate(true)?.into_new(cx.team, cx.now)?;
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        require_references(cx, &policy).await?;
        let journal = cx.created(Action::PolicyCreated, policy.id, &policy);
        cx.state.store.create_policy(&policy, &journal).await?;
        Ok(policy)
    }
}

impl Run for ListPolicies {
    async fn run(self, cx: &Cx) -> Result<Page<Policy>, ApiError> {
        let query = self.0;
        // A team has at most MAX_POLICIES: the list is read whole and paged here.
        let all = cx.state.store.list_policies(cx.team).await?;
        let matching = all
            .into_iter()
            .filter(|p| policy_matches(p, query.filter.as_ref()))
            .collect();
        Ok(page_of(matching, &query.paging, |a, b| {
            compare_policies(a, b, query.sort, query.paging.direction)
        }))
    }
}

impl Run for GetPolicy {
    async fn run(self, cx: &Cx) -> Result<Policy, ApiError> {
        lookup(cx, self.0).await
    }
}

impl Run for UpdatePolicy {
    async fn run(self, cx: &Cx) -> Result<Policy, ApiError> {
        // The body is checked (400) before the policy is looked up (404).
        let input = self.1.validate(false)?;
        let existing = lookup(cx, self.0).await?;
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let updated = input.apply_to(&existing, cx.now)?;
        require_references(cx, &updated).await?;
        let journal = cx.change(
            Action::PolicyUpdated,
            updated.id,
            Some(&existing),
            Some(&updated),
        );
        cx.state.store.update_policy(&updated, &journal).await?;
        Ok(updated)
    }
}

impl Run for DeletePolicy {
    async fn run(self, cx: &Cx) -> Result<PolicyDeleted, ApiError> {
        let policy = lookup(cx, self.0).await?;
        cx.reach().must_be_whole_team(WHOLE_TEAM)?;
        let journal = cx.change(Action::PolicyDeleted, policy.id, Some(&policy), None);
        let detached = cx
            .state
            .store
            .delete_policy(cx.team, policy.id, self.1.detach, &journal)
            .await?;
        Ok(PolicyDeleted {
            id: policy.id,
            deleted: true,
            detached_licenses: detached,
        })
    }
}

/// The policy `id` of the team (404 when there is none).
pub(crate) async fn lookup(cx: &Cx, id: PolicyId) -> Result<Policy, ApiError> {
    Ok(cx
        .state
        .store
        .get_policy(cx.team, id)
        .await?
        .ok_or(StoreError::NotFound(Entity::Policy))?)
}

/// 404 unless every product and entitlement the policy names is the team's.
async fn require_references(cx: &Cx, policy: &Policy) -> Result<(), ApiError> {
    super::entitlements::require(cx, &policy.entitlement_ids).await?;
    require_products(cx, &policy.product_ids).await
}

/// 404 `PRODUCT_NOT_FOUND` unless every id names a product of the team.
pub(crate) async fn require_products(cx: &Cx, ids: &[ProductId]) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut wanted = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let found = cx.state.store.get_products(cx.team, &wanted).await?;
    if found.len() == wanted.len() {
        Ok(())
    } else {
        Err(StoreError::NotFound(Entity::Product).into())
    }
}

/// `license` as it applies: with its policy's terms, live (what every view shows).
pub(crate) async fn applied(cx: &Cx, license: License) -> Result<License, ApiError> {
    if license.policy_id.is_none() {
        return Ok(license);
    }
    let context = super::client::team_context(&cx.state, cx.team).await?;
    Ok(match context.policies.effective(&license) {
        std::borrow::Cow::Owned(effective) => effective,
        std::borrow::Cow::Borrowed(_) => license,
    })
}
