//! `licensing-server` (or `serve`): logging, the stop signals, the first start's team and what
//! it tells the operator, and serving.

use anyhow::Context as _;
use licensing_core::model::TeamCreated;
use licensing_server::operator::{FirstStart, Operator};
use licensing_server::{Config, FirstStartCredentials, LogFormat, Server, staff};

use super::accounts::password_link;
use super::describe;

/// The target of this command's log lines: the binary's own, as before the subcommands had
/// files of their own (operators and the package's checks filter on it).
const LOG: &str = "licensing_server";

pub(crate) fn init_logging(format: LogFormat) {
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
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
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
                        tracing::error!(target: LOG, error = %e, "cannot listen for {name}");
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
            tracing::error!(target: LOG, error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!(target: LOG, "shutting down: finishing requests in flight");
    }
}

/// What a first start tells its operator: the new team's id, API key and public keys, with
/// commands to try.
pub(crate) fn first_team_text(
    team: &TeamCreated,
    owner: Option<&(String, String)>,
    base: &str,
) -> String {
    let dashboard = owner.map_or_else(String::new, |(email, link)| {
        format!(
            "\nThe dashboard is at {base}/dashboard/: open this link once (within {hours} hours) to set the\
             \npassword of the owner account {email}, and sign in:\n\n  {link}\n",
            hours = staff::LINK_LIFETIME_HOURS
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
pub(crate) const CREDENTIALS_FILE: &str = "first-start-credentials.txt";

/// Tells the operator about the first team (`how`): with `auto`, printed on a terminal;
/// otherwise (a service manager's journal, a log collector) written to a file in the data
/// directory readable by this user only, and only its path is printed, so that the API key does
/// not end up in logs; with `log` (a container's), the file and the credentials in the log,
/// once; with `file`, the file only.
pub(crate) fn announce_first_team(
    team: &TeamCreated,
    owner: Option<&(String, String)>,
    base: &str,
    (data_dir, how): (&std::path::Path, FirstStartCredentials),
) -> anyhow::Result<()> {
    let text = first_team_text(team, owner, base);
    if how == FirstStartCredentials::Auto && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
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
    tracing::info!(target: LOG, path = %path.display(), "first start: the new team's credentials are in this file");
    if how == FirstStartCredentials::Log {
        println!("{text}");
    }
    Ok(())
}

pub(crate) async fn serve(config: Config) -> anyhow::Result<()> {
    init_logging(config.log_format);
    let shutdown = shutdown_signal();
    let data_dir = config.data_dir.clone();
    let owner_email = config.owner_email.clone();
    let dashboard = config.dashboard;
    let public_url = config.public_url.clone();
    let credentials = config.first_start_credentials;
    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    let listening = format!("http://{addr}");
    let base = public_url.map_or_else(|| listening.clone(), |url| url.to_string());
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
        announce_first_team(&team, owner.as_ref(), &base, (&data_dir, credentials))?;
    }
    let data = licensing_server::store::open::location(server.store(), &data_dir);
    tracing::info!(target: LOG, %addr, store = server.store().backend_name(), "licensing-server listening");
    println!("Listening on {listening} ({data})");
    server.run(shutdown).await?;
    tracing::info!(target: LOG, "stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use licensing_core::TeamId;
    use licensing_core::crypto::{TeamKeys, TeamPublicKeys};
    use licensing_core::model::TeamCreated;

    /// The changelog's newest release is the version `--version` prints.
    #[test]
    fn the_changelog_names_this_version() {
        let changelog = include_str!("../../../CHANGELOG.md");
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
