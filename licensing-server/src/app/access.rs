//! (ext) Who may call the developer API (its keys) and who may not call the client API (the
//! blacklist).

pub(crate) use licensing_core::operations::access::{
    CreateApiKey, CreateBlacklistEntry, DeleteBlacklistEntry, ListApiKeys, ListBlacklist,
    NewApiKey, RevokeApiKey,
};

use licensing_core::api::Deleted;
use licensing_core::model::{Action, ApiKeyView, BlacklistEntry};
use licensing_core::store::{ApiKeyStore, BlacklistStore};
use licensing_core::{ApiError, ApiKeyId, BlacklistId};

use super::{Cx, Run};

impl Run for CreateApiKey {
    async fn run(self, cx: &Cx) -> Result<NewApiKey, ApiError> {
        let mut input = self.0.validate(cx.now)?;
        if let Some(why) = cx.reach().cannot_grant(&input.scopes, &input.product_ids) {
            return Err(ApiError::forbidden(why));
        }
        // A key made by a key that expires expires no later: it cannot outlive its maker.
        let capped = match cx.caller.expires_at {
            Some(limit) if input.expires_at.is_none_or(|asked| asked > limit) => {
                input.expires_at = Some(limit);
                true
            }
            _ => false,
        };
        let created = crate::app::teams::create_api_key(
            &cx.state.store,
            cx.team,
            input,
            cx.user(),
            &cx.acting(),
            cx.now,
        )
        .await?;
        Ok(NewApiKey { created, capped })
    }
}

impl Run for ListApiKeys {
    async fn run(self, cx: &Cx) -> Result<Vec<ApiKeyView>, ApiError> {
        let mut keys = cx.state.store.list_api_keys(cx.team).await?;
        cx.state.key_uses.overlay(&mut keys);
        Ok(keys.iter().map(ApiKeyView::from).collect())
    }
}

impl Run for RevokeApiKey {
    async fn run(self, cx: &Cx) -> Result<Vec<ApiKeyId>, ApiError> {
        crate::app::teams::revoke_api_key(
            &cx.state.store,
            cx.team,
            self.0,
            &cx.acting(),
            cx.now,
            |target| match cx.reach().cannot_grant(&target.scopes, &target.product_ids) {
                // A key may revoke only keys with no more access than its own.
                Some(why) => Err(ApiError::forbidden(why.replace(
                    "cannot give it to a new key",
                    "cannot revoke a key that has it",
                ))),
                None => Ok(()),
            },
        )
        .await
    }
}

impl Run for CreateBlacklistEntry {
    async fn run(self, cx: &Cx) -> Result<BlacklistEntry, ApiError> {
        let input = self.0.validate()?;
        let entry = BlacklistEntry {
            id: BlacklistId::new(),
            team_id: cx.team,
            kind: input.kind,
            value: input.value,
            hits: 0,
            created_by_user_id: cx.user(),
            created_at: cx.now,
        };
        let journal = cx.created(Action::BlacklistCreated, entry.id, &entry);
        cx.state
            .store
            .create_blacklist_entry(&entry, &journal)
            .await?;
        Ok(entry)
    }
}

impl Run for ListBlacklist {
    async fn run(self, cx: &Cx) -> Result<Vec<BlacklistEntry>, ApiError> {
        let state = &cx.state;
        // Hits counted by the client API but not yet written are written first.
        state.usage.flush_team(&state.store, cx.team).await?;
        Ok(state.store.list_blacklist(cx.team).await?)
    }
}

impl Run for DeleteBlacklistEntry {
    async fn run(self, cx: &Cx) -> Result<Deleted, ApiError> {
        let id = self.0;
        let old = cx
            .state
            .store
            .list_blacklist(cx.team)
            .await?
            .into_iter()
            .find(|e| e.id == id);
        cx.state
            .store
            .delete_blacklist_entry(
                cx.team,
                id,
                &cx.change(Action::BlacklistDeleted, id, old.as_ref(), None),
            )
            .await?;
        Ok(Deleted {
            id: *id.as_uuid(),
            deleted: true,
        })
    }
}
