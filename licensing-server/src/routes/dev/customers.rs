//! Customers over HTTP: each operation from its request, and its answer.

use licensing_core::CustomerId;
use licensing_core::api::CustomerPage;
use licensing_core::api::requests::CustomerListQuery;

use crate::app::customers::{
    CreateCustomer, DeleteCustomer, GetCustomer, ListCustomers, UpdateCustomer,
};

with_body!(CreateCustomer() => 201, "Customer created");
listed!(ListCustomers() query CustomerListQuery::parse => CustomerPage { customers }, "Customers retrieved");
by_ids!(GetCustomer(id: CustomerId) => 200, "Customer retrieved");
with_body!(UpdateCustomer(id: CustomerId) => 200, "Customer updated");
by_ids!(DeleteCustomer(id: CustomerId) => 200, "Customer deleted");
