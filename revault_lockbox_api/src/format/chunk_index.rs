//! The chunk index (format v4, FORMAT.md §3.6b): per entries run, a tree
//! of the chunks its sessions stored, keyed by chunk id, so that a writer
//! finds a chunk stored by any earlier session without an index in RAM.
//!
//! ```text
//! chunks_leaf  = count u32 || chunk_entry[count]      (keys strictly increasing)
//! chunk_entry  = key[16] || offset u64 || len u32     (28 bytes)
//! ```
//! `key` is a chunk id's first 16 bytes ([`chunk_key`]). Internal nodes
//! are those of every tree (§3.6), with keys as keys.

use super::chunks::MAX_CHUNK_LEN;
use super::codec::{malformed, Decoder, Encoder};
use super::{DecodeError, CHUNK_ID_LEN};

/// Bytes of a chunk id an index keeps: 128 bits of a keyed hash tell
/// stored chunks apart (a collision among 2^40 chunks has odds of about
/// 2^-49, and whoever lacks the key cannot aim for one), while the whole
/// id would be most of an index entry, and ids do not compress: with a
/// whole id the Linux tree's small files made its first archive 1.5 %
/// larger, with the key 0.7 % (FORMAT.md §3.6b). A chunk list still
/// names the whole id, which `verify` checks against the bytes.
pub(crate) const CHUNK_KEY_LEN: usize = 16;

/// The part of a chunk id the chunk index keeps and sorts by.
pub(crate) type ChunkKey = [u8; CHUNK_KEY_LEN];

/// The key of the chunk with id `id`: its first [`CHUNK_KEY_LEN`] bytes.
pub(crate) fn chunk_key(id: &[u8; CHUNK_ID_LEN]) -> ChunkKey {
    id[..CHUNK_KEY_LEN].try_into().expect("an id is longer than its key")
}

/// Bytes of one chunk index entry.
pub(crate) const CHUNK_ENTRY_LEN: usize = CHUNK_KEY_LEN + 8 + 4;

/// One chunk a session stored: its key and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ChunkEntry {
    pub(crate) key: ChunkKey,
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
            e.bytes(&entry.key).u64(entry.offset).u32(entry.len);
        }
        e.buf
    }

    /// Decodes a leaf: a count its bytes can hold, lengths in
    /// `1..=MAX_CHUNK_LEN`, ranges that do not overflow, keys strictly
    /// increasing.
    pub(crate) fn decode(bytes: &[u8]) -> Result<ChunksLeaf, DecodeError> {
        let mut d = Decoder::new(bytes, "chunk index leaf");
        let count = d.u32()? as usize;
        if count == 0 || count > d.remaining() / CHUNK_ENTRY_LEN {
            return Err(malformed("chunk index leaf", "entry count out of range"));
        }
        let mut entries: Vec<ChunkEntry> = Vec::with_capacity(count);
        for _ in 0..count {
            let entry = ChunkEntry { key: d.array()?, offset: d.u64()?, len: d.u32()? };
            if entry.len == 0
                || entry.len > MAX_CHUNK_LEN
                || entry.offset.checked_add(entry.len.into()).is_none()
            {
                return Err(malformed("chunk index leaf", "a chunk range out of range"));
            }
            if entries.last().is_some_and(|last| last.key >= entry.key) {
                return Err(malformed("chunk index leaf", "keys out of order"));
            }
            entries.push(entry);
        }
        d.finish()?;
        Ok(ChunksLeaf { entries })
    }

    /// The entry of the chunk with key `key`, if this leaf holds it.
    pub(crate) fn get(&self, key: &ChunkKey) -> Option<ChunkEntry> {
        self.entries.binary_search_by(|e| e.key.cmp(key)).ok().map(|i| self.entries[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tag: u8, offset: u64, len: u32) -> ChunkEntry {
        let mut key = [0; CHUNK_KEY_LEN];
        key[0] = tag;
        ChunkEntry { key, offset, len }
    }

    #[test]
    fn a_leaf_round_trips_and_finds_its_keys() {
        let entries = vec![entry(1, 0, 10), entry(7, 1 << 40, MAX_CHUNK_LEN), entry(9, 5, 1)];
        let bytes = ChunksLeaf::encode(&entries);
        assert_eq!(bytes.len(), 4 + 3 * CHUNK_ENTRY_LEN);
        let leaf = ChunksLeaf::decode(&bytes).unwrap();
        assert_eq!(leaf.entries, entries);
        assert_eq!(leaf.get(&entry(7, 0, 0).key), Some(entries[1]));
        assert_eq!(leaf.get(&entry(8, 0, 0).key), None);
    }

    #[test]
    fn each_rule_of_a_leaf_is_refused() {
        let why = |entries: &[ChunkEntry]| ChunksLeaf::decode(&ChunksLeaf::encode(entries)).unwrap_err().why;
        assert_eq!(why(&[]), "entry count out of range");
        assert_eq!(why(&[entry(2, 0, 1), entry(2, 5, 1)]), "keys out of order");
        assert_eq!(why(&[entry(3, 0, 1), entry(2, 5, 1)]), "keys out of order");
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
