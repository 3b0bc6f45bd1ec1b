//! The customer portal: sign-in tickets by the hash of their link's token (`t`), with the
//! hash found by team and public id (`v`) for the code form; sessions by the hash of their
//! cookie (`w`); and each license's self-service resets of the current period (`r`), written
//! in the same step as the forget they paid for.

use licensing_core::model::{
    CodeRedeemed, PortalSession, PortalTicket, SelfServiceReset, SelfServiceResets, UsageRecord,
    UsageRef,
};
use licensing_core::store::PortalStore;

use super::SledResult;
use super::*;

fn ticket_key(token_sha256: &str) -> Vec<u8> {
    key(&[&[tag::PORTAL_TICKET], token_sha256.as_bytes()])
}

fn ticket_id_key(team: TeamId, id: uuid::Uuid) -> Vec<u8> {
    key(&[&[tag::PORTAL_TICKET_ID], team.as_bytes(), id.as_bytes()])
}

fn session_key(id_sha256: &str) -> Vec<u8> {
    key(&[&[tag::PORTAL_SESSION], id_sha256.as_bytes()])
}

fn resets_key(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::RESETS], team.as_bytes(), license.as_bytes()])
}

/// Reset times as stored: milliseconds, 8 bytes big-endian each.
fn read_times(bytes: Option<Vec<u8>>) -> Vec<Timestamp> {
    bytes
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| Timestamp::from_millis(i64::from_be_bytes(c.try_into().unwrap_or([0; 8]))))
        .collect()
}

fn write_times(times: &[Timestamp]) -> Vec<u8> {
    times
        .iter()
        .flat_map(|t| t.as_millis().to_be_bytes())
        .collect()
}

/// Stages the deletion of a ticket and its id's entry.
fn spend(tx: &mut Tx<'_>, ticket: &PortalTicket) {
    tx.del(ticket_key(&ticket.token_sha256));
    tx.del(ticket_id_key(ticket.team_id, ticket.id));
}

impl PortalStore for SledStore {
    async fn create_portal_ticket(&self, ticket: &PortalTicket) -> StoreResult<()> {
        self.durable(|tx| {
            tx.require_team(ticket.team_id)?;
            tx.put_record(ticket_key(&ticket.token_sha256), ticket)?;
            tx.put(
                ticket_id_key(ticket.team_id, ticket.id),
                ticket.token_sha256.as_bytes().to_vec(),
            );
            Ok(())
        })
        .await
    }

