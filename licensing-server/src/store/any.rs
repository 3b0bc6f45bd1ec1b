//! The store a server runs on, chosen at start-up: sled or PostgreSQL.
//!
//! Why an enum: core's traits return `impl Future` (no boxing on the hot path), which rules out
//! `dyn Store`; a generic `AppState<S>` would compile the whole route tree once per backend and
//! thread a type parameter through every handler. An enum that implements the traits by
//! delegation keeps handlers unchanged, dispatches statically (one `match` per call, which the
//! measured hot path does not notice next to a store read), and keeps backend-specific
//! operations (flushing sled, the database pool) in one place.

use licensing_core::api::requests::{
    AuditQuery, CustomerListQuery, DeviceListQuery, LicenseListQuery, Paging, ProductListQuery,
    ReleaseListQuery, RequestLogQuery,
};
use licensing_core::crypto::{ApiKeyHash, StoredTeamKeys};
use licensing_core::idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyOwner, KeptAnswer,
};
use licensing_core::model::{
    ApiKeyRecord, AuditEntry, BlacklistEntry, Branch, Customer, Entitlement, HealthChange,
    HourlyStats, Hwid, IpRecord, License, OutboxMessage, Overview, Policy, Product, Release,
    RequestLogEntry, SigningKeyChange, Team, TeamFeatures, TeamSettings, TopProduct,
    WebhookDelivery, WebhookEndpoint,
};
use licensing_core::store::*;
use licensing_core::verify::Denial;
use licensing_core::{
    ApiKeyId, BlacklistId, BranchId, CustomerId, DeliveryId, EntitlementId, HwidId, IpId,
    LicenseId, LicenseKey, PolicyId, ProductId, ReleaseId, TeamId, Timestamp, WebhookId,
};

use licensing_core::InboundId;
use licensing_core::LicenseSessionId;
use licensing_core::StaffId;
use licensing_core::api::requests::InboundQuery;
use licensing_core::crypto::inbound::Provider;
use licensing_core::model::{Inbound, InboundEvent, Integration, PaymentLink};
use licensing_core::model::{LicenseSession, StaffSession, StaffUser};

use super::SledStore;
use super::postgres::PgStore;

/// The server's store. Clones share it.
#[derive(Clone, Debug)]
pub enum AnyStore {
    /// The embedded default.
    Sled(SledStore),
    /// PostgreSQL, for several instances on one database.
    Postgres(PgStore),
}

impl From<SledStore> for AnyStore {
    fn from(store: SledStore) -> Self {
        Self::Sled(store)
    }
}

impl From<PgStore> for AnyStore {
    fn from(store: PgStore) -> Self {
        Self::Postgres(store)
    }
}

