//! (ext) A license's floating sessions: the live ones listed, one revoked (its seat free at
//! once), and the sweep that deletes the expired ones.

pub(crate) use licensing_core::operations::floating::{ListSessions, RevokeSession};

use licensing_core::model::{Action, ClientEvent, FieldChange, LicenseSession};
use licensing_core::store::{LicenseSessionStore, Page};
use licensing_core::{ApiError, Timestamp};

use licensing_core::model::License;

use super::{Cx, Run};
use crate::app::journal::tied_to;
use crate::runtime::contexts::TeamContexts;

impl Run for ListSessions {
    async fn run(self, cx: &Cx) -> Result<Page<LicenseSession>, ApiError> {
        let Self(license, paging) = self;
        cx.reachable::<License>(license).await?;
        Ok(cx
            .state
            .store
            .list_license_sessions(cx.team, license, cx.now, &paging)
            .await?)
    }
}

impl Run for RevokeSession {
    async fn run(self, cx: &Cx) -> Result<LicenseSession, ApiError> {
        let Self(license, id) = self;
        let found = cx.write::<License>(license).await?;
        let not_found = || ApiError::from(licensing_core::verify::session_not_found());
        let session = cx
            .state
            .store
            .get_license_session(cx.team, license, id)
            .await?
            .filter(|s| s.is_live(cx.now))
            .ok_or_else(not_found)?;
        let changes = vec![FieldChange::of(
            "hardwareIdentifier",
            None,
            Some(session.hardware_identifier.as_str().into()),
        )];
        let mut journal = tied_to(
            cx.journal(Action::SessionRevoked, id, changes),
            &found.product_ids,
        );
        // The event carries the session, as the other session events do.
        let data = serde_json::to_value(&session)
            .map_err(|e| ApiError::internal_because("a session did not serialize", e))?;
        for event in &mut journal.events {
            event.data = data.clone();
        }
        cx.state
            .store
            .remove_license_session(cx.team, license, id, cx.now, false, &journal)
            .await?
            .ok_or_else(not_found)
    }
}

/// Sessions the sweep deletes per round at most.
const SWEEP_BATCH: u32 = 500;

/// Deletes the sessions that expired by `now`, each with its `session.expired` event when an
/// endpoint of its team wants it, a batch at a time until none is left. Returns how many were
/// deleted. Several instances may sweep at once: each session is deleted (and its event
/// raised) once.
pub(crate) async fn sweep_expired<S: licensing_core::store::Store>(
    store: &S,
    contexts: &TeamContexts,
    now: Timestamp,
) -> Result<u64, licensing_core::store::StoreError> {
    let mut deleted = 0;
    loop {
        let expired = store.expired_license_sessions(now, SWEEP_BATCH).await?;
        let batch = expired.len();
        for session in expired {
            let mut journal = licensing_core::store::Journal::NONE;
            let wants = contexts
                .get(store, session.team_id)
                .await?
                .is_some_and(|c| c.client_events.wants(ClientEvent::SessionExpired));
            if wants
                && let Some(license) = store
                    .get_license(session.team_id, session.license_id)
                    .await?
            {
                journal = journal
                    .with_event(ClientEvent::SessionExpired.session_event(&license, &session, now));
            }
            if store
                .remove_license_session(
                    session.team_id,
                    session.license_id,
                    session.id,
                    now,
                    true,
                    &journal,
                )
                .await?
                .is_some()
            {
                deleted += 1;
            }
        }
        if batch < SWEEP_BATCH as usize {
            return Ok(deleted);
        }
    }
}
