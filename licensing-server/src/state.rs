//! What every handler can reach.

use std::sync::Arc;

use licensing_core::{ApiKeyId, LicenseKey, TeamId};

use crate::files::FileStore;
use crate::metrics::Metrics;
use crate::runtime::chat::ChatDirectory;
use crate::runtime::contexts::TeamContexts;
use crate::runtime::geo::Geo;
use crate::runtime::key_uses::KeyUses;
use crate::runtime::keyring::Keyring;
use crate::runtime::license_cache::LicenseCache;
use crate::runtime::mail::Mailer;
use crate::runtime::ratelimit::RateLimiter;
use crate::runtime::stats::StatsCache;
use crate::runtime::usage::UsageRecorder;
use crate::store::AnyStore;
use crate::store::shared::SharedCounters;

/// Shared state of the running server: one allocation that every handler's copy points to, so
/// that a request's copy costs one reference count, not one per part.
#[derive(Clone, Debug)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    /// The state made of its parts.
    pub(crate) fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Debug)]
pub(crate) struct Shared {
    /// The store.
    pub(crate) store: AnyStore,
    /// Release files.
    pub(crate) files: FileStore,
    /// Statistics answers, 15 minutes per team.
    pub(crate) stats: StatsCache,
    /// The dashboard's headline counts, a few seconds per team.
    pub(crate) overviews: crate::runtime::stats::OverviewCache,
    /// Prometheus metrics.
    pub(crate) metrics: Metrics,
    /// The SMTP mailer, when configured.
    pub(crate) mailer: Option<Mailer>,
    /// The chat directory, when configured.
    pub(crate) chat: Option<ChatDirectory>,
    /// (ext) The payment providers' APIs.
    pub(crate) providers: crate::runtime::providers::ProviderApis,
    /// Who may read `/metrics` on the main listener.
    pub(crate) metrics_access: MetricsAccess,
    /// The admin API's token; the admin API is off without one.
    pub(crate) admin_token: Option<std::sync::Arc<str>>,
    /// Opens (and seals) teams' private keys.
    pub(crate) keyring: Keyring,
    /// Teams as the client API reads them.
    pub(crate) contexts: TeamContexts,
    /// Licenses as the client API reads them (see [`LicenseCache`]).
    pub(crate) licenses: Arc<LicenseCache>,
    /// Client request counts and blacklist hits on their way to the store.
    pub(crate) usage: UsageRecorder,
    /// (ext) The request history, written behind.
    pub(crate) request_log: crate::runtime::request_log::RequestLog,
    /// The client API's refusal events on their way to the store.
    pub(crate) client_events: crate::runtime::client_events::ClientEventQueue,
    /// Countries of client addresses.
    pub(crate) geo: Arc<Geo>,
    /// The rate limiters.
    pub(crate) limits: Arc<Limits>,
    /// Usage records kept per license and kind.
    pub(crate) max_records: u32,
    /// Days the audit log keeps an entry (0: forever).
    pub(crate) audit_retention_days: u32,
    /// Sends webhook deliveries (and holds the operator's webhook settings).
    pub(crate) webhooks: crate::runtime::webhooks::Sender,
    /// API key uses waiting to be written (`lastUsedAt`).
    pub(crate) key_uses: KeyUses,
    /// The address links point to (`--public-url`: `scheme://host`); `None`: the one the
    /// browser used.
    pub(crate) public_url: Option<Arc<str>>,
    /// The staff dashboard's settings; `None` when it is off.
    pub(crate) dashboard: Option<DashboardSettings>,
    /// Alive while any copy of the state is (the route tree, connection tasks), so that
    /// `Server::run` can wait for the last one before it returns.
    pub(crate) alive: Arc<()>,
}

/// Who may read `/metrics`.
#[derive(Clone, Debug)]
pub(crate) enum MetricsAccess {
    /// Nobody here: metrics have their own listener.
    Elsewhere,
    /// Clients on loopback addresses only (the default).
    Loopback,
    /// Requests with this bearer token.
    Token(Arc<str>),
    /// Anybody who reaches the listener (the separate metrics listener without a token).
    Open,
}

