//! What goes wrong, typed: the library's error (an enum callers can match,
//! with messages that say what failed and where), the key material's
//! ([`KeyError`]) and the signatures' ([`SignatureError`]). They sit at
//! the bottom so every layer can raise them.

use std::io;
use std::ops::RangeInclusive;
use std::path::PathBuf;

pub use crate::format::DecodeError;
use crate::format::KEY_SLOTS;
use crate::quote::Quoted;
use crate::warning::CreateWarning;

mod build;
mod kdf;
mod key;
mod path;
mod signature;
mod tar;

pub use kdf::KdfError;
pub use key::KeyError;
pub use path::EntryPath;
pub use signature::SignatureError;
use tar::tar_entry;
pub use tar::TarReason;

/// Everything that can go wrong creating, opening or extracting an archive.
///
/// Authentication failures are deliberately coarse: a wrong password and a
/// damaged key slot read the same, and a failed page says which page, not
/// what inside it was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation failed on `path`.
    #[error("{action} {}", Quoted::path(path))]
    Io {
        /// What was being done ("reading", "creating", ...).
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// I/O on a stream with no path (a pipe, a caller's reader or writer).
    #[error("{action}")]
    Stream {
        /// What was being done.
        action: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// No key slot opened with the password given.
    #[error("wrong password or corrupted key slot")]
    WrongPassword,
    /// Trying the next password slot would take the open past its budget
    /// of Argon2id work, and none tried so far opened: the slot table is
    /// not authenticated before a slot opens, so its costs may be an
    /// attacker's.
    #[error(
        "password slot {slot} asks for {} MiB × {t} passes of Argon2id, over this open's budget of {} MiB × passes \
         (none cheaper opened)",
        m_kib / 1024,
        budget / 1024
    )]
    KdfOverBudget {
        /// The slot's position in the table.
        slot: usize,
        /// Its memory in KiB.
        m_kib: u32,
        /// Its passes.
        t: u32,
        /// The budget, in KiB × passes.
        budget: u64,
    },
    /// Extraction would make more directories the archive does not list
    /// (parents of paths stored without them) than allowed.
    #[error("the archive's paths need more than {limit} directories it does not list")]
    TooManyImplicitDirs {
        /// The limit in effect.
        limit: u64,
    },
    /// No key-file slot opened with the key file given.
    #[error("wrong key file or corrupted key slot")]
    WrongKeyFile,
    /// No recipient slot opened with the identities given.
    #[error("no identity matched a key slot (wrong identity or corrupted key slot)")]
    NoIdentityMatched,
    /// No key, or more than the archive's free slots, given to lock it with.
    #[error("{given} keys given and {in_use} slots in use; an archive takes 1 to {KEY_SLOTS}")]
    KeyCount {
        /// Keys given.
        given: usize,
        /// Slots already in use.
        in_use: usize,
    },
    /// Every key slot is in use: one must be removed before another is
    /// written.
    #[error("all {KEY_SLOTS} slots are in use: remove one first")]
    SlotsFull,
    /// Removing the last key slot in use would leave nothing that opens
    /// the archive.
    #[error("refusing to remove the last key slot: nothing could open the archive")]
    LastSlot,
    /// A recipient's slot body is larger than a slot holds.
    #[error("the slot for {recipient} does not fit in 4 KiB")]
    RecipientSlotTooLarge {
        /// The recipient, as its public string.
        recipient: String,
    },
    /// A recipient or identity could not be read or used.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A session's signatures do not satisfy the trusted signers.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// A sealed part of the archive failed authentication: it was modified,
    /// truncated, reordered or taken from another archive.
    #[error("archive is corrupted or was tampered with: {what} failed authentication")]
    Tampered {
        /// Which part ("page 12", "index root", "trailer").
        what: String,
    },
    /// A data page failed authentication; the files it holds are damaged,
    /// the others may be intact.
    #[error("archive is corrupted or was tampered with: page {number} failed authentication")]
    DamagedPage {
        /// The page's number.
        number: u64,
    },
    /// A sealed unit authenticated, so someone holding the key wrote it,
    /// but its stored form breaks FORMAT.md §3.4 (a zstd frame that is
    /// not exactly one frame of its plain length, a raw unit of another
    /// length): malformed, not damaged, and refused by every reader.
    #[error("archive is corrupted or not a lockbox archive: {what} authenticates, but {why}")]
    StoredForm {
        /// Which unit ("page 12", "index root").
        what: String,
        /// What is wrong with its stored form.
        why: &'static str,
    },
    /// Bytes read from the archive do not form a valid structure. The
    /// message includes the [`DecodeError`], which is not also returned
    /// by `source()`: it is printed once.
    #[error("archive is corrupted or not a lockbox archive: {0}")]
    Malformed(DecodeError),
    /// The archive was written in a format version this library does not read.
    #[error(
        "{}",
        if *found < *oldest {
            format!("archive format version {found}: made by an earlier lockbox, not readable by this one (it reads {})", versions(*oldest, *newest))
        } else {
            format!("unsupported archive format version {found} (this lockbox reads {}; written by a newer lockbox?)", versions(*oldest, *newest))
        }
    )]
    UnsupportedVersion {
        /// Version found in the file.
        found: u16,
        /// The oldest version this library reads.
        oldest: u16,
        /// The newest version this library reads (the one it writes).
        newest: u16,
    },
    /// A file's content does not match the SHA-256 in the index.
    #[error("checksum mismatch for {path}: content differs from what was archived")]
    ChecksumMismatch {
        /// The entry's path.
        path: EntryPath,
    },
    /// An entry would write outside the destination or through a link.
    #[error("refusing unsafe path {path}: {reason}")]
    UnsafePath {
        /// The entry's path as stored.
        path: EntryPath,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The extraction target exists and overwriting was not asked for.
    #[error("{} already exists", Quoted::path(path))]
    AlreadyExists {
        /// The existing path.
        path: PathBuf,
    },
    /// A path asked for is not in the archive.
    #[error("{path}: not found in the archive")]
    NotFound {
        /// The path asked for.
        path: EntryPath,
    },
    /// A path asked for is in the archive but not a file.
    #[error("{path}: not a file in the archive")]
    NotAFile {
        /// The path asked for.
        path: EntryPath,
    },
    /// No input path was given: there is nothing to archive.
    #[error("nothing to archive: no input paths given")]
    NoInputs,
    /// An input path cannot be archived as given.
    #[error("input {}: {reason}", Quoted::path(path))]
    BadInput {
        /// The input path.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// With [`CreateOptions::strict`](crate::CreateOptions::strict): the walk
    /// met something it would otherwise skip with a warning.
    #[error("{0}; stopping (strict)")]
    Strict(CreateWarning),
    /// A member or exclude pattern does not parse.
    #[error("invalid pattern {pattern:?}: {reason}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why it does not parse.
        reason: String,
    },
    /// Walk rules (excludes, tag files) too many or too long for a session
    /// header to record (FORMAT.md §3.9b).
    #[error("walk rules the archive cannot record: {reason}")]
    BadWalkRules {
        /// What is wrong.
        reason: &'static str,
    },
    /// A tar stream given to import is malformed, truncated, or holds an
    /// entry that cannot be stored safely.
    #[error("tar stream{}: {reason}", tar_entry(*number, path.as_ref()))]
    BadTar {
        /// The entry's number in the stream, from 1 (0: the stream's start);
        /// none once the entries are sorted.
        number: Option<u64>,
        /// The entry's name, when known.
        path: Option<EntryPath>,
        /// What is wrong.
        reason: TarReason,
    },
    /// Entries were added out of the index order, or twice.
    #[error("entry {path} added after {previous}: entries must come in path order, each once")]
    OutOfOrder {
        /// The entry added before.
        previous: EntryPath,
        /// The entry refused.
        path: EntryPath,
    },
    /// A session label (`-m TEXT`) the format cannot hold.
    #[error("invalid session label: {reason}")]
    BadLabel {
        /// What is wrong.
        reason: &'static str,
    },
    /// A hard link names something that is not a file added earlier.
    #[error("hard link {path} points to {target}, which is not a file added earlier")]
    BadHardLink {
        /// The link.
        path: EntryPath,
        /// What it names.
        target: EntryPath,
    },
    /// A symbolic link target is empty, holds a NUL byte or is too long.
    #[error("symbolic link {path}: target is empty, holds a NUL byte or is longer than 4095 bytes")]
    BadSymlink {
        /// The link.
        path: EntryPath,
    },
    /// Owner names, extended attributes or a sparse map the format cannot
    /// hold (names too long, xattrs over their limit, segments that
    /// overlap or run past the size).
    #[error("{path}: {reason}")]
    BadMetadata {
        /// The entry.
        path: EntryPath,
        /// What is wrong.
        reason: &'static str,
    },
    /// A writer's page size, zstd level or counts out of range.
    #[error(
        "invalid tuning: page size {page_size} (4 KiB..16 MiB), small files' page size \
         {small_files_page_size} (page size..16 MiB), zstd level {zstd_level} ({zstd_levels:?}), \
         threads {threads}, pages in flight {pages_in_flight}"
    )]
    InvalidTuning {
        /// Bytes of plaintext per page.
        page_size: usize,
        /// Bytes of plaintext per page of small files.
        small_files_page_size: usize,
        /// The zstd level.
        zstd_level: i32,
        /// The levels zstd accepts.
        zstd_levels: RangeInclusive<i32>,
        /// Worker threads.
        threads: usize,
        /// Pages held in memory at once.
        pages_in_flight: usize,
    },
    /// A recovery record's percentage out of range.
    #[error("invalid recovery record: {percent} % (1 to {} %)", crate::format::MAX_PERCENT)]
    InvalidRecovery {
        /// The percentage asked for.
        percent: u8,
    },
    /// A recovery record asked for where none can be written.
    #[error("no recovery record can be written: {reason}")]
    RecoveryUnavailable {
        /// Why.
        reason: &'static str,
    },
    /// A reader's thread or page count is zero.
    #[error("invalid tuning: threads {threads}, pages in flight {pages_in_flight} (both at least 1)")]
    InvalidReadTuning {
        /// Worker threads.
        threads: usize,
        /// Pages held in memory at once.
        pages_in_flight: usize,
    },
    /// Argon2id parameters that Argon2 or a reader would refuse.
    #[error("invalid Argon2id parameters (memory {m_kib} KiB, {t} passes, {p} lanes): {reason}")]
    InvalidKdf {
        /// Memory in KiB.
        m_kib: u32,
        /// Passes.
        t: u32,
        /// Lanes.
        p: u32,
        /// Why they are refused.
        reason: KdfError,
    },
    /// Another process holds the archive's writer lock.
    #[error("{}: another lockbox is changing this archive", Quoted::path(path))]
    Locked {
        /// The archive.
        path: PathBuf,
    },
    /// The archive holds as many write sessions as its root can list: a
    /// change in place needs a compaction first.
    #[error("{}: too many write sessions for one more", Quoted::path(path))]
    TooManySessions {
        /// The archive.
        path: PathBuf,
    },
    /// A state asked for (`--session N`) that the archive does not hold.
    #[error("{}", no_such_state(*asked, *first, *states))]
    NoSuchState {
        /// The state asked for.
        asked: i64,
        /// The first state the archive holds (1 unless compacted).
        first: u64,
        /// The last state the archive holds.
        states: u64,
    },
    /// A time asked for (`--at TIME`) before the archive's first state.
    #[error(
        "no state at or before {}: the first is at {}",
        crate::civil::UtcTime::from_unix(at_ns.div_euclid(1_000_000_000)),
        crate::civil::UtcTime::from_unix(first_ns.div_euclid(1_000_000_000))
    )]
    NoStateAt {
        /// The time asked for, UTC nanoseconds since 1970.
        at_ns: i64,
        /// The first state's time.
        first_ns: i64,
    },
    /// A key slot asked for holds no key.
    #[error("slot {index} is not in use")]
    SlotNotInUse {
        /// The slot's position.
        index: usize,
    },
    /// An input path has a `..` component: its stored name would climb out
    /// of the archive.
    #[error("input {}: contains `..`", Quoted::path(path))]
    ParentInInput {
        /// The input path.
        path: PathBuf,
    },
    /// A change would leave the archive's entries inconsistent (an entry
    /// below a file, say); nothing was committed.
    #[error("{path}: {reason}")]
    Conflict {
        /// The path at fault.
        path: EntryPath,
        /// Why.
        reason: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why there is no state `asked` among states `first` to `last`.
fn no_such_state(asked: i64, first: u64, last: u64) -> String {
    let held = match first == last {
        true => format!("state {last} only"),
        false => format!("states {first} to {last}"),
    };
    match asked {
        1.. if asked.unsigned_abs() < first => {
            format!("state {asked} was removed by a compaction: the archive holds {held}")
        }
        // Between two states held: only calendar retention leaves gaps.
        1.. if asked.unsigned_abs() < last => format!(
            "state {asked} was removed by a compaction: the archive holds {held} with gaps (lockbox log lists them)"
        ),
        _ => format!("no state {asked}: the archive holds {held} (-1 is the last)"),
    }
}

/// The versions `oldest..=newest` in words: "version 3", "versions 3 and
/// 4", "versions 3 to 5".
fn versions(oldest: u16, newest: u16) -> String {
    match newest.saturating_sub(oldest) {
        0 => format!("version {oldest}"),
        1 => format!("versions {oldest} and {newest}"),
        _ => format!("versions {oldest} to {newest}"),
    }
}
