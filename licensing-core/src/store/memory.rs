//! An in-memory [`Store`](super::Store): everything under one mutex, never held across an await.
//! For tests, examples and embedding; it keeps nothing across restarts.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::filter::*;
use super::*;
use crate::verify;

#[derive(Default)]
struct State {
    teams: HashMap<TeamId, Team>,
    api_keys: HashMap<ApiKeyId, ApiKeyRecord>,
    licenses: HashMap<LicenseId, License>,
    customers: HashMap<CustomerId, Customer>,
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
            let out = f(s)?;
            s.audit.extend(journal.audit.iter().cloned());
            for event in &journal.events {
                s.events.insert(event.id, event.clone());
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

    async fn update_team_keys(
        &self,
        id: TeamId,
        keys: &crate::crypto::StoredTeamKeys,
        now: Timestamp,
    ) -> StoreResult<Team> {
        self.with(|s| {
            let team = s
                .teams
                .get_mut(&id)
                .ok_or(StoreError::NotFound(Entity::Team))?;
            team.keys = keys.clone();
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

impl LicenseStore for MemoryStore {
    async fn create_license(&self, license: &License, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_license_refs(license)?;
            s.licenses.insert(license.id, license.clone());
            Ok(())
        })
    }

    async fn create_license_with_mail(
        &self,
        license: &License,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_license_refs(license)?;
            let day = (license.team_id, OutboxMessage::day_of(now));
            let queued = s.mail_per_day.get(&day).copied().unwrap_or(0);
            if queued + mail.len() as u64 > u64::from(daily_limit) {
                return Err(StoreError::Limit(format!(
                    "at most {daily_limit} license e-mails a day per team; try again tomorrow"
                )));
            }
            s.licenses.insert(license.id, license.clone());
            for m in mail {
                s.outbox.insert(m.id, m.clone());
            }
            *s.mail_per_day.entry(day).or_default() += mail.len() as u64;
            Ok(())
        })
    }

    async fn get_license(&self, team: TeamId, id: LicenseId) -> StoreResult<Option<License>> {
        self.with(|s| Ok(owned(&s.licenses, &id, team, |l| l.team_id).cloned()))
    }

    async fn get_license_by_key(
        &self,
        team: TeamId,
        key: &LicenseKey,
    ) -> StoreResult<Option<License>> {
        self.with(|s| {
            Ok(s.licenses
                .values()
                .find(|l| l.team_id == team && &l.license_key == key)
                .cloned())
        })
    }

    async fn update_license(&self, license: &License, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.license(license.team_id, license.id)?;
            s.check_license_refs(license)?;
            s.licenses.insert(license.id, license.clone());
            Ok(())
        })
    }

    async fn delete_license(
        &self,
        team: TeamId,
        id: LicenseId,
        journal: &Journal,
    ) -> StoreResult<License> {
        self.write(journal, |s| {
            s.license(team, id)?;
            let license = s
                .licenses
                .remove(&id)
                .ok_or(StoreError::NotFound(Entity::License))?;
            s.hwids.retain(|_, h| h.license_id != id);
            s.ips.retain(|_, r| r.license_id != id);
            s.event_marks.remove(&id);
            for r in s.releases.values_mut() {
                r.allowed_license_ids.retain(|l| *l != id);
            }
            Ok(license)
        })
    }

    async fn list_licenses(
        &self,
        team: TeamId,
        query: &LicenseListQuery,
    ) -> StoreResult<Page<License>> {
        self.with(|s| {
            let items = s
                .licenses
                .values()
                .filter(|l| l.team_id == team && license_matches(l, &query.filter))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_licenses(a, b, query.sort, query.paging.direction)
            }))
        })
    }
}

