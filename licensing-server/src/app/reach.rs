//! What a caller may reach of its team's records: every record, or (a key restricted to
//! products) those tied to its products. Operations ask it once per record they read or change
//! (`cx.read::<License>(id)`, `cx.write::<License>(id)`, `cx.reach().may_change(&new)`) and
//! once per list (`cx.reach().bound(&mut query)`); no operation compares product lists itself.
//! A new kind of caller (a customer in the portal, a payment integration) is a new reach, and
//! every operation keeps to it.

use std::future::Future;

use licensing_core::api::requests::AuditQuery;
use licensing_core::api::requests::{
    LicenseListQuery, NewLicense, ProductListQuery, ReleaseInput, ReleaseListQuery,
};
use licensing_core::model::{
    AuditEntry, License, Product, ProductRestriction, Release, Scopes, TopProduct, WebhookEndpoint,
    cannot_grant, covers_products, sees_products,
};
use licensing_core::store::{Entity, LicenseStore, ProductStore, ReleaseStore, StoreError};
use licensing_core::{ApiError, LicenseId, ProductId, ReleaseId};

use super::{Caller, Cx};

/// A record (or a record to be) tied to products.
pub(crate) trait Tied {
    /// Its products.
    fn products(&self) -> &[ProductId];
}

/// A record an operation looks up by id: 404 when it does not exist or is out of reach.
pub(crate) trait Aggregate: Tied + Sized + Send {
    /// Its id.
    type Id: Send;
    /// The refusal of one that is not there (or not for this caller to see).
    fn not_found() -> ApiError;
    /// It, from the store.
    fn load(cx: &Cx, id: Self::Id)
    -> impl Future<Output = Result<Option<Self>, StoreError>> + Send;
}

/// What a caller may reach.
#[derive(Clone, Copy)]
pub(crate) struct Reach<'a>(&'a Caller);

impl<'a> Reach<'a> {
    /// `caller`'s reach.
    pub(crate) fn of(caller: &'a Caller) -> Self {
        Self(caller)
    }

    /// Whether it reaches every record of the team.
    pub(crate) fn is_whole_team(self) -> bool {
        self.0.product_ids.is_none()
    }

    /// 403 unless it reaches every record of the team (`what`: what the others may not do).
    pub(crate) fn must_be_whole_team(self, what: &str) -> Result<(), ApiError> {
        if self.is_whole_team() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "This API key is restricted to some products: {what}"
            )))
        }
    }

    /// Whether it sees `record`.
    pub(crate) fn sees(self, record: &impl Tied) -> bool {
        sees_products(&self.0.product_ids, record.products())
    }

    /// `record`, 404 unless it exists and is in reach.
    pub(crate) fn seen<A: Aggregate>(self, record: Option<A>) -> Result<A, ApiError> {
        record.filter(|r| self.sees(r)).ok_or_else(A::not_found)
    }

    /// 403 unless it may change `record` (or make it, or make a record into it): all of its
    /// products in reach.
    pub(crate) fn may_change(self, record: &impl Tied) -> Result<(), ApiError> {
        if covers_products(&self.0.product_ids, record.products()) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "This API key is restricted to some products: it can only change records whose products are all among them",
            ))
        }
    }

    /// The items of `items` in reach.
    pub(crate) fn retain<T: Tied>(self, items: &mut Vec<T>) {
        items.retain(|item| self.sees(item));
    }

    /// Keeps `query` to what is in reach; `false` when nothing in reach can match it.
    pub(crate) fn bound<Q: Bounded>(self, query: &mut Q) -> bool {
        match &self.0.product_ids {
            None => true,
            Some(products) => query.bound_to(products),
        }
    }

    /// Whether it may manage webhook endpoint `e`: only when it could have created it, the
    /// endpoint's scopes and products within its own (an endpoint receives what its creator
    /// could read, so its delivery log is no more than that either).
    pub(crate) fn manages(self, e: &WebhookEndpoint) -> bool {
        let c = self.0;
        cannot_grant(c.name, &c.scopes, &c.product_ids, &e.scopes, &e.product_ids).is_none()
    }

    /// Why it may not create (or revoke) an API key with `scopes` and `products`, if it may
    /// not: a key hands on no more than its maker has.
    pub(crate) fn cannot_grant(
        self,
        scopes: &Scopes,
        products: &ProductRestriction,
    ) -> Option<String> {
        let c = self.0;
        cannot_grant(c.name, &c.scopes, &c.product_ids, scopes, products)
    }

    /// What it may read of audit entry `e`: none of an entry about other products, and the
    /// values of records it may not read withheld.
    pub(crate) fn entry(self, e: AuditEntry) -> Option<AuditEntry> {
        e.seen_by(&self.0.scopes, &self.0.product_ids)
    }
}

