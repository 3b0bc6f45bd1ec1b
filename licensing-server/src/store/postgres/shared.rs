//! The shared capabilities on PostgreSQL: rate-limit counters in table `rate_limits`, and the
//! change feed on channels `licensing_team_changed` (the schema's triggers notify it with the
//! team id on commit) and `licensing_license_changed` (with the team id and the license's key),
//! so that any writer counts.

use futures_util::future::BoxFuture;
use futures_util::{FutureExt as _, StreamExt as _};
use licensing_core::TeamId;
use licensing_core::store::StoreError;
use sqlx::postgres::PgListener;

use super::PgStore;
use crate::store::shared::{Change, ChangeFeed, Changes, SharedCounters, Window};

/// The channel the schema's triggers notify of a team's change.
const TEAMS: &str = "licensing_team_changed";

/// The channel the schema's triggers notify of a license's change.
const LICENSES: &str = "licensing_license_changed";

/// What a notification announces: on [`TEAMS`] the team's id, on [`LICENSES`] the team's id, a
/// space and the license's key.
fn change(channel: &str, payload: &str) -> Change {
    let team = |id: &str| uuid::Uuid::parse_str(id).ok().map(TeamId::from_uuid);
    let change = match channel {
        TEAMS => team(payload).map(Change::Team),
        LICENSES => payload
            .split_once(' ')
            .and_then(|(id, key)| Some(Change::License(team(id)?, key.to_owned()))),
        _ => None,
    };
    change.unwrap_or(Change::Any)
}

fn backend(e: sqlx::Error) -> StoreError {
    StoreError::backend_from("postgres", e)
}

impl SharedCounters for PgStore {
    // Admits only while the estimate stays within the limit, in one statement under the
    // counter row's lock, so that concurrent requests through several instances are exact.
    fn admit<'a>(
        &'a self,
        name: &'static str,
        key: &'a [u8],
        window: Window,
        limit: u32,
    ) -> BoxFuture<'a, Result<Option<f64>, StoreError>> {
        async move {
            let counted: Option<(i32, f64)> = sqlx::query_as(
                "WITH prev AS (
                   SELECT ceil(coalesce(max(count), 0) * $5::float8) AS weighted FROM rate_limits
                   WHERE name = $1 AND key = $2 AND window_start = $3 - $4)
                 INSERT INTO rate_limits AS r (name, key, window_start, count)
                 SELECT $1, $2, $3, 1 FROM prev WHERE prev.weighted + 1 <= $6
                 ON CONFLICT (name, key, window_start) DO UPDATE SET count = r.count + 1
                   WHERE r.count + 1 + (SELECT weighted FROM prev) <= $6
                 RETURNING r.count, (SELECT weighted FROM prev)",
            )
            .bind(name)
            .bind(key)
            .bind(window.start)
            .bind(window.length)
            .bind(window.weight)
            .bind(f64::from(limit))
            .fetch_optional(self.pool())
            .await
            .map_err(backend)?;
            Ok(counted.map(|(count, weighted)| f64::from(count) + weighted))
        }
        .boxed()
    }

    fn estimate<'a>(
        &'a self,
        name: &'static str,
        key: &'a [u8],
        window: Window,
    ) -> BoxFuture<'a, Result<f64, StoreError>> {
        async move {
            let (current, previous): (Option<i32>, Option<i32>) = sqlx::query_as(
                "SELECT
                   (SELECT count FROM rate_limits WHERE name = $1 AND key = $2 AND window_start = $3),
                   (SELECT count FROM rate_limits WHERE name = $1 AND key = $2
                      AND window_start = $3 - $4)",
            )
            .bind(name)
            .bind(key)
            .bind(window.start)
            .bind(window.length)
            .fetch_one(self.pool())
            .await
            .map_err(backend)?;
            Ok(f64::from(current.unwrap_or(0))
                + (f64::from(previous.unwrap_or(0)) * window.weight).ceil())
        }
        .boxed()
    }

    fn sweep(&self, name: &'static str, before: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            sqlx::query("DELETE FROM rate_limits WHERE name = $1 AND window_start < $2")
                .bind(name)
                .bind(before)
                .execute(self.pool())
                .await
                .map_err(backend)?;
            Ok(())
        }
        .boxed()
    }
}

impl ChangeFeed for PgStore {
    fn listen(&self) -> BoxFuture<'_, Result<Changes, StoreError>> {
        async move {
            let mut listener = PgListener::connect_with(self.pool())
                .await
                .map_err(backend)?;
            listener
                .listen_all([TEAMS, LICENSES])
                .await
                .map_err(backend)?;
            let notes = listener.into_stream().map(|note| {
                let note = note.map_err(backend)?;
                Ok(change(note.channel(), note.payload()))
            });
            Ok(notes.boxed())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_read_as_changes() {
        let team = TeamId::new();
        assert_eq!(change(TEAMS, &team.to_string()), Change::Team(team));
        assert_eq!(
            change(LICENSES, &format!("{team} AAAAA-BBBBB")),
            Change::License(team, "AAAAA-BBBBB".to_owned())
        );
        assert_eq!(change(TEAMS, "not an id"), Change::Any);
        assert_eq!(change(LICENSES, &team.to_string()), Change::Any);
        assert_eq!(change("elsewhere", ""), Change::Any);
    }
}
