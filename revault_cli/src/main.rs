//! `lockbox`: the command-line face of `revault_lockbox_api`.
//!
//! This binary owns everything the library must not: flag parsing, reading
//! passwords, drawing progress, and turning errors into one-line messages
//! and exit codes. Archive logic stays in the library.
//!
//! # Exit codes
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success |
//! | 1    | any other failure: I/O error (a full disk included), missing input, existing file without `--overwrite`, path not in the archive, archive locked by another writer, a path below a stored file, malformed tar stream, unreadable list file; object store: wrong credentials, missing bucket or key, existing key without `--overwrite`, server unreachable; `create`/`add`/`update` that skipped files or stored a changed copy (warnings; the archive is valid) |
//! | 2    | usage error: bad flags (clap), no password available, empty or mismatched password, archive to a terminal, KDF cost out of range, invalid exclude pattern, `-` given twice; a bad `s3://` location, a plain-HTTP endpoint without `--allow-http`, a command that rewrites in place on `s3://` |
//! | 3    | authentication failure: wrong password, archive tampered with, malformed or truncated, checksum mismatch, damaged entries reported by `extract --keep-going` or `verify` |
//! | 141  | `create -o -` or `export -o -` whose stdout closed early (broken pipe): the archive was not delivered; nothing is printed. `list`, `cat` and `info` cut off by `\| head` exit 0 quietly |
//!
//! # Passwords
//!
//! Taken from, in order: `--password-file FILE` (its first line), the
//! environment variable `LOCKBOX_PASSWORD`, or a no-echo prompt when stdin
//! is a terminal (`create` asks twice).
#![forbid(unsafe_code)]

mod append;
mod commands;
mod export;
mod json;
mod keys;
mod listing;
mod location;
mod manual;
mod password;
mod progress;
mod select;
mod source;

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use revault_lockbox_api::{Error, WorkloadProfile};

