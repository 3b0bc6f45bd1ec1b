//! Versioned schema migrations, applied at start-up.
//!
//! Each migration is a file under `migrations/`, numbered; `schema_migrations` records those
//! applied. Instances starting together take an advisory lock, so each migration runs once, in a
//! transaction with its record. A database that records a migration this server does not know
//! was written by a newer server, and is refused.

use licensing_core::store::StoreError;
use sqlx::PgPool;

use super::PgResult;
use super::backend;

/// A migration: its number, name and SQL.
struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

/// Each migration: its number, its name and its file under `migrations/`.
macro_rules! migrations {
    ($($version:literal $name:literal $file:literal,)*) => {
        &[$(Migration {
            version: $version,
            name: $name,
            sql: include_str!(concat!("migrations/", $file)),
        },)*]
    };
}

#[rustfmt::skip]
const MIGRATIONS: &[Migration] = migrations![
    1 "initial" "0001_initial.sql",
    2 "shared state" "0002_shared_state.sql",
    3 "audit log" "0003_audit_log.sql",
    4 "webhooks" "0004_webhooks.sql",
    5 "client events" "0005_client_events.sql",
    6 "staff accounts" "0006_staff.sql",
    7 "license filters" "0007_license_filters.sql",
    8 "audit entries' products" "0008_audit_products.sql",
    9 "staff addresses unique per team" "0009_staff_per_team.sql",
    10 "record counts and records by last use" "0010_record_counts.sql",
    11 "entitlements" "0011_entitlements.sql",
    12 "floating sessions" "0012_license_sessions.sql",
    13 "idempotency keys" "0013_idempotency_keys.sql",
    14 "key search without hyphens" "0014_key_search.sql",
    15 "request history" "0015_request_log.sql",
    16 "room for kept answers" "0016_idempotency_fillfactor.sql",
    17 "license changes announced" "0017_license_changes.sql",
    18 "writes mark their idempotency keys" "0018_idempotency_applied.sql",
    19 "policies" "0019_policies.sql",
    20 "payment integrations" "0020_payments.sql",
    21 "customer portal" "0021_portal.sql",
    22 "device names" "0022_device_labels.sql",
    23 "usage meters" "0023_usage_meters.sql",
    24 "license rows updated in place" "0024_license_rows_updated_in_place.sql",
];

/// The newest schema this server knows.
pub const SCHEMA_VERSION: i64 = 24;

/// The advisory lock key migrations hold ("licensing" in ASCII, as an integer).
const LOCK: i64 = 0x6c69_6365_6e73_696e;

/// Applies the migrations the database lacks; refuses a newer schema.
pub(super) async fn apply(pool: &PgPool) -> PgResult<()> {
    let mut conn = pool.acquire().await?;
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(LOCK)
        .execute(&mut *conn)
        .await?;
    let result = apply_locked(&mut conn).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(LOCK)
        .execute(&mut *conn)
        .await
        .map_err(backend);
    result.and(Ok(unlocked.map(|_| ())?))
}

async fn apply_locked(conn: &mut sqlx::PgConnection) -> PgResult<()> {
    // Looked up first rather than `CREATE TABLE IF NOT EXISTS`, whose notice ("already exists")
    // every start would log; the lock makes the two steps one.
    let known: bool = sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
        .fetch_one(&mut *conn)
        .await?;
    if !known {
        sqlx::query(
            "CREATE TABLE schema_migrations (
                version bigint PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )",
        )
        .execute(&mut *conn)
        .await?;
    }
    let newest: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM schema_migrations")
        .fetch_one(&mut *conn)
        .await?;
    let newest = newest.unwrap_or(0);
    if newest > SCHEMA_VERSION {
        return Err(StoreError::backend(format!(
            "the database's schema is version {newest}, newer than this server knows \
             ({SCHEMA_VERSION}); run a server of that version or newer"
        ))
        .into());
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > newest) {
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        sqlx::raw_sql(m.sql).execute(&mut *tx).await.map_err(|e| {
            StoreError::backend(format!(
                "schema migration {} ({}) failed: {e}",
                m.version, m.name
            ))
        })?;
        sqlx::query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)")
            .bind(m.version)
            .bind(m.name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(
            version = m.version,
            name = m.name,
            "applied a schema migration"
        );
    }
    Ok(())
}
