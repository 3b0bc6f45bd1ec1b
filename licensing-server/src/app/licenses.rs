//! Licenses: create, list, read, change, suspend, extend, e-mail and delete, by id and by key.

pub(crate) use licensing_core::operations::licenses::{
    BulkLicenses, CreateLicense, DeleteLicense, DeleteLicenseByKey, EmailLicense, ExtendLicense,
    GetLicense, GetLicenseByKey, ListLicenses, SuspendLicense, UnsuspendLicense, UpdateLicense,
};

use licensing_core::api::requests::{BulkAction, Patch, SuspendBody};
use licensing_core::api::{BulkLicenseResult, BulkRefusal, LicenseEmailed};
use licensing_core::model::{
    Action, FieldChange, License, LicenseDetail, OutboxMessage, Resource, Scope,
};
use licensing_core::store::{
    AuditStore, CustomerStore, Entity, LicenseStore, OutboxStore, Page, PolicyStore, ProductStore,
    StoreError,
};
use licensing_core::{ApiError, LicenseId, LicenseKey, Timestamp};

use super::policies::applied;
use super::{Cx, Run};
use crate::runtime::mail;

/// Attempts at drawing a free license key before giving up (a collision needs 36^25 luck).
const KEY_ATTEMPTS: usize = 5;

const NO_MAIL: &str = "e-mail delivery is not configured on this server (set LICENSING_SMTP_URL and LICENSING_SMTP_FROM)";

impl Run for CreateLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let mut new = self.0.validate(cx.now)?;
        let policy = match new.policy_id {
            Some(id) => Some(super::policies::lookup(cx, id).await?),
            None => None,
        };
        if let Some(policy) = &policy {
            new = new.on_policy(policy)?;
        } else {
            cx.reach().may_change(&new)?;
        }
        super::entitlements::require(cx, &new.entitlement_ids).await?;
        let state = &cx.state;
        let mail = new.send_email_delivery;
        if mail && state.mailer.is_none() {
            return Err(ApiError::bad_field("sendEmailDelivery", NO_MAIL));
        }
        for _ in 0..KEY_ATTEMPTS {
            let made = new
                .clone()
                .into_license(LicenseKey::generate(), cx.team, cx.user(), cx.now);
            let license = match &policy {
                Some(p) => made.placed(Some(p), &made.overrides),
                None => made,
            };
            // What applies: the policy's terms too (its products within the caller's reach).
            let effective = license.with_policy(policy.as_ref()).into_owned();
            if policy.is_some() {
                cx.reach().may_change(&effective)?;
            }
            let journal = cx.created(Action::LicenseCreated, license.id, &effective);
            let stored = if let Some(mailer) = state.mailer.as_ref().filter(|_| mail) {
                let messages = messages_for(cx, &effective).await?;
                state
                    .store
                    .create_license_with_mail(
                        &license,
                        &messages,
                        mailer.daily_limit,
                        cx.now,
                        &journal,
                    )
                    .await
            } else {
                state.store.create_license(&license, &journal).await
            };
            match stored {
                Ok(()) => return detail(cx, effective).await,
                Err(StoreError::Conflict {
                    field: "licenseKey",
                    ..
                }) => {}
                Err(StoreError::Limit(message)) => {
                    return Err(daily_limit_reached(message, cx.now));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal_because(
            "license key generation",
            "no free key after several attempts",
        ))
    }
}

