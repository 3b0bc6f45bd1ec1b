//! Licenses: create, list, read, update and delete, by key and by id.

use licensing_core::api::requests::{LicenseCreate, LicenseListQuery, LicenseUpdate};
use licensing_core::api::{LicenseDeleted, LicenseKeyDeleted, LicensePage};
use licensing_core::model::{Action, License, LicenseDetail, OutboxMessage};
use licensing_core::store::{
    CustomerStore, Entity, LicenseStore, OutboxStore, Page, ProductStore, StoreError,
};
use licensing_core::{ApiError, LicenseId, LicenseKey};

use super::{Dev, Input};
use crate::http::{Handled, Response, store_error, success};
use crate::services::mail;
use crate::state::AppState;
use crate::store::AnyStore;

/// Attempts at drawing a free license key before giving up (a collision needs 36^25 luck).
const KEY_ATTEMPTS: usize = 5;

/// A license with its customers and products.
pub(crate) async fn detail(store: &AnyStore, license: License) -> Result<LicenseDetail, ApiError> {
    let customers = store
        .get_customers(license.team_id, &license.customer_ids)
        .await
        .map_err(store_error)?;
    let products = store
        .get_products(license.team_id, &license.product_ids)
        .await
        .map_err(store_error)?;
    Ok(LicenseDetail {
        license,
        customers,
        products,
    })
}

pub(super) async fn create(dev: Dev, (): (), input: Input) -> Handled {
    let body = input.json().await?;
    let new = LicenseCreate::parse(&body, dev.now)?;
    dev.must_cover(&new.product_ids)?;
    let state = &dev.state;
    let mail = new.send_email_delivery;
    if mail && state.mailer.is_none() {
        return Err(ApiError::bad_field(
            "sendEmailDelivery",
            "e-mail delivery is not configured on this server (set LICENSING_SMTP_URL and LICENSING_SMTP_FROM)",
        ));
    }
    for _ in 0..KEY_ATTEMPTS {
        let license =
            new.clone()
                .into_license(LicenseKey::generate(), dev.team, dev.user(), dev.now);
        let journal = dev.change(Action::LicenseCreated, license.id, None, Some(&license));
        let stored = if let Some(mailer) = state.mailer.as_ref().filter(|_| mail) {
            let messages = messages_for(state, &license).await?;
            state
                .store
                .create_license_with_mail(
                    &license,
                    &messages,
                    mailer.daily_limit,
                    dev.now,
                    &journal,
                )
                .await
        } else {
            state.store.create_license(&license, &journal).await
        };
        match stored {
            Ok(()) => {
                return Ok(success(
                    200,
                    detail(&state.store, license).await?,
                    "License created",
                ));
            }
            Err(StoreError::Conflict {
                field: "licenseKey",
                ..
            }) => continue,
            Err(StoreError::Limit(message)) => return Ok(daily_limit_reached(message, dev.now)),
            Err(e) => return Err(store_error(e)),
        }
    }
    Err(crate::http::internal(
        "license key generation",
        "no free key after several attempts",
    ))
}

/// The e-mails announcing a new license to its customers; at least one customer needs an
/// address.
async fn messages_for(state: &AppState, license: &License) -> Result<Vec<OutboxMessage>, ApiError> {
    let customers = state
        .store
        .get_customers(license.team_id, &license.customer_ids)
        .await
        .map_err(store_error)?;
    if customers.len() != license.customer_ids.len() {
        return Err(StoreError::NotFound(licensing_core::store::Entity::Customer).into());
    }
    let products = state
        .store
        .get_products(license.team_id, &license.product_ids)
        .await
        .map_err(store_error)?;
    let messages = mail::license_messages(license, &customers, &products, license.created_at);
    if messages.is_empty() {
        return Err(ApiError::bad_field(
            "sendEmailDelivery",
            "none of the license's customers has an e-mail address",
        ));
    }
    Ok(messages)
}

