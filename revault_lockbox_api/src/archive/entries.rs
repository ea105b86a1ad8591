//! Streaming the entries: the merged view of the index runs (see
//! `merge.rs`), checked on the way (paths strictly increasing, nothing
//! below a file or symbolic link, each session's file contents ascending
//! and not overlapping, hard links naming an earlier file with the same
//! content, counts as the root says).

use std::collections::HashMap;

use super::Merged;
use crate::archive::Archive;
use crate::error::{Error, Result};
use crate::format::{is_within, path_cmp, Entry, EntryKind, Extent, DIGEST_LEN};
use crate::storage::ReadAt;

/// Linked files by path: where their content is, and its digest.
type LinkTargets = HashMap<Vec<u8>, (Extent, [u8; DIGEST_LEN])>;

/// The archive's entries in index order; see [`Archive::entries`]. Yields
/// an error once, then ends, when the index is damaged.
pub struct Entries<'a> {
    merged: Merged<'a>,
    check: Checks,
    done: bool,
}

/// What a walk checks across leaves.
struct Checks {
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
    /// Files that hard links may name, when the walk started at the first
    /// entry (a walk from the middle cannot know them).
    linked: Option<LinkTargets>,
    seen: u64,
    expected: u64,
}

impl Checks {
    /// Checks `e` against what came before; returns it as the merged view
    /// shows it.
    fn entry(&mut self, mut e: Entry) -> Result<Entry> {
        if self.last_path.as_ref().is_some_and(|last| path_cmp(last, &e.path).is_ge()) {
            return Err(Error::malformed("index", "paths not in strictly increasing order"));
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
        let Some(extent) = e.extent else { return Ok(e) };
        if extent.end() > self.stream_len {
            return Err(Error::malformed("index entry", "content lies outside the data pages"));
        }
        match &e.kind {
            EntryKind::File { sha256, .. } => {
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
                if let (true, Some(linked)) = (extent.linked, &mut self.linked) {
                    linked.insert(e.path.clone(), (extent, *sha256));
                }
            }
            EntryKind::Hardlink { target, sha256, size } => {
                if path_cmp(target, &e.path).is_ge() {
                    return Err(Error::malformed("hard link", "does not name an earlier entry"));
                }
                if let Some(linked) = &self.linked {
                    let same = linked.get(target).is_some_and(|(x, sha)| {
                        (x.offset, x.size) == (extent.offset, extent.size) && sha == sha256
                    });
                    if !same && self.several_runs {
                        e.kind = EntryKind::File { size: *size, sha256: *sha256 };
                    } else if !same {
                        return Err(Error::malformed("hard link", "does not name an earlier linked file"));
                    }
                }
            }
            _ => {}
        }
        Ok(e)
    }

    fn finish(&self) -> Result<()> {
        if self.linked.is_some() && self.seen != self.expected {
            return Err(Error::malformed("index", "entry count differs from the root's"));
        }
        Ok(())
    }
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.done {
            return None;
        }
        let item = match self.merged.next() {
            Some(Ok(e)) => Some(self.check.entry(e)),
            Some(Err(e)) => Some(Err(e)),
            None => self.check.finish().err().map(Err),
        };
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

impl<S: ReadAt> Archive<S> {
    /// Every entry, in index order (a directory right before its contents),
    /// read a leaf at a time: memory stays flat however many there are.
    ///
    /// ```
    /// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, EntryKind, KdfParams, Password};
    /// use revault_lockbox_api::create::Metadata;
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
        self.walk(None)
    }

    /// The entries from `path` on (those sorting at or after it), reading
    /// only the index nodes on the way to it and after it.
    pub(crate) fn entries_from(&self, path: &[u8]) -> Result<Entries<'_>> {
        self.walk(Some(path))
    }

    fn walk(&self, start: Option<&[u8]>) -> Result<Entries<'_>> {
        let merged = self.merged_from(start)?;
        Ok(Archive::<S>::checked(merged, start.is_none(), &self.session_offsets, self.root.stream_len))
    }

    /// `merged` with the walk's checks, for a view of sessions starting at
    /// `session_offsets` in a stream of `stream_len` bytes. A walk from the
    /// first entry (`full`) also checks hard links and the entry count.
    pub(crate) fn checked<'a>(
        merged: Merged<'a>,
        full: bool,
        session_offsets: &[u64],
        stream_len: u64,
    ) -> Entries<'a> {
        let several_runs = merged.runs() > 1;
        let expected = merged.expected_entries();
        Entries {
            merged,
            check: Checks {
                last_path: None,
                last_leaf: None,
                last_end: session_offsets.to_vec(),
                session_offsets: session_offsets.to_vec(),
                stream_len,
                several_runs,
                linked: full.then(HashMap::new),
                seen: 0,
                expected,
            },
            done: false,
        }
    }

    /// The entry stored under `path`, if any: reads the index nodes on the
    /// way to it, nothing else.
    pub fn find(&self, path: impl AsRef<[u8]>) -> Result<Option<Entry>> {
        let found = self.find_merged(path.as_ref())?;
        if let Some(e) = &found {
            if e.extent.is_some_and(|x| x.end() > self.root.stream_len) {
                return Err(Error::malformed("index entry", "content lies outside the data pages"));
            }
        }
        Ok(found)
    }
}
