//! Dates as people write them and read them: the one parser for every flag
//! that takes a time (`create --newer DATE`, `--at TIME`) and the one
//! formatter for listings (`list -l`, `--utc`, `--full-time`).
//!
//! Times without a zone are local (`TZ`, else `/etc/localtime`), as GNU
//! tar's are; jiff reads the system's time zone database, so daylight
//! saving and historical offsets come out right. Accepted, GNU tar's
//! `--newer` forms that are cheap to support:
//!
//! - ISO 8601 / RFC 3339: `2024-05-01`, `2024-05-01 13:04`,
//!   `2024-05-01T13:04:05.5`, with an optional zone: `Z`, `+02:00`,
//!   ` UTC`, ` GMT` or `[Europe/Paris]`;
//! - `@SECONDS` since the Unix epoch, with an optional fraction;
//! - `now`, `today` (both the current time, as in GNU tar), `yesterday`,
//!   and `N UNIT ago` (`3 days ago`, `2 weeks ago`, `1 hour ago`);
//! - a file name starting with `/` or `.`: that file's modification time.
//!
//! Durations (`compact --keep-within`) are borg's and restic's short form:
//! one or more `NUMBER UNIT` with `s`, `min`, `h`, `d`, `w`, or `y` (365
//! days): `7d`, `12h`, `1w2d`. No months: restic's `m` is one and systemd's
//! a minute, so `m` is refused rather than guessed.

use std::fmt;
use std::str::FromStr;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Zoned};

/// What the parser accepts, for its error message.
const FORMS: &str = "expected YYYY-MM-DD[ HH:MM[:SS]][ZONE], @SECONDS, now, yesterday, \
                     'N days ago', or a file name starting with / or .";

/// One instant: what a date flag resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Moment(Timestamp);

impl Moment {
    /// The instant `secs` seconds and `nanos` nanoseconds after the Unix
    /// epoch, or `None` past jiff's range (years -9999 to 9999).
    pub fn from_unix(secs: i64, nanos: u32) -> Option<Moment> {
        Timestamp::new(secs, i32::try_from(nanos).ok()?).ok().map(Moment)
    }

    /// Nanoseconds since the Unix epoch (negative before it).
    pub fn unix_nanos(self) -> i128 {
        self.0.as_nanosecond()
    }
}

/// A date flag's text that names no time: says which text and what is
/// accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateError(String);

impl fmt::Display for DateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DateError {}

impl FromStr for Moment {
    type Err = DateError;

    /// Parses `text` in the system's time zone at the current time, so a
    /// clap flag can be typed `Moment`.
    fn from_str(text: &str) -> Result<Moment, DateError> {
        parse_at(text, &Zoned::now())
    }
}

/// Parses `text` as of `now` (whose zone is the local one).
pub fn parse_at(text: &str, now: &Zoned) -> Result<Moment, DateError> {
    let bad = |why: &str| DateError(format!("invalid date '{text}': {why}"));
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad(FORMS));
    }
    if trimmed.starts_with('/') || trimmed.starts_with('.') {
        let modified = std::fs::metadata(trimmed).and_then(|m| m.modified());
        let modified = modified.map_err(|e| bad(&format!("cannot read the file's date: {e}")))?;
        return Timestamp::try_from(modified).map(Moment).map_err(|e| bad(&e.to_string()));
    }
    if let Some(seconds) = trimmed.strip_prefix('@') {
        return unix_seconds(seconds).ok_or_else(|| bad("expected @SECONDS, such as @1700000000 or @-1.5"));
    }
    if let Some(moment) = relative(&trimmed.to_ascii_lowercase(), now) {
        return moment.ok_or_else(|| bad("out of range"));
    }
    calendar(trimmed, now.time_zone()).ok_or_else(|| bad(FORMS))
}

/// `SECONDS[.FRACTION]`, with an optional sign.
fn unix_seconds(text: &str) -> Option<Moment> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) || fraction.len() > 9 {
        return None;
    }
    let nanos: i128 = format!("{fraction:0<9}").parse().ok()?;
    let total = whole.parse::<i128>().ok()? * 1_000_000_000 + nanos;
    Timestamp::from_nanosecond(if negative { -total } else { total }).ok().map(Moment)
}

/// `now`, `today`, `yesterday`, `N UNIT ago`: `None` if `text` is none of
/// them, `Some(None)` if it is but falls out of range.
fn relative(text: &str, now: &Zoned) -> Option<Option<Moment>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let back = match words.as_slice() {
        ["now"] | ["today"] => Span::new(),
        ["yesterday"] => Span::new().days(1),
        [count, unit, "ago"] => span_of(count.parse().ok()?, unit)?,
        [unit, "ago"] => span_of(1, unit)?,
        _ => return None,
    };
    Some(now.checked_sub(back).ok().map(|z| Moment(z.timestamp())))
}

