//! `team create`, `user create`, `user link` and `api-key create`: the operator's operations on
//! a store no server holds open (or on PostgreSQL, beside running servers).

use licensing_core::model::Role;
use licensing_core::{ResultCode, TeamId, Timestamp};
use licensing_server::operator::{
    CreateStaff, CreateTeam, CreateTeamKey, NewPasswordLink, Operator, RotateSigningKey,
};
use licensing_server::runtime::keyring::Keyring;
use licensing_server::staff;

use super::{describe, open_for_command};
use crate::StoreArgs;

/// The set-password link of an account.
pub(crate) fn password_link(base: &str, created: &staff::CreatedStaff) -> String {
    format!(
        "{}/dashboard/set-password/{}/{}",
        base.trim_end_matches('/'),
        created.user.id,
        created.link_secret
    )
}

pub(crate) async fn team_create(
    name: &str,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
    master_key_file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let keyring = Keyring::load(master_key_file).map_err(anyhow::Error::msg)?;
    let store = open_for_command(data_dir, database_url).await?;
    keyring.prepare(&store).await.map_err(anyhow::Error::msg)?;
    let team = Operator::command_line(&store, &keyring)
        .perform(CreateTeam {
            name: name.to_owned(),
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!("{}", serde_json::to_string(&team)?);
    Ok(())
}

pub(crate) async fn user_create(
    team: TeamId,
    email: &str,
    role: Role,
    url: &str,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let created = store
        .operator()
        .await?
        .perform(CreateStaff {
            team,
            email: email.to_owned(),
            role,
        })
        .await
        .map_err(|e| match e.code() {
            ResultCode::TeamNotFound => anyhow::anyhow!("there is no team {team}"),
            _ => anyhow::anyhow!("{}", describe(&e)),
        })?;
    println!(
        "Created {} ({}). Its set-password link works once, for {} hours:\n{}",
        created.user.email.as_str(),
        created.user.role,
        staff::LINK_LIFETIME_HOURS,
        password_link(url, &created)
    );
    Ok(())
}

pub(crate) async fn user_link(
    email: &str,
    team: Option<TeamId>,
    url: &str,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let issued = store
        .operator()
        .await?
        .perform(NewPasswordLink {
            email: email.to_owned(),
            team,
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!(
        "A new set-password link for {}, valid once for {} hours:\n{}",
        issued.user.email.as_str(),
        staff::LINK_LIFETIME_HOURS,
        password_link(url, &issued)
    );
    Ok(())
}

pub(crate) async fn signing_key_rotate(
    team: TeamId,
    master_key_file: Option<&std::path::Path>,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let keyring = Keyring::load(master_key_file).map_err(anyhow::Error::msg)?;
    let new = store
        .operator_with(&keyring)
        .await?
        .perform(RotateSigningKey { team })
        .await
        .map_err(|e| match e.code() {
            ResultCode::TeamNotFound => anyhow::anyhow!("there is no team {team}"),
            _ => anyhow::anyhow!("{}", describe(&e)),
        })?;
    println!("{}", serde_json::to_string(&new)?);
    Ok(())
}

pub(crate) async fn api_key_create(
    team: TeamId,
    name: &str,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let operator = store.operator().await?;
    let now = Timestamp::now();
    let input = licensing_core::api::requests::ApiKeyBody::named(name);
    let input = licensing_core::api::requests::ApiKeyBody::parse(&serde_json::to_vec(&input)?, now)
        .map_err(|e| anyhow::anyhow!("{}", e.details()))?;
    let created = operator
        .perform(CreateTeamKey { team, input })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!("{}", serde_json::to_string(&created)?);
    Ok(())
}
