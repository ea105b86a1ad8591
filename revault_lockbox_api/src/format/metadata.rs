//! What an entry holds besides its path, kind and content: mode, owner,
//! mtime, owner names and extended attributes. Plain data, shared by the
//! entry model (`entry.rs`) and the optional tail that encodes the names
//! and xattrs (`extra.rs`).

/// One extended attribute: its full name (`user.x`, `system.posix_acl_access`)
/// and its value, bytes kept exactly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Xattr {
    /// Namespace-qualified name, at most 255 bytes.
    pub name: Vec<u8>,
    /// Value, at most 64 KiB.
    pub value: Vec<u8>,
}

/// What an entry holds besides its path, kind and content: mode, owner,
/// mtime, owner names and xattrs. A caller gives it to
/// [`ArchiveWriter`](crate::ArchiveWriter) for each entry; an [`Entry`](crate::Entry)
/// read back holds it as [`Entry::meta`](crate::Entry::meta).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// Permission bits (only `0o7777` is kept).
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime_secs: i64,
    /// Nanoseconds part of the modification time.
    pub mtime_nanos: u32,
    /// Owner's user name (1 to 255 bytes, no NUL), when known.
    pub user: Option<Vec<u8>>,
    /// Owner's group name, when known.
    pub group: Option<Vec<u8>>,
    /// Extended attributes, names unique (stored sorted).
    pub xattrs: Vec<Xattr>,
}

impl Metadata {
    /// Mode, owner and mtime given directly; no names, no xattrs.
    pub fn new(mode: u32, uid: u32, gid: u32, mtime_secs: i64, mtime_nanos: u32) -> Metadata {
        Metadata { mode, uid, gid, mtime_secs, mtime_nanos, ..Metadata::default() }
    }

    /// The same, with the owner's user and group names.
    pub fn with_names(mut self, user: Option<Vec<u8>>, group: Option<Vec<u8>>) -> Metadata {
        (self.user, self.group) = (user, group);
        self
    }

    /// The same, with extended attributes.
    pub fn with_xattrs(mut self, xattrs: Vec<Xattr>) -> Metadata {
        self.xattrs = xattrs;
        self
    }

    /// Takes mode, owner and mtime from file-system metadata.
    pub fn from_fs(md: &std::fs::Metadata) -> Metadata {
        use std::os::unix::fs::MetadataExt;
        Metadata::new(md.mode() & 0o7777, md.uid(), md.gid(), md.mtime(), md.mtime_nsec() as u32)
    }
}
