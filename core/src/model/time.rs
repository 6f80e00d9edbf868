//! [`Timestamp`]: UTC instants with microsecond precision.

use std::fmt;

use chrono::{DateTime, Datelike, Timelike, Utc};

/// A UTC instant, stored as microseconds since the Unix epoch and written as RFC 3339 with
/// exactly six fractional digits: `2026-11-22T10:04:05.123456Z`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        Self(Utc::now().timestamp_micros())
    }

    /// This time, or one microsecond after `previous` when this time is not past it: what
    /// `updated_at` becomes on an update (`now.not_before_next(stored.updated_at)`), so that it
    /// strictly increases even when the clock stands still or steps back.
    pub fn not_before_next(self, previous: Timestamp) -> Self {
        self.max(Self(previous.0.saturating_add(1)))
    }

    /// The time `duration` after this one (saturating).
    pub fn plus(self, duration: std::time::Duration) -> Self {
        let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(micros))
    }

    /// From microseconds since the Unix epoch.
    pub fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// Microseconds since the Unix epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Fields written directly: a format string is parsed on every call, which showed in
        // profiles of a GET (two timestamps per database).
        match DateTime::<Utc>::from_timestamp_micros(self.0) {
            Some(at) if (0..=9999).contains(&at.year()) => write!(
                f,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
                at.year(),
                at.month(),
                at.day(),
                at.hour(),
                at.minute(),
                at.second(),
                self.0.rem_euclid(1_000_000)
            ),
            Some(at) => write!(f, "{}", at.format("%Y-%m-%dT%H:%M:%S%.6fZ")),
            None => write!(f, "invalid timestamp {}", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_microseconds() {
        let at = Timestamp::from_micros(1_795_341_845_123_456);
        assert_eq!(at.to_string(), "2026-11-22T10:04:05.123456Z");
        assert_eq!(
            Timestamp::from_micros(0).to_string(),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            Timestamp::from_micros(-1).to_string(),
            "1969-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            Timestamp::from_micros(253_402_300_799_999_999).to_string(),
            "9999-12-31T23:59:59.999999Z"
        );
    }

    #[test]
    fn not_before_next_strictly_increases() {
        let far = Timestamp::from_micros(i64::MAX / 2);
        assert_eq!(
            Timestamp::now().not_before_next(far).as_micros(),
            far.as_micros() + 1
        );
        let past = Timestamp::from_micros(0);
        let now = Timestamp::now();
        assert_eq!(now.not_before_next(past), now);
    }
}
