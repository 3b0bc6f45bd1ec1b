//! (ext) Products and their branches.

use crate::api::requests::{BranchBody, ProductBody, ProductListQuery};
use crate::api::{BranchList, Deleted, ProductPage};
use crate::model::{Branch, Product, Resource, Scope};
use crate::store::Page;
use crate::{BranchId, ProductId};

use super::declare;
use super::doc::*;

/// Creates a product (not for a key restricted to products).
pub struct CreateProduct(pub ProductBody);

/// One page of the team's products (a restricted key's own only).
pub struct ListProducts(pub ProductListQuery);

/// A product.
pub struct GetProduct(pub ProductId);

/// Changes a product: members left out keep their value.
pub struct UpdateProduct(pub ProductId, pub ProductBody);

/// Deletes a product with its releases and branches (its licenses lose it).
pub struct DeleteProduct(pub ProductId);

/// Creates a branch of a product.
pub struct CreateBranch(pub ProductId, pub BranchBody);

/// A product's branches.
pub struct ListBranches(pub ProductId);

/// Deletes a branch with its releases.
pub struct DeleteBranch(pub ProductId, pub BranchId);

const READ: Option<Scope> = Some(Scope::read(Resource::Products));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Products));

declare! {
    CreateProduct() by json ProductBody;
    Post "products" "create_product" WRITE;
    Product => 201 "Product created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Create a product.",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    ListProducts() by query ProductListQuery;
    Get "products" "list_products" READ;
    Page<Product> => 200 ProductPage: |page| page.into(), "Products retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) List products.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of name, createdAt, updatedAt (default createdAt)", Kind::Text),
        ],
        body: "",
        success: "A page of products",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetProduct(id: ProductId) by ids;
    Get "products/{productId}" "get_product" READ;
    Product => 200 "Product retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A product.",
        description: "",
        params: &[
            PRODUCT_ID,
        ],
        body: "",
        success: "The product",
        refusals: &[REFUSED, OTHER_TEAM, NO_PRODUCT],
    };

    UpdateProduct(id: ProductId) by json ProductBody;
    Put "products/{productId}" "update_product" WRITE;
    Product => 200 "Product updated";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Update a product.",
        description: "",
        params: &[
            PRODUCT_ID,
        ],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_PRODUCT],
    };

    DeleteProduct(id: ProductId) by ids;
    Delete "products/{productId}" "delete_product" WRITE;
    Deleted => 200 "Product deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a product with its releases and branches; licenses lose it.",
        description: "",
        params: &[
            PRODUCT_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_PRODUCT],
    };

    CreateBranch(id: ProductId) by json BranchBody;
    Post "products/{productId}/branches" "create_branch" WRITE;
    Branch => 201 "Branch created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Create a branch of a product.",
        description: "",
        params: &[
            PRODUCT_ID,
        ],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_PRODUCT],
    };

    ListBranches(id: ProductId) by ids;
    Get "products/{productId}/branches" "list_branches" READ;
    Vec<Branch> => 200 BranchList: |branches| BranchList { branches }, "Branches retrieved";
    doc Doc {
        tag: "extensions",
        summary: "(ext) The product's branches.",
        description: "",
        params: &[
            PRODUCT_ID,
        ],
        body: "",
        success: "The branches",
        refusals: &[REFUSED, OTHER_TEAM, NO_PRODUCT],
    };

    DeleteBranch(id: ProductId, branch: BranchId) by ids;
    Delete "products/{productId}/branches/{branchId}" "delete_branch" WRITE;
    Deleted => 200 "Branch deleted";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Delete a branch with its releases.",
        description: "",
        params: &[
            PRODUCT_ID,
            Param::path("branchId", "The branch", Kind::Uuid),
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, crate::refusals![(404, "PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND (no such branch)")]],
    };
}
