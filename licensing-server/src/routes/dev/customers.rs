//! Customers over HTTP: each operation from its request, and its answer.

use licensing_core::ApiError;
use licensing_core::CustomerId;
use licensing_core::api::requests::{CustomerListQuery, parse_json};
use licensing_core::api::{CustomerDeleted, CustomerPage};
use licensing_core::model::Customer;
use licensing_core::store::Page;

use super::{Dev, Endpoint, Input, Query};
use crate::app::customers::{
    CreateCustomer, DeleteCustomer, GetCustomer, ListCustomers, UpdateCustomer,
};
use crate::http::{Response, success};

impl Endpoint for CreateCustomer {
    type Ids = ();
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(parse_json(&input.json().await?)?))
    }

    fn answer(customer: Customer) -> Response {
        success(201, customer, "Customer created")
    }
}

impl Endpoint for ListCustomers {
    type Ids = ();
    const QUERY: Query = Query::Parsed;

    async fn from_request(_: &Dev, (): (), input: Input) -> Result<Self, ApiError> {
        Ok(Self(CustomerListQuery::parse(&input.query)?))
    }

    fn answer(page: Page<Customer>) -> Response {
        success(
            200,
            CustomerPage {
                customers: page.items,
                total_results: page.total,
                has_next_page: page.has_next_page,
            },
            "Customers retrieved",
        )
    }
}

impl Endpoint for GetCustomer {
    type Ids = (CustomerId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (CustomerId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(customer: Customer) -> Response {
        success(200, customer, "Customer retrieved")
    }
}

impl Endpoint for UpdateCustomer {
    type Ids = (CustomerId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (CustomerId,), input: Input) -> Result<Self, ApiError> {
        Ok(Self(id, parse_json(&input.json().await?)?))
    }

    fn answer(customer: Customer) -> Response {
        success(200, customer, "Customer updated")
    }
}

impl Endpoint for DeleteCustomer {
    type Ids = (CustomerId,);
    const QUERY: Query = Query::None;

    async fn from_request(_: &Dev, (id,): (CustomerId,), _: Input) -> Result<Self, ApiError> {
        Ok(Self(id))
    }

    fn answer(deleted: CustomerDeleted) -> Response {
        success(200, deleted, "Customer deleted")
    }
}
