//! `create`'s filters by age and by tag file, as GNU tar's `--newer`,
//! `--newer-mtime`, `--exclude-caches` and `--exclude-if-present`.

use clap::Args;

use crate::dates::Moment;

/// What `create` leaves out by a file's age or a directory's tag file.
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
    /// Leave out the contents of cache directories (those holding a
    /// CACHEDIR.TAG that starts with its signature), keeping the directory
    /// and the tag file.
    #[arg(long, conflicts_with = "from_tar")]
    pub exclude_caches: bool,
    /// Leave out the contents of directories holding a file named FILE,
    /// keeping the directory and FILE (repeatable).
    #[arg(long, value_name = "FILE", conflicts_with = "from_tar")]
    pub exclude_if_present: Vec<std::ffi::OsString>,
}
