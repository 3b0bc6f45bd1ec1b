//! The PostgreSQL store, for several server instances on one database.
//!
//! - **Atomicity**: every atomic unit of core's traits is one transaction. The client API's unit
//!   (`record_activity`) locks its license row (`SELECT … FOR UPDATE`), so concurrent requests of
//!   one license, through any instance, take turns, and requests of other licenses do not wait.
//!   Developer writes lock what they change; references that SQL cannot check (a license's
//!   customers and products are arrays) are read `FOR SHARE`, so that a concurrent delete waits.
//! - **Durability**: a write returns after its transaction commits.
//! - **Records**: each aggregate keeps its whole record in a `doc` column (the model's JSON) and,
//!   as columns, what SQL filters, sorts or changes on its own (`migrations/`). Devices and
//!   addresses are plain rows keyed by license and identifier, so that a request reads its own
//!   records by key.
//! - **Schema**: versioned migrations (`migrate.rs`), applied at start-up under an advisory lock,
//!   so that instances starting together apply them once; a database of a newer schema is
//!   refused.

mod activity;
mod admission;
mod audit;
mod blobs;
mod catalog;
mod customers;
mod devices;
mod floating;
mod idempotency;
mod licenses;
mod migrate;
mod misc;
mod payments;
mod portal;
mod refresh;
mod request_log;
mod shared;
mod staff;
mod tables;
mod teams;
mod usage;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use licensing_core::Timestamp;
use licensing_core::store::{Entity, StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;

pub use migrate::SCHEMA_VERSION;

/// Connections a server keeps to the database unless told otherwise.
pub const DEFAULT_POOL_SIZE: u32 = 16;

/// The PostgreSQL store. Clones share the connection pool and the write-behind refreshes.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Connections (made when first needed) whose commits do not wait for the disk
    /// (`synchronous_commit = off`): for writes whose loss in a crash's last moments costs no
    /// data (request history).
    behind: PgPool,
    /// Connections that hold the advisory locks of running idempotency claims, one each, from
    /// the claim to the answer (`idempotency.rs`).
    locks: PgPool,
    /// Heartbeat refreshes waiting to be written (`refresh.rs`).
    refreshes: Arc<crate::store::refresh::Refreshes>,
    /// Wakes the flusher before its round when many wait.
    wake: Arc<tokio::sync::Notify>,
    /// The idempotency claims this instance runs, with their locks (`idempotency.rs`).
    claims: Arc<idempotency::Claims>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://…` or `postgresql://…`) with up to `pool_size`
    /// connections and applies the schema's migrations. Fails on a schema newer than this
    /// server knows.
    pub async fn connect(url: &str, pool_size: u32) -> StoreResult<Self> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|e| StoreError::backend(format!("the database URL is not valid: {e}")))?;
        let options = options.application_name("licensing-server");
        let pool = PgPoolOptions::new()
            .max_connections(pool_size.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await
            .map_err(|e| StoreError::backend_from("cannot connect to PostgreSQL", e))?;
        let locks = PgPoolOptions::new()
            .max_connections(pool_size.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options.clone());
        let behind = PgPoolOptions::new()
            .max_connections(pool_size.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options.options([("synchronous_commit", "off")]));
        migrate::apply(&pool).await?;
        let refreshes = Arc::new(crate::store::refresh::Refreshes::default());
        let wake = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(refresh::run(
            Arc::downgrade(&refreshes),
            pool.clone(),
            wake.clone(),
        ));
        Ok(Self {
            pool,
            behind,
            locks,
            refreshes,
            wake,
            claims: Default::default(),
        })
    }

    /// Writes the heartbeat refreshes waiting in memory (the server calls it when it stops).
    /// Those of licenses that another transaction holds are retried for a moment.
    pub async fn flush(&self) -> StoreResult<()> {
        for _ in 0..40 {
            refresh::flush(&self.pool, &self.refreshes).await?;
            if self.refreshes.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Ok(())
    }

    /// Holds the first-start lock until the returned transaction ends: instances starting
    /// together on an empty database take turns to check for a team and create the first one,
    /// so that only one is created.
    pub async fn first_start_lock(
        &self,
    ) -> StoreResult<sqlx::Transaction<'static, sqlx::Postgres>> {
        /// "first start" in ASCII, as an integer (migrations hold another key).
        const FIRST_START: i64 = 0x6669_7273_7473_7461;
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(FIRST_START)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        Ok(tx)
    }

    /// Writes waiting refreshes before a read of many records (lists, statistics), so that
    /// this instance's own heartbeats show in them.
    pub(crate) async fn settle(&self) -> PgResult<()> {
        if self.refreshes.is_empty() {
            return Ok(());
        }
        refresh::flush(&self.pool, &self.refreshes).await
    }

    /// The connection pool (release files and shared limits use it too).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Whether the database holds no team yet.
    pub async fn is_empty(&self) -> StoreResult<bool> {
        let any: Option<i32> = sqlx::query_scalar("SELECT 1 FROM teams LIMIT 1")
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        Ok(any.is_none())
    }

    /// Bytes the database occupies (tables and indexes).
    pub async fn size_on_disk(&self) -> StoreResult<u64> {
        let bytes: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
            .fetch_one(&self.pool)
            .await
            .map_err(backend)?;
        Ok(u64::try_from(bytes).unwrap_or(0))
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Inserts a write's journal in its transaction: the audit entries, the webhook events, and
/// the mark of the idempotency claim it runs under (whose answer's commit makes it durable),
/// in the first audit entry's statement when there is one.
pub(crate) async fn write_journal(
    conn: &mut sqlx::PgConnection,
    journal: &licensing_core::store::Journal,
) -> PgResult<()> {
    for event in &journal.events {
        webhooks::insert_event(&mut *conn, event).await?;
    }
    let mut mark = journal.keyed.as_ref();
    for entry in &journal.audit {
        insert_audit(&mut *conn, entry, mark.take()).await?;
    }
    if let Some(keyed) = mark {
        idempotency::mark_applied(&mut *conn, keyed).await?;
    }
    if let Some(inbound) = &journal.inbound {
        payments::stage_inbound(&mut *conn, inbound).await?;
    }
    Ok(())
}

/// Inserts one audit entry, and marks `mark`'s row applied in the same statement
/// (`idempotency::mark_sql`).
async fn insert_audit(
    conn: &mut sqlx::PgConnection,
    e: &licensing_core::model::AuditEntry,
    mark: Option<&licensing_core::idempotency::KeyedWrite>,
) -> PgResult<()> {
    macro_rules! insert {
        () => {
            "INSERT INTO audit_log
               (id, team_id, at, actor_kind, actor_id, action, resource_type, resource_id, doc,
                product_ids)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        };
    }
    const MARKED: &str = concat!(
        "WITH mark AS (",
        idempotency::mark_sql!("$11", "$12", "$13", "$14"),
        ") ",
        insert!()
    );
    let kind = serde_json::to_value(e.actor.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let sql = if mark.is_some() { MARKED } else { insert!() };
    let query = sqlx::query(sql)
        .bind(e.id.as_uuid())
        .bind(e.team_id.as_uuid())
        .bind(ms(e.at))
        .bind(kind)
        .bind(e.actor.id)
        .bind(e.action.as_str())
        .bind(&e.resource_type)
        .bind(&e.resource_id)
        .bind(json(e))
        .bind(e.product_ids.as_ref().map(|ids| {
            ids.iter()
                .map(|p| *p.as_uuid())
                .collect::<Vec<uuid::Uuid>>()
        }));
    let query = match mark {
        None => query,
        Some(keyed) => idempotency::bind_mark(query, keyed),
    };
    query.execute(conn).await?;
    Ok(())
}

/// A database failure, with its cause.
pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    StoreError::backend_from("PostgreSQL", e)
}

// A failure of the database (a `sqlx::Error` becomes one with `?`) or a store error decided
// here.
crate::store::store_error_type!(PgError, PgResult, "PostgreSQL", [sqlx::Error]);

/// A constraint's name and the store error its violation means.
pub(crate) type Violation<'a> = (&'a str, fn() -> StoreError);

