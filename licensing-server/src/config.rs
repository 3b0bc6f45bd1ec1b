//! Settings: every one a command-line flag and a `LICENSING_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use ipnet::IpNet;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Server settings.
#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "LICENSING_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// Directory of the embedded store and the release files.
    #[arg(long, env = "LICENSING_DATA_DIR", default_value = "./licensing-data")]
    pub data_dir: PathBuf,

    /// Token of the admin API under /api/v1/admin (`Authorization: Bearer <token>`); the admin
    /// API is off when unset.
    #[arg(long, env = "LICENSING_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// SMTP server for license e-mails (`sendEmailDelivery`), such as
    /// `smtp://user:password@mail.example.com:587?tls=required`; e-mail delivery is refused without it.
    #[arg(long, env = "LICENSING_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// Sender of license e-mails, such as `Licensing <noreply@example.com>`.
    #[arg(long, env = "LICENSING_SMTP_FROM")]
    pub smtp_from: Option<String>,

    /// Base URL of the chat directory that checks customers' `chatId` (Discord-style
    /// `GET {url}/users/{id}`), such as `https://discord.com/api/v10`; chat ids are refused without it.
    #[arg(long, env = "LICENSING_CHAT_API_URL")]
    pub chat_api_url: Option<String>,

    /// Bot token for the chat directory (`Authorization: Bot <token>`).
    #[arg(long, env = "LICENSING_CHAT_BOT_TOKEN", hide_env_values = true)]
    pub chat_bot_token: Option<String>,

    /// Proxies whose `X-Forwarded-For` is believed, as a comma-separated list of addresses or
    /// CIDR ranges (such as `127.0.0.1,10.0.0.0/8`). From any other peer the header is ignored
    /// and the client IP is the socket's peer address.
    #[arg(long, env = "LICENSING_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_net)]
    pub trusted_proxies: Vec<IpNet>,

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

    /// Memory for the store's cache of decoded pages, in MiB (the server's resident size is
    /// roughly this plus 60 MiB under load). More keeps more of a large data set hot.
    #[arg(long, env = "LICENSING_CACHE_MB", default_value_t = crate::store::DEFAULT_CACHE_MB)]
    pub cache_mb: u64,

    /// Log format.
    #[arg(long, env = "LICENSING_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Config {
    /// Settings for a server on `127.0.0.1:0` with its data in `data_dir` (tests, embedding).
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.into(),
            admin_token: None,
            smtp_url: None,
            smtp_from: None,
            chat_api_url: None,
            chat_bot_token: None,
            log_format: LogFormat::Text,
            trusted_proxies: Vec::new(),
            geoip_db: None,
            rate_limit_per_minute: 30,
            dev_rate_limit_per_minute: 300,
            cache_mb: crate::store::DEFAULT_CACHE_MB,
        }
    }
}

/// Parses one trusted proxy: an address or a CIDR range.
fn parse_net(text: &str) -> Result<IpNet, String> {
    licensing_core::verify::parse_ip_or_net(text.trim())
}
