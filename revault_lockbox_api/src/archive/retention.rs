//! Which states a compaction keeps ([`Retention`]) and what it would
//! reclaim ([`Archive::reclaimable`]): read from the sessions tree and the
//! page tables, no data page.
//!
//! The rules are restic's `forget` rules: a state is kept when any rule
//! keeps it, and the last state always is. Calendar rules bucket states by
//! their session's time in local time (as restic and borg do, and as `log`
//! shows times), through a [`Zone`] the caller gives (UTC by default), so
//! the library reads no time zone of its own.

use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;

use super::info::LivePages;
use super::{Archive, AsOf, SessionSummary};
use crate::civil::civil_from_days;
use crate::error::Result;
use crate::format::{
    encoded_record_len, EntryKind, Record, INDEX_NODE_TARGET_LEN, PAGE_RECORD_LEN, TRAILER_LEN,
};
use crate::storage::ReadAt;

/// A calendar period of [`Retention::per`]: states are grouped by the
/// hour, day, ISO week (Monday to Sunday), month or year their session
/// started in, in the [`Zone`]'s local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// `--keep-hourly`.
    Hour,
    /// `--keep-daily`.
    Day,
    /// `--keep-weekly`: ISO weeks, which start on Monday.
    Week,
    /// `--keep-monthly`.
    Month,
    /// `--keep-yearly`.
    Year,
}

impl Period {
    /// Every period, in the order rules are shown.
    pub const ALL: [Period; 5] = [Period::Hour, Period::Day, Period::Week, Period::Month, Period::Year];

    /// The bucket of local time `secs` (seconds since 1970, local): equal
    /// for two times exactly when they fall in the same period.
    fn bucket(self, secs: i64) -> i64 {
        let days = secs.div_euclid(86_400);
        match self {
            Period::Hour => secs.div_euclid(3_600),
            Period::Day => days,
            // 1970-01-01 was a Thursday: Monday-based weeks, counted from
            // the Monday three days before it, are exactly the ISO weeks.
            Period::Week => (days + 3).div_euclid(7),
            Period::Month => {
                let (year, month, _) = civil_from_days(days);
                year * 12 + i64::from(month) - 1
            }
            Period::Year => civil_from_days(days).0,
        }
    }
}

/// How local time relates to UTC: the offset, in seconds east of UTC, at
/// each instant (seconds since 1970, UTC), so daylight saving time moves
/// a day's bounds as it moves the clock. [`Zone::utc`] by default.
#[derive(Clone)]
pub struct Zone(Option<Arc<dyn Fn(i64) -> i64 + Send + Sync>>);

impl Zone {
    /// UTC: days end at midnight UTC.
    pub fn utc() -> Zone {
        Zone(None)
    }

    /// The zone whose offset at UTC instant `secs` is `offset(secs)`
    /// seconds east of UTC (the CLI passes the system's time zone).
    pub fn from_offsets(offset: impl Fn(i64) -> i64 + Send + Sync + 'static) -> Zone {
        Zone(Some(Arc::new(offset)))
    }

    /// Local seconds since 1970 of the instant `created_ns` (UTC ns).
    fn local_secs(&self, created_ns: i64) -> i64 {
        let secs = created_ns.div_euclid(1_000_000_000);
        secs.saturating_add(self.0.as_ref().map_or(0, |offset| offset(secs)))
    }
}

impl Default for Zone {
    fn default() -> Zone {
        Zone::utc()
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Zone(offsets)" } else { "Zone(UTC)" })
    }
}

/// Which states a compaction keeps readable (`--session N`, `--at TIME`);
/// the others are removed and their pages reclaimed. A state is kept when
/// any rule keeps it, and the last state always is; with no rule, the last
/// state only (`compact`, [`Retention::default`]).
#[derive(Debug, Clone, Default)]
pub struct Retention {
    last: Option<NonZeroU64>,
    since: Option<i64>,
    periods: [Option<NonZeroU64>; 5],
    zone: Zone,
}

impl Retention {
    /// The last state only: what `compact` keeps with no rule.
    pub fn latest() -> Retention {
        Retention::default()
    }