/// Encrypted, compressed, page-oriented archives (.lbox).
#[derive(Debug, Parser)]
#[command(name = "lockbox", version, max_term_width = 100)]
#[command(
    after_help = "Password: --password-file FILE, else $LOCKBOX_PASSWORD, else a prompt on the terminal.\n\
Exit codes: 0 ok, 1 failure, 2 usage error, 3 wrong password or damaged archive."
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
struct GlobalArgs {
    /// Read the password from the first line of FILE (a trailing newline is
    /// not part of it).
    #[arg(long, value_name = "FILE", global = true)]
    password_file: Option<PathBuf>,
    /// Show no progress bar.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Open the archive with the age or SSH identities in FILE (repeatable)
    /// instead of a password: `AGE-SECRET-KEY-1…`, `AGE-SECRET-KEY-PQ-1…`,
    /// OpenSSH private keys; a passphrase-protected file asks for its
    /// passphrase on the terminal.
    #[arg(short = 'i', long = "identity", value_name = "FILE", global = true)]
    identities: Vec<PathBuf>,
    /// Open the archive with the key file FILE (from `lockbox keygen
    /// --symmetric`; no password KDF). With `create` and `key add`: lock the
    /// archive to it.
    #[arg(long = "key-file", value_name = "FILE", global = true)]
    key_file: Option<PathBuf>,
    #[command(flatten)]
    s3: location::ObjectStoreArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create an archive from files and directories.
    #[command(disable_help_flag = true)]
    Create(CreateArgs),
    /// List the paths in an archive.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Extract an archive's entries.
    #[command(visible_alias = "x")]
    Extract(ExtractArgs),
    /// Write one file's content to stdout.
    Cat(CatArgs),
    /// Show facts about an archive: format version, KDF cost, counts, sizes.
    Info(InfoArgs),
    /// Run every check extract runs, authenticate every page and check every
    /// file's SHA-256; write nothing.
    Verify(VerifyArgs),
    /// Generate an age identity (X25519, or ML-KEM-768 + X25519 with --pq)
    /// and print its recipient.
    Keygen(KeygenArgs),
    /// List, add or remove an archive's key slots, in place.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Replace the password that opens an archive (rewrites one key slot).
    Passwd(PasswdArgs),
    /// Store files and directories in an existing archive: new paths are
    /// added, stored ones replaced (tar -r). Appends one write session.
    Add(AddArgs),
    /// Store only what changed since it was stored (kind, size or mtime;
    /// tar -u); --delete-missing also removes what vanished under PATHs.
    Update(UpdateArgs),
    /// Remove stored paths (a directory with everything below it).
    Rm(RmArgs),
    /// Rewrite the archive without what later sessions replaced or removed
    /// (to a temporary file, synced, renamed over it).
    Compact(MaintainArgs),
    /// Cut off what an interrupted add/update/rm left after the last commit.
    Repair(MaintainArgs),
    /// Write an archive's entries (all, or some) as a pax tar stream.
    Export(ExportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `lockbox man | man -l -`.
    Man(ManArgs),
}

#[derive(Debug, Args)]
struct CompletionsArgs {
    /// The shell: `lockbox completions bash > /etc/bash_completion.d/lockbox`.
    shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
struct ManArgs {
    /// The page of this command (`lockbox man create`) instead of lockbox's.
    command: Option<String>,
}

/// Where the input paths are and how their pages are made: for `create`,
/// `add` and `update`.
#[derive(Debug, Args)]
struct InputArgs {
    /// Take PATHs relative to DIR, and store them under those relative names.
    #[arg(short = 'C', long = "directory", value_name = "DIR", default_value = ".")]
    directory: PathBuf,
    /// Tuning preset for page size, compression level and threads.
    #[arg(long, value_name = "NAME", value_parser = profile_parser(), default_value = "balanced")]
    profile: WorkloadProfile,
    /// zstd level for data pages, overriding the profile's (e.g. 1 fast ... 19 small).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    level: Option<i32>,
}

/// Where to append and how: for `add` and `update`.
#[derive(Debug, Args)]
struct AppendArgs {
    /// The archive, changed in place.
    archive: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    lock: WaitArgs,
    /// Files and directories to store (directories recursively).
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
}

/// Waiting for another writer of the same archive.
#[derive(Debug, Args)]
struct WaitArgs {
    /// Wait while another lockbox changes the archive, instead of failing.
    #[arg(long)]
    wait: bool,
}

#[derive(Debug, Args)]
struct AddArgs {
    #[command(flatten)]
    append: AppendArgs,
}

#[derive(Debug, Args)]
struct UpdateArgs {
    #[command(flatten)]
    append: AppendArgs,
    /// Also remove stored paths under PATHs that are no longer on disk.
    #[arg(long)]
    delete_missing: bool,
}

#[derive(Debug, Args)]
struct RmArgs {
    /// The archive, changed in place.
    archive: PathBuf,
    #[command(flatten)]
    lock: WaitArgs,
    /// Stored paths to remove (directories with everything below them).
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<OsString>,
}

#[derive(Debug, Args)]
struct MaintainArgs {
    /// The archive.
    archive: PathBuf,
    #[command(flatten)]
    lock: WaitArgs,
}

#[derive(Debug, Args)]
struct CreateArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// Archive to write; `-` streams it to stdout; `s3://BUCKET/KEY` uploads
    /// it to an object store. A file is written under a temporary name and
    /// renamed into place when complete; an object appears when its upload
    /// completes.
    #[arg(short, long, value_name = "ARCHIVE")]
    output: PathBuf,
    /// Replace ARCHIVE (a file or an s3:// object) if it exists (the old one
    /// stays whole until the new one is complete). Without it, an existing
    /// ARCHIVE is refused.
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    input: InputArgs,
    /// Argon2id memory cost in MiB [default: 64]. Lowering any KDF cost makes
    /// guessing the password cheaper for whoever holds the archive.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u32).range(1..))]
    kdf_memory: Option<u32>,
    /// Argon2id passes [default: 3]. Lowering makes guessing cheaper.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    kdf_passes: Option<u32>,
    /// Argon2id lanes [default: 4]. Lowering makes guessing cheaper.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    kdf_lanes: Option<u32>,
    #[command(flatten)]
    recipients: RecipientArgs,
    /// Follow symbolic links (PATHs and inside the trees) and store what
    /// they point to; a link to a directory containing it is not followed.
    #[arg(short = 'h', long)]
    dereference: bool,
    /// Fail, leaving no archive, at the first file that would be skipped or
    /// stored incompletely with a warning (vanished, replaced, changed
    /// while read, unreadable, a socket...).
    #[arg(long)]
    strict: bool,
    /// Store extended attributes, POSIX ACLs included (ACLs are the
    /// system.posix_acl_* attributes); an entry whose attributes cannot be
    /// read or exceed 72 KiB is stored without them, with a warning.
    #[arg(long)]
    xattrs: bool,
    /// Print help (`-h` is --dereference here, as in tar).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Archive the entries of the tar or pax stream FILE (`-`: stdin)
    /// instead of PATHs: names, modes, owner ids and names, mtimes, pax
    /// xattrs (`SCHILY.xattr.*`), symbolic and hard links (devices and
    /// FIFOs are dropped).
    #[arg(long, value_name = "FILE", conflicts_with = "paths")]
    from_tar: Option<PathBuf>,
    #[command(flatten)]
    select: SelectArgs,
    /// Files and directories to archive (directories recursively; symbolic
    /// links are stored, not followed, unless -h).
    #[arg(value_name = "PATH", required_unless_present_any = ["from_tar", "files_from"])]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct ExportArgs {
    /// The archive (`-`: stdin).
    archive: PathBuf,
    /// Write the tar stream to FILE (under a temporary name, renamed when
    /// complete); `-` writes it to stdout.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Export only these stored paths (and everything below directories).
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,
}

#[derive(Debug, Args)]
struct SelectArgs {
    /// Leave out entries whose stored name matches PATTERN (repeatable):
    /// tar's glob rules (`*`, `?`, `[...]`, `*` also matching `/`), matched
    /// against the whole name or any trailing part of it (`*.o`, `build`,
    /// `src/*.tmp`); an excluded directory is left out with its contents.
    #[arg(long, value_name = "PATTERN", conflicts_with = "from_tar")]
    exclude: Vec<String>,
    /// Leave out the patterns listed in FILE, one a line (`-`: stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "from_tar")]
    exclude_from: Vec<PathBuf>,
    /// Leave out version-control directories and files (GNU tar's list:
    /// .git, .gitignore, .hg, .svn, CVS, .bzr, _darcs, ...).
    #[arg(long, conflicts_with = "from_tar")]
    exclude_vcs: bool,
    /// Do not descend into directories on other file systems (mount points
    /// are stored as empty directories).
    #[arg(long, conflicts_with = "from_tar")]
    one_file_system: bool,
    /// Also archive the paths listed in FILE, one a line (`-`: stdin).
    #[arg(short = 'T', long, value_name = "FILE", conflicts_with = "from_tar")]
    files_from: Option<PathBuf>,
    /// The --files-from and --exclude-from lists are separated by NUL
    /// bytes, not newlines (as `find -print0` writes them).
    #[arg(long)]
    null: bool,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
    /// Long format: mode, size, mtime (UTC), path, link target.
    #[arg(short, long)]
    long: bool,
    /// Print names raw (exact bytes, unquoted), each ended by a NUL byte
    /// instead of a newline, for `xargs -0` and scripts.
    #[arg(short = '0', long = "null")]
    null: bool,
}

#[derive(Debug, Args)]
struct ExtractArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
    /// Extract into DIR, which must exist.
    #[arg(short = 'C', long = "directory", value_name = "DIR", default_value = ".")]
    directory: PathBuf,
    /// Replace existing files and links (never a directory).
    #[arg(long)]
    overwrite: bool,
    /// Do not sync files to disk before renaming them into place (faster; a
    /// crash may then leave empty files behind).
    #[arg(long)]
    no_sync: bool,
    /// Restore every intact entry when some are damaged, list the damaged
    /// ones, and exit with code 3.
    #[arg(long)]
    keep_going: bool,
    /// Restore permission bits exactly as stored, setuid, setgid and sticky
    /// included, ignoring the umask (by default the umask applies and those
    /// three bits are dropped, as tar does).
    #[arg(short = 'p', long, visible_alias = "preserve-permissions")]
    same_permissions: bool,
    /// Restore owners: stored user and group names mapped to local ids,
    /// else the stored ids. The default as root; refused otherwise (only
    /// root may give files away).
    #[arg(long, overrides_with = "no_same_owner")]
    same_owner: bool,
    /// Do not restore owners: files belong to the user extracting. The
    /// default for users other than root.
    #[arg(long, overrides_with = "same_owner")]
    no_same_owner: bool,
    /// When restoring owners, use the stored ids and ignore the names.
    #[arg(long)]
    numeric_owner: bool,
    /// Restore extended attributes and POSIX ACLs; one the destination
    /// refuses (trusted.* as a user, security.selinux...) is a warning.
    #[arg(long)]
    xattrs: bool,
    /// Tuning preset for reading [default: extract-many].
    #[arg(long, value_name = "NAME", value_parser = profile_parser())]
    profile: Option<WorkloadProfile>,
    /// Extract only these stored paths (and everything below directories).
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,
}

