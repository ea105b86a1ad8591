//! The merged view of the entries runs (FORMAT.md §6.4): every session
//! that changed the archive wrote a sorted run of records (entries stored,
//! paths deleted); readers merge the runs newest first. At each path the
//! newest run's record wins; a deletion, or an entry that is not a
//! directory, also hides what older runs hold below its path.
//!
//! The merge streams: each run is read a leaf at a time, and the only
//! other state is the stack of hiding paths above the current one (at most
//! a path's depth), so memory stays flat however many entries there are.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::archive::Archive;
use crate::crypto::open_index_node;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::ARCHIVE_ID_LEN;
use crate::format::{is_within, path_cmp, Child, EntriesLeaf, Entry, IndexNodeId, Record, TreeTop};
use crate::index::{read_unit_into, reread_unit, LeafCursor, NodeCache};

/// The archive's cache of opened entries leaves.
type LeafCache = NodeCache<EntriesLeaf>;
use crate::pipeline::OrderedWorkers;
use crate::storage::ReadAt;

type OpenedLeaf = (IndexNodeId, Child, Result<EntriesLeaf>);
/// A leaf to open: its id, where its parent says it lies, its sealed bytes.
type LeafJob = (IndexNodeId, Child, Vec<u8>);

/// How a run's leaves are opened: on worker threads with bounded
/// read-ahead (a walk; with the run's reader, to open again on this
/// thread a leaf that failed), or one at a time through the archive's leaf
/// cache (a lookup, which reads a leaf or two, often the same ones again).
enum Opener<'a> {
    Workers(OrderedWorkers<LeafJob, OpenedLeaf>, crate::index::TreeReader<'a>),
    Cached(crate::index::TreeReader<'a>, &'a LeafCache),
}

/// The records of the leaf being read: owned (from the workers, each taken
/// without a copy) or shared with the cache (each taken one cloned).
enum Current {
    Owned(VecDeque<Record>),
    Shared(Arc<EntriesLeaf>, usize),
}

impl Current {
    fn front(&self) -> Option<&Record> {
        match self {
            Current::Owned(records) => records.front(),
            Current::Shared(leaf, at) => leaf.entries.get(*at),
        }
    }

    fn take(&mut self) -> Option<Record> {
        match self {
            Current::Owned(records) => records.pop_front(),
            Current::Shared(leaf, at) => {
                let record = leaf.entries.get(*at).cloned();
                *at += 1;
                record
            }
        }
    }
}

/// One run's records in order, a leaf at a time.
struct RunCursor<'a> {
    src: &'a dyn ReadAt,
    cursor: LeafCursor<'a>,
    opener: Opener<'a>,
    current: Current,
    /// The last record taken: the run's paths must strictly increase.
    last: Option<Vec<u8>>,
}

impl RunCursor<'_> {
    /// The next record's path, reading leaves as needed.
    fn peek(&mut self) -> Result<Option<&[u8]>> {
        while self.current.front().is_none() {
            let Some((child, current)) = self.next_leaf()? else { return Ok(None) };
            let first = current.front().ok_or_else(|| Error::malformed("index leaf", "holds no record"))?;
            if first.path() != child.first_key.as_slice() {
                return Err(Error::malformed("index leaf", "first path differs from its parent's"));
            }
            if self.last.as_ref().is_some_and(|last| path_cmp(last, first.path()).is_ge()) {
                return Err(Error::malformed("index", "paths not in strictly increasing order"));
            }
            self.current = current;
        }
        Ok(self.current.front().map(Record::path))
    }

    fn take(&mut self) -> Record {
        let record = self.current.take().expect("peeked");
        self.last = Some(record.path().to_vec());
        record
    }

    /// The next leaf of the run and the child naming it.
    fn next_leaf(&mut self) -> Result<Option<(Child, Current)>> {
        match &mut self.opener {
            Opener::Workers(pool, tree) => {
                while pool.has_room() {
                    let Some(next) = self.cursor.next() else { break };
                    let (id, child) = next?;
                    let what = || format!("index leaf {}", id.seq);
                    let bytes = read_unit_into(self.src, child.offset, child.unit_len(), what, Vec::new())?;
                    pool.submit((id, child, bytes));
                }
                let Some((id, child, leaf)) = pool.pop() else { return Ok(None) };
                // A leaf that failed its check: once more with what a
                // recovery view rebuilt under it, if anything.
                let what = || format!("index leaf {}", id.seq);
                let leaf = leaf.or_else(|failed| {
                    match reread_unit(self.src, child.offset, child.unit_len(), what) {
                        Some(bytes) => open_leaf(&tree.keys, &tree.archive_id, &id, &child, bytes?),
                        None => Err(failed),
                    }
                });
                Ok(Some((child, Current::Owned(leaf?.entries.into()))))
            }
            Opener::Cached(tree, leaves) => {
                let Some(next) = self.cursor.next() else { return Ok(None) };
                let (id, child) = next?;
                let leaf = leaves.leaf(tree, &id, &child)?;
                Ok(Some((child, Current::Shared(leaf, 0))))
            }
        }
    }
}

