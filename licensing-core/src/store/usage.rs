//! (ext) Usage meters' counters: what each license used of each meter in each period, counted
//! atomically, and the kept answers that make a retried event count once.

use std::future::Future;

use super::{Journal, StoreResult};
use crate::model::{
    ClientEvents, License, Meter, USAGE_EVENT_KEPT_MS, UsageChange, UsageCounter, UsageIncrement,
    UsageOutcome,
};
use crate::{LicenseId, TeamId, Timestamp, verify};

/// The usage counters of licenses.
pub trait UsageStore: Send + Sync {
    /// Counts `increments` for `license` (as the request read it), in order, each in one atomic
    /// step with its counter (the license's, of its meter's code and of the period holding its
    /// `at`): [`verify::admit_usage`] decides with the counter as it is then, and an admitted
    /// increment is added and its events (the [`crate::model::usage_events`] `wants` asks
    /// for) written with it. An increment with an `event_id` the license used within
    /// [`USAGE_EVENT_KEPT_MS`] of `now` counts nothing and answers what that one answered
    /// (`replayed`); otherwise its answer is kept under the id in the same step. Concurrent
    /// calls, on any instance, never pass a limit. Durable when it returns.
    fn record_usage(
        &self,
        license: &License,
        increments: &[UsageIncrement],
        wants: ClientEvents,
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Vec<UsageOutcome>>> + Send;

    /// Every counter the license keeps, any meter and period, in any order (the license must
    /// exist).
    fn list_usage(
        &self,
        team: TeamId,
        license: LicenseId,
    ) -> impl Future<Output = StoreResult<Vec<UsageCounter>>> + Send;

    /// What the license used of each of `meters` in the period of each that holds `now`, in
    /// order (0 where nothing was counted): what a verify answers. The license is not looked
    /// up (the caller read it); a store answers from the counters alone, without reading a
    /// license or the periods before.
    fn used_now(
        &self,
        team: TeamId,
        license: LicenseId,
        meters: &[Meter],
        now: Timestamp,
    ) -> impl Future<Output = StoreResult<Vec<u64>>> + Send {
        async move {
            let counters = self.list_usage(team, license).await?;
            Ok(meters
                .iter()
                .map(|m| crate::model::used_in_period(&counters, m, now))
                .collect())
        }
    }

    /// Changes the license's counter of `meter` in the period holding `now` (adjusted, never
    /// below 0, or reset), with `journal`, in one atomic step; the counter after it. The
    /// license must exist.
    fn change_usage(
        &self,
        team: TeamId,
        license: LicenseId,
        meter: &Meter,
        change: UsageChange,
        now: Timestamp,
        journal: &Journal,
    ) -> impl Future<Output = StoreResult<UsageCounter>> + Send;

    /// Stores counters exactly as given (restoring an archive), each replacing the license's
    /// counter of its meter and period. The license must exist in the team; the counters must
    /// name it.
    fn restore_usage_counters(
        &self,
        team: TeamId,
        license: LicenseId,
        counters: &[UsageCounter],
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Forgets the kept answers of usage events (any team) kept before `before`; how many.
    fn prune_usage_events(
        &self,
        before: Timestamp,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
}

/// What counting `increment` on a counter at `used` comes to: counted (the counter after it)
/// or refused (the counter as it is), with the meter's standing.
pub fn count(increment: &UsageIncrement, used: u64) -> UsageOutcome {
    let (counted, after) =
        match verify::admit_usage(increment.meter.limit, used, increment.quantity) {
            Some(after) => (true, after),
            None => (false, used),
        };
    UsageOutcome {
        counted,
        state: increment.meter.state(after, increment.at),
        replayed: false,
    }
}

/// Whether an answer kept at `kept_at` still answers a retry at `now`.
pub fn still_kept(kept_at: Timestamp, now: Timestamp) -> bool {
    now.as_millis() - kept_at.as_millis() < USAGE_EVENT_KEPT_MS
}

/// Checks that `counters` all name `license` (restoring an archive).
pub fn check_counters_owner(license: LicenseId, counters: &[UsageCounter]) -> StoreResult<()> {
    if counters.iter().any(|c| c.license_id != license) {
        return Err(super::StoreError::backend(
            "a usage counter of another license was given to restore",
        ));
    }
    Ok(())
}
