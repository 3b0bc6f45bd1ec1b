//! Customers.

use crate::CustomerId;
use crate::api::requests::{CustomerBody, CustomerListQuery, PortalSessionBody};
use crate::api::{CustomerDeleted, CustomerPage, PortalLink};
use crate::model::{Customer, Resource, Scope};
use crate::store::Page;

use super::declare;
use super::doc::*;

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

/// (ext) A one-use link, for 15 minutes, that signs the customer in to the team's customer
/// portal: for the vendor's own site to hand to the customer's browser.
pub struct CreatePortalSession(pub CustomerId, pub PortalSessionBody);

const READ: Option<Scope> = Some(Scope::read(Resource::Customers));
const WRITE: Option<Scope> = Some(Scope::write(Resource::Customers));

declare! {
    CreateCustomer() by json CustomerBody;
    Post "customers" "create_customer" WRITE;
    Customer => 201 "Customer created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) Create a customer.",
        description: "",
        params: &[],
        body: "",
        success: "Created",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED],
    };

    ListCustomers() by query CustomerListQuery;
    Get "customers" "list_customers" READ;
    Page<Customer> => 200 CustomerPage: |page| page.into(), "Customers retrieved";
    doc Doc {
        tag: "customers",
        summary: "List customers, a page at a time.",
        description: "",
        params: &[
            PAGE,
            PAGE_SIZE,
            DIRECTION,
            Param::query("sortColumn", "One of fullName, createdAt, updatedAt, email, username (default createdAt)", Kind::Text),
            Param::query("search", "1 to 255 characters: part of the e-mail, full name or username", Kind::Text),
        ],
        body: "",
        success: "A page of customers",
        refusals: &[REFUSED, OTHER_TEAM],
    };

    GetCustomer(id: CustomerId) by ids;
    Get "customers/{customerId}" "get_customer" READ;
    Customer => 200 "Customer retrieved";
    doc Doc {
        tag: "customers",
        summary: "A customer.",
        description: "",
        params: &[
            CUSTOMER_ID,
        ],
        body: "",
        success: "The customer",
        refusals: &[REFUSED, OTHER_TEAM, NO_CUSTOMER],
    };

    UpdateCustomer(id: CustomerId) by json CustomerBody;
    Put "customers/{customerId}" "update_customer" WRITE;
    Customer => 200 "Customer updated";
    doc Doc {
        tag: "customers",
        summary: "Update a customer: members left out keep their values, null clears.",
        description: "",
        params: &[
            CUSTOMER_ID,
        ],
        body: "",
        success: "Updated",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_CUSTOMER],
    };

    DeleteCustomer(id: CustomerId) by ids;
    Delete "customers/{customerId}" "delete_customer" WRITE;
    CustomerDeleted => 200 "Customer deleted";
    doc Doc {
        tag: "customers",
        summary: "Delete a customer (licenses lose it).",
        description: "",
        params: &[
            CUSTOMER_ID,
        ],
        body: "",
        success: "Deleted",
        refusals: &[REFUSED, OTHER_TEAM, NO_CUSTOMER],
    };

    CreatePortalSession(id: CustomerId) by optional PortalSessionBody;
    Post "customers/{customerId}/portal-sessions" "create_portal_session" WRITE;
    PortalLink => 201 "Portal link created";
    doc Doc {
        tag: "extensions",
        summary: "(ext) A one-use link that signs the customer in to the customer portal.",
        description: "For the vendor's own site: hand the link to the customer's browser (a redirect), which it signs in at once to see the customer's licenses (or, with `licenseId`, that one). It works once, for 15 minutes, while the team's portal is enabled (`PUT /settings` `portalEnabled`). A 403 while it is off.",
        params: &[
            CUSTOMER_ID,
        ],
        body: "",
        success: "The link and when it expires",
        refusals: &[REFUSED, OTHER_TEAM, BODY_REFUSED, NO_CUSTOMER, NO_LICENSE],
    };
}
