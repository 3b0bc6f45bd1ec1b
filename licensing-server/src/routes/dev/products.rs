//! (ext) Products and their branches over HTTP.

use licensing_core::api::requests::{ProductListQuery, parse_json};
use licensing_core::api::{BranchList, Deleted, ProductPage};
use licensing_core::model::{Branch, Product};
use licensing_core::store::Page;
use licensing_core::{ApiError, BranchId, ProductId};

use super::{Dev, Endpoint, Input, Query};
use crate::app::products::{
    CreateBranch, CreateProduct, DeleteBranch, DeleteProduct, GetProduct, ListBranches,
    ListProducts, UpdateProduct,
};
use crate::http::{Response, success};

impl Endpoint for CreateProduct {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(product: Product) -> Response {
        success(201, product, "Product created")
    }
}

impl Endpoint for ListProducts {
    type Ids = ();
    const QUERY: Query = Query::Parsed;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(ProductListQuery::parse(&input.query)?))
    }

    fn answer(page: Page<Product>) -> Response {
        success(
            200,
            ProductPage {
                products: page.items,
                total_results: page.total,
                has_next_page: page.has_next_page,
            },
            "Products retrieved",
        )
    }
}

impl Endpoint for GetProduct {
    type Ids = (ProductId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ProductId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(product: Product) -> Response {
        success(200, product, "Product retrieved")
    }
}

impl Endpoint for UpdateProduct {
    type Ids = (ProductId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ProductId,), input: Input) -> Result<Self, ApiError> {
        Ok(Self(id, parse_json(&input.json().await?)?))
    }

    fn answer(product: Product) -> Response {
        success(200, product, "Product updated")
    }
}

impl Endpoint for DeleteProduct {
    type Ids = (ProductId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ProductId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(deleted: Deleted) -> Response {
        success(200, deleted, "Product deleted")
    }
}

impl Endpoint for CreateBranch {
    type Ids = (ProductId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (ProductId,), input: Input) -> Result<Self, ApiError> {
        Ok(Self(id, parse_json(&input.json().await?)?))
    }

    fn answer(branch: Branch) -> Response {
        success(201, branch, "Branch created")
    }
}

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

impl Endpoint for DeleteBranch {
    type Ids = (ProductId, BranchId);
    const QUERY: Query = Query::None;

    async fn from_request(
        _: &Dev,
        (id, branch): (ProductId, BranchId),
        _: Input,
    ) -> Result<Self, ApiError> {
        Ok(Self(id, branch))
    }

    fn answer(deleted: Deleted) -> Response {
        success(200, deleted, "Branch deleted")
    }
}
