//! The library's error type: an enum callers can match, with messages that
//! say what failed and where.

use std::io;
use std::path::PathBuf;

use crate::format::DecodeError;

/// Everything that can go wrong creating, opening or extracting an archive.
///
/// Authentication failures are deliberately coarse: a wrong password and a
/// damaged key slot read the same, and a failed page says which page, not
/// what inside it was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation failed on `path`.
    #[error("{action} {}", path.display())]
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
    /// A sealed part of the archive failed authentication: it was modified,
    /// truncated, reordered or taken from another archive.
    #[error("archive is corrupted or was tampered with: {what} failed authentication")]
    Tampered {
        /// Which part ("page 12", "index", "trailer").
        what: String,
    },
    /// Bytes read from the archive do not form a valid structure.
    #[error("archive is corrupted or not a lockbox archive: {0}")]
    Malformed(#[from] DecodeError),
    /// The archive was written by a newer format version.
    #[error("unsupported archive format version {found} (this lockbox reads version {supported}); upgrade lockbox")]
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
        path: String,
    },
    /// An entry would write outside the destination or through a link.
    #[error("refusing unsafe path {path:?}: {reason}")]
    UnsafePath {
        /// The entry's path as stored.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The extraction target exists and overwriting was not asked for.
    #[error("{} already exists", path.display())]
    AlreadyExists {
        /// The existing path.
        path: PathBuf,
    },
    /// A caller's argument is unusable (an input path with `..`, a page size
    /// out of range, a path not in the archive ...).
    #[error("{0}")]
    InvalidInput(String),
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
    /// password, tampering, damage), as opposed to I/O or usage problems.
    pub fn is_authentication(&self) -> bool {
        matches!(
            self,
            Error::WrongPassword
                | Error::Tampered { .. }
                | Error::Malformed(_)
                | Error::ChecksumMismatch { .. }
        )
    }
}
