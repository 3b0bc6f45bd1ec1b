//! An in-memory [`Store`](super::Store): everything under one mutex, never held across an await.
//! For tests, examples and embedding; it keeps nothing across restarts.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::filter::*;
use super::*;
use crate::verify;

mod activity;
mod idempotency;
mod payments;
mod portal;
mod records;
mod request_log;
mod team_data;
mod usage;
mod webhooks;

#[derive(Default)]
struct State {
    teams: HashMap<TeamId, Team>,
    api_keys: HashMap<ApiKeyId, ApiKeyRecord>,
    licenses: HashMap<LicenseId, License>,
    customers: HashMap<CustomerId, Customer>,
    entitlements: HashMap<crate::EntitlementId, crate::model::Entitlement>,
    policies: HashMap<crate::PolicyId, crate::model::Policy>,
    products: HashMap<ProductId, Product>,
    branches: HashMap<BranchId, Branch>,
    releases: HashMap<ReleaseId, Release>,
    hwids: HashMap<HwidId, Hwid>,
    ips: HashMap<IpId, IpRecord>,
    blacklist: HashMap<BlacklistId, BlacklistEntry>,
    stats: HashMap<(TeamId, i64), HourlyStats>,
    outbox: HashMap<crate::MessageId, OutboxMessage>,
    mail_per_day: HashMap<(TeamId, i64), u64>,
    session_keys: HashMap<(TeamId, [u8; 16]), Timestamp>,
    audit: Vec<AuditEntry>,
    webhooks: HashMap<WebhookId, WebhookEndpoint>,
    events: std::collections::BTreeMap<crate::EventId, WebhookEvent>,
    deliveries: HashMap<DeliveryId, WebhookDelivery>,
    event_marks: HashMap<LicenseId, i64>,
    staff: HashMap<StaffId, StaffUser>,
    sessions: HashMap<String, StaffSession>,
    portal_tickets: HashMap<String, crate::model::PortalTicket>,
    portal_sessions: HashMap<String, crate::model::PortalSession>,
    resets: HashMap<LicenseId, Vec<Timestamp>>,
    floating: HashMap<crate::LicenseSessionId, crate::model::LicenseSession>,
    idempotency: HashMap<(String, String), crate::idempotency::IdempotencyRecord>,
    requests: Vec<crate::model::RequestLogEntry>,
    integrations: HashMap<(TeamId, crate::crypto::inbound::Provider), crate::model::Integration>,
    inbound: std::collections::BTreeMap<crate::InboundId, crate::model::InboundEvent>,
    applied: HashMap<(TeamId, crate::crypto::inbound::Provider, String), crate::InboundId>,
    links: HashMap<(TeamId, crate::crypto::inbound::Provider, String), crate::model::PaymentLink>,
    /// Usage counters by license, meter code and period start.
    usage: HashMap<(LicenseId, String, i64), u64>,
    /// Kept answers of usage events by license and event id, with when they were kept.
    usage_answers: HashMap<(LicenseId, String), (Timestamp, crate::model::UsageOutcome)>,
}

/// The in-memory store. Clones share the same data.
#[derive(Clone, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> StoreResult<T>) -> StoreResult<T> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| StoreError::backend("memory store lock poisoned"))?;
        f(&mut state)
    }

    /// A write: `f` changes the state, and when it succeeds the journal is recorded with it,
    /// under the same lock.
    fn write<T>(
        &self,
        journal: &Journal,
        f: impl FnOnce(&mut State) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.with(|s| {
            // The mark is decided first: a refused one changes nothing.
            let links = match &journal.inbound {
                Some(inbound) => Some(s.decide_inbound(inbound)?),
                None => None,
            };
            let out = f(s)?;
            if let (Some(inbound), Some(links)) = (&journal.inbound, links) {
                s.record_inbound(inbound, links);
            }
            s.audit.extend(journal.audit.iter().cloned());
            for event in &journal.events {
                s.events.insert(event.id, event.clone());
            }
            if let Some(keyed) = &journal.keyed {
                let slot = (
                    keyed.owner.as_str().to_owned(),
                    keyed.key.as_str().to_owned(),
                );
                if s.idempotency.get(&slot).is_none_or(|r| r.answer.is_none()) {
                    s.idempotency.insert(slot, keyed.applied());
                }
            }
            Ok(out)
        })
    }
}

fn owned<'a, K: std::hash::Hash + Eq, V>(
    map: &'a HashMap<K, V>,
    id: &K,
    team: TeamId,
    team_of: impl Fn(&V) -> TeamId,
) -> Option<&'a V> {
    map.get(id).filter(|v| team_of(v) == team)
}

impl State {
    fn check_license_refs(&self, license: &License) -> StoreResult<()> {
        let taken = self.licenses.values().any(|l| {
            l.team_id == license.team_id
                && l.license_key == license.license_key
                && l.id != license.id
        });
        if taken {
            return Err(StoreError::conflict(
                "licenseKey",
                "is already used by another license of this team",
            ));
        }
        for c in &license.customer_ids {
            owned(&self.customers, c, license.team_id, |c| c.team_id)
                .ok_or(StoreError::NotFound(Entity::Customer))?;
        }
        for p in &license.product_ids {
            owned(&self.products, p, license.team_id, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
        }
        if let Some(p) = &license.policy_id {
            owned(&self.policies, p, license.team_id, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Policy))?;
        }
        Ok(())
    }

