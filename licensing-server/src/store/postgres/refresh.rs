//! Writing the shared write-behind refreshes (`store/refresh.rs`) into PostgreSQL.
//!
//! A heartbeat whose device and address already count would otherwise commit (and wait for the
//! WAL flush) once per request. Its refreshes wait in this instance's memory instead and are
//! written in one statement per round of up to [`CHUNK`] licenses: every [`ROUND`], early when
//! many wait, before this instance lists devices, licenses or statistics, inside the atomic step
//! of a license that has some waiting, and when the server stops.
//!
//! **Limits stay exact across instances.** A refresh only moves `lastSeenAt` forward, and it is
//! left waiting only when the record as stored still counts for [`MARGIN_SECONDS`] more (see
//! `activity.rs`); otherwise the request writes it at once. Each round writes what waits within
//! [`ROUND`], so any instance counting the license's records meanwhile counts that record as
//! the refreshed value would. What a crash loses is a few hundred milliseconds of `lastSeenAt`,
//! never a record or a limit. A floating session's extension by a heartbeat waits the same way
//! when the session as stored stays live for `floating::EXTEND_BEHIND_SECONDS` more, and is
//! written only while it certainly still is (dropped otherwise, as a crash would lose it: the
//! session then expires as stored, and no instance ever counted it as ended while it was not).
//!
//! **No deadlocks.** Every writer of a license's device and address rows holds the license row
//! first (`FOR UPDATE`, or the one-statement admission's update of it, `activity.rs`). A round locks its licenses `SKIP LOCKED`, so it never waits for a
//! request's transaction: a license locked elsewhere keeps its refresh for the next round.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use licensing_core::LicenseId;
use licensing_core::store::StoreResult;
use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;
use uuid::Uuid;

use super::PgResult;
use super::{in_tx, ms};
use crate::store::refresh::{Refresh, Refreshes};

/// How often waiting refreshes are written.
pub(super) const ROUND: Duration = Duration::from_millis(250);

/// How long a record must keep counting, as stored, for its refresh to wait in memory.
pub(super) const MARGIN_SECONDS: u32 = 60;

/// Licenses per written round (one transaction each).
const CHUNK: usize = 1_000;

/// Writes `taken` (licenses whose rows the caller's transaction holds) in one statement.
pub(super) async fn write(
    conn: &mut PgConnection,
    taken: &[&(LicenseId, Refresh)],
) -> PgResult<()> {
    let mut h_license = Vec::new();
    let mut h_digest: Vec<Vec<u8>> = Vec::new();
    let mut h_at = Vec::new();
    let mut i_license = Vec::new();
    let mut i_address: Vec<Vec<u8>> = Vec::new();
    let mut i_at = Vec::new();
    let mut i_country: Vec<Option<&str>> = Vec::new();
    let mut i_alpha2: Vec<Option<&str>> = Vec::new();
    let mut i_alpha3: Vec<Option<&str>> = Vec::new();
    let mut l_id = Vec::with_capacity(taken.len());
    let mut l_at = Vec::with_capacity(taken.len());
    let mut s_id = Vec::new();
    let mut s_license = Vec::new();
    let mut s_expires = Vec::new();
    let mut s_doc: Vec<String> = Vec::new();
    for (license, refresh) in taken.iter().copied() {
        let id = *license.as_uuid();
        l_id.push(id);
        l_at.push(ms(refresh.active_at));
        // An extension not written while the session as stored was certainly live is dropped:
        // another instance may have seen the session expire meanwhile (see `activity.rs`).
        let written_at = std::time::Instant::now();
        for (session, _) in refresh
            .sessions
            .iter()
            .filter(|(_, until)| written_at < *until)
        {
            s_id.push(*session.id.as_uuid());
            s_license.push(id);
            s_expires.push(ms(session.expires_at));
            s_doc.push(
                serde_json::to_string(session)
                    .map_err(|e| licensing_core::store::StoreError::backend(e.to_string()))?,
            );
        }
        for (digest, seen) in &refresh.hwids {
            h_license.push(id);
            h_digest.push(digest.to_vec());
            h_at.push(ms(*seen));
        }
        for (address, seen, country) in &refresh.ips {
            i_license.push(id);
            i_address.push(address.to_vec());
            i_at.push(ms(*seen));
            i_country.push(country.map(|c| c.name));
            i_alpha2.push(country.map(|c| c.alpha2));
            i_alpha3.push(country.map(|c| c.alpha3));
        }
    }
    sqlx::query(
        "WITH h AS (
           UPDATE hwids SET last_seen_at = greatest(hwids.last_seen_at, v.at)
           FROM unnest($1::uuid[], $2::bytea[], $3::int8[]) AS v(license_id, digest, at)
           WHERE hwids.license_id = v.license_id AND hwids.digest = v.digest
         ), i AS (
           UPDATE ips SET last_seen_at = greatest(ips.last_seen_at, v.at),
             country = CASE WHEN v.at >= ips.last_seen_at THEN coalesce(v.country, ips.country)
                            ELSE ips.country END,
             alpha2 = CASE WHEN v.at >= ips.last_seen_at THEN coalesce(v.alpha2, ips.alpha2)
                           ELSE ips.alpha2 END,
             alpha3 = CASE WHEN v.at >= ips.last_seen_at THEN coalesce(v.alpha3, ips.alpha3)
                           ELSE ips.alpha3 END
           FROM unnest($4::uuid[], $5::bytea[], $6::int8[], $7::text[], $8::text[], $9::text[])
             AS v(license_id, address, at, country, alpha2, alpha3)
           WHERE ips.license_id = v.license_id AND ips.address = v.address
         ), s AS (
           UPDATE license_sessions SET expires_at = v.expires_at, doc = v.doc
           FROM unnest($12::uuid[], $13::uuid[], $14::int8[], $15::jsonb[])
             AS v(id, license_id, expires_at, doc)
           WHERE license_sessions.id = v.id AND license_sessions.license_id = v.license_id
             AND license_sessions.expires_at <= v.expires_at
         )
         UPDATE licenses SET last_active_at = greatest(licenses.last_active_at, v.at)
         FROM unnest($10::uuid[], $11::int8[]) AS v(id, at)
         WHERE licenses.id = v.id",
    )
    .bind(&h_license)
    .bind(&h_digest)
    .bind(&h_at)
    .bind(&i_license)
    .bind(&i_address)
    .bind(&i_at)
    .bind(&i_country)
    .bind(&i_alpha2)
    .bind(&i_alpha3)
    .bind(&l_id)
    .bind(&l_at)
    .bind(&s_id)
    .bind(&s_license)
    .bind(&s_expires)
    .bind(&s_doc)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes every refresh waiting now, [`CHUNK`] licenses per transaction. Licenses locked by
