//! (ext) The team's public keys and settings.

use licensing_core::ApiError;
use licensing_core::api::requests::SettingsBody;
use licensing_core::model::{Action, PublicKeys, Team};
use licensing_core::store::{Entity, StoreError, TeamStore};

use super::{Dev, Input};
use crate::http::{Handled, internal, store_error, success};

async fn team(dev: &Dev) -> Result<Team, ApiError> {
    Ok(dev
        .state
        .store
        .get_team(dev.team)
        .await
        .map_err(store_error)?
        .ok_or(StoreError::NotFound(Entity::Team))?)
}

pub(super) async fn public_key(dev: Dev, (): (), _: Input) -> Handled {
    let team = team(&dev).await?;
    let keys = dev
        .state
        .keyring
        .open(&team)
        .map_err(|e| internal("team keys unreadable", e))?;
    Ok(success(
        200,
        PublicKeys {
            public_key: keys.public_key_pem().to_owned(),
            public_key_base64: keys.public_key_base64(),
            signing_key: keys.signing_key_base64(),
        },
        "Public keys retrieved",
    ))
}

pub(super) async fn get_settings(dev: Dev, (): (), _: Input) -> Handled {
    let team = team(&dev).await?;
    Ok(success(200, team.settings, "Settings retrieved"))
}

pub(super) async fn put_settings(dev: Dev, (): (), input: Input) -> Handled {
    let body = input.json().await?;
    let team = team(&dev).await?;
    let settings = SettingsBody::apply(&body, &team.settings)?;
    let updated = dev
        .state
        .store
        .update_settings(
            team.id,
            &settings,
            dev.now,
            &dev.change(
                Action::SettingsUpdated,
                team.id,
                Some(&team.settings),
                Some(&settings),
            ),
        )
        .await
        .map_err(store_error)?;
    dev.state.contexts.invalidate(team.id);
    Ok(success(200, updated.settings, "Settings updated"))
}
