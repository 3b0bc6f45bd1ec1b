//! Team private keys and the secrets the server reads back (webhook signing secrets, staff
//! two-step secrets) at rest: in the clear, or sealed with AES-256-GCM under the operator's
//! master key (`LICENSING_MASTER_KEY_FILE`). With a master key every one is sealed: new ones are
//! made sealed, and those found in the clear are sealed at start-up. A store whose keys or
//! secrets are sealed does not start without the key that sealed them.

use std::path::Path;
use std::sync::Arc;

use licensing_core::crypto::{
    MasterKey, StoredTeamKeys, TeamKeys, is_sealed_secret, sealed_secret_key_id,
};
use licensing_core::model::Team;
use licensing_core::store::{Journal, PaymentStore, StaffStore, TeamStore, WebhookStore};
use licensing_core::{StaffId, TeamId, Timestamp, WebhookId};

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

    /// How `secret` (of `purpose`, see [`webhook_purpose`], [`two_step_purpose`]) is stored:
    /// sealed under the master key, or as it is.
    pub fn seal_secret(&self, purpose: &str, secret: &str) -> Result<String, String> {
        match &self.master {
            None => Ok(secret.to_owned()),
            Some(master) => master
                .seal_secret(purpose, secret)
                .map_err(|e| format!("sealing a secret failed: {e}")),
        }
    }

    /// A stored secret of `purpose`, opened (one stored in the clear is itself).
    pub fn open_secret(
        &self,
        purpose: &str,
        stored: &str,
    ) -> Result<zeroize::Zeroizing<String>, String> {
        if !is_sealed_secret(stored) {
            return Ok(zeroize::Zeroizing::new(stored.to_owned()));
        }
        let key_id = sealed_secret_key_id(stored).unwrap_or("?");
        let Some(master) = &self.master else {
            return Err(format!(
                "a secret ({purpose}) is sealed with master key {key_id}: start the server with LICENSING_MASTER_KEY_FILE naming the file of that key"
            ));
        };
        master.open_secret(purpose, stored).map_err(|e| {
            format!(
                "a secret ({purpose}) cannot be opened with master key {}: {e}",
                master.id()
            )
        })
    }

    /// `stored` (a secret of `purpose`, stored by `from`) as this keyring stores it: sealed
    /// under its master key, or in the clear without one. `None` when it is already so.
    fn restored(
        &self,
        from: &Keyring,
        purpose: &str,
        stored: &str,
    ) -> Result<Option<String>, String> {
        let sealed_by = sealed_secret_key_id(stored);
        if sealed_by == self.master_id() {
            return Ok(None);
        }
        let plain = from.open_secret(purpose, stored)?;
        self.seal_secret(purpose, &plain).map(Some)
    }

    /// `team`'s private keys, and its staged next signing key's, opened with `from` and stored
    /// as this keyring stores keys.
    fn resealed(
        &self,
        team: &Team,
        from: &Keyring,
    ) -> Result<(StoredTeamKeys, Option<StoredTeamKeys>), String> {
        let stored = self.store_form(team.id, &from.open(team)?)?;
        let next = match &team.next_keys {
            None => None,
            Some(next) => {
                let staged = Team {
                    keys: next.clone(),
                    ..team.clone()
                };
                Some(self.store_form(team.id, &from.open(&staged)?)?)
            }
        };
        Ok((stored, next))
    }

    /// Checks that every team's keys and secrets can be opened, and with a master key seals
    /// those found in the clear. Returns how many records it sealed.
    pub async fn prepare<S: TeamStore + WebhookStore + StaffStore + PaymentStore>(
        &self,
        store: &S,
    ) -> Result<usize, String> {
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
                    let (stored, next) = self.resealed(&team, self)?;
                    store
                        .update_team_keys(team.id, &stored, next.as_ref(), Timestamp::now())
                        .await
                        .map_err(|e| format!("sealing team {}'s keys failed: {e}", team.id))?;
                    sealed += 1;
                }
            }
            sealed += self.reseal_secrets(store, team.id, self).await?;
        }
        Ok(sealed)
    }

    /// Stores the secrets of `team`'s webhook endpoints and staff accounts as this keyring
    /// does, opening them with `from`; how many records changed. A secret sealed with a key
    /// neither keyring holds is an error that names it.
    async fn reseal_secrets<S: WebhookStore + StaffStore + PaymentStore>(
        &self,
        store: &S,
        team: TeamId,
        from: &Keyring,
    ) -> Result<usize, String> {
        let mut changed = 0;
        let failed = |what: &str, e: licensing_core::store::StoreError| {
            format!("storing the secrets of team {team}'s {what} failed: {e}")
        };
        for mut endpoint in store
            .list_webhooks(team)
            .await
            .map_err(|e| failed("webhooks", e))?
        {
            let purpose = webhook_purpose(endpoint.id);
            let mut touched = false;
            if let Some(new) = self.restored(from, &purpose, &endpoint.secret)? {
                endpoint.secret = new;
                touched = true;
            }
            if let Some(previous) = &endpoint.previous_secret
                && let Some(new) = self.restored(from, &purpose, previous)?
            {
                endpoint.previous_secret = Some(new);
                touched = true;
            }
            if touched {
                store
                    .update_webhook(&endpoint, &Journal::NONE)
                    .await
                    .map_err(|e| failed("webhooks", e))?;
                changed += 1;
            }
        }
        for mut integration in store
            .list_integrations(team)
            .await
            .map_err(|e| failed("payment integrations", e))?
        {
            let purpose = licensing_core::model::secret_purpose(team, integration.provider);
            let mut touched = false;
            let stored: [Option<&mut String>; 3] = [
                Some(&mut integration.webhook_secret),
                integration.previous_secret.as_mut(),
                integration.api_key.as_mut(),
            ];
            for stored in stored.into_iter().flatten() {
                if let Some(new) = self.restored(from, &purpose, stored)? {
                    *stored = new;
                    touched = true;
                }
            }
            if touched {
                store
                    .put_integration(&integration, &Journal::NONE)
                    .await
                    .map_err(|e| failed("payment integrations", e))?;
                changed += 1;
            }
        }
        for mut user in store
            .list_staff(team)
            .await
            .map_err(|e| failed("staff accounts", e))?
        {
            let purpose = two_step_purpose(user.id);
            let Some(two_step) = &mut user.two_step else {
                continue;
            };
            if let Some(new) = self.restored(from, &purpose, &two_step.secret)? {
                two_step.secret = new;
                store
                    .update_staff(&user, &Journal::NONE)
                    .await
                    .map_err(|e| failed("staff accounts", e))?;
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Re-seals every team's keys and secrets from `self` (the old key) under `new`. Returns
    /// how many teams.
    pub async fn rotate<S: TeamStore + WebhookStore + StaffStore + PaymentStore>(
        &self,
        store: &S,
        new: &Keyring,
    ) -> Result<usize, String> {
        self.prepare(store).await?;
        let teams = store
            .list_teams()
            .await
            .map_err(|e| format!("reading the teams failed: {e}"))?;
        for team in &teams {
            let (stored, next) = new.resealed(team, self)?;
            store
                .update_team_keys(team.id, &stored, next.as_ref(), Timestamp::now())
                .await
                .map_err(|e| format!("re-sealing team {}'s keys failed: {e}", team.id))?;
            new.reseal_secrets(store, team.id, self).await?;
        }
        Ok(teams.len())
    }
}

/// What a webhook endpoint's signing secrets are bound to when sealed.
pub fn webhook_purpose(endpoint: WebhookId) -> String {
    format!("webhook {endpoint}")
}

/// What a staff account's two-step secret is bound to when sealed.
pub fn two_step_purpose(account: StaffId) -> String {
    format!("two-step {account}")
}

fn needs_key(team: TeamId, key_id: &str) -> String {
    format!(
        "team {team}'s private keys are sealed with master key {key_id}: start the server with LICENSING_MASTER_KEY_FILE (or --master-key-file) naming the file of that key"
    )
}