    fn check_release_refs(&self, r: &Release) -> StoreResult<()> {
        owned(&self.products, &r.product_id, r.team_id, |p| p.team_id)
            .ok_or(StoreError::NotFound(Entity::Product))?;
        if let Some(b) = r.branch_id {
            owned(&self.branches, &b, r.team_id, |b| b.team_id)
                .filter(|b| b.product_id == r.product_id)
                .ok_or(StoreError::NotFound(Entity::Branch))?;
        }
        for l in &r.allowed_license_ids {
            owned(&self.licenses, l, r.team_id, |l| l.team_id)
                .ok_or(StoreError::NotFound(Entity::License))?;
        }
        let taken = self.releases.values().any(|o| {
            o.team_id == r.team_id
                && o.product_id == r.product_id
                && o.branch_id == r.branch_id
                && o.version == r.version
                && o.id != r.id
        });
        if taken {
            return Err(StoreError::conflict(
                "version",
                "already exists for this product and branch",
            ));
        }
        Ok(())
    }

    fn put_release(&mut self, r: &Release) {
        if r.latest {
            for o in self.releases.values_mut() {
                if o.team_id == r.team_id
                    && o.product_id == r.product_id
                    && o.branch_id == r.branch_id
                    && o.id != r.id
                {
                    o.latest = false;
                }
            }
        }
        self.releases.insert(r.id, r.clone());
    }

    fn remove_releases(&mut self, keep: impl Fn(&Release) -> bool) -> Vec<Release> {
        let gone: Vec<ReleaseId> = self
            .releases
            .values()
            .filter(|r| !keep(r))
            .map(|r| r.id)
            .collect();
        gone.iter()
            .filter_map(|id| self.releases.remove(id))
            .collect()
    }

    fn license(&self, team: TeamId, id: LicenseId) -> StoreResult<&License> {
        owned(&self.licenses, &id, team, |l| l.team_id).ok_or(StoreError::NotFound(Entity::License))
    }
}

impl TeamStore for MemoryStore {
    async fn create_team(
        &self,
        team: &Team,
        first_key: &ApiKeyRecord,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            s.teams.insert(team.id, team.clone());
            s.api_keys.insert(first_key.id, first_key.clone());
            Ok(())
        })
    }

    async fn get_team(&self, id: TeamId) -> StoreResult<Option<Team>> {
        self.with(|s| Ok(s.teams.get(&id).cloned()))
    }

    async fn list_teams(&self) -> StoreResult<Vec<Team>> {
        self.with(|s| {
            let mut teams: Vec<Team> = s.teams.values().cloned().collect();
            teams.sort_by_key(|t| (t.created_at, t.id));
            Ok(teams)
        })
    }

    async fn update_settings(
        &self,
        id: TeamId,
        settings: &TeamSettings,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.write(journal, |s| {
            let team = s
                .teams
                .get_mut(&id)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            team.settings = settings.clone();
            team.updated_at = now;
            Ok(team.clone())
        })
    }

    async fn update_features(
        &self,
        id: TeamId,
        features: TeamFeatures,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.write(journal, |s| {
            let team = s
                .teams
                .get_mut(&id)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            team.features = features;
            team.updated_at = now;
            Ok(team.clone())
        })
    }

    async fn change_signing_keys(
        &self,
        id: TeamId,
        change: &crate::model::SigningKeyChange,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Team> {
        self.write(journal, |s| {
            let team = s
                .teams
                .get_mut(&id)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            team.change_signing_keys(change)?;
            team.updated_at = now;
            Ok(team.clone())
        })
    }

    async fn update_team_keys(
        &self,
        id: TeamId,
        keys: &crate::crypto::StoredTeamKeys,
        next: Option<&crate::crypto::StoredTeamKeys>,
        now: Timestamp,
    ) -> StoreResult<Team> {
        self.with(|s| {
            let team = s
                .teams
                .get_mut(&id)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            team.set_keys(keys, next);
            team.updated_at = now;
            Ok(team.clone())
        })
    }
}

/// Whether another account of `team` than `id` has the e-mail address `email`.
fn email_taken(s: &State, team: TeamId, email: &str, id: StaffId) -> bool {
    s.staff.values().any(|u| {
        u.id != id && u.team_id == team && u.email.as_str().to_lowercase() == email.to_lowercase()
    })
}