    /// Keeps the last `n` states too (`--keep-sessions N`, restic's
    /// `--keep-last`).
    pub fn last_states(mut self, n: NonZeroU64) -> Retention {
        self.last = Some(n);
        self
    }

    /// Keeps the states committed at or after this instant (UTC
    /// nanoseconds since 1970) too, and the state that was current at it,
    /// as restic's and borg's `--keep-within` keep what was live at the
    /// window's start.
    pub fn since(mut self, at_ns: i64) -> Retention {
        self.since = Some(at_ns);
        self
    }

    /// Keeps, for each of the `n` most recent `period`s that hold a state,
    /// the newest state of that period too (`--keep-daily N` and the
    /// others, as restic's `forget` counts them: a period with no state
    /// is not counted).
    pub fn per(mut self, period: Period, n: NonZeroU64) -> Retention {
        self.periods[period as usize] = Some(n);
        self
    }

    /// The zone calendar periods are counted in. Default: [`Zone::utc`].
    pub fn zone(mut self, zone: Zone) -> Retention {
        self.zone = zone;
        self
    }

    /// Whether only the last state is kept (no rule given).
    pub fn is_latest(&self) -> bool {
        self.last.is_none() && self.since.is_none() && self.periods.iter().all(Option::is_none)
    }

    /// Which of the states committed at `times` (UTC ns, oldest first, in
    /// state order) this policy keeps.
    pub fn keeps(&self, times: &[i64]) -> Vec<bool> {
        let mut keep = vec![false; times.len()];
        let Some(last) = keep.last_mut() else { return keep };
        *last = true;
        // `--keep-sessions` and `--keep-within` count states as `log`
        // numbers them, back from the last: what was current then, even
        // where a clock went back.
        if let Some(n) = self.last {
            let n = usize::try_from(n.get()).unwrap_or(usize::MAX);
            keep.iter_mut().rev().take(n).for_each(|k| *k = true);
        }
        if let Some(at_ns) = self.since {
            for (i, k) in keep.iter_mut().enumerate().rev() {
                *k = true;
                // The state current at `at_ns`: the last one before it.
                if times[i] < at_ns {
                    break;
                }
            }
        }
        // Calendar periods: newest first, by time then by state, as restic
        // sorts snapshots (of two states at one instant the later counts
        // as the newer).
        let mut newest_first: Vec<usize> = (0..times.len()).collect();
        newest_first.sort_by(|&a, &b| (times[b], b).cmp(&(times[a], a)));
        for period in Period::ALL {
            let Some(n) = self.periods[period as usize] else { continue };
            let (mut left, mut previous) = (n.get(), None);
            for &i in &newest_first {
                if left == 0 {
                    break;
                }
                let bucket = period.bucket(self.zone.local_secs(times[i]));
                if previous != Some(bucket) {
                    keep[i] = true;
                    previous = Some(bucket);
                    left -= 1;
                }
            }
        }
        keep
    }
}

/// What a compaction under one [`Retention`] would keep and reclaim.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reclaim {
    /// The first and last state kept, as [`Archive::history`] numbers them.
    pub states: (u64, u64),
    /// Every state kept, oldest first (calendar rules may keep states
    /// with gaps between them).
    pub kept: Vec<u64>,
    /// Bytes the compaction reclaims at least: the archive's committed
    /// length less what the rewrite writes at most: the first kept state's
    /// pages as stored now, its index entries uncompressed, a session's
    /// header, root and trailer, and what each later session wrote (a
    /// later kept state is stored as its difference from the kept state
    /// before it, which those sessions wrote). The rewrite packs and
    /// compresses the first state's files and entries afresh and stores
    /// only what each later kept state changed, so it usually reclaims
    /// more; `compact --dry-run` counts the bytes.
    pub bytes: u64,
}

impl<S: ReadAt> Archive<S> {
    /// The states `retention` keeps, oldest first (never empty).
    pub fn kept_states(&self, retention: &Retention) -> Result<Vec<SessionSummary>> {
        let states: Vec<SessionSummary> = self.history()?.into_iter().filter(|s| s.state.is_some()).collect();
        let times: Vec<i64> = states.iter().map(|s| s.created_ns).collect();
        let keep = retention.keeps(&times);
        Ok(states.into_iter().zip(keep).filter_map(|(s, kept)| kept.then_some(s)).collect())
    }

