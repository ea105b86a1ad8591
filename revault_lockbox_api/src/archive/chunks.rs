//! Reading the chunk index (format v4, FORMAT.md §3.6b): finding where a
//! chunk with a given id is stored, and every stored chunk in id order
//! for a merge session's index.

use std::collections::HashMap;
use std::sync::Arc;

use super::Archive;
use crate::error::{Error, Result};
use crate::format::{chunk_key, ChunkEntry, ChunkKey, ChunksLeaf, Table, TreeTop, CHUNK_ID_LEN};
use crate::index::{LeafCursor, TreeReader};
use crate::session::StoredChunks;
use crate::storage::ReadAt;

impl<S: ReadAt> Archive<S> {
    /// Where a chunk with id `id` is stored, searching every run's chunk
    /// index, newest first: one descent and one leaf per run that has one.
    #[cfg(test)]
    pub(crate) fn find_chunk(&self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>> {
        self.find_chunk_in(id, &mut LeafCache::default())
    }

    /// [`find_chunk`](Self::find_chunk), keeping the leaves it reads in
    /// `cache` for the next lookups.
    fn find_chunk_in(&self, id: &[u8; CHUNK_ID_LEN], cache: &mut LeafCache) -> Result<Option<ChunkEntry>> {
        let key = chunk_key(id);
        for (run_at, (keys, run)) in self.run_keys.iter().zip(&self.root.runs).enumerate().rev() {
            if run.chunks.height == 0 {
                continue;
            }
            let tree = self.tree_with(keys, Table::Chunks);
            let Some((node, child)) = tree.find_leaf(&run.chunks, &key)? else { continue };
            let leaf = match cache.leaves.get(&(run_at, node.seq)) {
                Some(leaf) => Arc::clone(leaf),
                None => {
                    let leaf = ChunksLeaf::decode(&tree.node(&node, &child)?)?;
                    if leaf.entries[0].key[..] != child.first_key[..] {
                        return Err(Error::malformed(
                            "chunk index",
                            "leaf does not start where its parent says",
                        ));
                    }
                    if cache.leaves.len() >= CACHED_LEAVES {
                        cache.leaves.clear();
                    }
                    let leaf = Arc::new(leaf);
                    cache.leaves.insert((run_at, node.seq), Arc::clone(&leaf));
                    leaf
                }
            };
            if let Some(found) = leaf.get(&key) {
                return self.chunk_in_stream(found).map(Some);
            }
        }
        Ok(None)
    }

    /// Every chunk of every run's index in id order, each id once (the
    /// oldest run's place when runs repeat an id): what a merge session's
    /// own index holds. Reads each index's leaves once, holding one leaf
    /// per run.
    pub(crate) fn chunk_entries(&self) -> Result<impl Iterator<Item = Result<ChunkEntry>> + '_> {
        let mut runs: Vec<RunChunks<'_>> = self
            .run_keys
            .iter()
            .zip(&self.root.runs)
            .filter(|(_, run)| run.chunks.height > 0)
            .map(|(keys, run)| {
                let tree = self.tree_with(keys, Table::Chunks);
                RunChunks { cursor: tree.leaves(&run.chunks), tree, leaf: Vec::new().into_iter(), last: None }
            })
            .collect();
        // Each run's next entry; runs are oldest first, so of equal ids the
        // first found is the oldest.
        let mut fronts = Vec::with_capacity(runs.len());
        for run in &mut runs {
            fronts.push(run.next_entry()?);
        }
        let mut last: Option<ChunkKey> = None;
        Ok(std::iter::from_fn(move || loop {
            let pick = (0..fronts.len())
                .filter(|&i| fronts[i].is_some())
                .min_by_key(|&i| fronts[i].map(|e| e.key))?;
            let entry = fronts[pick].take().expect("picked a front");
            match runs[pick].next_entry() {
                Ok(next) => fronts[pick] = next,
                Err(e) => return Some(Err(e)),
            }
            if last == Some(entry.key) {
                continue;
            }
            last = Some(entry.key);
            return Some(self.chunk_in_stream(entry));
        }))
    }

    /// Reads every run's chunk index whole, each node authenticated and
    /// decoded: `verify`'s check of what only appends read (no file's
    /// content depends on it). What failed, in one line.
    pub(crate) fn check_chunk_indexes(&self) -> Option<String> {
        let failed = match self.chunk_entries() {
            Ok(mut entries) => entries.find_map(|entry| entry.err()),
            Err(e) => Some(e),
        };
        failed.map(|e| format!("{e} (a chunk index: appends can no longer name the chunks it lists)"))
    }

    /// Every run's chunk index that has one: its reader and top.
    pub(crate) fn chunk_trees(&self) -> impl Iterator<Item = (TreeReader<'_>, &TreeTop)> + '_ {
        self.run_keys
            .iter()
            .zip(&self.root.runs)
            .filter(|(_, run)| run.chunks.height > 0)
            .map(|(keys, run)| (self.tree_with(keys, Table::Chunks), &run.chunks))
    }

    /// `entry`, if its bytes lie in the data stream.
    fn chunk_in_stream(&self, entry: ChunkEntry) -> Result<ChunkEntry> {
        if entry.offset + u64::from(entry.len) > self.root.stream_len {
            return Err(Error::malformed("chunk index", "a chunk past the data stream"));
        }
        Ok(entry)
    }
}

/// Chunk index leaves a lookup read, by run and position: 256 leaves of
/// at most 1,489 entries, about 18 MiB.
#[derive(Default)]
struct LeafCache {
    leaves: HashMap<(usize, u64), Arc<ChunksLeaf>>,
}

const CACHED_LEAVES: usize = 256;

/// The chunks an archive stored, for a writer appending to it: lookups
/// by id through the chunk indexes, the leaves read kept for the next
/// lookups (a file's chunks are looked up one after the other).
pub(crate) struct ChunkLookup<S> {
    archive: Archive<S>,
    cache: LeafCache,
}

impl<S: ReadAt> ChunkLookup<S> {
    pub(crate) fn new(archive: Archive<S>) -> ChunkLookup<S> {
        ChunkLookup { archive, cache: LeafCache::default() }
    }

