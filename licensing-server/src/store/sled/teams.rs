//! Teams and their API keys.

use super::*;

impl TeamStore for SledStore {
    async fn create_team(
        &self,
        team: &Team,
        first_key: &ApiKeyRecord,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.put_record(team_key(team.id), team)?;
            tx.put_record(api_key_key(&first_key.hash), first_key)?;
            tx.put(
                team_api_key_key(team.id, first_key.id),
                first_key.hash.as_bytes().to_vec(),
            );
            Ok(())
        })
        .await
    }

    async fn get_team(&self, id: TeamId) -> StoreResult<Option<Team>> {
        Ok(self.get_record(&team_key(id))?)
    }

    async fn list_teams(&self) -> StoreResult<Vec<Team>> {
        let mut teams: Vec<Team> = self.scan(&[tag::TEAM])?;
        teams.sort_by_key(|t| (t.created_at, t.id));
        Ok(teams)
    }

    async fn update_settings(
        &self,
        id: TeamId,
        settings: &TeamSettings,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.journaled(journal, |tx| {
            change_team(tx, id, now, |team| {
                team.settings = settings.clone();
                Ok(())
            })
        })
        .await
    }

    async fn update_features(
        &self,
        id: TeamId,
        features: TeamFeatures,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.journaled(journal, |tx| {
            change_team(tx, id, now, |team| {
                team.features = features;
                Ok(())
            })
        })
        .await
    }

    async fn update_team_keys(
        &self,
        id: TeamId,
        keys: &licensing_core::crypto::StoredTeamKeys,
        next: Option<&licensing_core::crypto::StoredTeamKeys>,
        now: Timestamp,
    ) -> StoreResult<Team> {
        self.durable(|tx| {
            change_team(tx, id, now, |team| {
                team.set_keys(keys, next);
                Ok(())
            })
        })
        .await
    }

    async fn change_signing_keys(
        &self,
        id: TeamId,
        change: &licensing_core::model::SigningKeyChange,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.journaled(journal, |tx| {
            change_team(tx, id, now, |team| team.change_signing_keys(change))
        })
        .await
    }
}

/// Team `id` changed by `change`, stamped `now`, written in `tx`.
fn change_team(
    tx: &mut Tx<'_>,
    id: TeamId,
    now: Timestamp,
    change: impl FnOnce(&mut Team) -> StoreResult<()>,
) -> StoreResult<Team> {
    let mut team: Team = tx
        .get_record(&team_key(id))?
        .ok_or(StoreError::NotFound(Entity::Team))?;
    change(&mut team)?;
    team.updated_at = now;
    tx.put_record(team_key(id), &team)?;
    Ok(team)
}

impl ApiKeyStore for SledStore {
    async fn create_api_key(&self, k: &ApiKeyRecord, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(k.team_id)?;
            tx.put_record(api_key_key(&k.hash), k)?;
            tx.put(
                team_api_key_key(k.team_id, k.id),
                k.hash.as_bytes().to_vec(),
            );
            Ok(())
        })
        .await
    }

    async fn find_api_key(&self, hash: &ApiKeyHash) -> StoreResult<Option<ApiKeyRecord>> {
        // The key is the SHA-256 of a secret; looking it up by hash reveals nothing of the secret.
        Ok(self.get_record(&api_key_key(hash))?)
    }

    async fn list_api_keys(&self, team: TeamId) -> StoreResult<Vec<ApiKeyRecord>> {
        let prefix = key(&[&[tag::TEAM_API_KEY], team.as_bytes()]);
        let mut out = Vec::new();
        for kv in self.inner.tree.scan_prefix(prefix) {
            let (_, hash) = kv.map_err(backend)?;
            if let Some(record) =
                self.get_record::<ApiKeyRecord>(&key(&[&[tag::API_KEY], &hash]))?
            {
                out.push(record);
            }
        }
        out.sort_by_key(|k| (k.created_at, k.id));
        Ok(out)
    }

    async fn delete_api_keys(
        &self,
        team: TeamId,
        ids: &[ApiKeyId],
        journal: &Journal,
    ) -> StoreResult<u64> {
        self.journaled(journal, |tx| {
            let mut deleted = 0;
            for id in ids {
                let Some(hash) = tx.get(&team_api_key_key(team, *id))? else {
                    continue;
                };
                tx.del(team_api_key_key(team, *id));
                tx.del(key(&[&[tag::API_KEY], &hash]));
                deleted += 1;
            }
            if deleted == 0 {
                return Err(StoreError::NotFound(Entity::ApiKey));
            }
            Ok(deleted)
        })
        .await
    }

    async fn record_api_key_use(&self, uses: &[(TeamId, ApiKeyId, Timestamp)]) -> StoreResult<()> {
        // Written behind, so not waited on for a flush: a use lost in a crash only leaves
        // `lastUsedAt` a little older.
        self.write(Touch::Nothing, &Journal::NONE, |tx| {
            for (team, id, at) in uses {
                let Some(hash) = tx.get(&team_api_key_key(*team, *id))? else {
                    continue;
                };
                let k = key(&[&[tag::API_KEY], &hash]);
                if let Some(mut record) = tx.get_record::<ApiKeyRecord>(&k)?
                    && record.last_used_at.is_none_or(|last| last < *at)
                {
                    record.last_used_at = Some(*at);
                    tx.put_record(k, &record)?;
                }
            }
            Ok(())
        })
        .await
        .map(|((), _)| ())
    }
}
