//! The chunk index (format v4, FORMAT.md §3.6b): per entries run, a tree
//! of the chunks its sessions stored, keyed by chunk id, so that a writer
//! finds a chunk stored by any earlier session without an index in RAM.
//!
//! ```text
//! chunks_leaf  = count u32 || chunk_entry[count]      (ids strictly increasing)
//! chunk_entry  = id[32] || offset u64 || len u32      (44 bytes)
//! ```
//! Internal nodes are those of every tree (§3.6), with ids as keys.

use super::chunks::MAX_CHUNK_LEN;
use super::codec::{malformed, Decoder, Encoder};
use super::{DecodeError, CHUNK_ID_LEN};

/// Bytes of one chunk index entry.
pub(crate) const CHUNK_ENTRY_LEN: usize = CHUNK_ID_LEN + 8 + 4;

/// One chunk a session stored: its id and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ChunkEntry {
    pub(crate) id: [u8; CHUNK_ID_LEN],
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// A leaf of a chunk index tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunksLeaf {
    pub(crate) entries: Vec<ChunkEntry>,
}

impl ChunksLeaf {
    pub(crate) fn encode(entries: &[ChunkEntry]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(entries.len() as u32);
        for entry in entries {
            e.bytes(&entry.id).u64(entry.offset).u32(entry.len);
        }
        e.buf
    }

    /// Decodes a leaf: a count its bytes can hold, lengths in
    /// `1..=MAX_CHUNK_LEN`, ranges that do not overflow, ids strictly
    /// increasing.
    pub(crate) fn decode(bytes: &[u8]) -> Result<ChunksLeaf, DecodeError> {
        let mut d = Decoder::new(bytes, "chunk index leaf");
        let count = d.u32()? as usize;
        if count == 0 || count > d.remaining() / CHUNK_ENTRY_LEN {
            return Err(malformed("chunk index leaf", "entry count out of range"));
        }
        let mut entries: Vec<ChunkEntry> = Vec::with_capacity(count);
        for _ in 0..count {
            let entry = ChunkEntry { id: d.array()?, offset: d.u64()?, len: d.u32()? };
            if entry.len == 0
                || entry.len > MAX_CHUNK_LEN
                || entry.offset.checked_add(entry.len.into()).is_none()
            {
                return Err(malformed("chunk index leaf", "a chunk range out of range"));
            }
            if entries.last().is_some_and(|last| last.id >= entry.id) {
                return Err(malformed("chunk index leaf", "ids out of order"));
            }
            entries.push(entry);
        }
        d.finish()?;
        Ok(ChunksLeaf { entries })
    }

    /// The entry of `id`, if this leaf holds it.
    pub(crate) fn get(&self, id: &[u8; CHUNK_ID_LEN]) -> Option<ChunkEntry> {
        self.entries.binary_search_by(|e| e.id.cmp(id)).ok().map(|i| self.entries[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tag: u8, offset: u64, len: u32) -> ChunkEntry {
        let mut id = [0; CHUNK_ID_LEN];
        id[0] = tag;
        ChunkEntry { id, offset, len }
    }

    #[test]
    fn a_leaf_round_trips_and_finds_its_ids() {
        let entries = vec![entry(1, 0, 10), entry(7, 1 << 40, MAX_CHUNK_LEN), entry(9, 5, 1)];
        let bytes = ChunksLeaf::encode(&entries);
        assert_eq!(bytes.len(), 4 + 3 * CHUNK_ENTRY_LEN);
        let leaf = ChunksLeaf::decode(&bytes).unwrap();
        assert_eq!(leaf.entries, entries);
        assert_eq!(leaf.get(&entry(7, 0, 0).id), Some(entries[1]));
        assert_eq!(leaf.get(&entry(8, 0, 0).id), None);
    }

    #[test]
    fn each_rule_of_a_leaf_is_refused() {
        let why = |entries: &[ChunkEntry]| ChunksLeaf::decode(&ChunksLeaf::encode(entries)).unwrap_err().why;
        assert_eq!(why(&[]), "entry count out of range");
        assert_eq!(why(&[entry(2, 0, 1), entry(2, 5, 1)]), "ids out of order");
        assert_eq!(why(&[entry(3, 0, 1), entry(2, 5, 1)]), "ids out of order");
        assert_eq!(why(&[entry(1, 0, 0)]), "a chunk range out of range");
        assert_eq!(why(&[entry(1, 0, MAX_CHUNK_LEN + 1)]), "a chunk range out of range");
        assert_eq!(why(&[entry(1, u64::MAX, 1)]), "a chunk range out of range");
        let mut huge = ChunksLeaf::encode(&[entry(1, 0, 1)]);
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(ChunksLeaf::decode(&huge).unwrap_err().why, "entry count out of range");
        let bytes = ChunksLeaf::encode(&[entry(1, 0, 1), entry(2, 0, 1)]);
        for len in 0..bytes.len() {
            assert!(ChunksLeaf::decode(&bytes[..len]).is_err(), "len {len}");
        }
    }
}
