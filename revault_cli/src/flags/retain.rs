//! Which states a compaction keeps, for `compact` (what it does) and
//! `info` (the bytes `compact` with the same flag would reclaim at least,
//! and the states it would keep). Taken as text and checked by the
//! command, so that a bad value gets one line (`commands::compact`).

use clap::Args;

/// `--keep-sessions N` and `--keep-within DURATION` (one of them).
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// Keep the last N states readable (states as `lockbox log` numbers
    /// them; restic's --keep-last); the earlier ones are removed and their
    /// pages reclaimed. Default: the last state only.
    #[arg(long, value_name = "N")]
    pub keep_sessions: Option<String>,
    /// Keep the states committed within DURATION before now (7d, 12h, 2w,
    /// 1w2d; units s, min, h, d, w, y), and the state current at the
    /// window's start, as borg's and restic's --keep-within keep what was
    /// live then.
    #[arg(long, value_name = "DURATION")]
    pub keep_within: Option<String>,
}