    /// Whether any run has a chunk index (a version 3 archive has none).
    pub(crate) fn is_empty(&self) -> bool {
        self.archive.root.runs.iter().all(|run| run.chunks.height == 0)
    }
}

impl<S: ReadAt + Send> StoredChunks for ChunkLookup<S> {
    fn find(&mut self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>> {
        self.archive.find_chunk_in(id, &mut self.cache)
    }
}

/// One run's chunk index read in order, a leaf at a time.
struct RunChunks<'a> {
    tree: TreeReader<'a>,
    cursor: LeafCursor<'a>,
    leaf: std::vec::IntoIter<ChunkEntry>,
    /// The last key returned: keys rise across leaves too.
    last: Option<ChunkKey>,
}

impl RunChunks<'_> {
    fn next_entry(&mut self) -> Result<Option<ChunkEntry>> {
        loop {
            if let Some(entry) = self.leaf.next() {
                if self.last.is_some_and(|last| last >= entry.key) {
                    return Err(Error::malformed("chunk index", "keys out of order across leaves"));
                }
                self.last = Some(entry.key);
                return Ok(Some(entry));
            }
            let Some(next) = self.cursor.next() else { return Ok(None) };
            let (id, child) = next?;
            let leaf = ChunksLeaf::decode(&self.tree.node(&id, &child)?)?;
            if leaf.entries[0].key[..] != child.first_key[..] {
                return Err(Error::malformed("chunk index", "leaf does not start where its parent says"));
            }
            self.leaf = leaf.entries.into_iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use crate::archive::Archive;
    use crate::crypto::{KdfParams, Password};
    use crate::format::{chunk_key, ChunkEntry, CHUNK_ID_LEN};
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

    fn id(n: u32) -> [u8; CHUNK_ID_LEN] {
        // Spread over the id space, in no particular order of `n`.
        *blake3::hash(&n.to_le_bytes()).as_bytes()
    }

    /// The index entry of chunk `n` stored at `offset`, `len` bytes.
    fn entry(n: u32, offset: u64, len: u32) -> ChunkEntry {
        ChunkEntry { key: chunk_key(&id(n)), offset, len }
    }

    /// An archive of one file stored whole and kept out of the chunk
    /// index (a linked file: hard links may name it) whose session noted
    /// the chunks `(n, offset, len)` in its chunk index (chunks the writer
    /// was told it stored).
    fn archive_noting(noted: &[(u32, u64, u32)]) -> Archive<Cursor<Vec<u8>>> {
        let password = Password::from("chunks");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
        let content: Vec<u8> = (0..60_000u32).map(|i| (i * 7 + i / 255) as u8).collect();
        w.add_linked_file("f", &Metadata::new(0o644, 0, 0, 0, 0), 60_000, &content[..]).unwrap();
        for &(n, offset, len) in noted {
            w.chunk_index.record(id(n), offset, len).unwrap();
        }
        Archive::open(Cursor::new(w.finish().unwrap()), &password).unwrap()
    }

    #[test]
    fn every_noted_chunk_is_found_by_its_id_across_leaves() {
        // 3,700 entries: three leaves of the chunk index.
        let noted: Vec<(u32, u64, u32)> = (0..3700u32).map(|n| (n, u64::from(n) * 16, 16)).collect();
        let a = archive_noting(&noted);
        assert!(a.root().runs[0].chunks.children.len() >= 2, "more than one leaf");
        for &(n, offset, len) in noted.iter().step_by(97).chain(noted.last()) {
            assert_eq!(a.find_chunk(&id(n)).unwrap(), Some(entry(n, offset, len)));
        }
        assert_eq!(a.find_chunk(&id(3700)).unwrap(), None);
        let mut sorted: Vec<ChunkEntry> =
            noted.iter().map(|&(n, offset, len)| entry(n, offset, len)).collect();
        sorted.sort();
        let all: Vec<ChunkEntry> = a.chunk_entries().unwrap().map(Result::unwrap).collect();
        assert_eq!(all, sorted);
    }

    #[test]
    fn an_id_noted_twice_keeps_its_first_place_and_an_archive_without_chunks_has_no_index() {
        let a = archive_noting(&[(1, 100, 10), (1, 200, 10)]);
        assert_eq!(a.find_chunk(&id(1)).unwrap(), Some(entry(1, 100, 10)));
        assert_eq!(a.chunk_entries().unwrap().count(), 1);
        let plain = archive_noting(&[]);
        assert_eq!(plain.root().runs[0].chunks.height, 0);
        assert_eq!(plain.find_chunk(&id(1)).unwrap(), None);
        assert_eq!(plain.chunk_entries().unwrap().count(), 0);
    }

    #[test]
    fn a_chunk_index_entry_past_the_stream_is_refused() {
        let a = archive_noting(&[(9, 59_995, 7)]);
        let err = a.find_chunk(&id(9)).unwrap_err();
        assert!(err.to_string().ends_with("malformed chunk index: a chunk past the data stream"), "{err}");
        assert!(a.chunk_entries().unwrap().next().unwrap().is_err());
    }
}
