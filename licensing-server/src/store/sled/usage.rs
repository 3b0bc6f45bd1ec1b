//! (ext) Usage counters (`c`): by team, license, meter code and period start, the used amount
//! as 8 bytes; and the kept answers of usage events (`x`), by team, license and event id, with
//! an index by the time they were kept for pruning. An increment is read and decided under the
//! license's stripe and staged (`staged_usage.rs`); the flusher applies what is staged in one
//! batch, and the increment answers once that batch is flushed.

use licensing_core::model::{
    ClientEvents, Meter, UsageChange, UsageCounter, UsageIncrement, UsageOutcome, usage_events,
};
use licensing_core::store::{UsageStore, check_counters_owner, count_usage, still_kept};

use super::*;

/// The prefix of a license's counters.
pub(super) fn counters_prefix(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::USAGE], team.as_bytes(), license.as_bytes()])
}

fn counter_key(team: TeamId, license: LicenseId, meter: &str, start: Timestamp) -> Vec<u8> {
    let mut k = counters_prefix(team, license);
    k.extend_from_slice(meter.as_bytes());
    k.push(0);
    k.extend_from_slice(&keys::time(start));
    k
}

/// The prefix of a license's kept answers.
pub(super) fn answers_prefix(team: TeamId, license: LicenseId) -> Vec<u8> {
    key(&[&[tag::USAGE_ANSWER], team.as_bytes(), license.as_bytes()])
}

fn answer_key(team: TeamId, license: LicenseId, event: &str) -> Vec<u8> {
    let mut k = answers_prefix(team, license);
    k.extend_from_slice(event.as_bytes());
    k
}

/// The answer's entry in the index by the time it was kept: the time, then the answer's key.
fn answer_by_time(kept: Timestamp, answer: &[u8]) -> Vec<u8> {
    key(&[&[tag::INDEX, tag::USAGE_ANSWER], &keys::time(kept), answer])
}

/// A kept answer as stored.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    at: Timestamp,
    outcome: UsageOutcome,
}

fn read_used(bytes: Option<Vec<u8>>) -> u64 {
    bytes.map_or(0, |v| decode_count(&v))
}

/// A counter as stored under `k` (a key of [`counters_prefix`]).
fn counter_of(license: LicenseId, k: &[u8], v: &[u8]) -> StoreResult<UsageCounter> {
    let rest = &k[33..];
    let split = rest
        .len()
        .checked_sub(9)
        .filter(|&at| rest[at] == 0)
        .ok_or_else(|| StoreError::backend("a usage counter's key is malformed"))?;
    let meter = std::str::from_utf8(&rest[..split])
        .map_err(|_| StoreError::backend("a usage counter's meter is not text"))?;
    let time: [u8; 8] = rest[split + 1..]
        .try_into()
        .map_err(|_| StoreError::backend("a usage counter's period is malformed"))?;
    Ok(UsageCounter {
        license_id: license,
        meter: meter.to_owned(),
        period_start: Timestamp::from_millis((u64::from_be_bytes(time) ^ (1 << 63)) as i64),
        used: decode_count(v),
    })
}

impl SledStore {
    fn require_license_in(&self, tx: &Tx<'_>, team: TeamId, license: LicenseId) -> StoreResult<()> {
        match tx.get(&license_key(team, license))? {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(Entity::License)),
        }
    }
}

