//! (ext) Policies: named plans whose terms the licenses on them inherit live.

use crate::PolicyId;
use crate::api::requests::{DetachQuery, PolicyBody, PolicyListQuery};
use crate::api::{PolicyDeleted, PolicyPage};
use crate::model::{Policy, Resource, Scope};
use crate::store::Page;

use super::declare;
use super::doc::*;

/// Creates a policy.
pub struct CreatePolicy(pub PolicyBody);

/// One page of the team's policies.
pub struct ListPolicies(pub PolicyListQuery);

/// A policy.
pub struct GetPolicy(pub PolicyId);

/// Changes a policy: members left out keep their value, `null` clears one. Every license on it
/// follows at once.
pub struct UpdatePolicy(pub PolicyId, pub PolicyBody);

/// Deletes a policy: refused while licenses use it, unless `detach` writes its terms into them
/// first.
pub struct DeletePolicy(pub PolicyId, pub DetachQuery);

const READ: Option<Scope> = Some(Scope::read(Resource::Policies));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Policies));

declare! {
    CreatePolicy() by json PolicyBody;
    Post "policies" "create_policy" WRITE;
    Policy => 201 "Policy created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Create a policy: a named plan of license terms (products, entitlements, expiration,\nlimits, grace). Licenses created or updated with its `policyId` inherit every live term they do\nnot set themselves, live: a change of the policy applies to them at once.",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_PRODUCT, NO_ENTITLEMENT],
    };

    ListPolicies() by query PolicyListQuery;
    Get "policies" "list_policies" READ;
    Page<Policy> => 200 PolicyPage: |page| page.into(), "Policies retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) List policies, a page at a time.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of name, createdAt (default createdAt)", Kind::Text),
            Param::query("search", "1 to 255 characters: part of the name", Kind::Text),
        ],
        body: "",
        success: "A page of policies",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetPolicy(id: PolicyId) by ids;
    Get "policies/{policyId}" "get_policy" READ;
    Policy => 200 "Policy retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A policy.",
        description: "",
        params: &[
            POLICY_ID,
        ],
        body: "",
        success: "The policy",
        refusals: &[REFUSED, OTHER_TEAM, NO_POLICY],
    };

    UpdatePolicy(id: PolicyId) by json PolicyBody;
    Put "policies/{policyId}" "update_policy" WRITE;
    Policy => 200 "Policy updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Update a policy: members left out stay as they are, `null` clears one. Every license on\nthe policy follows at once, on every instance, except in what it overrides; expiration is\nnever changed for licenses already made.",
        description: "",
        params: &[
            POLICY_ID,
        ],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_POLICY, NO_PRODUCT, NO_ENTITLEMENT],
    };

    DeletePolicy(id: PolicyId) by query DetachQuery;
    Delete "policies/{policyId}" "delete_policy" WRITE;
    PolicyDeleted => 200 "Policy deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a policy. While licenses use it the answer is 409 naming how many, unless\n`?detach=true`: then each of its licenses is first taken off it with the terms that applied\nwritten into it, in the same step.",
        description: "",
        params: &[
            POLICY_ID,
            Param::query("detach", "true: take its licenses off it, its terms written into them", Kind::Text),
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_POLICY, crate::refusals![(409, "CONFLICT (licenses use the policy; see detach)")]],
    };
}