impl CustomerStore for MemoryStore {
    async fn create_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&customer.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.customers.insert(customer.id, customer.clone());
            Ok(())
        })
    }

    async fn get_customer(&self, team: TeamId, id: CustomerId) -> StoreResult<Option<Customer>> {
        self.with(|s| Ok(owned(&s.customers, &id, team, |c| c.team_id).cloned()))
    }

    async fn get_customers(&self, team: TeamId, ids: &[CustomerId]) -> StoreResult<Vec<Customer>> {
        self.with(|s| {
            Ok(ids
                .iter()
                .filter_map(|id| owned(&s.customers, id, team, |c| c.team_id).cloned())
                .collect())
        })
    }

    async fn update_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.customers, &customer.id, customer.team_id, |c| c.team_id)
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            s.customers.insert(customer.id, customer.clone());
            Ok(())
        })
    }

    async fn delete_customer(
        &self,
        team: TeamId,
        id: CustomerId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.customers, &id, team, |c| c.team_id)
                .ok_or(StoreError::NotFound(Entity::Customer))?;
            s.customers.remove(&id);
            for l in s.licenses.values_mut().filter(|l| l.team_id == team) {
                l.customer_ids.retain(|c| *c != id);
            }
            Ok(())
        })
    }

    async fn list_customers(
        &self,
        team: TeamId,
        query: &CustomerListQuery,
    ) -> StoreResult<Page<Customer>> {
        self.with(|s| {
            let items = s
                .customers
                .values()
                .filter(|c| c.team_id == team && customer_matches(c, query.filter.as_ref()))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_customers(a, b, query.sort, query.paging.direction)
            }))
        })
    }
}

impl ProductStore for MemoryStore {
    async fn create_product(&self, product: &Product, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&product.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.products.insert(product.id, product.clone());
            Ok(())
        })
    }

    async fn get_product(&self, team: TeamId, id: ProductId) -> StoreResult<Option<Product>> {
        self.with(|s| Ok(owned(&s.products, &id, team, |p| p.team_id).cloned()))
    }

    async fn get_products(&self, team: TeamId, ids: &[ProductId]) -> StoreResult<Vec<Product>> {
        self.with(|s| {
            Ok(ids
                .iter()
                .filter_map(|id| owned(&s.products, id, team, |p| p.team_id).cloned())
                .collect())
        })
    }

    async fn update_product(&self, product: &Product, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.products, &product.id, product.team_id, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            s.products.insert(product.id, product.clone());
            Ok(())
        })
    }

    async fn delete_product(
        &self,
        team: TeamId,
        id: ProductId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.write(journal, |s| {
            owned(&s.products, &id, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            s.products.remove(&id);
            s.branches.retain(|_, b| b.product_id != id);
            for l in s.licenses.values_mut().filter(|l| l.team_id == team) {
                l.product_ids.retain(|p| *p != id);
            }
            Ok(s.remove_releases(|r| r.product_id != id))
        })
    }

    async fn list_products(
        &self,
        team: TeamId,
        query: &ProductListQuery,
    ) -> StoreResult<Page<Product>> {
        self.with(|s| {
            let items = s
                .products
                .values()
                .filter(|p| p.team_id == team && product_matches(p, &query.filter))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_products(a, b, query.sort, query.paging.direction)
            }))
        })
    }

    async fn create_branch(&self, branch: &Branch, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.products, &branch.product_id, branch.team_id, |p| {
                p.team_id
            })
            .ok_or(StoreError::NotFound(Entity::Product))?;
            if s.branches
                .values()
                .any(|b| b.product_id == branch.product_id && b.name == branch.name)
            {
                return Err(StoreError::conflict(
                    "name",
                    "a branch of this name already exists for this product",
                ));
            }
            s.branches.insert(branch.id, branch.clone());
            Ok(())
        })
    }

    async fn list_branches(&self, team: TeamId, product: ProductId) -> StoreResult<Vec<Branch>> {
        self.with(|s| {
            owned(&s.products, &product, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            let mut branches: Vec<Branch> = s
                .branches
                .values()
                .filter(|b| b.product_id == product)
                .cloned()
                .collect();
            branches.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(branches)
        })
    }

    async fn delete_branch(
        &self,
        team: TeamId,
        product: ProductId,
        id: BranchId,
        journal: &Journal,
    ) -> StoreResult<Vec<Release>> {
        self.write(journal, |s| {
            owned(&s.products, &product, team, |p| p.team_id)
                .ok_or(StoreError::NotFound(Entity::Product))?;
            owned(&s.branches, &id, team, |b| b.team_id)
                .filter(|b| b.product_id == product)
                .ok_or(StoreError::NotFound(Entity::Branch))?;
            s.branches.remove(&id);
            Ok(s.remove_releases(|r| r.branch_id != Some(id)))
        })
    }
}

