//! The hard-link rule of the format (docs/FORMAT.md: a hard link names an
//! earlier linked file), with one owner for every place that writes a
//! group of names for one file (an inode met by the walk, a tar link
//! group, an archive's file and its links on export, hard links extracted
//! as copies): the first name written is the file and holds the content;
//! every later one is a hard link naming that first one. The writer keeps
//! the other half (`ArchiveWriter::add_hardlink` takes only a file added
//! earlier with `add_linked_file`); the reader checks it as it reads
//! entries (`archive/entries.rs`).

use std::collections::HashMap;
use std::hash::Hash;

/// The first name written of each link group, by the group's key.
#[derive(Debug)]
pub(crate) struct FirstLinks<K> {
    first: HashMap<K, Vec<u8>>,
}

impl<K: Eq + Hash> FirstLinks<K> {
    pub(crate) fn new() -> FirstLinks<K> {
        FirstLinks { first: HashMap::new() }
    }

    /// What a later member of `group` names as its target; `None` while
    /// no member was written, so the one at hand is the file.
    pub(crate) fn first(&self, group: &K) -> Option<&[u8]> {
        self.first.get(group).map(Vec::as_slice)
    }

    /// Records that `path` was written as `group`'s file; a group keeps
    /// its first.
    pub(crate) fn written(&mut self, group: K, path: Vec<u8>) {
        self.first.entry(group).or_insert(path);
    }
}
