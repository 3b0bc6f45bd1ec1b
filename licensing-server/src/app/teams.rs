//! Creating teams (key pairs, the first API key, the record) and API keys.

use licensing_core::ApiError;
use licensing_core::api::requests::ApiKeyInput;
use licensing_core::crypto::{ApiKeySecret, TeamKeys};
use licensing_core::model::{
    Action, ApiKeyCreated, ApiKeyRecord, ApiKeyView, FieldChange, Scopes, SigningKey,
    SigningKeyChange, SigningKeyState, Team, TeamCreated, TeamFeatures, TeamSettings, TeamView,
    changes,
};
use licensing_core::store::{ApiKeyStore, Entity, ProductStore, StoreError, TeamStore};

use crate::app::journal::Acting;
use crate::runtime::keyring::Keyring;
use licensing_core::{ApiKeyId, TeamId, Timestamp, UserId};

/// Makes a new Ed25519 signing key of `team` (its private half sealed as `keyring` stores
/// keys), in `state`:
/// - `Active`: it signs from now on; the former keys stay listed, inactive, until retired.
///   Audited as `signing_key.rotated`.
/// - `Next`: listed, signing nothing until it is activated. Audited as `signing_key.created`.
///
/// 409 while another key is staged as next. The caller drops the team's cached context.
pub async fn new_signing_key<S: TeamStore>(
    store: &S,
    keyring: &Keyring,
    (team, by, now): (TeamId, &Acting, Timestamp),
    state: SigningKeyState,
) -> Result<SigningKey, ApiError> {
    let team = store
        .get_team(team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?;
    if let Some(next) = team.next_signing_key() {
        return Err(StoreError::State(format!(
            "a next signing key ({kid}) is already staged: activate it (signing-keys/{kid}/activate) or retire it (DELETE signing-keys/{kid}) first",
            kid = next.kid
        ))
        .into());
    }
    let keyring = keyring.clone();
    let opened = team.clone();
    // Opening the RSA key and making the new pair cost milliseconds: off the runtime.
    let (keys, rotated, stored) = tokio::task::spawn_blocking(move || {
        let keys = keyring.open(&opened)?;
        let rotated = keys
            .with_new_signing_key()
            .map_err(|e| format!("making a signing key failed: {e}"))?;
        let stored = keyring.store_form(opened.id, &rotated)?;
        Ok::<_, String>((keys, rotated, stored))
    })
    .await
    .map_err(|e| ApiError::internal_because("signing key task failed", e))?
    .map_err(|e| ApiError::internal_because("signing key rotation failed", e))?;
    let active = &keys.public_keys().signing;
    let current = team
        .signing_key_list(active)
        .into_iter()
        .find(|k| k.active)
        .unwrap_or_else(|| SigningKey::of(active, team.created_at, SigningKeyState::Active));
    let new = SigningKey::of(&rotated.public_keys().signing, now, state);
    let (action, change) = match state {
        SigningKeyState::Next => (
            Action::SigningKeyCreated,
            SigningKeyChange::Stage {
                keys: stored,
                new: new.clone(),
                current: current.clone(),
            },
        ),
        _ => (
            Action::SigningKeyRotated,
            SigningKeyChange::Rotate {
                keys: stored,
                new: new.clone(),
                current: current.clone(),
            },
        ),
    };
    let journal = match state {
        SigningKeyState::Next => by.change(team.id, now, action, &new.kid, None, Some(&new)),
        _ => by.change(team.id, now, action, &new.kid, Some(&current), Some(&new)),
    };
    store
        .change_signing_keys(team.id, &change, now, &journal)
        .await?;
    Ok(new)
}

/// Makes `team`'s staged `next` signing key `kid` the active one: answers and new files are
/// signed with it from then on; the former active key stays listed (and trusted) until retired.
/// Audited as `signing_key.rotated`; the caller drops the team's cached context.
pub async fn activate_signing_key<S: TeamStore>(
    store: &S,
    keyring: &Keyring,
    team: TeamId,
    kid: &str,
    (by, now): (&Acting, Timestamp),
) -> Result<SigningKey, ApiError> {
    let found = store
        .get_team(team)
        .await?
        .ok_or(StoreError::NotFound(Entity::Team))?;
    let keys = keyring
        .open(&found)
        .map_err(|e| ApiError::internal_because("opening the team's keys", e))?;
    let listed = found.signing_key_list(&keys.public_keys().signing);
    let key = listed
        .iter()
        .find(|k| k.kid == kid)
        .ok_or(StoreError::NotFound(Entity::SigningKey))?;
    if key.active {
        return Ok(key.clone());
    }
    let current = listed.iter().find(|k| k.active).cloned();
    let new = SigningKey {
        active: true,
        state: SigningKeyState::Active,
        ..key.clone()
    };
    let journal = by.change(
        team,
        now,
        Action::SigningKeyRotated,
        kid,
        current.as_ref(),
        Some(&new),
    );
    store
        .change_signing_keys(
            team,
            &SigningKeyChange::Activate {
                kid: kid.to_owned(),
            },
            now,
            &journal,
        )
        .await?;
    Ok(new)
}

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
        signing_keys: vec![SigningKey::of(
            &keys.public_keys().signing,
            now,
            SigningKeyState::Active,
        )],
        next_keys: None,
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
    if store.get_team(team).await?.is_none() {
        return Err(ApiError::from(StoreError::NotFound(Entity::Team)));
    }
    if let Some(products) = &input.product_ids {
        let found = store.get_products(team, products).await?;
        if found.len() != products.len() {
            return Err(ApiError::from(StoreError::NotFound(Entity::Product)));
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
    if let Some(entry) = journal.audit.first_mut() {
        entry.changes.push(FieldChange::secret("key"));
    }
    store.create_api_key(&record, &journal).await?;
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

/// The keys among `keys` that `creator` made, and those that they made, and so on: what goes
/// with `creator` when it is revoked or deleted. In the order found, each once.
pub fn keys_made_by(keys: &[ApiKeyRecord], creator: UserId) -> Vec<&ApiKeyRecord> {
    let mut made: Vec<&ApiKeyRecord> = Vec::new();
    let mut frontier = vec![creator];
    while let Some(maker) = frontier.pop() {
        for key in keys {
            if key.created_by_user_id == Some(maker)
                && UserId::from(key.id) != creator
                && !made.iter().any(|m| m.id == key.id)
            {
                made.push(key);
                frontier.push(key.id.into());
            }
        }
    }
    made
}

/// The journal of revoking `keys` because `creator` (a key revoked in the same step, or a
/// deleted staff account) made them: an audit entry and an event for each, the entry naming
/// the creator in `revokedWith`.
fn revoked_with(
    keys: &[&ApiKeyRecord],
    creator: UserId,
    team: TeamId,
    by: &Acting,
    now: Timestamp,
) -> licensing_core::store::Journal {
    let mut journal = licensing_core::store::Journal::NONE;
    for key in keys {
        let mut one = by.change(
            team,
            now,
            Action::ApiKeyRevoked,
            key.id,
            Some(&ApiKeyView::from(*key)),
            None,
        );
        if let Some(entry) = one.audit.first_mut() {
            entry.changes.push(FieldChange {
                field: "revokedWith".into(),
                old: None,
                new: Some(creator.to_string().into()),
                secret: false,
                redacted: false,
            });
        }
        journal = journal.and(one);
    }
    journal
}

/// Revokes key `id` of `team` and every key it made (transitively), in one step, as `by`'s
/// change; the ids revoked, `id` first. 404 for a key the team does not have; 400 when no
/// usable key would be left. `may_revoke` decides, for each key, whether `by` may revoke it
/// (a key hands on, and takes away, no more than it has).
pub async fn revoke_api_key<S: ApiKeyStore>(
    store: &S,
    team: TeamId,
    id: ApiKeyId,
    by: &Acting,
    now: Timestamp,
    may_revoke: impl Fn(&ApiKeyRecord) -> Result<(), ApiError>,
) -> Result<Vec<ApiKeyId>, ApiError> {
    let keys = store.list_api_keys(team).await?;
    let Some(target) = keys.iter().find(|k| k.id == id) else {
        return Err(ApiError::from(StoreError::NotFound(Entity::ApiKey)));
    };
    may_revoke(target)?;
    let made = keys_made_by(&keys, id.into());
    let revoked: Vec<ApiKeyId> = std::iter::once(id)
        .chain(made.iter().map(|k| k.id))
        .collect();
    let left = keys
        .iter()
        .filter(|k| !revoked.contains(&k.id) && k.is_usable(now))
        .count();
    if left == 0 {
        let with = if made.is_empty() {
            ""
        } else {
            " (the keys it made go with it)"
        };
        return Err(ApiError::bad_field(
            "apiKeyId",
            &format!(
                "is the team's last usable API key{with}: create another one before revoking it"
            ),
        ));
    }
    let journal = by
        .change(
            team,
            now,
            Action::ApiKeyRevoked,
            id,
            Some(&ApiKeyView::from(target)),
            None,
        )
        .and(revoked_with(&made, id.into(), team, by, now));
    store.delete_api_keys(team, &revoked, &journal).await?;
    Ok(revoked)
}

/// Revokes every key that `creator` (a staff account being deleted) made, transitively, in one
/// step, as `by`'s change; how many.
pub async fn revoke_keys_made_by<S: ApiKeyStore>(
    store: &S,
    team: TeamId,
    creator: UserId,
    by: &Acting,
    now: Timestamp,
) -> Result<usize, StoreError> {
    let keys = store.list_api_keys(team).await?;
    let made = keys_made_by(&keys, creator);
    if made.is_empty() {
        return Ok(0);
    }
    let ids: Vec<ApiKeyId> = made.iter().map(|k| k.id).collect();
    let journal = revoked_with(&made, creator, team, by, now);
    match store.delete_api_keys(team, &ids, &journal).await {
        Ok(_) | Err(StoreError::NotFound(_)) => Ok(ids.len()),
        Err(e) => Err(e),
    }
}
