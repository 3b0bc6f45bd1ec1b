//! The operator's operations: what the admin API and the command line do across teams (create
//! a team, list them, switch a team's features, give a team a new API key or a staff account, a
//! new set-password link, the first start's team and owner, an online backup).
//!
//! They run in an [`Operator`] context instead of a team's operation context: the operator is not a
//! member of any team and has no scopes to check; each operation names the team it acts on.

use std::future::Future;

use licensing_core::api::requests::ApiKeyInput;
use licensing_core::model::{
    Action, ApiKeyCreated, Role, SigningKey, SigningKeyState, Team, TeamCreated, TeamFeatures,
    changes,
};
use licensing_core::store::{AuditStore, Entity, Journal, StoreError, TeamStore};
use licensing_core::{ApiError, TeamId, Timestamp, UserId};

use crate::app::journal::{Acting, Journaled};
use crate::app::staff::CreatedStaff;
use crate::app::{staff, teams};
use crate::files::FileStore;
use crate::runtime::contexts::TeamContexts;
use crate::runtime::keyring::Keyring;
use crate::store::AnyStore;

/// The name of the team a first start creates.
pub const FIRST_TEAM_NAME: &str = "Default team";

/// One operation of the operator: its input is the value itself.
pub trait OperatorOperation: Send + Sized {
    /// What it answers.
    type Output: Send;
    /// Does it, as `op`'s operator.
    fn run(self, op: &Operator) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;
}

/// The operator at work: the whole store, who acts (the admin token from an address, or the
/// command line) and when.
#[derive(Clone, Debug)]
pub struct Operator {
    store: AnyStore,
    keyring: Keyring,
    /// The running server's team caches, invalidated after an operation by what its journals
    /// changed; the command line has none.
    contexts: Option<TeamContexts>,
    /// The running server's release files, for an online backup; the command line has none.
    files: Option<FileStore>,
    acting: Acting,
    now: Timestamp,
}

impl Operator {
    /// The operator through the admin API of a running server.
    pub(crate) fn admin(state: &crate::state::AppState, client: std::net::IpAddr) -> Self {
        Self {
            store: state.store.clone(),
            keyring: state.keyring.clone(),
            contexts: Some(state.contexts.clone()),
            files: Some(state.files.clone()),
            acting: Acting {
                journaled: Some(Journaled::default()),
                inbound: None,
                ..Acting::admin(client)
            },
            now: Timestamp::now(),
        }
    }

    /// The operator on the command line (or a first start), with `keyring` sealing new teams'
    /// private keys.
    pub fn command_line(store: &AnyStore, keyring: &Keyring) -> Self {
        Self {
            store: store.clone(),
            keyring: keyring.clone(),
            contexts: None,
            files: None,
            acting: Acting::command_line(),
            now: Timestamp::now(),
        }
    }

    /// Performs `operation`; then the running server drops the context of each team the
    /// operation's journals changed.
    pub async fn perform<O: OperatorOperation>(&self, operation: O) -> Result<O::Output, ApiError> {
        let done = operation.run(self).await;
        if let (Some(contexts), Some(journaled)) = (&self.contexts, &self.acting.journaled) {
            for team in journaled.take() {
                contexts.invalidate(team);
            }
        }
        done
    }

    /// 404 unless `team` exists.
    async fn team(&self, team: TeamId) -> Result<Team, ApiError> {
        self.store
            .get_team(team)
            .await?
            .ok_or_else(|| StoreError::NotFound(Entity::Team).into())
    }
}

/// A new team with fresh key pairs and a first API key (shown only in the answer).
#[derive(Debug)]
pub struct CreateTeam {
    /// Its name.
    pub name: String,
}

impl OperatorOperation for CreateTeam {
    type Output = TeamCreated;

    async fn run(self, op: &Operator) -> Result<TeamCreated, ApiError> {
        Ok(teams::create_team_with(&op.store, &op.keyring, &self.name, op.now, &op.acting).await?)
    }
}

/// Every team.
#[derive(Debug)]
pub struct ListTeams;

impl OperatorOperation for ListTeams {
    type Output = Vec<Team>;

    async fn run(self, op: &Operator) -> Result<Vec<Team>, ApiError> {
        Ok(op.store.list_teams().await?)
    }
}

/// Switches a team's features (the classloader).
#[derive(Debug)]
pub struct SetFeatures {
    /// The team.
    pub team: TeamId,
    /// Its features from now on.
    pub features: TeamFeatures,
}

impl OperatorOperation for SetFeatures {
    type Output = Team;

    async fn run(self, op: &Operator) -> Result<Team, ApiError> {
        let old = op.store.get_team(self.team).await?.map(|t| t.features);
        let journal = op.acting.journal(
            self.team,
            op.now,
            Action::FeaturesUpdated,
            self.team,
            changes(old.as_ref(), Some(&self.features), &[]),
        );
        let updated = op
            .store
            .update_features(self.team, self.features, op.now, &journal)
            .await?;
        Ok(updated)
    }
}

