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

mod filter;
mod memory;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::future::Future;
use std::net::IpAddr;

pub use filter::*;
pub use memory::MemoryStore;

use crate::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, LicenseListQuery, Paging, ProductListQuery,
    ReleaseListQuery,
};
use crate::code::ResultCode;
use crate::crypto::{ApiKeyHash, StoredTeamKeys};
use crate::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, ClientEvents, Customer, HealthChange,
    HourlyStats, Hwid, IpRecord, License, OutboxMessage, Overview, Product, Release, StaffSession,
    StaffUser, Team, TeamFeatures, TeamSettings, TopProduct, UsageRecord, WebhookDelivery,
    WebhookEndpoint, WebhookEvent,
};
use crate::validate::{Country, HardwareId};
use crate::verify::{Admission, Denial};
use crate::{
    ApiError, ApiKeyId, BlacklistId, BranchId, CustomerId, DeliveryId, HwidId, IpId, LicenseId,
    LicenseKey, ProductId, ReleaseId, StaffId, TeamId, Timestamp, WebhookId,
};

/// The kinds of records, for "not found" errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Entity {
    Team,
    License,
    Customer,
    Product,
    Release,
    Branch,
    Hwid,
    Ip,
    ApiKey,
    Blacklist,
    Webhook,
    Delivery,
    Staff,
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record (or a record it references) does not exist in this team.
    #[error("{0:?} not found")]
    NotFound(Entity),
    /// A uniqueness rule would break: the field and what to do.
    #[error("conflict on {field}: {message}")]
    Conflict {
        /// The member of the request at fault.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A quota would be exceeded (answered as 429 `RATE_LIMIT`).
    #[error("limit reached: {0}")]
    Limit(String),
    /// The backend failed (I/O, corruption, a lost connection). Logged, answered as 500.
    #[error("storage backend failure: {0}")]
    Backend(#[source] BackendError),
}

/// What failed in a backend, with the error that caused it when there is one (kept as the
/// error's `source`, so that a log shows the whole chain).
#[derive(Debug)]
pub struct BackendError {
    context: std::borrow::Cow<'static, str>,
    cause: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl BackendError {
    /// `context` failed because of `cause`.
    pub fn new(
        context: impl Into<std::borrow::Cow<'static, str>>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            context: context.into(),
            cause: Some(Box::new(cause)),
        }
    }

    /// A failure described by `message` alone.
    pub fn message(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self {
            context: message.into(),
            cause: None,
        }
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause}", self.context),
            None => f.write_str(&self.context),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl StoreError {
    /// A backend failure described by `message`.
    pub fn backend(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::Backend(BackendError::message(message))
    }

    /// A backend failure: `context` failed because of `cause`.
    pub fn backend_from(
        context: impl Into<std::borrow::Cow<'static, str>>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Backend(BackendError::new(context, cause))
    }
}

impl StoreError {
    /// A conflict on `field`.
    pub fn conflict(field: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            field,
            message: message.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(entity) => match entity {
                Entity::Team => ApiError::new(ResultCode::TeamNotFound, "Team not found"),
                Entity::License => ApiError::new(ResultCode::LicenseNotFound, "License not found"),
                Entity::Customer => {
                    ApiError::new(ResultCode::CustomerNotFound, "Customer not found")
                }
                Entity::Product => ApiError::new(ResultCode::ProductNotFound, "Product not found"),
                Entity::Release => ApiError::new(ResultCode::ReleaseNotFound, "Release not found"),
                Entity::Branch => ApiError::new(ResultCode::ReleaseNotFound, "Branch not found"),
                Entity::Hwid => ApiError::record_not_found("Hardware identifier not found"),
                Entity::Ip => ApiError::record_not_found("IP address not found"),
                Entity::ApiKey => ApiError::record_not_found("API key not found"),
                Entity::Blacklist => ApiError::record_not_found("Blacklist entry not found"),
                Entity::Webhook => ApiError::record_not_found("Webhook endpoint not found"),
                Entity::Delivery => ApiError::record_not_found("Webhook delivery not found"),
                Entity::Staff => ApiError::record_not_found("Staff account not found"),
            },
            StoreError::Conflict { field, message } => ApiError::bad_field(field, &message),
            StoreError::Limit(message) => ApiError::new(ResultCode::RateLimit, message),
            StoreError::Backend(cause) => ApiError::internal_because("store failure", cause),
        }
    }
}

/// Result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;

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
}