/// Opens and decodes the entries leaf `id` from its sealed `bytes`.
fn open_leaf(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    id: &IndexNodeId,
    child: &Child,
    bytes: Vec<u8>,
) -> Result<EntriesLeaf> {
    let plain = open_index_node(keys, archive_id, id, child, bytes)?;
    Ok(EntriesLeaf::decode(&plain)?)
}

/// The merged view's entries, in index order.
pub(crate) struct Merged<'a> {
    runs: Vec<RunCursor<'a>>,
    /// Paths above the current one that hide older runs below them, each
    /// with one more than the newest run hidden from below it (cumulative
    /// down the stack).
    hiders: Vec<(Vec<u8>, usize)>,
    /// The entry count the root claims for this view.
    expected: u64,
}

impl<'a> Merged<'a> {
    /// Runs merged.
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// The entry count the root claims for the view.
    pub(crate) fn expected_entries(&self) -> u64 {
        self.expected
    }

    /// The winning record at the next path not hidden, and its run (0 the
    /// oldest).
    fn next_record(&mut self) -> Result<Option<(Record, usize)>> {
        loop {
            let mut smallest: Option<Vec<u8>> = None;
            for run in &mut self.runs {
                if let Some(p) = run.peek()? {
                    if smallest.as_ref().is_none_or(|s| path_cmp(p, s).is_lt()) {
                        smallest = Some(p.to_vec());
                    }
                }
            }
            let Some(path) = smallest else { return Ok(None) };
            let mut winner: Option<(Record, usize)> = None;
            let mut hides = 0;
            for (i, run) in self.runs.iter_mut().enumerate() {
                if run.peek()? == Some(path.as_slice()) {
                    let record = run.take();
                    if record.hides_below() {
                        hides = i + 1;
                    }
                    winner = Some((record, i));
                }
            }
            let (record, run) = winner.expect("some run holds the smallest path");
            let above = self.enter(&path, hides);
            // Hidden when a newer run deleted or replaced a path above it.
            if run + 1 < above {
                continue;
            }
            if matches!(record, Record::Put(_)) {
                return Ok(Some((record, run)));
            }
        }
    }

    /// Moves the hiding stack to `path`: drops the paths it is not below,
    /// pushes it when its records hide more than those above. Returns what
    /// hides `path` itself.
    fn enter(&mut self, path: &[u8], hides: usize) -> usize {
        while self.hiders.last().is_some_and(|(p, _)| !is_within(p, path)) {
            self.hiders.pop();
        }
        let above = self.hiders.last().map_or(0, |h| h.1);
        if hides > above {
            self.hiders.push((path.to_vec(), hides));
        }
        above
    }
}

impl Iterator for Merged<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            return match self.next_record() {
                Ok(Some((Record::Put(e), _))) => Some(Ok(e)),
                Ok(Some((Record::Delete(_), _))) => continue,
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            };
        }
    }
}

