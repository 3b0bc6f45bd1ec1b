//! Staff accounts and their sessions. An account is found by id (`U`), by its lower-cased
//! e-mail address and team (`u`, which also keeps an address unique in a team; an address's
//! accounts in every team are one prefix) and by team (`V`); a session by the hash of its cookie
//! (`G`), and an account's sessions by account (`g`).

use licensing_core::StaffId;
use licensing_core::model::{StaffSession, StaffUser};

use super::SledResult;
use super::*;

fn staff_key(id: StaffId) -> Vec<u8> {
    key(&[&[tag::STAFF], id.as_bytes()])
}

/// The prefix of an address's accounts: the lower-cased address and a 0 byte (which no
/// address holds).
fn email_prefix(email: &str) -> Vec<u8> {
    key(&[&[tag::STAFF_EMAIL], email.to_lowercase().as_bytes(), &[0]])
}

pub(super) fn email_key(email: &str, team: TeamId) -> Vec<u8> {
    key(&[&email_prefix(email), team.as_bytes()])
}

fn team_staff_key(team: TeamId, id: StaffId) -> Vec<u8> {
    key(&[&[tag::TEAM_STAFF], team.as_bytes(), id.as_bytes()])
}

fn session_key(id_sha256: &str) -> Vec<u8> {
    key(&[&[tag::WEB_SESSION], id_sha256.as_bytes()])
}

fn staff_session_key(user: StaffId, id_sha256: &str) -> Vec<u8> {
    key(&[
        &[tag::STAFF_WEB_SESSION],
        user.as_bytes(),
        id_sha256.as_bytes(),
    ])
}

/// Claims `email` in `team` for account `id` within `tx`: a conflict when another account of
/// the team holds it.
fn claim_email(tx: &mut Tx<'_>, email: &str, team: TeamId, id: StaffId) -> StoreResult<()> {
    let k = email_key(email, team);
    if let Some(holder) = tx.get(&k)?
        && holder != id.as_bytes()
    {
        return Err(StoreError::conflict("email", STAFF_EMAIL_TAKEN));
    }
    tx.put(k, id.as_bytes().to_vec());
    Ok(())
}

/// Stages the deletion of every session of `user`; how many.
fn end_sessions(tree: &sled::Tree, tx: &mut Tx<'_>, user: StaffId) -> SledResult<u64> {
    let prefix = key(&[&[tag::STAFF_WEB_SESSION], user.as_bytes()]);
    let mut ended = 0;
    for kv in tree.scan_prefix(&prefix) {
        let (k, _) = kv?;
        let hash = &k[prefix.len()..];
        tx.del(key(&[&[tag::WEB_SESSION], hash]));
        tx.del(k.to_vec());
        ended += 1;
    }
    Ok(ended)
}

