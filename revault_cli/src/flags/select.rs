//! What goes into an archive and how: input paths and tuning, the
//! selection flags of `create`, and waiting for another writer.

use std::ffi::OsString;
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
}

/// Waiting for another writer of the same archive.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Wait while another lockbox changes the archive, instead of failing.
    #[arg(long)]
    pub wait: bool,
}

/// `create`'s selection: what to leave out, what else to take.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Leave out entries whose stored name matches PATTERN (repeatable):
    /// tar's glob rules (`*`, `?`, `[...]`, `*` also matching `/`), matched
    /// against the whole name or any trailing part of it (`*.o`, `build`,
    /// `src/*.tmp`); an excluded directory is left out with its contents.
    #[arg(long, value_name = "PATTERN", conflicts_with = "from_tar")]
    pub exclude: Vec<String>,
    /// Leave out the patterns listed in FILE, one a line (`-`: stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "from_tar")]
    pub exclude_from: Vec<PathBuf>,
    /// Leave out version-control directories and files (GNU tar's list:
    /// .git, .gitignore, .hg, .svn, CVS, .bzr, _darcs, ...).
    #[arg(long, conflicts_with = "from_tar")]
    pub exclude_vcs: bool,
    /// Do not descend into directories on other file systems (mount points
    /// are stored as empty directories).
    #[arg(long, conflicts_with = "from_tar")]
    pub one_file_system: bool,
    /// Also archive the paths listed in FILE, one a line (`-`: stdin).
    #[arg(short = 'T', long, value_name = "FILE", conflicts_with = "from_tar")]
    pub files_from: Option<PathBuf>,
    /// The --files-from and --exclude-from lists are separated by NUL
    /// bytes, not newlines (as `find -print0` writes them).
    #[arg(long)]
    pub null: bool,
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
