//! Chunk ids: keyed BLAKE3 of a chunk's bytes under the archive's chunk-id
//! key, so that an id means nothing to whoever lacks the content key.

use std::fmt;

use zeroize::Zeroize;

use super::ChunkSink;
use crate::crypto::ChunkKeys;
use crate::format::CHUNK_ID_LEN;

/// The id of a chunk: `BLAKE3-keyed(chunk_id_key, chunk bytes)`, 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChunkId([u8; CHUNK_ID_LEN]);

impl ChunkId {
    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; CHUNK_ID_LEN] {
        &self.0
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkId({self})")
    }
}

impl fmt::Display for ChunkId {
    /// Lowercase hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Hashes chunks as their bytes stream by, one after another, so no second
/// pass over a chunk is needed. Its state (which holds the key) is wiped on
/// drop.
pub struct ChunkIdHasher(blake3::Hasher);

impl ChunkIdHasher {
    /// A hasher under `keys`' chunk-id key.
    pub fn new(keys: &ChunkKeys) -> ChunkIdHasher {
        ChunkIdHasher(blake3::Hasher::new_keyed(keys.id_key()))
    }

    /// The id of one whole chunk.
    pub fn id_of(keys: &ChunkKeys, chunk: &[u8]) -> ChunkId {
        let mut h = ChunkIdHasher::new(keys);
        h.update(chunk);
        h.finish_chunk()
    }

    /// The next bytes of the current chunk.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The current chunk's id; the hasher starts the next chunk.
    pub fn finish_chunk(&mut self) -> ChunkId {
        let id = ChunkId(*self.0.finalize().as_bytes());
        self.0.reset();
        id
    }
}

impl Drop for ChunkIdHasher {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for ChunkIdHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChunkIdHasher([redacted])")
    }
}

/// A sink that keeps each chunk's end and id, hashing the bytes as a
/// [`Chunker`](super::Chunker) sends them.
#[derive(Debug)]
pub struct ChunkIds {
    hasher: ChunkIdHasher,
    /// Each chunk's end (a file offset) and id, in order.
    pub chunks: Vec<(u64, ChunkId)>,
}

impl ChunkIds {
    /// An empty list hashing under `keys`.
    pub fn new(keys: &ChunkKeys) -> ChunkIds {
        ChunkIds { hasher: ChunkIdHasher::new(keys), chunks: Vec::new() }
    }
}

impl ChunkSink for ChunkIds {
    fn bytes(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    fn end(&mut self, end: u64) {
        self.chunks.push((end, self.hasher.finish_chunk()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{ChunkParams, Chunker};

    #[test]
    fn streamed_ids_equal_ids_of_whole_chunks() {
        let keys = ChunkKeys::from_key_bytes(&[5; 32], &[6; 16]);
        let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
        let mut data = vec![0u8; 100 << 10];
        blake3::Hasher::new().update(b"ids").finalize_xof().fill(&mut data);
        let mut ids = ChunkIds::new(&keys);
        let mut c = Chunker::new(&keys, params);
        for slice in data.chunks(777) {
            c.feed(slice, &mut ids);
        }
        c.finish(&mut ids);
        assert!(ids.chunks.len() > 5);
        let mut start = 0;
        for (end, id) in &ids.chunks {
            let chunk = &data[start..*end as usize];
            assert_eq!(*id, ChunkIdHasher::id_of(&keys, chunk));
            assert_eq!(id.as_bytes(), blake3::keyed_hash(keys.id_key(), chunk).as_bytes());
            start = *end as usize;
        }
        let other = ChunkKeys::from_key_bytes(&[9; 32], &[6; 16]);
        assert_ne!(ChunkIdHasher::id_of(&other, &data[..10]), ChunkIdHasher::id_of(&keys, &data[..10]));
    }
}