impl StaffStore for SledStore {
    async fn create_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(user.team_id)?;
            claim_email(tx, user.email.as_str(), user.team_id, user.id)?;
            tx.put_record(staff_key(user.id), user)?;
            tx.put(team_staff_key(user.team_id, user.id), Vec::new());
            Ok(())
        })
        .await
    }

    async fn get_staff(&self, id: StaffId) -> StoreResult<Option<StaffUser>> {
        Ok(self.get_record(&staff_key(id))?)
    }

    async fn find_staff_by_email(&self, email: &str) -> StoreResult<Vec<StaffUser>> {
        let mut found = Vec::new();
        for kv in self.inner.tree.scan_prefix(email_prefix(email)) {
            let (_, id) = kv.map_err(backend)?;
            if let Some(user) = self.get_record::<StaffUser>(&key(&[&[tag::STAFF], &id]))? {
                found.push(user);
            }
        }
        found.sort_by_key(|u| (u.created_at, u.id));
        Ok(found)
    }

    async fn list_staff(&self, team: TeamId) -> StoreResult<Vec<StaffUser>> {
        let prefix = key(&[&[tag::TEAM_STAFF], team.as_bytes()]);
        let mut users = Vec::new();
        for kv in self.inner.tree.scan_prefix(&prefix) {
            let (k, _) = kv.map_err(backend)?;
            if let Some(user) =
                self.get_record::<StaffUser>(&key(&[&[tag::STAFF], &k[prefix.len()..]]))?
            {
                users.push(user);
            }
        }
        users.sort_by_key(|u| (u.created_at, u.id));
        Ok(users)
    }

    async fn update_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            let old: StaffUser = tx
                .get_record(&staff_key(user.id))?
                .filter(|old: &StaffUser| old.team_id == user.team_id)
                .ok_or(StoreError::NotFound(Entity::Staff))?;
            claim_email(tx, user.email.as_str(), user.team_id, user.id)?;
            if old.email.as_str().to_lowercase() != user.email.as_str().to_lowercase() {
                tx.del(email_key(old.email.as_str(), old.team_id));
            }
            tx.put_record(staff_key(user.id), user)
        })
        .await
    }

    async fn delete_staff(&self, team: TeamId, id: StaffId, journal: &Journal) -> StoreResult<()> {
        let tree = self.inner.tree.clone();
        self.journaled(journal, |tx| {
            let old: StaffUser = tx
                .get_record(&staff_key(id))?
                .filter(|old: &StaffUser| old.team_id == team)
                .ok_or(StoreError::NotFound(Entity::Staff))?;
            tx.del(staff_key(id));
            tx.del(email_key(old.email.as_str(), team));
            tx.del(team_staff_key(team, id));
            end_sessions(&tree, tx, id)?;
            Ok(())
        })
        .await
    }

    async fn create_session(&self, session: &StaffSession, journal: &Journal) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            if tx.get(&staff_key(session.user_id))?.is_none() {
                return Err(StoreError::NotFound(Entity::Staff));
            }
            tx.put_record(session_key(&session.id_sha256), session)?;
            tx.put(
                staff_session_key(session.user_id, &session.id_sha256),
                Vec::new(),
            );
            Ok(())
        })
        .await
    }

    async fn get_session(&self, id_sha256: &str) -> StoreResult<Option<StaffSession>> {
        Ok(self.get_record(&session_key(id_sha256))?)
    }

    async fn touch_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        // A session's last use may be a little stale after a crash (it only decides an idle
        // time-out), so this write does not wait for a flush.
        self.write(Touch::Nothing, &Journal::NONE, |tx| {
            let k = session_key(id_sha256);
            if let Some(mut session) = tx.get_record::<StaffSession>(&k)?
                && now > session.last_seen_at
            {
                session.last_seen_at = now;
                tx.put_record(k, &session)?;
            }
            Ok(())
        })
        .await
        .map(drop)
    }

    async fn delete_session(&self, id_sha256: &str, journal: &Journal) -> StoreResult<()> {
        self.durable(|tx| {
            let k = session_key(id_sha256);
            if let Some(session) = tx.get_record::<StaffSession>(&k)? {
                tx.del(k);
                tx.del(staff_session_key(session.user_id, id_sha256));
                tx.journal(journal)?;
            }
            Ok(())
        })
        .await
    }

    async fn delete_sessions_of(&self, user: StaffId) -> StoreResult<u64> {
        let tree = self.inner.tree.clone();
        self.durable(|tx| Ok(end_sessions(&tree, tx, user)?)).await
    }

    async fn delete_stale_sessions(
        &self,
        seen_before: Timestamp,
        created_before: Timestamp,
    ) -> StoreResult<u64> {
        // Found outside the transaction (sessions are few); each is deleted in it only if it
        // is still stale there, so a session used meanwhile stays.
        let stale: Vec<String> = self
            .scan::<StaffSession>(&[tag::WEB_SESSION])?
            .into_iter()
            .filter(|s| s.last_seen_at < seen_before || s.created_at < created_before)
            .map(|s| s.id_sha256)
            .collect();
        if stale.is_empty() {
            return Ok(0);
        }
        self.durable(|tx| {
            let mut ended = 0;
            for id in &stale {
                let k = session_key(id);
                if let Some(session) = tx.get_record::<StaffSession>(&k)?
                    && (session.last_seen_at < seen_before || session.created_at < created_before)
                {
                    tx.del(k);
                    tx.del(staff_session_key(session.user_id, id));
                    ended += 1;
                }
            }
            Ok(ended)
        })
        .await
    }
}