impl<S: ReadAt> Archive<S> {
    /// The merged view from `start` (from the first path when `None`).
    pub(crate) fn merged_from(&self, start: Option<&[u8]>) -> Result<Merged<'_>> {
        self.merged_with(start, &[])
    }

    /// The merged view of this archive's runs and `extra` (newer runs
    /// of a session being written, read through `src`), from `start`.
    pub(crate) fn merged_with<'a>(
        &'a self,
        start: Option<&[u8]>,
        extra: &[(crate::index::TreeReader<'a>, TreeTop)],
    ) -> Result<Merged<'a>> {
        self.merged_view(start, extra, false)
    }

    /// The merged view from `path` for a lookup: its leaves opened one at
    /// a time through the leaf cache, on the calling thread.
    pub(crate) fn merged_for_lookup(&self, path: &[u8]) -> Result<Merged<'_>> {
        self.merged_view(Some(path), &[], true)
    }

    /// The entries the last run stores, in path order (its deletions
    /// skipped, nothing older merged in): what the last session wrote.
    pub(crate) fn last_run_entries(&self) -> Result<Merged<'_>> {
        let last = self.runs().last().map(|(tree, top)| (tree, top.clone()));
        self.merged_of(None, last.into_iter().collect(), false)
    }

    fn merged_view<'a>(
        &'a self,
        start: Option<&[u8]>,
        extra: &[(crate::index::TreeReader<'a>, TreeTop)],
        cached: bool,
    ) -> Result<Merged<'a>> {
        let mut readers: Vec<(crate::index::TreeReader<'a>, TreeTop)> =
            self.runs().map(|(tree, top)| (tree, top.clone())).collect();
        readers.extend(extra.iter().cloned());
        self.merged_of(start, readers, cached)
    }

    /// The merged view of `readers`' runs, oldest first, from `start`.
    fn merged_of<'a>(
        &'a self,
        start: Option<&[u8]>,
        readers: Vec<(crate::index::TreeReader<'a>, TreeTop)>,
        cached: bool,
    ) -> Result<Merged<'a>> {
        if readers.is_empty() {
            return Err(Error::malformed("root", "no entries run"));
        }
        let threads = (self.tuning.threads / readers.len()).max(1);
        let read_ahead = (self.tuning.pages_in_flight / readers.len()).max(2);
        let mut runs = Vec::with_capacity(readers.len());
        for (tree, top) in &readers {
            let cursor = match start {
                Some(path) => tree.leaves_from(top, path)?,
                None => tree.leaves(top),
            };
            let opener = if cached {
                Opener::Cached(tree.clone(), &self.leaves)
            } else {
                let (keys, archive_id) = (Arc::clone(&tree.keys), self.archive_id);
                let open = move |(id, child, bytes): LeafJob| {
                    let leaf = open_leaf(&keys, &archive_id, &id, &child, bytes);
                    (id, child, leaf)
                };
                Opener::Workers(
                    OrderedWorkers::new("lockbox-index", threads, read_ahead, open)?,
                    tree.clone(),
                )
            };
            let mut run = RunCursor {
                src: tree.src,
                cursor,
                opener,
                current: Current::Owned(VecDeque::new()),
                last: None,
            };
            if let Some(path) = start {
                // The leaf found may begin before `path`.
                while run.peek()?.is_some_and(|p| path_cmp(p, path).is_lt()) {
                    run.take();
                }
            }
            runs.push(run);
        }
        let mut merged = Merged { runs, hiders: Vec::new(), expected: self.root.entry_count };
        if let Some(path) = start.filter(|_| readers.len() > 1) {
            // What hides `path` and below comes from the paths above it
            // (with one run nothing hides: it hides only older runs).
            for ancestor in ancestors(path) {
                let mut hides = 0;
                for (i, (tree, top)) in readers.iter().enumerate() {
                    if find_in_run(&self.leaves, tree, top, ancestor)?.is_some_and(|r| r.hides_below()) {
                        hides = i + 1;
                    }
                }
                merged.enter(ancestor, hides);
            }
        }
        Ok(merged)
    }

    /// The merged view's entry at `path`: the newest run's record there,
    /// unless a deletion or a newer non-directory above it hides it.
    pub(crate) fn find_merged(&self, path: &[u8]) -> Result<Option<Entry>> {
        let trees: Vec<_> = self.runs().collect();
        for (i, (tree, top)) in trees.iter().enumerate().rev() {
            let Some(record) = find_in_run(&self.leaves, tree, top, path)? else { continue };
            let Record::Put(entry) = record else { return Ok(None) };
            for ancestor in ancestors(path) {
                for (tree, top) in &trees[i + 1..] {
                    if find_in_run(&self.leaves, tree, top, ancestor)?.is_some_and(|r| r.hides_below()) {
                        return Ok(None);
                    }
                }
            }
            return Ok(Some(entry));
        }
        Ok(None)
    }

    /// The first path above `path` that the merged view holds as a file or
    /// symbolic link: nothing may be stored below it.
    pub(crate) fn leaf_above(&self, path: &[u8]) -> Result<Option<Vec<u8>>> {
        for ancestor in ancestors(path) {
            if self.find_merged(ancestor)?.is_some_and(|e| !matches!(e.kind, crate::format::EntryKind::Dir)) {
                return Ok(Some(ancestor.to_vec()));
            }
        }
        Ok(None)
    }
}

/// The record of one run at `path`, if any: reads the nodes on the way,
/// the leaf through `leaves`.
pub(crate) fn find_in_run(
    leaves: &LeafCache,
    tree: &crate::index::TreeReader<'_>,
    top: &TreeTop,
    path: &[u8],
) -> Result<Option<Record>> {
    let Some((id, child)) = tree.find_leaf(top, path)? else { return Ok(None) };
    let leaf = leaves.leaf(tree, &id, &child)?;
    if leaf.entries.first().map(Record::path) != Some(child.first_key.as_slice()) {
        return Err(Error::malformed("index leaf", "first path differs from its parent's"));
    }
    Ok(leaf.entries.iter().find(|r| r.path() == path).cloned())
}

/// The proper ancestors of `path`, shortest first: `a`, `a/b` for `a/b/c`.
pub(crate) fn ancestors(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.iter().enumerate().filter(|(_, &b)| b == b'/').map(move |(i, _)| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_are_the_proper_prefixes() {
        let all: Vec<&[u8]> = ancestors(b"a/bc/d").collect();
        assert_eq!(all, [&b"a"[..], b"a/bc"]);
        assert_eq!(ancestors(b"top").count(), 0);
    }
}
