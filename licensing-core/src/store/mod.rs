//! Storage traits, one per aggregate, with the atomic units the product needs.
//!
//! Every method returns a `Send` future and takes `&self`, so an async database (PostgreSQL via a
//! pool, say) implements them without blocking, and an embedded store (sled) can run its work
//! where it likes. Records are always addressed within a team: a store never returns, changes or
//! deletes a record of another team, whatever the id.
//!
//! The unit that carries the product is [`ActivityStore::record_activity`]: check a license's
//! limits and record the device and IP in one atomic step, so that concurrent requests from new
//! devices never push a license past its limit.
//!
//! [`MemoryStore`] implements everything in memory; the `testing` feature exposes the suite every
//! implementation must pass (the `store_test_suite!` macro).

mod activity;
mod error;
mod filter;
mod idempotency;
mod memory;
mod request_log;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod usage;

use std::future::Future;

pub use activity::*;
pub use error::{BackendError, Entity, StoreError, StoreResult};
pub use filter::*;
pub use idempotency::IdempotencyStore;
pub use memory::MemoryStore;
pub use request_log::RequestLogStore;
pub use usage::{UsageStore, check_counters_owner, count as count_usage, still_kept};

use crate::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, InboundQuery, LicenseListQuery, Paging,
    ProductListQuery, ReleaseListQuery,
};
use crate::crypto::inbound::Provider;
use crate::crypto::{ApiKeyHash, StoredTeamKeys};
use crate::model::{
    ApiKeyRecord, AuditEntry, Backlog, BlacklistEntry, Branch, ClientEvents, CodeRedeemed,
    Customer, Entitlement, HealthChange, HourlyStats, Hwid, Inbound, InboundEvent, Integration,
    IpRecord, License, LicenseSession, LinkChange, OutboxMessage, Overview, PaymentLink, Policy,
    PortalSession, PortalTicket, Product, Release, SessionStep, SigningKeyChange, StaffSession,
    StaffUser, Team, TeamFeatures, TeamSettings, TopProduct, UsageRecord, WebhookDelivery,
    WebhookEndpoint, WebhookEvent,
};
use crate::validate::{Country, HardwareId};
use crate::verify::{Admission, Denial};
use crate::{
    ApiKeyId, BlacklistId, BranchId, CustomerId, DeliveryId, EntitlementId, HwidId, InboundId,
    IpId, LicenseId, LicenseKey, LicenseSessionId, PolicyId, ProductId, ReleaseId, StaffId, TeamId,
    Timestamp, WebhookId,
};

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Items matching the filters, all pages.
    pub total: u64,
    /// Whether a next page exists.
    pub has_next_page: bool,
}

/// What a write records besides its change, in the same atomic step: the entries of the audit
/// log that describe it and the webhook events it raises. A store writes the journal of a
/// write only when the write succeeds, and a write that returned `Ok` is never without its
/// journal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    /// The audit entries: usually one, none when the write is not audited (writes restoring an
    /// archive), several when a change carries others with it (an API key revoked with the
    /// keys it made).
    pub audit: Vec<AuditEntry>,
    /// The webhook events, queued for [`WebhookStore::fan_out_events`].
    pub events: Vec<WebhookEvent>,
    /// (ext) The idempotency claim the write runs under, marked applied in the same atomic
    /// step ([`crate::idempotency::KeyedWrite`]). With one, a store need not wait for the write
    /// to be durable before returning: the caller keeps the request's answer next
    /// ([`IdempotencyStore::keep_idempotent_answer`]), which makes both durable.
    pub keyed: Option<crate::idempotency::KeyedWrite>,
    /// (ext) The payment event whose effect the write is, recorded as applied in the same
    /// atomic step, with the links it creates or advances (see [`crate::model::Inbound`] and
    /// [`PaymentStore`]).
    pub inbound: Option<Box<crate::model::Inbound>>,
}

impl Journal {
    /// Nothing to record: restoring an archive, tests.
    pub const NONE: Journal = Journal {
        audit: Vec::new(),
        events: Vec::new(),
        keyed: None,
        inbound: None,
    };

    /// A journal of one audit entry.
    pub fn audit(entry: AuditEntry) -> Self {
        Self {
            audit: vec![entry],
            events: Vec::new(),
            keyed: None,
            inbound: None,
        }
    }

    /// The same journal with `other`'s entries and events after its own.
    pub fn and(mut self, other: Journal) -> Self {
        self.audit.extend(other.audit);
        self.events.extend(other.events);
        self.keyed = self.keyed.or(other.keyed);
        self.inbound = self.inbound.or(other.inbound);
        self
    }

