//! How a command that walks a tree into an archive walks it (`create`,
//! `add`, `update`): what it leaves out, whether it follows links, keeps
//! xattrs or stops at a skip, and the lists of paths it reads. An archive
//! records these rules (FORMAT.md §3.9b) and `add` and `update` walk by
//! them too, adding those given on their command line.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

/// The walk's rules and its input lists.
#[derive(Debug, Args)]
pub struct WalkArgs {
    /// Leave out entries whose stored name matches PATTERN (repeatable):
    /// tar's glob rules (`*`, `?`, `[...]`, `*` also matching `/`), matched
    /// against the whole name or any trailing part of it (`*.o`, `build`,
    /// `src/*.tmp`); an excluded directory is left out with its contents.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Leave out the patterns listed in FILE, one a line (`-`: stdin).
    #[arg(long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,
    /// Leave out version-control directories and files (GNU tar's list:
    /// .git, .gitignore, .hg, .svn, CVS, .bzr, _darcs, ...).
    #[arg(long)]
    pub exclude_vcs: bool,
    /// Leave out the contents of cache directories (those holding a
    /// CACHEDIR.TAG that starts with its signature), keeping the directory
    /// and the tag file.
    #[arg(long)]
    pub exclude_caches: bool,
    /// Leave out the contents of directories holding a file named FILE,
    /// keeping the directory and FILE (repeatable).
    #[arg(long, value_name = "FILE")]
    pub exclude_if_present: Vec<OsString>,
    /// Do not descend into directories on other file systems (mount points
    /// are stored as empty directories).
    #[arg(long)]
    pub one_file_system: bool,
    /// Follow symbolic links (PATHs and inside the trees) and store what
    /// they point to; a link to a directory containing it is not followed.
    #[arg(short = 'h', long)]
    pub dereference: bool,
    /// Store extended attributes, POSIX ACLs included (ACLs are the
    /// system.posix_acl_* attributes); an entry whose attributes cannot be
    /// read or exceed 72 KiB is stored without them, with a warning.
    #[arg(long)]
    pub xattrs: bool,
    /// Fail, leaving the archive as it was, at the first file that would be
    /// skipped or stored incompletely with a warning (vanished, replaced,
    /// changed while read, unreadable, a socket...).
    #[arg(long)]
    pub strict: bool,
    /// Also archive the paths listed in FILE, one a line (`-`: stdin).
    #[arg(short = 'T', long, value_name = "FILE")]
    pub files_from: Option<PathBuf>,
    /// The --files-from and --exclude-from lists are separated by NUL
    /// bytes, not newlines (as `find -print0` writes them).
    #[arg(long)]
    pub null: bool,
    /// Print help (`-h` is --dereference here, as in tar).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// The ids of the walk's selection, which `create --from-tar` refuses (a
/// tar stream is not walked).
pub const SELECTION: [&str; 7] = [
    "exclude",
    "exclude_from",
    "exclude_vcs",
    "exclude_caches",
    "exclude_if_present",
    "one_file_system",
    "files_from",
];
