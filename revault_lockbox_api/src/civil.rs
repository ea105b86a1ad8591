//! Unix times as UTC calendar dates: the one copy of the civil-date
//! algorithm, for every place that shows a time to people (an identity
//! file's `# created:` line, a listing's mtimes).

/// A Unix time split into its UTC calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    /// The proleptic Gregorian year (negative before year 0).
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59.
    pub second: u32,
}

impl UtcTime {
    /// The UTC date and time `secs` seconds after 1970-01-01T00:00:00Z
    /// (before it, for negative `secs`).
    pub fn from_unix(secs: i64) -> UtcTime {
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400) as u32;
        UtcTime { year, month, day, hour: rem / 3600, minute: rem / 60 % 60, second: rem % 60 }
    }
}

/// ISO 8601 in UTC: `2026-12-02T05:58:18Z`.
impl std::fmt::Display for UtcTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UtcTime { year, month, day, hour, minute, second } = self;
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
    }
}

/// The proleptic Gregorian `(year, month, day)` of a day count since
/// 1970-01-01 (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// UTC nanoseconds since 1970 of `year-month-day hour:minute` UTC: the
/// inverse of [`civil_from_days`] (Hinnant's `days_from_civil`), for
/// tests that choose the times of sessions.
#[cfg(test)]
pub(crate) fn utc_ns(year: i64, month: u32, day: u32, hour: i64, minute: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((i64::from(month) + 9) % 12) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    ((days * 24 + hour) * 60 + minute) * 60_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let t = UtcTime::from_unix(1_798_761_599);
        assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second), (2026, 12, 31, 23, 59, 59));
        let t = UtcTime::from_unix(-1);
        assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second), (1969, 12, 31, 23, 59, 59));
        assert_eq!(UtcTime::from_unix(1_798_761_599).to_string(), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn utc_ns_inverts_civil_from_days() {
        // Nanoseconds in an i64 reach from 1677 to 2262.
        for days in [-106_000, -36_525, -1, 0, 1, 11_016, 20_819, 21_915, 106_000] {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(utc_ns(year, month, day, 0, 0), days * 86_400_000_000_000, "{year}-{month}-{day}");
        }
    }
}
