//! (ext) The team's settings, public keys, statistics and audit log.

pub(crate) use licensing_core::operations::team::{
    ActivateSigningKey, CreateSigningKey, GetPublicKeys, GetSettings, GetStatistics, ListAudit,
    RetireSigningKey, RotateSigningKey, UpdateSettings,
};

use std::sync::Arc;

use licensing_core::ApiError;
use licensing_core::model::{
    Action, AuditEntry, Overview, PublicKeys, Resource, Scope, SigningKey, SigningKeyChange,
    SigningKeyState, Statistics, Team, TeamSettings, active_key_conflict,
};
use licensing_core::store::{AuditStore, Entity, Page, StatsStore, StoreError, TeamStore};

use super::{Cx, Operation, Run};
use crate::app::teams;
use crate::runtime::contexts::TeamContext;

/// The team's headline counts (licenses, customers, products, licenses active in the last
/// hour) as they are now: counted by the store, not from the statistics' 15-minute cache.
pub(crate) struct GetOverview;

/// The caller's team.
pub(super) async fn team(cx: &Cx) -> Result<Team, ApiError> {
    Ok(cx
        .state
        .store
        .get_team(cx.team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?)
}

impl Run for GetSettings {
    async fn run(self, cx: &Cx) -> Result<TeamSettings, ApiError> {
        Ok(team(cx).await?.settings)
    }
}

impl Run for UpdateSettings {
    async fn run(self, cx: &Cx) -> Result<TeamSettings, ApiError> {
        let team = team(cx).await?;
        let settings = self.0.apply_to(&team.settings)?;
        let updated = cx
            .state
            .store
            .update_settings(
                team.id,
                &settings,
                cx.now,
                &cx.change(
                    Action::SettingsUpdated,
                    team.id,
                    Some(&team.settings),
                    Some(&settings),
                ),
            )
            .await?;
        Ok(updated.settings)
    }
}

impl Run for GetPublicKeys {
    async fn run(self, cx: &Cx) -> Result<PublicKeys, ApiError> {
        let context = context(cx).await?;
        let keys = &context.keys;
        Ok(PublicKeys {
            public_key: keys.public_key_pem().to_owned(),
            public_key_base64: keys.public_key_base64(),
            signing_key: keys.signing_key_base64(),
            signing_keys: context.team.signing_key_list(&keys.public_keys().signing),
            updater_keys: Some(licensing_core::model::UpdaterKeys {
                minisign: keys.public_keys().signing.minisign().to_base64(),
                sparkle: keys.signing_key_base64(),
            }),
        })
    }
}

/// The team's record and opened keys, as the client API uses them.
async fn context(cx: &Cx) -> Result<Arc<TeamContext>, ApiError> {
    Ok(cx
        .state
        .contexts
        .get(&cx.state.store, cx.team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?)
}

impl Run for RotateSigningKey {
    async fn run(self, cx: &Cx) -> Result<SigningKey, ApiError> {
        new_signing_key(cx, SigningKeyState::Active).await
    }
}

impl Run for CreateSigningKey {
    async fn run(self, cx: &Cx) -> Result<SigningKey, ApiError> {
        new_signing_key(cx, SigningKeyState::Next).await
    }
}

/// A new signing key of the team, active at once or staged as next (`state`).
async fn new_signing_key(cx: &Cx, state: SigningKeyState) -> Result<SigningKey, ApiError> {
    let acting = cx.acting();
    let at = (cx.team, &acting, cx.now);
    teams::new_signing_key(&cx.state.store, &cx.state.keyring, at, state).await
}

impl Run for ActivateSigningKey {
    async fn run(self, cx: &Cx) -> Result<SigningKey, ApiError> {
        let state = &cx.state;
        let active = teams::activate_signing_key(
            &state.store,
            &state.keyring,
            cx.team,
            self.0.as_str(),
            (&cx.acting(), cx.now),
        )
        .await?;
        Ok(active)
    }
}

impl Run for RetireSigningKey {
    async fn run(self, cx: &Cx) -> Result<SigningKey, ApiError> {
        let context = context(cx).await?;
        let listed = context
            .team
            .signing_key_list(&context.keys.public_keys().signing);
        let key = listed
            .into_iter()
            .find(|k| k.kid == self.0.as_str())
            .ok_or(StoreError::NotFound(Entity::SigningKey))?;
        // The store refuses it too (a rotation may have happened since the context was read).
        if key.active || key.kid == context.keys.signing_kid() {
            return Err(active_key_conflict().into());
        }
        let journal = cx.change(Action::SigningKeyRetired, &key.kid, Some(&key), None);
        cx.state
            .store
            .change_signing_keys(
                cx.team,
                &SigningKeyChange::Retire {
                    kid: key.kid.clone(),
                },
                cx.now,
                &journal,
            )
            .await?;
        Ok(key)
    }
}

impl Run for GetStatistics {
    async fn run(self, cx: &Cx) -> Result<Arc<Statistics>, ApiError> {
        let state = &cx.state;
        let stats = state
            .stats
            .get(&state.store, &state.usage, cx.team, cx.now)
            .await?;
        if cx.reach().is_whole_team() {
            return Ok(stats);
        }
        // The figures are the team's, governed by the scope; the products named are the key's.
        let mut own = (*stats).clone();
        cx.reach().retain(&mut own.top_products);
        Ok(Arc::new(own))
    }
}

impl Operation for GetOverview {
    const NAME: &'static str = "get_overview";
    type Output = Overview;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Statistics));
    const READ_ONLY: bool = true;
}

impl Run for GetOverview {
    async fn run(self, cx: &Cx) -> Result<Overview, ApiError> {
        let hour_ago = licensing_core::Timestamp::from_millis(cx.now.as_millis() - 3_600_000);
        let count = || cx.state.store.overview(cx.team, hour_ago);
        Ok(cx.state.overviews.get(cx.team, count).await?)
    }
}

impl Run for ListAudit {
    async fn run(self, cx: &Cx) -> Result<Page<AuditEntry>, ApiError> {
        let mut query = self.0;
        cx.reach().bound(&mut query);
        let found = cx.state.store.list_audit(cx.team, &query).await?;
        Ok(Page {
            items: found
                .items
                .into_iter()
                .filter_map(|e| cx.reach().entry(e))
                .collect(),
            ..found
        })
    }
}
