//! Creating teams: key pairs, the first API key, the record.

use licensing_core::crypto::{ApiKeySecret, TeamKeys};
use licensing_core::model::{
    Action, ApiKeyRecord, Scopes, Team, TeamCreated, TeamFeatures, TeamSettings, TeamView, changes,
};
use licensing_core::store::{StoreError, TeamStore};

use crate::services::audit::Acting;
use crate::services::keyring::Keyring;
use licensing_core::{ApiKeyId, TeamId, Timestamp, UserId};

/// Creates a team with fresh RSA-2048 and Ed25519 key pairs (stored in the clear) and a first
/// API key (named "initial"), and returns what its owner needs, the API key shown this once.
pub async fn create_team<S: TeamStore>(
    store: &S,
    name: &str,
    now: Timestamp,
) -> Result<TeamCreated, StoreError> {
    create_team_with(store, &Keyring::plain(), name, now, &Acting::command_line()).await
}

/// [`create_team`], with the private keys stored as `keyring` says (sealed under its master key,
/// when it has one).
pub async fn create_team_with<S: TeamStore>(
    store: &S,
    keyring: &Keyring,
    name: &str,
    now: Timestamp,
    by: &Acting,
) -> Result<TeamCreated, StoreError> {
    let keys = tokio::task::spawn_blocking(TeamKeys::generate)
        .await
        .map_err(|e| StoreError::backend(format!("key generation task failed: {e}")))?
        .map_err(|e| StoreError::backend(format!("key generation failed: {e}")))?;
    let id = TeamId::new();
    let stored = keyring.store_form(id, &keys).map_err(StoreError::backend)?;
    let team = Team {
        id,
        name: name.to_owned(),
        settings: TeamSettings::default(),
        features: TeamFeatures::default(),
        keys: stored,
        created_at: now,
        updated_at: now,
    };
    let secret = ApiKeySecret::generate();
    let api_key = ApiKeyRecord {
        id: ApiKeyId::new(),
        team_id: team.id,
        name: "initial".into(),
        hash: secret.hash(),
        expires_at: None,
        created_at: now,
        scopes: Scopes::All,
        product_ids: None,
        created_by_user_id: Some(UserId::ADMIN),
        last_used_at: None,
    };
    let journal = by.journal(
        team.id,
        now,
        Action::TeamCreated,
        team.id,
        changes(None, Some(&TeamView::from(&team)), &[]),
    );
    store.create_team(&team, &api_key, &journal).await?;
    Ok(TeamCreated {
        team_id: team.id,
        api_key: secret.expose().to_owned(),
        public_key: keys.public_key_pem().to_owned(),
        signing_key: keys.signing_key_base64(),
    })
}
