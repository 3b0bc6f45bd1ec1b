//! `licensing-server`: serve the licensing API, or manage teams while it is stopped.
//!
//! `licensing-server` (or `licensing-server serve`) starts the server; on a first start with an
//! empty store it creates a team and prints its id, API key and public keys (to a file readable by
//! this user only when the output is not a terminal, as under a service manager).
//! `licensing-server team create --name NAME --data-dir DIR` prints a new team as JSON;
//! `licensing-server master-key generate|rotate` makes and changes the key that seals private
//! keys at rest.

mod backup;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use licensing_core::ResultCode;
use licensing_core::crypto::MasterKey;
use licensing_core::model::{Role, TeamCreated};
use licensing_core::{TeamId, Timestamp};
use licensing_server::operator::{
    CreateStaff, CreateTeam, CreateTeamKey, FirstStart, NewPasswordLink, Operator,
};
use licensing_server::services::keyring::Keyring;
use licensing_server::store::AnyStore;
use licensing_server::{
    Config, LogFormat, Server, compact_store, open_configured_store, open_store, services,
};

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
    /// The server's address as browsers reach it, for the link.
    #[arg(
        long,
        env = "LICENSING_PUBLIC_URL",
        default_value = "http://127.0.0.1:3000"
    )]
    url: String,
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text)
}

/// The set-password link of an account.
fn password_link(base: &str, created: &services::staff::CreatedStaff) -> String {
    format!(
        "{}/dashboard/set-password/{}/{}",
        base.trim_end_matches('/'),
        created.user.id,
        created.link_secret
    )
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

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal, never in files or log collectors.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Ctrl-C or SIGTERM, listened for from the moment this is called: a signal that arrives while
/// the server is still starting (opening and compacting the store, creating the first team) is
/// kept, and stops it gracefully as soon as it serves, instead of ending the process at once.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        [
            ("Ctrl-C", signal(SignalKind::interrupt())),
            ("SIGTERM", signal(SignalKind::terminate())),
        ]
    };
    async move {
        #[cfg(unix)]
        {
            let [interrupt, terminate] = signals.map(|(name, listening)| async move {
                match listening {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot listen for {name}");
                        std::future::pending::<()>().await;
                    }
                }
            });
            tokio::select! {
                () = interrupt => {},
                () = terminate => {},
            }
        }
        #[cfg(not(unix))]
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down: finishing requests in flight");
    }
}

/// What a first start tells its operator: the new team's id, API key and public keys, with
/// commands to try.
fn first_team_text(team: &TeamCreated, owner: Option<&(String, String)>, base: &str) -> String {
    let dashboard = owner.map_or_else(String::new, |(email, link)| {
        format!(
            "\nThe dashboard is at {base}/dashboard/: open this link once (within {hours} hours) to set the\
             \npassword of the owner account {email}, and sign in:\n\n  {link}\n",
            hours = services::staff::LINK_LIFETIME_HOURS
        )
    });
    let api = format!(
        "\nFirst start: created a team.\n\
         \n  team id:     {id}\n  API key:     {key}   (shown only now: store it safely)\n  signing key: {signing}\n\
         \n  Your applications need two public keys, the arguments of licensing_sdk::LicenseClient::new:\
         \n  the signing key above, and this public key, pasted as it is from BEGIN to END\
         \n  (GET {base}/api/v1/dev/teams/{id}/public-key gives both again):\n\
         \n{pem}\
         \nTry it:\n\
         \n  curl -s -H 'Authorization: Bearer {key}' \\\n    {base}/api/v1/dev/teams/{id}/licenses\n\
         \n  curl -s -X POST -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n    -d '{{\"expirationType\":\"NEVER\"}}' {base}/api/v1/dev/teams/{id}/licenses\n",
        id = team.team_id,
        key = team.api_key,
        signing = team.signing_key,
        pem = team.public_key,
    );
    format!("{api}{dashboard}")
}

/// The file a first start writes its credentials to when its output is not a terminal.
const CREDENTIALS_FILE: &str = "first-start-credentials.txt";

