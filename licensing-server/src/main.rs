//! `licensing-server`: serve the licensing API, or manage teams while it is stopped.
//!
//! `licensing-server` (or `licensing-server serve`) starts the server; on a first start with an
//! empty store it creates a team and prints its id, API key and public keys (to a file readable by
//! this user only when the output is not a terminal, as under a service manager).
//! `licensing-server team create --name NAME --data-dir DIR` prints a new team as JSON;
//! `licensing-server master-key generate|rotate` makes and changes the key that seals private
//! keys at rest.

mod cli;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use licensing_core::TeamId;
use licensing_core::model::Role;
use licensing_server::Config;

use cli::{accounts, archive, backup, health, master_key, serve};

#[derive(Debug, Parser)]
#[command(
    name = "licensing-server",
    version,
    about = "Self-hosted license management and verification server",
    after_help = "Settings: a flag wins over its environment variable (LICENSING_*), which wins over the \
config file (--config FILE: TOML, keys named as the flags without --, an unknown key is an error), \
which wins over the default.\n\
Logs go to stderr: RUST_LOG sets the levels (RUST_LOG=info,access=debug adds one line per request), \
--log-format json writes them for log shippers."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Config,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve(Box<Config>),
    /// Manage teams (with the server stopped).
    #[command(subcommand)]
    Team(TeamCommand),
    /// Manage a team's API keys.
    #[command(subcommand)]
    ApiKey(ApiKeyCommand),
    /// Manage the staff accounts that sign in to the dashboard.
    #[command(subcommand)]
    User(UserCommand),
    /// Rotate a team's Ed25519 signing key (answers and license files).
    #[command(subcommand)]
    SigningKey(SigningKeyCommand),
    /// Make or change the master key that seals teams' private keys at rest.
    #[command(subcommand)]
    MasterKey(MasterKeyCommand),
    /// Write every team's records and release files to an archive (JSON lines), with the
    /// server stopped (sled) or writes paused (PostgreSQL).
    Export {
        /// The archive to create (never overwritten).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Save an online backup of a running server, through its admin API: the archive `export`
    /// writes, streamed while the server goes on serving. `import` (or `restore`) reads it back.
    Backup {
        #[command(flatten)]
        target: BackupTarget,
        /// With --to-dir: keep only this many backups there, removing the oldest.
        #[arg(long, requires = "to_dir")]
        keep: Option<usize>,
        /// The running server (default: the config file's `listen`, else http://127.0.0.1:3000).
        #[arg(long, env = "LICENSING_BACKUP_URL")]
        url: Option<String>,
        /// The server's admin token (default: the config file's `admin-token`).
        #[arg(long, env = "LICENSING_ADMIN_TOKEN", hide_env_values = true)]
        admin_token: Option<String>,
        /// The server's config file, for its listen address and admin token.
        #[arg(long, env = "LICENSING_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Check a store no server holds open (sled) or a PostgreSQL database: every record readable,
    /// every index and counter consistent with its records (sled), every release file present
    /// with its size and checksum. Exits with status 1 when something is damaged.
    Check {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Exit 0 when the server answers `GET /healthz`, 1 when it does not (a container's
    /// HEALTHCHECK: the image has no shell or curl).
    Healthcheck {
        /// The address the server listens on (an unspecified address is reached on loopback).
        #[arg(long, env = "LICENSING_LISTEN", default_value = "127.0.0.1:3000")]
        listen: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=60))]
        timeout_secs: u64,
    },
    /// Load an archive into an empty store: restore a backup, or move from sled to PostgreSQL.
    #[command(visible_alias = "restore")]
    Import {
        /// The archive to read.
        #[arg(long = "in")]
        input: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Where `backup` saves the archive.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct BackupTarget {
    /// The file to create (never overwritten).
    #[arg(long)]
    to: Option<PathBuf>,
    /// A directory to create `licensing-backup-<UTC time>.jsonl` in (for scheduled backups).
    #[arg(long)]
    to_dir: Option<PathBuf>,
}

/// Where a subcommand finds the store.
#[derive(Debug, clap::Args)]
struct StoreArgs {
    /// Data directory of the (stopped) server.
    #[arg(long, env = "LICENSING_DATA_DIR", default_value = "./licensing-data")]
    data_dir: PathBuf,
    /// PostgreSQL instead of the data directory.
    #[arg(long, env = "LICENSING_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
}

impl StoreArgs {
    /// Opens the store these arguments name.
    async fn open(&self) -> anyhow::Result<licensing_server::store::AnyStore> {
        cli::open_for_command(&self.data_dir, self.database_url.as_deref()).await
    }

    /// The operator of the command line on that store (private keys of new teams in the clear:
    /// the command line that makes a team loads the master key itself).
    async fn operator(&self) -> anyhow::Result<licensing_server::operator::Operator> {
        self.operator_with(&licensing_server::runtime::keyring::Keyring::plain())
            .await
    }

    /// The operator of the command line on that store, sealing and opening private keys with
    /// `keyring` (checked against the store first: a store sealed with another key, or sealed
    /// while `keyring` has none, is refused with what to do).
    async fn operator_with(
        &self,
        keyring: &licensing_server::runtime::keyring::Keyring,
    ) -> anyhow::Result<licensing_server::operator::Operator> {
        let store = self.open().await?;
        keyring.prepare(&store).await.map_err(anyhow::Error::msg)?;
        Ok(licensing_server::operator::Operator::command_line(
            &store, keyring,
        ))
    }
}

#[derive(Debug, Subcommand)]
enum MasterKeyCommand {
    /// Write a new master key (32 random bytes, base64) to a new file readable by this user only;
    /// print its id. Start the server with LICENSING_MASTER_KEY_FILE naming it.
    Generate {
        /// The file to create (never overwritten).
        #[arg(long)]
        out: PathBuf,
    },
    /// Re-seal every team's private keys from the old master key under the new one (server
    /// stopped), and rewrite the store so that nothing sealed under the old key is left on disk.
    Rotate {
        /// The file of the key the store is sealed with now.
        #[arg(long)]
        old: PathBuf,
        /// The file of the new key (`master-key generate` makes one).
        #[arg(long)]
        new: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Subcommand)]
enum TeamCommand {
    /// Create a team and print {"teamId","apiKey","publicKey","signingKey"} as JSON.
    Create {
        /// Team name.
        #[arg(long)]
        name: String,
        /// Data directory of the (stopped) server.
        #[arg(long, env = "LICENSING_DATA_DIR", default_value = "./licensing-data")]
        data_dir: PathBuf,
        /// PostgreSQL instead of the data directory (the servers may keep running).
        #[arg(long, env = "LICENSING_DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        /// The master key file, when the store's private keys are sealed.
        #[arg(long, env = "LICENSING_MASTER_KEY_FILE")]
        master_key_file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum SigningKeyCommand {
    /// Make a new Ed25519 signing key the team's active one and print it as JSON
    /// ({"kid","key","createdAt","active"}). The former keys stay trusted until retired (API:
    /// `DELETE {dev}/signing-keys/{kid}`, or the dashboard's settings page). The API's
    /// `POST {dev}/signing-keys/rotate` does the same on a running server.
    Rotate {
        /// The team's id.
        #[arg(long)]
        team: TeamId,
        /// The master key file, when the store's private keys are sealed (the new key is
        /// sealed under it too).
        #[arg(long, env = "LICENSING_MASTER_KEY_FILE")]
        master_key_file: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Create a staff account of a team and print its one-time set-password link (valid 72
    /// hours), with which its owner sets a password and signs in to the dashboard.
    Create {
        /// The team's id.
        #[arg(long)]
        team: TeamId,
        /// The e-mail address the account signs in with.
        #[arg(long)]
        email: String,
        /// owner, admin, developer, support (every read, devices, suspend) or viewer (read
        /// only).
        #[arg(long, value_parser = parse_role)]
        role: Role,
        #[command(flatten)]
        link: LinkBase,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print a new set-password link for an account (a forgotten password); the old password
    /// keeps working until the link is used.
    Link {
        /// The account's e-mail address.
        #[arg(long)]
        email: String,
        /// The account's team, when the address has an account in several teams.
        #[arg(long)]
        team: Option<TeamId>,
        #[command(flatten)]
        link: LinkBase,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Where a set-password link points.
#[derive(Debug, clap::Args)]
struct LinkBase {
    /// The server's address as browsers reach it, for the link (default: the config file's
    /// `public-url`, else its `listen` address, else http://127.0.0.1:3000).
    #[arg(
        long = "public-url",
        visible_alias = "url",
        env = "LICENSING_PUBLIC_URL"
    )]
    url: Option<licensing_server::config::PublicUrl>,
    /// The server's config file, for its public URL or listen address and its store
    /// (`data-dir`, `database-url`).
    #[arg(long, env = "LICENSING_CONFIG")]
    config: Option<PathBuf>,
}

impl LinkBase {
    /// The address links point to.
    fn base(&self) -> anyhow::Result<String> {
        if let Some(url) = &self.url {
            return Ok(url.to_string());
        }
        let Some(path) = &self.config else {
            return Ok(backup::DEFAULT_URL.to_owned());
        };
        let table = backup::config_table(path)?;
        let setting = |key: &str| table.get(key).and_then(|v| v.as_str());
        if let Some(url) = setting("public-url") {
            let url: licensing_server::config::PublicUrl = url
                .parse()
                .map_err(|e| anyhow::anyhow!("the config file's public-url: {e}"))?;
            return Ok(url.to_string());
        }
        match setting("listen") {
            Some(listen) => backup::url_of_listen(listen),
            None => Ok(backup::DEFAULT_URL.to_owned()),
        }
    }
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text)
}

#[derive(Debug, Subcommand)]
enum ApiKeyCommand {
    /// Create an API key with every scope for a team (the way back when its keys are lost) and
    /// print {"id","name","key",…} as JSON; the key is shown only this once. The admin API's
    /// `POST /api/v1/admin/teams/{teamId}/api-keys` does the same on a running server.
    Create {
        /// The team's id.
        #[arg(long)]
        team: TeamId,
        /// A name to recognize the key by.
        #[arg(long, default_value = "recovery")]
        name: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// The subcommand a command line runs (the deepest), and its matches.
fn active<'a>(
    command: &'a clap::Command,
    matches: &'a clap::ArgMatches,
) -> (&'a clap::Command, &'a clap::ArgMatches) {
    match matches
        .subcommand()
        .and_then(|(name, sub)| Some((command.find_subcommand(name)?, sub)))
    {
        Some((command, sub)) => active(command, sub),
        None => (command, matches),
    }
}

/// The command line, with the secrets kept in files (`LICENSING_*_FILE`) that neither a flag nor
/// the environment gave, then the settings of the config file (`--config`, `LICENSING_CONFIG`)
/// that none of those gave.
fn with_config_file(mut args: Vec<std::ffi::OsString>) -> anyhow::Result<Cli> {
    let command = <Cli as clap::CommandFactory>::command();
    let matches = command.clone().get_matches_from(&args);
    let (subcommand, given) = active(&command, &matches);
    let env = |name: &str| std::env::var_os(name);
    let secrets = licensing_server::config_file::secret_file_args(subcommand, given, env)
        .map_err(anyhow::Error::msg)?;
    args.extend(secrets.into_iter().map(Into::into));
    let cli = Cli::parse_from(&args);
    let path = match &cli.command {
        None => cli.serve.config.clone(),
        Some(Command::Serve(config)) => config.config.clone(),
        // The server's config file names its store: the account commands work on that one.
        Some(Command::User(UserCommand::Link { link, .. } | UserCommand::Create { link, .. })) => {
            let Some(path) = link.config.clone() else {
                return Ok(cli);
            };
            let matches = <Cli as clap::CommandFactory>::command().get_matches_from(&args);
            let command = <Cli as clap::CommandFactory>::command();
            let (subcommand, given) = active(&command, &matches);
            let extra = licensing_server::config_file::store_args(
                &path,
                subcommand,
                given,
                &["data-dir", "database-url"],
            )
            .map_err(anyhow::Error::msg)?;
            args.extend(extra.into_iter().map(Into::into));
            return Ok(Cli::parse_from(&args));
        }
        Some(_) => None,
    };
    let Some(path) = path else {
        return Ok(cli);
    };
    let matches = <Cli as clap::CommandFactory>::command().get_matches_from(&args);
    let given = matches.subcommand_matches("serve").unwrap_or(&matches);
    let settings = <Config as clap::Args>::augment_args(clap::Command::new("serve"));
    let extra = licensing_server::config_file::file_args(&path, &settings, given)
        .map_err(anyhow::Error::msg)?;
    args.extend(extra.into_iter().map(Into::into));
    Ok(Cli::parse_from(&args))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Everything this process creates (the store's files, release files, key files) is for its
    // user only.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let cli = with_config_file(std::env::args_os().collect())?;
    match cli.command {
        None => serve::serve(cli.serve).await,
        Some(Command::Serve(config)) => serve::serve(*config).await,
        Some(Command::Team(TeamCommand::Create {
            name,
            data_dir,
            database_url,
            master_key_file,
        })) => {
            accounts::team_create(
                &name,
                &data_dir,
                database_url.as_deref(),
                master_key_file.as_deref(),
            )
            .await
        }
        Some(Command::SigningKey(SigningKeyCommand::Rotate {
            team,
            master_key_file,
            store,
        })) => accounts::signing_key_rotate(team, master_key_file.as_deref(), &store).await,
        Some(Command::ApiKey(ApiKeyCommand::Create { team, name, store })) => {
            accounts::api_key_create(team, &name, &store).await
        }
        Some(Command::User(UserCommand::Create {
            team,
            email,
            role,
            link,
            store,
        })) => accounts::user_create(team, &email, role, &link.base()?, &store).await,
        Some(Command::User(UserCommand::Link {
            email,
            team,
            link,
            store,
        })) => accounts::user_link(&email, team, &link.base()?, &store).await,
        Some(Command::MasterKey(MasterKeyCommand::Generate { out })) => {
            master_key::master_key_generate(&out)
        }
        Some(Command::Export { out, store }) => archive::export(&out, &store).await,
        Some(Command::Import { input, store }) => archive::import(&input, &store).await,
        Some(Command::Check { store }) => archive::check(&store).await,
        Some(Command::Healthcheck {
            listen,
            timeout_secs,
        }) => health::check(&listen, timeout_secs).await,
        Some(Command::Backup {
            target,
            keep,
            url,
            admin_token,
            config,
        }) => {
            let (url, token) = backup::server_of(url, admin_token, config.as_deref())?;
            backup::save(
                &url,
                &token,
                target.to.as_deref(),
                target.to_dir.as_deref(),
                keep,
            )
            .await
        }
        Some(Command::MasterKey(MasterKeyCommand::Rotate { old, new, store })) => {
            master_key::master_key_rotate(
                &old,
                &new,
                &store.data_dir,
                store.database_url.as_deref(),
            )
            .await
        }
    }
}
