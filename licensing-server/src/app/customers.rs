//! Customers: create, list with search, read, update, delete.

pub(crate) use licensing_core::operations::customers::{
    CreateCustomer, DeleteCustomer, GetCustomer, ListCustomers, UpdateCustomer,
};

use licensing_core::api::CustomerDeleted;
use licensing_core::api::requests::{CustomerInput, Patch};
use licensing_core::model::{Action, Customer, Resource, Scope};
use licensing_core::store::{CustomerStore, Entity, Page, StoreError};
use licensing_core::{ApiError, CustomerId};

use super::{Cx, Operation, Run};

/// The team's customers among these ids (those that exist), for lists that name them.
pub(crate) struct GetCustomers(pub(crate) Vec<CustomerId>);

impl Run for CreateCustomer {
    async fn run(self, cx: &Cx) -> Result<Customer, ApiError> {
        let input = self.0.validate()?;
        let mut customer = input.into_new(cx.team, cx.user(), cx.now)?;
        check_chat(cx, &input, &mut customer).await?;
        let journal = cx.created(Action::CustomerCreated, customer.id, &customer);
        cx.state.store.create_customer(&customer, &journal).await?;
        Ok(customer)
    }
}

impl Run for ListCustomers {
    async fn run(self, cx: &Cx) -> Result<Page<Customer>, ApiError> {
        Ok(cx.state.store.list_customers(cx.team, &self.0).await?)
    }
}

impl Operation for GetCustomers {
    const NAME: &'static str = "get_customers";
    type Output = Vec<Customer>;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Customers));
    const READ_ONLY: bool = true;
}

impl Run for GetCustomers {
    async fn run(self, cx: &Cx) -> Result<Vec<Customer>, ApiError> {
        let mut ids = self.0;
        ids.sort_unstable();
        ids.dedup();
        Ok(cx.state.store.get_customers(cx.team, &ids).await?)
    }
}

impl Run for GetCustomer {
    async fn run(self, cx: &Cx) -> Result<Customer, ApiError> {
        lookup(cx, self.0).await
    }
}

impl Run for UpdateCustomer {
    async fn run(self, cx: &Cx) -> Result<Customer, ApiError> {
        // The body is checked (400) before the customer is looked up (404).
        let input = self.1.validate()?;
        let existing = lookup(cx, self.0).await?;
        let mut updated = input.apply_to(&existing, cx.now)?;
        check_chat(cx, &input, &mut updated).await?;
        cx.state
            .store
            .update_customer(
                &updated,
                &cx.change(
                    Action::CustomerUpdated,
                    updated.id,
                    Some(&existing),
                    Some(&updated),
                ),
            )
            .await?;
        Ok(updated)
    }
}

impl Run for DeleteCustomer {
    async fn run(self, cx: &Cx) -> Result<CustomerDeleted, ApiError> {
        let customer = lookup(cx, self.0).await?;
        cx.state
            .store
            .delete_customer(
                cx.team,
                customer.id,
                &cx.change(Action::CustomerDeleted, customer.id, Some(&customer), None),
            )
            .await?;
        Ok(CustomerDeleted {
            customer_id: customer.id,
            deleted: true,
        })
    }
}

/// The customer `id` of the team (404 when there is none).
async fn lookup(cx: &Cx, id: CustomerId) -> Result<Customer, ApiError> {
    Ok(cx
        .state
        .store
        .get_customer(cx.team, id)
        .await?
        .ok_or(StoreError::NotFound(Entity::Customer))?)
}

/// Checks a newly given chat id against the directory and fills the account's names.
async fn check_chat(
    cx: &Cx,
    input: &CustomerInput,
    customer: &mut Customer,
) -> Result<(), ApiError> {
    let Patch::Value(chat_id) = &input.chat_id else {
        return Ok(());
    };
    let directory = cx.state.chat.as_ref().ok_or_else(|| {
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