/// another transaction wait for the next round; deleted ones are dropped.
pub(super) async fn flush(pool: &PgPool, refreshes: &Refreshes) -> PgResult<()> {
    let mut taken = refreshes.take_all();
    while !taken.is_empty() {
        let rest = taken.split_off(taken.len().min(CHUNK));
        let chunk = std::mem::replace(&mut taken, rest);
        let ids: Vec<Uuid> = chunk.iter().map(|(id, _)| *id.as_uuid()).collect();
        let written: StoreResult<Vec<Uuid>> = in_tx!(pool, |tx| {
            let locked: Vec<Uuid> = sqlx::query_scalar(
                "SELECT id FROM licenses WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED",
            )
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await?;
            let held: HashSet<Uuid> = locked.iter().copied().collect();
            let now: Vec<&(LicenseId, Refresh)> = chunk
                .iter()
                .filter(|(id, _)| held.contains(id.as_uuid()))
                .collect();
            if !now.is_empty() {
                write(&mut tx, &now).await?;
            }
            Ok(locked)
        });
        let locked = match written {
            Ok(locked) => locked,
            Err(e) => {
                refreshes.put_back(chunk);
                refreshes.put_back(taken);
                return Err(e.into());
            }
        };
        if locked.len() < chunk.len() {
            let held: HashSet<Uuid> = locked.into_iter().collect();
            let skipped: Vec<(LicenseId, Refresh)> = chunk
                .into_iter()
                .filter(|(id, _)| !held.contains(id.as_uuid()))
                .collect();
            let ids: Vec<Uuid> = skipped.iter().map(|(id, _)| *id.as_uuid()).collect();
            let existing: HashSet<Uuid> =
                sqlx::query_scalar::<_, Uuid>("SELECT id FROM licenses WHERE id = ANY($1)")
                    .bind(&ids)
                    .fetch_all(pool)
                    .await?
                    .into_iter()
                    .collect();
            refreshes.put_back(
                skipped
                    .into_iter()
                    .filter(|(id, _)| existing.contains(id.as_uuid()))
                    .collect(),
            );
        }
    }
    Ok(())
}

/// The flusher task of one store: a round every [`ROUND`] (or when woken), until the store is
/// dropped.
pub(super) async fn run(refreshes: Weak<Refreshes>, pool: PgPool, wake: Arc<Notify>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            () = wake.notified() => {}
        }
        let Some(refreshes) = refreshes.upgrade() else {
            return;
        };
        if refreshes.is_empty() {
            continue;
        }
        if let Err(e) = flush(&pool, &refreshes).await {
            tracing::warn!(error = %e, "writing device refreshes failed; retrying next round");
        }
    }
}