    async fn redeem_portal_link(
        &self,
        token_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<Option<PortalTicket>> {
        self.durable(|tx| {
            let Some(ticket) = tx.get_record::<PortalTicket>(&ticket_key(token_sha256))? else {
                return Ok(None);
            };
            spend(tx, &ticket);
            Ok((ticket.expires_at > now).then_some(ticket))
        })
        .await
    }

    async fn redeem_portal_code(
        &self,
        team: TeamId,
        id: uuid::Uuid,
        code_sha256: &str,
        now: Timestamp,
    ) -> StoreResult<CodeRedeemed> {
        self.durable(|tx| {
            let Some(token) = tx.get(&ticket_id_key(team, id))? else {
                return Ok(CodeRedeemed::Gone);
            };
            let k = key(&[&[tag::PORTAL_TICKET], &token]);
            let Some(mut ticket) = tx.get_record::<PortalTicket>(&k)? else {
                tx.del(ticket_id_key(team, id));
                return Ok(CodeRedeemed::Gone);
            };
            if ticket.expires_at <= now || ticket.tries_left == 0 {
                spend(tx, &ticket);
                return Ok(CodeRedeemed::Gone);
            }
            let Some(code) = ticket.code_sha256.as_deref() else {
                return Ok(CodeRedeemed::Gone);
            };
            if code == code_sha256 {
                spend(tx, &ticket);
                return Ok(CodeRedeemed::Signed(ticket));
            }
            ticket.tries_left -= 1;
            if ticket.tries_left == 0 {
                spend(tx, &ticket);
            } else {
                tx.put_record(k, &ticket)?;
            }
            Ok(CodeRedeemed::Wrong {
                tries_left: ticket.tries_left,
            })
        })
        .await
    }

    async fn create_portal_session(
        &self,
        session: &PortalSession,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.journaled(journal, |tx| {
            tx.require_team(session.team_id)?;
            tx.put_record(session_key(&session.id_sha256), session)
        })
        .await
    }

    async fn get_portal_session(&self, id_sha256: &str) -> StoreResult<Option<PortalSession>> {
        Ok(self.get_record(&session_key(id_sha256))?)
    }

    async fn touch_portal_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        // Only an idle display: a little stale after a crash is harmless, so no flush.
        self.write(Touch::Nothing, &Journal::NONE, |tx| {
            let k = session_key(id_sha256);
            if let Some(mut session) = tx.get_record::<PortalSession>(&k)?
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

    async fn list_portal_sessions(&self, team: TeamId) -> StoreResult<Vec<PortalSession>> {
        let mut found: Vec<PortalSession> = self
            .scan::<PortalSession>(&[tag::PORTAL_SESSION])?
            .into_iter()
            .filter(|s| s.team_id == team)
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        Ok(found)
    }

    async fn delete_portal_session(
        &self,
        team: TeamId,
        id_sha256: &str,
        journal: &Journal,
    ) -> StoreResult<bool> {
        self.durable(|tx| {
            let k = session_key(id_sha256);
            match tx.get_record::<PortalSession>(&k)? {
                Some(session) if session.team_id == team => {
                    tx.del(k);
                    tx.journal(journal)?;
                    Ok(true)
                }
                _ => Ok(false),
            }
        })
        .await
    }

    async fn prune_portal(&self, now: Timestamp, created_before: Timestamp) -> StoreResult<u64> {
        // Found outside the transaction; each deleted in it only if it is still due there.
        let tickets: Vec<PortalTicket> = self
            .scan::<PortalTicket>(&[tag::PORTAL_TICKET])?
            .into_iter()
            .filter(|t| t.expires_at <= now)
            .collect();
        let sessions: Vec<String> = self
            .scan::<PortalSession>(&[tag::PORTAL_SESSION])?
            .into_iter()
            .filter(|s| s.created_at < created_before)
            .map(|s| s.id_sha256)
            .collect();
        if tickets.is_empty() && sessions.is_empty() {
            return Ok(0);
        }
        self.durable(|tx| {
            let mut pruned = 0;
            for t in &tickets {
                if tx
                    .get_record::<PortalTicket>(&ticket_key(&t.token_sha256))?
                    .is_some()
                {
                    spend(tx, t);
                    pruned += 1;
                }
            }
            for id in &sessions {
                let k = session_key(id);
                if tx.get(&k)?.is_some() {
                    tx.del(k);
                    pruned += 1;
                }
            }
            Ok(pruned)
        })
        .await
    }
}

impl SledStore {
    /// Forgets one of a license's records for its customer within `budget` (see
    /// [`DeviceStore::forget_within_budget`](licensing_core::store::DeviceStore::forget_within_budget)):
    /// the record, the license's tally and its resets change in one step, under the license's
    /// lock, and the journal is written only with a forget.
    pub(super) async fn forget_budgeted<R>(
        &self,
        (team, license, id): (TeamId, LicenseId, uuid::Uuid),
        (budget, now): (SelfServiceResets, Timestamp),
        journal: &Journal,
    ) -> SledResult<SelfServiceReset>
    where
        R: UsageRecord + Record + super::seen::Keyed + Clone,
    {
        Ok(self
            .durable_touching(Touch::License(license), |tx| {
                let old: R = self.find_usage(tx, team, license, id)?;
                if old.forgotten() {
                    return Ok(SelfServiceReset::AlreadyForgotten);
                }
                let resets = resets_key(team, license);
                let earlier = read_times(tx.get(&resets)?);
                if let Err(refills_at) = budget.admit(&earlier, now) {
                    return Ok(SelfServiceReset::Spent { refills_at });
                }
                let mut kept = budget.kept(&earlier, now);
                kept.push(now);
                tx.put(resets, write_times(&kept));
                self.stage_forgotten(tx, (team, license), &old, true, now)?;
                tx.journal(journal)?;
                Ok(SelfServiceReset::Forgotten)
            })
            .await?)
    }

    /// Forgets a record of `record`'s kind within the budget.
    pub(super) async fn forget_usage_within_budget(
        &self,
        (team, license): (TeamId, LicenseId),
        record: UsageRef,
        budget: SelfServiceResets,
        now: Timestamp,
        journal: &Journal,
    ) -> SledResult<SelfServiceReset> {
        match record {
            UsageRef::Hwid(id) => {
                self.forget_budgeted::<licensing_core::model::Hwid>(
                    (team, license, *id.as_uuid()),
                    (budget, now),
                    journal,
                )
                .await
            }
            UsageRef::Ip(id) => {
                self.forget_budgeted::<licensing_core::model::IpRecord>(
                    (team, license, *id.as_uuid()),
                    (budget, now),
                    journal,
                )
                .await
            }
        }
    }
}
