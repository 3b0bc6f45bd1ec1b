//! Timestamps as the API writes them: RFC 3339, UTC, millisecond precision.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant in UTC with millisecond precision.
///
/// Serialized as `2026-11-22T10:00:00.000Z`. Parsing accepts any RFC 3339 date-time (any offset,
/// any fraction) and normalizes it to UTC milliseconds, so a value survives a store roundtrip
/// unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Wraps a `chrono` instant, dropping precision below one millisecond.
    pub fn from_datetime(at: DateTime<Utc>) -> Self {
        Self::from_millis(at.timestamp_millis())
    }

    /// The instant `millis` milliseconds after the Unix epoch (saturating at the representable range).
    pub fn from_millis(millis: i64) -> Self {
        let at = DateTime::from_timestamp_millis(millis).unwrap_or(if millis < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        });
        Self(at)
    }

    /// The current time. Only the edges of the system (handlers, CLI) should call this; core logic
    /// takes `now` as an argument.
    pub fn now() -> Self {
        Self::from_datetime(Utc::now())
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(self) -> i64 {
        self.0.timestamp_millis()
    }

    /// The wrapped `chrono` value.
    pub fn as_datetime(self) -> DateTime<Utc> {
        self.0
    }

    /// This instant plus `days` days (saturating).
    pub fn plus_days(self, days: u32) -> Self {
        self.plus(TimeDelta::days(i64::from(days)))
    }

    /// This instant plus `minutes` minutes (saturating).
    pub fn plus_minutes(self, minutes: u32) -> Self {
        self.plus(TimeDelta::minutes(i64::from(minutes)))
    }

    /// This instant plus `seconds` seconds (saturating).
    pub fn plus_seconds(self, seconds: u32) -> Self {
        self.plus(TimeDelta::seconds(i64::from(seconds)))
    }

    /// This instant plus a signed duration (saturating).
    pub fn plus(self, delta: TimeDelta) -> Self {
        Self::from_millis(self.as_millis().saturating_add(delta.num_milliseconds()))
    }

    /// Parses an RFC 3339 date-time.
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        if let Some(at) = Self::parse_canonical(text) {
            return Ok(at);
        }
        DateTime::parse_from_rfc3339(text)
            .map(|at| Self::from_datetime(at.with_timezone(&Utc)))
            .map_err(|_| TimestampError)
    }
}

impl Timestamp {
    /// The form this type writes, `YYYY-MM-DDTHH:MM:SS.mmmZ`, read without the general RFC 3339
    /// parser: every stored record holds several, so this is on the hot path. `None` for anything
    /// else (which the general parser then reads, or refuses).
    fn parse_canonical(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != 24
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
            || b[19] != b'.'
            || b[23] != b'Z'
        {
            return None;
        }
        let number = |from: usize, to: usize| {
            b[from..to].iter().try_fold(0u32, |n, &c| {
                c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
            })
        };
        let year = i32::try_from(number(0, 4)?).ok()?;
        let date = chrono::NaiveDate::from_ymd_opt(year, number(5, 7)?, number(8, 10)?)?;
        // A leap second (`:60`) takes the general parser.
        let time = chrono::NaiveTime::from_hms_milli_opt(
            number(11, 13)?,
            number(14, 16)?,
            number(17, 19).filter(|&s| s < 60)?,
            number(20, 23)?,
        )?;
        Some(Self(date.and_time(time).and_utc()))
    }
}

/// The text is not an RFC 3339 date-time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be an ISO 8601 date-time with a time zone, such as 2026-11-22T10:00:00.000Z")]
pub struct TimestampError;

impl fmt::Display for Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, written directly for years 0 to 9999 (the general formatter,
    /// which this matches, costs several times more, and every stored record holds several).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use chrono::{Datelike, Timelike};
        let at = self.0;
        if !(0..=9999).contains(&at.year()) {
            return f.write_str(&at.to_rfc3339_opts(SecondsFormat::Millis, true));
        }
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.timestamp_subsec_millis().min(999)
        )
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Self {
        Self::from_datetime(at)
    }
}

