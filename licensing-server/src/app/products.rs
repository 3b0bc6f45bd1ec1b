//! (ext) Products and their branches.

use licensing_core::api::Deleted;
use licensing_core::api::requests::{BranchBody, ProductBody, ProductListQuery};
use licensing_core::model::{Action, Branch, Product, Resource, Scope};
use licensing_core::store::{Entity, Page, ProductStore, StoreError};
use licensing_core::{ApiError, BranchId, ProductId};

use super::{Cx, Operation};

/// Creates a product (not for a key restricted to products).
pub(crate) struct CreateProduct(pub(crate) ProductBody);

/// One page of the team's products (a restricted key's own only).
pub(crate) struct ListProducts(pub(crate) ProductListQuery);

/// A product.
pub(crate) struct GetProduct(pub(crate) ProductId);

/// Changes a product: members left out keep their value.
pub(crate) struct UpdateProduct(pub(crate) ProductId, pub(crate) ProductBody);

/// Deletes a product with its releases and branches (its licenses lose it).
pub(crate) struct DeleteProduct(pub(crate) ProductId);

/// Creates a branch of a product.
pub(crate) struct CreateBranch(pub(crate) ProductId, pub(crate) BranchBody);

/// A product's branches.
pub(crate) struct ListBranches(pub(crate) ProductId);

/// Deletes a branch with its releases.
pub(crate) struct DeleteBranch(pub(crate) ProductId, pub(crate) BranchId);

const READ: Option<Scope> = Some(Scope::read(Resource::Products));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Products));

impl Operation for CreateProduct {
    type Output = Product;
    const SCOPE: Option<Scope> = WRITE;

    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        let input = self.0.validate(true)?;
        if cx.products().is_some() {
            return Err(ApiError::forbidden(
                "This API key is restricted to some products: it cannot create products",
            ));
        }
        let product = input.into_new(cx.team, cx.user(), cx.now);
        super::entitlements::require(cx, &product.entitlement_ids).await?;
        let journal = cx.created(Action::ProductCreated, product.id, &product);
        cx.state.store.create_product(&product, &journal).await?;
        // The client API reads the entitlements products grant from the team's context.
        cx.state.contexts.invalidate(cx.team);
        Ok(product)
    }
}

impl Operation for ListProducts {
    type Output = Page<Product>;
    const SCOPE: Option<Scope> = READ;
    const READ_ONLY: bool = true;

    async fn run(self, cx: &Cx) -> Result<Page<Product>, ApiError> {
        let mut query = self.0;
        query.filter.within.clone_from(cx.products());
        Ok(cx.state.store.list_products(cx.team, &query).await?)
    }
}

impl Operation for GetProduct {
    type Output = Product;
    const SCOPE: Option<Scope> = READ;
    const READ_ONLY: bool = true;

    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        visible(cx, self.0).await
    }
}

impl Operation for UpdateProduct {
    type Output = Product;
    const SCOPE: Option<Scope> = WRITE;

    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        let input = self.1.validate(false)?;
        let existing = visible(cx, self.0).await?;
        let updated = input.apply_to(&existing, cx.now);
        if updated.entitlement_ids != existing.entitlement_ids {
            super::entitlements::require(cx, &updated.entitlement_ids).await?;
        }
        cx.state
            .store
            .update_product(
                &updated,
                &cx.change(
                    Action::ProductUpdated,
                    updated.id,
                    Some(&existing),
                    Some(&updated),
                ),
            )
            .await?;
        cx.state.contexts.invalidate(cx.team);
        Ok(updated)
    }
}

impl Operation for DeleteProduct {
    type Output = Deleted;
    const SCOPE: Option<Scope> = WRITE;

    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let product = visible(cx, self.0).await?;
        let releases = cx
            .state
            .store
            .delete_product(
                cx.team,
                product.id,
                &cx.change(Action::ProductDeleted, product.id, Some(&product), None),
            )
            .await?;
        cx.state.files.remove_release_files(&releases).await;
        cx.state.contexts.invalidate(cx.team);
        Ok(Deleted {
            id: *product.id.as_uuid(),
            deleted: true,
        })
    }
}

impl Operation for CreateBranch {
    type Output = Branch;
    const SCOPE: Option<Scope> = WRITE;

    async fn run(self, cx: &Cx) -> Result<Branch, ApiError> {
        let name = self.1.validate()?;
        let product = visible(cx, self.0).await?;
        let branch = Branch {
            id: BranchId::new(),
            name,
            product_id: product.id,
            team_id: cx.team,
            created_at: cx.now,
            updated_at: cx.now,
        };
        let journal = cx.created(Action::BranchCreated, branch.id, &branch);
        cx.state.store.create_branch(&branch, &journal).await?;
        Ok(branch)
    }
}

impl Operation for ListBranches {
    type Output = Vec<Branch>;
    const SCOPE: Option<Scope> = READ;
    const READ_ONLY: bool = true;

    async fn run(self, cx: &Cx) -> Result<Vec<Branch>, ApiError> {
        let product = visible(cx, self.0).await?;
        Ok(cx.state.store.list_branches(cx.team, product.id).await?)
    }
}

impl Operation for DeleteBranch {
    type Output = Deleted;
    const SCOPE: Option<Scope> = WRITE;

    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let (product, branch) = (visible(cx, self.0).await?, self.1);
        let old = cx
            .state
            .store
            .list_branches(cx.team, product.id)
            .await?
            .into_iter()
            .find(|b| b.id == branch)
            .ok_or(StoreError::NotFound(Entity::Branch))?;
        let journal = cx.change(Action::BranchDeleted, branch, Some(&old), None);
        let releases = cx
            .state
            .store
            .delete_branch(cx.team, product.id, branch, &journal)
            .await?;
        cx.state.files.remove_release_files(&releases).await;
        cx.state.contexts.invalidate(cx.team);
        Ok(Deleted {
            id: *branch.as_uuid(),
            deleted: true,
        })
    }
}

/// Product `id` of the team, when the caller may see it (404 otherwise).
pub(crate) async fn visible(cx: &Cx, id: ProductId) -> Result<Product, ApiError> {
    Ok(cx
        .state
        .store
        .get_product(cx.team, id)
        .await?
        .filter(|p| cx.sees(&[p.id]))
        .ok_or(StoreError::NotFound(Entity::Product))?)
}
