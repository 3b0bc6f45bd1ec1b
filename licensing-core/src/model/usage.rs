//! (ext) Usage meters: what a license has used of a metered feature in a period.
//!
//! A meter ([`Meter`]) is a term of a policy or a license: a code, a limit per period (or none)
//! and a UTC calendar period. A counter is kept per license, meter code and period start, so a
//! new period starts at 0 without any job resetting anything: its counter does not exist yet.
//! [`crate::verify::admit_usage`] decides an increment; the store applies it atomically.

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ClientEvent, ClientEvents, License, Meter, MeterPeriod, Policy, WebhookEvent};
use crate::{LicenseId, Timestamp};

/// The most a single usage event may count.
pub const MAX_USAGE_QUANTITY: u64 = 1_000_000;

/// The most events one batch may report.
pub const MAX_USAGE_BATCH: usize = 1_000;

/// How long a usage event's answer is kept for retries of the same `eventId`, in milliseconds
/// (24 hours).
pub const USAGE_EVENT_KEPT_MS: i64 = 24 * 3_600_000;

/// How many periods before the current one a license's usage history shows.
pub const USAGE_HISTORY_PERIODS: usize = 12;

/// The share of a limit whose crossing fires `usage.threshold`, in percent.
pub const USAGE_THRESHOLD_PERCENT: u64 = 80;

impl MeterPeriod {
    /// The period that holds `at`: its start, and the start of the next one (`None` for a meter
    /// that never resets, whose one period starts at the epoch).
    pub fn bounds(self, at: Timestamp) -> (Timestamp, Option<Timestamp>) {
        let day = at.as_datetime().date_naive();
        let (start, next) = match self {
            Self::None => return (Timestamp::from_millis(0), None),
            Self::Day => (day, day.succ_opt()),
            Self::Week => {
                let monday =
                    day - chrono::Days::new(u64::from(day.weekday().num_days_from_monday()));
                (monday, monday.checked_add_days(chrono::Days::new(7)))
            }
            Self::Month => {
                let first = day.with_day(1).unwrap_or(day);
                (first, first.checked_add_months(chrono::Months::new(1)))
            }
            Self::Year => {
                let first = NaiveDate::from_ymd_opt(day.year(), 1, 1).unwrap_or(day);
                (first, first.checked_add_months(chrono::Months::new(12)))
            }
        };
        (midnight(start), next.map(midnight))
    }

    /// The start of the period before the one starting at `start` (`None` for `none`).
    pub fn previous(self, start: Timestamp) -> Option<Timestamp> {
        if self == Self::None {
            return None;
        }
        Some(self.bounds(Timestamp::from_millis(start.as_millis() - 1)).0)
    }
}

/// Midnight UTC of `day`.
fn midnight(day: NaiveDate) -> Timestamp {
    let at = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    Timestamp::from_datetime(Utc.from_utc_datetime(&at))
}

/// A license's count of one meter in one period, as stored (and in archives).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageCounter {
    /// The license.
    pub license_id: LicenseId,
    /// The meter's code.
    pub meter: String,
    /// When the period started (the epoch for a meter that never resets).
    pub period_start: Timestamp,
    /// What was used in it.
    pub used: u64,
}

/// A meter's standing in a period: what usage answers, and what verify and heartbeat carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MeterState {
    /// The meter's code.
    pub meter: String,
    /// Used in the period.
    pub used: u64,
    /// The period's limit; `null`: unlimited.
    pub limit: Option<u64>,
    /// What is left (0 at or past the limit); `null`: unlimited.
    pub remaining: Option<u64>,
    /// When the period started.
    pub period_start: Timestamp,
    /// When the next period starts and the count begins again at 0; `null`: never.
    pub resets_at: Option<Timestamp>,
}