impl Run for ListLicenses {
    async fn run(self, cx: &Cx) -> Result<Page<License>, ApiError> {
        let mut query = self.0;
        if let Some(expiry) = &mut query.filter.expiry {
            expiry.at = cx.now;
        }
        // A key restricted to products sees the licenses of its products only.
        if !cx.reach().bound(&mut query) {
            return Ok(Page {
                items: Vec::new(),
                total: 0,
                has_next_page: false,
            });
        }
        // Licenses that grant an entitlement: those that list it, and those of the products
        // that grant it.
        if let Some(entitlement) = &mut query.filter.entitlement {
            entitlement.products = products_granting(cx, entitlement.id).await?;
        }
        // A policy's products and entitlements are its licenses': those on a policy that grants
        // one asked for match too.
        let context = super::client::team_context(&cx.state, cx.team).await?;
        let filter = &mut query.filter;
        if !filter.product_ids.is_empty() {
            filter.product_policies = context
                .policies
                .iter()
                .filter(|p| {
                    p.product_ids
                        .iter()
                        .any(|id| filter.product_ids.contains(id))
                })
                .map(|p| p.id)
                .collect();
        }
        if let Some(entitlement) = &mut filter.entitlement {
            entitlement.policies = context
                .policies
                .iter()
                .filter(|p| {
                    p.entitlement_ids.contains(&entitlement.id)
                        || p.product_ids
                            .iter()
                            .any(|id| entitlement.products.contains(id))
                })
                .map(|p| p.id)
                .collect();
        }
        let mut page = cx.state.store.list_licenses(cx.team, &query).await?;
        for license in &mut page.items {
            if let std::borrow::Cow::Owned(effective) = context.policies.effective(license) {
                *license = effective;
            }
        }
        Ok(page)
    }
}

/// The team's products that grant `entitlement`.
async fn products_granting(
    cx: &Cx,
    entitlement: licensing_core::EntitlementId,
) -> Result<Vec<licensing_core::ProductId>, ApiError> {
    let mut query = licensing_core::api::requests::ProductListQuery::default();
    query.paging.page_size = 100;
    let mut granting = Vec::new();
    loop {
        let page = cx.state.store.list_products(cx.team, &query).await?;
        granting.extend(
            page.items
                .iter()
                .filter(|p| p.entitlement_ids.contains(&entitlement))
                .map(|p| p.id),
        );
        if !page.has_next_page {
            return Ok(granting);
        }
        query.paging.page += 1;
    }
}

impl Run for GetLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let license = cx.read::<License>(self.0).await?;
        detail(cx, applied(cx, license).await?).await
    }
}

impl Run for GetLicenseByKey {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let license = by_key(cx, &self.0).await?;
        detail(cx, applied(cx, license).await?).await
    }
}

impl Run for UpdateLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let existing = cx.write::<License>(self.0).await?;
        let old_policy = match existing.policy_id {
            Some(id) => cx.state.store.get_policy(cx.team, id).await?,
            None => None,
        };
        // Taken off its policy: what applied becomes the license's own, then the body applies.
        let base = match (&self.1.policy_id, &old_policy) {
            (Patch::Null, Some(policy)) => existing.detached(policy),
            _ => existing.clone(),
        };
        let updated = self.1.apply_to(&base, cx.now)?;
        let new_policy = match updated.policy_id {
            None => None,
            Some(id) if Some(id) == existing.policy_id && old_policy.is_some() => {
                old_policy.clone()
            }
            Some(id) => Some(super::policies::lookup(cx, id).await?),
        };
        let updated = match &new_policy {
            Some(p) => updated.placed(Some(p), &updated.overrides),
            None => updated,
        };
        let before = existing.with_policy(old_policy.as_ref()).into_owned();
        let after = updated.with_policy(new_policy.as_ref()).into_owned();
        cx.reach().may_change(&after)?;
        if updated.entitlement_ids != existing.entitlement_ids {
            super::entitlements::require(cx, &updated.entitlement_ids).await?;
        }
        let action = match (existing.suspended, updated.suspended) {
            (false, true) => Action::LicenseSuspended,
            (true, false) => Action::LicenseUnsuspended,
            _ => Action::LicenseUpdated,
        };
        let journal = cx.change(action, updated.id, Some(&before), Some(&after));
        cx.state
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
                other => other.into(),
            })?;
        detail(cx, after).await
    }
}

impl Run for DeleteLicense {
    async fn run(self, cx: &Cx) -> Result<License, ApiError> {
        delete(cx, cx.write::<License>(self.0).await?).await
    }
}

