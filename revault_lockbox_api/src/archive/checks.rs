//! The checks a reader makes on what the index says, one piece of code for
//! both ways in (FORMAT.md §6.2, §6.3). A walk (`list`, `extract`,
//! `export`, `verify`) runs [`Checks`] over every entry in order and checks
//! the root's counts; a lookup (`cat`, `open_file`, `find`, a partial
//! `extract`) runs the same [`Checks`] over the entries of the leaf that
//! holds its path, from the leaf's first entry to the one after the path,
//! checks each path above it, and the pages leaves it reads against the
//! ones before them. Whatever a lookup refuses, a walk refuses too.

use std::collections::HashMap;

use super::{no_page, Archive};
use crate::error::{Error, Result};
use crate::format::{is_within, path_cmp, Entry, EntryKind, PagesLeaf, SparseMap, DIGEST_LEN};
use crate::index::page_key;
use crate::storage::ReadAt;

/// Paths hard links may name: the linked file there, or `None` for a path
/// a lookup found holding no linked file.
type LinkTargets = HashMap<Vec<u8>, Option<LinkedFile>>;

/// What a hard link repeats of the linked file it names (FORMAT.md §3.5,
/// §3.5b): where its content is, its length, digest and sparse map. A
/// link that differs in any of them would read other bytes than the file
/// (a map differing, `cat` of the link wrote wrong bytes before failing).
#[derive(Clone, PartialEq)]
struct LinkedFile {
    /// Its content's offset and stored length in the data stream.
    at: (u64, u64),
    size: u64,
    sha256: [u8; DIGEST_LEN],
    sparse: Option<SparseMap>,
}

impl LinkedFile {
    /// The content `e` names: a linked file's, or a hard link's.
    fn of(e: &Entry) -> Option<LinkedFile> {
        let (size, sha256) = e.content()?;
        let extent = e.extent?;
        Some(LinkedFile { at: (extent.offset, extent.size), size, sha256: *sha256, sparse: e.sparse.clone() })
    }
}

/// What a run of entries is checked for, entry by entry: paths strictly
/// increasing, nothing below a file or symbolic link, each session's file
/// contents ascending, not overlapping and within the data, hard links
/// naming an earlier linked file with the same content, and (from the
/// first entry on) the root's entry count.
pub(super) struct Checks {
    last_path: Option<Vec<u8>>,
    /// The last entry that is not a directory: nothing may lie below it,
    /// and in the index order anything below it would come right after.
    last_leaf: Option<Vec<u8>>,
    /// End of the last file's content in each session's part of the data
    /// stream, and where each part starts.
    last_end: Vec<u64>,
    session_offsets: Vec<u64>,
    stream_len: u64,
    /// Hard links whose target a later run removed or replaced read as
    /// files of their own (FORMAT.md §6.4); with one run, they are damage.
    several_runs: bool,
    /// Whether the checks started at the first entry: then every file a
    /// hard link may name has been seen, and the entries can be counted.
    full: bool,
    /// Files that hard links may name: every linked file seen in a full
    /// run; a lookup adds the one its hard link names.
    linked: LinkTargets,
    seen: u64,
    expected: u64,
}

impl Checks {
    pub(super) fn new(
        session_offsets: &[u64],
        stream_len: u64,
        several_runs: bool,
        full: bool,
        expected: u64,
    ) -> Checks {
        Checks {
            last_path: None,
            last_leaf: None,
            last_end: session_offsets.to_vec(),
            session_offsets: session_offsets.to_vec(),
            stream_len,
            several_runs,
            full,
            linked: HashMap::new(),
            seen: 0,
            expected,
        }
    }

    /// Takes what the merged view holds at `target` (the path a hard link
    /// about to be checked names, looked up), so that the link is checked
    /// as a walk from the first entry would check it.
    pub(super) fn know_link_target(&mut self, target: &[u8], found: Option<&Entry>) {
        let linked = found
            .filter(|e| matches!(e.kind, EntryKind::File { .. }) && e.extent.is_some_and(|x| x.linked))
            .and_then(LinkedFile::of);
        self.linked.insert(target.to_vec(), linked);
    }