/// `count` of a unit named as GNU tar names them (singular or plural).
fn span_of(count: i64, unit: &str) -> Option<Span> {
    let unit = unit.strip_suffix('s').unwrap_or(unit);
    let span = Span::new();
    match unit {
        "sec" | "second" => span.try_seconds(count),
        "min" | "minute" => span.try_minutes(count),
        "hour" => span.try_hours(count),
        "day" => span.try_days(count),
        "week" => span.try_weeks(count),
        "fortnight" => span.try_weeks(count.checked_mul(2)?),
        "month" => span.try_months(count),
        "year" => span.try_years(count),
        _ => return None,
    }
    .ok()
}

/// An ISO 8601 date, date and time, or either with a zone; one without a
/// zone is in `local`.
fn calendar(text: &str, local: &TimeZone) -> Option<Moment> {
    let lower = text.to_ascii_lowercase();
    for zone in [" utc", " gmt", " z"] {
        if lower.ends_with(zone) {
            return civil(text[..text.len() - zone.len()].trim_end(), &TimeZone::UTC);
        }
    }
    if text.contains('[') {
        return text.parse::<Zoned>().ok().map(|z| Moment(z.timestamp()));
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Some(Moment(ts));
    }
    civil(text, local)
}

/// A date or date and time with no zone, read in `zone` (the earlier of
/// two readings in a repeated hour, as GNU date takes it).
fn civil(text: &str, zone: &TimeZone) -> Option<Moment> {
    let datetime = match text.parse::<DateTime>() {
        Ok(dt) => dt,
        Err(_) => text.parse::<Date>().ok()?.to_datetime(jiff::civil::Time::midnight()),
    };
    if has_offset(text) {
        return None;
    }
    datetime.to_zoned(zone.clone()).ok().map(|z| Moment(z.timestamp()))
}

/// Whether a date-and-time text carries an offset, which jiff's civil
/// parser would otherwise drop without a word.
fn has_offset(text: &str) -> bool {
    match text.find(['T', 't', ' ']) {
        Some(at) => text[at..].contains(['+', '-', 'Z', 'z']),
        None => false,
    }
}

/// Units of [`parse_duration`], in seconds.
const DURATION_UNITS: [(&str, u64); 6] =
    [("s", 1), ("min", 60), ("h", 3600), ("d", 86_400), ("w", 7 * 86_400), ("y", 365 * 86_400)];

/// A length of time such as `7d`, `12h` or `1w2d`, in seconds (see the
/// module's doc).
pub fn parse_duration(text: &str) -> Result<u64, DateError> {
    let bad = || {
        DateError(format!("invalid duration '{text}': expected NUMBER UNIT, such as 7d, 12h, 2w or 1w2d (units s, min, h, d, w, y)"))
    };
    let mut rest = text.trim();
    let mut total: u64 = 0;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let count: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..].find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let (_, secs) = DURATION_UNITS.iter().find(|(name, _)| *name == unit).ok_or_else(bad)?;
        total = count.checked_mul(*secs).and_then(|s| total.checked_add(s)).ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    Ok(total)
}

/// The system's time zone (TZ, else /etc/localtime) as the library's
/// [`Zone`](revault_lockbox_api::update::Zone): what calendar retention
/// counts days, weeks, months and years in, as `log` shows times.
pub fn local_zone() -> revault_lockbox_api::update::Zone {
    let zone = TimeZone::system();
    revault_lockbox_api::update::Zone::from_offsets(move |secs| match Timestamp::from_second(secs) {
        Ok(at) => i64::from(zone.to_offset(at).seconds()),
        Err(_) => 0,
    })
}

/// How a listing shows times: local (tar's default) or UTC, to the minute
/// (tar's `-tv`) or as ISO 8601 to the second with the offset.
pub struct Clock {
    zone: TimeZone,
    full: bool,
}

impl Clock {
    /// The clock `--utc` and `--full-time` ask for.
    pub fn new(utc: bool, full: bool) -> Clock {
        Clock { zone: if utc { TimeZone::UTC } else { TimeZone::system() }, full }
    }

