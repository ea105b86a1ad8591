//! Streaming the entries: index leaves read in order, opened on worker
//! threads with bounded read-ahead, and checked on the way (paths strictly
//! increasing, file contents ascending and not overlapping, hard links
//! naming an earlier file with the same content, counts as the root says).

use std::collections::HashMap;
use std::sync::Arc;

use crate::format::{
    is_within, malformed_error, path_cmp, Child, EntriesLeaf, Entry, EntryKind, Extent, IndexNodeId, Table,
    ARCHIVE_ID_LEN, DIGEST_LEN,
};
use crate::index::{read_sealed, LeafCursor};
use crate::pipeline::{open_index_node, OrderedPool};
use crate::storage::ReadAt;
use crate::{Archive, Error, Result};

type OpenedLeaf = (Child, Result<EntriesLeaf>);
/// Linked files by path: where their content is, and its digest.
type LinkTargets = HashMap<Vec<u8>, (Extent, [u8; DIGEST_LEN])>;

/// The archive's entries in index order; see [`Archive::entries`]. Yields
/// an error once, then ends, when the index is damaged.
pub struct Entries<'a> {
    src: &'a dyn ReadAt,
    keys: Arc<crate::crypto::SessionKeys>,
    archive_id: [u8; ARCHIVE_ID_LEN],
    cursor: LeafCursor<'a>,
    pool: OrderedPool<OpenedLeaf>,
    read_ahead: usize,
    current: std::vec::IntoIter<Entry>,
    check: Checks,
    /// Entries before this path are skipped (a walk from a lookup).
    start: Option<Vec<u8>>,
    done: bool,
}

/// What a walk checks across leaves.
struct Checks {
    last_path: Option<Vec<u8>>,
    /// The last entry that is not a directory: nothing may lie below it,
    /// and in the index order anything below it would come right after.
    last_leaf: Option<Vec<u8>>,
    /// End of the last file's content in the data stream.
    last_end: u64,
    stream_len: u64,
    /// Files that hard links may name, when the walk started at the first
    /// entry (a walk from the middle cannot know them).
    linked: Option<LinkTargets>,
    seen: u64,
    expected: u64,
}