/// 429 with `Retry-After` until the next UTC day.
fn daily_limit_reached(message: String, now: licensing_core::Timestamp) -> Response {
    let err = ApiError::new(licensing_core::api::ResultCode::RateLimit, message);
    let mut response = crate::http::error(&err);
    let next_day_ms = (OutboxMessage::day_of(now) + 1) * 86_400_000;
    let seconds = ((next_day_ms - now.as_millis()) / 1000).max(1);
    if let Ok(value) = warp::http::HeaderValue::from_str(&seconds.to_string()) {
        response
            .headers_mut()
            .insert(warp::http::header::RETRY_AFTER, value);
    }
    response
}

pub(super) async fn list(dev: Dev, (): (), input: Input) -> Handled {
    let mut query = LicenseListQuery::parse(&input.query)?;
    if let Some(expiry) = &mut query.filter.expiry {
        expiry.at = dev.now;
    }
    // A key restricted to products sees the licenses of its products only.
    if let Some(allowed) = dev.products() {
        let wanted = &mut query.filter.product_ids;
        if wanted.is_empty() {
            wanted.clone_from(allowed);
        } else {
            wanted.retain(|p| allowed.contains(p));
            if wanted.is_empty() {
                return Ok(page(Page {
                    items: Vec::new(),
                    total: 0,
                    has_next_page: false,
                }));
            }
        }
    }
    let found = dev
        .state
        .store
        .list_licenses(dev.team, &query)
        .await
        .map_err(store_error)?;
    Ok(page(found))
}

fn page(found: Page<License>) -> Response {
    success(
        200,
        LicensePage {
            licenses: found.items,
            total_results: found.total,
            has_next_page: found.has_next_page,
        },
        "Licenses retrieved",
    )
}

fn not_found() -> ApiError {
    StoreError::NotFound(Entity::License).into()
}

/// The license, when it exists in the team and the key may see it (else 404).
fn visible(dev: &Dev, license: Option<License>) -> Result<License, ApiError> {
    license
        .filter(|l| dev.sees(&l.product_ids))
        .ok_or_else(not_found)
}

async fn by_key(dev: &Dev, key: &LicenseKey) -> Result<License, ApiError> {
    let found = dev
        .state
        .store
        .get_license_by_key(dev.team, key)
        .await
        .map_err(store_error)?;
    visible(dev, found)
}

async fn by_id(dev: &Dev, id: LicenseId) -> Result<License, ApiError> {
    let found = dev
        .state
        .store
        .get_license(dev.team, id)
        .await
        .map_err(store_error)?;
    visible(dev, found)
}

pub(super) async fn get_by_key(dev: Dev, (key,): (LicenseKey,), _: Input) -> Handled {
    let license = by_key(&dev, &key).await?;
    Ok(success(
        200,
        detail(&dev.state.store, license).await?,
        "License retrieved",
    ))
}

pub(super) async fn get_by_id(dev: Dev, (id,): (LicenseId,), _: Input) -> Handled {
    let license = by_id(&dev, id).await?;
    Ok(success(
        200,
        detail(&dev.state.store, license).await?,
        "License retrieved",
    ))
}

async fn delete(dev: &Dev, license: &License) -> Result<(), ApiError> {
    dev.must_cover(&license.product_ids)?;
    let journal = dev.change(Action::LicenseDeleted, license.id, Some(license), None);
    dev.state
        .store
        .delete_license(license.team_id, license.id, &journal)
        .await
        .map_err(store_error)?;
    Ok(())
}

pub(super) async fn delete_by_key(dev: Dev, (key,): (LicenseKey,), _: Input) -> Handled {
    let license = by_key(&dev, &key).await?;
    delete(&dev, &license).await?;
    Ok(success(
        200,
        LicenseKeyDeleted {
            license_key: license.license_key,
            deleted: true,
        },
        "License deleted",
    ))
}

pub(super) async fn delete_by_id(dev: Dev, (id,): (LicenseId,), _: Input) -> Handled {
    let license = by_id(&dev, id).await?;
    delete(&dev, &license).await?;
    Ok(success(
        200,
        LicenseDeleted {
            license_id: license.id,
            deleted: true,
        },
        "License deleted",
    ))
}

