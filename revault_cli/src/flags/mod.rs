//! Every flag `lockbox` takes, with its documentation, in one place: the
//! command tree here, one `Args` struct per command in [`commands`], and
//! the groups several commands share (how to unlock, where an object store
//! is, what to select) in modules of their own. The `--help` text, the
//! completions and the man page are all generated from these definitions.
//!
//! Each command takes only the options it uses. The options that were once
//! global (`--password-file`, `-i`, `--key-file`, `-q`, the object-store
//! options) are also accepted before the command name, as scripts write
//! them (`lockbox -q list A`); [`parse`] hands them to the command, where an
//! option given after the command name wins.

mod commands;
mod diff;
mod existing;
mod filters;
mod keys;
mod mount;
mod retain;
mod select;
mod sign;
mod store;
mod times;
mod unlock;
mod verbose;
mod walk;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use revault_lockbox_api::WorkloadProfile;

use crate::dates::Moment;

pub use commands::*;
pub use diff::DiffArgs;
pub use existing::ExistingArgs;
pub use filters::FilterArgs;
pub use keys::{KeyAddArgs, KeyListArgs, KeyRemoveArgs, KeygenArgs, PasswdArgs};
pub use mount::{MountArgs, UmountArgs};
pub use retain::RetentionArgs;
pub use select::{InputArgs, MemberArgs, ThreadsArgs, WaitArgs};
pub use sign::{SignArgs, SignKeyArgs};
pub use store::ObjectStoreArgs;
pub use times::TimeArgs;
pub use unlock::{LockArgs, PasswordArgs, QuietArgs, RecipientArgs, UnlockArgs};
pub use verbose::{DryRunArgs, VerboseArgs};
pub use walk::WalkArgs;

/// Encrypted, compressed, page-oriented archives (.lbox).
#[derive(Debug, Parser)]
#[command(name = "lockbox", version, max_term_width = 100)]
#[command(after_help = crate::exit::help_footer())]
pub struct Cli {
    #[command(flatten)]
    pub before: BeforeCommand,
    #[command(subcommand)]
    pub command: Command,
}

/// The options accepted before the command name, for the commands that use
/// them.
#[derive(Debug, Args)]
pub struct BeforeCommand {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub quiet: QuietArgs,
}

/// What a command that reads an archive needs to get at it: its key and,
/// for `s3://`, the object store.
#[derive(Debug, Args)]
pub struct ReadArgs {
    #[command(flatten)]
    pub unlock: UnlockArgs,
    #[command(flatten)]
    pub s3: ObjectStoreArgs,
    /// Read the archive as it was right after state N, numbered as `lockbox
    /// log` shows them: 1 is the create, -1 the last, -2 the one before.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub session: Option<i64>,
    /// Read the archive as it was at TIME: the last state whose session
    /// time (as `lockbox log` shows it) is at or before it. TIME as
    /// `create --newer` takes it: 2024-05-01 13:04 (local), ...Z, @SECONDS,
    /// '3 days ago'.
    #[arg(long, value_name = "TIME", conflicts_with = "session")]
    pub at: Option<Moment>,
    /// Refuse the archive unless its last session is signed by this key (a
    /// fingerprint `lbsig1…` or a `.pub` file; repeatable: any one of them).
    /// That signature covers every earlier session too; `verify --signer`
    /// checks every session's signature.
    #[arg(long = "signer", value_name = "FPR|FILE.pub")]
    pub signers: Vec<String>,
    /// Trust the signers listed in FILE as --signer trusts one: a
    /// fingerprint, a `.pub` file's key line or a `.pub` path (relative to
    /// FILE) a line, `#` comments; repeatable, with --signer too.
    #[arg(long = "signers", value_name = "FILE")]
    pub signers_files: Vec<std::path::PathBuf>,
}

impl ReadArgs {
    /// Whether an earlier state than the last was asked for.
    pub fn earlier_state(&self) -> bool {
        self.session.is_some() || self.at.is_some()
    }

    /// Whether trusted signers were given (`--signer`, `--signers`).
    pub fn trusts_signers(&self) -> bool {
        !self.signers.is_empty() || !self.signers_files.is_empty()
    }