impl Checks {
    fn entry(&mut self, e: &Entry) -> Result<()> {
        if self.last_path.as_ref().is_some_and(|last| path_cmp(last, &e.path).is_ge()) {
            return Err(malformed_error("index", "paths not in strictly increasing order"));
        }
        if self.last_leaf.as_ref().is_some_and(|leaf| is_within(leaf, &e.path)) {
            let reason = "it lies below a symbolic link or file of the archive";
            return Err(Error::UnsafePath { path: e.path.as_slice().into(), reason });
        }
        self.last_path = Some(e.path.clone());
        if !matches!(e.kind, EntryKind::Dir) {
            self.last_leaf = Some(e.path.clone());
        }
        self.seen += 1;
        let Some(extent) = e.extent else { return Ok(()) };
        if extent.end() > self.stream_len {
            return Err(malformed_error("index entry", "content lies outside the data pages"));
        }
        match &e.kind {
            EntryKind::File { sha256, .. } => {
                if extent.offset < self.last_end {
                    return Err(malformed_error("index entry", "file contents overlap or are out of order"));
                }
                self.last_end = extent.end();
                if let (true, Some(linked)) = (extent.linked, &mut self.linked) {
                    linked.insert(e.path.clone(), (extent, *sha256));
                }
            }
            EntryKind::Hardlink { target, sha256, .. } => {
                if path_cmp(target, &e.path).is_ge() {
                    return Err(malformed_error("hard link", "does not name an earlier entry"));
                }
                if let Some(linked) = &self.linked {
                    let same = linked.get(target).is_some_and(|(x, sha)| {
                        (x.offset, x.size) == (extent.offset, extent.size) && sha == sha256
                    });
                    if !same {
                        return Err(malformed_error("hard link", "does not name an earlier linked file"));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        if self.linked.is_some() && self.seen != self.expected {
            return Err(malformed_error("index", "entry count differs from the root's"));
        }
        Ok(())
    }
}

impl<'a> Entries<'a> {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some(e) = self.current.next() {
                if self.start.as_ref().is_some_and(|s| path_cmp(&e.path, s).is_lt()) {
                    continue;
                }
                self.start = None;
                self.check.entry(&e)?;
                return Ok(Some(e));
            }
            while self.pool.in_flight() < self.read_ahead {
                let Some(next) = self.cursor.next() else { break };
                let (id, child) = next?;
                self.submit(id, child)?;
            }
            let Some((child, leaf)) = self.pool.pop() else {
                self.check.finish()?;
                return Ok(None);
            };
            let leaf = leaf?;
            if leaf.entries[0].path != child.first_key {
                return Err(malformed_error("index leaf", "first path differs from its parent's"));
            }
            self.current = leaf.entries.into_iter();
        }
    }

    fn submit(&mut self, id: IndexNodeId, child: Child) -> Result<()> {
        let bytes =
            read_sealed(self.src, child.offset, child.stored_len, || format!("index leaf {}", id.seq))?;
        let (keys, archive_id, codec, plain_len) =
            (Arc::clone(&self.keys), self.archive_id, child.codec, child.plain_len);
        self.pool.submit(move || {
            let leaf = open_index_node(&keys, &archive_id, &id, codec, plain_len, bytes)
                .and_then(|plain| EntriesLeaf::decode(&plain).map_err(Error::from));
            (child, leaf)
        });
        Ok(())
    }
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.done {
            return None;
        }
        let item = self.next_entry().transpose();
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

impl<S: ReadAt> Archive<S> {
    /// Every entry, in index order (a directory right before its contents),
    /// read a leaf at a time: memory stays flat however many there are.
    ///
    /// ```
    /// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, EntryKind, KdfParams, Metadata, Password};
    /// # fn main() -> Result<(), revault_lockbox_api::Error> {
    /// # let pw = Password::from("pw");
    /// # let mut w = ArchiveWriter::new(Vec::new(), &pw, CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS))?;
    /// # w.add_dir("d", &Metadata::new(0o755, 0, 0, 0, 0))?;
    /// # w.add_symlink("d/link", &Metadata::new(0o777, 0, 0, 0, 0), "../x")?;
    /// # let bytes = w.finish()?;
    /// let archive = Archive::open(std::io::Cursor::new(bytes), &pw)?;
    /// for entry in archive.entries()? {
    ///     let entry = entry?;
    ///     if let EntryKind::Symlink { target, .. } = &entry.kind {
    ///         assert_eq!((&entry.path[..], &target[..]), (&b"d/link"[..], &b"../x"[..]));
    ///     }
    /// }
    /// assert!(archive.find("d/link")?.is_some() && archive.find("d/nope")?.is_none());
    /// # Ok(()) }
    /// ```
    pub fn entries(&self) -> Result<Entries<'_>> {
        let tree = self.tree(Table::Entries);
        let cursor = tree.leaves(&self.root.entries);
        self.walk(cursor, None)
    }

    /// The entries from `path` on (those sorting at or after it), reading
    /// only the index nodes on the way to it and after it.
    pub(crate) fn entries_from(&self, path: &[u8]) -> Result<Entries<'_>> {
        let tree = self.tree(Table::Entries);
        let cursor = tree.leaves_from(&self.root.entries, path)?;
        self.walk(cursor, Some(path.to_vec()))
    }

    fn walk<'a>(&'a self, cursor: LeafCursor<'a>, start: Option<Vec<u8>>) -> Result<Entries<'a>> {
        let full = start.is_none();
        Ok(Entries {
            src: &self.src,
            keys: Arc::clone(self.session_keys.last().expect("at least one session")),
            archive_id: self.archive_id,
            cursor,
            pool: OrderedPool::new(self.tuning.threads)?,
            read_ahead: self.tuning.pages_in_flight,
            current: Vec::new().into_iter(),
            check: Checks {
                last_path: None,
                last_leaf: None,
                last_end: 0,
                stream_len: self.root.stream_len,
                linked: full.then(HashMap::new),
                seen: 0,
                expected: self.root.entry_count,
            },
            start,
            done: false,
        })
    }

    /// The entry stored under `path`, if any: reads the index nodes on the
    /// way to it, nothing else.
    pub fn find(&self, path: impl AsRef<[u8]>) -> Result<Option<Entry>> {
        let path = path.as_ref();
        let tree = self.tree(Table::Entries);
        let Some((id, child)) = tree.find_leaf(&self.root.entries, path)? else { return Ok(None) };
        let leaf = EntriesLeaf::decode(&tree.node(&id, &child)?)?;
        if leaf.entries[0].path != child.first_key {
            return Err(malformed_error("index leaf", "first path differs from its parent's"));
        }
        let found = leaf.entries.into_iter().find(|e| e.path == path);
        if let Some(e) = &found {
            if e.extent.is_some_and(|x| x.end() > self.root.stream_len) {
                return Err(malformed_error("index entry", "content lies outside the data pages"));
            }
        }
        Ok(found)
    }
}