/// Who a developer or admin request is counted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Principal {
    /// An API key.
    ApiKey(ApiKeyId),
    /// The admin token.
    Admin,
}

impl crate::runtime::ratelimit::LimitKey for Principal {
    fn limit_key(&self) -> Vec<u8> {
        match self {
            Self::ApiKey(id) => id.as_bytes().to_vec(),
            Self::Admin => b"admin".to_vec(),
        }
    }
}

/// The rate limiters (protocol.md section 3); `None` where the limit is 0 (off).
#[derive(Debug)]
pub(crate) struct Limits {
    /// Verify, per client IP.
    pub(crate) verify: Option<RateLimiter<u128>>,
    /// Heartbeat, per client IP.
    pub(crate) heartbeat: Option<RateLimiter<u128>>,
    /// Classloader, per client IP.
    pub(crate) classloader_ip: Option<RateLimiter<u128>>,
    /// Classloader, per license key.
    pub(crate) classloader_key: Option<RateLimiter<(TeamId, LicenseKey)>>,
    /// Developer and admin API, per API key or admin token.
    pub(crate) dev: Option<RateLimiter<Principal>>,
    /// Release uploads, per team.
    pub(crate) uploads: Option<RateLimiter<TeamId>>,
    /// (ext) Payment providers' events, per team (twice the developer API's rate).
    pub(crate) inbound: Option<RateLimiter<TeamId>>,
    /// Failed authentications, per client address.
    pub(crate) auth_failures: Option<RateLimiter<u128>>,
    /// Failed API-key authentications, per team of the path.
    pub(crate) auth_failures_team: Option<RateLimiter<TeamId>>,
    /// Failed dashboard sign-ins per account name and client address, or per browser that
    /// signed in to the account before (its device cookie), in tiers of growing windows: past a
    /// minute's allowance the wait is up to a minute, past an hour's up to an hour, past a
    /// day's up to a day. Keyed by digests, so that unknown addresses are limited alike. Empty
    /// when authentication limits are off.
    pub(crate) sign_in_account: Vec<RateLimiter<[u8; 32]>>,
    /// Failed sign-ins per account name from every browser without a device cookie together
    /// (guessing spread over many addresses), in larger tiers. A browser that signed in to the
    /// account before is not held back by these.
    pub(crate) sign_in_total: Vec<RateLimiter<[u8; 32]>>,
    /// (ext) Customer portal sign-in e-mails per address (a digest of team and address): 3 in
    /// 10 minutes, alike for addresses with and without licenses.
    pub(crate) portal_mail_address: Option<RateLimiter<[u8; 32]>>,
    /// (ext) Customer portal sign-in e-mails per client address: 20 an hour.
    pub(crate) portal_mail_client: Option<RateLimiter<u128>>,
    /// Set-password e-mails asked for on the dashboard's sign-in page, per address (a digest):
    /// 3 an hour, alike for addresses with and without an account.
    pub(crate) password_mail_address: Option<RateLimiter<[u8; 32]>>,
    /// Set-password e-mails asked for on the sign-in page, per client address: 10 an hour.
    pub(crate) password_mail_client: Option<RateLimiter<u128>>,
}

/// The tiers of [`Limits::sign_in_account`]: failures allowed per window.
pub(crate) const SIGN_IN_TIERS: [(u32, std::time::Duration); 3] = [
    (5, std::time::Duration::from_secs(60)),
    (20, std::time::Duration::from_secs(3600)),
    (100, std::time::Duration::from_secs(86_400)),
];

/// The tiers of [`Limits::sign_in_total`].
pub(crate) const SIGN_IN_TOTAL_TIERS: [(u32, std::time::Duration); 2] = [
    (100, std::time::Duration::from_secs(3600)),
    (300, std::time::Duration::from_secs(86_400)),
];

