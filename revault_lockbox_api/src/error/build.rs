//! How the crate makes its errors (from I/O failures, decoding, a
//! malformed or tampered unit) and which of them are authentication
//! failures, beside the type itself in `mod.rs`.

use std::io;
use std::path::PathBuf;

use super::{DecodeError, Error, KeyError};

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { action, path, source }
    }

    pub(crate) fn stream(action: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Stream { action, source }
    }

    /// For a failed read of an [`EntryReader`](crate::archive::EntryReader):
    /// the library's error it carried inside the `io::Error` (damage, a
    /// checksum mismatch), else an [`Error::Stream`] of `action`.
    pub(crate) fn from_reader(action: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| {
            if !source.get_ref().is_some_and(|inner| inner.is::<Error>()) {
                return Error::Stream { action, source };
            }
            *source.into_inner().and_then(|inner| inner.downcast::<Error>().ok()).expect("checked the type")
        }
    }

    /// The action of the [`Error::Stream`] of a failed read of a file's
    /// content, which the walk names after the file.
    pub(crate) const READING_CONTENT: &'static str = "reading a file's content";

    /// The actions of [`Error::Stream`]s from writing an archive.
    const ARCHIVE_WRITES: [&'static str; 7] = [
        "writing a page",
        "writing an index node",
        "writing the index root",
        "writing the trailer",
        "writing the archive header",
        "flushing the archive",
        "writing the tar stream",
    ];

    /// `self`, a failed write of an archive (or tar stream) named after
    /// `path`: the user's name for the file, never a temporary one.
    pub(crate) fn writing_to(self, path: &std::path::Path) -> Error {
        match self {
            Error::Stream { action, source } if Error::ARCHIVE_WRITES.contains(&action) => {
                Error::Io { action: "writing", path: path.to_path_buf(), source }
            }
            e => e,
        }
    }

    /// The error for a structure read from the archive that is not well
    /// formed.
    pub(crate) fn malformed(what: &'static str, why: &'static str) -> Error {
        Error::Malformed(DecodeError { what, why })
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
                | Error::KdfOverBudget { .. }
                | Error::NoIdentityMatched
                | Error::WrongKeyFile
                | Error::Key(KeyError::WrongPassphrase)
                | Error::Key(KeyError::PluginRefused { .. })
                | Error::Tampered { .. }
                | Error::DamagedPage { .. }
                | Error::StoredForm { .. }
                | Error::Malformed(_)
                | Error::UnsupportedVersion { .. }
                | Error::ChecksumMismatch { .. }
                | Error::UnsafePath { .. }
                | Error::Signature(_)
        )
    }
}

impl From<DecodeError> for Error {
    fn from(err: DecodeError) -> Error {
        Error::Malformed(err)
    }
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Stream { action: "I/O", source }
    }
}