impl AnyStore {
    /// Which backend, for logs: `sled` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Self::Sled(_) => "sled",
            Self::Postgres(_) => "postgres",
        }
    }

    /// The database connections (PostgreSQL): open, idle, and the most the pool opens; `None`
    /// for sled, which has none.
    pub fn pool_connections(&self) -> Option<(u32, u32, u32)> {
        match self {
            Self::Sled(_) => None,
            Self::Postgres(s) => {
                let pool = s.pool();
                Some((
                    pool.size(),
                    u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                    pool.options().get_max_connections(),
                ))
            }
        }
    }

    /// Makes everything written so far durable, the heartbeat refreshes waiting in memory
    /// included (both stores write those behind).
    pub async fn flush(&self) -> StoreResult<()> {
        match self {
            Self::Sled(s) => s.flush().await,
            Self::Postgres(s) => s.flush().await,
        }
    }

    /// Runs `first` with the store to itself among instances starting together (on PostgreSQL,
    /// under an advisory lock; a sled store belongs to one process anyway): checking whether
    /// the store is empty and creating the first team happen once, not once per instance.
    pub async fn first_start<T, E: From<StoreError>>(
        &self,
        first: impl AsyncFnOnce(&Self) -> Result<T, E>,
    ) -> Result<T, E> {
        match self {
            Self::Sled(_) => first(self).await,
            Self::Postgres(pg) => {
                let lock = pg.first_start_lock().await?;
                let out = first(self).await;
                lock.commit()
                    .await
                    .map_err(crate::store::postgres::backend)?;
                out
            }
        }
    }

    /// Whether the store holds no team yet.
    pub async fn is_empty(&self) -> StoreResult<bool> {
        match self {
            Self::Sled(s) => s.is_empty(),
            Self::Postgres(s) => s.is_empty().await,
        }
    }

    /// Bytes the store occupies on disk.
    pub async fn size_on_disk(&self) -> StoreResult<u64> {
        match self {
            Self::Sled(s) => s.size_on_disk(),
            Self::Postgres(s) => s.size_on_disk().await,
        }
    }

    /// The rate-limit counters every instance shares, on a backend that has them.
    pub fn shared_counters(&self) -> Option<std::sync::Arc<dyn super::shared::SharedCounters>> {
        match self {
            Self::Sled(_) => None,
            Self::Postgres(s) => Some(std::sync::Arc::new(s.clone())),
        }
    }

    /// The feed of changes made by other instances, on a backend that announces them.
    pub fn change_feed(&self) -> Option<std::sync::Arc<dyn super::shared::ChangeFeed>> {
        match self {
            Self::Sled(_) => None,
            Self::Postgres(s) => Some(std::sync::Arc::new(s.clone())),
        }
    }

    /// Room for release files in the store itself, on a backend that has it.
    pub fn blobs(&self) -> Option<std::sync::Arc<dyn super::shared::Blobs>> {
        match self {
            Self::Sled(_) => None,
            Self::Postgres(s) => Some(std::sync::Arc::new(s.clone())),
        }
    }

    /// Checks what the backend's own structures must agree on (the embedded store: every index
    /// against its records; PostgreSQL, which keeps its own indexes and constraints: each
    /// license's record counts): the records read and every problem found.
    pub async fn check_integrity(&self) -> StoreResult<super::sled::Findings> {
        match self {
            Self::Sled(s) => s.check(),
            Self::Postgres(s) => Ok(super::sled::Findings {
                checked: Default::default(),
                problems: s.check_record_counts().await?,
            }),
        }
    }

    /// After keys and secrets were sealed or re-sealed in place, rewrites the tables that held
    /// them so that no earlier version stays in their files; `false` when the backend cannot
    /// while open (the embedded store is compacted once closed instead).
    pub async fn rewrite_secrets_in_place(&self) -> StoreResult<bool> {
        match self {
            Self::Sled(_) => Ok(false),
            Self::Postgres(s) => s.rewrite_secret_tables().await.map(|()| true),
        }
    }

    /// The PostgreSQL store, when this is one.
    pub fn postgres(&self) -> Option<&PgStore> {
        match self {
            Self::Sled(_) => None,
            Self::Postgres(s) => Some(s),
        }
    }
}

/// Implements a trait for [`AnyStore`] by handing each call to the backend.
macro_rules! delegate {
    ($trait:ident { $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)* }) => {
        impl $trait for AnyStore {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    match self {
                        AnyStore::Sled(s) => s.$name($($arg),*).await,
                        AnyStore::Postgres(s) => s.$name($($arg),*).await,
                    }
                }
            )*
        }
    };
}

delegate!(TeamStore {
    fn create_team(&self, team: &Team, first_key: &ApiKeyRecord, journal: &Journal) -> StoreResult<()>;
    fn get_team(&self, id: TeamId) -> StoreResult<Option<Team>>;
    fn list_teams(&self) -> StoreResult<Vec<Team>>;
    fn update_settings(&self, id: TeamId, settings: &TeamSettings, now: Timestamp, journal: &Journal) -> StoreResult<Team>;
    fn update_features(&self, id: TeamId, features: TeamFeatures, now: Timestamp, journal: &Journal) -> StoreResult<Team>;
    fn change_signing_keys(&self, id: TeamId, change: &SigningKeyChange, now: Timestamp, journal: &Journal) -> StoreResult<Team>;
    fn update_team_keys(&self, id: TeamId, keys: &StoredTeamKeys, next: Option<&StoredTeamKeys>, now: Timestamp) -> StoreResult<Team>;
});

delegate!(EntitlementStore {
    fn create_entitlement(&self, entitlement: &Entitlement, journal: &Journal) -> StoreResult<()>;
    fn get_entitlement(&self, team: TeamId, id: EntitlementId) -> StoreResult<Option<Entitlement>>;
    fn list_entitlements(&self, team: TeamId) -> StoreResult<Vec<Entitlement>>;
    fn update_entitlement(&self, entitlement: &Entitlement, journal: &Journal) -> StoreResult<()>;
    fn delete_entitlement(&self, team: TeamId, id: EntitlementId, journal: &Journal) -> StoreResult<()>;
});

