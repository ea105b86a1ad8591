//! One `Args` struct per command: its own flags and the shared groups it
//! flattens in (only those it uses, so that its `--help` shows no other).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use revault_lockbox_api::WorkloadProfile;

use super::{
    profile_parser, DryRunArgs, ExistingArgs, FilterArgs, InputArgs, LockArgs, MemberArgs, ObjectStoreArgs,
    QuietArgs, ReadArgs, RecipientArgs, RetentionArgs, SignArgs, SignKeyArgs, ThreadsArgs, TimeArgs,
    UnlockArgs, VerboseArgs, WaitArgs, WalkArgs,
};

/// `--json`: NDJSON on stdout instead of text.
#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// Archive to write; `-` streams it to stdout; `s3://BUCKET/KEY` uploads
    /// it to an object store. A file has no name until it is complete and
    /// synced (an unnamed inode, O_TMPFILE); an object appears when its
    /// upload completes. `-f ARCHIVE` too, as tar's habit.
    #[arg(short, long, value_name = "ARCHIVE", short_alias = 'f')]
    pub output: PathBuf,
    /// Replace ARCHIVE (a file or an s3:// object) if it exists (the old one
    /// stays whole until the new one is complete). Without it, an existing
    /// ARCHIVE is refused.
    #[arg(long)]
    pub overwrite: bool,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub label: LabelArgs,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    #[command(flatten)]
    pub sign: SignKeyArgs,
    /// Argon2id memory cost in MiB [default: 64]. Lowering any KDF cost makes
    /// guessing the password cheaper for whoever holds the archive.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u32).range(1..))]
    pub kdf_memory: Option<u32>,
    /// Argon2id passes [default: 3]. Lowering makes guessing cheaper.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub kdf_passes: Option<u32>,
    /// Argon2id lanes [default: 4]. Lowering makes guessing cheaper.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub kdf_lanes: Option<u32>,
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub recipients: RecipientArgs,
    /// Archive the entries of the tar or pax stream FILE (`-`: stdin)
    /// instead of PATHs: names, modes, owner ids and names, mtimes, pax
    /// xattrs (`SCHILY.xattr.*`), symbolic and hard links (devices and
    /// FIFOs are dropped).
    #[arg(long, value_name = "FILE", conflicts_with = "paths", conflicts_with_all = super::walk::SELECTION)]
    pub from_tar: Option<PathBuf>,
    /// The walk's rules, which the archive records (FORMAT.md §3.9b) and
    /// `add` and `update` follow.
    #[command(flatten)]
    pub walk: WalkArgs,
    #[command(flatten)]
    pub filters: FilterArgs,
    #[command(flatten)]
    pub verbose: VerboseArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub s3: ObjectStoreArgs,
    /// Files and directories to archive (directories recursively; symbolic
    /// links are stored, not followed, unless -h).
    #[arg(value_name = "PATH", required_unless_present_any = ["from_tar", "files_from"])]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// Long format, as `tar -tv`: mode, owner, size, modification time
    /// (local, to the minute), path, link target.
    #[arg(short, long)]
    pub long: bool,
    #[command(flatten)]
    pub times: TimeArgs,
    /// Print names raw (exact bytes, unquoted), each ended by a NUL byte
    /// instead of a newline, for `xargs -0` and scripts.
    #[arg(short = '0', long = "null")]
    pub null: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub members: MemberArgs,
    /// List only these stored paths and everything below them (with
    /// --wildcards, patterns); each must match an entry.
    #[arg(value_name = "NAME")]
    pub names: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// Extract into DIR, made (with its parents) when missing, as restic
    /// does.
    #[arg(short = 'C', long = "directory", value_name = "DIR", default_value = ".")]
    pub directory: PathBuf,
    /// Replace existing files and links (never a directory).
    #[arg(long, conflicts_with = "keep_old_files")]
    pub overwrite: bool,
    /// An existing file is an error and nothing is written (tar -k); the
    /// default, since lockbox never overwrites without --overwrite.
    #[arg(short = 'k', long)]
    pub keep_old_files: bool,
    /// Write the selected files' contents to stdout, one after another in
    /// index order, instead of creating anything (tar -O).
    #[arg(short = 'O', long, conflicts_with_all = ["overwrite", "keep_going", "directory"])]
    pub to_stdout: bool,
    #[command(flatten)]
    pub existing: ExistingArgs,
    #[command(flatten)]
    pub verbose: VerboseArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
    /// Do not sync files to disk before renaming them into place (faster; a
    /// crash may then leave empty files behind).
    #[arg(long)]
    pub no_sync: bool,
    /// Restore every intact entry when some are damaged, list the damaged
    /// ones, and exit with code 3.
    #[arg(long)]
    pub keep_going: bool,
    /// Make at most N directories the archive does not list (parents of
    /// paths stored without them) [default: 4096, or one per 64 bytes of
    /// the archive when that is more]; past it nothing is written.
    #[arg(long, value_name = "N")]
    pub max_implicit_dirs: Option<u64>,
    /// Restore permission bits exactly as stored, setuid, setgid and sticky
    /// included, ignoring the umask. The default as root, as in GNU tar;
    /// for other users the umask applies and those three bits are dropped.
    #[arg(short = 'p', long, visible_alias = "preserve-permissions", overrides_with = "no_same_permissions")]
    pub same_permissions: bool,
    /// Apply the umask and drop setuid, setgid and sticky, as root too
    /// (tar's --no-same-permissions; the default for users other than root).
    #[arg(long, overrides_with = "same_permissions")]
    pub no_same_permissions: bool,
    /// Restore owners: stored user and group names mapped to local ids,
    /// else the stored ids. The default as root; refused otherwise (only
    /// root may give files away).
    #[arg(long, overrides_with = "no_same_owner")]
    pub same_owner: bool,
    /// Do not restore owners: files belong to the user extracting. The
    /// default for users other than root.
    #[arg(long, overrides_with = "same_owner")]
    pub no_same_owner: bool,
    /// When restoring owners, use the stored ids and ignore the names.
    #[arg(long)]
    pub numeric_owner: bool,
    /// Restore extended attributes and POSIX ACLs; one the destination
    /// refuses (trusted.* as a user, security.selinux...) is a warning.
    #[arg(long)]
    pub xattrs: bool,
    /// Tuning preset for reading [default: extract-many].
    #[arg(long, value_name = "NAME", value_parser = profile_parser())]
    pub profile: Option<WorkloadProfile>,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub members: MemberArgs,
    /// Extract only these stored paths and everything below them (with
    /// --wildcards, patterns); each must match an entry.
    #[arg(value_name = "NAME")]
    pub paths: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// Stored paths of files (or hard links), written in the order given;
    /// with --wildcards a pattern writes every file it matches, in index
    /// order.
    #[arg(value_name = "NAME", required = true)]
    pub paths: Vec<OsString>,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub members: MemberArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub members: MemberArgs,
    /// Verify only these stored paths and everything below them (with
    /// --wildcards, patterns): their index records, contents and pages.
    #[arg(value_name = "NAME")]
    pub names: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    #[command(flatten)]
    pub keep: RetentionArgs,
    #[command(flatten)]
    pub format: JsonArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The archive: a file or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// Show times in UTC instead of the local time zone (TZ).
    #[arg(long)]
    pub utc: bool,
    /// Also show, per session, the bytes of content its files reuse from
    /// earlier sessions (reads each session's index run and its large
    /// files' chunk lists, not only the sessions tree).
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub format: JsonArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The archive (`-`: stdin).
    pub archive: PathBuf,
    /// Write the tar stream to FILE (unnamed until complete, then named);
    /// `-` writes it to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub overwrite: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    /// Show no progress bar (there is none with `-o -`).
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub members: MemberArgs,
    /// Export only these stored paths and everything below them (with
    /// --wildcards, patterns); each must match an entry.
    #[arg(value_name = "NAME")]
    pub paths: Vec<OsString>,
}