#[derive(Debug, Args)]
struct CatArgs {
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
    /// Stored path of a file (or hard link).
    path: OsString,
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
}

#[derive(Debug, Args)]
struct InfoArgs {
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Show the slots in use: position, kind, KDF cost or recipient type.
    List(KeyListArgs),
    /// Add password or recipient slots; an existing key (password or -i)
    /// unlocks the archive. Only the slot table is rewritten.
    Add(KeyAddArgs),
    /// Remove slot SLOT (see `key list`); its bytes are overwritten. The
    /// last slot is never removed.
    Remove(KeyRemoveArgs),
}

#[derive(Debug, Args)]
struct KeyListArgs {
    /// Print NDJSON (one object a line, a summary last; docs/JSON.md)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    archive: PathBuf,
}

#[derive(Debug, Args)]
struct KeyAddArgs {
    /// The archive (a local file: key commands rewrite it in place).
    archive: PathBuf,
    /// Add a password slot; the new password comes from --new-password-file,
    /// else LOCKBOX_NEW_PASSWORD, else a prompt (asked twice). (A key-file
    /// slot: --new-key-file.)
    #[arg(long)]
    password: bool,
    /// Read the new password from the first line of FILE.
    #[arg(long, value_name = "FILE")]
    new_password_file: Option<PathBuf>,
    /// Add a slot for the key file FILE.
    #[arg(long, value_name = "FILE")]
    new_key_file: Option<PathBuf>,
    #[command(flatten)]
    recipients: RecipientArgs,
}

