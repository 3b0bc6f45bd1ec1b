//! Settings: every one a command-line flag and a `LICENSING_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use ipnet::IpNet;

use crate::client_addr::TrustedProxies;
use crate::connections::ConnectionLimits;

/// Shortest admin token accepted.
pub const MIN_ADMIN_TOKEN: usize = 32;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where a first start puts the new team's credentials (its API key among them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FirstStartCredentials {
    /// Printed on a terminal; otherwise written to a file only.
    #[default]
    Auto,
    /// Written to the file and printed once to the log as well (a container's log is where its
    /// operator looks, and its image has no shell to read a file with).
    Log,
    /// Written to the file only.
    File,
}

/// Server settings.
#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// A TOML file of settings, one key per setting named as its flag without `--`
    /// (`data-dir = "/var/lib/licensing-server"`); a flag or an environment variable wins over
    /// the file, the file over the default, and an unknown key is an error.
    #[arg(long, env = "LICENSING_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "LICENSING_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// Directory of the embedded store and the release files (created readable by this user
    /// only; looser permissions found at start-up are tightened).
    #[arg(long, env = "LICENSING_DATA_DIR", default_value = "./licensing-data")]
    pub data_dir: PathBuf,

    /// PostgreSQL to store everything in, instead of the embedded store in `--data-dir`
    /// (`postgres://user:password@host:5432/database`, with `?sslmode=require` for TLS). Several
    /// servers on one database share every record and limit: the way to run more than one.
    #[arg(long, env = "LICENSING_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Connections each server keeps to PostgreSQL at most.
    #[arg(long, env = "LICENSING_DATABASE_POOL_SIZE",
          default_value_t = crate::store::DEFAULT_POOL_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub database_pool_size: u32,

    /// A file holding the master key (32 random bytes; `licensing-server master-key generate`
    /// writes one) that seals every team's private keys at rest with AES-256-GCM. Keys found in
    /// the clear are sealed at start-up; a store with sealed keys does not start without it.
    #[arg(long, env = "LICENSING_MASTER_KEY_FILE")]
    pub master_key_file: Option<PathBuf>,

    /// Token of the admin API under /api/v1/admin (`Authorization: Bearer <token>`), at least 32
    /// characters (`openssl rand -hex 32` makes one); the admin API is off when unset.
    #[arg(long, env = "LICENSING_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// SMTP server for license e-mails (`sendEmailDelivery`), such as
    /// `smtp://user:password@mail.example.com:587?tls=required`; e-mail delivery is refused without it.
    #[arg(long, env = "LICENSING_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// Sender of license e-mails, such as `Licensing <noreply@example.com>`.
    #[arg(long, env = "LICENSING_SMTP_FROM")]
    pub smtp_from: Option<String>,

    /// License e-mails a team may queue per day (UTC); a license create past it is refused
    /// with 429 and nothing is stored.
    #[arg(long, env = "LICENSING_MAIL_DAILY_LIMIT", default_value_t = crate::runtime::mail::DEFAULT_DAILY_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub mail_daily_limit: u32,

    /// Largest release file in MiB (uploads past it are answered 413).
    #[arg(long, env = "LICENSING_MAX_UPLOAD_MB", default_value_t = crate::files::DEFAULT_MAX_FILE_MB,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_upload_mb: u64,

    /// (ext) Largest update artifact in MiB (uploads past it are answered 413). Artifacts are
    /// streamed to the file store, never held in memory.
    #[arg(long, env = "LICENSING_MAX_ARTIFACT_MB", default_value_t = crate::files::DEFAULT_MAX_ARTIFACT_MB,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_artifact_mb: u64,

    /// (ext) MiB of this instance's disk for copies of release files kept in PostgreSQL
    /// (`<data dir>/files/cache`, emptied at start; 0 keeps none): a file is copied on its first
    /// download and read from disk afterwards, the least recently opened going first.
    #[arg(long, env = "LICENSING_FILE_CACHE_MB", default_value_t = crate::files::DEFAULT_FILE_CACHE_MB,
          value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub file_cache_mb: u64,

    /// Base URL of the chat directory that checks customers' `chatId` (Discord-style
    /// `GET {url}/users/{id}`), such as `https://discord.com/api/v10`; chat ids are refused without it.
    #[arg(long, env = "LICENSING_CHAT_API_URL")]
    pub chat_api_url: Option<String>,

    /// Bot token for the chat directory (`Authorization: Bot <token>`).
    #[arg(long, env = "LICENSING_CHAT_BOT_TOKEN", hide_env_values = true)]
    pub chat_bot_token: Option<String>,

    /// Stripe's API address, read with a team's Stripe API key where an event lacks what
    /// applying it needs (a checkout's line items, a product's metadata).
    #[arg(
        long,
        env = "LICENSING_STRIPE_API_BASE",
        default_value = "https://api.stripe.com"
    )]
    pub stripe_api_base: String,

    /// Paddle Billing's API address (a customer's e-mail address).
    #[arg(
        long,
        env = "LICENSING_PADDLE_API_BASE",
        default_value = "https://api.paddle.com"
    )]
    pub paddle_api_base: String,

    /// Lemon Squeezy's API address (a subscription's renewal date).
    #[arg(
        long,
        env = "LICENSING_LEMONSQUEEZY_API_BASE",
        default_value = "https://api.lemonsqueezy.com"
    )]
    pub lemonsqueezy_api_base: String,

    /// Proxies whose `X-Forwarded-For` is believed, as a comma-separated list of addresses or
    /// CIDR ranges (such as `127.0.0.1,10.0.0.0/8`). From any other peer the header is ignored
    /// and the client IP is the socket's peer address.
    /// Behind them the client is found by reading `X-Forwarded-For` from right to left, skipping
    /// every trusted proxy. Empty: none.
    #[arg(long, env = "LICENSING_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: List<Net>,

    /// A MaxMind-format country database (`.mmdb`: GeoLite2-Country, or a free one such as
    /// ip-location-db's geo-whois-asn-country). Without it, countries come from the registry
    /// data embedded in the server.
    #[arg(long, env = "LICENSING_GEOIP_DB")]
    pub geoip_db: Option<PathBuf>,

    /// Client requests allowed per minute: verify and heartbeat per client IP, classloader per
    /// client IP and per license key. 0 turns these limits off.
    #[arg(long, env = "LICENSING_RATE_LIMIT_PER_MINUTE", default_value_t = 30)]
    pub rate_limit_per_minute: u32,

    /// Developer and admin requests allowed per minute per API key (or admin token). 0 turns the
    /// limit off.
    #[arg(
        long,
        env = "LICENSING_DEV_RATE_LIMIT_PER_MINUTE",
        default_value_t = 300
    )]
    pub dev_rate_limit_per_minute: u32,

    /// Failed authentications (wrong, mistyped or expired API keys, wrong admin tokens) allowed
    /// per minute per client address; past it the address is answered 429 whatever it sends.
    /// API-key failures against one team are limited to ten times this, after which further
    /// failures (never correct keys) are answered 429. 0 turns these limits off.
    #[arg(
        long,
        env = "LICENSING_AUTH_FAILURE_LIMIT_PER_MINUTE",
        default_value_t = 20
    )]
    pub auth_failure_limit_per_minute: u32,

    /// Release uploads (create or update, which may carry a file) allowed per minute per
    /// team, on top of the developer limit. 0 turns this limit off.
    #[arg(
        long,
        env = "LICENSING_UPLOAD_RATE_LIMIT_PER_MINUTE",
        default_value_t = 20
    )]
    pub upload_rate_limit_per_minute: u32,

    /// Hardware identifiers (and, separately, IP addresses) the server keeps per license. A new one
    /// past it first drops the least recently seen records that count against nothing (forgotten,
    /// past the team's timeout, or any when the license has no limit of that kind); when none may
    /// be dropped, the request is refused with the limit's code.
    #[arg(long, env = "LICENSING_MAX_RECORDS_PER_LICENSE",
          default_value_t = licensing_core::store::DEFAULT_MAX_RECORDS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_records_per_license: u32,

    /// Days the audit log keeps an entry; older entries are deleted in the background (hourly).
    /// 0 keeps every entry.
    #[arg(long, env = "LICENSING_AUDIT_RETENTION_DAYS",
          default_value_t = crate::workers::audit_pruner::DEFAULT_RETENTION_DAYS)]
    pub audit_retention_days: u32,

    /// Days a license's request history keeps an entry (every client request that reached the
    /// license, accepted or refused); older entries are deleted hourly. 0 records no history.
    #[arg(long, env = "LICENSING_REQUEST_HISTORY_DAYS",
          default_value_t = licensing_core::model::REQUEST_LOG_DAYS)]
    pub request_history_days: u32,

    /// Request history entries kept per team (the newest); the oldest beyond it are deleted
    /// hourly.
    #[arg(long, env = "LICENSING_REQUEST_HISTORY_PER_TEAM",
          default_value_t = licensing_core::model::REQUEST_LOG_PER_TEAM,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub request_history_per_team: u64,

    /// Request history entries kept per license (the newest): one license's flood of
    /// requests pushes out its own history, never its team's. The oldest beyond it are deleted
    /// hourly.
    #[arg(long, env = "LICENSING_REQUEST_HISTORY_PER_LICENSE",
          default_value_t = licensing_core::model::REQUEST_LOG_PER_LICENSE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub request_history_per_license: u64,

    /// Accept plain `http://` webhook endpoints (otherwise `https://` only).
    #[arg(long, env = "LICENSING_WEBHOOK_ALLOW_HTTP", default_value_t = false,
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub webhook_allow_http: bool,

    /// Let webhooks reach loopback, private, link-local and other non-public addresses (for a
    /// receiver on the same machine or network). Off, such destinations are refused after DNS
    /// resolution, for every new connection.
    #[arg(long, env = "LICENSING_WEBHOOK_ALLOW_PRIVATE", default_value_t = false,
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub webhook_allow_private: bool,

    /// Seconds to wait after each failed webhook attempt, comma-separated; a delivery fails
    /// after the last (the default spans about three days). Each delay varies by up to 20%.
    #[arg(long, env = "LICENSING_WEBHOOK_RETRY_DELAYS",
          default_value = crate::runtime::webhooks::DEFAULT_RETRY_DELAYS,
          value_parser = crate::runtime::webhooks::parse_delays_arg)]
    pub webhook_retry_delays: crate::runtime::webhooks::RetryDelays,

    /// Seconds a webhook endpoint may fail every delivery before it is disabled (three days).
    #[arg(long, env = "LICENSING_WEBHOOK_DISABLE_AFTER_SECS",
          default_value_t = crate::runtime::webhooks::DEFAULT_DISABLE_AFTER_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub webhook_disable_after_secs: u64,

    /// Seconds one webhook attempt may take, connecting included.
    #[arg(long, env = "LICENSING_WEBHOOK_TIMEOUT_SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub webhook_timeout_secs: u64,

    /// Memory for the store's cache of decoded pages, in MiB (the server's resident size is
    /// roughly this plus 60 MiB under load). More keeps more of a large data set hot.
    #[arg(long, env = "LICENSING_CACHE_MB", default_value_t = crate::store::DEFAULT_CACHE_MB)]
    pub cache_mb: u64,

    /// Serve the staff dashboard under /dashboard (staff sign in with their e-mail address
    /// and password; `licensing-server user create` makes accounts).
    #[arg(long, env = "LICENSING_DASHBOARD", default_value_t = true,
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub dashboard: bool,

    /// The e-mail address of the owner account a first start creates (with the first team),
    /// whose set-password link it prints beside the API key. Used on a first start only.
    #[arg(long, env = "LICENSING_OWNER_EMAIL", default_value = "owner@localhost")]
    pub owner_email: String,

    /// The server's address as browsers and customers reach it (`https://licensing.example.com`,
    /// a scheme and a host, no path), for every link it prints, e-mails or shows (set-password
    /// links). Unset: the address a browser used (its `Host`), and on the command line the
    /// listen address. Set it behind a reverse proxy.
    #[arg(long, env = "LICENSING_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<PublicUrl>,

    /// Minutes without a request after which a dashboard session ends.
    #[arg(long, env = "LICENSING_DASHBOARD_IDLE_MINUTES",
          default_value_t = crate::dashboard::DEFAULT_IDLE_MINUTES,
          value_parser = clap::value_parser!(u32).range(1..=10_080))]
    pub dashboard_idle_minutes: u32,

    /// Hours after signing in after which a dashboard session ends, however active.
    #[arg(long, env = "LICENSING_DASHBOARD_SESSION_HOURS",
          default_value_t = crate::dashboard::DEFAULT_SESSION_HOURS,
          value_parser = clap::value_parser!(u32).range(1..=720))]
    pub dashboard_session_hours: u32,

    /// Connections open at once; past it new connections wait in the listen backlog until one
    /// closes. Keep it under the process's open-file limit (`ulimit -n`).
    #[arg(long, env = "LICENSING_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Connections open at once from one client address (an IPv6 client: its /56); a connection
    /// past it is answered 429 and closed. Trusted proxies are exempt. The last eighth of
    /// --max-connections is kept for addresses holding at most one connection.
    #[arg(long, env = "LICENSING_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: u32,

    /// Seconds a client has to send a request line and headers; also how long an idle
    /// keep-alive connection stays open.
    #[arg(long, env = "LICENSING_HEADER_TIMEOUT_SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,

    /// Seconds a client has to send a whole request body (a 10 MiB upload needs about 1.4
    /// Mbit/s at the default); a body still incomplete then is answered 408.
    #[arg(long, env = "LICENSING_BODY_TIMEOUT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,

    /// Seconds a write to a client may make no progress (a client that stopped reading an
    /// answer) before the connection is closed.
    #[arg(long, env = "LICENSING_SEND_TIMEOUT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub send_timeout_secs: u64,

    /// Seconds requests in flight (downloads included) get to finish after SIGTERM or SIGINT.
    #[arg(long, env = "LICENSING_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    pub shutdown_timeout_secs: u64,

    /// Serve `/metrics` on this separate address (for an internal network or a scraper on the
    /// host) instead of on the main listener.
    #[arg(long, env = "LICENSING_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Require `Authorization: Bearer <token>` for `/metrics`. Without this and without
    /// `--metrics-listen`, `/metrics` answers clients on loopback addresses only.
    #[arg(long, env = "LICENSING_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// Log format.
    #[arg(long, env = "LICENSING_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Where a first start puts the new team's credentials: `auto`, printed on a terminal and
    /// otherwise written to `first-start-credentials.txt` in the data directory (readable by
    /// this user only) with only its path printed; `log`, that file and printed once to the log
    /// as well (the container image's choice); `file`, the file only.
    #[arg(long, env = "LICENSING_FIRST_START_CREDENTIALS", value_enum,
          default_value_t = FirstStartCredentials::Auto)]
    pub first_start_credentials: FirstStartCredentials,
}