impl Run for DeleteLicenseByKey {
    async fn run(self, cx: &Cx) -> Result<License, ApiError> {
        let license = by_key(cx, &self.0).await?;
        cx.reach()
            .may_change(&*super::reach::Aggregate::judged(&license, cx).await?)?;
        delete(cx, license).await
    }
}

impl Run for BulkLicenses {
    /// Each license through its own operation, one after the other (so that the store sees one
    /// write at a time from one request); a refusal of one, even a failure of the store, is
    /// listed and the others go on, so that the answer says exactly what was done.
    async fn run(self, cx: &Cx) -> Result<BulkLicenseResult, ApiError> {
        let (action, ids) = self.0.parse()?;
        let suspend = SuspendBody {
            reason: self.0.reason(),
        };
        cx.caller.require(action.scope())?;
        let mut result = BulkLicenseResult {
            action,
            done: Vec::with_capacity(ids.len()),
            refused: Vec::new(),
        };
        for id in ids {
            let outcome = match action {
                BulkAction::Suspend => cx
                    .perform(SuspendLicense(id, suspend.clone()))
                    .await
                    .map(drop),
                BulkAction::Unsuspend => cx.perform(UnsuspendLicense(id)).await.map(drop),
                BulkAction::Delete => cx.perform(DeleteLicense(id)).await.map(drop),
            };
            match outcome {
                Ok(()) => result.done.push(id),
                Err(e) => result.refused.push(BulkRefusal {
                    license_id: id,
                    code: e.code(),
                    details: e.details().to_owned(),
                }),
            }
        }
        Ok(result)
    }
}

impl Run for SuspendLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let reason = self.1.validate()?;
        set_suspended(cx, self.0, Some(reason)).await
    }
}

impl Run for UnsuspendLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        set_suspended(cx, self.0, None).await
    }
}

impl Run for ExtendLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseDetail, ApiError> {
        let existing = cx.write::<License>(self.0).await?;
        let extended = self.1.apply_to(&existing, cx.now)?;
        let (before, after) = (
            applied(cx, existing).await?,
            applied(cx, extended.clone()).await?,
        );
        let journal = cx.change(
            Action::LicenseUpdated,
            extended.id,
            Some(&before),
            Some(&after),
        );
        cx.state.store.update_license(&extended, &journal).await?;
        detail(cx, after).await
    }
}

impl Run for EmailLicense {
    async fn run(self, cx: &Cx) -> Result<LicenseEmailed, ApiError> {
        let license = cx.write::<License>(self.0).await?;
        let Some(mailer) = cx.state.mailer.as_ref() else {
            return Err(ApiError::bad_request(NO_MAIL));
        };
        let d = detail(cx, applied(cx, license).await?).await?;
        let team = super::team::team(cx).await?.name;
        let messages = mail::license_messages(&d.license, &d.customers, &d.products, &team, cx.now);
        if messages.is_empty() {
            return Err(ApiError::bad_request(
                "none of the license's customers has an e-mail address",
            ));
        }
        match cx
            .state
            .store
            .queue_messages(cx.team, &messages, mailer.daily_limit, cx.now)
            .await
        {
            Ok(()) => {
                let recipients: Vec<String> = messages.into_iter().map(|m| m.to).collect();
                // Nothing of the license changed; who sent its key to whom is on record.
                let journal = cx.journal(
                    Action::LicenseEmailed,
                    d.license.id,
                    vec![FieldChange::of(
                        "recipients",
                        None,
                        Some(serde_json::json!(recipients)),
                    )],
                );
                cx.state.store.record_journal(&journal).await?;
                Ok(LicenseEmailed {
                    queued: u32::try_from(recipients.len()).unwrap_or(u32::MAX),
                    recipients,
                })
            }
            Err(StoreError::Limit(message)) => Err(daily_limit_reached(message, cx.now)),
            Err(e) => Err(e.into()),
        }
    }
}