impl StaffStore for MemoryStore {
    async fn create_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&user.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            if email_taken(s, user.team_id, user.email.as_str(), user.id) {
                return Err(StoreError::conflict("email", STAFF_EMAIL_TAKEN));
            }
            s.staff.insert(user.id, user.clone());
            Ok(())
        })
    }

    async fn get_staff(&self, id: StaffId) -> StoreResult<Option<StaffUser>> {
        self.with(|s| Ok(s.staff.get(&id).cloned()))
    }

    async fn find_staff_by_email(&self, email: &str) -> StoreResult<Vec<StaffUser>> {
        self.with(|s| {
            let mut found: Vec<StaffUser> = s
                .staff
                .values()
                .filter(|u| u.email.as_str().to_lowercase() == email.to_lowercase())
                .cloned()
                .collect();
            found.sort_by_key(|u| (u.created_at, u.id));
            Ok(found)
        })
    }

    async fn list_staff(&self, team: TeamId) -> StoreResult<Vec<StaffUser>> {
        self.with(|s| {
            let mut users: Vec<StaffUser> = s
                .staff
                .values()
                .filter(|u| u.team_id == team)
                .cloned()
                .collect();
            users.sort_by_key(|u| (u.created_at, u.id));
            Ok(users)
        })
    }

    async fn update_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.staff, &user.id, user.team_id, |u| u.team_id)
                .ok_or(StoreError::NotFound(Entity::Staff))?;
            if email_taken(s, user.team_id, user.email.as_str(), user.id) {
                return Err(StoreError::conflict("email", STAFF_EMAIL_TAKEN));
            }
            s.staff.insert(user.id, user.clone());
            Ok(())
        })
    }

    async fn delete_staff(&self, team: TeamId, id: StaffId, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.staff, &id, team, |u| u.team_id).ok_or(StoreError::NotFound(Entity::Staff))?;
            s.staff.remove(&id);
            s.sessions.retain(|_, session| session.user_id != id);
            Ok(())
        })
    }

    async fn create_session(&self, session: &StaffSession, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.staff.contains_key(&session.user_id) {
                return Err(StoreError::NotFound(Entity::Staff));
            }
            s.sessions
                .insert(session.id_sha256.clone(), session.clone());
            Ok(())
        })
    }

    async fn get_session(&self, id_sha256: &str) -> StoreResult<Option<StaffSession>> {
        self.with(|s| Ok(s.sessions.get(id_sha256).cloned()))
    }

    async fn touch_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()> {
        self.with(|s| {
            if let Some(session) = s.sessions.get_mut(id_sha256) {
                session.last_seen_at = session.last_seen_at.max(now);
            }
            Ok(())
        })
    }

    async fn delete_session(&self, id_sha256: &str, journal: &Journal) -> StoreResult<()> {
        let gone = self.with(|s| Ok(s.sessions.remove(id_sha256).is_some()))?;
        if gone {
            self.write(journal, |_| Ok(()))?;
        }
        Ok(())
    }

    async fn delete_sessions_of(&self, user: StaffId) -> StoreResult<u64> {
        self.with(|s| {
            let before = s.sessions.len();
            s.sessions.retain(|_, session| session.user_id != user);
            Ok((before - s.sessions.len()) as u64)
        })
    }

    async fn delete_stale_sessions(
        &self,
        seen_before: Timestamp,
        created_before: Timestamp,
    ) -> StoreResult<u64> {
        self.with(|s| {
            let before = s.sessions.len();
            s.sessions.retain(|_, session| {
                session.last_seen_at >= seen_before && session.created_at >= created_before
            });
            Ok((before - s.sessions.len()) as u64)
        })
    }
}

impl ApiKeyStore for MemoryStore {
    async fn create_api_key(&self, key: &ApiKeyRecord, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&key.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.api_keys.insert(key.id, key.clone());
            Ok(())
        })
    }

    async fn find_api_key(&self, hash: &ApiKeyHash) -> StoreResult<Option<ApiKeyRecord>> {
        self.with(|s| Ok(s.api_keys.values().find(|k| k.hash.ct_eq(hash)).cloned()))
    }

    async fn list_api_keys(&self, team: TeamId) -> StoreResult<Vec<ApiKeyRecord>> {
        self.with(|s| {
            let mut keys: Vec<ApiKeyRecord> = s
                .api_keys
                .values()
                .filter(|k| k.team_id == team)
                .cloned()
                .collect();
            keys.sort_by_key(|k| (k.created_at, k.id));
            Ok(keys)
        })
    }

    async fn delete_api_keys(
        &self,
        team: TeamId,
        ids: &[ApiKeyId],
        journal: &Journal,
    ) -> StoreResult<u64> {
        self.write(journal, |s| {
            let mut deleted = 0;
            for id in ids {
                if owned(&s.api_keys, id, team, |k| k.team_id).is_some() {
                    s.api_keys.remove(id);
                    deleted += 1;
                }
            }
            if deleted == 0 {
                return Err(StoreError::NotFound(Entity::ApiKey));
            }
            Ok(deleted)
        })
    }

    async fn record_api_key_use(&self, uses: &[(TeamId, ApiKeyId, Timestamp)]) -> StoreResult<()> {
        self.with(|s| {
            for (team, id, at) in uses {
                if let Some(key) = s.api_keys.get_mut(id).filter(|k| k.team_id == *team)
                    && key.last_used_at.is_none_or(|last| last < *at)
                {
                    key.last_used_at = Some(*at);
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    crate::store_test_suite!(
        runner: crate::store::testing::ThreadRunner,
        store: async { crate::store::MemoryStore::new() },
    );
}