delegate!(PolicyStore {
    fn create_policy(&self, policy: &Policy, journal: &Journal) -> StoreResult<()>;
    fn get_policy(&self, team: TeamId, id: PolicyId) -> StoreResult<Option<Policy>>;
    fn list_policies(&self, team: TeamId) -> StoreResult<Vec<Policy>>;
    fn update_policy(&self, policy: &Policy, journal: &Journal) -> StoreResult<()>;
    fn count_policy_licenses(&self, team: TeamId, id: PolicyId) -> StoreResult<u64>;
    fn delete_policy(&self, team: TeamId, id: PolicyId, detach: bool, journal: &Journal) -> StoreResult<u64>;
});

delegate!(PaymentStore {
    fn get_integration(&self, team: TeamId, provider: Provider) -> StoreResult<Option<Integration>>;
    fn list_integrations(&self, team: TeamId) -> StoreResult<Vec<Integration>>;
    fn put_integration(&self, integration: &Integration, journal: &Journal) -> StoreResult<()>;
    fn delete_integration(&self, team: TeamId, provider: Provider, journal: &Journal) -> StoreResult<()>;
    fn record_inbound(&self, event: &InboundEvent) -> StoreResult<()>;
    fn apply_inbound(&self, inbound: &Inbound) -> StoreResult<()>;
    fn inbound_applied(&self, team: TeamId, provider: Provider, event_id: &str) -> StoreResult<Option<InboundId>>;
    fn get_inbound(&self, team: TeamId, id: InboundId) -> StoreResult<Option<InboundEvent>>;
    fn list_inbound(&self, team: TeamId, query: &InboundQuery) -> StoreResult<Page<InboundEvent>>;
    fn payment_link(&self, team: TeamId, provider: Provider, subject: &str) -> StoreResult<Option<PaymentLink>>;
    fn list_payment_links(&self, team: TeamId) -> StoreResult<Vec<PaymentLink>>;
    fn restore_payment_links(&self, links: &[PaymentLink]) -> StoreResult<()>;
    fn prune_inbound(&self, before: Timestamp) -> StoreResult<u64>;
});

delegate!(ApiKeyStore {
    fn create_api_key(&self, key: &ApiKeyRecord, journal: &Journal) -> StoreResult<()>;
    fn find_api_key(&self, hash: &ApiKeyHash) -> StoreResult<Option<ApiKeyRecord>>;
    fn list_api_keys(&self, team: TeamId) -> StoreResult<Vec<ApiKeyRecord>>;
    fn delete_api_keys(&self, team: TeamId, ids: &[ApiKeyId], journal: &Journal) -> StoreResult<u64>;
    fn record_api_key_use(&self, uses: &[(TeamId, ApiKeyId, Timestamp)]) -> StoreResult<()>;
});

delegate!(LicenseStore {
    fn create_license(&self, license: &License, journal: &Journal) -> StoreResult<()>;
    fn get_license(&self, team: TeamId, id: LicenseId) -> StoreResult<Option<License>>;
    fn get_license_by_key(&self, team: TeamId, key: &LicenseKey) -> StoreResult<Option<License>>;
    fn update_license(&self, license: &License, journal: &Journal) -> StoreResult<()>;
    fn delete_license(&self, team: TeamId, id: LicenseId, journal: &Journal) -> StoreResult<License>;
    fn create_license_with_mail(&self, license: &License, mail: &[OutboxMessage], daily_limit: u32, now: Timestamp, journal: &Journal) -> StoreResult<()>;
    fn list_licenses(&self, team: TeamId, query: &LicenseListQuery) -> StoreResult<Page<License>>;
});

delegate!(CustomerStore {
    fn create_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()>;
    fn get_customer(&self, team: TeamId, id: CustomerId) -> StoreResult<Option<Customer>>;
    fn get_customers(&self, team: TeamId, ids: &[CustomerId]) -> StoreResult<Vec<Customer>>;
    fn update_customer(&self, customer: &Customer, journal: &Journal) -> StoreResult<()>;
    fn delete_customer(&self, team: TeamId, id: CustomerId, journal: &Journal) -> StoreResult<()>;
    fn list_customers(&self, team: TeamId, query: &CustomerListQuery) -> StoreResult<Page<Customer>>;
    fn customers_with_email(&self, team: TeamId, email: &str) -> StoreResult<Vec<Customer>>;
});