/// Where to append and how: for `add` and `update`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive, changed in place.
    pub archive: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub lock: WaitArgs,
    #[command(flatten)]
    pub unlock: UnlockArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub label: LabelArgs,
    #[command(flatten)]
    pub verbose: VerboseArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    #[command(flatten)]
    pub sign: SignArgs,
    /// Walk rules added to those the archive recorded (those of its create,
    /// or of the last add or update that gave any).
    #[command(flatten)]
    pub walk: WalkArgs,
    /// Walk by the rules given here only, not by those the archive
    /// recorded; this session records them in their place.
    #[arg(long)]
    pub no_recorded_rules: bool,
    /// Files and directories to store (directories recursively).
    #[arg(value_name = "PATH", required_unless_present = "files_from")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub append: AppendArgs,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    pub append: AppendArgs,
    /// Also remove stored paths under PATHs that are no longer on disk.
    #[arg(long)]
    pub delete_missing: bool,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive, changed in place.
    pub archive: PathBuf,
    #[command(flatten)]
    pub verbose: VerboseArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub lock: WaitArgs,
    #[command(flatten)]
    pub unlock: UnlockArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub label: LabelArgs,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    #[command(flatten)]
    pub sign: SignArgs,
    /// Stored paths to remove (directories with everything below them).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<OsString>,
}

/// `--recovery PCT`: for every command that writes a session (`create`,
/// `add`, `update`, `rm`, `compact`, `repair`).
#[derive(Debug, Args)]
pub struct RecoveryArgs {
    /// End each session written with a recovery record of PCT % (1 to 50):
    /// Reed-Solomon parity that `repair` uses to rebuild one contiguous run
    /// of damage of up to about PCT % of the session, or scattered bad
    /// sectors [default: none; 5 with --profile archival]. Needs the
    /// archive as a file: refused with `-o -`.
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(1..=50))]
    pub recovery: Option<u8>,
}

/// `-m TEXT`: the label of the session a command writes.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// Label the session this command writes (kept in the archive, sealed;
    /// UTF-8 without control characters, at most 1024 bytes).
    #[arg(short = 'm', long = "message", value_name = "TEXT", value_parser = label_parser)]
    pub message: Option<String>,
}

fn label_parser(text: &str) -> Result<String, String> {
    revault_lockbox_api::create::check_label(text).map(|()| text.to_owned()).map_err(str::to_owned)
}

/// `compact`: maintenance that writes a session.
#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub maintain: MaintainArgs,
    /// Do everything but write: read and check every live file as the
    /// rewrite would, report the bytes it would reclaim, and leave the
    /// archive untouched.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub keep: RetentionArgs,
    #[command(flatten)]
    pub label: LabelArgs,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// `compact` and `repair`.
#[derive(Debug, Args)]
pub struct MaintainArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive.
    pub archive: PathBuf,
    #[command(flatten)]
    pub lock: WaitArgs,
    #[command(flatten)]
    pub unlock: UnlockArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: `lockbox completions bash > /etc/bash_completion.d/lockbox`.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The page of this command (`lockbox man create`, `lockbox man key
    /// add`) instead of lockbox's.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page to DIR/man1/ (`lockbox.1`, `lockbox-create.1`, …)
    /// instead, for `man` to find under DIR (as `/usr/local/share/man`).
    #[arg(long, value_name = "DIR")]
    pub install: Option<std::path::PathBuf>,
}