impl Config {
    /// Settings for a server on `127.0.0.1:0` with its data in `data_dir` (tests, embedding).
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            config: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.into(),
            database_url: None,
            database_pool_size: crate::store::DEFAULT_POOL_SIZE,
            master_key_file: None,
            admin_token: None,
            smtp_url: None,
            smtp_from: None,
            mail_daily_limit: crate::runtime::mail::DEFAULT_DAILY_LIMIT,
            max_upload_mb: crate::files::DEFAULT_MAX_FILE_MB,
            max_artifact_mb: crate::files::DEFAULT_MAX_ARTIFACT_MB,
            file_cache_mb: crate::files::DEFAULT_FILE_CACHE_MB,
            chat_api_url: None,
            stripe_api_base: "https://api.stripe.com".into(),
            paddle_api_base: "https://api.paddle.com".into(),
            lemonsqueezy_api_base: "https://api.lemonsqueezy.com".into(),
            chat_bot_token: None,
            metrics_listen: None,
            metrics_token: None,
            log_format: LogFormat::Text,
            first_start_credentials: FirstStartCredentials::Auto,
            trusted_proxies: List::default(),
            geoip_db: None,
            rate_limit_per_minute: 30,
            dev_rate_limit_per_minute: 300,
            upload_rate_limit_per_minute: 20,
            auth_failure_limit_per_minute: 20,
            cache_mb: crate::store::DEFAULT_CACHE_MB,
            max_records_per_license: licensing_core::store::DEFAULT_MAX_RECORDS,
            audit_retention_days: crate::workers::audit_pruner::DEFAULT_RETENTION_DAYS,
            request_history_days: licensing_core::model::REQUEST_LOG_DAYS,
            request_history_per_team: licensing_core::model::REQUEST_LOG_PER_TEAM,
            request_history_per_license: licensing_core::model::REQUEST_LOG_PER_LICENSE,
            webhook_allow_http: false,
            webhook_allow_private: false,
            webhook_retry_delays: crate::runtime::webhooks::RetryDelays(
                crate::runtime::webhooks::parse_delays(
                    crate::runtime::webhooks::DEFAULT_RETRY_DELAYS,
                )
                .unwrap_or_default(),
            ),
            webhook_disable_after_secs: crate::runtime::webhooks::DEFAULT_DISABLE_AFTER_SECS,
            webhook_timeout_secs: 10,
            dashboard: true,
            owner_email: "owner@localhost".into(),
            public_url: None,
            dashboard_idle_minutes: crate::dashboard::DEFAULT_IDLE_MINUTES,
            dashboard_session_hours: crate::dashboard::DEFAULT_SESSION_HOURS,
            max_connections: 4096,
            max_connections_per_address: 128,
            header_timeout_secs: 10,
            body_timeout_secs: 60,
            send_timeout_secs: 60,
            shutdown_timeout_secs: 30,
        }
    }

    /// The webhook settings these settings describe.
    pub fn webhook_settings(&self) -> crate::runtime::webhooks::WebhookSettings {
        crate::runtime::webhooks::WebhookSettings {
            allow_http: self.webhook_allow_http,
            allow_private: self.webhook_allow_private,
            retry_delays: self.webhook_retry_delays.0.clone().into(),
            disable_after: Duration::from_secs(self.webhook_disable_after_secs),
            timeout: Duration::from_secs(self.webhook_timeout_secs),
            alerts: self.smtp_url.is_some() && self.smtp_from.is_some(),
        }
    }

    /// The connection limits these settings describe.
    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.max_connections as usize,
            max_connections_per_address: self.max_connections_per_address as usize,
            header_timeout: Duration::from_secs(self.header_timeout_secs),
            body_timeout: Duration::from_secs(self.body_timeout_secs),
            send_timeout: Duration::from_secs(self.send_timeout_secs),
            shutdown_timeout: Duration::from_secs(self.shutdown_timeout_secs),
        }
    }

    /// Refuses settings that would run an unsafe server.
    pub fn check(&self) -> Result<(), String> {
        if let Some(token) = &self.admin_token
            && token.chars().count() < MIN_ADMIN_TOKEN
        {
            return Err(format!(
                "LICENSING_ADMIN_TOKEN is {} characters long; it must have at least {MIN_ADMIN_TOKEN} \
                 (a short token can be guessed): make one with `openssl rand -hex 32`",
                token.chars().count()
            ));
        }
        if let Some(url) = &self.database_url {
            crate::store::check_database_url(url)?;
        }
        Ok(())
    }

    /// The trusted proxies these settings name.
    pub fn proxies(&self) -> TrustedProxies {
        TrustedProxies::new(
            self.trusted_proxies
                .iter()
                .map(|Net(net)| *net)
                .collect::<Vec<_>>(),
        )
    }
}

