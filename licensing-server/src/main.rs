//! `licensing-server`: serve the licensing API, or manage teams while it is stopped.
//!
//! `licensing-server` (or `licensing-server serve`) starts the server; on a first start with an
//! empty store it creates a team and prints its id, API key and public keys.
//! `licensing-server team create --name NAME --data-dir DIR` prints a new team as JSON.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use licensing_core::Timestamp;
use licensing_core::model::TeamCreated;
use licensing_server::{Config, LogFormat, Server, open_store, services};

#[derive(Debug, Parser)]
#[command(
    name = "licensing-server",
    version,
    about = "Self-hosted license management and verification server"
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

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

fn print_first_team(team: &TeamCreated, base: &str) {
    println!(
        "\nFirst start: created a team.\n\
         \n  team id:     {id}\n  API key:     {key}   (shown only now: store it safely)\n  signing key: {signing}\n\
         \n  public key (give it to your applications):\n{pem}\
         \nTry it:\n\
         \n  curl -s -H 'Authorization: Bearer {key}' \\\n    {base}/api/v1/dev/teams/{id}/licenses\n\
         \n  curl -s -X POST -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n    -d '{{\"expirationType\":\"NEVER\"}}' {base}/api/v1/dev/teams/{id}/licenses\n",
        id = team.team_id,
        key = team.api_key,
        signing = team.signing_key,
        pem = team
            .public_key
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>(),
    );
}

async fn serve(config: Config) -> anyhow::Result<()> {
    init_logging(config.log_format);
    let data_dir = config.data_dir.clone();
    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    let base = format!("http://{addr}");
    if server.store().is_empty()? {
        let team = services::teams::create_team(server.store(), "Default team", Timestamp::now())
            .await
            .context("creating the first team")?;
        print_first_team(&team, &base);
    }
    tracing::info!(%addr, data_dir = %data_dir.display(), "licensing-server listening");
    println!("Listening on {base} (data in {})", data_dir.display());
    server.run(shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

async fn team_create(name: &str, data_dir: &std::path::Path) -> anyhow::Result<()> {
    let store = open_store(data_dir).context("is the server running? stop it first")?;
    let team = services::teams::create_team(&store, name, Timestamp::now()).await?;
    println!("{}", serde_json::to_string(&team)?);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        None => serve(cli.serve).await,
        Some(Command::Serve(config)) => serve(*config).await,
        Some(Command::Team(TeamCommand::Create { name, data_dir })) => {
            team_create(&name, &data_dir).await
        }
    }
}