/// Public-key recipients, for `create` and `key add`.
#[derive(Debug, Args)]
struct RecipientArgs {
    /// A slot for this age recipient (`age1…`, `age1pq1…`) or SSH public key
    /// (`ssh-ed25519 …`, `ssh-rsa …`); repeatable. With `create`, instead of
    /// a password; reading then takes `-i IDENTITY_FILE`.
    #[arg(short = 'r', long = "recipient", value_name = "RECIPIENT")]
    recipients: Vec<String>,
    /// A slot for every recipient in FILE (one a line, `#` comments);
    /// repeatable.
    #[arg(short = 'R', long = "recipients-file", value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Allow post-quantum and classical-only recipients in one archive (it
    /// is then only as strong as its classical recipients).
    #[arg(long)]
    allow_mixed_recipients: bool,
}

#[derive(Debug, Args)]
struct KeyRemoveArgs {
    /// The archive (a local file: key commands rewrite it in place).
    archive: PathBuf,
    /// The slot's position, from `lockbox key list`.
    slot: usize,
}

#[derive(Debug, Args)]
struct PasswdArgs {
    /// The archive (a local file: passwd rewrites it in place).
    archive: PathBuf,
    /// Read the new password from the first line of FILE (else
    /// LOCKBOX_NEW_PASSWORD, else a prompt, asked twice).
    #[arg(long, value_name = "FILE")]
    new_password_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct KeygenArgs {
    /// Write the identity to FILE (mode 0600; an existing file is refused)
    /// instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// A post-quantum hybrid identity (ML-KEM-768 + X25519, age's
    /// `mlkem768x25519`).
    #[arg(long, conflicts_with = "symmetric")]
    pq: bool,
    /// A key file (a random 256-bit key for `--key-file`) instead of an
    /// age identity.
    #[arg(long)]
    symmetric: bool,
}

fn profile_parser() -> impl TypedValueParser<Value = WorkloadProfile> {
    PossibleValuesParser::new(WorkloadProfile::ALL.map(WorkloadProfile::name))
        .map(|name| WorkloadProfile::from_name(&name).expect("clap checked the name"))
}

/// A mistake in how lockbox was called, found after parsing (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Exit code for damaged archives and wrong passwords.
const EXIT_AUTH: u8 = 3;
/// Exit code after a broken pipe on stdout while streaming an archive: the
/// archive was not delivered, and what a shell reports for a process killed
/// by SIGPIPE. Readers (`list`, `cat`, `info`) cut off by `| head` exit 0.
const EXIT_BROKEN_PIPE: u8 = 141;

fn main() -> ExitCode {
    // First, while the process has one thread.
    password::take_from_environment();
    let cli = Cli::parse();
    let strict_extract = matches!(&cli.command, Command::Extract(a) if !a.keep_going);
    let writes_archive = matches!(&cli.command, Command::Create(_) | Command::Export(_));
    let result = match cli.command {
        Command::Create(args) => commands::create(&cli.global, args),
        Command::List(args) => commands::list(&cli.global, args),
        Command::Extract(args) => commands::extract(&cli.global, args),
        Command::Cat(args) => commands::cat(&cli.global, args),
        Command::Info(args) => commands::info(&cli.global, args),
        Command::Verify(args) => commands::verify(&cli.global, args),
        Command::Keygen(args) => commands::keygen(args),
        // Commands that rewrite an archive in place take local files only.
        Command::Key(KeyCommand::List(args)) => keys::list(&cli.global, args),
        Command::Key(KeyCommand::Add(args)) => {
            in_place(&args.archive, "key add").and_then(|()| keys::add(&cli.global, args))
        }
        Command::Key(KeyCommand::Remove(args)) => {
            in_place(&args.archive, "key remove").and_then(|()| keys::remove(&cli.global, args))
        }
        Command::Passwd(args) => {
            in_place(&args.archive, "passwd").and_then(|()| keys::passwd(&cli.global, args))
        }
        Command::Export(args) => export::export(&cli.global, args),
        Command::Completions(args) => manual::completions(args.shell),
        Command::Man(args) => manual::man(args.command.as_deref()),
        Command::Add(args) => {
            in_place(&args.append.archive, "add").and_then(|()| append::add(&cli.global, args))
        }
        Command::Update(args) => {
            in_place(&args.append.archive, "update").and_then(|()| append::update(&cli.global, args))
        }
        Command::Rm(args) => in_place(&args.archive, "rm").and_then(|()| append::rm(&cli.global, args)),
        Command::Compact(args) => {
            in_place(&args.archive, "compact").and_then(|()| append::compact(&cli.global, args))
        }
        Command::Repair(args) => {
            in_place(&args.archive, "repair").and_then(|()| append::repair(&cli.global, args))
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => report(&err, strict_extract, writes_archive),
    }
}

fn in_place(archive: &std::path::Path, command: &str) -> anyhow::Result<()> {
    location::ArchiveLocation::local_only(archive, command).map(drop)
}

/// Prints `err` as one line and picks the exit code. `strict_extract`:
/// the command was `extract` without `--keep-going`, which damage to some
/// pages could use. `writes_archive`: the command was `create`, for which a
/// broken pipe means the archive was not delivered.
fn report(err: &anyhow::Error, strict_extract: bool, writes_archive: bool) -> ExitCode {
    if is_broken_pipe(err) {
        return ExitCode::from(if writes_archive { EXIT_BROKEN_PIPE } else { 0 });
    }
    let lib = library_error(err);
    let hint = match lib {
        Some(Error::AlreadyExists { .. }) => " (use --overwrite to replace it)",
        None if is_existing_object(err) => " (use --overwrite to replace it)",
        Some(Error::DamagedPage { .. } | Error::ChecksumMismatch { .. }) if strict_extract => {
            " (--keep-going restores the entries that are intact)"
        }
        _ => "",
    };
    eprintln!("lockbox: {}{hint}", message(err));
    if err.downcast_ref::<UsageError>().is_some() {
        ExitCode::from(2)
    } else if lib.is_some_and(Error::is_authentication) {
        ExitCode::from(EXIT_AUTH)
    } else {
        ExitCode::FAILURE
    }
}

/// `err` and its causes joined by `: `, skipping a cause whose text an
/// outer message already includes (several library errors print their
/// source and also return it from `source()`).
fn message(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// The library error in `err`'s chain, also when it travelled inside an
/// `io::Error` (as `EntryReader` reports a checksum mismatch).
fn library_error(err: &anyhow::Error) -> Option<&Error> {
    err.chain().find_map(|cause| {
        cause.downcast_ref::<Error>().or_else(|| {
            cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<Error>())
        })
    })
}

/// `create` found an object under the key (the library's own
/// `AlreadyExists` names local paths).
fn is_existing_object(err: &anyhow::Error) -> bool {
    use revault_lockbox_api::s3::S3Error;
    let existing = |e: &(dyn std::error::Error + 'static)| {
        matches!(e.downcast_ref::<S3Error>(), Some(S3Error::AlreadyExists { .. }))
    };
    err.chain().any(|cause| {
        existing(cause)
            || cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| existing(inner))
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn messages_do_not_repeat_causes() {
        let io = io::Error::from(io::ErrorKind::NotFound);
        let lib = Error::Stream { action: "seeking in the archive", source: io };
        let err = anyhow::Error::new(lib).context("opening a.lbox");
        let text = message(&err);
        assert!(text.starts_with("opening a.lbox: seeking in the archive: "), "{text}");
        assert_eq!(text.matches("not found").count(), 1, "{text}");
    }

    #[test]
    fn exit_codes_follow_the_table() {
        let code = |e: anyhow::Error| format!("{:?}", report(&e, false, true));
        assert_eq!(code(Error::WrongPassword.into()), format!("{:?}", ExitCode::from(3)));
        let inside_io = io::Error::other(Error::ChecksumMismatch { path: b"a"[..].into() });
        assert_eq!(
            code(anyhow::Error::new(inside_io).context("reading a")),
            format!("{:?}", ExitCode::from(3))
        );
        assert_eq!(code(UsageError("no".into()).into()), format!("{:?}", ExitCode::from(2)));
        let missing = Error::AlreadyExists { path: "x".into() };
        assert_eq!(code(missing.into()), format!("{:?}", ExitCode::FAILURE));
        let pipe = Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        let pipe = anyhow::Error::new(pipe).context("writing");
        assert_eq!(code(pipe), format!("{:?}", ExitCode::from(141)));
        let pipe = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(format!("{:?}", report(&pipe, false, false)), format!("{:?}", ExitCode::SUCCESS));
    }
}
