use super::*;
use crate::model::{CodeRedeemed, PortalSession, PortalTicket};

impl PortalStore for MemoryStore {
    async fn create_portal_ticket(&self, ticket: &PortalTicket) -> StoreResult<()> {
        self.with(|s| {
            if !s.teams.contains_key(&ticket.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.portal_tickets
                .insert(ticket.token_sha256.clone(), ticket.clone());
            Ok(())
        })
    }

    async fn redeem_portal_link(
        &self,
        token_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<Option<PortalTicket>> {
        self.with(|s| {
            Ok(s.portal_tickets
                .remove(token_sha256)
                .filter(|t| t.expires_at > now))
        })
    }

    async fn redeem_portal_code(
        &self,
        team: TeamId,
        id: uuid::Uuid,
        code_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<CodeRedeemed> {
        self.with(|s| {
            let Some(token) = s
                .portal_tickets
                .values()
                .find(|t| t.id == id && t.team_id == team)
                .map(|t| t.token_sha256.clone())
            else {
                return Ok(CodeRedeemed::Gone);
            };
            let ticket = s
                .portal_tickets
                .get_mut(&token)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            if ticket.expires_at <= now || ticket.code_sha256.is_none() || ticket.tries_left == 0 {
                s.portal_tickets.remove(&token);
                return Ok(CodeRedeemed::Gone);
            }
            if ticket.code_sha256.as_deref() == Some(code_sha256) {
                let spent = s.portal_tickets.remove(&token);
                return Ok(spent.map_or(CodeRedeemed::Gone, CodeRedeemed::Signed));
            }
            ticket.tries_left -= 1;
            let tries_left = ticket.tries_left;
            if tries_left == 0 {
                s.portal_tickets.remove(&token);
            }
            Ok(CodeRedeemed::Wrong { tries_left })
        })
    }

    async fn create_portal_session(
        &self,
        session: &PortalSession,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&session.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.portal_sessions
                .insert(session.id_sha256.clone(), session.clone());
            Ok(())
        })
    }

    async fn get_portal_session(&self, id_sha256: &str) -> StoreResult<Option<PortalSession>> {
        self.with(|s| Ok(s.portal_sessions.get(id_sha256).cloned()))
    }

    async fn touch_portal_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        self.with(|s| {
            if let Some(session) = s.portal_sessions.get_mut(id_sha256) {
                session.last_seen_at = session.last_seen_at.max(now);
            }
            Ok(())
        })
    }

    async fn list_portal_sessions(&self, team: TeamId) -> StoreResult<Vec<PortalSession>> {
        self.with(|s| {
            let mut found: Vec<PortalSession> = s
                .portal_sessions
                .values()
                .filter(|p| p.team_id == team)
                .cloned()
                .collect();
            found.sort_by_key(|s| std::cmp::Reverse(s.created_at));
            Ok(found)
        })
    }

    async fn delete_portal_session(
        &self,
        team: TeamId,
        id_sha256: &str,
        journal: &Journal,
    ) -> StoreResult<bool> {
        let gone = self.with(|s| {
            if s.portal_sessions
                .get(id_sha256)
                .is_some_and(|p| p.team_id == team)
            {
                s.portal_sessions.remove(id_sha256);
                return Ok(true);
            }
            Ok(false)
        })?;
        if gone {
            self.write(journal, |_| Ok(()))?;
        }
        Ok(gone)
    }

    async fn prune_portal(&self, now: Timestamp, created_before: Timestamp) -> StoreResult<u64> {
        self.with(|s| {
            let before = s.portal_tickets.len() + s.portal_sessions.len();
            s.portal_tickets.retain(|_, t| t.expires_at > now);
            s.portal_sessions
                .retain(|_, p| p.created_at >= created_before);
            Ok((before - s.portal_tickets.len() - s.portal_sessions.len()) as u64)
        })
    }
}
