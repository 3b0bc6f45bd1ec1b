//! Opening the store the settings name: PostgreSQL with a database URL (its schema migrated),
//! otherwise the embedded store of the data directory; and the embedded store's offline upkeep
//! (compaction, and removing the copies format migrations left beside it).

use std::path::PathBuf;

use super::postgres::PgStore;
use super::{AnyStore, SledStore};

/// Why a store could not be opened or kept up.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The data directory or the store in it could not be opened.
    #[error("cannot open the store in {dir}: {cause}")]
    Store {
        /// The directory.
        dir: PathBuf,
        /// Why.
        cause: String,
    },
    /// A setting is wrong.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// PostgreSQL could not be used.
    #[error("database: {0}")]
    Database(String),
}

/// Opens the store of a data directory (creating the directory), with the default cache.
pub fn open_store(data_dir: &std::path::Path) -> Result<SledStore, OpenError> {
    open_store_with_cache(data_dir, crate::store::DEFAULT_CACHE_MB)
}

/// Opens the store of a data directory (creating the directory, readable by this user only)
/// with `cache_mb` MiB of cache. Permissions looser than that are tightened, with a warning.
pub fn open_store_with_cache(
    data_dir: &std::path::Path,
    cache_mb: u64,
) -> Result<SledStore, OpenError> {
    let fail = |cause: String| OpenError::Store {
        dir: data_dir.to_path_buf(),
        cause,
    };
    crate::datadir::create_private_dir(data_dir).map_err(|e| fail(e.to_string()))?;
    crate::store::finish_compaction(data_dir).map_err(|e| fail(e.to_string()))?;
    let store =
        SledStore::open_with_cache(&data_dir.join("db"), cache_mb.saturating_mul(1024 * 1024))
            .map_err(|e| fail(e.to_string()))?;
    crate::datadir::tighten_and_warn(data_dir).map_err(|e| fail(e.to_string()))?;
    Ok(store)
}

/// Opens the store the settings name: PostgreSQL with a database URL (applying its schema
/// migrations), otherwise the embedded store of the data directory.
pub async fn open_configured_store(
    data_dir: &std::path::Path,
    database_url: Option<&str>,
    cache_mb: u64,
    pool_size: u32,
) -> Result<AnyStore, OpenError> {
    match database_url {
        Some(url) => {
            check_database_url(url).map_err(OpenError::Config)?;
            let store = PgStore::connect(url, pool_size)
                .await
                .map_err(|e| OpenError::Database(e.to_string()))?;
            Ok(AnyStore::Postgres(store))
        }
        None => Ok(AnyStore::Sled(open_store_with_cache(data_dir, cache_mb)?)),
    }
}

/// Rewrites the (closed) store of a data directory into fresh files, so that no earlier version
/// of any record is left in them: after keys are sealed under a master key, or re-sealed under a
/// new one, the old forms are gone from the disk.
pub fn compact_store(data_dir: &std::path::Path) -> Result<(), OpenError> {
    crate::store::compact(data_dir).map_err(|e| OpenError::Store {
        dir: data_dir.to_path_buf(),
        cause: e.to_string(),
    })
}

/// Removes the copies of the store that store-format migrations left beside it
/// (`db.format-<N>-backup`): made before the master key sealed the keys and secrets, they hold
/// them in the clear. Going back to an older version then takes a backup made before upgrading.
pub fn remove_migration_copies(data_dir: &std::path::Path) -> Result<(), OpenError> {
    for copy in crate::store::migration_copies(data_dir) {
        std::fs::remove_dir_all(&copy).map_err(|e| OpenError::Store {
            dir: copy.clone(),
            cause: format!("removing a copy of the store that holds keys in the clear: {e}"),
        })?;
        tracing::warn!(
            copy = %copy.display(),
            "removed the copy of the store made before a format migration: it held private keys and secrets in the clear (with a master key none may stay on disk); to go back to an older version, restore a backup made before upgrading"
        );
    }
    Ok(())
}

/// Refuses a database URL of a scheme other than PostgreSQL's, without echoing the URL (it may
/// hold a password).
pub fn check_database_url(url: &str) -> Result<(), String> {
    match url.split_once("://") {
        Some(("postgres" | "postgresql", _)) => Ok(()),
        Some((scheme, _)) => Err(format!(
            "LICENSING_DATABASE_URL names the scheme `{scheme}`; only PostgreSQL is supported: \
             postgres://user:password@host:5432/database"
        )),
        None => Err(
            "LICENSING_DATABASE_URL is not a URL; use postgres://user:password@host:5432/database"
                .into(),
        ),
    }
}

/// Where a store keeps its data, as the server's start-up line says it: the data directory, or
/// PostgreSQL.
pub fn location(store: &AnyStore, data_dir: &std::path::Path) -> String {
    match store {
        AnyStore::Sled(_) => format!("data in {}", data_dir.display()),
        AnyStore::Postgres(_) => "data in PostgreSQL".to_owned(),
    }
}