impl Meter {
    /// The meter's standing with `used` in the period holding `at`.
    pub fn state(&self, used: u64, at: Timestamp) -> MeterState {
        let (period_start, resets_at) = self.period.bounds(at);
        MeterState {
            meter: self.code.clone(),
            used,
            limit: self.limit,
            remaining: self.limit.map(|l| l.saturating_sub(used)),
            period_start,
            resets_at,
        }
    }
}

/// A meter in verify's and heartbeat's `data.license.meters`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseMeter {
    /// The meter's code.
    pub code: String,
    /// Used in the current period.
    pub used: u64,
    /// The period's limit; `null`: unlimited.
    pub limit: Option<u64>,
    /// What is left; `null`: unlimited.
    pub remaining: Option<u64>,
    /// When the count begins again at 0; `null`: never.
    pub resets_at: Option<Timestamp>,
}

impl From<MeterState> for LicenseMeter {
    fn from(s: MeterState) -> Self {
        Self {
            code: s.meter,
            used: s.used,
            limit: s.limit,
            remaining: s.remaining,
            resets_at: s.resets_at,
        }
    }
}

/// The meters of `license` (its own) and of its `policy`: the license's meter of a code wins
/// over the policy's of the same code; the others are the policy's. In the license's order,
/// then the policy's.
pub fn effective_meters(own: &[Meter], policy: Option<&Policy>) -> Vec<Meter> {
    let mut all = own.to_vec();
    if let Some(policy) = policy {
        all.extend(
            policy
                .meters
                .iter()
                .filter(|m| !own.iter().any(|o| o.code == m.code))
                .cloned(),
        );
    }
    all
}

/// The counter of `meter` among `counters` (the license's, in any order) in the period holding
/// `at`: 0 when none was counted yet.
pub fn used_in_period(counters: &[UsageCounter], meter: &Meter, at: Timestamp) -> u64 {
    let (start, _) = meter.period.bounds(at);
    counters
        .iter()
        .find(|c| c.meter == meter.code && c.period_start == start)
        .map_or(0, |c| c.used)
}

/// A meter's history: its standing now and the used of up to [`USAGE_HISTORY_PERIODS`] periods
/// before, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MeterUsage {
    /// The meter's code.
    pub code: String,
    /// Used in the current period.
    pub used: u64,
    /// The period's limit; `null`: unlimited.
    pub limit: Option<u64>,
    /// What is left; `null`: unlimited.
    pub remaining: Option<u64>,
    /// The meter's period.
    pub period: MeterPeriod,
    /// When the current period started.
    pub period_start: Timestamp,
    /// When the count begins again at 0; `null`: never.
    pub resets_at: Option<Timestamp>,
    /// The periods before, newest first (periods without use show 0).
    pub history: Vec<PeriodUsage>,
}

/// What was used in one past period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PeriodUsage {
    /// When the period started.
    pub period_start: Timestamp,
    /// Used in it.
    pub used: u64,
}

/// Each of `meters` with its standing at `now` and its history, read from `counters` (the
/// license's).
pub fn meter_usage(meters: &[Meter], counters: &[UsageCounter], now: Timestamp) -> Vec<MeterUsage> {
    meters
        .iter()
        .map(|meter| {
            let state = meter.state(used_in_period(counters, meter, now), now);
            let mut history = Vec::new();
            let mut start = state.period_start;
            while history.len() < USAGE_HISTORY_PERIODS {
                let Some(before) = meter.period.previous(start) else {
                    break;
                };
                let used = counters
                    .iter()
                    .find(|c| c.meter == meter.code && c.period_start == before)
                    .map_or(0, |c| c.used);
                history.push(PeriodUsage {
                    period_start: before,
                    used,
                });
                start = before;
            }
            MeterUsage {
                code: meter.code.clone(),
                used: state.used,
                limit: state.limit,
                remaining: state.remaining,
                period: meter.period,
                period_start: state.period_start,
                resets_at: state.resets_at,
                history,
            }
        })
        .collect()
}

