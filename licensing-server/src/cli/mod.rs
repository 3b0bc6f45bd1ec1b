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
    let opened = open_configured_store(data_dir, database_url, DEFAULT_CACHE_MB, pool).await;
    if database_url.is_some() {
        Ok(opened?)
    } else {
        // The embedded store is locked by the server that holds it open.
        opened.context("is the server running? stop it first")
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
