//! `diff`: two states of an archive, or a state and a directory.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::{JsonArgs, ReadArgs, ThreadsArgs};

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// The old state: N as `lockbox log` numbers states (1 is the create,
    /// -1 the last, -2 the one before).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        required_unless_present = "directory",
        conflicts_with = "directory"
    )]
    pub from: Option<i64>,
    /// The new state [default: the last].
    #[arg(long, value_name = "M", allow_negative_numbers = true, requires = "from")]
    pub to: Option<i64>,
    /// Compare the state (the last, or --session/--at) with the files under
    /// DIR, as `create -C DIR` stored them (GNU tar's --compare): added
    /// means on disk only, removed in the archive only.
    #[arg(short = 'C', long = "directory", value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// Compare files' content by size and modification time only (reads
    /// no file); by default by SHA-256 (the stored digests, and on disk a
    /// file of the stored size is read and hashed).
    #[arg(long)]
    pub quick: bool,
    /// Also compare directories' modification times (not by default: add
    /// and rm change a directory's mtime on disk, not in the archive).
    #[arg(long)]
    pub dir_mtimes: bool,
    /// Print no differences: the exit code alone says whether there are
    /// any (0 equal, 1 different), as `cmp -s`; stops at the first.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    /// With -C: compare only these stored paths and what is below them
    /// [default: every name in DIR that the archive holds].
    #[arg(value_name = "PATH", requires = "directory")]
    pub paths: Vec<OsString>,
}
