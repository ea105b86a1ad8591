//! `create`'s filters by age, as GNU tar's `--newer` and `--newer-mtime`
//! (a moment, not a rule: the archive does not record them).

use clap::Args;

use crate::dates::Moment;

/// What `create` leaves out by a file's age.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Store only files modified or whose status changed after DATE
    /// (directories are stored whatever their age, as tar does). DATE:
    /// 2024-05-01, '2024-05-01 13:04', '2024-05-01 13:04:05' (local time
    /// unless a zone follows: Z, +02:00, UTC), @SECONDS, yesterday,
    /// '3 days ago', or a file name starting with / or . (that file's
    /// modification time).
    #[arg(short = 'N', long, visible_alias = "after-date", value_name = "DATE", conflicts_with_all = ["from_tar", "newer_mtime"])]
    pub newer: Option<Moment>,
    /// As --newer, but compare the modification time only.
    #[arg(long, value_name = "DATE", conflicts_with = "from_tar")]
    pub newer_mtime: Option<Moment>,
}
