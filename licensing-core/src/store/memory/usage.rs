//! Usage counters in memory: every step under the store's one lock.

use super::*;
use crate::model::{
    ClientEvents, Meter, UsageChange, UsageCounter, UsageIncrement, UsageOutcome, usage_events,
};
use crate::store::usage::{UsageStore, check_counters_owner, count, still_kept};

impl UsageStore for MemoryStore {
    async fn record_usage(
        &self,
        license: &License,
        increments: &[UsageIncrement],
        wants: ClientEvents,
        now: Timestamp,
    ) -> StoreResult<Vec<UsageOutcome>> {
        self.with(|s| {
            s.license(license.team_id, license.id)?;
            let mut out = Vec::with_capacity(increments.len());
            for inc in increments {
                if let Some(id) = &inc.event_id
                    && let Some((at, kept)) = s.usage_answers.get(&(license.id, id.clone()))
                    && still_kept(*at, now)
                {
                    out.push(UsageOutcome {
                        replayed: true,
                        ..kept.clone()
                    });
                    continue;
                }
                let slot = (
                    license.id,
                    inc.meter.code.clone(),
                    inc.meter.period.bounds(inc.at).0.as_millis(),
                );
                let used = s.usage.get(&slot).copied().unwrap_or(0);
                let outcome = count(inc, used);
                if outcome.counted {
                    s.usage.insert(slot, outcome.state.used);
                    for event in usage_events(
                        wants,
                        license,
                        &inc.meter,
                        (used, outcome.state.used),
                        inc.at,
                        now,
                    ) {
                        s.events.insert(event.id, event);
                    }
                }
                if let Some(id) = &inc.event_id {
                    s.usage_answers
                        .insert((license.id, id.clone()), (now, outcome.clone()));
                }
                out.push(outcome);
            }
            Ok(out)
        })
    }

    async fn list_usage(&self, team: TeamId, license: LicenseId) -> StoreResult<Vec<UsageCounter>> {
        self.with(|s| {
            s.license(team, license)?;
            Ok(s.usage
                .iter()
                .filter(|((l, _, _), _)| *l == license)
                .map(|((l, meter, start), used)| UsageCounter {
                    license_id: *l,
                    meter: meter.clone(),
                    period_start: Timestamp::from_millis(*start),
                    used: *used,
                })
                .collect())
        })
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
        self.write(journal, |s| {
            s.license(team, license)?;
            let start = meter.period.bounds(now).0;
            let slot = (license, meter.code.clone(), start.as_millis());
            let used = change.apply(s.usage.get(&slot).copied().unwrap_or(0));
            s.usage.insert(slot, used);
            Ok(UsageCounter {
                license_id: license,
                meter: meter.code.clone(),
                period_start: start,
                used,
            })
        })
    }

    async fn restore_usage_counters(
        &self,
        team: TeamId,
        license: LicenseId,
        counters: &[UsageCounter],
    ) -> StoreResult<()> {
        check_counters_owner(license, counters)?;
        self.with(|s| {
            s.license(team, license)?;
            for c in counters {
                s.usage.insert(
                    (license, c.meter.clone(), c.period_start.as_millis()),
                    c.used,
                );
            }
            Ok(())
        })
    }

    async fn prune_usage_events(&self, before: Timestamp) -> StoreResult<u64> {
        self.with(|s| {
            let was = s.usage_answers.len();
            s.usage_answers.retain(|_, (at, _)| *at >= before);
            Ok((was - s.usage_answers.len()) as u64)
        })
    }
}