    /// `secs` since the epoch as `YYYY-MM-DD HH:MM`, or with `full`
    /// `YYYY-MM-DDTHH:MM:SS±HH:MM`; `@SECS` past the years jiff covers.
    pub fn show(&self, secs: i64) -> String {
        let Some(Moment(ts)) = Moment::from_unix(secs, 0) else {
            return format!("@{secs}");
        };
        let zoned = ts.to_zoned(self.zone.clone());
        let format = if self.full { "%Y-%m-%dT%H:%M:%S%:z" } else { "%Y-%m-%d %H:%M" };
        zoned.strftime(format).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock at 2024-03-31 12:00 in Paris (CEST since 02:00 that day).
    fn paris_noon() -> Zoned {
        "2024-03-31T12:00:00+02:00[Europe/Paris]".parse().unwrap()
    }

    fn at(text: &str) -> i64 {
        let nanos = parse_at(text, &paris_noon()).unwrap_or_else(|e| panic!("{e}")).unix_nanos();
        i64::try_from(nanos.div_euclid(1_000_000_000)).unwrap()
    }

    #[test]
    fn iso_dates_without_a_zone_are_local() {
        assert_eq!(at("2024-01-02"), 1_704_150_000, "midnight CET is 23:00 UTC");
        assert_eq!(at("2024-01-02 13:04"), 1_704_197_040);
        assert_eq!(at("2024-01-02T13:04:05"), 1_704_197_045);
        assert_eq!(at("2024-07-02 13:04:05"), 1_719_918_245, "summer: CEST, +02:00");
    }

    #[test]
    fn zones_and_offsets_are_honoured() {
        assert_eq!(at("2024-01-02T13:04:05Z"), 1_704_200_645);
        assert_eq!(at("2024-01-02 13:04:05 UTC"), 1_704_200_645);
        assert_eq!(at("2024-01-02 13:04 gmt"), 1_704_200_640);
        assert_eq!(at("2024-01-02 UTC"), 1_704_153_600);
        assert_eq!(at("2024-01-02T13:04:05+05:30"), 1_704_180_845);
        assert_eq!(at("2024-01-02T13:04:05[America/New_York]"), 1_704_218_645);
    }

    #[test]
    fn epoch_seconds_and_fractions() {
        assert_eq!(at("@0"), 0);
        assert_eq!(at("@1700000000"), 1_700_000_000);
        let half = parse_at("@-1.5", &paris_noon()).unwrap();
        assert_eq!(half.unix_nanos(), -1_500_000_000);
        assert_eq!(at("@-1.5"), -2, "whole seconds round down");
    }

    #[test]
    fn relative_words_count_back_from_now() {
        let noon = paris_noon().timestamp().as_second();
        assert_eq!(at("now"), noon);
        assert_eq!(at("Today"), noon);
        assert_eq!(at("yesterday"), noon - 23 * 3600, "the clocks went forward overnight");
        assert_eq!(at("3 days ago"), noon - 3 * 86_400 + 3600);
        assert_eq!(at("1 hour ago"), noon - 3600);
        assert_eq!(at("week ago"), noon - 7 * 86_400 + 3600);
        assert_eq!(at("2 fortnights ago"), noon - 28 * 86_400 + 3600);
    }

    #[test]
    fn a_file_name_gives_its_modification_time() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stamp");
        std::fs::write(&file, b"").unwrap();
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        let expected = Timestamp::try_from(mtime).unwrap().as_second();
        assert_eq!(at(file.to_str().unwrap()), expected);
        let missing = parse_at("./no-such-file", &paris_noon()).unwrap_err().to_string();
        assert!(missing.starts_with("invalid date './no-such-file': cannot read"), "{missing}");
    }

    #[test]
    fn bad_text_is_named_in_the_error() {
        for text in ["", "tomorrowish", "2024-13-01", "2024-01-02 25:00", "@12x", "@", "5 parsecs ago"] {
            let err = parse_at(text, &paris_noon()).unwrap_err().to_string();
            assert!(err.starts_with(&format!("invalid date '{text}': expected")), "{err}");
        }
    }

    #[test]
    fn durations_in_borg_and_restic_short_form() {
        assert_eq!(parse_duration("7d"), Ok(7 * 86_400));
        assert_eq!(parse_duration("12h"), Ok(12 * 3600));
        assert_eq!(parse_duration("1w2d"), Ok(9 * 86_400));
        assert_eq!(parse_duration("90min"), Ok(5400));
        assert_eq!(parse_duration("30s"), Ok(30));
        assert_eq!(parse_duration("1y"), Ok(365 * 86_400));
        for text in ["", "7", "d", "7m", "7 days", "-1d", "1.5h", "99999999999999999999d", "3000000000000y"] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("invalid duration '{text}': expected")), "{err}");
        }
    }

    #[test]
    fn listings_show_local_or_utc_minutes_or_full_iso() {
        let paris = Clock { zone: paris_noon().time_zone().clone(), full: false };
        assert_eq!(paris.show(1_704_200_645), "2024-01-02 14:04");
        let full = Clock { zone: TimeZone::UTC, full: true };
        assert_eq!(full.show(1_704_200_645), "2024-01-02T13:04:05+00:00");
        assert_eq!(full.show(i64::MAX), format!("@{}", i64::MAX));
        assert_eq!(Clock::new(true, false).show(-1), "1969-12-31 23:59");
    }
}
