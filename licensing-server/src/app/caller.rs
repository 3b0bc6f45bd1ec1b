//! Who performs an operation: what it may do, and how the audit log and refusals name it.

use licensing_core::model::{
    Actor, ApiKeyRecord, ProductRestriction, Resource, Scope, Scopes, StaffUser,
};
use licensing_core::{ApiError, CustomerId, Timestamp, UserId};

/// A caller: an API key, a staff member signed in to the dashboard, a customer in the portal,
/// or a payment provider's integration. Each performs the same operations, within its scopes
/// and its reach (see `reach.rs`).
#[derive(Clone, Debug)]
pub(crate) struct Caller {
    /// The audit log's actor.
    pub(crate) actor: Actor,
    /// The `createdByUserId` of what it creates.
    pub(crate) user: UserId,
    /// What it may do.
    pub(crate) scopes: Scopes,
    /// The products it is restricted to.
    pub(crate) product_ids: ProductRestriction,
    /// When it stops working (an API key's expiry); what it creates expires no later.
    pub(crate) expires_at: Option<Timestamp>,
    /// How a refusal names it ("this API key", "your role").
    pub(crate) name: &'static str,
    /// The staff member, when one acts through the dashboard.
    pub(crate) staff: Option<StaffUser>,
    /// The customer, when one acts through the portal: their own licenses are all it reaches.
    pub(crate) customer: Option<CustomerId>,
    /// The licenses a portal session sees (its grant's), when one acts through the portal: it
    /// reaches these only, and forgets devices within their policy's budget.
    pub(crate) portal: Option<Vec<licensing_core::LicenseId>>,
}

impl Caller {
    /// An API key.
    pub(crate) fn api_key(key: &ApiKeyRecord) -> Self {
        Self {
            actor: Actor::api_key(key.id, &key.name),
            user: key.id.into(),
            scopes: key.scopes.clone(),
            product_ids: key.product_ids.clone(),
            expires_at: key.expires_at,
            name: "this API key",
            staff: None,
            customer: None,
            portal: None,
        }
    }

    /// A staff member signed in to the dashboard: the scopes of their role, every product.
    pub(crate) fn staff(user: &StaffUser) -> Self {
        Self {
            actor: Actor::user(user.id, user.email.as_str()),
            user: user.id.into(),
            scopes: user.role.scopes(),
            product_ids: None,
            expires_at: None,
            name: "your role",
            staff: Some(user.clone()),
            customer: None,
            portal: None,
        }
    }

    /// A customer: reads their own licenses and what those grant (releases), and frees their
    /// own devices; the audit log names them `customer:<id>`.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the portal acts as `Caller::portal`")
    )]
    pub(crate) fn customer(id: CustomerId, email: Option<&str>) -> Self {
        let mut caller = Self::portal(Some(id), email, Vec::new());
        caller.portal = None;
        caller.scopes = Scopes::Only(
            [
                Scope::read(Resource::Licenses),
                Scope::LICENSE_DEVICES,
                Scope::read(Resource::Releases),
            ]
            .into(),
        );
        caller
    }

    /// A customer in the customer portal, seeing `licenses` (their session's): acts on those
    /// only, and forgets devices within their policy's budget of self-service resets. The
    /// audit log names them `customer:<id>` (the license's customer the session signed in as;
    /// none for a key session on a license without customers).
    pub(crate) fn portal(
        id: Option<CustomerId>,
        email: Option<&str>,
        licenses: Vec<licensing_core::LicenseId>,
    ) -> Self {
        Self {
            actor: match id {
                Some(id) => Actor::customer(id, email),
                None => Actor {
                    kind: licensing_core::model::ActorKind::Customer,
                    id: None,
                    name: Some(email.unwrap_or("license key holder").to_owned()),
                },
            },
            user: id.map_or(UserId::ADMIN, Into::into),
            // `licenses:write` issues license files of its licenses: the reach (the session's
            // licenses) and the portal's pages (which perform only a customer's operations)
            // keep it to that.
            scopes: Scopes::Only(
                [
                    Scope::write(Resource::Licenses),
                    Scope::LICENSE_DEVICES,
                    Scope::read(Resource::Releases),
                ]
                .into(),
            ),
            product_ids: None,
            expires_at: None,
            name: "a customer",
            staff: None,
            customer: id,
            portal: Some(licenses),
        }
    }
    /// A payment provider's integration (`"stripe"`, say): creates, renews and ends the team's
    /// licenses and customers as its events say; the audit log names it `integration:<provider>`.
    pub(crate) fn integration(provider: &'static str) -> Self {
        Self {
            actor: Actor::integration(provider),
            user: UserId::ADMIN,
            scopes: Scopes::Only(
                [
                    Scope::write(Resource::Licenses),
                    Scope::write(Resource::Customers),
                    Scope::read(Resource::Products),
                    Scope::read(Resource::Entitlements),
                ]
                .into(),
            ),
            product_ids: None,
            expires_at: None,
            name: "this integration",
            staff: None,
            customer: None,
            portal: None,
        }
    }

    /// Whether it has `scope`.
    pub(crate) fn allows(&self, scope: Scope) -> bool {
        self.scopes.allows(scope)
    }

    /// 403 unless it has `scope`, naming what is missing.
    pub(crate) fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.allows(scope) {
            return Ok(());
        }
        Err(ApiError::forbidden(if let Some(user) = &self.staff {
            // A person in the dashboard reads this: the permission in words.
            format!(
                "Your role ({}) may not {}: an owner or admin of your team can give you a role that may",
                user.role,
                scope.words()
            )
        } else {
            format!(
                "This API key lacks the scope {scope} (it has: {})",
                self.scopes.names().join(", ")
            )
        }))
    }
}
