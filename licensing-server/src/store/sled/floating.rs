//! Floating sessions on sled. A session is keyed by team, license and id, so that the atomic
//! step of a license reads its sessions as one range (under the license's stripe, which every
//! start, extension and removal of its sessions holds) and a heartbeat reads its own by key.

use licensing_core::api::requests::Paging;
use licensing_core::model::LicenseSession;
use licensing_core::store::{Entity, Journal, LicenseSessionStore, Page, StoreError, StoreResult};
use licensing_core::{LicenseId, LicenseSessionId, TeamId, Timestamp};

use super::SledResult;
use super::keys::{key, tag};
use super::{SledStore, Touch, Tx, backend, decode};

/// The key of session `id` of `license`.
pub(super) fn session_key(team: TeamId, license: LicenseId, id: LicenseSessionId) -> Vec<u8> {
    key(&[
        &[tag::FLOATING],
        team.as_bytes(),
        license.as_bytes(),
        id.as_bytes(),
    ])
}

/// The prefix of `license`'s sessions.
pub(super) fn license_prefix(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::FLOATING], team.as_bytes(), license.as_bytes()])
}

/// How many of `license`'s sessions are live at `now`, counting no further than `up_to`.
pub(super) fn count_live(
    tree: &sled::Tree,
    team: TeamId,
    license: LicenseId,
    now: Timestamp,
    up_to: u64,
) -> SledResult<u64> {
    let mut live = 0;
    for kv in tree.scan_prefix(license_prefix(team, license)) {
        let (_, v) = kv?;
        let session: LicenseSession = decode(&v)?;
        if session.is_live(now) {
            live += 1;
            if live >= up_to {
                break;
            }
        }
    }
    Ok(live)
}

/// Session `id` of `license`, read through `tx`.
pub(super) fn own_session(
    tx: &Tx<'_>,
    team: TeamId,
    license: LicenseId,
    id: LicenseSessionId,
) -> StoreResult<Option<LicenseSession>> {
    tx.get_record(&session_key(team, license, id))
}

/// What [`SledStore::extend_session`] came to.
pub(super) enum Extended {
    /// The session, extended.
    Done(LicenseSession),
    /// No live session of that id for that device: `SESSION_NOT_FOUND`.
    NotFound,
    /// It kept changing under the swap: decide in the atomic step.
    Busy,
}

impl SledStore {
    /// Extends session `id` of `license` for a heartbeat of `hardware_id` from `ip`, outside the
    /// atomic step: a compare-and-swap of its record. An extension decides no limit (a live
    /// session stays live, and an expired or ended one is never written back), so it needs no
    /// license lock; the record is flushed with the next batch, as refreshes are.
    pub(super) async fn extend_session(
        &self,
        (team, license): (TeamId, LicenseId),
        (hardware_id, ip): (
            Option<&licensing_core::validate::HardwareId>,
            std::net::IpAddr,
        ),
        (id, ttl): (LicenseSessionId, u32),
        now: Timestamp,
    ) -> SledResult<Extended> {
        let tree = &self.inner.tree;
        let k = session_key(team, license, id);
        for _ in 0..4 {
            let Some(old) = tree.get(&k)? else {
                return Ok(Extended::NotFound);
            };
            let session: LicenseSession = decode(&old)?;
            if !session.extendable_by(hardware_id, now) {
                return Ok(Extended::NotFound);
            }
            let next = session.extended(ip, ttl, now);
            let bytes = super::encode(&next)?;
            let swapped = {
                let _gate = self.inner.locks.gate.read().await;
                tree.compare_and_swap(&k, Some(old), Some(bytes))?
            };
            if swapped.is_ok() {
                return Ok(Extended::Done(next));
            }
        }
        Ok(Extended::Busy)
    }

    fn sessions_where(
        &self,
        prefix: Vec<u8>,
        keep: impl Fn(&LicenseSession) -> bool,
    ) -> SledResult<Vec<LicenseSession>> {
        let mut out = Vec::new();
        for kv in self.inner.tree.scan_prefix(prefix) {
            let (_, v) = kv?;
            let session: LicenseSession = decode(&v)?;
            if keep(&session) {
                out.push(session);
            }
        }
        Ok(out)
    }
}

impl LicenseSessionStore for SledStore {
    async fn list_license_sessions(
        &self,
        team: TeamId,
        license: LicenseId,
        now: Timestamp,
        paging: &Paging,
    ) -> StoreResult<Page<LicenseSession>> {
        self.require_license(team, license)?;
        let live = self.sessions_where(license_prefix(team, license), |s| s.is_live(now))?;
        Ok(licensing_core::store::sessions_page(live, paging))
    }

    async fn get_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
    ) -> StoreResult<Option<LicenseSession>> {
        Ok(self.get_record(&session_key(team, license, id))?)
    }

    async fn remove_license_session(
        &self,
        team: TeamId,
        license: LicenseId,
        id: LicenseSessionId,
        now: Timestamp,
        expired: bool,
        journal: &Journal,
    ) -> StoreResult<Option<LicenseSession>> {
        let k = session_key(team, license, id);
        let removed = self
            .journaled_touching(journal, Touch::License(license), |tx| {
                let session: LicenseSession = tx
                    .get_record(&k)?
                    .filter(|s: &LicenseSession| s.is_live(now) != expired)
                    // Nothing in that state: the write (and its journal) is dropped.
                    .ok_or(StoreError::NotFound(Entity::LicenseSession))?;
                tx.del(k.clone());
                Ok(session)
            })
            .await;
        match removed {
            Ok(session) => Ok(Some(session)),
            Err(StoreError::NotFound(Entity::LicenseSession)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn expired_license_sessions(
        &self,
        now: Timestamp,
        max: u32,
    ) -> StoreResult<Vec<LicenseSession>> {
        let mut expired = self.sessions_where(vec![tag::FLOATING], |s| !s.is_live(now))?;
        expired.sort_by_key(|s| (s.expires_at, s.id));
        expired.truncate(max as usize);
        Ok(expired)
    }

    async fn count_live_sessions(&self, now: Timestamp) -> StoreResult<u64> {
        let mut live = 0;
        for kv in self.inner.tree.scan_prefix([tag::FLOATING]) {
            let (_, v) = kv.map_err(backend)?;
            if decode::<LicenseSession>(&v)?.is_live(now) {
                live += 1;
            }
        }
        Ok(live)
    }
}
