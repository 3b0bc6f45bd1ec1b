//! License expiration as pure functions of `now`.
//!
//! - `NEVER`: no date, never expires.
//! - `DATE`: expires at `expirationDate`.
//! - `DURATION` + `CREATION`: `expirationDate = createdAt + expirationDays`.
//! - `DURATION` + `ACTIVATION`: no date until the first successful client request, then
//!   `expirationDate = that moment + expirationDays`. Until then it is not expired.

use crate::Timestamp;
use crate::model::{ExpirationStart, ExpirationType, License};

/// The expiration members of a license, as one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiration {
    /// Type.
    pub kind: ExpirationType,
    /// Start of a duration.
    pub start: ExpirationStart,
    /// Date (for `DATE`: the given date; for `DURATION`: derived).
    pub date: Option<Timestamp>,
    /// Days (for `DURATION`).
    pub days: Option<u32>,
}

impl Expiration {
    /// The expiration members of `license`.
    pub fn of(license: &License) -> Self {
        Self {
            kind: license.expiration_type,
            start: license.expiration_start,
            date: license.expiration_date,
            days: license.expiration_days,
        }
    }

    /// Whether a license with these members is expired at `now`. A `DURATION` + `ACTIVATION`
    /// license that was never used is not.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        match self.kind {
            ExpirationType::Never => false,
            ExpirationType::Date | ExpirationType::Duration => {
                self.date.is_some_and(|date| now >= date)
            }
        }
    }

    /// The date an `ACTIVATION` license gets on its first successful request at `now`, or `None`
    /// when there is no clock to start (other kinds, or already started).
    pub fn activation_date(&self, now: Timestamp) -> Option<Timestamp> {
        match (self.kind, self.start, self.date, self.days) {
            (ExpirationType::Duration, ExpirationStart::Activation, None, Some(days)) => {
                Some(now.plus_days(days))
            }
            _ => None,
        }
    }

    /// The latest moment an offline license file issued at `issued` may be valid (protocol.md
    /// section 6): the expiration date, or for a `DURATION` + `ACTIVATION` license whose clock
    /// has not started, `issued + expirationDays` (as if it started when the file was issued);
    /// `None` for a license that never expires.
    pub fn end_for_file(&self, issued: Timestamp) -> Option<Timestamp> {
        match self.kind {
            ExpirationType::Never => None,
            ExpirationType::Date => self.date,
            ExpirationType::Duration => self
                .date
                .or_else(|| self.days.map(|days| issued.plus_days(days))),
        }
    }

    /// When the clock of an activated `DURATION` + `ACTIVATION` license started.
    fn activated_at(&self) -> Option<Timestamp> {
        match (self.kind, self.start, self.date, self.days) {
            (ExpirationType::Duration, ExpirationStart::Activation, Some(date), Some(days)) => {
                Some(date.plus(-chrono::TimeDelta::days(i64::from(days))))
            }
            _ => None,
        }
    }
}

/// `expirationDate` of a new license created at `now`. For `DATE`, `date` is the given date.
pub fn date_on_create(
    kind: ExpirationType,
    start: ExpirationStart,
    date: Option<Timestamp>,
    days: Option<u32>,
    now: Timestamp,
) -> Option<Timestamp> {
    match (kind, start) {
        (ExpirationType::Never, _) => None,
        (ExpirationType::Date, _) => date,
        (ExpirationType::Duration, ExpirationStart::Creation) => days.map(|d| now.plus_days(d)),
        (ExpirationType::Duration, ExpirationStart::Activation) => None,
    }
}

/// `expirationDate` after an update that sets the members to `new` (with `new.date` the date given
/// in the update or kept, meaningful for `DATE` only). A `CREATION` duration counts from
/// `created_at`; an `ACTIVATION` duration keeps its start if it had started, else waits for the
/// first request.
pub fn date_on_update(
    old: &Expiration,
    new: &Expiration,
    created_at: Timestamp,
) -> Option<Timestamp> {
    match (new.kind, new.start) {
        (ExpirationType::Never, _) => None,
        (ExpirationType::Date, _) => new.date,
        (ExpirationType::Duration, ExpirationStart::Creation) => {
            new.days.map(|d| created_at.plus_days(d))
        }
        (ExpirationType::Duration, ExpirationStart::Activation) => old
            .activated_at()
            .zip(new.days)
            .map(|(started, d)| started.plus_days(d)),
    }
}