impl Journal {
    /// Nothing to record: restoring an archive, tests.
    pub const NONE: Journal = Journal {
        audit: Vec::new(),
        events: Vec::new(),
    };

    /// A journal of one audit entry.
    pub fn audit(entry: AuditEntry) -> Self {
        Self {
            audit: vec![entry],
            events: Vec::new(),
        }
    }

    /// The same journal with `other`'s entries and events after its own.
    pub fn and(mut self, other: Journal) -> Self {
        self.audit.extend(other.audit);
        self.events.extend(other.events);
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
    /// Replaces a team's stored private keys (sealing them under a master key, or re-sealing
    /// them under a new one).
    fn update_team_keys(
        &self,
        id: TeamId,
        keys: &StoredTeamKeys,
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
    /// Deletes a product with its releases and branches and detaches it from licenses,
    /// atomically. Returns the deleted releases (their files are the caller's to remove).
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
    /// Replaces a release, with the checks and the latest rule of create.
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
    /// Everything the verification decision needs about a product: its branches and releases.
    fn catalog(
        &self,
        team: TeamId,
        product: ProductId,
    ) -> impl Future<Output = StoreResult<(Vec<Branch>, Vec<Release>)>> + Send;
}

/// Hardware identifiers and IP records of licenses.
pub trait DeviceStore: Send + Sync {
    /// One page of a license's hardware identifiers (the license must exist).
    fn list_hwids(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> impl Future<Output = StoreResult<Page<Hwid>>> + Send;
    /// Marks a hardware identifier of the license forgotten or remembered.
    fn set_hwid_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: HwidId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<Hwid>> + Send;
    /// One page of a license's IP records (the license must exist).
    fn list_ips(
        &self,
        team: TeamId,
        license: LicenseId,
        query: &DeviceListQuery,
    ) -> impl Future<Output = StoreResult<Page<IpRecord>>> + Send;
    /// Stores a license's device and address records exactly as given (restoring an archive):
    /// a record of the same identifier, or address, on the license is replaced. The license
    /// must exist in the team; the records must name it.
    fn restore_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        hwids: &[Hwid],
        ips: &[IpRecord],
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Marks an IP record of the license forgotten or remembered.
    fn set_ip_forgotten(
        &self,
        team: TeamId,
        license: LicenseId,
        id: IpId,
        forgotten: bool,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<IpRecord>> + Send;
}

/// What a successful client request brings to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// The device, when the request names one.
    pub hardware_id: Option<HardwareId>,
    /// The client's address.
    pub ip: IpAddr,
    /// The client's country, when known.
    pub country: Option<Country>,
}

/// Usage records a license keeps of each kind unless the operator says otherwise.
pub const DEFAULT_MAX_RECORDS: u32 = 10_000;

/// What decides steps 7 and 8 besides the request: the team's settings, and the most usage
/// records of one kind (hardware identifiers, IP addresses) the server keeps per license.
#[derive(Clone, Copy, Debug)]
pub struct ActivityRules<'a> {
    /// The team's settings (limits' timeouts, `requireHardwareIdentifier`).
    pub settings: &'a TeamSettings,
    /// The cap on stored records of one kind per license. A new record past it first drops the
    /// least recently seen records that count against nothing (forgotten ones, ones past the
    /// team's timeout, and any when the license has no limit of that kind), a tenth of the cap
    /// at a time; when none can be dropped, the request is refused with the limit's code.
    pub max_records: u32,
    /// The client events the team's endpoints want: the atomic step writes those of an
    /// admission (see [`admission_events`](crate::model::admission_events)) with the records.
    pub events: ClientEvents,
}

impl<'a> ActivityRules<'a> {
    /// The rules with the default cap.
    pub fn new(settings: &'a TeamSettings) -> Self {
        Self {
            settings,
            max_records: DEFAULT_MAX_RECORDS,
            events: ClientEvents::NONE,
        }
    }
}

/// What [`ActivityStore::record_activity`] recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The license after the step (its `expirationDate` set if the clock started).
    pub license: License,
    /// The plan that was applied.
    pub admission: Admission,
}

/// The license a client request names, as the client API reads it first, with the request's
/// own device and address records when the store read them in the same query (a store where
/// that costs a round trip more leaves `own` empty).
#[derive(Clone, Debug)]
pub struct LicenseRead {
    /// The license.
    pub license: License,
    /// The request's own records as read with the license: `Some` when the store read them
    /// (each `None` when absent), for [`ActivityStore::record_activity_after`].
    pub own: Option<(Option<Hwid>, Option<IpRecord>)>,
}

/// The atomic unit of the client API.
pub trait ActivityStore: Send + Sync {
    /// The license with `key`, for a request of `activity`: what the decision reads first.
    /// Stores on a network read the request's own records in the same query, so that a request
    /// whose records already count costs one read ([`record_activity_after`]); the default
    /// reads the license alone.
    ///
    /// [`record_activity_after`]: ActivityStore::record_activity_after
    fn read_license_for_activity(
        &self,
        team: TeamId,
        key: &LicenseKey,
        activity: &Activity,
    ) -> impl Future<Output = StoreResult<Option<LicenseRead>>> + Send
    where
        Self: LicenseStore,
    {
        let _ = activity;
        async move {
            Ok(self
                .get_license_by_key(team, key)
                .await?
                .map(|license| LicenseRead { license, own: None }))
        }
    }