/// A new API key of a team, with any scopes: the way back for a team whose keys are all lost.
#[derive(Debug)]
pub struct CreateTeamKey {
    /// The team.
    pub team: TeamId,
    /// The key's name, scopes, products and expiry.
    pub input: ApiKeyInput,
}

impl OperatorOperation for CreateTeamKey {
    type Output = ApiKeyCreated;

    async fn run(self, op: &Operator) -> Result<ApiKeyCreated, ApiError> {
        teams::create_api_key(
            &op.store,
            self.team,
            self.input,
            UserId::ADMIN,
            &op.acting,
            op.now,
        )
        .await
    }
}

/// A new active signing key for a team (`signing-key rotate`).
#[derive(Debug)]
pub struct RotateSigningKey {
    /// The team.
    pub team: TeamId,
}

impl OperatorOperation for RotateSigningKey {
    type Output = SigningKey;

    async fn run(self, op: &Operator) -> Result<SigningKey, ApiError> {
        let new = teams::new_signing_key(
            &op.store,
            &op.keyring,
            (self.team, &op.acting, op.now),
            SigningKeyState::Active,
        )
        .await?;
        Ok(new)
    }
}

/// A staff account of a team, with its one-time set-password link.
#[derive(Debug)]
pub struct CreateStaff {
    /// The team (404 when there is none).
    pub team: TeamId,
    /// The address it signs in with.
    pub email: String,
    /// Its role.
    pub role: Role,
}

impl OperatorOperation for CreateStaff {
    type Output = CreatedStaff;

    async fn run(self, op: &Operator) -> Result<CreatedStaff, ApiError> {
        op.team(self.team).await?;
        staff::create_staff(
            &op.store,
            self.team,
            &self.email,
            self.role,
            op.now,
            Some(&op.acting),
        )
        .await
    }
}

/// A new set-password link for the account of an address (a forgotten password): in `team`, or
/// the address's only account. The old password keeps working until the link is used.
#[derive(Debug)]
pub struct NewPasswordLink {
    /// The account's address.
    pub email: String,
    /// Its team, when the address has accounts in several.
    pub team: Option<TeamId>,
}

impl OperatorOperation for NewPasswordLink {
    type Output = CreatedStaff;

    async fn run(self, op: &Operator) -> Result<CreatedStaff, ApiError> {
        if let Some(team) = self.team {
            op.team(team).await?;
        }
        let user = staff::account_named(&op.store, &self.email, self.team)
            .await
            .map_err(ApiError::record_not_found)?;
        Ok(staff::issue_link(&op.store, user, op.now, &op.acting).await?)
    }
}

/// On an empty store, the first team and its owner's account (with a set-password link);
/// `None` when the store holds a team already. Instances starting together on an empty database
/// create one team, not one each.
#[derive(Debug)]
pub struct FirstStart {
    /// The owner's address.
    pub owner_email: String,
}

impl OperatorOperation for FirstStart {
    type Output = Option<(TeamCreated, CreatedStaff)>;

    async fn run(self, op: &Operator) -> Result<Self::Output, ApiError> {
        op.store
            .first_start(async |store| -> Result<_, ApiError> {
                if !store.is_empty().await? {
                    return Ok(None);
                }
                let team = teams::create_team_with(
                    store,
                    &op.keyring,
                    FIRST_TEAM_NAME,
                    op.now,
                    &op.acting,
                )
                .await?;
                let owner = staff::create_staff(
                    store,
                    team.team_id,
                    &self.owner_email,
                    Role::Owner,
                    op.now,
                    Some(&op.acting),
                )
                .await?;
                Ok(Some((team, owner)))
            })
            .await
    }
}

/// An online backup: the whole store as an export archive, streamed while the server goes on
/// serving. Every team's audit log says so before the first byte leaves; an archive whose export
/// fails half way ends without its trailer, which `import` refuses.
#[derive(Debug)]
pub(crate) struct Backup;

/// How much of an online backup's archive waits in memory for its reader.
const BACKUP_BUFFER: usize = 256 * 1024;

impl OperatorOperation for Backup {
    type Output = tokio::io::DuplexStream;

    async fn run(self, op: &Operator) -> Result<tokio::io::DuplexStream, ApiError> {
        let files = op.files.clone().ok_or_else(ApiError::internal)?;
        let teams = op.store.list_teams().await?;
        let mut journal = Journal::NONE;
        for team in &teams {
            journal = journal.and(op.acting.journal(
                team.id,
                op.now,
                Action::BackupDownloaded,
                team.id,
                Vec::new(),
            ));
        }
        op.store.record_journal(&journal).await?;
        let (writer, reader) = tokio::io::duplex(BACKUP_BUFFER);
        let store = op.store.clone();
        tokio::spawn(async move {
            match crate::archive::export(&store, &files, writer).await {
                Ok(counts) => tracing::info!(
                    teams = counts.teams,
                    licenses = counts.licenses,
                    files = counts.files,
                    lines = counts.lines,
                    "backup streamed"
                ),
                Err(e) => {
                    tracing::error!(error = %e, "backup failed; the archive sent ends without its trailer")
                }
            }
        });
        Ok(reader)
    }
}