delegate!(ProductStore {
    fn create_product(&self, product: &Product, journal: &Journal) -> StoreResult<()>;
    fn get_product(&self, team: TeamId, id: ProductId) -> StoreResult<Option<Product>>;
    fn get_products(&self, team: TeamId, ids: &[ProductId]) -> StoreResult<Vec<Product>>;
    fn update_product(&self, product: &Product, journal: &Journal) -> StoreResult<()>;
    fn delete_product(&self, team: TeamId, id: ProductId, journal: &Journal) -> StoreResult<Vec<Release>>;
    fn list_products(&self, team: TeamId, query: &ProductListQuery) -> StoreResult<Page<Product>>;
    fn create_branch(&self, branch: &Branch, journal: &Journal) -> StoreResult<()>;
    fn list_branches(&self, team: TeamId, product: ProductId) -> StoreResult<Vec<Branch>>;
    fn delete_branch(&self, team: TeamId, product: ProductId, id: BranchId, journal: &Journal) -> StoreResult<Vec<Release>>;
});

delegate!(ReleaseStore {
    fn create_release(&self, release: &Release, journal: &Journal) -> StoreResult<()>;
    fn get_release(&self, team: TeamId, id: ReleaseId) -> StoreResult<Option<Release>>;
    fn update_release(&self, release: &Release, journal: &Journal) -> StoreResult<()>;
    fn delete_release(&self, team: TeamId, id: ReleaseId, journal: &Journal) -> StoreResult<Release>;
    fn list_releases(&self, team: TeamId, query: &ReleaseListQuery) -> StoreResult<Page<Release>>;
    fn add_artifact(&self, team: TeamId, release: ReleaseId, artifact: &licensing_core::model::Artifact, journal: &Journal) -> StoreResult<Release>;
    fn remove_artifact(&self, team: TeamId, release: ReleaseId, artifact: licensing_core::ArtifactId, journal: &Journal) -> StoreResult<licensing_core::model::Artifact>;
    fn catalog(&self, team: TeamId, product: ProductId) -> StoreResult<(Vec<Branch>, Vec<Release>)>;
});

delegate!(DeviceStore {
    fn list_hwids(&self, team: TeamId, license: LicenseId, query: &DeviceListQuery) -> StoreResult<Page<Hwid>>;
    fn set_hwid_forgotten(&self, team: TeamId, license: LicenseId, id: HwidId, forgotten: bool, now: Timestamp, journal: &Journal) -> StoreResult<Hwid>;
    fn list_ips(&self, team: TeamId, license: LicenseId, query: &DeviceListQuery) -> StoreResult<Page<IpRecord>>;
    fn set_ip_forgotten(&self, team: TeamId, license: LicenseId, id: IpId, forgotten: bool, now: Timestamp, journal: &Journal) -> StoreResult<IpRecord>;
    fn restore_usage(&self, team: TeamId, license: LicenseId, hwids: &[Hwid], ips: &[IpRecord]) -> StoreResult<()>;
    fn forget_within_budget(&self, team: TeamId, license: LicenseId, record: licensing_core::model::UsageRef, budget: licensing_core::model::SelfServiceResets, now: Timestamp, journal: &Journal) -> StoreResult<licensing_core::model::SelfServiceReset>;
});