    /// What a compaction under `retention` would keep and reclaim at least
    /// (see [`Reclaim::bytes`]). Reads the first kept state's entries and
    /// the page tables they point into, no data page.
    pub fn reclaimable(&self, retention: &Retention) -> Result<Reclaim> {
        let kept = self.kept_states(retention)?;
        let number = |s: &SessionSummary| s.state.unwrap_or(0);
        let (Some(first), Some(last)) = (kept.first(), kept.last()) else {
            return Ok(Reclaim { states: (0, 0), kept: Vec::new(), bytes: 0 });
        };
        // The first kept state, whole: its files' pages as they are stored
        // now (packed afresh they take no more), its entries unpacked (the
        // rewrite compresses them), a header, root and trailer.
        let mut live = LivePages::default();
        let mut records = 0;
        // A chunked file's chunks, counted at their plain length (the
        // rewrite stores them at most that large): reading its list would
        // read data pages.
        let mut chunked = 0;
        for e in self.at(AsOf::State(number(first) as i64))?.entries()? {
            let e = e?;
            if let (EntryKind::File { .. }, Some(x)) = (&e.kind, e.extent) {
                live.mark_content(self, &x)?;
                if x.chunk_list().is_some() {
                    chunked += x.size;
                }
            }
            records += encoded_record_len(&Record::Put(e)) as u64;
        }
        // A frame, tag and parent's child per node, and a page record each.
        let nodes = records / INDEX_NODE_TARGET_LEN as u64 + 1;
        let index = records + nodes * 128 + live.pages * PAGE_RECORD_LEN as u64;
        let session = self.session_overhead() + u64::from(self.trailer_root_len()) + TRAILER_LEN as u64;
        // Each later state: what its session (and any merge) wrote, about
        // what the rewrite writes for the difference it holds.
        let later: u64 =
            self.history()?.iter().filter(|s| s.number > first.number).map(|s| s.bytes_written).sum();
        let used = self.data_start + live.bytes + chunked + index + session + later;
        let bytes = self.committed_len.saturating_sub(used);
        Ok(Reclaim { states: (number(first), number(last)), kept: kept.iter().map(number).collect(), bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000_000;
    const DAY: i64 = 24 * HOUR;

    fn n(count: u64) -> NonZeroU64 {
        NonZeroU64::new(count).unwrap()
    }

    /// UTC nanoseconds of `year-month-day hour:00` UTC.
    fn at(year: i64, month: u32, day: u32, hour: i64) -> i64 {
        crate::civil::utc_ns(year, month, day, hour, 0)
    }

    /// The kept states' places (from 0, oldest first).
    fn kept(policy: &Retention, times: &[i64]) -> Vec<usize> {
        policy.keeps(times).iter().enumerate().filter_map(|(i, &k)| k.then_some(i)).collect()
    }

    #[test]
    fn no_rule_keeps_the_last_state_and_no_state_keeps_nothing() {
        assert_eq!(kept(&Retention::latest(), &[0, 1, 2]), [2]);
        assert!(Retention::latest().per(Period::Day, n(3)).keeps(&[]).is_empty());
        assert!(Retention::latest().is_latest() && !Retention::latest().last_states(n(1)).is_latest());
    }

    #[test]
    fn daily_keeps_the_newest_of_each_recent_day_with_a_state() {
        // Days 1, 1, 2, (3 empty), 4, 4, 5: the empty day is not counted.
        let times = [
            at(2026, 3, 1, 9),
            at(2026, 3, 1, 17),
            at(2026, 3, 2, 8),
            at(2026, 3, 4, 7),
            at(2026, 3, 4, 23),
            at(2026, 3, 5, 0),
        ];
        let daily = |count| kept(&Retention::latest().per(Period::Day, n(count)), &times);
        assert_eq!(daily(1), [5]);
        assert_eq!(daily(2), [4, 5]);
        assert_eq!(daily(3), [2, 4, 5], "day 3 has no state and does not count");
        assert_eq!(daily(4), [1, 2, 4, 5]);
        assert_eq!(daily(100), [1, 2, 4, 5], "more days than the history keeps each day's newest");
        let hourly = kept(&Retention::latest().per(Period::Hour, n(3)), &times);
        assert_eq!(hourly, [3, 4, 5]);
    }

    #[test]
    fn two_states_at_one_instant_keep_the_later_one() {
        let t = at(2026, 5, 5, 12);
        assert_eq!(kept(&Retention::latest().per(Period::Day, n(2)), &[t - DAY, t, t]), [0, 2]);
        assert_eq!(kept(&Retention::latest().last_states(n(2)), &[t, t, t]), [1, 2]);
    }

    #[test]
    fn weeks_are_iso_weeks_across_the_year_boundary() {
        // 2026-12-28 is a Monday; 2027-01-03 a Sunday of the same ISO week
        // (2026-W53); 2027-01-04 starts 2027-W01; 2026-12-27 is a Sunday.
        let times = [at(2026, 12, 27, 12), at(2026, 12, 28, 0), at(2027, 1, 3, 23), at(2027, 1, 4, 0)];
        assert_eq!(kept(&Retention::latest().per(Period::Week, n(3)), &times), [0, 2, 3]);
        // A year boundary splits what a week joins.
        assert_eq!(kept(&Retention::latest().per(Period::Year, n(2)), &times), [1, 3]);
        assert_eq!(kept(&Retention::latest().per(Period::Month, n(5)), &times), [1, 3]);
        // Weeks before 1970 too (div_euclid, not division).
        let early = [at(1969, 12, 28, 0), at(1969, 12, 29, 0), at(1970, 1, 4, 23)];
        assert_eq!(kept(&Retention::latest().per(Period::Week, n(5)), &early), [0, 2]);
    }

    #[test]
    fn local_time_moves_the_day_bounds() {
        // 23:00 and 00:00 UTC are two days in UTC, one in UTC-2.
        let times = [at(2026, 6, 1, 23), at(2026, 6, 2, 0)];
        let daily = Retention::latest().per(Period::Day, n(2));
        assert_eq!(kept(&daily, &times), [0, 1]);
        let west = daily.clone().zone(Zone::from_offsets(|_| -2 * 3600));
        assert_eq!(kept(&west, &times), [1]);
        // An offset that changes with the instant (a DST switch) is asked
        // at each state's instant.
        let switch = at(2026, 6, 2, 0) / 1_000_000_000;
        let dst = daily.zone(Zone::from_offsets(move |secs| if secs < switch { 3600 } else { 0 }));
        assert_eq!(kept(&dst, &times), [1], "00:00 local twice: one day");
    }

    #[test]
    fn rules_combine_as_a_union() {
        let times: Vec<i64> = (0..10).map(|d| at(2026, 1, 1, 6) + d * DAY).collect();
        let policy = Retention::latest().last_states(n(2)).per(Period::Week, n(2));
        // 2026-01-01 is a Thursday: days 0-3 in one ISO week, 4-9 in the next.
        assert_eq!(kept(&policy, &times), [3, 8, 9]);
        let within = Retention::latest().since(times[7] + 1).per(Period::Month, n(1));
        assert_eq!(kept(&within, &times), [7, 8, 9], "the state current at the window's start");
        let before_all = Retention::latest().since(times[0] - 1);
        assert_eq!(kept(&before_all, &times), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_clock_that_went_back_sorts_calendar_periods_by_time_and_counts_states_by_number() {
        // The last state's clock was behind: by time it is the oldest.
        let times = [at(2026, 2, 2, 10), at(2026, 2, 3, 10), at(2026, 2, 1, 10)];
        assert_eq!(kept(&Retention::latest().per(Period::Day, n(1)), &times), [1, 2]);
        // `--keep-sessions` and `--keep-within` count back from the last
        // state, as `log` numbers them.
        assert_eq!(kept(&Retention::latest().last_states(n(2)), &times), [1, 2]);
        assert_eq!(kept(&Retention::latest().since(at(2026, 2, 2, 12)), &times), [2]);
        assert_eq!(kept(&Retention::latest().since(at(2026, 1, 30, 0)), &times), [0, 1, 2]);
    }
}
