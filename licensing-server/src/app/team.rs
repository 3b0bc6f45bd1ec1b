//! (ext) The team's settings, public keys, statistics and audit log.

use std::sync::Arc;

use licensing_core::ApiError;
use licensing_core::api::requests::{AuditQuery, SettingsBody};
use licensing_core::model::{
    Action, AuditEntry, PublicKeys, Resource, Scope, Statistics, Team, TeamSettings,
};
use licensing_core::store::{AuditStore, Entity, Page, StoreError, TeamStore};

use super::{Cx, Operation};

/// The team's settings.
pub(crate) struct GetSettings;

/// Changes the team's settings: members left out keep their value.
pub(crate) struct UpdateSettings(pub(crate) SettingsBody);

/// The keys the team's clients check its answers with (any caller of the team).
pub(crate) struct GetPublicKeys;

/// The team's statistics (a restricted key's own products only among the top products).
pub(crate) struct GetStatistics;

/// One page of the audit log, newest first: entries about other products left out, and the
/// values of records the caller may not read withheld.
pub(crate) struct ListAudit(pub(crate) AuditQuery);

async fn team(cx: &Cx) -> Result<Team, ApiError> {
    Ok(cx
        .state
        .store
        .get_team(cx.team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?)
}

impl Operation for GetSettings {
    type Output = TeamSettings;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Settings));

    async fn run(self, cx: &Cx) -> Result<TeamSettings, ApiError> {
        Ok(team(cx).await?.settings)
    }
}

impl Operation for UpdateSettings {
    type Output = TeamSettings;
    const SCOPE: Option<Scope> = Some(Scope::write(Resource::Settings));

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
        cx.state.contexts.invalidate(team.id);
        Ok(updated.settings)
    }
}

impl Operation for GetPublicKeys {
    type Output = PublicKeys;
    const SCOPE: Option<Scope> = None;

    async fn run(self, cx: &Cx) -> Result<PublicKeys, ApiError> {
        let team = team(cx).await?;
        let keys = cx
            .state
            .keyring
            .open(&team)
            .map_err(|e| ApiError::internal_because("team keys unreadable", e))?;
        Ok(PublicKeys {
            public_key: keys.public_key_pem().to_owned(),
            public_key_base64: keys.public_key_base64(),
            signing_key: keys.signing_key_base64(),
        })
    }
}

impl Operation for GetStatistics {
    type Output = Arc<Statistics>;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::Statistics));

    async fn run(self, cx: &Cx) -> Result<Arc<Statistics>, ApiError> {
        let state = &cx.state;
        let stats = state
            .stats
            .get(&state.store, &state.usage, cx.team, cx.now)
            .await?;
        let Some(allowed) = cx.products() else {
            return Ok(stats);
        };
        // The figures are the team's, governed by the scope; the products named are the key's.
        let mut own = (*stats).clone();
        own.top_products.retain(|p| allowed.contains(&p.id));
        Ok(Arc::new(own))
    }
}

impl Operation for ListAudit {
    type Output = Page<AuditEntry>;
    const SCOPE: Option<Scope> = Some(Scope::read(Resource::AuditLog));

    async fn run(self, cx: &Cx) -> Result<Page<AuditEntry>, ApiError> {
        let mut query = self.0;
        // Entries about other products are left out by the store, so that pages and counts
        // are right.
        query.products = cx.products().clone();
        let found = cx.state.store.list_audit(cx.team, &query).await?;
        Ok(Page {
            items: found
                .items
                .into_iter()
                .filter_map(|e| e.seen_by(&cx.caller.scopes, &cx.caller.product_ids))
                .collect(),
            ..found
        })
    }
}
