//! Used classloader session keys (protocol.md section 2), per team and durable, so that a key
//! replayed after a restart is refused too.
//!
//! Keys: `s|team|fingerprint` holds the time of use; `i s|team|time|fingerprint` orders them by
//! time, so that those older than the window are dropped oldest first; `# s|team` counts what the
//! team holds. A team's session keys are taken under one lock stripe (by the team's id), and the
//! answer waits for the flush: the download starts only once its key is on disk.

use licensing_core::store::{SessionKeyRefused, SessionKeyStore, StoreResult};
use licensing_core::{LicenseId, TeamId, Timestamp};

use super::keys::{self, key, tag};
use super::{SledStore, backend, decode_count};

fn used_key(team: TeamId, fingerprint: &[u8; 16]) -> Vec<u8> {
    key(&[&[tag::SESSION_KEY], team.as_bytes(), fingerprint])
}

fn by_time_prefix(team: TeamId) -> Vec<u8> {
    key(&[&[tag::INDEX, tag::SESSION_KEY], team.as_bytes()])
}

fn by_time_key(team: TeamId, at: Timestamp, fingerprint: &[u8; 16]) -> Vec<u8> {
    key(&[&by_time_prefix(team), &keys::time(at), fingerprint])
}

fn count_key(team: TeamId) -> Vec<u8> {
    key(&[&[tag::COUNT, tag::SESSION_KEY], team.as_bytes()])
}

impl SessionKeyStore for SledStore {
    async fn use_session_key(
        &self,
        team: TeamId,
        fingerprint: [u8; 16],
        now: Timestamp,
        window_ms: i64,
        per_team: u32,
    ) -> StoreResult<Result<(), SessionKeyRefused>> {
        // A team's keys are serialized by a stripe chosen by the team's id.
        let stripe = self
            .inner
            .locks
            .license(LicenseId::from_uuid(*team.as_uuid()))
            .await;
        let mut tx = self.tx();
        let since = Timestamp::from_millis(now.as_millis() - window_ms);
        // Forget what left the window, oldest first.
        let prefix = by_time_prefix(team);
        let end = key(&[&prefix, &keys::time(since), &[0xff; 17]]);
        let mut count = tx.get(&count_key(team))?.map_or(0, |v| decode_count(&v));
        for k in self.inner.tree.range(prefix.clone()..end).keys() {
            let k = k.map_err(backend)?;
            let print: [u8; 16] = k
                .get(k.len() - 16..)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    licensing_core::store::StoreError::backend("bad session key index")
                })?;
            tx.del(k.to_vec());
            tx.del(used_key(team, &print));
            count = count.saturating_sub(1);
        }
        let outcome = match tx.get(&used_key(team, &fingerprint))? {
            Some(_) => Err(SessionKeyRefused::Reused),
            None if count >= u64::from(per_team) => Err(SessionKeyRefused::Full),
            None => {
                tx.put(used_key(team, &fingerprint), keys::time(now).to_vec());
                tx.put(by_time_key(team, now, &fingerprint), Vec::new());
                count += 1;
                Ok(())
            }
        };
        tx.put(count_key(team), count.to_be_bytes().to_vec());
        let batch = self.commit(tx).await?;
        drop(stripe);
        if outcome.is_ok() {
            self.flushed_up_to(batch).await?;
        }
        Ok(outcome)
    }
}