/// A list's query, kept to a restriction's products.
pub(crate) trait Bounded {
    /// Keeps it to `products`; `false` when nothing can match.
    fn bound_to(&mut self, products: &[ProductId]) -> bool;
}

impl Bounded for LicenseListQuery {
    fn bound_to(&mut self, products: &[ProductId]) -> bool {
        let wanted = &mut self.filter.product_ids;
        if wanted.is_empty() {
            wanted.extend_from_slice(products);
            return true;
        }
        wanted.retain(|p| products.contains(p));
        !wanted.is_empty()
    }
}

impl Bounded for ProductListQuery {
    fn bound_to(&mut self, products: &[ProductId]) -> bool {
        self.filter.within = Some(products.to_vec());
        true
    }
}

impl Bounded for ReleaseListQuery {
    fn bound_to(&mut self, products: &[ProductId]) -> bool {
        self.filter.within_products = Some(products.to_vec());
        true
    }
}

impl Bounded for AuditQuery {
    fn bound_to(&mut self, products: &[ProductId]) -> bool {
        // Entries about other products are left out by the store, so that pages and counts
        // are right.
        self.products = Some(products.to_vec());
        true
    }
}

impl Tied for License {
    fn products(&self) -> &[ProductId] {
        &self.product_ids
    }
}

impl Tied for NewLicense {
    fn products(&self) -> &[ProductId] {
        &self.product_ids
    }
}

impl Tied for Product {
    fn products(&self) -> &[ProductId] {
        std::slice::from_ref(&self.id)
    }
}

impl Tied for TopProduct {
    fn products(&self) -> &[ProductId] {
        std::slice::from_ref(&self.id)
    }
}

impl Tied for Release {
    fn products(&self) -> &[ProductId] {
        std::slice::from_ref(&self.product_id)
    }
}

impl Tied for ReleaseInput {
    fn products(&self) -> &[ProductId] {
        std::slice::from_ref(&self.product_id)
    }
}

impl Aggregate for License {
    type Id = LicenseId;

    fn not_found() -> ApiError {
        StoreError::NotFound(Entity::License).into()
    }

    async fn load(cx: &Cx, id: LicenseId) -> Result<Option<Self>, StoreError> {
        cx.state.store.get_license(cx.team, id).await
    }
}

impl Aggregate for Product {
    type Id = ProductId;

    fn not_found() -> ApiError {
        StoreError::NotFound(Entity::Product).into()
    }

    async fn load(cx: &Cx, id: ProductId) -> Result<Option<Self>, StoreError> {
        cx.state.store.get_product(cx.team, id).await
    }
}

impl Aggregate for Release {
    type Id = ReleaseId;

    fn not_found() -> ApiError {
        StoreError::NotFound(Entity::Release).into()
    }

    async fn load(cx: &Cx, id: ReleaseId) -> Result<Option<Self>, StoreError> {
        cx.state.store.get_release(cx.team, id).await
    }
}

impl Cx {
    /// What the caller may reach.
    pub(crate) fn reach(&self) -> Reach<'_> {
        Reach::of(&self.caller)
    }

    /// Record `id` of the team, 404 unless it exists and the caller may see it.
    pub(crate) async fn read<A: Aggregate>(&self, id: A::Id) -> Result<A, ApiError> {
        self.reach().seen(A::load(self, id).await?)
    }

    /// Record `id` of the team, 404 unless the caller may see it and 403 unless it may change
    /// it.
    pub(crate) async fn write<A: Aggregate>(&self, id: A::Id) -> Result<A, ApiError> {
        let record = self.read::<A>(id).await?;
        self.reach().may_change(&record)?;
        Ok(record)
    }

    /// 404 unless the caller may see record `id` (read only for a caller whose reach is not
    /// the whole team: otherwise the store finds out whether it exists as it answers).
    pub(crate) async fn reachable<A: Aggregate>(&self, id: A::Id) -> Result<(), ApiError> {
        if !self.reach().is_whole_team() {
            self.read::<A>(id).await?;
        }
        Ok(())
    }
}