/// Maps the violation of a named constraint to a store error; anything else is a backend
/// failure.
pub(crate) fn constraint(e: sqlx::Error, map: &[Violation<'_>]) -> StoreError {
    if let sqlx::Error::Database(db) = &e
        && let Some(name) = db.constraint()
        && let Some((_, to)) = map.iter().find(|(n, _)| *n == name)
    {
        return to();
    }
    backend(e)
}

/// The error a missing team gives (a foreign key on `team_id`).
pub(crate) fn team_missing() -> StoreError {
    StoreError::NotFound(Entity::Team)
}

pub(crate) fn ms(t: Timestamp) -> i64 {
    t.as_millis()
}

pub(crate) fn opt_ms(t: Option<Timestamp>) -> Option<i64> {
    t.map(Timestamp::as_millis)
}

pub(crate) fn json<T: Serialize>(value: &T) -> Json<&T> {
    Json(value)
}

/// Reads the `doc` column.
pub(crate) fn doc<T: DeserializeOwned>(row: &PgRow) -> PgResult<T> {
    use sqlx::Row as _;
    let Json(value): Json<T> = row.try_get("doc")?;
    Ok(value)
}

/// A query of documents, its parameters bound.
pub(crate) type DocQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The documents of every row `query` finds, in its order.
pub(crate) async fn fetch_docs<'c, T: DeserializeOwned>(
    conn: impl sqlx::PgExecutor<'c>,
    query: DocQuery<'_>,
) -> PgResult<Vec<T>> {
    query.fetch_all(conn).await?.iter().map(doc).collect()
}

