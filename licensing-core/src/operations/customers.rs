//! Customers.

use crate::CustomerId;
use crate::api::requests::{CustomerBody, CustomerListQuery};
use crate::api::{CustomerDeleted, CustomerPage};
use crate::model::{Customer, Resource, Scope};
use crate::store::Page;

use super::declare;

/// Creates a customer.
pub struct CreateCustomer(pub CustomerBody);

/// One page of the team's customers.
pub struct ListCustomers(pub CustomerListQuery);

/// A customer.
pub struct GetCustomer(pub CustomerId);

/// Changes a customer: members left out keep their value.
pub struct UpdateCustomer(pub CustomerId, pub CustomerBody);

/// Deletes a customer (its licenses keep going without it).
pub struct DeleteCustomer(pub CustomerId);

const READ: Option<Scope> = Some(Scope::read(Resource::Customers));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Customers));

declare! {
    CreateCustomer() by json CustomerBody;
    Post "customers" "create_customer" WRITE;
    Customer => 201 "Customer created";

    ListCustomers() by query CustomerListQuery;
    Get "customers" "list_customers" READ;
    Page<Customer> => 200 CustomerPage: |page| page.into(), "Customers retrieved";

    GetCustomer(id: CustomerId) by ids;
    Get "customers/{customerId}" "get_customer" READ;
    Customer => 200 "Customer retrieved";

    UpdateCustomer(id: CustomerId) by json CustomerBody;
    Put "customers/{customerId}" "update_customer" WRITE;
    Customer => 200 "Customer updated";

    DeleteCustomer(id: CustomerId) by ids;
    Delete "customers/{customerId}" "delete_customer" WRITE;
    CustomerDeleted => 200 "Customer deleted";
}
