//! What a caller may reach of its team's records: every record (a staff member, an
//! unrestricted key, an integration), those tied to some products (a key restricted to
//! products), or a customer's own licenses (a customer in the portal). Operations ask it once per record they read or change
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
use licensing_core::{ApiError, CustomerId, LicenseId, ProductId, ReleaseId};

use super::{Caller, Cx};

/// A record (or a record to be) tied to products, and to customers.
pub(crate) trait Tied {
    /// Its products.
    fn products(&self) -> &[ProductId];
    /// Its customers (a license's; none for other records).
    fn customers(&self) -> &[CustomerId] {
        &[]
    }
    /// Its id, when it is a license.
    fn license(&self) -> Option<LicenseId> {
        None
    }
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
    /// It as the caller's reach judges it: itself, or (a license) with the products its policy
    /// gives it.
    fn judged<'a>(
        &'a self,
        cx: &'a Cx,
    ) -> impl Future<Output = Result<std::borrow::Cow<'a, Self>, ApiError>> + Send
    where
        Self: Clone + Sync,
    {
        let _ = cx;
        async move { Ok(std::borrow::Cow::Borrowed(self)) }
    }
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
        self.0.product_ids.is_none() && self.0.customer.is_none() && self.0.portal.is_none()
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

    /// Whether it sees `record`: a customer their own licenses only; a key restricted to
    /// products the records of at least one of them.
    pub(crate) fn sees(self, record: &impl Tied) -> bool {
        if let Some(licenses) = &self.0.portal {
            return record.license().is_some_and(|l| licenses.contains(&l));
        }
        if let Some(customer) = self.0.customer {
            return record.customers().contains(&customer);
        }
        sees_products(&self.0.product_ids, record.products())
    }

    /// 403 unless it may change `record` (or make it, or make a record into it): all of its
    /// products in reach.
    pub(crate) fn may_change(self, record: &impl Tied) -> Result<(), ApiError> {
        if self.0.portal.is_some() {
            return if self.sees(record) {
                Ok(())
            } else {
                Err(ApiError::forbidden(
                    "A customer can only change their own licenses",
                ))
            };
        }
        if let Some(customer) = self.0.customer {
            return if record.customers().contains(&customer) {
                Ok(())
            } else {
                Err(ApiError::forbidden(
                    "A customer can only change their own licenses",
                ))
            };
        }
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
        if self.0.portal.is_some() {
            // A portal session reads its licenses one by one.
            return false;
        }
        if let Some(customer) = self.0.customer {
            return query.bound_to(Limit::Customer(customer));
        }
        match &self.0.product_ids {
            None => true,
            Some(products) => query.bound_to(Limit::Products(products)),
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

/// What a reach short of the whole team keeps a list to.
#[derive(Clone, Copy)]
pub(crate) enum Limit<'a> {
    /// The records of these products.
    Products(&'a [ProductId]),
    /// A customer's own licenses.
    Customer(CustomerId),
}

/// A list's query, kept to a reach.
pub(crate) trait Bounded {
    /// Keeps it to `limit`; `false` when nothing can match.
    fn bound_to(&mut self, limit: Limit<'_>) -> bool;
}

impl Bounded for LicenseListQuery {
    fn bound_to(&mut self, limit: Limit<'_>) -> bool {
        let products = match limit {
            Limit::Products(products) => products,
            Limit::Customer(customer) => {
                let wanted = &mut self.filter.customer_ids;
                if wanted.is_empty() {
                    wanted.push(customer);
                } else {
                    wanted.retain(|c| *c == customer);
                }
                return !wanted.is_empty();
            }
        };
        let wanted = &mut self.filter.product_ids;
        if wanted.is_empty() {
            wanted.extend_from_slice(products);
            return true;
        }
        wanted.retain(|p| products.contains(p));
        !wanted.is_empty()
    }
}

/// Lists of records of products, bounded by their filter's field `$within` of product ids.
macro_rules! bounded_by_products {
    ($($query:ty: $within:ident),* $(,)?) => {$(
        impl Bounded for $query {
            fn bound_to(&mut self, limit: Limit<'_>) -> bool {
                match limit {
                    Limit::Products(products) => {
                        self.filter.$within = Some(products.to_vec());
                        true
                    }
                    // A customer reaches the products of their licenses through the licenses.
                    Limit::Customer(_) => false,
                }
            }
        }
    )*};
}

bounded_by_products!(ProductListQuery: within, ReleaseListQuery: within_products);

impl Bounded for AuditQuery {
    fn bound_to(&mut self, limit: Limit<'_>) -> bool {
        match limit {
            // Entries about other products are left out by the store, so that pages and counts
            // are right.
            Limit::Products(products) => {
                self.products = Some(products.to_vec());
                true
            }
            // The audit log is the vendor's.
            Limit::Customer(_) => false,
        }
    }
}

impl Tied for License {
    fn products(&self) -> &[ProductId] {
        &self.product_ids
    }

    fn customers(&self) -> &[CustomerId] {
        &self.customer_ids
    }

    fn license(&self) -> Option<LicenseId> {
        Some(self.id)
    }
}

impl Tied for NewLicense {
    fn products(&self) -> &[ProductId] {
        &self.product_ids
    }

    fn customers(&self) -> &[CustomerId] {
        &self.customer_ids
    }
}

/// Records tied to one product, named by their field `$field`.
macro_rules! tied_to_one {
    ($($record:ty: $field:ident),* $(,)?) => {$(
        impl Tied for $record {
            fn products(&self) -> &[ProductId] {
                std::slice::from_ref(&self.$field)
            }
        }
    )*};
}

tied_to_one!(Product: id, TopProduct: id, Release: product_id, ReleaseInput: product_id);

/// Records looked up by id, each `$record` (its `Entity` of the same name) with its `$id`, read
/// by the store's `$get`.
macro_rules! aggregates {
    ($($record:ident: $id:ty, $get:ident;)*) => {$(
        impl Aggregate for $record {
            type Id = $id;

            fn not_found() -> ApiError {
                StoreError::NotFound(Entity::$record).into()
            }

            async fn load(cx: &Cx, id: $id) -> Result<Option<Self>, StoreError> {
                cx.state.store.$get(cx.team, id).await
            }
        }
    )*};
}

aggregates! {
    Product: ProductId, get_product;
    Release: ReleaseId, get_release;
}

impl Aggregate for License {
    type Id = LicenseId;

    fn not_found() -> ApiError {
        StoreError::NotFound(Entity::License).into()
    }

    async fn load(cx: &Cx, id: LicenseId) -> Result<Option<Self>, StoreError> {
        cx.state.store.get_license(cx.team, id).await
    }

    /// A license on a policy is in reach through its policy's products too.
    async fn judged<'a>(&'a self, cx: &'a Cx) -> Result<std::borrow::Cow<'a, Self>, ApiError> {
        if self.policy_id.is_none() || cx.reach().is_whole_team() {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        Ok(std::borrow::Cow::Owned(
            super::policies::applied(cx, self.clone()).await?,
        ))
    }
}

impl Cx {
    /// What the caller may reach.
    pub(crate) fn reach(&self) -> Reach<'_> {
        Reach::of(&self.caller)
    }

    /// Record `id` of the team, 404 unless it exists and the caller may see it.
    pub(crate) async fn read<A: Aggregate + Clone + Sync>(&self, id: A::Id) -> Result<A, ApiError> {
        let record = A::load(self, id).await?.ok_or_else(A::not_found)?;
        self.seen(record).await
    }

    /// `record`, 404 unless the caller may see it (as its reach judges it).
    pub(crate) async fn seen<A: Aggregate + Clone + Sync>(&self, record: A) -> Result<A, ApiError> {
        if self.reach().is_whole_team() || self.reach().sees(&*record.judged(self).await?) {
            Ok(record)
        } else {
            Err(A::not_found())
        }
    }

    /// Record `id` of the team, 404 unless the caller may see it and 403 unless it may change
    /// it.
    pub(crate) async fn write<A: Aggregate + Clone + Sync>(
        &self,
        id: A::Id,
    ) -> Result<A, ApiError> {
        let record = self.read::<A>(id).await?;
        self.reach().may_change(&*record.judged(self).await?)?;
        Ok(record)
    }

    /// 404 unless the caller may see record `id` (read only for a caller whose reach is not
    /// the whole team: otherwise the store finds out whether it exists as it answers).
    pub(crate) async fn reachable<A: Aggregate + Clone + Sync>(
        &self,
        id: A::Id,
    ) -> Result<(), ApiError> {
        if !self.reach().is_whole_team() {
            self.read::<A>(id).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::ResultCode;
    use licensing_core::api::requests::{
        AuditQuery, CustomerBody, LicenseCreate, LicenseListQuery, Patch,
    };
    use licensing_core::model::ActorKind;
    use licensing_core::store::AuditStore;

    use crate::app::Caller;
    use crate::app::customers::CreateCustomer;
    use crate::app::licenses::{CreateLicense, GetLicense, ListLicenses};

    /// The two callers without a door yet perform the same operations as staff: an integration
    /// reaches the whole team (and the audit log names it), a customer their own licenses.
    #[tokio::test]
    async fn a_customer_reaches_their_own_licenses_and_an_integration_the_team() {
        let shop = crate::app::Shop::open().await;
        let (state, team) = (shop.state(), shop.team);
        let as_caller = |caller: Caller| shop.as_caller(caller);

        let stripe = as_caller(Caller::integration("stripe"));
        let mut customers = Vec::new();
        for email in ["jane@example.com", "john@example.com"] {
            let body = CustomerBody {
                email: Patch::Value(email.into()),
                ..CustomerBody::default()
            };
            customers.push(stripe.perform(CreateCustomer(body)).await.unwrap());
        }
        let mut licenses = Vec::new();
        for customer in &customers {
            let body = LicenseCreate {
                expiration_type: Some("NEVER".into()),
                customer_ids: Some(vec![customer.id.to_string()]),
                ..LicenseCreate::default()
            };
            licenses.push(stripe.perform(CreateLicense(body)).await.unwrap().license);
        }
        let (jane, john) = (&customers[0], &customers[1]);
        let log = state
            .store
            .list_audit(team, &AuditQuery::default())
            .await
            .unwrap();
        // The team's creation, then the integration's four writes, named after it.
        let by_stripe = log.items.iter().filter(|e| {
            e.actor.kind == ActorKind::Integration && e.actor.name.as_deref() == Some("stripe")
        });
        assert_eq!((log.items.len(), by_stripe.count()), (5, 4));

        let as_jane = as_caller(Caller::customer(
            jane.id,
            jane.email.as_ref().map(|e| e.as_str()),
        ));
        let own = as_jane.perform(GetLicense(licenses[0].id)).await.unwrap();
        assert_eq!(own.license.customer_ids, [jane.id]);
        let others = as_jane
            .perform(GetLicense(licenses[1].id))
            .await
            .unwrap_err();
        assert_eq!(
            others.code(),
            ResultCode::LicenseNotFound,
            "John's is out of reach"
        );
        let listed = as_jane
            .perform(ListLicenses(LicenseListQuery::default()))
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 1);
        assert_eq!(listed.items[0].id, licenses[0].id);
        let mut johns = LicenseListQuery::default();
        johns.filter.customer_ids = vec![john.id];
        assert!(
            as_jane
                .perform(ListLicenses(johns))
                .await
                .unwrap()
                .items
                .is_empty()
        );
        let body = LicenseCreate {
            expiration_type: Some("NEVER".into()),
            ..LicenseCreate::default()
        };
        let refused = as_jane.perform(CreateLicense(body)).await.unwrap_err();
        assert_eq!(
            refused.code(),
            ResultCode::Forbidden,
            "a customer creates nothing"
        );
    }
}