/// Tells the operator about the first team: on a terminal, printed; otherwise (a service
/// manager's journal, a log collector) written to a file in the data directory readable by this
/// user only, and only its path is printed, so that the API key does not end up in logs.
fn announce_first_team(
    team: &TeamCreated,
    owner: Option<&(String, String)>,
    base: &str,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let text = first_team_text(team, owner, base);
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        println!("{text}");
        return Ok(());
    }
    let path = data_dir.join(CREDENTIALS_FILE);
    // On PostgreSQL the data directory holds nothing else and may not exist yet.
    licensing_server::datadir::create_private_dir(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    licensing_server::datadir::write_private_file(&path, text.as_bytes())
        .with_context(|| format!("writing the first team's credentials to {}", path.display()))?;
    println!(
        "First start: created a team; its id, API key, public keys and the owner's set-password link are in {} (readable by this user only). Store the key safely and delete the file.",
        path.display()
    );
    tracing::info!(path = %path.display(), "first start: the new team's credentials are in this file");
    Ok(())
}

async fn serve(config: Config) -> anyhow::Result<()> {
    init_logging(config.log_format);
    let shutdown = shutdown_signal();
    let data_dir = config.data_dir.clone();
    let owner_email = config.owner_email.clone();
    let dashboard = config.dashboard;
    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    let base = format!("http://{addr}");
    // Instances starting together on an empty database create one team, not one each.
    let created = Operator::command_line(server.store(), server.keyring())
        .perform(FirstStart { owner_email })
        .await
        .map_err(|e| anyhow::anyhow!("creating the first team: {}", describe(&e)))?;
    if let Some((team, owner)) = created {
        let owner = dashboard.then(|| {
            (
                owner.user.email.as_str().to_owned(),
                password_link(&base, &owner),
            )
        });
        announce_first_team(&team, owner.as_ref(), &base, &data_dir)?;
    }
    let data = match server.store() {
        AnyStore::Sled(_) => format!("data in {}", data_dir.display()),
        AnyStore::Postgres(_) => "data in PostgreSQL".to_owned(),
    };
    tracing::info!(%addr, store = server.store().backend_name(), "licensing-server listening");
    println!("Listening on {base} ({data})");
    server.run(shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Opens the store a subcommand names: PostgreSQL with a database URL, otherwise the data
/// directory's (which the server must not hold open).
async fn open_for_command(
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> anyhow::Result<AnyStore> {
    match database_url {
        Some(url) => Ok(open_configured_store(
            data_dir,
            Some(url),
            0,
            licensing_server::store::postgres::DEFAULT_POOL_SIZE.min(4),
        )
        .await?),
        None => Ok(AnyStore::Sled(
            open_store(data_dir).context("is the server running? stop it first")?,
        )),
    }
}

async fn team_create(
    name: &str,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
    master_key_file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let keyring = Keyring::load(master_key_file).map_err(anyhow::Error::msg)?;
    let store = open_for_command(data_dir, database_url).await?;
    keyring.prepare(&store).await.map_err(anyhow::Error::msg)?;
    let team = Operator::command_line(&store, &keyring)
        .perform(CreateTeam {
            name: name.to_owned(),
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!("{}", serde_json::to_string(&team)?);
    Ok(())
}

async fn user_create(
    team: TeamId,
    email: &str,
    role: Role,
    url: &str,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let created = Operator::command_line(&opened, &Keyring::plain())
        .perform(CreateStaff {
            team,
            email: email.to_owned(),
            role,
        })
        .await
        .map_err(|e| match e.code() {
            ResultCode::TeamNotFound => anyhow::anyhow!("there is no team {team}"),
            _ => anyhow::anyhow!("{}", describe(&e)),
        })?;
    println!(
        "Created {} ({}). Its set-password link works once, for {} hours:\n{}",
        created.user.email.as_str(),
        created.user.role,
        services::staff::LINK_LIFETIME_HOURS,
        password_link(url, &created)
    );
    Ok(())
}

async fn user_link(
    email: &str,
    team: Option<TeamId>,
    url: &str,
    store: &StoreArgs,
) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let issued = Operator::command_line(&opened, &Keyring::plain())
        .perform(NewPasswordLink {
            email: email.to_owned(),
            team,
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!(
        "A new set-password link for {}, valid once for {} hours:\n{}",
        issued.user.email.as_str(),
        services::staff::LINK_LIFETIME_HOURS,
        password_link(url, &issued)
    );
    Ok(())
}

/// An API error as one line: the details, then each field's problem, then the cause it kept
/// (an operator reads this, not a client).
fn describe(e: &licensing_core::ApiError) -> String {
    let mut text = e.details().to_owned();
    for f in e.field_errors() {
        text.push_str(&format!("; {}: {}", f.field, f.message));
    }
    if let Some(cause) = e.cause() {
        text.push_str(&format!(" ({cause})"));
    }
    text
}

async fn api_key_create(team: TeamId, name: &str, store: &StoreArgs) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let now = Timestamp::now();
    let input = licensing_core::api::requests::ApiKeyBody::named(name);
    let input = licensing_core::api::requests::ApiKeyBody::parse(&serde_json::to_vec(&input)?, now)
        .map_err(|e| anyhow::anyhow!("{}", e.details()))?;
    let created = Operator::command_line(&opened, &Keyring::plain())
        .perform(CreateTeamKey { team, input })
        .await
        .map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    println!("{}", serde_json::to_string(&created)?);
    Ok(())
}

async fn export(out: &std::path::Path, store: &StoreArgs) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .await
        .with_context(|| format!("creating {} (it must not exist yet)", out.display()))?;
    let counts = licensing_server::archive::export(&opened, &files, &mut file).await?;
    file.sync_all().await?;
    println!("{}", serde_json::to_string(&counts)?);
    Ok(())
}

async fn import(input: &std::path::Path, store: &StoreArgs) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let file =
        std::fs::File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let counts =
        licensing_server::archive::import(&opened, &files, std::io::BufReader::new(file)).await?;
    opened.flush().await?;
    println!("{}", serde_json::to_string(&counts)?);
    Ok(())
}

async fn check(store: &StoreArgs) -> anyhow::Result<()> {
    let opened = open_for_command(&store.data_dir, store.database_url.as_deref()).await?;
    let files = licensing_server::file_store_for(&opened, &store.data_dir)?;
    let report = licensing_server::check::check(&opened, &files, &store.data_dir).await?;
    let read: Vec<String> = report
        .checked
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    println!(
        "read: {}",
        if read.is_empty() {
            "nothing".to_owned()
        } else {
            read.join(", ")
        }
    );
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    if report.problems.is_empty() {
        println!("the store is sound");
        Ok(())
    } else {
        anyhow::bail!(
            "{} problem(s) found; restore the latest backup (`licensing-server restore`) or export what is readable",
            report.problems.len()
        )
    }
}

fn master_key_generate(out: &std::path::Path) -> anyhow::Result<()> {
    let key = MasterKey::generate();
    licensing_server::datadir::write_private_file(out, key.to_file().as_bytes())
        .with_context(|| format!("writing {} (it must not exist yet)", out.display()))?;
    println!(
        "Wrote master key {} to {} (readable by this user only). Keep a copy apart from the data directory: without it, sealed keys cannot be opened.",
        key.id(),
        out.display()
    );
    Ok(())
}

async fn master_key_rotate(
    old: &std::path::Path,
    new: &std::path::Path,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> anyhow::Result<()> {
    let old = Keyring::load(Some(old)).map_err(anyhow::Error::msg)?;
    let new = Keyring::load(Some(new)).map_err(anyhow::Error::msg)?;
    let store = open_for_command(data_dir, database_url).await?;
    let teams = old.rotate(&store, &new).await.map_err(anyhow::Error::msg)?;
    store.flush().await?;
    // The rows were rewritten in place: their versions under the old key stay in the store's
    // files until it rewrites them, in place or, for the embedded store, once closed.
    if !store.rewrite_secrets_in_place().await? {
        drop(store);
        compact_store(data_dir)?;
        licensing_server::server::remove_migration_copies(data_dir)?;
    }
    println!(
        "Re-sealed the private keys of {teams} team(s) from master key {} under {}; nothing sealed under the old key is left in the store. Start the server with the new key.",
        old.master_id().unwrap_or("-"),
        new.master_id().unwrap_or("-")
    );
    Ok(())
}

/// The command line, with the settings of the config file (`--config`, `LICENSING_CONFIG`) that
/// neither a flag nor the environment gave.
fn with_config_file(mut args: Vec<std::ffi::OsString>) -> anyhow::Result<Cli> {
    let cli = Cli::parse_from(&args);
    let path = match &cli.command {
        None => cli.serve.config.clone(),
        Some(Command::Serve(config)) => config.config.clone(),
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
        None => serve(cli.serve).await,
        Some(Command::Serve(config)) => serve(*config).await,
        Some(Command::Team(TeamCommand::Create {
            name,
            data_dir,
            database_url,
            master_key_file,
        })) => {
            team_create(
                &name,
                &data_dir,
                database_url.as_deref(),
                master_key_file.as_deref(),
            )
            .await
        }
        Some(Command::ApiKey(ApiKeyCommand::Create { team, name, store })) => {
            api_key_create(team, &name, &store).await
        }
        Some(Command::User(UserCommand::Create {
            team,
            email,
            role,
            link,
            store,
        })) => user_create(team, &email, role, &link.url, &store).await,
        Some(Command::User(UserCommand::Link {
            email,
            team,
            link,
            store,
        })) => user_link(&email, team, &link.url, &store).await,
        Some(Command::MasterKey(MasterKeyCommand::Generate { out })) => master_key_generate(&out),
        Some(Command::Export { out, store }) => export(&out, &store).await,
        Some(Command::Import { input, store }) => import(&input, &store).await,
        Some(Command::Check { store }) => check(&store).await,
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
            master_key_rotate(&old, &new, &store.data_dir, store.database_url.as_deref()).await
        }
    }
}

#[cfg(test)]
mod tests {
    use licensing_core::TeamId;
    use licensing_core::crypto::{TeamKeys, TeamPublicKeys};
    use licensing_core::model::TeamCreated;

    /// The changelog's newest release is the version `--version` prints.
    #[test]
    fn the_changelog_names_this_version() {
        let changelog = include_str!("../../CHANGELOG.md");
        let newest = changelog
            .lines()
            .find_map(|l| l.strip_prefix("## "))
            .expect("a release heading");
        assert!(
            newest.starts_with(concat!(env!("CARGO_PKG_VERSION"), " "))
                || newest == env!("CARGO_PKG_VERSION"),
            "CHANGELOG.md's newest release is {newest:?}, Cargo.toml says {}",
            env!("CARGO_PKG_VERSION")
        );
    }

    /// The keys as the first start prints them are taken by the SDK as they are pasted.
    #[test]
    fn the_first_start_prints_keys_that_paste() {
        let keys = TeamKeys::generate().expect("keys");
        let created = TeamCreated {
            team_id: TeamId::new(),
            api_key: "lk_test".into(),
            public_key: keys.public_key_pem().to_owned(),
            signing_key: keys.signing_key_base64(),
        };
        let owner = (
            "owner@localhost".to_owned(),
            "http://127.0.0.1:8080/dashboard/set-password/x/y".to_owned(),
        );
        let text = super::first_team_text(&created, Some(&owner), "http://127.0.0.1:8080");
        assert!(text.contains("\n  http://127.0.0.1:8080/dashboard/set-password/x/y\n"));
        assert!(text.contains("owner account owner@localhost"));
        let begin = text.find("-----BEGIN").expect("a PEM block");
        let end = text.find("-----END PUBLIC KEY-----").expect("its end") + 24;
        let pasted = &text[begin..end];
        assert!(
            pasted.lines().all(|l| !l.starts_with(' ')),
            "not indented: {pasted}"
        );
        let signing = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("signing key:"))
            .expect("the signing key")
            .trim();
        assert_eq!(
            TeamPublicKeys::parse(pasted, signing).expect("parses"),
            *keys.public_keys()
        );
    }
}
