//! Settings: every one a command-line flag and a `LICENSING_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

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
        }
    }
}