/// In text formats (JSON) the canonical string; in binary ones (the sled store's records)
/// milliseconds since the epoch, as an integer.
impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_i64(self.as_millis())
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Timestamp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an ISO 8601 date-time string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Timestamp, E> {
                Timestamp::parse(v).map_err(E::custom)
            }
        }
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(Visitor)
        } else {
            i64::deserialize(deserializer).map(Timestamp::from_millis)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The direct writer and reader agree with chrono's RFC 3339 ones, over years -300,000
        /// to 300,000 and over the years this type writes directly.
        #[test]
        fn canonical_form_matches_the_general_one(
            millis in prop_oneof![
                -9_500_000_000_000_000i64..9_500_000_000_000_000,
                -62_167_219_200_000i64..253_402_300_799_999,
            ],
        ) {
            let at = Timestamp::from_millis(millis);
            let text = at.to_string();
            prop_assert_eq!(&text, &at.0.to_rfc3339_opts(SecondsFormat::Millis, true));
            // chrono reads back only four-digit years; within them both readers give `at`.
            let general = DateTime::parse_from_rfc3339(&text)
                .map(|d| Timestamp::from_datetime(d.with_timezone(&Utc)))
                .ok();
            prop_assert_eq!(Timestamp::parse(&text).ok(), general);
            if (0..=9999).contains(&chrono::Datelike::year(&at.0)) {
                prop_assert_eq!(Timestamp::parse(&text), Ok(at));
            }
        }

        /// Any 24-byte text: the fast reader accepts exactly what chrono accepts, with the same value.
        #[test]
        fn canonical_reader_refuses_what_chrono_refuses(
            text in "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z",
        ) {
            let general = DateTime::parse_from_rfc3339(&text)
                .map(|d| Timestamp::from_datetime(d.with_timezone(&Utc)))
                .ok();
            prop_assert_eq!(Timestamp::parse(&text).ok(), general);
        }
    }

    #[test]
    fn leap_seconds_and_other_forms_take_the_general_parser() {
        assert_eq!(
            Timestamp::parse("2016-12-31T23:59:60.000Z").map(|t| t.as_millis()),
            DateTime::parse_from_rfc3339("2016-12-31T23:59:60.000Z")
                .map(|d| d.timestamp_millis())
                .map_err(|_| TimestampError)
        );
        assert!(Timestamp::parse("2026-02-30T00:00:00.000Z").is_err());
        assert!(Timestamp::parse("2026-11-22T10:00:00.000+00:00").is_ok());
        assert!(Timestamp::parse("2026-11-22T10:00:00.000").is_err());
    }

    #[test]
    fn serializes_as_utc_with_milliseconds() {
        let at = Timestamp::parse("2026-11-22T12:00:00.123456+02:00").unwrap();
        assert_eq!(at.to_string(), "2026-11-22T10:00:00.123Z");
        assert_eq!(
            serde_json::to_string(&at).unwrap(),
            "\"2026-11-22T10:00:00.123Z\""
        );
    }

    #[test]
    fn whole_seconds_still_carry_three_fraction_digits() {
        let at = Timestamp::from_millis(0);
        assert_eq!(at.to_string(), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn roundtrips_through_json() {
        let at = Timestamp::from_millis(1_795_000_000_123);
        let json = serde_json::to_string(&at).unwrap();
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), at);
    }

    #[test]
    fn rejects_dates_without_time_or_zone() {
        for bad in ["2026-11-22", "2026-11-22T10:00:00", "yesterday", ""] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn adding_days_and_minutes() {
        let at = Timestamp::parse("2026-01-31T00:00:00Z").unwrap();
        assert_eq!(at.plus_days(1).to_string(), "2026-02-01T00:00:00.000Z");
        assert_eq!(at.plus_minutes(90).to_string(), "2026-01-31T01:30:00.000Z");
    }
}