    /// Checks `e` against what came before; returns it as the merged view
    /// shows it.
    pub(super) fn entry(&mut self, mut e: Entry) -> Result<Entry> {
        if self.last_path.as_ref().is_some_and(|last| path_cmp(last, &e.path).is_ge()) {
            return Err(Error::malformed("index", "paths not in strictly increasing order"));
        }
        if self.last_leaf.as_ref().is_some_and(|leaf| is_within(leaf, &e.path)) {
            return Err(below_a_leaf(&e.path));
        }
        self.last_path = Some(e.path.clone());
        if !matches!(e.kind, EntryKind::Dir) {
            self.last_leaf = Some(e.path.clone());
        }
        self.seen += 1;
        let Some(extent) = e.extent else { return Ok(e) };
        if extent.end() > self.stream_len {
            return Err(Error::malformed("index entry", "content lies outside the data pages"));
        }
        match &e.kind {
            EntryKind::File { .. } => {
                let session = self.session_offsets.partition_point(|&o| o <= extent.offset).saturating_sub(1);
                let end = self.session_offsets.get(session + 1).copied().unwrap_or(self.stream_len);
                // Empty files take no bytes: only their range is checked.
                if extent.size > 0 {
                    if extent.offset < self.last_end[session] || extent.end() > end {
                        let why = "file contents overlap or are out of order";
                        return Err(Error::malformed("index entry", why));
                    }
                    self.last_end[session] = extent.end();
                }
                if extent.linked && self.full {
                    self.linked.insert(e.path.clone(), LinkedFile::of(&e));
                }
            }
            EntryKind::Hardlink { target, sha256, size } => {
                if path_cmp(target, &e.path).is_ge() {
                    return Err(Error::malformed("hard link", "does not name an earlier entry"));
                }
                let known = self.full || self.linked.contains_key(target);
                let file = self.linked.get(target).and_then(Option::as_ref);
                let same = file.is_some_and(|f| LinkedFile::of(&e).as_ref() == Some(f));
                if known && !same && self.several_runs {
                    e.kind = EntryKind::File { size: *size, sha256: *sha256 };
                } else if known && !same {
                    return Err(Error::malformed("hard link", "does not name an earlier linked file"));
                }
            }
            _ => {}
        }
        Ok(e)
    }

    /// At the end of the entries: a full run counted as many as the root.
    pub(super) fn finish(&self) -> Result<()> {
        if self.full && self.seen != self.expected {
            return Err(Error::malformed("index", "entry count differs from the root's"));
        }
        Ok(())
    }
}

fn below_a_leaf(path: &[u8]) -> Error {
    Error::UnsafePath { path: path.into(), reason: "it lies below a symbolic link or file of the archive" }
}

/// Where the records of `leaf` end: the next page number and stream
/// offset (`None` when a hostile leaf's counts overflow).
fn leaf_end(leaf: &PagesLeaf) -> Option<(u64, u64)> {
    let bytes = leaf.pages.iter().try_fold(0u64, |sum, p| sum.checked_add(u64::from(p.plain_len)))?;
    Some((leaf.first_page.checked_add(leaf.pages.len() as u64)?, leaf.first_offset.checked_add(bytes)?))
}

/// The one rule for consecutive pages leaves, a walk's and a lookup's:
/// `leaf` starts at the page and offset `expected` (where the one before
/// it ended, or where its session starts).
pub(super) fn check_follows(expected: Option<(u64, u64)>, leaf: &PagesLeaf) -> Result<()> {
    if expected != Some((leaf.first_page, leaf.first_offset)) {
        return Err(Error::malformed("page table", "leaves do not follow on"));
    }
    Ok(())
}

impl<S: ReadAt> Archive<S> {
    /// A walk's check of the root's counts: the page table's last leaf ends
    /// at `page_count` pages and `stream_len` bytes (the walk that reads
    /// the pages checks every leaf follows on; `entry_count` is counted by
    /// [`Checks::finish`]).
    pub(super) fn check_counts(&self) -> Result<()> {
        let table = self.sessions_table()?;
        let with_pages = (0..table.len()).rev().find(|&s| !table.pages(s).children.is_empty());
        let end = match with_pages {
            None => Some((0, 0)),
            Some(s) => {
                let tree = self.pages_tree(s)?;
                let (id, child) = tree.find_leaf(table.pages(s), &page_key(u64::MAX))?.ok_or_else(no_page)?;
                let leaf = PagesLeaf::decode(&tree.node(&id, &child)?)?;
                if page_key(leaf.first_offset) != child.first_key {
                    return Err(Error::malformed("page table", "leaf does not start where its parent says"));
                }
                leaf_end(&leaf)
            }
        };
        if end != Some((self.root.page_count, self.root.stream_len)) {
            return Err(Error::malformed("index root", "page or byte count differs from the page table's"));
        }
        Ok(())
    }

