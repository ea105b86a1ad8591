//! What a create skipped or stored incompletely ([`CreateWarning`]): the
//! library reports it, the caller decides how to show it and what it means
//! for its exit status. It sits at the bottom, beside the error, so every
//! layer can raise it and [`Error::Strict`](crate::error::Error::Strict)
//! can carry it.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::quote::Quoted;

/// Something `create` skipped or stored incompletely.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateWarning {
    /// The file-system path (as given, joined to the base directory).
    pub path: PathBuf,
    /// What happened.
    pub kind: WarningKind,
}

/// What happened to a path during `create`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// A socket, FIFO or device: the format has no entry for it. Not
    /// stored (tar: "socket ignored").
    Unsupported(&'static str),
    /// The archive being written, found inside the tree. Not stored.
    ArchiveItself,
    /// Removed between the directory read and its opening. Not stored.
    Vanished,
    /// Replaced by another file, or turned into another kind (a symbolic
    /// link, a FIFO), between the walk's look at it and its opening. Not
    /// stored: what is there now was never meant to be archived.
    Replaced,
    /// Its size or mtime changed while it was read: stored with the
    /// `stored` bytes read, up to its size when opened.
    Changed {
        /// Content bytes stored.
        stored: u64,
    },
    /// Could not be opened or read (permissions, I/O). Not stored; for a
    /// directory, nothing below it is stored either.
    Unreadable {
        /// The error's kind.
        kind: io::ErrorKind,
        /// The error's text.
        error: String,
    },
    /// With `dereference`: a symbolic link to a directory that contains it.
    /// Not followed.
    Loop,
    /// Its stored name is longer than an archive holds (16 KiB). Not
    /// stored, nor anything below it.
    NameTooLong,
    /// With `xattrs`: its extended attributes could not be read, or are
    /// more than an entry holds (72 KiB). Stored without them.
    XattrsNotStored {
        /// Why.
        error: String,
    },
}

impl CreateWarning {
    pub(crate) fn new(path: PathBuf, kind: WarningKind) -> CreateWarning {
        CreateWarning { path, kind }
    }

    pub(crate) fn unreadable(path: PathBuf, error: &io::Error) -> CreateWarning {
        let kind = WarningKind::Unreadable { kind: error.kind(), error: error.to_string() };
        CreateWarning { path, kind }
    }

    /// Whether the archive misses or holds a changed copy of something the
    /// caller asked for, as tar's exit status 1 says ("some files
    /// differ"). Files the format cannot hold and the archive itself are
    /// skipped without failing.
    pub fn is_failure(&self) -> bool {
        !matches!(self.kind, WarningKind::Unsupported(_) | WarningKind::ArchiveItself)
    }
}

impl fmt::Display for CreateWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", Quoted::path(&self.path))?;
        match &self.kind {
            WarningKind::Unsupported(what) => write!(f, "{what} ignored"),
            WarningKind::ArchiveItself => f.write_str("file is the archive; not dumped"),
            WarningKind::Vanished => f.write_str("file removed before we read it"),
            WarningKind::Replaced => f.write_str("file replaced or changed kind before we read it"),
            WarningKind::Changed { stored } => {
                write!(f, "file changed as we read it ({stored} bytes stored)")
            }
            WarningKind::Unreadable { error, .. } => write!(f, "cannot read: {error}"),
            WarningKind::Loop => f.write_str("file system loop detected"),
            WarningKind::NameTooLong => f.write_str("name too long for an archive (over 16 KiB)"),
            WarningKind::XattrsNotStored { error } => {
                write!(f, "extended attributes not stored: {error}")
            }
        }
    }
}