/// One increment to apply: `quantity` of `meter` at `at` (its period is the one holding `at`),
/// retried safely under `event_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageIncrement {
    /// The meter, with the limit that applies.
    pub meter: Meter,
    /// How much, 1 to [`MAX_USAGE_QUANTITY`].
    pub quantity: u64,
    /// When it was used (now, or earlier for usage reported late).
    pub at: Timestamp,
    /// The client's id of the event: a retry within [`USAGE_EVENT_KEPT_MS`] answers what the
    /// first answered and counts nothing.
    pub event_id: Option<String>,
}

/// What an increment came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageOutcome {
    /// Whether it was counted (`false`: the limit left no room, nothing counted).
    pub counted: bool,
    /// The meter's standing after it.
    pub state: MeterState,
    /// Whether this is the kept answer of an earlier request with the same `eventId`.
    #[serde(default)]
    pub replayed: bool,
}

/// How a staff member changes a counter of the current period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageChange {
    /// Adds `delta` (negative: takes away), never below 0.
    Adjust(i64),
    /// Sets it to 0.
    Reset,
}

impl UsageChange {
    /// The counter after the change of `used`.
    pub fn apply(self, used: u64) -> u64 {
        match self {
            Self::Adjust(delta) => used.saturating_add_signed(delta),
            Self::Reset => 0,
        }
    }
}

/// The events of a counted increment that took `meter` from `before` to `after` in the period
/// holding `at`, when `wants` asks for them: `usage.threshold` when it crossed 80% of the limit
/// (once per period, as a counter only grows within one), `usage.exhausted` when it reached the
/// limit. A store writes them in the atomic step that counts.
pub fn usage_events(
    wants: ClientEvents,
    license: &License,
    meter: &Meter,
    (before, after): (u64, u64),
    at: Timestamp,
    now: Timestamp,
) -> Vec<WebhookEvent> {
    let Some(limit) = meter.limit.filter(|l| *l > 0) else {
        return Vec::new();
    };
    let threshold = (limit * USAGE_THRESHOLD_PERCENT).div_ceil(100);
    let mut out = Vec::new();
    let state = meter.state(after, at);
    let event = |kind: ClientEvent| {
        kind.event(
            license.team_id,
            "license",
            license.id,
            usage_payload(license, &state),
            now,
        )
        .tied_to(&license.product_ids)
    };
    if before < threshold && after >= threshold && wants.wants(ClientEvent::UsageThreshold) {
        out.push(event(ClientEvent::UsageThreshold));
    }
    if before < limit && after >= limit && wants.wants(ClientEvent::UsageExhausted) {
        out.push(event(ClientEvent::UsageExhausted));
    }
    out
}

/// A usage event's payload: the license's id and key and the meter's standing.
fn usage_payload(license: &License, state: &MeterState) -> Value {
    json!({
        "licenseId": license.id,
        "licenseKey": license.license_key,
        "teamId": license.team_id,
        "meter": state,
    })
}