impl ReleaseStore for MemoryStore {
    async fn create_release(&self, release: &Release, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            s.check_release_refs(release)?;
            s.put_release(release);
            Ok(())
        })
    }

    async fn get_release(&self, team: TeamId, id: ReleaseId) -> StoreResult<Option<Release>> {
        self.with(|s| Ok(owned(&s.releases, &id, team, |r| r.team_id).cloned()))
    }

    async fn update_release(&self, release: &Release, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.releases, &release.id, release.team_id, |r| r.team_id)
                .ok_or(StoreError::NotFound(Entity::Release))?;
            s.check_release_refs(release)?;
            s.put_release(release);
            Ok(())
        })
    }

    async fn delete_release(
        &self,
        team: TeamId,
        id: ReleaseId,
        journal: &Journal,
    ) -> StoreResult<Release> {
        self.write(journal, |s| {
            owned(&s.releases, &id, team, |r| r.team_id)
                .ok_or(StoreError::NotFound(Entity::Release))?;
            s.releases
                .remove(&id)
                .ok_or(StoreError::NotFound(Entity::Release))
        })
    }

    async fn list_releases(
        &self,
        team: TeamId,
        query: &ReleaseListQuery,
    ) -> StoreResult<Page<Release>> {
        self.with(|s| {
            let items = s
                .releases
                .values()
                .filter(|r| r.team_id == team && release_matches(r, &query.filter))
                .cloned()
                .collect();
            Ok(page_of(items, &query.paging, |a, b| {
                compare_releases(a, b, query.sort, query.paging.direction)
            }))
        })
    }

    async fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> StoreResult<(Vec<Branch>, Vec<Release>)> {
        self.with(|s| {
            let branches = s
                .branches
                .values()
                .filter(|b| b.team_id == team && b.product_id == product)
                .cloned()
                .collect();
            let releases = s
                .releases
                .values()
                .filter(|r| r.team_id == team && r.product_id == product)
                .cloned()
                .collect();
            Ok((branches, releases))
        })
    }
}

fn list_usage<K, R: UsageRecord + Clone>(
    records: &HashMap<K, R>,
    license: LicenseId,
    query: &DeviceListQuery,
) -> Page<R> {
    let items = records
        .values()
        .filter(|r| r.license_id() == license && (query.filter || !r.forgotten()))
        .cloned()
        .collect();
    page_of(items, &query.paging, |a, b| {
        compare_usage(a, b, query.sort, query.paging.direction)
    })
}

fn set_forgotten<K: std::hash::Hash + Eq, R: UsageRecord + Clone>(
    records: &mut HashMap<K, R>,
    (team, license, id): (TeamId, LicenseId, K),
    forgotten: bool,
    now: Timestamp,
    entity: Entity,
) -> StoreResult<R> {
    let r = records
        .get_mut(&id)
        .filter(|r| r.license_id() == license && r.team_id() == team)
        .ok_or(StoreError::NotFound(entity))?;
    r.set_forgotten(forgotten, now);
    Ok(r.clone())
}

impl DeviceStore for MemoryStore {
    async fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> StoreResult<()> {
        self.with(|s| {
            s.license(team, license)?;
            check_usage_owner(team, license, hwids, ips)?;
            for h in hwids {
                s.hwids
                    .retain(|_, o| !(o.license_id == license && o.identifier == h.identifier));
                s.hwids.insert(h.id, h.clone());
            }
            for r in ips {
                s.ips
                    .retain(|_, o| !(o.license_id == license && o.address == r.address));
                s.ips.insert(r.id, r.clone());
            }
            Ok(())
        })
    }

    async fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<Hwid>> {
        self.with(|s| {
            s.license(team, license)?;
            Ok(list_usage(&s.hwids, license, query))
        })
    }

    async fn set_hwid_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: HwidId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<Hwid> {
        self.write(journal, |s| {
            s.license(team, license)?;
            set_forgotten(
                &mut s.hwids,
                (team, license, id),
                forgotten,
                now,
                Entity::Hwid,
            )
        })
    }

