//! A session's chunk index (format v4, FORMAT.md §3.6b): every chunk the
//! session stored, written at its end as a tree sorted by chunk id, which
//! later sessions search for chunks they need not store again.

use std::io::Write;

use hashbrown::HashTable;

use super::chunk_runs::SpilledRuns;
use super::ArchiveWriter;
use crate::error::{Error, Result};
use crate::format::{
    chunk_key, ChunkEntry, ChunkKey, ChunksLeaf, Table, TreeTop, CHUNK_ID_LEN, INDEX_NODE_TARGET_LEN,
};
use crate::index::{NodeSink, TreeBuilder};

/// Chunks stored by the sessions before this one, which a writer names in
/// a chunk list instead of storing them again (an append's archive).
pub(crate) trait StoredChunks: Send {
    /// Where the chunk with id `id` is stored, if anywhere.
    fn find(&mut self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>>;
}

/// Entries in one leaf: as many as fill the writer's node size.
const LEAF_ENTRIES: usize = (INDEX_NODE_TARGET_LEN - 4) / crate::format::CHUNK_ENTRY_LEN;

/// New chunks a session holds in memory: 48 bytes each in a list and
/// 5 bytes a slot of the table over it, so at most about 7.6 MiB (32 GiB of
/// new data at the default 256 KiB average). Past it they are sorted and
/// spilled to a temporary file ([`SpilledRuns`]), still found from there.
const RECENT_CHUNKS: usize = 1 << 17;

/// The chunks a session stores, held once for both of their uses: finding
/// a chunk already stored in this session, and the session's chunk index,
/// written sorted at its end. Memory stays flat: the newest chunks in
/// memory, the older ones in sorted runs on disk.
pub(crate) struct SessionChunks {
    /// The newest chunks, in the order noted.
    recent: Vec<ChunkEntry>,
    /// Positions in `recent`, by key.
    by_key: HashTable<u32>,
    /// How many `recent` holds before they are spilled.
    cap: usize,
    spilled: Option<SpilledRuns>,
}

impl Default for SessionChunks {
    fn default() -> SessionChunks {
        SessionChunks::with_cap(RECENT_CHUNKS)
    }
}

/// A chunk key's place in a table: ids are keyed BLAKE3 outputs, uniform
/// and unknown to whoever does not hold the key, so their first bytes
/// serve as the hash.
fn key_hash(key: &ChunkKey) -> u64 {
    u64::from_le_bytes(key[..8].try_into().expect("8 bytes of a key"))
}

impl SessionChunks {
    /// Holding at most `cap` chunks in memory.
    pub(super) fn with_cap(cap: usize) -> SessionChunks {
        SessionChunks { recent: Vec::new(), by_key: HashTable::new(), cap, spilled: None }
    }

    /// Where this session stored the chunk `id`, if it did.
    pub(crate) fn find(&self, id: &[u8; CHUNK_ID_LEN]) -> Result<Option<ChunkEntry>> {
        let key = chunk_key(id);
        let recent = &self.recent;
        if let Some(&at) = self.by_key.find(key_hash(&key), |&at| recent[at as usize].key == key) {
            return Ok(Some(recent[at as usize]));
        }
        match &self.spilled {
            Some(spilled) => spilled.find(&key).map_err(Error::stream(SPILL_READS)),
            None => Ok(None),
        }
    }

    /// Notes that the chunk `id` was stored at `offset`, `len` bytes; a
    /// chunk noted before keeps its first place.
    pub(crate) fn record(&mut self, id: [u8; CHUNK_ID_LEN], offset: u64, len: u32) -> Result<()> {
        let key = chunk_key(&id);
        let recent = &self.recent;
        if self.by_key.find(key_hash(&key), |&at| recent[at as usize].key == key).is_some() {
            return Ok(());
        }
        let at = u32::try_from(self.recent.len()).expect("at most `cap` recent chunks");
        self.recent.push(ChunkEntry { key, offset, len });
        let recent = &self.recent;
        self.by_key.insert_unique(key_hash(&key), at, |&at| key_hash(&recent[at as usize].key));
        if self.recent.len() >= self.cap {
            self.spill().map_err(Error::stream(SPILL_WRITES))?;
        }
        Ok(())
    }

    /// Sorts the recent chunks into a run on disk, freeing their memory
    /// for the next ones (the list keeps its capacity).
    fn spill(&mut self) -> std::io::Result<()> {
        self.by_key.clear();
        self.recent.sort_unstable_by_key(|e| e.key);
        let spilled = match &mut self.spilled {
            Some(spilled) => spilled,
            None => self.spilled.insert(SpilledRuns::new()?),
        };
        spilled.add(&self.recent)?;
        self.recent.clear();
        Ok(())
    }

    /// Whether no chunk was noted.
    pub(crate) fn is_empty(&self) -> bool {
        self.recent.is_empty() && self.spilled.is_none()
    }

    /// Writes the tree through `sink` and returns its top (empty when no
    /// chunk was noted).
    pub(crate) fn write(mut self, sink: &mut dyn NodeSink) -> Result<TreeTop> {
        self.recent.sort_unstable_by_key(|e| e.key);
        match &self.spilled {
            Some(spilled) => {
                let merged = spilled.merged_with(&self.recent);
                write_sorted(merged.map(|e| e.map_err(Error::stream(SPILL_READS))), sink)
            }
            None => write_sorted(self.recent.iter().map(|e| Ok(*e)), sink),
        }
    }
}

/// What failed, when the spilled chunks' temporary file does.
const SPILL_WRITES: &str = "writing the session's chunk index to a temporary file";
const SPILL_READS: &str = "reading the session's chunk index from its temporary file";

/// Writes a chunk index of `entries`, which come in strictly increasing
/// key order (a merge of sorted indexes), a leaf at a time.
pub(crate) fn write_sorted(
    entries: impl Iterator<Item = Result<ChunkEntry>>,
    sink: &mut dyn NodeSink,
) -> Result<TreeTop> {
    let mut tree = TreeBuilder::new(Table::Chunks);
    let mut leaf: Vec<ChunkEntry> = Vec::with_capacity(LEAF_ENTRIES);
    let mut last: Option<ChunkKey> = None;
    for entry in entries {
        let entry = entry?;
        if last.is_some_and(|last| last >= entry.key) {
            return Err(Error::malformed("chunk index", "keys out of order across leaves"));
        }
        last = Some(entry.key);
        leaf.push(entry);
        if leaf.len() == LEAF_ENTRIES {
            tree.add_leaf(leaf[0].key.to_vec(), ChunksLeaf::encode(&leaf), sink)?;
            leaf.clear();
        }
    }
    if !leaf.is_empty() {
        tree.add_leaf(leaf[0].key.to_vec(), ChunksLeaf::encode(&leaf), sink)?;
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
