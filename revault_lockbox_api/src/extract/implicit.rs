//! Directories extraction makes that the archive does not list (implicit
//! parents): a path `a/b/c` with no entry `a` or `a/b` makes both. Deep
//! paths sharing no directory entry could make a small archive create
//! hundreds of thousands of directories (32 files 8,192 deep, 6.8 KB:
//! 262,144 directories), so the first pass counts them against a limit in
//! proportion to the archive's stored size (issue 27, case 6).

use crate::error::{Error, Result};
use crate::format::{is_within, Entry, EntryKind};

/// Implicit directories allowed whatever the archive's size.
pub(crate) const MIN_IMPLICIT_DIRS: u64 = 4096;
/// Stored bytes of archive per implicit directory allowed beyond that.
pub(crate) const BYTES_PER_IMPLICIT_DIR: u64 = 64;

/// The default limit for an archive of `stored_len` bytes.
pub(crate) fn default_limit(stored_len: u64) -> u64 {
    MIN_IMPLICIT_DIRS.max(stored_len / BYTES_PER_IMPLICIT_DIR)
}

/// Counts, in index order, the directories above each entry that no entry
/// lists. Memory is one path and its directories' lengths.
pub(super) struct ImplicitDirs {
    /// The last entry's path; `open` holds the lengths of its prefixes that
    /// are directories (listed or implicit), shortest first.
    last: Vec<u8>,
    open: Vec<usize>,
    made: u64,
    limit: u64,
}

impl ImplicitDirs {
    pub(super) fn new(limit: u64) -> ImplicitDirs {
        ImplicitDirs { last: Vec::new(), open: Vec::new(), made: 0, limit }
    }

    /// Counts the directories `e` needs that are neither listed nor made
    /// for an earlier entry; fails past the limit.
    pub(super) fn entry(&mut self, e: &Entry) -> Result<()> {
        while self.open.last().is_some_and(|&len| !is_within(&self.last[..len], &e.path)) {
            self.open.pop();
        }
        let from = self.open.last().map_or(0, |&len| len + 1);
        for (i, &b) in e.path.iter().enumerate().skip(from) {
            if b == b'/' {
                self.open.push(i);
                self.made += 1;
            }
        }
        if self.made > self.limit {
            return Err(Error::TooManyImplicitDirs { limit: self.limit });
        }
        if matches!(e.kind, EntryKind::Dir) {
            self.open.push(e.path.len());
        }
        self.last.clone_from(&e.path);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Metadata;

    fn entry(path: &str, kind: EntryKind) -> Entry {
        Entry { path: path.into(), kind, meta: Metadata::new(0o755, 0, 0, 0, 0), extent: None, sparse: None }
    }

    #[test]
    fn only_directories_no_entry_lists_are_counted() {
        let mut dirs = ImplicitDirs::new(3);
        dirs.entry(&entry("a", EntryKind::Dir)).unwrap();
        dirs.entry(&entry("a/b/c", EntryKind::Symlink { target: b"x".to_vec() })).unwrap();
        dirs.entry(&entry("a/b/d", EntryKind::Symlink { target: b"x".to_vec() })).unwrap();
        assert_eq!(dirs.made, 1, "a is listed, a/b made once");
        dirs.entry(&entry("x/y/z", EntryKind::Dir)).unwrap();
        assert_eq!(dirs.made, 3);
        let err = dirs.entry(&entry("x/y/z/w/v", EntryKind::Dir)).unwrap_err();
        assert!(matches!(err, Error::TooManyImplicitDirs { limit: 3 }), "{err}");
    }
}