    /// A lookup's check of the pages leaf `leaf` of `session`, which it is
    /// about to read: it follows on from the leaf before it, or starts
    /// where the session's pages do.
    pub(super) fn check_pages_leaf(&self, session: usize, leaf: &PagesLeaf) -> Result<()> {
        let table = self.sessions_table()?;
        let start = table.stream_start(session);
        let expected = if leaf.first_offset <= start {
            Some((table.first_page(session), start))
        } else {
            let tree = self.pages_tree(session)?;
            let top = table.pages(session);
            let (id, child) = tree.find_leaf(top, &page_key(leaf.first_offset - 1))?.ok_or_else(no_page)?;
            leaf_end(&PagesLeaf::decode(&tree.node(&id, &child)?)?)
        };
        check_follows(expected, leaf)
    }

    /// Where a lookup of `path` starts its checks: the first path of the
    /// leaf that would hold it, the earliest over the runs.
    pub(super) fn window_start(&self, path: &[u8]) -> Result<Vec<u8>> {
        let mut start = path.to_vec();
        for (tree, top) in self.runs() {
            if let Some((_, child)) = tree.find_leaf(top, path)? {
                if path_cmp(&child.first_key, &start).is_lt() {
                    start = child.first_key;
                }
            }
        }
        Ok(start)
    }

    /// A lookup's check of the paths above `path` that sort before `from`
    /// (the others are in the entries it checks): none may be a file or
    /// symbolic link of the merged view.
    pub(super) fn check_ancestors(&self, path: &[u8], from: &[u8]) -> Result<()> {
        for ancestor in super::merge::ancestors(path).filter(|a| path_cmp(a, from).is_lt()) {
            if self.find_merged(ancestor)?.is_some_and(|e| !matches!(e.kind, EntryKind::Dir)) {
                return Err(below_a_leaf(path));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use sha2::Digest;

    use crate::archive::Archive;
    use crate::crypto::{KdfParams, Password};
    use crate::extract::ExtractOptions;
    use crate::format::{Entry, EntryKind, Extent};
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

    fn empty_file(path: &[u8], offset: u64) -> Entry {
        Entry {
            path: path.to_vec(),
            kind: EntryKind::File { size: 0, sha256: sha2::Sha256::digest([]).into() },
            meta: Metadata::new(0o644, 0, 0, 0, 0),
            extent: Some(Extent::whole(offset, 0, false)),
            sparse: None,
        }
    }

    /// An archive of a 300-byte file `a` (the whole stream) and empty
    /// files at `offsets`, read back by every reader: list, verify,
    /// extract and a lookup of each.
    fn read_back(offsets: &[u64]) -> crate::error::Result<()> {
        let password = Password::from("empty");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
        let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
        w.add_file("a", &Metadata::new(0o644, 0, 0, 0, 0), 300, &[7u8; 300][..]).unwrap();
        for (i, &offset) in offsets.iter().enumerate() {
            w.push_raw(empty_file(format!("e{i}").as_bytes(), offset)).unwrap();
        }
        let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password).unwrap();
        archive.entries()?.collect::<crate::error::Result<Vec<_>>>()?;
        archive.verify()?;
        let dest = tempfile::tempdir().unwrap();
        archive.extract(dest.path(), &ExtractOptions::new().sync(false))?;
        for i in 0..offsets.len() {
            assert_eq!(std::fs::metadata(dest.path().join(format!("e{i}"))).unwrap().len(), 0);
            assert!(archive.find(format!("e{i}"))?.is_some());
        }
        Ok(())
    }

    /// FORMAT.md §6.3: an empty file takes no bytes, so only
    /// `data_offset ≤ stream_len` is checked: inside another file's bytes
    /// (not ascending) and at the stream's end are read; past it, refused.
    #[test]
    fn an_empty_files_offset_need_only_lie_in_the_stream() {
        read_back(&[0, 150, 300]).unwrap();
        let err = read_back(&[301]).unwrap_err();
        assert!(err.to_string().contains("outside the data pages"), "{err}");
    }
}