    async fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> StoreResult<Page<IpRecord>> {
        self.with(|s| {
            s.license(team, license)?;
            Ok(list_usage(&s.ips, license, query))
        })
    }

    async fn set_ip_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: IpId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<IpRecord> {
        self.write(journal, |s| {
            s.license(team, license)?;
            set_forgotten(&mut s.ips, (team, license, id), forgotten, now, Entity::Ip)
        })
    }
}

impl ActivityStore for MemoryStore {
    async fn record_activity(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> StoreResult<Result<Recorded, Denial>> {
        let settings = rules.settings;
        self.with(|s| {
            let current = s.license(team, license)?.clone();
            let hwids: Vec<Hwid> = s
                .hwids
                .values()
                .filter(|h| h.license_id == license)
                .cloned()
                .collect();
            let ips: Vec<IpRecord> = s
                .ips
                .values()
                .filter(|r| r.license_id == license)
                .cloned()
                .collect();
            let admission = match verify::admit(
                &current,
                settings,
                &hwids,
                &ips,
                activity.hardware_id.as_ref(),
                activity.ip,
                now,
            ) {
                Ok(a) => a,
                Err(denial) => return Ok(Err(denial)),
            };
            // Room under the cap, decided before anything changes.
            let want = prune_batch(rules.max_records);
            let mut drop_hwids = Vec::new();
            if matches!(admission.hwid, Some(verify::RecordChange::Create))
                && hwids.len() >= rules.max_records as usize
            {
                drop_hwids =
                    prune_victims(&hwids, current.hwid_limit, settings.hwid_timeout, now, want)
                        .into_iter()
                        .map(|r| r.id)
                        .collect();
                if drop_hwids.is_empty() {
                    return Ok(Err(cap_reached(
                        verify::RecordKind::Hwid,
                        rules.max_records,
                    )));
                }
            }
            let mut drop_ips = Vec::new();
            if admission.ip == verify::RecordChange::Create
                && ips.len() >= rules.max_records as usize
            {
                drop_ips = prune_victims(&ips, current.ip_limit, settings.ip_timeout, now, want)
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                if drop_ips.is_empty() {
                    return Ok(Err(cap_reached(verify::RecordKind::Ip, rules.max_records)));
                }
            }
            for id in drop_hwids {
                s.hwids.remove(&id);
            }
            for id in drop_ips {
                s.ips.remove(&id);
            }
            let mut new_device = None;
            match (admission.hwid, &activity.hardware_id) {
                (Some(verify::RecordChange::Create), Some(h)) => {
                    let record = new_hwid(&current, h, now);
                    new_device = Some(record.clone());
                    s.hwids.insert(record.id, record);
                }
                (Some(verify::RecordChange::Refresh { id, .. }), _) => {
                    if let Some(h) = s.hwids.get_mut(&id) {
                        refresh_hwid(h, now);
                    }
                }
                _ => {}
            }
            match admission.ip {
                verify::RecordChange::Create => {
                    let record = new_ip(&current, activity, now);
                    s.ips.insert(record.id, record);
                }
                verify::RecordChange::Refresh { id, .. } => {
                    if let Some(r) = s.ips.get_mut(&id) {
                        refresh_ip(r, activity, now);
                    }
                }
            }
            let next = license_after(&current, &admission, now);
            s.licenses.insert(next.id, next.clone());
            for event in crate::model::admission_events(
                rules.events,
                new_device.as_ref(),
                &next,
                admission.activate.is_some(),
                now,
            ) {
                s.events.insert(event.id, event);
            }
            Ok(Ok(Recorded {
                license: next,
                admission,
            }))
        })
    }
}

impl SessionKeyStore for MemoryStore {
    async fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> StoreResult<Result<(), SessionKeyRefused>> {
        self.with(|s| {
            let since = now.as_millis() - window_ms;
            s.session_keys.retain(|_, used| used.as_millis() > since);
            if s.session_keys.contains_key(&(team, fingerprint)) {
                return Ok(Err(SessionKeyRefused::Reused));
            }
            let held = s.session_keys.keys().filter(|(t, _)| *t == team).count();
            if held >= per_team as usize {
                return Ok(Err(SessionKeyRefused::Full));
            }
            s.session_keys.insert((team, fingerprint), now);
            Ok(Ok(()))
        })
    }
}

impl BlacklistStore for MemoryStore {
    async fn create_blacklist_entry(
        &self,
        entry: &BlacklistEntry,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&entry.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            let dup = s.blacklist.values().any(|e| {
                e.team_id == entry.team_id && e.kind == entry.kind && e.value == entry.value
            });
            if dup {
                return Err(StoreError::conflict("value", "is already on the blacklist"));
            }
            s.blacklist.insert(entry.id, entry.clone());
            Ok(())
        })
    }

    async fn list_blacklist(&self, team: TeamId) -> StoreResult<Vec<BlacklistEntry>> {
        self.with(|s| {
            let mut entries: Vec<BlacklistEntry> = s
                .blacklist
                .values()
                .filter(|e| e.team_id == team)
                .cloned()
                .collect();
            entries.sort_by_key(|e| (e.created_at, e.id));
            Ok(entries)
        })
    }

    async fn delete_blacklist_entry(
        &self,
        team: TeamId,
        id: BlacklistId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            owned(&s.blacklist, &id, team, |e| e.team_id)
                .ok_or(StoreError::NotFound(Entity::Blacklist))?;
            s.blacklist.remove(&id);
            Ok(())
        })
    }

    async fn add_blacklist_hits(
        &self,
        team: TeamId,
        hits: &[(BlacklistId, u64)],
    ) -> StoreResult<()> {
        self.with(|s| {
            for (id, n) in hits {
                if let Some(e) = s.blacklist.get_mut(id).filter(|e| e.team_id == team) {
                    e.hits += n;
                }
            }
            Ok(())
        })
    }
}