    /// The same journal raising `event` too.
    pub fn with_event(mut self, event: WebhookEvent) -> Self {
        self.events.push(event);
        self
    }
}

/// An event the client API raises outside a write, for [`WebhookStore::raise_events`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaisedEvent {
    /// The event.
    pub event: WebhookEvent,
    /// Raise it only if the license's mark is not this value yet (then store it).
    pub once: Option<(LicenseId, i64)>,
}

/// Teams.
pub trait TeamStore: Send + Sync {
    /// Stores a new team together with its first API key, atomically.
    fn create_team(
        &self,
        team: &Team,
        first_key: &ApiKeyRecord,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A team by id.
    fn get_team(&self, id: TeamId) -> impl Future<Output = StoreResult<Option<Team>>> + Send;
    /// All teams, oldest first.
    fn list_teams(&self) -> impl Future<Output = StoreResult<Vec<Team>>> + Send;
    /// Replaces a team's settings.
    fn update_settings(
        &self,
        id: TeamId,
        settings: &TeamSettings,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Team>> + Send;
    /// Replaces a team's features.
    fn update_features(
        &self,
        id: TeamId,
        features: TeamFeatures,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Team>> + Send;
    /// Changes a team's signing keys ([`Team::change_signing_keys`], under the team's lock).
    fn change_signing_keys(
        &self,
        id: TeamId,
        change: &SigningKeyChange,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Team>> + Send;
    /// Replaces a team's stored private keys (sealing them under a master key, or re-sealing
    /// them under a new one), and those of its staged next signing key with `next` when it
    /// still has one.
    fn update_team_keys(
        &self,
        id: TeamId,
        keys: &StoredTeamKeys,
        next: Option<&StoredTeamKeys>,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Team>> + Send;
}

/// API keys (only their hashes).
pub trait ApiKeyStore: Send + Sync {
    /// Stores a key.
    fn create_api_key(
        &self,
        key: &ApiKeyRecord,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// The key with this hash, any team.
    fn find_api_key(
        &self,
        hash: &ApiKeyHash,
    ) -> impl Future<Output = StoreResult<Option<ApiKeyRecord>>> + Send;
    /// A team's keys, oldest first.
    fn list_api_keys(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<ApiKeyRecord>>> + Send;
    /// Revokes (deletes) keys of `team` in one step: each of `ids` that exists (a key revoked
    /// with the keys it made). How many were; `NotFound` when none was, and then the journal is
    /// not recorded.
    fn delete_api_keys(
        &self,
        team: TeamId,
        ids: &[ApiKeyId],
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Records when keys were last used (batched by the caller): each key's `lastUsedAt` moves
    /// forward to the time given, never back. Keys that no longer exist are skipped.
    fn record_api_key_use(
        &self,
        uses: &[(TeamId, ApiKeyId, Timestamp)],
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// Licenses.
pub trait LicenseStore: Send + Sync {
    /// Stores a new license. Fails with a conflict on `licenseKey` when the key is taken in the
    /// team, and with `NotFound` when a customer or product does not exist in the team.
    fn create_license(
        &self,
        license: &License,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A license by id.
    fn get_license(
        &self,
        team: TeamId,
        id: LicenseId,
    ) -> impl Future<Output = StoreResult<Option<License>>> + Send;
    /// A license by key.
    fn get_license_by_key(
        &self,
        team: TeamId,
        key: &LicenseKey,
    ) -> impl Future<Output = StoreResult<Option<License>>> + Send;
    /// Replaces a license, with the checks of create.
    fn update_license(
        &self,
        license: &License,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes a license with its hardware identifiers and IP records, and removes it from the
    /// releases that list it, atomically. Returns the deleted license.
    fn delete_license(
        &self,
        team: TeamId,
        id: LicenseId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<License>> + Send;
    /// Stores a new license together with the e-mails to send about it, in one atomic step, with
    /// the checks of [`create_license`](Self::create_license). Fails with
    /// [`StoreError::Limit`] when the team's e-mails queued on the day of `now` would exceed
    /// `daily_limit`; then nothing is stored.
    fn create_license_with_mail(
        &self,
        license: &License,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// One page of licenses.
    fn list_licenses(
        &self,
        team: TeamId,
        query: &LicenseListQuery,
    ) -> impl Future<Output = StoreResult<Page<License>>> + Send;
}

/// Customers.
pub trait CustomerStore: Send + Sync {
    /// Stores a new customer.
    fn create_customer(
        &self,
        customer: &Customer,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A customer by id.
    fn get_customer(
        &self,
        team: TeamId,
        id: CustomerId,
    ) -> impl Future<Output = StoreResult<Option<Customer>>> + Send;
    /// The customers with these ids that exist in the team, in the order given.
    fn get_customers(
        &self,
        team: TeamId,
        ids: &[CustomerId],
    ) -> impl Future<Output = StoreResult<Vec<Customer>>> + Send;
    /// Replaces a customer.
    fn update_customer(
        &self,
        customer: &Customer,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes a customer and detaches it from its licenses, atomically.
    fn delete_customer(
        &self,
        team: TeamId,
        id: CustomerId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// One page of customers.
    fn list_customers(
        &self,
        team: TeamId,
        query: &CustomerListQuery,
    ) -> impl Future<Output = StoreResult<Page<Customer>>> + Send;
    /// The team's customers whose e-mail address is `email` (compared lower-cased), oldest
    /// first: a lookup by the address's index, not a search.
    fn customers_with_email(
        &self,
        team: TeamId,
        email: &str,
    ) -> impl Future<Output = StoreResult<Vec<Customer>>> + Send;
}

/// (ext) Entitlements: a team's few feature definitions (at most
/// [`MAX_ENTITLEMENTS`](crate::model::MAX_ENTITLEMENTS)), read whole.
pub trait EntitlementStore: Send + Sync {
    /// Stores a new entitlement: `Conflict` on `code` when the team has one of that code,
    /// `Limit` when the team has the most it may.
    fn create_entitlement(
        &self,
        entitlement: &Entitlement,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// An entitlement by id.
    fn get_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
    ) -> impl Future<Output = StoreResult<Option<Entitlement>>> + Send;
    /// Every entitlement of the team, oldest first.
    fn list_entitlements(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<Entitlement>>> + Send;
    /// Replaces an entitlement (its code stays).
    fn update_entitlement(
        &self,
        entitlement: &Entitlement,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes an entitlement and detaches it from every license, product and policy,
    /// atomically.
    fn delete_entitlement(
        &self,
        team: TeamId,
        id: EntitlementId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// (ext) Policies: a team's few named plans (at most
/// [`MAX_POLICIES`](crate::model::MAX_POLICIES)), read whole.
pub trait PolicyStore: Send + Sync {
    /// Stores a new policy: `Limit` when the team has the most it may.
    fn create_policy(
        &self,
        policy: &Policy,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A policy by id.
    fn get_policy(
        &self,
        team: TeamId,
        id: PolicyId,
    ) -> impl Future<Output = StoreResult<Option<Policy>>> + Send;
    /// Every policy of the team, oldest first.
    fn list_policies(&self, team: TeamId) -> impl Future<Output = StoreResult<Vec<Policy>>> + Send;
    /// Replaces a policy: every license on it follows at once.
    fn update_policy(
        &self,
        policy: &Policy,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// How many licenses of the team are on policy `id`.
    fn count_policy_licenses(
        &self,
        team: TeamId,
        id: PolicyId,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Deletes a policy, atomically with what happens to its licenses: with `detach`, each is
    /// taken off it with what applied written into it ([`License::detached`]); without, a
    /// policy that licenses use is refused with [`StoreError::State`] naming how many
    /// ([`policy_in_use`]). Returns the licenses detached.
    fn delete_policy(
        &self,
        team: TeamId,
        id: PolicyId,
        detach: bool,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// (ext) Payment integrations: a team's settings per provider, the events received, and the
/// links from a provider's subscription or payment to its license. An event's effect is written
/// by the store that writes the license, with the event's mark ([`Journal::inbound`]): in that
/// atomic step the store records the event as applied, refusing one already applied
/// ([`StoreError::Conflict`] on [`DUPLICATE_EVENT`](crate::model::DUPLICATE_EVENT)), and
/// creates or advances its links ([`ALREADY_LINKED`](crate::model::ALREADY_LINKED),
/// [`OLDER_EVENT`](crate::model::OLDER_EVENT)); see [`record_applied`].
pub trait PaymentStore: Send + Sync {
    /// The team's integration with `provider`.
    fn get_integration(
        &self,
        team: TeamId,
        provider: Provider,
    ) -> impl Future<Output = StoreResult<Option<Integration>>> + Send;
    /// The team's integrations, by provider.
    fn list_integrations(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<Integration>>> + Send;
    /// Stores an integration, new or replacing the team's one with its provider.
    fn put_integration(
        &self,
        integration: &Integration,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes the team's integration with `provider` (`NotFound` when there is none). Its
    /// events and links stay (until they are pruned), so that one set up again does not apply
    /// an event twice.
    fn delete_integration(
        &self,
        team: TeamId,
        provider: Provider,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Records a received event that applied nothing (skipped, failed, duplicate), durably.
    fn record_inbound(&self, event: &InboundEvent) -> impl Future<Output = StoreResult<()>> + Send;
    /// Writes an applied event's mark alone (an event whose effect writes nothing else), with
    /// the same refusals as a mark written with an effect.
    fn apply_inbound(&self, inbound: &Inbound) -> impl Future<Output = StoreResult<()>> + Send;
    /// The delivery that applied the provider's event `event_id`, if one did.
    fn inbound_applied(
        &self,
        team: TeamId,
        provider: Provider,
        event_id: &str,
    ) -> impl Future<Output = StoreResult<Option<InboundId>>> + Send;
    /// A received event.
    fn get_inbound(
        &self,
        team: TeamId,
        id: InboundId,
    ) -> impl Future<Output = StoreResult<Option<InboundEvent>>> + Send;
    /// The received events, newest first.
    fn list_inbound(
        &self,
        team: TeamId,
        query: &InboundQuery,
    ) -> impl Future<Output = StoreResult<Page<InboundEvent>>> + Send;
    /// The link of a provider's subscription or payment.
    fn payment_link(
        &self,
        team: TeamId,
        provider: Provider,
        subject: &str,
    ) -> impl Future<Output = StoreResult<Option<PaymentLink>>> + Send;
    /// Every link of the team (an export).
    fn list_payment_links(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<PaymentLink>>> + Send;
    /// Stores links as they are (a restore from an archive); one already stored is replaced.
    fn restore_payment_links(
        &self,
        links: &[PaymentLink],
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes received events (of any team) received before `before`, the oldest first, at
    /// most [`INBOUND_PRUNE_BATCH`] in a call; how many.
    fn prune_inbound(&self, before: Timestamp) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// The most received events one [`PaymentStore::prune_inbound`] deletes.
pub const INBOUND_PRUNE_BATCH: u64 = 10_000;

/// What a store does with an applied event's mark, given what it holds: `applied` (the
/// delivery that applied the same event, if any) and `link` (the stored link of each subject
/// the mark names, in the order [`LinkChange`] names them). Returns the links to write, or the
/// refusal. Every store decides with this, inside its atomic step.
pub fn record_applied(
    inbound: &Inbound,
    applied: Option<InboundId>,
    mut link: impl FnMut(&str) -> Option<PaymentLink>,
) -> StoreResult<Vec<PaymentLink>> {
    use crate::model::{ALREADY_LINKED, DUPLICATE_EVENT, OLDER_EVENT};
    if applied.is_some() {
        return Err(StoreError::Conflict {
            field: DUPLICATE_EVENT,
            message: format!("event {} was applied already", inbound.event.event_id),
        });
    }
    fn fresh(
        links: &[PaymentLink],
        link: &mut impl FnMut(&str) -> Option<PaymentLink>,
    ) -> StoreResult<Vec<PaymentLink>> {
        let mut out = Vec::new();
        for l in links {
            match link(&l.subject) {
                Some(existing) if existing.license_id != l.license_id => {
                    return Err(StoreError::Conflict {
                        field: ALREADY_LINKED,
                        message: format!(
                            "{} has a license already ({})",
                            l.subject, existing.license_id
                        ),
                    });
                }
                Some(_) => {}
                None => out.push(l.clone()),
            }
        }
        Ok(out)
    }
    match &inbound.links {
        LinkChange::None => Ok(Vec::new()),
        LinkChange::Create(links) => fresh(links, &mut link),
        LinkChange::Advance {
            subject,
            occurred_at,
            more,
        } => {
            let mut current = link(subject).ok_or(StoreError::NotFound(Entity::License))?;
            if *occurred_at < current.last_event_at {
                return Err(StoreError::Conflict {
                    field: OLDER_EVENT,
                    message: format!("the event happened before the last one applied to {subject}"),
                });
            }
            current.last_event_at = *occurred_at;
            let mut out = vec![current];
            out.extend(fresh(more, &mut link)?);
            Ok(out)
        }
    }
}

/// Products and their branches.
pub trait ProductStore: Send + Sync {
    /// Stores a new product.
    fn create_product(
        &self,
        product: &Product,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A product by id.
    fn get_product(
        &self,
        team: TeamId,
        id: ProductId,
    ) -> impl Future<Output = StoreResult<Option<Product>>> + Send;
    /// The products with these ids that exist in the team, in the order given.
    fn get_products(
        &self,
        team: TeamId,
        ids: &[ProductId],
    ) -> impl Future<Output = StoreResult<Vec<Product>>> + Send;
    /// Replaces a product.
    fn update_product(
        &self,
        product: &Product,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes a product with its releases and branches and detaches it from licenses and
    /// policies, atomically. Returns the deleted releases (their files are the caller's to remove).
    fn delete_product(
        &self,
        team: TeamId,
        id: ProductId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Vec<Release>>> + Send;
    /// One page of products.
    fn list_products(
        &self,
        team: TeamId,
        query: &ProductListQuery,
    ) -> impl Future<Output = StoreResult<Page<Product>>> + Send;
    /// Stores a new branch: the product must exist, the name must be free in it.
    fn create_branch(
        &self,
        branch: &Branch,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A product's branches, by name.
    fn list_branches(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> impl Future<Output = StoreResult<Vec<Branch>>> + Send;
    /// Deletes a branch with its releases, atomically. Returns the deleted releases.
    fn delete_branch(
        &self,
        team: TeamId,
        product: ProductId,
        id: BranchId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Vec<Release>>> + Send;
}

/// The refusal of a second artifact in one place of a release.
pub fn artifact_taken(artifact: &crate::model::Artifact) -> StoreError {
    StoreError::State(format!(
        "The release already has a {} artifact for {} {}{}: delete it first (DELETE releases/{{releaseId}}/artifacts/{{artifactId}})",
        artifact.kind,
        artifact.platform,
        artifact.arch,
        if artifact.is_delta() { " (delta)" } else { "" }
    ))
}

/// Adds `artifact` to `release` unless its place is taken (the rule every store applies in its
/// atomic step).
pub fn put_artifact(release: &mut Release, artifact: &crate::model::Artifact) -> StoreResult<()> {
    if release.artifacts.iter().any(|a| a.same_slot(artifact)) {
        return Err(artifact_taken(artifact));
    }
    release.artifacts.push(artifact.clone());
    Ok(())
}

/// Takes artifact `id` out of `release` (the rule every store applies in its atomic step).
pub fn take_artifact(
    release: &mut Release,
    id: crate::ArtifactId,
) -> StoreResult<crate::model::Artifact> {
    let at = release
        .artifacts
        .iter()
        .position(|a| a.id == id)
        .ok_or(StoreError::NotFound(Entity::Artifact))?;
    Ok(release.artifacts.remove(at))
}

/// Releases.
pub trait ReleaseStore: Send + Sync {
    /// Stores a new release. Fails when its product, branch (of that product) or allowed licenses
    /// do not exist in the team, or the version is taken in the product and branch. A release
    /// stored with `latest` makes every other release of its product and branch not latest, in
    /// the same atomic step.
    fn create_release(
        &self,
        release: &Release,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A release by id.
    fn get_release(
        &self,
        team: TeamId,
        id: ReleaseId,
    ) -> impl Future<Output = StoreResult<Option<Release>>> + Send;
    /// Replaces a release, with the checks and the latest rule of create. Its artifacts are kept
    /// as stored (they change only through [`add_artifact`](Self::add_artifact) and
    /// [`remove_artifact`](Self::remove_artifact), so that an update never loses one added
    /// meanwhile).
    fn update_release(
        &self,
        release: &Release,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes a release; returns it.
    fn delete_release(
        &self,
        team: TeamId,
        id: ReleaseId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Release>> + Send;
    /// One page of releases.
    fn list_releases(
        &self,
        team: TeamId,
        query: &ReleaseListQuery,
    ) -> impl Future<Output = StoreResult<Page<Release>>> + Send;
    /// (ext) Adds `artifact` to release `release`, atomically; returns the release after it. A
    /// release that already has an artifact in its place (the same platform, architecture and
    /// kind, [`Artifact::same_slot`](crate::model::Artifact::same_slot)) refuses it with
    /// [`StoreError::State`].
    fn add_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: &crate::model::Artifact,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Release>> + Send;
    /// (ext) Removes artifact `artifact` of release `release`, atomically; returns it.
    fn remove_artifact(
        &self,
        team: TeamId,
        release: ReleaseId,
        artifact: crate::ArtifactId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<crate::model::Artifact>> + Send;
    /// Everything the verification decision needs about a product: its branches and releases.
    fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> impl Future<Output = StoreResult<(Vec<Branch>, Vec<Release>)>> + Send;
}

/// The e-mail outbox, drained by a delivery worker.
pub trait OutboxStore: Send + Sync {
    /// Messages due at `now` (any team), soonest first, at most `limit`.
    fn due_messages(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<OutboxMessage>>> + Send;
    /// Claims up to `limit` messages due at `now` for delivery by this worker until
    /// `now + lease_ms`: another worker's claim does not return them meanwhile, so that workers
    /// of several instances never send one message at once (a crashed worker's claims lapse).
    /// The default, for a store that one process uses, is [`due_messages`](Self::due_messages).
    fn claim_messages(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<OutboxMessage>>> + Send {
        let _ = lease_ms;
        self.due_messages(now, limit)
    }
    /// Queues messages of `team` that belong to no other change (an invitation, a license key
    /// sent again), in one atomic step; [`StoreError::Limit`] when the team's e-mails queued on
    /// the day of `now` would exceed `daily_limit`, and then nothing is queued.
    fn queue_messages(
        &self,
        team: TeamId,
        mail: &[OutboxMessage],
        daily_limit: u32,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Removes a delivered message.
    fn message_sent(&self, message: &OutboxMessage)
    -> impl Future<Output = StoreResult<()>> + Send;
    /// Stores a message's new attempt count, next attempt time and error.
    fn message_failed(
        &self,
        message: &OutboxMessage,
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// The audit log, written through [`Journal`]s.
pub trait AuditStore: Send + Sync {
    /// One page of the team's entries matching the query, newest first unless the query says
    /// otherwise (entries of the same millisecond by id).
    fn list_audit(
        &self,
        team: TeamId,
        query: &AuditQuery,
    ) -> impl Future<Output = StoreResult<Page<AuditEntry>>> + Send;
    /// Stores entries as they are, ids and times included (a restore from an archive); an entry
    /// already stored is replaced.
    fn restore_audit(&self, entries: &[AuditEntry])
    -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes up to `limit` entries (any team) older than `before`, oldest first; how many.
    fn prune_audit(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Records a journal that goes with no other write: something that happened and changed
    /// nothing stored (a failed sign-in, a backup downloaded). Durable when it returns.
    fn record_journal(&self, journal: &Journal) -> impl Future<Output = StoreResult<()>> + Send;
}

/// Webhook endpoints, and the events and deliveries a worker sends to them.
pub trait WebhookStore: Send + Sync {
    /// Stores a new endpoint.
    fn create_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// An endpoint by id.
    fn get_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
    ) -> impl Future<Output = StoreResult<Option<WebhookEndpoint>>> + Send;
    /// A team's endpoints, oldest first.
    fn list_webhooks(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<WebhookEndpoint>>> + Send;
    /// Replaces an endpoint (`NotFound` when it is gone).
    fn update_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes an endpoint with its deliveries.
    fn delete_webhook(
        &self,
        team: TeamId,
        id: WebhookId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Applies a delivery's outcome to its endpoint's health, atomically (see
    /// [`apply_health`](crate::model::apply_health)); `None` when the endpoint is gone. When
    /// this disables the endpoint, `alert` is set and the endpoint has an alert address, the
    /// [`disabled_alert`](crate::model::disabled_alert) e-mail is queued in the same step.
    fn webhook_health(
        &self,
        team: TeamId,
        id: WebhookId,
        ok: bool,
        now: Timestamp,
        disable_after_ms: i64,
        alert: bool,
    ) -> impl Future<Output = StoreResult<Option<HealthChange>>> + Send;
    /// Turns up to `limit` queued events (any team, oldest first) into deliveries, one per
    /// endpoint of the event's team that is enabled and wants its type (see
    /// [`fan_out`](crate::model::fan_out)), and removes them from the queue, atomically per
    /// event; how many events it took. Several workers never take one event twice. Need not be
    /// durable when it returns: lost with the process, the events are taken again.
    fn fan_out_events(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> impl Future<Output = StoreResult<usize>> + Send;
    /// Claims up to `limit` pending deliveries a worker may send at `now` (see
    /// [`first_of_chains`](crate::model::first_of_chains)) until `now + lease_ms`: another
    /// worker's claim does not return them meanwhile.
    fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<WebhookDelivery>>> + Send;
    /// Stores a new delivery (a redelivery, a test event) with its journal; `NotFound` when its
    /// endpoint is gone.
    fn insert_delivery(
        &self,
        delivery: &WebhookDelivery,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Stores a delivery after an attempt (and lifts its claim); nothing when it is gone. Need
    /// not be durable when it returns: an outcome lost with the process leaves the delivery
    /// pending, to be sent again.
    fn update_delivery(
        &self,
        delivery: &WebhookDelivery,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A delivery of an endpoint, by id.
    fn get_delivery(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        id: DeliveryId,
    ) -> impl Future<Output = StoreResult<Option<WebhookDelivery>>> + Send;
    /// One page of an endpoint's deliveries, newest first unless the paging says otherwise.
    fn list_deliveries(
        &self,
        team: TeamId,
        endpoint: WebhookId,
        paging: &Paging,
    ) -> impl Future<Output = StoreResult<Page<WebhookDelivery>>> + Send;
    /// Queues events the client API raised outside a write (its refusals, written behind in
    /// batches), durably when this returns. An event with a [`RaisedEvent::once`] mark is
    /// queued only when its license's stored mark differs, and the mark is stored, so that
    /// `license.expired` is raised once per expiration date; a mark goes with its license.
    /// How many events were queued.
    fn raise_events(
        &self,
        events: &[RaisedEvent],
    ) -> impl Future<Output = StoreResult<usize>> + Send;
    /// Deletes up to `limit` finished deliveries (any team) created before `before`; how many.
    fn prune_deliveries(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// What a conflict on a staff account's `email` says.
pub const STAFF_EMAIL_TAKEN: &str = "already has an account in this team";

/// Staff accounts and their signed-in sessions.
pub trait StaffStore: Send + Sync {
    /// Stores an account; an e-mail address that has an account in the same team is a
    /// conflict on `email` (one in another team is not: a person may belong to several teams,
    /// with an account in each).
    fn create_staff(
        &self,
        user: &StaffUser,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// The account with this id, any team (a session or a set-password link names it).
    fn get_staff(&self, id: StaffId)
    -> impl Future<Output = StoreResult<Option<StaffUser>>> + Send;
    /// The accounts with this e-mail address (lower-cased), of every team, oldest first.
    fn find_staff_by_email(
        &self,
        email: &str,
    ) -> impl Future<Output = StoreResult<Vec<StaffUser>>> + Send;
    /// A team's accounts, oldest first.
    fn list_staff(&self, team: TeamId) -> impl Future<Output = StoreResult<Vec<StaffUser>>> + Send;
    /// Replaces an account of its team (not found otherwise); a new e-mail address that has an
    /// account in the team is a conflict on `email`.
    fn update_staff(
        &self,
        user: &StaffUser,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Deletes an account of `team` and every session of it.
    fn delete_staff(
        &self,
        team: TeamId,
        id: StaffId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Stores a session of an existing account (signing in), with its journal.
    fn create_session(
        &self,
        session: &StaffSession,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// The session whose cookie hashes to `id_sha256`.
    fn get_session(
        &self,
        id_sha256: &str,
    ) -> impl Future<Output = StoreResult<Option<StaffSession>>> + Send;
    /// Moves a session's `lastSeenAt` forward to `now` (never back); a missing session is skipped.
    fn touch_session(
        &self,
        id_sha256: &str,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Ends one session (signing out, or a timed-out one), with its journal; a missing session
    /// is skipped (and its journal not recorded).
    fn delete_session(
        &self,
        id_sha256: &str,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Ends every session of an account ("sign out everywhere", a new password); how many.
    fn delete_sessions_of(&self, user: StaffId) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Deletes the sessions that have timed out: last used before `seen_before` (idle), or
    /// begun before `created_before` (absolute); how many.
    fn delete_stale_sessions(
        &self,
        seen_before: Timestamp,
        created_before: Timestamp,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// (ext) The customer portal's sign-in tickets and sessions. Every secret is stored as its
/// SHA-256; a ticket works once, and only until it expires.
pub trait PortalStore: Send + Sync {
    /// Stores a new ticket (its team must exist).
    fn create_portal_ticket(
        &self,
        ticket: &PortalTicket,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Spends the ticket whose link token hashes to `token_sha256`, in one atomic step: the
    /// ticket, when it existed and had not expired at `now`; `None` otherwise (and an expired
    /// one is deleted too). Two concurrent redemptions never both get it.
    fn redeem_portal_link(
        &self,
        token_sha256: &str,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Option<PortalTicket>>> + Send;
    /// Tries a code against ticket `id` of `team`, in one atomic step: the right code spends the
    /// ticket; a wrong one takes a try, and the last try spends it.
    fn redeem_portal_code(
        &self,
        team: TeamId,
        id: uuid::Uuid,
        code_sha256: &str,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<CodeRedeemed>> + Send;
    /// Stores a session (its team must exist), with its journal.
    fn create_portal_session(
        &self,
        session: &PortalSession,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// The session whose cookie hashes to `id_sha256`.
    fn get_portal_session(
        &self,
        id_sha256: &str,
    ) -> impl Future<Output = StoreResult<Option<PortalSession>>> + Send;
    /// Moves a session's `lastSeenAt` forward to `now` (never back); a missing one is skipped.
    fn touch_portal_session(
        &self,
        id_sha256: &str,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A team's sessions, newest first.
    fn list_portal_sessions(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<PortalSession>>> + Send;
    /// Ends a session of `team` (signing out, or staff ending it), with its journal; `false`
    /// (and the journal not recorded) when there was none.
    fn delete_portal_session(
        &self,
        team: TeamId,
        id_sha256: &str,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<bool>> + Send;
    /// Deletes the tickets expired at `now` and the sessions begun before `created_before`;
    /// how many records.
    fn prune_portal(
        &self,
        now: Timestamp,
        created_before: Timestamp,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// Blacklist entries.
pub trait BlacklistStore: Send + Sync {
    /// Stores an entry; an entry of the same type and value is a conflict.
    fn create_blacklist_entry(
        &self,
        entry: &BlacklistEntry,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// A team's entries, oldest first.
    fn list_blacklist(
        &self,
        team: TeamId,
    ) -> impl Future<Output = StoreResult<Vec<BlacklistEntry>>> + Send;
    /// Deletes an entry.
    fn delete_blacklist_entry(
        &self,
        team: TeamId,
        id: BlacklistId,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Adds to hit counters (batched by the caller); unknown ids are ignored.
    fn add_blacklist_hits(
        &self,
        team: TeamId,
        hits: &[(BlacklistId, u64)],
    ) -> impl Future<Output = StoreResult<()>> + Send;
}

/// Statistics.
pub trait StatsStore: Send + Sync {
    /// Adds a batch of counts to the team's bucket of that hour.
    fn add_hourly(
        &self,
        team: TeamId,
        counts: &HourlyStats,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// The team's buckets from hour `since` (hours since the epoch) on.
    fn hourly_since(
        &self,
        team: TeamId,
        since: i64,
    ) -> impl Future<Output = StoreResult<Vec<HourlyStats>>> + Send;
    /// Totals of licenses, customers, products, and licenses active since `active_since`
    /// (`totalRequests` is left 0: it comes from the buckets).
    fn overview(
        &self,
        team: TeamId,
        active_since: Timestamp,
    ) -> impl Future<Output = StoreResult<Overview>> + Send;
    /// The `limit` products with the most licenses, most first.
    fn top_products(
        &self,
        team: TeamId,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<TopProduct>>> + Send;
    /// The work waiting on the whole server (for metrics).
    fn backlog(&self) -> impl Future<Output = StoreResult<Backlog>> + Send;
}

/// Everything the server stores.
pub trait Store:
    TeamStore
    + ApiKeyStore
    + LicenseStore
    + CustomerStore
    + EntitlementStore
    + PolicyStore
    + PaymentStore
    + ProductStore
    + ReleaseStore
    + DeviceStore
    + ActivityStore
    + LicenseSessionStore
    + SessionKeyStore
    + IdempotencyStore
    + RequestLogStore
    + BlacklistStore
    + StatsStore
    + OutboxStore
    + AuditStore
    + WebhookStore
    + StaffStore
    + PortalStore
    + UsageStore
    + Clone
    + 'static
{
}

impl<T> Store for T where
    T: TeamStore
        + ApiKeyStore
        + LicenseStore
        + CustomerStore
        + EntitlementStore
        + PolicyStore
        + PaymentStore
        + ProductStore
        + ReleaseStore
        + DeviceStore
        + ActivityStore
        + LicenseSessionStore
        + SessionKeyStore
        + IdempotencyStore
        + RequestLogStore
        + BlacklistStore
        + StatsStore
        + OutboxStore
        + AuditStore
        + WebhookStore
        + StaffStore
        + PortalStore
        + UsageStore
        + Clone
        + 'static
{
}