    fn inherit(&mut self, before: &ReadArgs, given: &Given<'_>) {
        self.session = self.session.or(before.session);
        self.at = self.at.or(before.at);
        self.unlock.inherit(&before.unlock, given);
        self.s3.inherit(&before.s3, given);
        given.take("signers", &mut self.signers, &before.signers);
        given.take("signers_files", &mut self.signers_files, &before.signers_files);
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an archive from files and directories.
    #[command(disable_help_flag = true)]
    Create(CreateArgs),
    /// List the paths in an archive.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Extract an archive's entries.
    #[command(visible_alias = "x")]
    Extract(ExtractArgs),
    /// Write stored files' contents to stdout, in the order given (with
    /// --wildcards, what each pattern matches). A NAMEd file under 8 MiB
    /// is checked against its SHA-256 before any of it is written; a
    /// longer one (or what a pattern matches) streams: bytes before damage
    /// may be written, then exit 3.
    Cat(CatArgs),
    /// Show facts about an archive: format version, KDF cost, counts, sizes,
    /// what deduplication saves; with retention flags (--keep-*), what
    /// that compaction reclaims, and what each flag alone would.
    Info(InfoArgs),
    /// Show every write session, oldest first: when, its label, what it
    /// stored and removed, the bytes it wrote (with --stats, the bytes it
    /// reused of earlier sessions); merges of index runs and compactions
    /// marked as such.
    Log(LogArgs),
    /// Show what differs between two states (--from N --to M) or between a
    /// state and a directory (-C DIR): exit 0 when equal, 1 when not.
    Diff(DiffArgs),
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
    /// added, stored ones replaced (tar -r), walked by the rules the
    /// archive recorded (its excludes, -h, --xattrs...). Appends one write
    /// session.
    #[command(disable_help_flag = true)]
    Add(AddArgs),
    /// Store only what changed since it was stored (kind, size or mtime;
    /// tar -u), walked by the rules the archive recorded (its excludes, -h,
    /// --xattrs...); --delete-missing also removes what vanished under PATHs.
    #[command(disable_help_flag = true)]
    Update(UpdateArgs),
    /// Remove stored paths (a directory with everything below it).
    Rm(RmArgs),
    /// Rewrite the archive without what later sessions replaced or removed,
    /// keeping the last state or those the retention flags keep (--keep-*,
    /// combinable: a state any of them keeps) (a new file, synced, then
    /// renamed over it).
    Compact(CompactArgs),
    /// Cut off what an interrupted add/update/rm left after the last commit;
    /// rewrite an archive whose trailer, root, index or a data page is
    /// damaged, or that was cut, from what a salvage scan proves, listing
    /// what is lost.
    Repair(MaintainArgs),
    /// Write an archive's entries (all, or some) as a pax tar stream.
    Export(ExportArgs),
    /// Copy an archive on s3:// (its base object and the parts its appends
    /// added) to one local .lbox file, byte for byte.
    Copy(CopyArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `lockbox man | man -l -`.
    Man(ManArgs),
    /// Mount an archive read-only (FUSE) and serve it in the foreground
    /// until it is unmounted or interrupted (Ctrl-C, SIGTERM unmount it).
    Mount(MountArgs),
    /// Unmount an archive mounted by `lockbox mount`.
    Umount(UmountArgs),
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Show the slots in use: position, kind, KDF cost or recipient type.
    List(KeyListArgs),
    /// Add password or recipient slots; an existing key (password or -i)
    /// unlocks the archive. Only the slot table is rewritten, unless a key
    /// needs larger slots: then the whole archive (signed with --sign).
    Add(Box<KeyAddArgs>),
    /// Remove slot SLOT (see `key list`); its bytes are overwritten. The
    /// last slot is never removed.
    Remove(KeyRemoveArgs),
}

/// The command line, with the options given before the command name moved
/// into the command's own (bad flags exit with code 2, in one line).
pub fn parse() -> Cli {
    let matches = Cli::command()
        .long_version(long_version())
        .try_get_matches()
        .unwrap_or_else(|e| crate::output::usage::exit(best_suggestion_first(e)));
    let mut cli = Cli::from_arg_matches(&matches)
        .unwrap_or_else(|e| crate::output::usage::exit(e.format(&mut Cli::command())));
    let mut after = &matches;
    while let Some((_, sub)) = after.subcommand() {
        after = sub;
    }
    let before = Given { matches: &matches, after };
    cli.command.inherit(&cli.before, &before);
    cli
}

/// `lockbox --version`: the version, then the AEAD implementation that
/// seals and opens pages in this build on this CPU, and the ChaCha20
/// backend RustCrypto's would run (`-V` gives the version alone).
fn long_version() -> String {
    let aead = revault_lockbox_api::AeadBackend::detect();
    let backend = revault_lockbox_api::ChaChaBackend::detect();
    let built = if revault_lockbox_api::ChaChaBackend::BUILT_WITH_AVX512 { "with" } else { "without" };
    format!(
        "{}\npage AEAD: {aead}\nchacha20 backend: {backend} (built {built} the AVX-512 backend)",
        env!("CARGO_PKG_VERSION")
    )
}

/// clap lists similar commands least similar first (`lockbox creat`:
/// "'repair', 'create'"); the likeliest comes first here.
fn best_suggestion_first(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    if let Some(ContextValue::Strings(names)) = e.get(ContextKind::SuggestedSubcommand) {
        let names = names.iter().rev().cloned().collect();
        e.insert(ContextKind::SuggestedSubcommand, ContextValue::Strings(names));
    }
    e
}

/// Which options the command line spelled out before and after the command
/// name: a value given after it wins, one given before fills in.
pub struct Given<'m> {
    matches: &'m ArgMatches,
    after: &'m ArgMatches,
}

impl Given<'_> {
    /// Whether the option `id` (a field's name) was given before the command
    /// name and not after it.
    pub fn only_before(&self, id: &str) -> bool {
        let on_line = |m: &ArgMatches| m.value_source(id) == Some(ValueSource::CommandLine);
        on_line(self.matches) && !on_line(self.after)
    }