impl OutboxStore for MemoryStore {
    async fn queue_messages(
        &self,
        team: TeamId,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.with(|s| {
            if !s.teams.contains_key(&team) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            let day = (team, OutboxMessage::day_of(now));
            let queued = s.mail_per_day.get(&day).copied().unwrap_or(0);
            if queued + mail.len() as u64 > u64::from(daily_limit) {
                return Err(StoreError::Limit(format!(
                    "at most {daily_limit} e-mails a day per team; try again tomorrow"
                )));
            }
            for m in mail {
                s.outbox.insert(m.id, m.clone());
            }
            *s.mail_per_day.entry(day).or_default() += mail.len() as u64;
            Ok(())
        })
    }

    async fn due_messages(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<OutboxMessage>> {
        self.with(|s| {
            let mut due: Vec<OutboxMessage> = s
                .outbox
                .values()
                .filter(|m| m.next_attempt_at <= now)
                .cloned()
                .collect();
            due.sort_by_key(|m| (m.next_attempt_at, m.id));
            due.truncate(limit);
            Ok(due)
        })
    }

    async fn message_sent(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.with(|s| {
            s.outbox.remove(&message.id);
            Ok(())
        })
    }

    async fn message_failed(&self, message: &OutboxMessage) -> StoreResult<()> {
        self.with(|s| {
            if let Some(m) = s.outbox.get_mut(&message.id) {
                *m = message.clone();
            }
            Ok(())
        })
    }
}

impl StatsStore for MemoryStore {
    async fn add_hourly(&self, team: TeamId, counts: &HourlyStats) -> StoreResult<()> {
        self.with(|s| {
            s.stats
                .entry((team, counts.hour))
                .or_insert_with(|| HourlyStats {
                    hour: counts.hour,
                    ..HourlyStats::default()
                })
                .merge(counts);
            Ok(())
        })
    }

    async fn hourly_since(&self, team: TeamId, since: i64) -> StoreResult<Vec<HourlyStats>> {
        self.with(|s| {
            let mut buckets: Vec<HourlyStats> = s
                .stats
                .iter()
                .filter(|((t, hour), _)| *t == team && *hour >= since)
                .map(|(_, b)| b.clone())
                .collect();
            buckets.sort_by_key(|b| b.hour);
            Ok(buckets)
        })
    }