/// A license with its customers and products. The customers themselves only for a caller that
/// may read customers; for another, the license's `customerIds` are all it learns of them.
async fn detail(cx: &Cx, license: License) -> Result<LicenseDetail, ApiError> {
    let store = &cx.state.store;
    let customers = if cx.caller.allows(Scope::read(Resource::Customers)) {
        store
            .get_customers(license.team_id, &license.customer_ids)
            .await?
    } else {
        Vec::new()
    };
    let products = store
        .get_products(license.team_id, &license.product_ids)
        .await?;
    Ok(LicenseDetail {
        license,
        customers,
        products,
    })
}

/// The e-mails announcing a new license to its customers; at least one customer needs an
/// address.
async fn messages_for(cx: &Cx, license: &License) -> Result<Vec<OutboxMessage>, ApiError> {
    let store = &cx.state.store;
    let customers = store
        .get_customers(license.team_id, &license.customer_ids)
        .await?;
    if customers.len() != license.customer_ids.len() {
        return Err(StoreError::NotFound(Entity::Customer).into());
    }
    let products = store
        .get_products(license.team_id, &license.product_ids)
        .await?;
    let team = super::team::team(cx).await?.name;
    let messages =
        mail::license_messages(license, &customers, &products, &team, license.created_at);
    if messages.is_empty() {
        return Err(ApiError::bad_field(
            "sendEmailDelivery",
            "none of the license's customers has an e-mail address",
        ));
    }
    Ok(messages)
}

/// 429 until the next UTC day, when the team's daily e-mail limit resets.
fn daily_limit_reached(message: String, now: Timestamp) -> ApiError {
    let next_day_ms = (OutboxMessage::day_of(now) + 1) * 86_400_000;
    let seconds = ((next_day_ms - now.as_millis()) / 1000).max(1);
    ApiError::new(licensing_core::api::ResultCode::RateLimit, message)
        .retry_after_secs(u64::try_from(seconds).unwrap_or(1))
}

/// The license of key `key`, 404 unless it exists in the team and the caller may see it.
async fn by_key(cx: &Cx, key: &LicenseKey) -> Result<License, ApiError> {
    let found = cx.state.store.get_license_by_key(cx.team, key).await?;
    cx.seen(found.ok_or_else(<License as super::reach::Aggregate>::not_found)?)
        .await
}

/// Deletes `license`, which the caller may change.
async fn delete(cx: &Cx, license: License) -> Result<License, ApiError> {
    let shown = applied(cx, license).await?;
    let journal = cx.change(Action::LicenseDeleted, shown.id, Some(&shown), None);
    cx.state
        .store
        .delete_license(shown.team_id, shown.id, &journal)
        .await?;
    Ok(shown)
}

/// Suspends or unsuspends a license, the change `licenses:suspend` allows; a license already in
/// that state is answered unchanged (nothing written, nothing audited).
/// Suspends the license (`Some`, for the reason given, if any) or lifts its suspension
/// (`None`, which clears the reason). Suspending a suspended license changes nothing but a new
/// reason given.
async fn set_suspended(
    cx: &Cx,
    id: LicenseId,
    suspend: Option<Option<String>>,
) -> Result<LicenseDetail, ApiError> {
    let existing = cx.write::<License>(id).await?;
    let suspended = suspend.is_some();
    let reason = match suspend {
        Some(None) => existing
            .suspension_reason
            .clone()
            .filter(|_| existing.suspended),
        Some(Some(reason)) => Some(reason),
        None => None,
    };
    if existing.suspended == suspended && existing.suspension_reason == reason {
        return detail(cx, applied(cx, existing).await?).await;
    }
    let action = match (existing.suspended, suspended) {
        (false, true) => Action::LicenseSuspended,
        (true, false) => Action::LicenseUnsuspended,
        _ => Action::LicenseUpdated,
    };
    let updated = License {
        suspended,
        suspension_reason: reason,
        updated_at: cx.now,
        ..existing.clone()
    };
    let (before, after) = (
        applied(cx, existing).await?,
        applied(cx, updated.clone()).await?,
    );
    let journal = cx.change(action, updated.id, Some(&before), Some(&after));
    cx.state.store.update_license(&updated, &journal).await?;
    detail(cx, after).await
}
