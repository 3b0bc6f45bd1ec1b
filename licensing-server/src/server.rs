//! The server: bind (port 0 allowed), report the address, serve until a shutdown signal, then
//! finish the requests in flight and flush the store.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::client_addr::TrustedProxies;
use crate::config::Config;
use crate::connections::ConnectionLimits;
use crate::files::FileStore;
use crate::routes;
use crate::runtime::chat::ChatDirectory;
use crate::runtime::contexts::TeamContexts;
use crate::runtime::geo::Geo;
use crate::runtime::key_uses::KeyUses;
use crate::runtime::keyring::Keyring;
use crate::runtime::mail::Mailer;
use crate::runtime::stats::StatsCache;
use crate::runtime::usage::UsageRecorder;
use crate::state::{AppState, Limits, MetricsAccess};
use crate::store::AnyStore;
use crate::store::open::{
    OpenError, compact_store, open_configured_store, open_store_with_cache, remove_migration_copies,
};

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory or the store in it could not be opened.
    #[error("cannot open the store in {dir}: {cause}")]
    Store {
        /// The directory.
        dir: PathBuf,
        /// Why.
        cause: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A setting is wrong.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// PostgreSQL could not be used.
    #[error("database: {0}")]
    Database(String),
    /// The final flush failed.
    #[error("flushing the store failed: {0}")]
    Flush(String),
}

impl From<OpenError> for ServerError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Store { dir, cause } => Self::Store { dir, cause },
            OpenError::Config(why) => Self::Config(why),
            OpenError::Database(why) => Self::Database(why),
        }
    }
}

/// The release files beside a store: in the store itself when it has room for them (so that
/// every instance serves every file), else on disk in the data directory (uploads in progress
/// wait in `<data dir>/files/tmp` either way).
pub fn file_store_for(store: &AnyStore, data_dir: &std::path::Path) -> std::io::Result<FileStore> {
    match store.blobs() {
        None => FileStore::new(data_dir),
        Some(blobs) => FileStore::in_store(blobs, &data_dir.join("files").join("tmp")),
    }
}

/// A bound, not yet running server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    /// The separate metrics listener, when configured, and who may read it.
    metrics: Option<(TcpListener, SocketAddr, MetricsAccess)>,
    pub(crate) state: AppState,
    limits: ConnectionLimits,
    proxies: TrustedProxies,
}

impl Server {
    /// Opens the store and binds the listener. With a master key, private keys found in the
    /// clear are sealed and the store is rewritten so that no copy in the clear stays on disk.
    pub async fn bind(config: Config) -> Result<Self, ServerError> {
        config.check().map_err(ServerError::Config)?;
        let keyring =
            Keyring::load(config.master_key_file.as_deref()).map_err(ServerError::Config)?;
        if config.database_url.is_some() {
            let store = open_configured_store(
                &config.data_dir,
                config.database_url.as_deref(),
                config.cache_mb,
                config.database_pool_size,
            )
            .await?;
            return Self::bind_with_store(config, store).await;
        }
        let mut store = open_store_with_cache(&config.data_dir, config.cache_mb)?;
        let sealed = keyring.prepare(&store).await.map_err(ServerError::Config)?;
        if sealed > 0 {
            store
                .flush()
                .await
                .map_err(|e| ServerError::Flush(e.to_string()))?;
            drop(store);
            compact_store(&config.data_dir)?;
            tracing::info!(
                records = sealed,
                "sealed the teams' private keys and secrets under the master key; no copy in the clear is left in the store"
            );
            store = open_store_with_cache(&config.data_dir, config.cache_mb)?;
        }
        if keyring.master_id().is_some() {
            remove_migration_copies(&config.data_dir)?;
        }
        Self::bind_with_store(config, store).await
    }

