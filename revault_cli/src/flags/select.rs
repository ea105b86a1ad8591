//! What goes into an archive and how: input paths and tuning, the
//! worker threads of every command that seals or opens pages, the
//! selection of stored entries by the commands that read, and waiting for
//! another writer.

use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::Args;
use revault_lockbox_api::WorkloadProfile;

use super::profile_parser;

/// Where the input paths are and how their pages are made: for `create`,
/// `add` and `update`.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Take PATHs relative to DIR, and store them under those relative names.
    #[arg(short = 'C', long = "directory", value_name = "DIR", default_value = ".")]
    pub directory: PathBuf,
    /// Tuning preset for page size, compression level and threads.
    #[arg(long, value_name = "NAME", value_parser = profile_parser(), default_value = "balanced")]
    pub profile: WorkloadProfile,
    /// zstd level for data pages, overriding the profile's (e.g. 1 fast ... 19 small).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
    #[command(flatten)]
    pub threads: ThreadsArgs,
}

/// The most `--threads` takes: more workers than cores gain nothing, and
/// the library takes any count, aborting on a huge one (a writer makes
/// room up front for one page in flight more than its threads).
const MAX_THREADS: usize = 1024;

/// `--threads N`: for every command that seals or opens pages (`create`,
/// `add`, `update`, `rm`, `compact`, `repair` and the readers but `log`).
#[derive(Debug, Args)]
pub struct ThreadsArgs {
    /// Worker threads compressing, sealing and opening pages [default: the
    /// profile's, one per core]; 0 is also one per core (the cores this
    /// process may use, as `zstd -T0`). At most 1024.
    #[arg(long, value_name = "N", value_parser = threads_parser, allow_negative_numbers = true)]
    pub threads: Option<usize>,
}

impl ThreadsArgs {
    /// The worker threads asked for, `0` made the number of cores this
    /// process may use; `None` without `--threads` (the profile's).
    pub fn count(&self) -> Option<usize> {
        self.threads.map(|n| match n {
            0 => std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
            n => n,
        })
    }
}

fn threads_parser(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_THREADS => Ok(n),
        _ => Err(format!("expected a number of threads from 1 to {MAX_THREADS}, or 0 for one per core")),
    }
}

/// Waiting for another writer of the same archive.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Wait while another lockbox changes the archive, instead of failing;
    /// on s3://, write the change again on the new state when another
    /// writer commits first (up to 8 times).
    #[arg(long)]
    pub wait: bool,
}

/// Which stored entries a reading command works on (`list`, `extract`,
/// `export`, `cat`, `verify`): GNU tar's rules for member names and
/// excludes. The four matching switches apply to the NAMEs; `--exclude`
/// patterns always match as tar's excludes do by default (wildcards, not
/// anchored).
#[derive(Debug, Args)]
pub struct MemberArgs {
    /// Treat `*`, `?`, `[...]` and `\` in NAMEs as wildcards (`*` also
    /// matching `/`), as tar's --wildcards.
    #[arg(long, overrides_with = "no_wildcards")]
    pub wildcards: bool,
    /// NAMEs are plain names (the default).
    #[arg(long, overrides_with = "wildcards")]
    pub no_wildcards: bool,
    /// A NAME may also match after any `/` of a stored name (`c.txt`
    /// selects `a/b/c.txt`).
    #[arg(long, overrides_with = "anchored")]
    pub no_anchored: bool,
    /// A NAME matches from the start of a stored name (the default).
    #[arg(long, overrides_with = "no_anchored")]
    pub anchored: bool,
    /// Leave out entries whose stored name matches PATTERN (repeatable),
    /// as `create --exclude` does: the whole name, a leading part or any
    /// trailing part of it (`*.o`, `build`, `src/*.tmp`); a directory left
    /// out with everything below it.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<OsString>,
    /// Leave out the patterns listed in FILE, one a line (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,
}