    /// [`record_activity`](ActivityStore::record_activity) after
    /// [`read_license_for_activity`](ActivityStore::read_license_for_activity): a store may
    /// admit a request whose records already count from what `read` holds, without reading
    /// again; the atomic step is the same.
    fn record_activity_after(
        &self,
        read: &LicenseRead,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Result<Recorded, Denial>>> + Send {
        self.record_activity(read.license.team_id, read.license.id, rules, activity, now)
    }

    /// In one atomic step per license: read the license and the request's own records, run
    /// [`verify::admit_own`](crate::verify::admit_own) with the team's settings, and on
    /// admission create or refresh the hardware-identifier and IP records (dropping records past
    /// the cap of `rules`), start an `ACTIVATION` clock and set `lastActiveAt`. New records are
    /// durable when this returns. A refusal is the inner `Err`. The cost must not grow with the
    /// number of records the license holds, except to count them for a limit that is at stake
    /// or to drop some at the cap; the atomic step excludes other requests of the same license
    /// only.
    fn record_activity(
        &self,
        team: TeamId,
        license: LicenseId,
        rules: &ActivityRules<'_>,
        activity: &Activity,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Result<Recorded, Denial>>> + Send;
}

/// Why a classloader session key was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKeyRefused {
    /// The team used it within the window.
    Reused,
    /// The team used as many session keys within the window as it may keep.
    Full,
}

/// The record of used classloader session keys (a session key is
/// accepted once), kept per team and across restarts.
pub trait SessionKeyStore: Send + Sync {
    /// Takes a session key (its `fingerprint`) for `team` at `now`, durably: refused when the
    /// team used it within `window_ms`, or when the team already holds `per_team` keys used within
    /// the window. Keys older than the window are forgotten.
    fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> impl Future<Output = StoreResult<Result<(), SessionKeyRefused>>> + Send;
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
}

/// Everything the server stores.
pub trait Store:
    TeamStore
    + ApiKeyStore
    + LicenseStore
    + CustomerStore
    + ProductStore
    + ReleaseStore
    + DeviceStore
    + ActivityStore
    + SessionKeyStore
    + BlacklistStore
    + StatsStore
    + OutboxStore
    + AuditStore
    + WebhookStore
    + StaffStore
    + Clone
    + 'static
{
}

impl<T> Store for T where
    T: TeamStore
        + ApiKeyStore
        + LicenseStore
        + CustomerStore
        + ProductStore
        + ReleaseStore
        + DeviceStore
        + ActivityStore
        + SessionKeyStore
        + BlacklistStore
        + StatsStore
        + OutboxStore
        + AuditStore
        + WebhookStore
        + StaffStore
        + Clone
        + 'static
{
}
