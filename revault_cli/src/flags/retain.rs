//! Which states a compaction keeps, for `compact` (what it does) and
//! `info` (the bytes `compact` with the same flags would reclaim at least,
//! and the states it would keep). Taken as text and checked by the
//! command, so that a bad value gets one line (`commands::compact`).

use clap::Args;

/// `--keep-sessions N`, `--keep-within DURATION` and the calendar rules,
/// combinable: a state is kept when any of them keeps it (restic's
/// `forget`), and the last state always is.
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// Keep the last N states readable (states as `lockbox log` numbers
    /// them; restic's --keep-last); the states no rule keeps are removed
    /// and their pages reclaimed. Default, with no rule: the last state
    /// only.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_sessions: Option<String>,
    /// Keep the states committed within DURATION before now (7d, 12h, 2w,
    /// 1w2d; units s, min, h, d, w, y), and the state current at the
    /// window's start, as borg's and restic's --keep-within keep what was
    /// live then.
    #[arg(long, value_name = "DURATION")]
    pub keep_within: Option<String>,
    /// For each of the last N hours that have a state, keep its newest
    /// state (local time, as `log` shows it; TZ=UTC for UTC).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_hourly: Option<String>,
    /// For each of the last N days that have a state, keep its newest
    /// state (local time).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_daily: Option<String>,
    /// For each of the last N ISO weeks (Monday to Sunday) that have a
    /// state, keep its newest state (local time).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_weekly: Option<String>,
    /// For each of the last N months that have a state, keep its newest
    /// state (local time).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_monthly: Option<String>,
    /// For each of the last N years that have a state, keep its newest
    /// state (local time).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub keep_yearly: Option<String>,
}

impl RetentionArgs {
    /// The calendar rules given, each with its flag's name.
    pub fn calendar(&self) -> [(&'static str, Option<&str>); 5] {
        [
            ("--keep-hourly", self.keep_hourly.as_deref()),
            ("--keep-daily", self.keep_daily.as_deref()),
            ("--keep-weekly", self.keep_weekly.as_deref()),
            ("--keep-monthly", self.keep_monthly.as_deref()),
            ("--keep-yearly", self.keep_yearly.as_deref()),
        ]
    }
}