    async fn overview(&self, team: TeamId, active_since: Timestamp) -> StoreResult<Overview> {
        self.with(|s| {
            let licenses = s.licenses.values().filter(|l| l.team_id == team);
            Ok(Overview {
                total_licenses: licenses.clone().count() as u64,
                total_customers: s.customers.values().filter(|c| c.team_id == team).count() as u64,
                total_products: s.products.values().filter(|p| p.team_id == team).count() as u64,
                active_licenses: licenses
                    .filter(|l| l.last_active_at.is_some_and(|at| at >= active_since))
                    .count() as u64,
                total_requests: 0,
            })
        })
    }

    async fn top_products(&self, team: TeamId, limit: usize) -> StoreResult<Vec<TopProduct>> {
        self.with(|s| {
            let mut counts: HashMap<ProductId, u64> = HashMap::new();
            for l in s.licenses.values().filter(|l| l.team_id == team) {
                for p in &l.product_ids {
                    *counts.entry(*p).or_default() += 1;
                }
            }
            let top: Vec<TopProduct> = s
                .products
                .values()
                .filter(|p| p.team_id == team)
                .map(|p| TopProduct {
                    id: p.id,
                    name: p.name.clone(),
                    licenses: counts.get(&p.id).copied().unwrap_or(0),
                })
                .collect();
            Ok(rank_top_products(top, limit))
        })
    }
}

impl AuditStore for MemoryStore {
    async fn record_journal(&self, journal: &Journal) -> StoreResult<()> {
        self.write(journal, |_| Ok(()))
    }

