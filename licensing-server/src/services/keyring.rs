//! Team private keys at rest: in the clear, or sealed with AES-256-GCM under the operator's
//! master key (`LICENSING_MASTER_KEY_FILE`). With a master key every team's keys are sealed: new
//! teams are made sealed, and keys found in the clear are sealed at start-up. A store whose keys
//! are sealed does not start without the key that sealed them.

use std::path::Path;
use std::sync::Arc;

use licensing_core::crypto::{MasterKey, StoredTeamKeys, TeamKeys};
use licensing_core::model::Team;
use licensing_core::store::TeamStore;
use licensing_core::{TeamId, Timestamp};

/// The master key, when the operator gave one.
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    master: Option<Arc<MasterKey>>,
}

impl Keyring {
    /// Keys in the clear (no master key).
    pub fn plain() -> Self {
        Self::default()
    }

    /// Keys sealed under `master`.
    pub fn sealed(master: MasterKey) -> Self {
        Self {
            master: Some(Arc::new(master)),
        }
    }

    /// Reads the master key file, when one is named. Warns when other users may read it.
    pub fn load(path: Option<&Path>) -> Result<Self, String> {
        let Some(path) = path else {
            return Ok(Self::plain());
        };
        let contents = zeroize::Zeroizing::new(std::fs::read(path).map_err(|e| {
            format!(
                "cannot read the master key file {} (LICENSING_MASTER_KEY_FILE): {e}",
                path.display()
            )
        })?);
        let master = MasterKey::from_file(&contents)
            .map_err(|e| format!("the master key file {}: {e}", path.display()))?;
        if crate::datadir::readable_by_others(path) {
            tracing::warn!(
                path = %path.display(),
                "the master key file is readable by other users: chmod 600 it"
            );
        }
        Ok(Self::sealed(master))
    }

    /// The master key's id, when there is one.
    pub fn master_id(&self) -> Option<&str> {
        self.master.as_deref().map(MasterKey::id)
    }

    /// How `team`'s keys are stored: sealed under the master key, or in the clear.
    pub fn store_form(&self, team: TeamId, keys: &TeamKeys) -> Result<StoredTeamKeys, String> {
        let plain = keys
            .to_plain()
            .map_err(|e| format!("exporting the team's keys failed: {e}"))?;
        match &self.master {
            None => Ok(StoredTeamKeys::Plain(plain)),
            Some(master) => master
                .seal(team, &plain)
                .map(StoredTeamKeys::Sealed)
                .map_err(|e| format!("sealing the team's keys failed: {e}")),
        }
    }

    /// A team's usable keys.
    pub fn open(&self, team: &Team) -> Result<TeamKeys, String> {
        let plain = match (&team.keys, &self.master) {
            (StoredTeamKeys::Plain(plain), _) => std::borrow::Cow::Borrowed(plain),
            (StoredTeamKeys::Sealed(sealed), Some(master)) => {
                std::borrow::Cow::Owned(master.open(team.id, sealed).map_err(|e| {
                    format!(
                        "team {}'s private keys cannot be opened with master key {}: {e}",
                        team.id,
                        master.id()
                    )
                })?)
            }
            (StoredTeamKeys::Sealed(sealed), None) => {
                return Err(needs_key(team.id, &sealed.key_id));
            }
        };
        TeamKeys::from_plain(&plain)
            .map_err(|e| format!("team {}'s keys are unusable: {e}", team.id))
    }

    /// Checks that every team's keys can be opened, and with a master key seals those found in
    /// the clear. Returns how many it sealed.
    pub async fn prepare<S: TeamStore>(&self, store: &S) -> Result<usize, String> {
        let teams = store
            .list_teams()
            .await
            .map_err(|e| format!("reading the teams failed: {e}"))?;
        let mut sealed = 0;
        for team in teams {
            match (&team.keys, &self.master) {
                (StoredTeamKeys::Sealed(s), None) => return Err(needs_key(team.id, &s.key_id)),
                (StoredTeamKeys::Sealed(s), Some(master)) if s.key_id != master.id() => {
                    return Err(format!(
                        "team {}'s private keys are sealed with master key {}, but LICENSING_MASTER_KEY_FILE holds key {}: start with the key that sealed them (or re-seal with `licensing-server master-key rotate`)",
                        team.id,
                        s.key_id,
                        master.id()
                    ));
                }
                (StoredTeamKeys::Sealed(_), Some(_)) => {
                    self.open(&team)?;
                }
                (StoredTeamKeys::Plain(_), None) => {}
                (StoredTeamKeys::Plain(_), Some(_)) => {
                    let keys = self.open(&team)?;
                    let stored = self.store_form(team.id, &keys)?;
                    store
                        .update_team_keys(team.id, &stored, Timestamp::now())
                        .await
                        .map_err(|e| format!("sealing team {}'s keys failed: {e}", team.id))?;
                    sealed += 1;
                }
            }
        }
        Ok(sealed)
    }

    /// Re-seals every team's keys from `self` (the old key) under `new`. Returns how many.
    pub async fn rotate<S: TeamStore>(&self, store: &S, new: &Keyring) -> Result<usize, String> {
        self.prepare(store).await?;
        let teams = store
            .list_teams()
            .await
            .map_err(|e| format!("reading the teams failed: {e}"))?;
        for team in &teams {
            let keys = self.open(team)?;
            let stored = new.store_form(team.id, &keys)?;
            store
                .update_team_keys(team.id, &stored, Timestamp::now())
                .await
                .map_err(|e| format!("re-sealing team {}'s keys failed: {e}", team.id))?;
        }
        Ok(teams.len())
    }
}

fn needs_key(team: TeamId, key_id: &str) -> String {
    format!(
        "team {team}'s private keys are sealed with master key {key_id}: start the server with LICENSING_MASTER_KEY_FILE (or --master-key-file) naming the file of that key"
    )
}
