//! What goes wrong, typed: the library's error (an enum callers can match,
//! with messages that say what failed and where) and the key material's
//! error ([`KeyError`], which [`Error::Key`] carries). They sit at the
//! bottom so every layer can raise them; [`Error::Strict`] carries a
//! create's warning.

use std::fmt;
use std::io;
use std::path::PathBuf;

pub use crate::format::DecodeError;
use crate::quote::Quoted;
use crate::warning::CreateWarning;

/// A path as stored in an archive: raw bytes, shown quoted ([`Quoted`]), so
/// that a hostile name cannot send control sequences to a terminal.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryPath(pub Vec<u8>);

impl EntryPath {
    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<&[u8]> for EntryPath {
    fn from(bytes: &[u8]) -> EntryPath {
        EntryPath(bytes.to_vec())
    }
}

impl fmt::Display for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Quoted::bytes(&self.0).fmt(f)
    }
}

impl fmt::Debug for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

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
    /// No key-file slot opened with the key file given.
    #[error("wrong key file or corrupted key slot")]
    WrongKeyFile,
    /// No recipient slot opened with the identities given.
    #[error("no identity matched a key slot (wrong identity or corrupted key slot)")]
    NoIdentityMatched,
    /// The keys to lock an archive with are unusable (none, too many).
    #[error("{0}")]
    BadKeys(String),
    /// A recipient or identity could not be read or used.
    #[error(transparent)]
    Key(#[from] KeyError),
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
    /// Bytes read from the archive do not form a valid structure.
    #[error("archive is corrupted or not a lockbox archive: {0}")]
    Malformed(#[from] DecodeError),
    /// The archive was written in a format version this library does not read.
    #[error("unsupported archive format version {found} (this lockbox reads version {supported})")]
    UnsupportedVersion {
        /// Version found in the file.
        found: u16,
        /// Version this library reads.
        supported: u16,
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
    /// An exclude pattern does not parse.
    #[error("invalid exclude pattern {pattern:?}: {reason}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why it does not parse.
        reason: String,
    },
    /// A tar stream given to import is malformed, truncated, or holds an
    /// entry that cannot be stored safely.
    #[error("tar stream, {at}: {reason}")]
    BadTar {
        /// Which entry (its number from 1, and its name when known).
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// Entries were added out of the index order, or twice.
    #[error("entry {path} added after {previous}: entries must come in path order, each once")]
    OutOfOrder {
        /// The entry added before.
        previous: EntryPath,
        /// The entry refused.
        path: EntryPath,
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
    /// Page size, level or thread counts out of range.
    #[error("invalid tuning: {0}")]
    InvalidTuning(String),
    /// Argon2id parameters that Argon2 or a reader would refuse.
    #[error("invalid or too costly Argon2id parameters: {0}")]
    InvalidKdf(String),
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

/// What went wrong parsing keys or reading a slot.
///
/// Messages never include secret material: a bad identity line is named by
/// its number, not its content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key file is malformed (the text never appears in the message).
    #[error("invalid key file: {0}")]
    InvalidKeyFile(&'static str),
    /// A recipient string is not one of the supported kinds or is malformed.
    #[error("invalid recipient {shown}: {reason}")]
    InvalidRecipient {
        /// The start of the string, for the message.
        shown: String,
        /// Why it was refused.
        reason: String,
    },
    /// A line of a recipients file is not a valid recipient.
    #[error("{source_name}, line {line}: {reason}")]
    RecipientsFile {
        /// The file (or "recipients" when it has no name).
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// Why the line was refused.
        reason: String,
    },
    /// An identity is malformed or of a kind not supported.
    #[error("invalid identity{}: {reason}", line.map(|l| format!(" on line {l}")).unwrap_or_default())]
    InvalidIdentity {
        /// 1-based line number in an age identity file, when there is one.
        line: Option<usize>,
        /// Why it was refused (never the key itself).
        reason: String,
    },
    /// A file holds no recipient or no identity.
    #[error("{0} holds no keys")]
    Empty(String),
    /// A passphrase-protected identity needs a passphrase and none was given.
    #[error("identity is passphrase-protected and no passphrase was given")]
    PassphraseRequired,
    /// The passphrase did not decrypt the identity.
    #[error("wrong passphrase or corrupted identity")]
    WrongPassphrase,
    /// Post-quantum and classical-only recipients were given together.
    #[error(
        "post-quantum recipients ({pq}) cannot be mixed with classical-only recipients ({classical}): \
         the archive would open with a key a quantum computer can break; allow mixing explicitly to do it anyway"
    )]
    MixedRecipients {
        /// How many hybrid recipients.
        pq: usize,
        /// How many classical-only recipients.
        classical: usize,
    },
    /// A slot body would not fit the archive's slot room.
    #[error("key slot body of {len} bytes exceeds the {max}-byte limit")]
    SlotTooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A slot body is not well formed.
    #[error("malformed recipient key slot: {0}")]
    MalformedSlot(&'static str),
    /// Wrapping a key to a recipient failed.
    #[error("cannot wrap key for recipient: {0}")]
    Wrap(String),
    /// Reading a key file failed.
    #[error("reading {}", Quoted::path(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The system's random generator failed.
    #[error("random generator failed")]
    Random(#[source] std::io::Error),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { action, path, source }
    }

    pub(crate) fn stream(action: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Stream { action, source }
    }

    pub(crate) fn tampered(what: impl Into<String>) -> Error {
        Error::Tampered { what: what.into() }
    }

    /// Whether the error means the archive failed authentication (wrong
    /// password, tampering, damage, a hostile entry), as opposed to I/O or
    /// usage problems.
    pub fn is_authentication(&self) -> bool {
        matches!(
            self,
            Error::WrongPassword
                | Error::NoIdentityMatched
                | Error::WrongKeyFile
                | Error::Key(KeyError::WrongPassphrase)
                | Error::Tampered { .. }
                | Error::DamagedPage { .. }
                | Error::Malformed(_)
                | Error::UnsupportedVersion { .. }
                | Error::ChecksumMismatch { .. }
                | Error::UnsafePath { .. }
        )
    }
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Stream { action: "I/O", source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_without_control_bytes() {
        let p = EntryPath(b"a\x1b]0;x\x07\xff/b\\".to_vec());
        assert_eq!(p.to_string(), "a\\033]0;x\\a\\377/b\\\\");
        assert_eq!(EntryPath(b"caf\xc3\xa9".to_vec()).to_string(), "café");
    }
}