impl Limits {
    /// Limiters for `client` requests a minute per IP or license key, `dev` requests a minute
    /// per API key, `uploads` a minute per team, and `auth_failures` failed authentications a
    /// minute per address (ten times that per team).
    pub(crate) fn per_minute(client: u32, dev: u32, uploads: u32, auth_failures: u32) -> Self {
        Self {
            verify: RateLimiter::per_minute(client),
            heartbeat: RateLimiter::per_minute(client),
            classloader_ip: RateLimiter::per_minute(client),
            classloader_key: RateLimiter::per_minute(client),
            dev: RateLimiter::per_minute(dev),
            uploads: RateLimiter::per_minute(uploads),
            inbound: RateLimiter::per_minute(dev.saturating_mul(2)),
            auth_failures: RateLimiter::per_minute(auth_failures),
            auth_failures_team: RateLimiter::per_minute(auth_failures.saturating_mul(10)),
            sign_in_account: tiers(auth_failures, &SIGN_IN_TIERS),
            sign_in_total: tiers(auth_failures, &SIGN_IN_TOTAL_TIERS),
            portal_mail_address: mail_limit(auth_failures, 3, 600),
            portal_mail_client: mail_limit(auth_failures, 20, 3600),
            password_mail_address: mail_limit(auth_failures, 3, 3600),
            password_mail_client: mail_limit(auth_failures, 10, 3600),
        }
    }

    /// The same limits with their counters in `pool`, shared by every instance on it.
    pub(crate) fn shared(self, pool: &Arc<dyn SharedCounters>) -> Self {
        fn share<K>(
            limiter: Option<RateLimiter<K>>,
            pool: &Arc<dyn SharedCounters>,
            name: &'static str,
        ) -> Option<RateLimiter<K>>
        where
            K: std::hash::Hash + Eq + Clone + crate::runtime::ratelimit::LimitKey,
        {
            limiter.map(|l| l.shared(pool.clone(), name))
        }
        Self {
            verify: share(self.verify, pool, "verify"),
            heartbeat: share(self.heartbeat, pool, "heartbeat"),
            classloader_ip: share(self.classloader_ip, pool, "classloader-ip"),
            classloader_key: share(self.classloader_key, pool, "classloader-key"),
            dev: share(self.dev, pool, "dev"),
            uploads: share(self.uploads, pool, "uploads"),
            inbound: share(self.inbound, pool, "inbound"),
            auth_failures: share(self.auth_failures, pool, "auth-failures"),
            auth_failures_team: share(self.auth_failures_team, pool, "auth-failures-team"),
            sign_in_account: self
                .sign_in_account
                .into_iter()
                .zip(["sign-in-minute", "sign-in-hour", "sign-in-day"])
                .map(|(limiter, name)| limiter.shared(pool.clone(), name))
                .collect(),
            sign_in_total: self
                .sign_in_total
                .into_iter()
                .zip(["sign-in-total-hour", "sign-in-total-day"])
                .map(|(limiter, name)| limiter.shared(pool.clone(), name))
                .collect(),
            portal_mail_address: share(self.portal_mail_address, pool, "portal-mail-address"),
            portal_mail_client: share(self.portal_mail_client, pool, "portal-mail-client"),
            password_mail_address: share(self.password_mail_address, pool, "password-mail-address"),
            password_mail_client: share(self.password_mail_client, pool, "password-mail-client"),
        }
    }
}

/// A limiter of e-mails asked for: `limit` per `seconds` (none when authentication limits are
/// off).
fn mail_limit<K>(auth_failures: u32, limit: u32, seconds: u64) -> Option<RateLimiter<K>>
where
    K: std::hash::Hash + Eq + Clone,
{
    (auth_failures > 0).then(|| {
        RateLimiter::new(
            limit,
            std::time::Duration::from_secs(seconds),
            crate::runtime::ratelimit::MAX_KEYS,
        )
    })
}

/// Limiters of `tiers` (none when authentication limits are off).
fn tiers(auth_failures: u32, tiers: &[(u32, std::time::Duration)]) -> Vec<RateLimiter<[u8; 32]>> {
    if auth_failures == 0 {
        return Vec::new();
    }
    tiers
        .iter()
        .map(|(limit, window)| {
            RateLimiter::new(*limit, *window, crate::runtime::ratelimit::MAX_KEYS)
        })
        .collect()
}

/// The dashboard's settings; the server has none when the dashboard is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DashboardSettings {
    /// Minutes without a request after which a session ends.
    pub(crate) idle_minutes: u32,
    /// Hours after signing in after which a session ends.
    pub(crate) session_hours: u32,
}
