//! The command line's subcommands, a file each: serving with its first start (`serve`), teams
//! with their accounts and keys (`accounts`), the master key (`master_key`), the archive
//! (`archive`: export, import, check) and the online backup through a running server (`backup`).
//! Each performs the server's operations or reads the store as the server does.

pub(crate) mod accounts;
pub(crate) mod archive;
pub(crate) mod backup;
pub(crate) mod health;
pub(crate) mod master_key;
pub(crate) mod serve;

use anyhow::Context as _;
use licensing_server::open_configured_store;
use licensing_server::store::{AnyStore, DEFAULT_CACHE_MB, DEFAULT_POOL_SIZE};

/// Opens the store a subcommand names: PostgreSQL with a database URL, otherwise the data
/// directory's (which the server must not hold open).
pub(crate) async fn open_for_command(
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> anyhow::Result<AnyStore> {
    let pool = DEFAULT_POOL_SIZE.min(4);
    if database_url.is_none() {
        refuse_if_held(data_dir)?;
    }
    let opened = open_configured_store(data_dir, database_url, DEFAULT_CACHE_MB, pool).await;
    if database_url.is_some() {
        Ok(opened?)
    } else {
        // The embedded store is locked by the server that holds it open.
        opened.context("is the server running? stop it first")
    }
}

/// What to do when a running server holds the data directory's store.
const HELD: &str = "Stop the server first. While it runs, its admin API does the same: \
                    `POST /api/v1/admin/teams/{teamId}/password-links` with {\"email\": …} \
                    gives a new set-password link (with LICENSING_ADMIN_TOKEN set), and an \
                    owner or admin of the team can send one from the dashboard's Users page.";

/// Refuses at once, saying why and what to do, when another process (a running server) holds
/// the store in `data_dir` open, rather than waiting for a lock that will not come. The store
/// (in `db/`) takes an exclusive lock on its file `db/db`; this tries the same lock without
/// waiting and lets go of it at once.
fn refuse_if_held(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let file = match std::fs::File::open(data_dir.join("db").join("db")) {
        Ok(file) => file,
        // No store yet, or one this user cannot read: opening it says what is wrong.
        Err(_) => return Ok(()),
    };
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(anyhow::anyhow!(
            "the store in {} is in use: a running server holds it. {HELD}",
            data_dir.display()
        )),
        Err(_) => Ok(()),
    }
}

/// An API error as one line: the details, then each field's problem, then the cause it kept
/// (an operator reads this, not a client).
pub(crate) fn describe(e: &licensing_core::ApiError) -> String {
    let mut text = e.details().to_owned();
    for f in e.field_errors() {
        text.push_str(&format!("; {}: {}", f.field, f.message));
    }
    if let Some(cause) = e.cause() {
        text.push_str(&format!(" ({cause})"));
    }
    text
}