impl UsageStore for SledStore {
    async fn record_usage(
        &self,
        license: &License,
        increments: &[UsageIncrement],
        wants: ClientEvents,
        now: Timestamp,
    ) -> StoreResult<Vec<UsageOutcome>> {
        let (team, id) = (license.team_id, license.id);
        let staged = &self.inner.staged_usage;
        let stripe = self.inner.locks.license(id).await;
        let mut tx = self.tx();
        self.require_license_in(&tx, team, id)?;
        // What this increment staged, then what earlier ones of the license staged, then the tree.
        let read = |tx: &Tx<'_>, k: &[u8]| match tx.pending.get(k) {
            Some(v) => Ok(v.clone()),
            None => match staged.get(id, k) {
                Some(v) => Ok(v),
                None => tx.get(k),
            },
        };
        let mut out = Vec::with_capacity(increments.len());
        let mut events = Vec::new();
        for inc in increments {
            let kept_at = inc.event_id.as_deref().map(|e| answer_key(team, id, e));
            if let Some(k) = &kept_at
                && let Some(bytes) = read(&tx, k)?
            {
                let kept: Kept = serde_json::from_slice(&bytes)
                    .map_err(|e| StoreError::backend(format!("a kept usage answer: {e}")))?;
                if still_kept(kept.at, now) {
                    out.push(UsageOutcome {
                        replayed: true,
                        ..kept.outcome
                    });
                    continue;
                }
                tx.del(answer_by_time(kept.at, k));
            }
            let at = counter_key(team, id, &inc.meter.code, inc.meter.period.bounds(inc.at).0);
            let used = read_used(read(&tx, &at)?);
            let outcome = count_usage(inc, used);
            if outcome.counted {
                tx.put(at, outcome.state.used.to_be_bytes().to_vec());
                events.extend(usage_events(
                    wants,
                    license,
                    &inc.meter,
                    (used, outcome.state.used),
                    inc.at,
                    now,
                ));
            }
            if let Some(k) = kept_at {
                let kept = Kept {
                    at: now,
                    outcome: outcome.clone(),
                };
                let bytes = serde_json::to_vec(&kept)
                    .map_err(|e| StoreError::backend(format!("keeping a usage answer: {e}")))?;
                tx.put(answer_by_time(now, &k), Vec::new());
                tx.put(k, bytes);
            }
            out.push(outcome);
        }
        if !events.is_empty() {
            tx.journal(&Journal {
                audit: Vec::new(),
                events,
                keyed: None,
                inbound: None,
            })?;
        }
        let batch = if tx.pending.len() == 1 && !staged.has(id) {
            // One key (a plain increment) and nothing staged before it: written at once, by
            // itself (cheaper than a share of the flusher's batch).
            let batch = self.commit(tx).await?;
            drop(stripe);
            batch
        } else {
            // Staged for the flusher's next batch (`staged_usage.rs`); an answer read from what
            // is staged waits for it too.
            let waiting = staged.stage(id, std::mem::take(&mut tx.pending));
            drop(stripe);
            match waiting {
                Some(waiting) => {
                    self.inner.flusher.request();
                    waiting.applied().await?
                }
                // Nothing written or staged: durable once what it read is.
                None => self.inner.applied.load(Ordering::Acquire),
            }
        };
        self.flushed_up_to(batch).await?;
        Ok(out)
    }

    async fn list_usage(&self, team: TeamId, license: LicenseId) -> StoreResult<Vec<UsageCounter>> {
        self.require_license(team, license)?;
        self.inner
            .tree
            .scan_prefix(counters_prefix(team, license))
            .map(|kv| {
                let (k, v) = kv.map_err(backend)?;
                counter_of(license, &k, &v)
            })
            .collect()
    }

    async fn used_now(
        &self,
        team: TeamId,
        license: LicenseId,
        meters: &[Meter],
        now: Timestamp,
    ) -> StoreResult<Vec<u64>> {
        // One read a meter: what is staged for the counter (applied by the flusher before the
        // staged entry goes, so a value moves from there to the tree, never back), else the
        // tree's.
        let staged = &self.inner.staged_usage;
        meters
            .iter()
            .map(|m| {
                let k = counter_key(team, license, &m.code, m.period.bounds(now).0);
                let bytes = match staged.get(license, &k) {
                    Some(bytes) => bytes,
                    None => self
                        .inner
                        .tree
                        .get(&k)
                        .map_err(backend)?
                        .map(|v| v.to_vec()),
                };
                Ok(read_used(bytes))
            })
            .collect()
    }

    async fn change_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        meter: &Meter,
        change: UsageChange,
        now: Timestamp,
        journal: &Journal,
    ) -> StoreResult<UsageCounter> {
        self.journaled_touching(journal, Touch::License(license), |tx| {
            self.require_license_in(tx, team, license)?;
            let start = meter.period.bounds(now).0;
            let at = counter_key(team, license, &meter.code, start);
            let used = change.apply(read_used(tx.get(&at)?));
            tx.put(at, used.to_be_bytes().to_vec());
            Ok(UsageCounter {
                license_id: license,
                meter: meter.code.clone(),
                period_start: start,
                used,
            })
        })
        .await
    }

    async fn restore_usage_counters(
        &self,
        team: TeamId,
        license: LicenseId,
        counters: &[UsageCounter],
    ) -> StoreResult<()> {
        check_counters_owner(license, counters)?;
        self.durable_touching(Touch::License(license), |tx| {
            self.require_license_in(tx, team, license)?;
            for c in counters {
                tx.put(
                    counter_key(team, license, &c.meter, c.period_start),
                    c.used.to_be_bytes().to_vec(),
                );
            }
            Ok(())
        })
        .await
    }

    async fn prune_usage_events(&self, before: Timestamp) -> StoreResult<u64> {
        let start = key(&[&[tag::INDEX, tag::USAGE_ANSWER]]);
        let end = key(&[&[tag::INDEX, tag::USAGE_ANSWER], &keys::time(before)]);
        let mut pruned = 0;
        loop {
            let found = self.first_keys(&start, end.clone(), 500)?;
            if found.is_empty() {
                return Ok(pruned);
            }
            self.durable(|tx| {
                for k in &found {
                    let answer = k[10..].to_vec();
                    // An answer kept again since has its own, later, entry.
                    if let Some(bytes) = tx.get(&answer)?
                        && let Ok(kept) = serde_json::from_slice::<Kept>(&bytes)
                        && kept.at.as_millis() == key_time(&k[2..10])
                    {
                        tx.del(answer);
                        pruned += 1;
                    }
                    tx.del(k.to_vec());
                }
                Ok(())
            })
            .await?;
        }
    }
}

fn key_time(bytes: &[u8]) -> i64 {
    let time: [u8; 8] = bytes.try_into().unwrap_or([0; 8]);
    (u64::from_be_bytes(time) ^ (1 << 63)) as i64
}