/// A comma-separated list setting. Entries are trimmed; empty entries are skipped, so an empty
/// value (`LICENSING_TRUSTED_PROXIES=`, as a service manager's environment file may hold) is an
/// empty list, not an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> FromIterator<T> for List<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl<T: FromStr<Err = String>> FromStr for List<T> {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| T::from_str(entry).map_err(|e| format!("{entry:?}: {e}")))
            .collect()
    }
}

/// An address or a CIDR range, such as `10.0.0.0/8` or `2001:db8::1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net(pub IpNet);

/// A public address: `http` or `https`, a host and maybe a port, nothing else; kept without a
/// trailing `/`, so that a path appends to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// `scheme://host[:port]`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PublicUrl {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let wanted = "give the scheme and host browsers use, like https://licensing.example.com";
        let uri: warp::http::Uri = text
            .parse()
            .map_err(|e| format!("{text:?} is not a URL ({e}): {wanted}"))?;
        let scheme = uri.scheme_str().unwrap_or_default();
        if scheme != "http" && scheme != "https" {
            return Err(format!("{text:?} is not an http or https URL: {wanted}"));
        }
        let Some(authority) = uri.authority() else {
            return Err(format!("{text:?} has no host: {wanted}"));
        };
        if authority.host().is_empty() || authority.as_str().contains('@') {
            return Err(format!("{text:?} needs a host and no user name: {wanted}"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() || text.contains('#') {
            return Err(format!(
                "{text:?} has a path, a query or a fragment: the dashboard is served at /dashboard/ of the host, so {wanted}"
            ));
        }
        Ok(Self(format!("{scheme}://{authority}")))
    }
}

impl FromStr for Net {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        licensing_core::verify::parse_ip_or_net(text.trim()).map(Net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_a_scheme_and_a_host() {
        for (given, kept) in [
            (
                "https://licensing.example.com",
                "https://licensing.example.com",
            ),
            (
                "https://licensing.example.com/",
                "https://licensing.example.com",
            ),
            (" http://10.0.0.5:8080 ", "http://10.0.0.5:8080"),
            ("https://[::1]:3000/", "https://[::1]:3000"),
        ] {
            assert_eq!(given.parse::<PublicUrl>().unwrap().as_str(), kept);
        }
        for refused in [
            "licensing.example.com",
            "ftp://licensing.example.com",
            "https://licensing.example.com/licensing",
            "https://licensing.example.com/?a=b",
            "https://licensing.example.com/#top",
            "https://user@licensing.example.com",
            "",
        ] {
            let e = refused.parse::<PublicUrl>().unwrap_err();
            assert!(
                e.contains("https://licensing.example.com"),
                "{refused}: {e}"
            );
        }
    }
}
