//! Customers: create (ext), list with search, read, update, delete.

use licensing_core::api::requests::{CustomerBody, CustomerInput, CustomerListQuery, Patch};
use licensing_core::api::{CustomerDeleted, CustomerPage};
use licensing_core::model::{Action, Customer};
use licensing_core::store::{CustomerStore, Entity, StoreError};
use licensing_core::{ApiError, CustomerId};

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};
use crate::state::AppState;

async fn parse_body(input: Input) -> Result<CustomerInput, ApiError> {
    CustomerBody::parse(&input.json().await?)
}

/// Checks a newly given chat id against the directory and fills the account's names.
async fn check_chat(
    state: &AppState,
    input: &CustomerInput,
    customer: &mut Customer,
) -> Result<(), ApiError> {
    let Patch::Value(chat_id) = &input.chat_id else {
        return Ok(());
    };
    let directory = state.chat.as_ref().ok_or_else(|| {
        ApiError::bad_field(
            "chatId",
            "cannot be checked: no chat directory is configured on this server (LICENSING_CHAT_API_URL)",
        )
    })?;
    let user = directory.lookup(chat_id).await?;
    if let Some(account) = customer.chat_account.as_mut() {
        account.username = user.username;
        account.avatar = user.avatar;
        account.global_name = user.global_name;
    }
    Ok(())
}

pub(super) async fn create(dev: Dev, (): (), input: Input) -> Handled {
    let input = parse_body(input).await?;
    let mut customer = input.into_new(dev.team, dev.user(), dev.now)?;
    check_chat(&dev.state, &input, &mut customer).await?;
    dev.state
        .store
        .create_customer(
            &customer,
            &dev.change(Action::CustomerCreated, customer.id, None, Some(&customer)),
        )
        .await
        .map_err(store_error)?;
    Ok(success(201, customer, "Customer created"))
}

pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let query = CustomerListQuery::parse(&input.query)?;
    let page = dev
        .state
        .store
        .list_customers(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        CustomerPage {
            customers: page.items,
            total_results: page.total,
            has_next_page: page.has_next_page,
        },
        "Customers retrieved",
    ))
}

/// The customer `id` of the request's team (404 when there is none).
async fn lookup(dev: &Dev, id: CustomerId) -> Result<Customer, ApiError> {
    let customer = dev
        .state
        .store
        .get_customer(dev.team, id)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Customer))?;
    Ok(customer)
}

pub(super) async fn get(dev: Dev, (id,): (CustomerId,), _: Input) -> Handled {
    let customer = lookup(&dev, id).await?;
    Ok(success(200, customer, "Customer retrieved"))
}

pub(super) async fn update(dev: Dev, (id,): (CustomerId,), input: Input) -> Handled {
    // The body is read and checked (400, 413) before the customer is looked up (404).
    let input = parse_body(input).await?;
    let existing = lookup(&dev, id).await?;
    let mut updated = input.apply_to(&existing, dev.now)?;
    check_chat(&dev.state, &input, &mut updated).await?;
    dev.state
        .store
        .update_customer(
            &updated,
            &dev.change(
                Action::CustomerUpdated,
                updated.id,
                Some(&existing),
                Some(&updated),
            ),
        )
        .await
        .map_err(store_error)?;
    Ok(success(200, updated, "Customer updated"))
}

pub(super) async fn delete(dev: Dev, (id,): (CustomerId,), _: Input) -> Handled {
    let customer = lookup(&dev, id).await?;
    dev.state
        .store
        .delete_customer(
            dev.team,
            customer.id,
            &dev.change(Action::CustomerDeleted, customer.id, Some(&customer), None),
        )
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        CustomerDeleted {
            customer_id: customer.id,
            deleted: true,
        },
        "Customer deleted",
    ))
}