    /// `before`'s value where only it was given.
    pub fn take<T: Clone>(&self, id: &str, here: &mut T, before: &T) {
        if self.only_before(id) {
            *here = before.clone();
        }
    }
}

impl Command {
    /// Hands each option given before the command name to a command that
    /// uses it; the others are ignored, as they always were.
    fn inherit(&mut self, b: &BeforeCommand, given: &Given<'_>) {
        match self {
            Command::Create(a) => {
                a.lock.inherit(&b.read.unlock, given);
                a.quiet.inherit(&b.quiet, given);
                a.s3.inherit(&b.read.s3, given);
            }
            Command::List(ListArgs { read, .. })
            | Command::Cat(CatArgs { read, .. })
            | Command::Info(InfoArgs { read, .. })
            | Command::Log(LogArgs { read, .. })
            | Command::Mount(MountArgs { read, .. }) => read.inherit(&b.read, given),
            Command::Diff(DiffArgs { read, quiet, .. }) => {
                read.inherit(&b.read, given);
                given.take("quiet", quiet, &b.quiet.quiet);
            }
            Command::Extract(ExtractArgs { read, quiet, .. })
            | Command::Verify(VerifyArgs { read, quiet, .. }) => {
                read.inherit(&b.read, given);
                quiet.inherit(&b.quiet, given);
            }
            Command::Export(ExportArgs { read, quiet, .. }) => {
                read.inherit(&b.read, given);
                given.take("quiet", quiet, &b.quiet.quiet);
            }
            Command::Key(KeyCommand::List(a)) => a.s3.inherit(&b.read.s3, given),
            Command::Copy(a) => a.s3.inherit(&b.read.s3, given),
            Command::Key(KeyCommand::Add(a)) => a.unlock.inherit(&b.read.unlock, given),
            Command::Key(KeyCommand::Remove(KeyRemoveArgs { unlock, .. })) => {
                unlock.inherit(&b.read.unlock, given)
            }
            Command::Rm(RmArgs { unlock, quiet, s3, .. }) => {
                unlock.inherit(&b.read.unlock, given);
                quiet.inherit(&b.quiet, given);
                s3.inherit(&b.read.s3, given);
            }
            Command::Passwd(a) => a.password.inherit(&b.read.unlock.password, given),
            Command::Add(AddArgs { append }) | Command::Update(UpdateArgs { append, .. }) => {
                append.unlock.inherit(&b.read.unlock, given);
                append.quiet.inherit(&b.quiet, given);
                append.s3.inherit(&b.read.s3, given);
            }
            Command::Compact(CompactArgs { maintain: a, .. }) | Command::Repair(a) => {
                a.unlock.inherit(&b.read.unlock, given);
                a.quiet.inherit(&b.quiet, given);
            }
            Command::Keygen(_) | Command::Completions(_) | Command::Man(_) | Command::Umount(_) => {}
        }
    }
}