/// Checks a client's `eventId`: 1 to 255 visible ASCII characters.
pub fn usage_event_id(text: &str) -> Result<String, String> {
    if (1..=255).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(text.to_owned())
    } else {
        Err("must be 1 to 255 visible ASCII characters (no spaces)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn periods_are_utc_calendar_periods() {
        let t = at("2026-03-18T15:04:05Z"); // a Wednesday
        assert_eq!(
            MeterPeriod::Day.bounds(t),
            (at("2026-03-18T00:00:00Z"), Some(at("2026-03-19T00:00:00Z")))
        );
        assert_eq!(
            MeterPeriod::Week.bounds(t),
            (at("2026-03-16T00:00:00Z"), Some(at("2026-03-23T00:00:00Z")))
        );
        assert_eq!(
            MeterPeriod::Month.bounds(t),
            (at("2026-03-01T00:00:00Z"), Some(at("2026-04-01T00:00:00Z")))
        );
        assert_eq!(
            MeterPeriod::Year.bounds(t),
            (at("2026-01-01T00:00:00Z"), Some(at("2027-01-01T00:00:00Z")))
        );
        assert_eq!(
            MeterPeriod::None.bounds(t),
            (Timestamp::from_millis(0), None)
        );
        // A Monday starts its own week; December's next period is January's.
        let monday = at("2026-03-16T00:00:00Z");
        assert_eq!(MeterPeriod::Week.bounds(monday).0, monday);
        assert_eq!(
            MeterPeriod::Month.bounds(at("2026-12-31T23:59:59Z")).1,
            Some(at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            MeterPeriod::Month.previous(at("2026-01-01T00:00:00Z")),
            Some(at("2025-12-01T00:00:00Z"))
        );
        assert_eq!(MeterPeriod::None.previous(Timestamp::from_millis(0)), None);
    }

    #[test]
    fn a_license_meter_wins_over_its_policy_meter_of_the_same_code() {
        let meter = |code: &str, limit| Meter {
            code: code.into(),
            limit,
            period: MeterPeriod::Month,
        };
        let mut policy = Policy::new(
            crate::TeamId::new(),
            "Pro".into(),
            Timestamp::from_millis(0),
        );
        policy.meters = vec![meter("EXPORTS", Some(100)), meter("SYNCS", Some(5))];
        let own = [meter("EXPORTS", Some(1_000))];
        let all = effective_meters(&own, Some(&policy));
        assert_eq!(
            all,
            [meter("EXPORTS", Some(1_000)), meter("SYNCS", Some(5))]
        );
        assert_eq!(effective_meters(&own, None), own);
    }

    #[test]
    fn history_walks_back_twelve_periods_with_zeros_where_nothing_was_used() {
        let meter = Meter {
            code: "EXPORTS".into(),
            limit: Some(10),
            period: MeterPeriod::Month,
        };
        let license = LicenseId::new();
        let counter = |start: &str, used| UsageCounter {
            license_id: license,
            meter: "EXPORTS".into(),
            period_start: at(start),
            used,
        };
        let counters = [
            counter("2026-03-01T00:00:00Z", 4),
            counter("2026-01-01T00:00:00Z", 9),
        ];
        let usage = meter_usage(&[meter], &counters, at("2026-03-18T10:00:00Z"));
        let u = &usage[0];
        assert_eq!((u.used, u.remaining), (4, Some(6)));
        assert_eq!(u.history.len(), USAGE_HISTORY_PERIODS);
        assert_eq!(u.history[0].period_start, at("2026-02-01T00:00:00Z"));
        assert_eq!((u.history[0].used, u.history[1].used), (0, 9));
    }

    #[test]
    fn threshold_and_exhaustion_fire_when_crossed() {
        let meter = Meter {
            code: "EXPORTS".into(),
            limit: Some(10),
            period: MeterPeriod::Day,
        };
        let mut license = crate::store::testing::license(crate::TeamId::new(), Timestamp::now());
        license.meters = vec![meter.clone()];
        let now = Timestamp::now();
        let all = ClientEvents::ALL;
        let types = |before, after| -> Vec<String> {
            usage_events(all, &license, &meter, (before, after), now, now)
                .into_iter()
                .map(|e| e.event_type)
                .collect()
        };
        assert!(types(0, 7).is_empty());
        assert_eq!(types(7, 8), ["usage.threshold"]);
        assert_eq!(types(8, 9), Vec::<String>::new());
        assert_eq!(types(9, 10), ["usage.exhausted"]);
        assert_eq!(types(0, 10), ["usage.threshold", "usage.exhausted"]);
    }

    #[test]
    fn event_ids_are_visible_ascii() {
        assert!(usage_event_id("export-2026-03-18T10:00:00Z#1").is_ok());
        for bad in ["", "with space", "é", &"x".repeat(256)] {
            assert!(usage_event_id(bad).is_err(), "{bad:?}");
        }
    }
}