/// (ext) E-mails the license key again to each of its customers with an address (one who lost
/// it, a new customer added to the license).
pub(super) async fn email(dev: Dev, (id,): (LicenseId,), _: Input) -> Handled {
    let license = by_id(&dev, id).await?;
    dev.must_cover(&license.product_ids)?;
    let Some(mailer) = dev.state.mailer.as_ref() else {
        return Err(ApiError::bad_request(
            "e-mail delivery is not configured on this server (set LICENSING_SMTP_URL and LICENSING_SMTP_FROM)",
        ));
    };
    let customers = dev
        .state
        .store
        .get_customers(license.team_id, &license.customer_ids)
        .await
        .map_err(store_error)?;
    let products = dev
        .state
        .store
        .get_products(license.team_id, &license.product_ids)
        .await
        .map_err(store_error)?;
    let messages = mail::license_messages(&license, &customers, &products, dev.now);
    if messages.is_empty() {
        return Err(ApiError::bad_request(
            "none of the license's customers has an e-mail address",
        ));
    }
    match dev
        .state
        .store
        .queue_messages(dev.team, &messages, mailer.daily_limit, dev.now)
        .await
    {
        Ok(()) => Ok(success(
            200,
            licensing_core::api::LicenseEmailed {
                queued: u32::try_from(messages.len()).unwrap_or(u32::MAX),
                recipients: messages.into_iter().map(|m| m.to).collect(),
            },
            "License e-mails queued",
        )),
        Err(StoreError::Limit(message)) => Ok(daily_limit_reached(message, dev.now)),
        Err(e) => Err(store_error(e)),
    }
}

pub(super) async fn suspend(dev: Dev, (id,): (LicenseId,), _: Input) -> Handled {
    set_suspended(dev, id, true).await
}

pub(super) async fn unsuspend(dev: Dev, (id,): (LicenseId,), _: Input) -> Handled {
    set_suspended(dev, id, false).await
}

/// Suspends or unsuspends a license, the change `licenses:suspend` allows; a license already in
/// that state is answered unchanged (nothing written, nothing audited).
async fn set_suspended(dev: Dev, id: LicenseId, suspended: bool) -> Handled {
    let existing = by_id(&dev, id).await?;
    dev.must_cover(&existing.product_ids)?;
    let (action, message) = if suspended {
        (Action::LicenseSuspended, "License suspended")
    } else {
        (Action::LicenseUnsuspended, "License unsuspended")
    };
    if existing.suspended == suspended {
        return Ok(success(
            200,
            detail(&dev.state.store, existing).await?,
            message,
        ));
    }
    let updated = License {
        suspended,
        updated_at: dev.now,
        ..existing.clone()
    };
    let journal = dev.change(action, updated.id, Some(&existing), Some(&updated));
    dev.state
        .store
        .update_license(&updated, &journal)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        detail(&dev.state.store, updated).await?,
        message,
    ))
}

pub(super) async fn update(dev: Dev, (id,): (LicenseId,), input: Input) -> Handled {
    // The protocol's order: ids and credentials, then the body (400), then the record (404).
    let body = input.json().await?;
    LicenseUpdate::check_syntax(&body)?;
    let existing = by_id(&dev, id).await?;
    dev.must_cover(&existing.product_ids)?;
    let updated = LicenseUpdate::apply(&body, &existing, dev.now)?;
    dev.must_cover(&updated.product_ids)?;
    let action = match (existing.suspended, updated.suspended) {
        (false, true) => Action::LicenseSuspended,
        (true, false) => Action::LicenseUnsuspended,
        _ => Action::LicenseUpdated,
    };
    let journal = dev.change(action, updated.id, Some(&existing), Some(&updated));
    dev.state
        .store
        .update_license(&updated, &journal)
        .await
        .map_err(|e| match e {
            StoreError::Conflict {
                field: "licenseKey",
                ..
            } => ApiError::bad_field(
                "licenseKey",
                "is already used by another license of this team",
            ),
            other => store_error(other),
        })?;
    Ok(success(
        200,
        detail(&dev.state.store, updated).await?,
        "License updated",
    ))
}
