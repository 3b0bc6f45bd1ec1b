//! Creating teams (key pairs, the first API key, the record) and API keys.

use licensing_core::ApiError;
use licensing_core::api::requests::ApiKeyInput;
use licensing_core::crypto::{ApiKeySecret, TeamKeys};
use licensing_core::model::{
    Action, ApiKeyCreated, ApiKeyRecord, ApiKeyView, FieldChange, Scopes, Team, TeamCreated,
    TeamFeatures, TeamSettings, TeamView, changes,
};
use licensing_core::store::{ApiKeyStore, Entity, ProductStore, StoreError, TeamStore};

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

/// Mints an API key of `team` as `input` asks (its products must be the team's), created by
/// `created_by` and recorded as `by`'s change; the answer holds the key, shown this once. The
/// developer API, the admin API and the command line (for a team whose keys are all lost) all
/// create keys here.
pub async fn create_api_key<S: TeamStore + ApiKeyStore + ProductStore>(
    store: &S,
    team: TeamId,
    input: ApiKeyInput,
    created_by: UserId,
    by: &Acting,
    now: Timestamp,
) -> Result<ApiKeyCreated, ApiError> {
    let store_error = crate::http::store_error;
    if store.get_team(team).await.map_err(store_error)?.is_none() {
        return Err(store_error(StoreError::NotFound(Entity::Team)));
    }
    if let Some(products) = &input.product_ids {
        let found = store
            .get_products(team, products)
            .await
            .map_err(store_error)?;
        if found.len() != products.len() {
            return Err(store_error(StoreError::NotFound(Entity::Product)));
        }
    }
    let secret = ApiKeySecret::generate();
    let record = ApiKeyRecord {
        id: ApiKeyId::new(),
        team_id: team,
        name: input.name,
        hash: secret.hash(),
        expires_at: input.expires_at,
        created_at: now,
        scopes: input.scopes,
        product_ids: input.product_ids,
        created_by_user_id: Some(created_by),
        last_used_at: None,
    };
    let mut journal = by.change(
        team,
        now,
        Action::ApiKeyCreated,
        record.id,
        None,
        Some(&ApiKeyView::from(&record)),
    );
    if let Some(entry) = &mut journal.audit {
        entry.changes.push(FieldChange::secret("key"));
    }
    store
        .create_api_key(&record, &journal)
        .await
        .map_err(store_error)?;
    Ok(ApiKeyCreated {
        id: record.id,
        name: record.name,
        key: secret.expose().to_owned(),
        expires_at: record.expires_at,
        created_at: record.created_at,
        scopes: record.scopes,
        product_ids: record.product_ids,
        created_by_user_id: record.created_by_user_id,
    })
}
