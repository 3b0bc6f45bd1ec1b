//! Customers, products and their branches.

use super::*;

/// (ext) Create a customer.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/customers",
    tag = "extensions",
    params(TeamPath),
    request_body = CustomerBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Customer>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_customer() {}

/// List customers, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/customers",
    tag = "customers",
    params(
        TeamPath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of fullName, createdAt, updatedAt, email, username (default createdAt)"),
        ("search" = Option<String>, Query, description = "1 to 255 characters: part of the e-mail, full name or username"),
    ),
    responses(
        (status = 200, description = "A page of customers", body = Envelope<CustomerPage>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_customers() {}

/// A customer.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(CustomerPath),
    responses(
        (status = 200, description = "The customer", body = Envelope<Customer>),
        NoCustomer,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_customer() {}

/// Update a customer: members left out keep their values, null clears.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(CustomerPath),
    request_body = CustomerBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<Customer>),
        NoCustomer,
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn update_customer() {}

/// Delete a customer (licenses lose it).
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/customers/{customerId}",
    tag = "customers",
    params(CustomerPath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<CustomerDeleted>),
        NoCustomer,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_customer() {}

/// (ext) Create a product.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/products",
    tag = "extensions",
    params(TeamPath),
    request_body = ProductBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Product>),
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_product() {}

/// (ext) List products.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products",
    tag = "extensions",
    params(
        TeamPath,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page (default 1)"),
        ("pageSize" = Option<u32>, Query, description = "10, 25, 50 or 100 (default 25)"),
        ("sortDirection" = Option<String>, Query, description = "asc or desc (default desc)"),
        ("sortColumn" = Option<String>, Query, description = "One of name, createdAt, updatedAt (default createdAt)"),
    ),
    responses(
        (status = 200, description = "A page of products", body = Envelope<ProductPage>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_products() {}

/// (ext) A product.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(ProductPath),
    responses(
        (status = 200, description = "The product", body = Envelope<Product>),
        NoProduct,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn get_product() {}

/// (ext) Update a product.
#[utoipa::path(
    put,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(ProductPath),
    request_body = ProductBody,
    responses(
        (status = 200, description = "Updated", body = Envelope<Product>),
        NoProduct,
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn update_product() {}

/// (ext) Delete a product with its releases and branches; licenses lose it.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}",
    tag = "extensions",
    params(ProductPath),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        NoProduct,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_product() {}

/// (ext) Create a branch of a product.
#[utoipa::path(
    post,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches",
    tag = "extensions",
    params(ProductPath),
    request_body = BranchBody,
    responses(
        (status = 201, description = "Created", body = Envelope<Branch>),
        NoProduct,
        Refused,
        OtherTeam,
        BodyRefused,
    )
)]
pub(in crate::openapi) fn create_branch() {}

/// (ext) The product's branches.
#[utoipa::path(
    get,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches",
    tag = "extensions",
    params(ProductPath),
    responses(
        (status = 200, description = "The branches", body = Envelope<BranchList>),
        NoProduct,
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn list_branches() {}

/// (ext) Delete a branch with its releases.
#[utoipa::path(
    delete,
    path = "/api/v1/dev/teams/{teamId}/products/{productId}/branches/{branchId}",
    tag = "extensions",
    params(
        ProductPath,
        ("branchId" = String, Path, format = "uuid", description = "The branch"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Envelope<Deleted>),
        (status = 404, description = "PRODUCT_NOT_FOUND or RELEASE_NOT_FOUND (no such branch)", body = Envelope<Option<ErrorData>>),
        Refused,
        OtherTeam,
    )
)]
pub(in crate::openapi) fn delete_branch() {}