    async fn list_audit(&self, team: TeamId, query: &AuditQuery) -> StoreResult<Page<AuditEntry>> {
        self.with(|s| {
            let mut found: Vec<&AuditEntry> = s
                .audit
                .iter()
                .filter(|e| e.team_id == team && query.matches(e))
                .collect();
            found.sort_by_key(|e| (e.at, e.id));
            if query.newest_first() {
                found.reverse();
            }
            let total = found.len() as u64;
            let (items, has_next_page) = query.paging.slice(found.into_iter().cloned());
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn restore_audit(&self, entries: &[AuditEntry]) -> StoreResult<()> {
        self.with(|s| {
            let ids: HashSet<crate::AuditId> = entries.iter().map(|e| e.id).collect();
            s.audit.retain(|e| !ids.contains(&e.id));
            s.audit.extend(entries.iter().cloned());
            Ok(())
        })
    }

    async fn prune_audit(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<(Timestamp, crate::AuditId)> = s
                .audit
                .iter()
                .filter(|e| e.at < before)
                .map(|e| (e.at, e.id))
                .collect();
            old.sort();
            old.truncate(limit);
            let gone: std::collections::HashSet<crate::AuditId> =
                old.iter().map(|(_, id)| *id).collect();
            s.audit.retain(|e| !gone.contains(&e.id));
            Ok(gone.len() as u64)
        })
    }
}

impl WebhookStore for MemoryStore {
    async fn create_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if !s.teams.contains_key(&endpoint.team_id) {
                return Err(StoreError::NotFound(Entity::Team));
            }
            s.webhooks.insert(endpoint.id, endpoint.clone());
            Ok(())
        })
    }

    async fn get_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        self.with(|s| Ok(owned(&s.webhooks, &id, team, |e| e.team_id).cloned()))
    }

    async fn list_webhooks(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>> {
        self.with(|s| {
            let mut out: Vec<WebhookEndpoint> = s
                .webhooks
                .values()
                .filter(|e| e.team_id == team)
                .cloned()
                .collect();
            out.sort_by_key(|e| (e.created_at, e.id));
            Ok(out)
        })
    }

    async fn update_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &endpoint.id, endpoint.team_id, |e| e.team_id).is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.webhooks.insert(endpoint.id, endpoint.clone());
            Ok(())
        })
    }

    async fn delete_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &id, team, |e| e.team_id).is_none() {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.webhooks.remove(&id);
            s.deliveries.retain(|_, d| d.endpoint_id != id);
            Ok(())
        })
    }

    async fn webhook_health(
        &self,
        team: TeamId,
        id: WebhookId,
        ok: bool,
        now: Timestamp,
        disable_after_ms: i64,
        alert: bool,
    ) -> StoreResult<Option<HealthChange>> {
        self.with(|s| {
            let Some(endpoint) = s.webhooks.get_mut(&id).filter(|e| e.team_id == team) else {
                return Ok(None);
            };
            let disabled_now = crate::model::apply_health(endpoint, ok, now, disable_after_ms);
            let endpoint = endpoint.clone();
            if let Some(to) = endpoint
                .alert_email
                .as_deref()
                .filter(|_| disabled_now && alert)
            {
                let m = crate::model::disabled_alert(&endpoint, to, now);
                s.outbox.insert(m.id, m);
            }
            Ok(Some(HealthChange {
                endpoint,
                disabled_now,
            }))
        })
    }

    async fn fan_out_events(&self, now: Timestamp, limit: usize) -> StoreResult<usize> {
        self.with(|s| {
            let taken: Vec<crate::EventId> = s.events.keys().take(limit).copied().collect();
            for id in &taken {
                if let Some(event) = s.events.remove(id) {
                    let endpoints: Vec<WebhookEndpoint> = s
                        .webhooks
                        .values()
                        .filter(|e| e.team_id == event.team_id)
                        .cloned()
                        .collect();
                    for d in crate::model::fan_out(&event, &endpoints, now) {
                        s.deliveries.insert(d.id, d);
                    }
                }
            }
            Ok(taken.len())
        })
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        _lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        self.with(|s| {
            Ok(crate::model::first_of_chains(
                s.deliveries.values().cloned(),
                now,
                limit,
            ))
        })
    }

    async fn insert_delivery(
        &self,
        delivery: &WebhookDelivery,
        journal: &Journal,
    ) -> StoreResult<()> {
        self.write(journal, |s| {
            if owned(&s.webhooks, &delivery.endpoint_id, delivery.team_id, |e| {
                e.team_id
            })
            .is_none()
            {
                return Err(StoreError::NotFound(Entity::Webhook));
            }
            s.deliveries.insert(delivery.id, delivery.clone());
            Ok(())
        })
    }

    async fn update_delivery(&self, delivery: &WebhookDelivery) -> StoreResult<()> {
        self.with(|s| {
            if let Some(d) = s.deliveries.get_mut(&delivery.id) {
                *d = delivery.clone();
            }
            Ok(())
        })
    }

    async fn get_delivery(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        id: DeliveryId,
    ) -> StoreResult<Option<WebhookDelivery>> {
        self.with(|s| {
            Ok(s.deliveries
                .get(&id)
                .filter(|d| d.team_id == team && d.endpoint_id == endpoint)
                .cloned())
        })
    }

    async fn list_deliveries(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        paging: &Paging,
    ) -> StoreResult<Page<WebhookDelivery>> {
        self.with(|s| {
            let mut found: Vec<&WebhookDelivery> = s
                .deliveries
                .values()
                .filter(|d| d.team_id == team && d.endpoint_id == endpoint)
                .collect();
            found.sort_by_key(|d| d.id);
            if paging.direction == crate::api::requests::SortDirection::Desc {
                found.reverse();
            }
            let total = found.len() as u64;
            let (items, has_next_page) = paging.slice(found.into_iter().cloned());
            Ok(Page {
                items,
                total,
                has_next_page,
            })
        })
    }

    async fn raise_events(&self, events: &[RaisedEvent]) -> StoreResult<usize> {
        self.with(|s| {
            let mut queued = 0;
            for raised in events {
                if let Some((license, mark)) = raised.once {
                    if !s.licenses.contains_key(&license)
                        || s.event_marks.get(&license) == Some(&mark)
                    {
                        continue;
                    }
                    s.event_marks.insert(license, mark);
                }
                s.events.insert(raised.event.id, raised.event.clone());
                queued += 1;
            }
            Ok(queued)
        })
    }

    async fn prune_deliveries(&self, before: Timestamp, limit: usize) -> StoreResult<u64> {
        self.with(|s| {
            let mut old: Vec<DeliveryId> = s
                .deliveries
                .values()
                .filter(|d| {
                    d.status != crate::model::DeliveryStatus::Pending && d.created_at < before
                })
                .map(|d| d.id)
                .collect();
            old.sort();
            old.truncate(limit);
            for id in &old {
                s.deliveries.remove(id);
            }
            Ok(old.len() as u64)
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