fn profile_parser() -> impl TypedValueParser<Value = WorkloadProfile> {
    PossibleValuesParser::new(WorkloadProfile::ALL.map(WorkloadProfile::name))
        .map(|name| WorkloadProfile::from_name(&name).expect("clap checked the name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    fn parsed(args: &[&str]) -> Cli {
        let matches = Cli::command().try_get_matches_from(args).unwrap();
        let mut cli = Cli::from_arg_matches(&matches).unwrap();
        let mut after = &matches;
        while let Some((_, sub)) = after.subcommand() {
            after = sub;
        }
        cli.command.inherit(&cli.before, &Given { matches: &matches, after });
        cli
    }

    #[test]
    fn options_before_the_command_reach_it_and_after_wins() {
        let Command::List(a) = parsed(&["lockbox", "--password-file", "p", "-i", "k", "list", "a"]).command
        else {
            panic!("not list")
        };
        assert_eq!(a.read.unlock.password.password_file.as_deref(), Some("p".as_ref()));
        assert_eq!(a.read.unlock.identities, ["k"].map(std::path::PathBuf::from));
        let args = ["lockbox", "--s3-requests", "3", "-q", "verify", "--s3-requests", "5", "a"];
        let Command::Verify(a) = parsed(&args).command else { panic!("not verify") };
        assert_eq!(a.read.s3.s3_requests, 5);
        assert!(a.quiet.quiet);
        let Command::Verify(a) = parsed(&["lockbox", "--s3-requests", "3", "verify", "a"]).command else {
            panic!("not verify")
        };
        assert_eq!(a.read.s3.s3_requests, 3);
        let Command::Key(KeyCommand::Remove(a)) =
            parsed(&["lockbox", "-i", "k", "key", "remove", "a", "1"]).command
        else {
            panic!("not key remove")
        };
        assert_eq!(a.unlock.identities.len(), 1);
    }

    #[test]
    fn commands_show_only_the_options_they_use() {
        let mut cli = Cli::command();
        cli.build();
        let longs = |name: &str| -> Vec<String> {
            let sub = cli.find_subcommand(name).unwrap();
            sub.get_arguments().filter_map(|a| a.get_long().map(str::to_owned)).collect()
        };
        let keygen = longs("keygen");
        for global in ["endpoint", "password-file", "quiet", "identity", "key-file"] {
            assert!(!keygen.iter().any(|l| l == global), "keygen shows --{global}");
        }
        assert!(longs("list").iter().any(|l| l == "endpoint"));
        assert!(!longs("list").iter().any(|l| l == "quiet"));
        assert!(longs("extract").iter().any(|l| l == "quiet"));
    }

    /// The `--threads` of the command `cli` runs, if it takes one.
    fn threads_of(cli: &Cli) -> Option<&ThreadsArgs> {
        match &cli.command {
            Command::Create(a) => Some(&a.input.threads),
            Command::Add(AddArgs { append }) | Command::Update(UpdateArgs { append, .. }) => {
                Some(&append.input.threads)
            }
            Command::Rm(a) => Some(&a.threads),
            Command::Compact(CompactArgs { maintain: a, .. }) | Command::Repair(a) => Some(&a.threads),
            Command::List(ListArgs { threads, .. })
            | Command::Info(InfoArgs { threads, .. })
            | Command::Extract(ExtractArgs { threads, .. })
            | Command::Cat(CatArgs { threads, .. })
            | Command::Verify(VerifyArgs { threads, .. })
            | Command::Export(ExportArgs { threads, .. })
            | Command::Diff(DiffArgs { threads, .. })
            | Command::Mount(MountArgs { threads, .. }) => Some(threads),
            _ => None,
        }
    }

    #[test]
    fn threads_reach_every_command_that_seals_or_opens_pages() {
        let lines: [&[&str]; 14] = [
            &["create", "-o", "a", "p"],
            &["add", "a", "p"],
            &["update", "a", "p"],
            &["rm", "a", "p"],
            &["compact", "a"],
            &["repair", "a"],
            &["list", "a"],
            &["info", "a"],
            &["extract", "a"],
            &["cat", "a", "p"],
            &["verify", "a"],
            &["export", "a", "-o", "t"],
            &["diff", "a", "--from", "1"],
            &["mount", "a", "m"],
        ];
        let cores = std::thread::available_parallelism().unwrap().get();
        for line in lines {
            let with = |threads: &[&str]| {
                let args = [&["lockbox", line[0]][..], threads, &line[1..]].concat();
                threads_of(&parsed(&args)).unwrap_or_else(|| panic!("{args:?} takes no --threads")).count()
            };
            assert_eq!(with(&["--threads", "3"]), Some(3), "{line:?}");
            assert_eq!(with(&["--threads=1"]), Some(1), "{line:?}");
            assert_eq!(with(&["--threads", "0"]), Some(cores), "{line:?}: 0 is one per core");
            assert_eq!(with(&[]), None, "{line:?}: the profile's");
        }
        let mut cli = Cli::command();
        cli.build();
        let mut taking: Vec<&str> = cli
            .get_subcommands()
            .filter(|sub| sub.get_arguments().any(|a| a.get_long() == Some("threads")))
            .map(|sub| sub.get_name())
            .collect();
        let mut expected = lines.map(|line| line[0]);
        taking.sort_unstable();
        expected.sort_unstable();
        assert_eq!(taking, expected, "the commands that show --threads");
    }

    #[test]
    fn a_thread_count_that_is_no_count_is_a_usage_error() {
        for bad in ["abc", "-1", "1.5", "", "1025"] {
            let e =
                Cli::command().try_get_matches_from(["lockbox", "list", "--threads", bad, "a"]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad}");
            assert_eq!(e.exit_code(), i32::from(crate::exit::USAGE), "{bad}");
        }
    }
}
