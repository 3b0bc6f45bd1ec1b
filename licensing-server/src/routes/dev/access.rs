//! (ext) API keys and the blacklist.

use licensing_core::api::requests::{ApiKeyBody, BlacklistBody};
use licensing_core::api::{ApiKeyList, BlacklistList, Deleted};
use licensing_core::model::{Action, ApiKeyView, BlacklistEntry};
use licensing_core::store::{ApiKeyStore, BlacklistStore};
use licensing_core::{ApiError, ApiKeyId, BlacklistId};

use super::{Dev, Input};
use crate::http::{Handled, store_error, success};

pub(super) async fn create_key(dev: Dev, (): (), input: Input) -> Handled {
    let mut input = ApiKeyBody::parse(&input.json().await?, dev.now)?;
    if let Some(why) = dev.cannot_grant(&input.scopes, &input.product_ids) {
        return Err(ApiError::forbidden(why));
    }
    // A key made by a key that expires expires no later: it cannot outlive its maker.
    let capped = match dev.caller.expires_at {
        Some(limit) if input.expires_at.is_none_or(|asked| asked > limit) => {
            input.expires_at = Some(limit);
            true
        }
        _ => false,
    };
    let created = crate::services::teams::create_api_key(
        &dev.state.store,
        dev.team,
        input,
        dev.user(),
        &dev.acting(),
        dev.now,
    )
    .await?;
    Ok(success(
        201,
        created,
        if capped {
            "API key created; it is shown only in this answer. It expires when the key that made it does"
        } else {
            "API key created; it is shown only in this answer"
        },
    ))
}

pub(super) async fn list_keys(dev: Dev, (): (), _: Input) -> Handled {
    let mut keys = dev
        .state
        .store
        .list_api_keys(dev.team)
        .await
        .map_err(store_error)?;
    dev.state.key_uses.overlay(&mut keys);
    Ok(success(
        200,
        ApiKeyList {
            api_keys: keys.iter().map(ApiKeyView::from).collect(),
        },
        "API keys retrieved",
    ))
}

pub(super) async fn revoke_key(dev: Dev, (id,): (ApiKeyId,), _: Input) -> Handled {
    let revoked = crate::services::teams::revoke_api_key(
        &dev.state.store,
        dev.team,
        id,
        &dev.acting(),
        dev.now,
        |target| match dev.cannot_grant(&target.scopes, &target.product_ids) {
            // A key may revoke only keys with no more access than its own.
            Some(why) => Err(ApiError::forbidden(why.replace(
                "cannot give it to a new key",
                "cannot revoke a key that has it",
            ))),
            None => Ok(()),
        },
    )
    .await?;
    let details = if revoked.len() > 1 {
        "API key revoked, and with it the keys it made (directly or through them)"
    } else {
        "API key revoked"
    };
    Ok(success(
        200,
        Deleted {
            id: *id.as_uuid(),
            deleted: true,
        },
        details,
    ))
}

pub(super) async fn create_entry(dev: Dev, (): (), input: Input) -> Handled {
    let input = BlacklistBody::parse(&input.json().await?)?;
    let entry = BlacklistEntry {
        id: BlacklistId::new(),
        team_id: dev.team,
        kind: input.kind,
        value: input.value,
        hits: 0,
        created_by_user_id: dev.user(),
        created_at: dev.now,
    };
    dev.state
        .store
        .create_blacklist_entry(
            &entry,
            &dev.change(Action::BlacklistCreated, entry.id, None, Some(&entry)),
        )
        .await
        .map_err(store_error)?;
    dev.state.contexts.invalidate(dev.team);
    Ok(success(201, entry, "Blacklist entry created"))
}

pub(super) async fn list_entries(dev: Dev, (): (), _: Input) -> Handled {
    let state = &dev.state;
    // Hits counted by the client API but not yet written are written first.
    state
        .usage
        .flush_team(&state.store, dev.team)
        .await
        .map_err(store_error)?;
    let blacklist = state
        .store
        .list_blacklist(dev.team)
        .await
        .map_err(store_error)?;
    Ok(success(
        200,
        BlacklistList { blacklist },
        "Blacklist retrieved",
    ))
}

pub(super) async fn delete_entry(dev: Dev, (id,): (BlacklistId,), _: Input) -> Handled {
    let old = dev
        .state
        .store
        .list_blacklist(dev.team)
        .await
        .map_err(store_error)?
        .into_iter()
        .find(|e| e.id == id);
    dev.state
        .store
        .delete_blacklist_entry(
            dev.team,
            id,
            &dev.change(Action::BlacklistDeleted, id, old.as_ref(), None),
        )
        .await
        .map_err(store_error)?;
    dev.state.contexts.invalidate(dev.team);
    Ok(success(
        200,
        Deleted {
            id: *id.as_uuid(),
            deleted: true,
        },
        "Blacklist entry deleted",
    ))
}