/// The document of the row `query` finds, if it finds one.
pub(crate) async fn fetch_doc<T: DeserializeOwned>(
    pool: &PgPool,
    query: DocQuery<'_>,
) -> PgResult<Option<T>> {
    query
        .fetch_optional(pool)
        .await?
        .map(|row| doc(&row))
        .transpose()
}

/// Escapes `LIKE` wildcards, for a substring search.
pub(crate) fn like_contains(needle: &str) -> String {
    let mut out = String::with_capacity(needle.len() + 2);
    out.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// `ASC` or `DESC`.
pub(crate) fn sql_direction(
    direction: licensing_core::api::requests::SortDirection,
) -> &'static str {
    match direction {
        licensing_core::api::requests::SortDirection::Asc => "ASC",
        licensing_core::api::requests::SortDirection::Desc => "DESC",
    }
}

/// `ASC` or `DESC`, with `NULLS FIRST` ascending (as `Option` orders: `None` first).
pub(crate) fn order(direction: licensing_core::api::requests::SortDirection) -> &'static str {
    match direction {
        licensing_core::api::requests::SortDirection::Asc => "ASC NULLS FIRST",
        licensing_core::api::requests::SortDirection::Desc => "DESC NULLS LAST",
    }
}

/// Deletes the rows `delete` selects (`$1` the time before which, `$2` at most how many);
/// answers how many went. Pruning goes a batch at a time, so that no statement holds many locks.
pub(crate) async fn prune(
    pool: &PgPool,
    delete: &'static str,
    before: Timestamp,
    limit: usize,
) -> PgResult<u64> {
    let done = sqlx::query(delete)
        .bind(ms(before))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// The documents `claim` marks as claimed (`$1` now, `$2` the lease's end, `$3` at most how
/// many), so that no other instance takes them before the lease ends.
pub(crate) async fn claim<T: DeserializeOwned>(
    pool: &PgPool,
    claim: &'static str,
    now: Timestamp,
    lease_ms: i64,
    limit: usize,
) -> PgResult<Vec<T>> {
    let query = sqlx::query(claim)
        .bind(ms(now))
        .bind(ms(now) + lease_ms)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    fetch_docs(pool, query).await
}

/// Page bounds: (limit, offset) as SQL wants them.
pub(crate) fn page_bounds(paging: &licensing_core::api::requests::Paging) -> (i64, i64) {
    (
        i64::from(paging.page_size),
        i64::try_from(paging.offset()).unwrap_or(i64::MAX),
    )
}

/// The rows of one page: `select` (its filters bound, `LIMIT` and `OFFSET` its next two
/// parameters) with the bounds of `paging` bound.
pub(crate) async fn fetch_page(
    pool: &PgPool,
    select: DocQuery<'_>,
    paging: &licensing_core::api::requests::Paging,
) -> PgResult<Vec<PgRow>> {
    let (limit, offset) = page_bounds(paging);
    Ok(select
        .bind(limit)
        .bind(offset)
        .fetch_all(pool)
        .await
        .map_err(backend)?)
}

/// The total a page's `count(*) OVER () AS total` column carries; `None` for a page past the
/// end, which has no row to carry it.
pub(crate) fn window_total(rows: &[PgRow]) -> PgResult<Option<i64>> {
    Ok(rows
        .first()
        .map(|row| sqlx::Row::try_get(row, "total"))
        .transpose()
        .map_err(backend)?)
}

/// The total of a page read with `count(*) OVER () AS total`: what its rows carry, or for a page
/// past the end (no row to carry it) what `count`, a `SELECT count(*) AS total` of the same
/// filter, answers.
pub(crate) async fn page_total<'q>(
    pool: &PgPool,
    rows: &[PgRow],
    count: impl FnOnce() -> DocQuery<'q>,
) -> PgResult<i64> {
    match window_total(rows)? {
        Some(total) => Ok(total),
        None => Ok(sqlx::Row::try_get(
            &count().fetch_one(pool).await?,
            "total",
        )?),
    }
}

