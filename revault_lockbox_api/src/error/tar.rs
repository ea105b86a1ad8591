//! Why a tar stream given to `create --from-tar` is refused, and how the
//! refused entry is named.

use super::EntryPath;

/// Why a tar stream given to import is refused ([`Error::BadTar`](super::Error::BadTar)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TarReason {
    /// The input held no byte at all (the upstream `tar` failed, or stdin
    /// was redirected from nothing). GNU tar refuses it the same way; an
    /// empty archive is two zero blocks, which is accepted.
    #[error("the input is empty: this does not look like a tar archive")]
    Empty,
    /// The stream, a header or a pax record could not be read: the tar
    /// reader's message (which may quote header bytes), escaped and
    /// shortened to one short line.
    #[error("{0}")]
    Unreadable(String),
    /// An owner id or mtime out of the range an entry holds.
    #[error("{what} {value} is out of range")]
    OutOfRange {
        /// Which field ("uid", "gid", "mtime").
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// A pax `mtime` record that is not a number.
    #[error("pax mtime is not a number")]
    BadPaxTime,
    /// A pax sparse file (`GNU.sparse.*`).
    #[error("pax sparse files (GNU.sparse.*) are not supported")]
    Sparse,
    /// A file's content ended before its size.
    #[error("truncated: its content ends after {stored} of {expected} bytes")]
    Truncated {
        /// Bytes read.
        stored: u64,
        /// The size its header gives.
        expected: u64,
    },
    /// A symbolic link with an empty or over-long target.
    #[error("a symbolic link with an empty or over-long target")]
    BadSymlink,
    /// A name or hard-link target that cannot be stored safely (a `..`
    /// component, an absolute hard-link target).
    #[error("{0}")]
    UnsafeName(&'static str),
    /// A hard link to something that is not a file earlier in the stream.
    #[error("hard link to {0}, which is not a file earlier in the stream")]
    HardLinkTarget(EntryPath),
    /// An entry below a file or symbolic link of the stream.
    #[error("lies below {0}, which is not a directory")]
    BelowLeaf(EntryPath),
    /// Extended attributes an entry cannot hold.
    #[error("extended attribute{}: {why}", if *several { "s" } else { "" })]
    Xattrs {
        /// Whether the list as a whole is refused, not one attribute.
        several: bool,
        /// Why.
        why: &'static str,
    },
}

/// How a refused entry is named after "tar stream": ", entry 3 (a/b)";
/// nothing when the stream as a whole is refused.
pub(super) fn tar_entry(number: Option<u64>, path: Option<&EntryPath>) -> String {
    match (number, path) {
        (Some(n), Some(path)) => format!(", entry {n} ({path})"),
        (Some(n), None) => format!(", entry {n}"),
        (None, Some(path)) => format!(", entry {path}"),
        (None, None) => String::new(),
    }
}
