//! A session's chunk index (format v4, FORMAT.md §3.6b): every chunk the
//! session stored, written at its end as a tree sorted by chunk id, which
//! later sessions search for chunks they need not store again.

use std::io::Write;

use super::ArchiveWriter;
use crate::error::{Error, Result};
use crate::format::{ChunkEntry, ChunksLeaf, Table, TreeTop, CHUNK_ID_LEN, INDEX_NODE_TARGET_LEN};
use crate::index::{NodeSink, TreeBuilder};

/// Chunks stored by the sessions before this one, which a writer names in
/// a chunk list instead of storing them again (an append's archive).
pub(crate) trait StoredChunks: Send {
    /// Where the chunk with id `id` is stored, if anywhere.
    fn find(&mut self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>>;
}

/// Entries in one leaf: as many as fill the writer's node size.
const LEAF_ENTRIES: usize = (INDEX_NODE_TARGET_LEN - 4) / crate::format::CHUNK_ENTRY_LEN;

/// The chunks a session stored, gathered as they are written and sorted
/// at the end. Memory: 48 bytes a chunk until the session ends (about
/// 190 MiB per TiB of new data at the default 256 KiB average).
#[derive(Default)]
pub(crate) struct ChunkIndexBuilder {
    entries: Vec<ChunkEntry>,
}

impl ChunkIndexBuilder {
    /// Notes that the chunk `id` was stored at `offset`, `len` bytes.
    pub(crate) fn record(&mut self, id: [u8; CHUNK_ID_LEN], offset: u64, len: u32) {
        self.entries.push(ChunkEntry { id, offset, len });
    }

    /// Whether no chunk was noted.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes the tree through `sink` and returns its top (empty when no
    /// chunk was noted). A chunk noted twice keeps its first place.
    pub(crate) fn write(mut self, sink: &mut dyn NodeSink) -> Result<TreeTop> {
        // Stable, so that of equal ids the first noted stays first.
        self.entries.sort_by_key(|e| e.id);
        self.entries.dedup_by(|later, first| later.id == first.id);
        write_sorted(self.entries.into_iter().map(Ok), sink)
    }
}

/// Writes a chunk index of `entries`, which come in strictly increasing
/// id order (a merge of sorted indexes), a leaf at a time.
pub(crate) fn write_sorted(
    entries: impl Iterator<Item = Result<ChunkEntry>>,
    sink: &mut dyn NodeSink,
) -> Result<TreeTop> {
    let mut tree = TreeBuilder::new(Table::Chunks);
    let mut leaf: Vec<ChunkEntry> = Vec::with_capacity(LEAF_ENTRIES);
    let mut last: Option<[u8; CHUNK_ID_LEN]> = None;
    for entry in entries {
        let entry = entry?;
        if last.is_some_and(|last| last >= entry.id) {
            return Err(Error::malformed("chunk index", "ids out of order across leaves"));
        }
        last = Some(entry.id);
        leaf.push(entry);
        if leaf.len() == LEAF_ENTRIES {
            tree.add_leaf(leaf[0].id.to_vec(), ChunksLeaf::encode(&leaf), sink)?;
            leaf.clear();
        }
    }
    if !leaf.is_empty() {
        tree.add_leaf(leaf[0].id.to_vec(), ChunksLeaf::encode(&leaf), sink)?;
    }
    tree.finish(sink)
}

impl<W: Write> ArchiveWriter<W> {
    /// Lets this session name chunks that `stored` finds instead of
    /// storing them again.
    pub(crate) fn reuse_stored_chunks(&mut self, stored: Box<dyn StoredChunks>) {
        self.stored_chunks = Some(stored);
    }

    /// Where an earlier session stored the chunk `id`, if one did.
    pub(crate) fn stored_chunk(&mut self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>> {
        match &mut self.stored_chunks {
            Some(stored) => stored.find(id),
            None => Ok(None),
        }
    }

    /// Writes this session's chunk index from `entries`, sorted by id: a
    /// merge session's index, the merge of every earlier run's.
    pub(crate) fn write_chunk_index(
        &mut self,
        entries: impl Iterator<Item = Result<ChunkEntry>>,
    ) -> Result<()> {
        if !self.chunk_index.is_empty() || self.chunk_top.height > 0 {
            return Err(Error::malformed("chunk index", "a session writes one chunk index"));
        }
        self.chunk_top = write_sorted(entries, &mut self.output)?;
        Ok(())
    }
}
