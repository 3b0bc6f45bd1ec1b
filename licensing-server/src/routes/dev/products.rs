//! (ext) Products and their branches over HTTP.

use licensing_core::ProductId;
use licensing_core::api::requests::ProductListQuery;
use licensing_core::api::{BranchList, ProductPage};

use crate::app::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    ListProducts, UpdateProduct,
};

with_body!(CreateProduct() => 201, "Product created");
listed!(ListProducts() query ProductListQuery::parse => ProductPage { products }, "Products retrieved");
by_ids!(GetProduct(id: ProductId) => 200, "Product retrieved");
with_body!(UpdateProduct(id: ProductId) => 200, "Product updated");
by_ids!(DeleteProduct(id: ProductId) => 200, "Product deleted");
with_body!(CreateBranch(id: ProductId) => 201, "Branch created");
by_ids!(DeleteBranch(id: ProductId, branch: licensing_core::BranchId) => 200, "Branch deleted");
by_ids!(ListBranches(id: ProductId) => 200
    |branches| BranchList { branches }, "Branches retrieved");
