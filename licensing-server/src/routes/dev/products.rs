//! (ext) Products and their branches.

use licensing_core::api::requests::{BranchBody, ProductBody, ProductListQuery};
use licensing_core::api::{BranchList, Deleted, ProductPage};
use licensing_core::model::{Action, Branch, Product};
use licensing_core::store::{Entity, ProductStore, StoreError};
use licensing_core::{ApiError, BranchId, ProductId};

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};

pub(super) async fn create(dev: Dev, (): (), input: Input) -> Handled {
    let input = ProductBody::parse(&input.json().await?, true)?;
    if dev.products().is_some() {
        return Err(ApiError::forbidden(
            "This API key is restricted to some products: it cannot create products",
        ));
    }
    let product = input.into_new(dev.team, dev.user(), dev.now);
    dev.state
        .store
        .create_product(
            &product,
            &dev.change(Action::ProductCreated, product.id, None, Some(&product)),
        )
        .await
        .map_err(store_error)?;
    Ok(success(201, product, "Product created"))
}

pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let mut query = ProductListQuery::parse(&input.query)?;
    query.filter.within.clone_from(dev.products());
    let page = dev
        .state
        .store
        .list_products(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        ProductPage {
            products: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Products retrieved",
    ))
}

/// The product of the path, in the team of the request, when the key may see it.
pub(crate) async fn find(dev: &Dev, id: ProductId) -> Result<Product, ApiError> {
    Ok(dev
        .state
        .store
        .get_product(dev.team, id)
        .await
        .map_err(store_error)?
        .filter(|p| dev.sees(&[p.id]))
        .ok_or(StoreError::NotFound(Entity::Product))?)
}

pub(super) async fn get(dev: Dev, (id,): (ProductId,), _: Input) -> Handled {
    let product = find(&dev, id).await?;
    Ok(success(200, product, "Product retrieved"))
}

pub(super) async fn update(dev: Dev, (id,): (ProductId,), input: Input) -> Handled {
    let input = ProductBody::parse(&input.json().await?, false)?;
    let existing = find(&dev, id).await?;
    let updated = input.apply_to(&existing, dev.now);
    dev.state
        .store
        .update_product(
            &updated,
            &dev.change(
                Action::ProductUpdated,
                updated.id,
                Some(&existing),
                Some(&updated),
            ),
        )
        .await
        .map_err(store_error)?;
    Ok(success(200, updated, "Product updated"))
}

pub(super) async fn delete(dev: Dev, (id,): (ProductId,), _: Input) -> Handled {
    let product = find(&dev, id).await?;
    let releases = dev
        .state
        .store
        .delete_product(
            dev.team,
            product.id,
            &dev.change(Action::ProductDeleted, product.id, Some(&product), None),
        )
        .await
        .map_err(store_error)?;
    dev.state.files.remove_release_files(&releases).await;
    Ok(success(
        200,
        Deleted {
            id: *product.id.as_uuid(),
            deleted: true,
        },
        "Product deleted",
    ))
}

pub(super) async fn create_branch(dev: Dev, (id,): (ProductId,), input: Input) -> Handled {
    let name = BranchBody::parse(&input.json().await?)?;
    let product = find(&dev, id).await?;
    let branch = Branch {
        id: BranchId::new(),
        name,
        product_id: product.id,
        team_id: dev.team,
        created_at: dev.now,
        updated_at: dev.now,
    };
    dev.state
        .store
        .create_branch(
            &branch,
            &dev.change(Action::BranchCreated, branch.id, None, Some(&branch)),
        )
        .await
        .map_err(store_error)?;
    Ok(success(201, branch, "Branch created"))
}

pub(super) async fn list_branches(dev: Dev, (id,): (ProductId,), _: Input) -> Handled {
    let product = find(&dev, id).await?;
    let branches = dev
        .state
        .store
        .list_branches(dev.team, product.id)
        .await
        .map_err(store_error)?;
    Ok(success(200, BranchList { branches }, "Branches retrieved"))
}

pub(super) async fn delete_branch(
    dev: Dev,
    (id, branch): (ProductId, BranchId),
    _: Input,
) -> Handled {
    let product = find(&dev, id).await?;
    let old = dev
        .state
        .store
        .list_branches(dev.team, product.id)
        .await
        .map_err(store_error)?
        .into_iter()
        .find(|b| b.id == branch)
        .ok_or(StoreError::NotFound(Entity::Branch))?;
    let journal = dev.change(Action::BranchDeleted, branch, Some(&old), None);
    let releases = dev
        .state
        .store
        .delete_branch(dev.team, product.id, branch, &journal)
        .await
        .map_err(store_error)?;
    dev.state.files.remove_release_files(&releases).await;
    Ok(success(
        200,
        Deleted {
            id: *branch.as_uuid(),
            deleted: true,
        },
        "Branch deleted",
    ))
}
