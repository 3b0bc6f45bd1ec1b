//! Changes made through other instances: the store announces each change to a team's or a
//! license's cached state (see [`ChangeFeed`]); this task drops the entry from this instance's
//! caches. When the feed's connection drops, announcements may have been missed: the caches are
//! cleared and the task reconnects.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::watch;

use crate::runtime::contexts::TeamContexts;
use crate::runtime::license_cache::LicenseCache;
use crate::runtime::stats::OverviewCache;
use crate::store::shared::{Change, ChangeFeed};

/// Listens until `stop` turns true.
pub(crate) async fn run(
    feed: Arc<dyn ChangeFeed>,
    contexts: TeamContexts,
    licenses: Arc<LicenseCache>,
    overviews: OverviewCache,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let listening = async {
            let mut changes = feed.listen().await?;
            // Anything changed while no one listened is reloaded.
            contexts.clear();
            licenses.clear();
            overviews.clear();
            while let Some(change) = changes.next().await {
                match change? {
                    Change::Team(team) => contexts.invalidate(team),
                    Change::License(team, key) => {
                        licenses.forget(team, &key);
                        overviews.forget(team);
                    }
                    Change::Any => {
                        contexts.clear();
                        licenses.clear();
                        overviews.clear();
                    }
                }
            }
            Err(licensing_core::store::StoreError::backend(
                "the change feed ended".to_owned(),
            ))
        };
        tokio::select! {
            result = listening => {
                let result: Result<(), licensing_core::store::StoreError> = result;
                if let Err(e) = result {
                    tracing::warn!(error = %e, "listening for changes from other instances failed; reconnecting");
                }
                contexts.clear();
                licenses.clear();
                overviews.clear();
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
            }
            _ = stop.changed() => return,
        }
    }
}