    /// Binds the listener for an already open store (whose keys in the clear are sealed in place
    /// when a master key is set; [`Server::bind`] also rewrites the store's files).
    pub async fn bind_with_store(
        config: Config,
        store: impl Into<AnyStore>,
    ) -> Result<Self, ServerError> {
        let store = store.into();
        config.check().map_err(ServerError::Config)?;
        let keyring =
            Keyring::load(config.master_key_file.as_deref()).map_err(ServerError::Config)?;
        let sealed = keyring.prepare(&store).await.map_err(ServerError::Config)?;
        // The rows were rewritten in place: their earlier versions, in the clear, stay in the
        // tables' files until the tables are rewritten.
        if sealed > 0
            && store
                .rewrite_secrets_in_place()
                .await
                .map_err(|e| ServerError::Store {
                    dir: config.data_dir.clone(),
                    cause: e.to_string(),
                })?
        {
            tracing::info!(
                records = sealed,
                "sealed the teams' private keys and secrets under the master key, and rewrote their tables; older WAL segments and earlier dumps of the database still hold them in the clear"
            );
        }
        let limits = Limits::per_minute(
            config.rate_limit_per_minute,
            config.dev_rate_limit_per_minute,
            config.upload_rate_limit_per_minute,
            config.auth_failure_limit_per_minute,
        );
        let limits = match store.shared_counters() {
            None => limits,
            Some(counters) => limits.shared(&counters),
        };
        // Another instance's change may reach this one late: cached team state expires too.
        let contexts = match store.change_feed() {
            None => TeamContexts::new(keyring.clone()),
            Some(_) => {
                TeamContexts::expiring(keyring.clone(), crate::runtime::contexts::SHARED_MAX_AGE)
            }
        };
        let files = file_store_for(&store, &config.data_dir)
            .map_err(|e| ServerError::Store {
                dir: config.data_dir.clone(),
                cause: e.to_string(),
            })?
            .with_max_mib(config.max_upload_mb)
            .with_max_artifact_mib(config.max_artifact_mb)
            .with_disk_cache(
                &config.data_dir.join("files").join("cache"),
                config.file_cache_mb,
            )
            .map_err(|e| ServerError::Store {
                dir: config.data_dir.clone(),
                cause: e.to_string(),
            })?;
        crate::datadir::tighten_and_warn(&config.data_dir).map_err(|e| ServerError::Store {
            dir: config.data_dir.clone(),
            cause: e.to_string(),
        })?;
        let mailer = match (&config.smtp_url, &config.smtp_from) {
            (Some(url), Some(from)) => {
                let mut mailer = Mailer::new(url, from).map_err(ServerError::Config)?;
                mailer.daily_limit = config.mail_daily_limit;
                Some(mailer)
            }
            (None, None) => None,
            _ => {
                return Err(ServerError::Config(
                    "set both LICENSING_SMTP_URL and LICENSING_SMTP_FROM, or neither".into(),
                ));
            }
        };
        let chat = match (&config.chat_api_url, &config.chat_bot_token) {
            (Some(url), Some(token)) => Some(
                ChatDirectory::new(url, token)
                    .map_err(|e| ServerError::Config(format!("chat directory: {e}")))?,
            ),
            (None, None) => None,
            _ => {
                return Err(ServerError::Config(
                    "set both LICENSING_CHAT_API_URL and LICENSING_CHAT_BOT_TOKEN, or neither"
                        .into(),
                ));
            }
        };
        let providers = crate::runtime::providers::ProviderApis::new(
            &config.stripe_api_base,
            &config.paddle_api_base,
            &config.lemonsqueezy_api_base,
        )
        .map_err(ServerError::Config)?;
        let geo = match &config.geoip_db {
            Some(path) => Geo::open(path).map_err(ServerError::Config)?,
            None => Geo::Embedded,
        };
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: config.listen,
            source,
        })?;
        let metrics = match config.metrics_listen {
            None => None,
            Some(at) => {
                let bind = |source| ServerError::Bind { addr: at, source };
                let listener = TcpListener::bind(at).await.map_err(bind)?;
                let local = listener.local_addr().map_err(bind)?;
                let access = match &config.metrics_token {
                    Some(token) => MetricsAccess::Token(Arc::from(token.as_str())),
                    None => MetricsAccess::Open,
                };
                Some((listener, local, access))
            }
        };
        let metrics_access = match (&config.metrics_listen, &config.metrics_token) {
            (Some(_), _) => MetricsAccess::Elsewhere,
            (None, Some(token)) => MetricsAccess::Token(Arc::from(token.as_str())),
            (None, None) => MetricsAccess::Loopback,
        };
        Ok(Self {
            listener,
            addr,
            metrics,
            limits: config.connection_limits(),
            proxies: config.proxies(),
            state: AppState::new(crate::state::Shared {
                store,
                files,
                stats: StatsCache::default(),
                overviews: crate::runtime::stats::OverviewCache::default(),
                metrics: crate::metrics::Metrics::default(),
                chat,
                providers,
                mailer,
                admin_token: config.admin_token.as_deref().map(std::sync::Arc::from),
                metrics_access,
                contexts,
                licenses: Arc::default(),
                keyring: keyring.clone(),
                usage: UsageRecorder::default(),
                request_log: crate::runtime::request_log::RequestLog::new(
                    crate::runtime::request_log::Retention {
                        days: config.request_history_days,
                        per_team: config.request_history_per_team,
                        per_license: config.request_history_per_license,
                    },
                ),
                client_events: Default::default(),
                geo: Arc::new(geo),
                limits: Arc::new(limits),
                max_records: config.max_records_per_license,
                audit_retention_days: config.audit_retention_days,
                webhooks: crate::runtime::webhooks::Sender::new(
                    config.webhook_settings(),
                    keyring.clone(),
                )
                    .map_err(|e| {
                        ServerError::Config(format!(
                            "the webhook client cannot be made: {e:#} (webhooks and TLS need the system's CA certificates: on Debian, the package ca-certificates)"
                        ))
                    })?,
                key_uses: KeyUses::default(),
                dashboard: config
                    .dashboard
                    .then_some(crate::state::DashboardSettings {
                        idle_minutes: config.dashboard_idle_minutes,
                        session_hours: config.dashboard_session_hours,
                    }),
                public_url: config.public_url.as_ref().map(|url| Arc::from(url.as_str())),
                alive: Arc::new(()),
            }),
        })
    }

    /// The address it listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the separate metrics listener, when there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|(_, addr, _)| *addr)
    }

    /// How teams' private keys are stored (for creating a team before the server runs).
    pub fn keyring(&self) -> &Keyring {
        &self.state.keyring
    }

    /// The release files.
    pub fn files(&self) -> &FileStore {
        &self.state.files
    }

    /// The store.
    pub fn store(&self) -> &AnyStore {
        &self.state.store
    }

    /// Serves until `shutdown` completes; then stops accepting, finishes the requests in flight
    /// and flushes the store.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let store = self.state.store.clone();
        let workers = crate::workers::spawn_all(&self.state);
        let alive = Arc::downgrade(&self.state.alive);
        // One shutdown for every listener.
        let (stop_listeners, stopping) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown.await;
            stop_listeners.send(true).ok();
        });
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            rx.wait_for(|stop| *stop).await.ok();
        };
        let metrics = self.metrics.map(|(listener, _, access)| {
            let filter = routes::metrics_only(self.state.clone(), access);
            tokio::spawn(crate::connections::serve(
                listener,
                filter,
                self.limits,
                self.proxies.clone(),
                stopped(stopping.clone()),
            ))
        });
        crate::connections::serve(
            self.listener,
            routes::routes(self.state, routes::openapi_json),
            self.limits,
            self.proxies,
            stopped(stopping),
        )
        .await;
        if let Some(metrics) = metrics {
            metrics.await.ok();
        }
        // The recorders write what was counted up to the last request before they end.
        workers.stop().await;
        // Connection tasks drop their copies of the state (and so of the store) a moment after
        // the server stops. Wait for them (bounded), so that when `run` returns the store is
        // closed as soon as the caller drops its own handles, and can be opened again.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive.strong_count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        store
            .flush()
            .await
            .map_err(|e| ServerError::Flush(e.to_string()))
    }
}
