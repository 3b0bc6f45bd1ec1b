//! (ext) Products and their branches.

pub(crate) use licensing_core::operations::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    ListProducts, UpdateProduct,
};

use licensing_core::api::Deleted;
use licensing_core::model::{Action, Branch, Product};
use licensing_core::store::{Entity, Page, ProductStore, StoreError};
use licensing_core::{ApiError, BranchId};

use super::{Cx, Run};

impl Run for CreateProduct {
    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        let input = self.0.validate(true)?;
        cx.reach().must_be_whole_team("it cannot create products")?;
        let product = input.into_new(cx.team, cx.user(), cx.now);
        super::entitlements::require(cx, &product.entitlement_ids).await?;
        let journal = cx.created(Action::ProductCreated, product.id, &product);
        cx.state.store.create_product(&product, &journal).await?;
        // The client API reads the entitlements products grant from the team's context.
        Ok(product)
    }
}

impl Run for ListProducts {
    async fn run(self, cx: &Cx) -> Result<Page<Product>, ApiError> {
        let mut query = self.0;
        cx.reach().bound(&mut query);
        Ok(cx.state.store.list_products(cx.team, &query).await?)
    }
}

impl Run for GetProduct {
    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        cx.read::<Product>(self.0).await
    }
}

impl Run for UpdateProduct {
    async fn run(self, cx: &Cx) -> Result<Product, ApiError> {
        let input = self.1.validate(false)?;
        let existing = cx.read::<Product>(self.0).await?;
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
        Ok(updated)
    }
}

impl Run for DeleteProduct {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let product = cx.read::<Product>(self.0).await?;
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
        Ok(Deleted {
            id: *product.id.as_uuid(),
            deleted: true,
        })
    }
}

impl Run for CreateBranch {
    async fn run(self, cx: &Cx) -> Result<Branch, ApiError> {
        let name = self.1.validate()?;
        let product = cx.read::<Product>(self.0).await?;
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

impl Run for ListBranches {
    async fn run(self, cx: &Cx) -> Result<Vec<Branch>, ApiError> {
        let product = cx.read::<Product>(self.0).await?;
        Ok(cx.state.store.list_branches(cx.team, product.id).await?)
    }
}

impl Run for DeleteBranch {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let (product, branch) = (cx.read::<Product>(self.0).await?, self.1);
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
        Ok(Deleted {
            id: *branch.as_uuid(),
            deleted: true,
        })
    }
}
