//! (ext) Products and their branches over HTTP.

use licensing_core::api::requests::ProductListQuery;
use licensing_core::api::{BranchList, ProductPage};
use licensing_core::model::Branch;
use licensing_core::{ApiError, ProductId};

use super::{Dev, Endpoint, Input, Query};
use crate::app::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    ListProducts, UpdateProduct,
};
use crate::http::{Response, success};

with_body!(CreateProduct() => 201, "Product created");
listed!(ListProducts() query ProductListQuery::parse => ProductPage { products }, "Products retrieved");
by_ids!(GetProduct(id: ProductId) => 200, "Product retrieved");
with_body!(UpdateProduct(id: ProductId) => 200, "Product updated");
by_ids!(DeleteProduct(id: ProductId) => 200, "Product deleted");
with_body!(CreateBranch(id: ProductId) => 201, "Branch created");
by_ids!(DeleteBranch(id: ProductId, branch: licensing_core::BranchId) => 200, "Branch deleted");

impl Endpoint for ListBranches {
    type Ids = (ProductId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ProductId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(branches: Vec<Branch>) -> Response {
        success(200, BranchList { branches }, "Branches retrieved")
    }
}