/// Builds a page from a query's rows and the total.
pub(crate) fn page<T>(
    items: Vec<T>,
    total: i64,
    paging: &licensing_core::api::requests::Paging,
) -> licensing_core::store::Page<T> {
    let total = u64::try_from(total).unwrap_or(0);
    let has_next_page = paging.offset() + (items.len() as u64) < total;
    licensing_core::store::Page {
        items,
        total,
        has_next_page,
    }
}

/// Runs `body` in a transaction and commits it when it evaluates to `Ok`. The body runs as an
/// async block answering [`PgResult`]: `?` takes the database's errors and the store's alike,
/// and an `Err` (returned, or passed on with `?`) rolls the transaction back.
macro_rules! in_tx {
    ($pool:expr, |$tx:ident| $body:expr) => {
        $crate::store::postgres::in_tx!($pool, &licensing_core::store::Journal::NONE, |$tx| $body)
    };
    ($pool:expr, $journal:expr, |$tx:ident| $body:expr) => {{
        let mut $tx = $pool
            .begin()
            .await
            .map_err($crate::store::postgres::backend)?;
        let out: $crate::store::postgres::PgResult<_> = async { $body }.await;
        match out {
            Ok(value) => {
                $crate::store::postgres::write_journal(&mut $tx, $journal).await?;
                $tx.commit()
                    .await
                    .map_err($crate::store::postgres::backend)?;
                Ok(value)
            }
            Err(e) => Err(e.into()),
        }
    }};
}
pub(crate) use in_tx;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_contains("AB_C%\\"), "%AB\\_C\\%\\\\%");
    }

    /// Runs each case on a runtime of its own (the store's pool lives on it).
    struct TokioRunner(tokio::runtime::Runtime);

    impl licensing_core::store::testing::BlockOn for TokioRunner {
        fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
            self.0.block_on(f)
        }
    }

    fn runner() -> TokioRunner {
        TokioRunner(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime"),
        )
    }

    async fn store() -> PgStore {
        let url = crate::testing::postgres::database()
            .await
            .expect("checked by `available`");
        PgStore::connect(&url, 8).await.expect("connect")
    }

    /// Two workers (instances) claiming due messages never get the same one; a claim lapses
    /// after its lease, and a failed attempt releases it for its next time.
    #[test]
    fn outbox_claims_exclude_other_workers() {
        use licensing_core::model::OutboxMessage;
        use licensing_core::store::{LicenseStore, OutboxStore};
        crate::testing::postgres::on_fresh_database(|url| async move {
            let store = PgStore::connect(&url, 4).await.unwrap();
            let other = PgStore::connect(&url, 4).await.unwrap();
            let team = licensing_core::store::testing::team(&store, "A").await;
            let t0 = Timestamp::from_millis(1_800_000_000_000);
            let messages: Vec<OutboxMessage> = (0..6)
                .map(|i| {
                    OutboxMessage::new(
                        team.id,
                        format!("c{i}@example.com"),
                        "Your license".into(),
                        "KEY".into(),
                        t0,
                    )
                })
                .collect();
            store
                .create_license_with_mail(
                    &licensing_core::store::testing::license(team.id, t0),
                    &messages,
                    50,
                    t0,
                    &licensing_core::store::Journal::NONE,
                )
                .await
                .unwrap();
            let a = store.claim_messages(t0, 60_000, 4).await.unwrap();
            let b = other.claim_messages(t0, 60_000, 4).await.unwrap();
            assert_eq!((a.len(), b.len()), (4, 2));
            assert!(a.iter().all(|m| b.iter().all(|n| n.id != m.id)));
            assert!(
                store
                    .claim_messages(t0, 60_000, 10)
                    .await
                    .unwrap()
                    .is_empty()
            );
            // A failed attempt is due again at its next time, claimed or not.
            let mut failed = a[0].clone();
            failed.attempts = 1;
            failed.next_attempt_at = t0.plus_minutes(1);
            store.message_failed(&failed).await.unwrap();
            let again = other
                .claim_messages(t0.plus_minutes(1), 60_000, 10)
                .await
                .unwrap();
            assert!(again.iter().any(|m| m.id == failed.id));
            // Claims lapse after their lease.
            let lapsed = other
                .claim_messages(t0.plus_minutes(2), 60_000, 10)
                .await
                .unwrap();
            assert_eq!(lapsed.len(), 6);
        });
    }

    /// A heartbeat's refresh waits in the instance's memory only while the record as stored
    /// keeps counting for the margin, so another instance counts it exactly; its own lists see
    /// it; a flush writes it; a deleted license's refresh is dropped, not retried forever.
    #[test]
    fn refreshes_wait_only_while_another_instance_would_count_the_same() {
        use licensing_core::model::TeamSettings;
        use licensing_core::store::{
            Activity, ActivityRules, ActivityStore, DeviceStore, LicenseStore, TeamStore,
        };
        use licensing_core::validate::HardwareId;
        crate::testing::postgres::on_fresh_database(|url| async move {
            let a = PgStore::connect(&url, 4).await.unwrap();
            let b = PgStore::connect(&url, 4).await.unwrap();
            let t0 = Timestamp::from_millis(1_800_000_000_000);
            let team = licensing_core::store::testing::team(&a, "A").await;
            let settings = TeamSettings {
                hwid_timeout: Some(60),
                ..TeamSettings::default()
            };
            let team = a
                .update_settings(
                    team.id,
                    &settings,
                    t0,
                    &licensing_core::store::Journal::NONE,
                )
                .await
                .unwrap();
            let at = |s: i64| Timestamp::from_millis(1_800_000_000_000 + s * 1000);
            let mut license = licensing_core::store::testing::license(team.id, t0);
            license.hwid_limit = Some(1);
            a.create_license(&license, &licensing_core::store::Journal::NONE)
                .await
                .unwrap();
            let rules = ActivityRules::new(&team.settings);
            let device = |name: &str| Activity {
                label: Default::default(),
                hardware_id: Some(HardwareId::parse(name).unwrap()),
                ip: std::net::IpAddr::from([198, 51, 100, 7]),
                country: None,
                session: Default::default(),
            };
            let stored = || async {
                sqlx::query_scalar::<_, i64>("SELECT last_seen_at FROM hwids")
                    .fetch_one(&b.pool)
                    .await
                    .unwrap()
            };
            let x = device("device-x-0000");
            a.record_activity(team.id, license.id, &rules, &x, t0)
                .await
                .unwrap()
                .unwrap();

            // Half-way through the timeout: it waits in A's memory; A's own reads see it.
            let seen = at(30 * 60);
            a.record_activity(team.id, license.id, &rules, &x, seen)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(stored().await, ms(t0));
            let got = a.get_license(team.id, license.id).await.unwrap().unwrap();
            assert_eq!(got.last_active_at, Some(seen));
            let query = licensing_core::api::requests::DeviceListQuery::default();
            let listed = a.list_hwids(team.id, license.id, &query).await.unwrap();
            assert_eq!(listed.items[0].last_seen_at, seen);
            assert_eq!(stored().await, ms(seen));

            // Within the margin of the timeout: written at once, so that B, counting a minute
            // later, still counts the device and refuses a second one.
            let late = at(30 * 60 + 59 * 60 + 30);
            a.record_activity(team.id, license.id, &rules, &x, late)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(stored().await, ms(late));
            let refused = b
                .record_activity(
                    team.id,
                    license.id,
                    &rules,
                    &device("device-y-0000"),
                    at(30 * 60 + 60 * 60 + 30),
                )
                .await
                .unwrap();
            assert!(refused.is_err(), "a second device while the first counts");

            // A waiting refresh is written by the flush; one of a deleted license is dropped.
            let later = at(31 * 60 + 60 * 60);
            a.record_activity(team.id, license.id, &rules, &x, later)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(stored().await, ms(late));
            a.flush().await.unwrap();
            assert_eq!(stored().await, ms(later));
            a.record_activity(team.id, license.id, &rules, &x, at(32 * 60 + 60 * 60))
                .await
                .unwrap()
                .unwrap();
            b.delete_license(team.id, license.id, &licensing_core::store::Journal::NONE)
                .await
                .unwrap();
            a.flush().await.unwrap();
            assert!(a.refreshes.is_empty());
        });
    }

    licensing_core::store_test_suite!(
        runner: runner(),
        store: store(),
        available: crate::testing::postgres::available(),
    );
}