delegate!(ActivityStore {
    fn read_license_for_activity(&self, team: TeamId, key: &LicenseKey, activity: &Activity) -> StoreResult<Option<LicenseRead>>;
    fn record_activity_after(&self, read: &LicenseRead, rules: &ActivityRules<'_>, activity: &Activity, now: Timestamp) -> StoreResult<Result<Recorded, Denial>>;
    fn record_activity(&self, team: TeamId, license: LicenseId, rules: &ActivityRules<'_>, activity: &Activity, now: Timestamp) -> StoreResult<Result<Recorded, Denial>>;
    fn register_device(&self, team: TeamId, license: LicenseId, rules: &ActivityRules<'_>, hardware_id: &licensing_core::validate::HardwareId, override_limit: bool, now: Timestamp) -> StoreResult<Result<licensing_core::store::RegisteredDevice, Denial>>;
});

delegate!(LicenseSessionStore {
    fn list_license_sessions(&self, team: TeamId, license: LicenseId, now: Timestamp, paging: &Paging) -> StoreResult<Page<LicenseSession>>;
    fn get_license_session(&self, team: TeamId, license: LicenseId, id: LicenseSessionId) -> StoreResult<Option<LicenseSession>>;
    fn remove_license_session(&self, team: TeamId, license: LicenseId, id: LicenseSessionId, now: Timestamp, expired: bool, journal: &Journal) -> StoreResult<Option<LicenseSession>>;
    fn expired_license_sessions(&self, now: Timestamp, max: u32) -> StoreResult<Vec<LicenseSession>>;
    fn count_live_sessions(&self, now: Timestamp) -> StoreResult<u64>;
});

delegate!(IdempotencyStore {
    fn claim_idempotency_key(&self, owner: &IdempotencyOwner, key: &IdempotencyKey, fingerprint: Fingerprint, now: Timestamp) -> StoreResult<Claim>;
    fn keep_idempotent_answer(&self, owner: &IdempotencyOwner, key: &IdempotencyKey, fingerprint: Fingerprint, answer: &KeptAnswer) -> StoreResult<()>;
    fn release_idempotency_key(&self, owner: &IdempotencyOwner, key: &IdempotencyKey, fingerprint: Fingerprint) -> StoreResult<()>;
    fn count_kept_secrets(&self) -> StoreResult<u64>;
    fn purge_idempotency_keys(&self, before: Timestamp, max: u32) -> StoreResult<u64>;
});

delegate!(RequestLogStore {
    fn append_requests(&self, entries: &[RequestLogEntry]) -> StoreResult<()>;
    fn list_requests(&self, team: TeamId, license: LicenseId, query: &RequestLogQuery) -> StoreResult<Page<RequestLogEntry>>;
    fn cap_license_requests(&self, per_license: u64) -> StoreResult<u64>;
    fn prune_requests(&self, before: Timestamp, per_team: u64) -> StoreResult<u64>;
});

delegate!(UsageStore {
    fn record_usage(&self, license: &License, increments: &[licensing_core::model::UsageIncrement], wants: licensing_core::model::ClientEvents, now: Timestamp) -> StoreResult<Vec<licensing_core::model::UsageOutcome>>;
    fn list_usage(&self, team: TeamId, license: LicenseId) -> StoreResult<Vec<licensing_core::model::UsageCounter>>;
    fn used_now(&self, team: TeamId, license: LicenseId, meters: &[licensing_core::model::Meter], now: Timestamp) -> StoreResult<Vec<u64>>;
    fn change_usage(&self, team: TeamId, license: LicenseId, meter: &licensing_core::model::Meter, change: licensing_core::model::UsageChange, now: Timestamp, journal: &Journal) -> StoreResult<licensing_core::model::UsageCounter>;
    fn restore_usage_counters(&self, team: TeamId, license: LicenseId, counters: &[licensing_core::model::UsageCounter]) -> StoreResult<()>;
    fn prune_usage_events(&self, before: Timestamp) -> StoreResult<u64>;
});

delegate!(SessionKeyStore {
    fn use_session_key(&self, team: TeamId, fingerprint: [u8; 16], now: Timestamp, window_ms: i64, per_team: u32) -> StoreResult<Result<(), SessionKeyRefused>>;
});

delegate!(StaffStore {
    fn create_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()>;
    fn get_staff(&self, id: StaffId) -> StoreResult<Option<StaffUser>>;
    fn find_staff_by_email(&self, email: &str) -> StoreResult<Vec<StaffUser>>;
    fn list_staff(&self, team: TeamId) -> StoreResult<Vec<StaffUser>>;
    fn update_staff(&self, user: &StaffUser, journal: &Journal) -> StoreResult<()>;
    fn delete_staff(&self, team: TeamId, id: StaffId, journal: &Journal) -> StoreResult<()>;
    fn create_session(&self, session: &StaffSession, journal: &Journal) -> StoreResult<()>;
    fn get_session(&self, id_sha256: &str) -> StoreResult<Option<StaffSession>>;
    fn touch_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()>;
    fn delete_session(&self, id_sha256: &str, journal: &Journal) -> StoreResult<()>;
    fn delete_sessions_of(&self, user: StaffId) -> StoreResult<u64>;
    fn delete_stale_sessions(&self, seen_before: Timestamp, created_before: Timestamp) -> StoreResult<u64>;
});

delegate!(PortalStore {
    fn create_portal_ticket(&self, ticket: &licensing_core::model::PortalTicket) -> StoreResult<()>;
    fn redeem_portal_link(&self, token_sha256: &str, now: Timestamp) -> StoreResult<Option<licensing_core::model::PortalTicket>>;
    fn redeem_portal_code(&self, team: TeamId, id: uuid::Uuid, code_sha256: &str, now: Timestamp) -> StoreResult<licensing_core::model::CodeRedeemed>;
    fn create_portal_session(&self, session: &licensing_core::model::PortalSession, journal: &Journal) -> StoreResult<()>;
    fn get_portal_session(&self, id_sha256: &str) -> StoreResult<Option<licensing_core::model::PortalSession>>;
    fn touch_portal_session(&self, id_sha256: &str, now: Timestamp) -> StoreResult<()>;
    fn list_portal_sessions(&self, team: TeamId) -> StoreResult<Vec<licensing_core::model::PortalSession>>;
    fn delete_portal_session(&self, team: TeamId, id_sha256: &str, journal: &Journal) -> StoreResult<bool>;
    fn prune_portal(&self, now: Timestamp, created_before: Timestamp) -> StoreResult<u64>;
});

delegate!(BlacklistStore {
    fn create_blacklist_entry(&self, entry: &BlacklistEntry, journal: &Journal) -> StoreResult<()>;
    fn list_blacklist(&self, team: TeamId) -> StoreResult<Vec<BlacklistEntry>>;
    fn delete_blacklist_entry(&self, team: TeamId, id: BlacklistId, journal: &Journal) -> StoreResult<()>;
    fn add_blacklist_hits(&self, team: TeamId, hits: &[(BlacklistId, u64)]) -> StoreResult<()>;
});

delegate!(StatsStore {
    fn add_hourly(&self, team: TeamId, counts: &HourlyStats) -> StoreResult<()>;
    fn hourly_since(&self, team: TeamId, since: i64) -> StoreResult<Vec<HourlyStats>>;
    fn overview(&self, team: TeamId, active_since: Timestamp) -> StoreResult<Overview>;
    fn top_products(&self, team: TeamId, limit: usize) -> StoreResult<Vec<TopProduct>>;
    fn backlog(&self) -> StoreResult<licensing_core::model::Backlog>;
});

delegate!(AuditStore {
    fn list_audit(&self, team: TeamId, query: &AuditQuery) -> StoreResult<Page<AuditEntry>>;
    fn restore_audit(&self, entries: &[AuditEntry]) -> StoreResult<()>;
    fn prune_audit(&self, before: Timestamp, limit: usize) -> StoreResult<u64>;
    fn record_journal(&self, journal: &Journal) -> StoreResult<()>;
});

delegate!(WebhookStore {
    fn create_webhook(&self, endpoint: &WebhookEndpoint, journal: &Journal) -> StoreResult<()>;
    fn get_webhook(&self, team: TeamId, id: WebhookId) -> StoreResult<Option<WebhookEndpoint>>;
    fn list_webhooks(&self, team: TeamId) -> StoreResult<Vec<WebhookEndpoint>>;
    fn update_webhook(&self, endpoint: &WebhookEndpoint, journal: &Journal) -> StoreResult<()>;
    fn delete_webhook(&self, team: TeamId, id: WebhookId, journal: &Journal) -> StoreResult<()>;
    fn webhook_health(&self, team: TeamId, id: WebhookId, ok: bool, now: Timestamp, disable_after_ms: i64, alert: bool) -> StoreResult<Option<HealthChange>>;
    fn fan_out_events(&self, now: Timestamp, limit: usize) -> StoreResult<usize>;
    fn claim_deliveries(&self, now: Timestamp, lease_ms: i64, limit: usize) -> StoreResult<Vec<WebhookDelivery>>;
    fn insert_delivery(&self, delivery: &WebhookDelivery, journal: &Journal) -> StoreResult<()>;
    fn update_delivery(&self, delivery: &WebhookDelivery) -> StoreResult<()>;
    fn get_delivery(&self, team: TeamId, endpoint: WebhookId, id: DeliveryId) -> StoreResult<Option<WebhookDelivery>>;
    fn list_deliveries(&self, team: TeamId, endpoint: WebhookId, paging: &Paging) -> StoreResult<Page<WebhookDelivery>>;
    fn raise_events(&self, events: &[RaisedEvent]) -> StoreResult<usize>;
    fn prune_deliveries(&self, before: Timestamp, limit: usize) -> StoreResult<u64>;
});

delegate!(OutboxStore {
    fn queue_messages(&self, team: TeamId, mail: &[OutboxMessage], daily_limit: u32, now: Timestamp) -> StoreResult<()>;
    fn due_messages(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<OutboxMessage>>;
    fn claim_messages(&self, now: Timestamp, lease_ms: i64, limit: usize) -> StoreResult<Vec<OutboxMessage>>;
    fn message_sent(&self, message: &OutboxMessage) -> StoreResult<()>;
    fn message_failed(&self, message: &OutboxMessage) -> StoreResult<()>;
});
