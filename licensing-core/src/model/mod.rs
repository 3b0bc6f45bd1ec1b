//! Domain records as stored and as the developer API shows them. Member names and enum spellings
//! are the wire's: camelCase members, upper-case enum values.

mod artifact;
mod audit;
mod customer;
mod device;
mod entitlement;
mod floating;
mod integration;
mod license;
mod metadata;
mod outbox;
mod policy;
mod portal;
mod product;
mod release;
mod request_log;
mod scope;
mod staff;
mod stats;
mod team;
mod usage;
mod webhook;

pub use artifact::{Arch, Artifact, ArtifactKind, Platform, RolloutPercent, UpdateFeed};
pub use audit::{Action, Actor, ActorKind, AuditEntry, FieldChange, changes, products_in};
pub use customer::{Address, ChatAccount, Customer};
pub use device::{DeviceLabel, Hwid, HwidView, IpRecord, IpRecordView, RecordStatus, UsageRecord};
pub use entitlement::{
    Entitlement, MAX_ENTITLEMENTS, MAX_REQUESTED_ENTITLEMENTS, effective_codes, entitlement_code,
    missing_codes,
};
pub use floating::{
    DEFAULT_SESSION_TTL, LicenseSession, MAX_SESSION_TTL, MIN_SESSION_TTL, SessionData,
    SessionStep, session_ttl,
};
pub use integration::{
    ALREADY_LINKED, DUPLICATE_EVENT, INBOUND_KEPT_MS, Inbound, InboundEvent, InboundStatus,
    Integration, LinkChange, MAX_INBOUND_BODY, MAX_RULES, OLDER_EVENT, OnCancel, OnPaymentFailed,
    OnRefund, PREVIOUS_SECRET_MS, PaymentLink, PriceRule, RuleMatch, inbox_path, last_four,
    secret_purpose,
};
pub use license::{ExpirationStart, ExpirationType, License, LicenseDetail, MAX_SUSPENSION_REASON};
pub use metadata::{ClientMetadata, MetadataItem};
pub use outbox::OutboxMessage;
pub use policy::{
    MAX_GRACE_DAYS, MAX_METERS, MAX_POLICIES, Meter, MeterPeriod, NO_POLICIES, Policies, Policy,
    SelfServiceResets, Term, grace_end,
};
pub use portal::{
    CodeRedeemed, PORTAL_CODE_TRIES, PORTAL_SESSION_MS, PORTAL_TICKET_MS, PortalGrant,
    PortalMethod, PortalSession, PortalSignIn, PortalTicket, SelfServiceReset, UsageRef,
};
pub use product::{Product, ProductRef};
pub use release::{
    Branch, BranchRef, LicenseRef, Release, ReleaseFile, ReleaseStatus, ReleaseView,
};
pub use request_log::{
    ClientEndpoint, REQUEST_LOG_DAYS, REQUEST_LOG_PER_LICENSE, REQUEST_LOG_PER_TEAM,
    RequestLogEntry,
};
pub use scope::{
    Access, PRODUCT_TIED_KINDS, ProductRestriction, Resource, Scope, Scopes, Sight, cannot_grant,
    covers_products, read_scopes_of, sees_products, sight, tied_to_products,
};
pub use staff::{PasswordLink, PendingEmail, Role, StaffInvited, StaffSession, StaffUser, TwoStep};
pub use stats::{
    Backlog, DailyRequests, HourlyStats, Overview, RecentActivity, RequestCounts, RequestType,
    RequestsByType, Statistics, TopCountry, TopProduct, TopRefusal,
};
pub use team::{
    ApiKeyCreated, ApiKeyRecord, ApiKeyView, BlacklistEntry, BlacklistType,
    DEFAULT_CHECKOUT_MAX_TTL, DEFAULT_MAX_LIVE_SESSIONS, Kid, MAX_LIVE_SESSIONS_CAP, PublicKeys,
    SigningKey, SigningKeyChange, SigningKeyState, Team, TeamCreated, TeamFeatures, TeamSettings,
    TeamView, UpdaterKeys, active_key_conflict,
};
pub use usage::{
    LicenseMeter, MAX_USAGE_BATCH, MAX_USAGE_QUANTITY, MeterState, MeterUsage, PeriodUsage,
    USAGE_EVENT_KEPT_MS, USAGE_HISTORY_PERIODS, USAGE_THRESHOLD_PERCENT, UsageChange, UsageCounter,
    UsageIncrement, UsageOutcome, effective_meters, meter_usage, usage_event_id, usage_events,
    used_in_period,
};
pub use webhook::{
    ATTEMPTS_KEPT, ClientEvent, ClientEvents, DeliveryAttempt, DeliveryStatus, DisabledReason,
    HealthChange, SERVER_EVENT_TYPES, WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookView,
    WebhookWithSecret, admission_events, apply_health, disabled_alert, event_pattern_matches,
    event_pattern_valid, event_types, fan_out, first_of_chains,
};
