//! Streaming the entries: the merged view of the index runs (see
//! `merge.rs`), checked on the way by `checks.rs` (the walk's checks, and
//! a lookup's, which are the same code).

use super::checks::Checks;
use super::Merged;
use crate::archive::Archive;
use crate::error::Result;
use crate::format::{path_cmp, Entry, EntryKind};
use crate::storage::ReadAt;

/// The archive's entries in index order; see [`Archive::entries`]. Yields
/// an error once, then ends, when the index is damaged.
pub struct Entries<'a> {
    merged: Merged<'a>,
    check: Checks,
    /// Entries before this path are checked but not yielded: a lookup's
    /// checks start at the first entry of its path's leaf.
    skip_before: Option<Vec<u8>>,
    done: bool,
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.done {
            return None;
        }
        let item = loop {
            match self.merged.next() {
                Some(Ok(e)) => match self.check.entry(e) {
                    Ok(e) if self.skip_before.as_ref().is_some_and(|s| path_cmp(&e.path, s).is_lt()) => {}
                    checked => break Some(checked),
                },
                Some(Err(e)) => break Some(Err(e)),
                None => break self.check.finish().err().map(Err),
            }
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
        self.walk(None, false)
    }

    /// The entries from `path` on (those sorting at or after it), reading
    /// only the index nodes on the way to it and after it: a lookup's
    /// checks (the paths above it, the entries of its leaf before it).
    pub(crate) fn entries_from(&self, path: &[u8]) -> Result<Entries<'_>> {
        self.walk(Some(path), false)
    }

    /// [`entries_from`](Self::entries_from) for a lookup or a short
    /// listing: the leaves are opened on this thread, through the leaf
    /// cache, with no read-ahead.
    pub(crate) fn lookup_from(&self, path: &[u8]) -> Result<Entries<'_>> {
        self.walk(Some(path), true)
    }

    fn walk(&self, start: Option<&[u8]>, lookup: bool) -> Result<Entries<'_>> {
        let Some(path) = start else {
            self.check_counts()?;
            let merged = self.merged_from(None)?;
            return Ok(Archive::<S>::checked(merged, true, &self.session_offsets()?, self.root.stream_len));
        };
        let from = self.window_start(path)?;
        self.check_ancestors(path, &from)?;
        let merged = if lookup { self.merged_for_lookup(&from)? } else { self.merged_from(Some(&from))? };
        let mut entries =
            Archive::<S>::checked(merged, false, &self.session_offsets()?, self.root.stream_len);
        entries.skip_before = Some(path.to_vec());
        Ok(entries)
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
        let check = Checks::new(session_offsets, stream_len, several_runs, full, expected);
        Entries { merged, check, skip_before: None, done: false }
    }

    /// The entry stored under `path`, if any: reads the index nodes on the
    /// way to it and to the paths above it, nothing else, and refuses what
    /// a walk of every entry would refuse there (FORMAT.md §6.2): a path
    /// above it that is a file or symbolic link, the entries of its leaf up
    /// to the one after it out of order or overlapping, a hard link that
    /// names no earlier file with its content.
    pub fn find(&self, path: impl AsRef<[u8]>) -> Result<Option<Entry>> {
        let path = path.as_ref();
        let mut entries = self.lookup_from(path)?;
        if let Some(EntryKind::Hardlink { target, .. }) = self.find_merged(path)?.map(|e| e.kind) {
            let found = self.find_merged(&target)?;
            entries.check.know_link_target(&target, found.as_ref());
        }
        let found = entries.next().transpose()?.filter(|e| e.path == path);
        if found.is_some() {
            // The entry after it, checked against it.
            entries.next().transpose()?;
        }
        Ok(found)
    }
}