impl License {
    /// Whether the license is expired at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        Expiration::of(self).is_expired(now)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    fn exp(
        kind: ExpirationType,
        start: ExpirationStart,
        date: Option<Timestamp>,
        days: Option<u32>,
    ) -> Expiration {
        Expiration {
            kind,
            start,
            date,
            days,
        }
    }

    use ExpirationStart::{Activation, Creation};
    use ExpirationType::{Date, Duration, Never};

    #[test]
    fn never_expires() {
        let e = exp(Never, Creation, None, None);
        assert!(!e.is_expired(Timestamp::from_millis(i64::MAX / 2)));
    }

    #[test]
    fn date_expires_at_the_date_exactly() {
        let d = at("2026-12-01T00:00:00Z");
        let e = exp(Date, Creation, Some(d), None);
        assert!(!e.is_expired(at("2026-11-30T23:59:59.999Z")));
        assert!(e.is_expired(d));
    }

    #[test]
    fn creation_duration_counts_from_creation() {
        let now = at("2026-11-22T10:00:00Z");
        let date = date_on_create(Duration, Creation, None, Some(30), now);
        assert_eq!(date, Some(at("2026-12-22T10:00:00Z")));
    }

    #[test]
    fn activation_duration_waits_for_first_use() {
        let now = at("2026-11-22T10:00:00Z");
        assert_eq!(
            date_on_create(Duration, Activation, None, Some(30), now),
            None
        );
        let e = exp(Duration, Activation, None, Some(30));
        assert!(!e.is_expired(at("2099-01-01T00:00:00Z")));
        assert_eq!(e.activation_date(now), Some(at("2026-12-22T10:00:00Z")));
        let started = exp(
            Duration,
            Activation,
            Some(at("2026-12-22T10:00:00Z")),
            Some(30),
        );
        assert_eq!(started.activation_date(now), None, "the clock starts once");
        assert_eq!(
            exp(Duration, Creation, None, Some(3)).activation_date(now),
            None
        );
    }

    #[test]
    fn update_recomputes_the_date() {
        let created = at("2026-01-01T00:00:00Z");
        let old = exp(
            Duration,
            Creation,
            Some(at("2026-01-31T00:00:00Z")),
            Some(30),
        );
        let longer = exp(Duration, Creation, None, Some(60));
        assert_eq!(
            date_on_update(&old, &longer, created),
            Some(at("2026-03-02T00:00:00Z"))
        );

        let to_date = exp(Date, Creation, Some(at("2027-01-01T00:00:00Z")), None);
        assert_eq!(date_on_update(&old, &to_date, created), to_date.date);
        assert_eq!(
            date_on_update(&old, &exp(Never, Creation, None, None), created),
            None
        );

        // An activated ACTIVATION license keeps its start when the days change.
        let activated = exp(
            Duration,
            Activation,
            Some(at("2026-06-11T00:00:00Z")),
            Some(10),
        );
        let more_days = exp(Duration, Activation, None, Some(20));
        assert_eq!(
            date_on_update(&activated, &more_days, created),
            Some(at("2026-06-21T00:00:00Z"))
        );
        // One that has not started stays unstarted; switching to ACTIVATION starts fresh.
        let unstarted = exp(Duration, Activation, None, Some(10));
        assert_eq!(date_on_update(&unstarted, &more_days, created), None);
        assert_eq!(date_on_update(&old, &more_days, created), None);
    }

    fn expiration_strategy() -> impl Strategy<Value = Expiration> {
        let kind = prop_oneof![Just(Never), Just(Date), Just(Duration)];
        let start = prop_oneof![Just(Creation), Just(Activation)];
        let date = prop::option::of((0i64..4_000_000_000_000).prop_map(Timestamp::from_millis));
        let days = prop::option::of(1u32..100_000);
        (kind, start, date, days).prop_map(|(kind, start, date, days)| Expiration {
            kind,
            start,
            date,
            days,
        })
    }

    proptest! {
        #[test]
        fn expiry_is_monotonic_in_now(
            e in expiration_strategy(),
            t in 0i64..4_000_000_000_000,
            later in 0i64..1_000_000_000_000,
        ) {
            let now = Timestamp::from_millis(t);
            if e.is_expired(now) {
                prop_assert!(e.is_expired(Timestamp::from_millis(t + later)));
            }
        }
    }
}
