//! Changes made through other instances (PostgreSQL): the database announces each change to a
//! team's cached state on commit (`NOTIFY licensing_team_changed, '<team id>'`, by trigger, so
//! that any writer counts); this task drops the team's entry from this instance's cache. When
//! the connection drops, notifications may have been missed: the whole cache is cleared and the
//! task reconnects.

use std::time::Duration;

use licensing_core::TeamId;
use sqlx::postgres::PgListener;
use tokio::sync::watch;

use crate::services::contexts::TeamContexts;

/// The channel the schema's triggers notify.
pub const CHANNEL: &str = "licensing_team_changed";

/// Listens until `stop` turns true.
pub async fn run(pool: sqlx::PgPool, contexts: TeamContexts, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        let listening = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(CHANNEL).await?;
            // Anything changed while no one listened is reloaded.
            contexts.clear();
            loop {
                let note = listener.recv().await?;
                match uuid::Uuid::parse_str(note.payload()) {
                    Ok(team) => contexts.invalidate(TeamId::from_uuid(team)),
                    Err(_) => contexts.clear(),
                }
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        tokio::select! {
            result = listening => {
                if let Err(e) = result {
                    tracing::warn!(error = %e, "listening for changes from other instances failed; reconnecting");
                }
                contexts.clear();
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
            }
            _ = stop.changed() => return,
        }
    }
}
