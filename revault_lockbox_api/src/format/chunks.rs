//! A chunked file's chunk list (format v4, FORMAT.md §3.5c): where each of
//! its chunks lies in the data stream, in content order.
//!
//! ```text
//! chunk_list   = chunk_record[chunk_count]        (in the data stream, at the entry's data_offset)
//! chunk_record = offset u64 || len u32 || id[32]  (44 bytes)
//! ```
//! The file's content is the chunks' bytes in list order. A chunk may lie
//! in any session's part of the stream up to the list itself: every chunk
//! ends at or before the list's first byte, so a list never names bytes
//! written after it (a later session's, or its own file's later ones) and
//! a cut that keeps the list keeps every chunk it names.

use super::codec::{malformed, Decoder, Encoder};
use super::{DecodeError, CHUNK_ID_LEN, MAX_FILE_SIZE};

/// Bytes of one chunk record.
pub(crate) const CHUNK_RECORD_LEN: usize = 8 + 4 + CHUNK_ID_LEN;
/// Longest chunk a record may name: fastcdc's largest maximum size.
pub(crate) const MAX_CHUNK_LEN: u32 = 16 << 20;

/// One chunk of a file: its bytes in the data stream and its keyed id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ChunkRef {
    /// Data-stream offset of its first byte.
    pub(crate) offset: u64,
    pub(crate) len: u32,
    /// Keyed BLAKE3 of its bytes (DEDUP.md, "Keying").
    pub(crate) id: [u8; CHUNK_ID_LEN],
}

impl ChunkRef {
    pub(crate) fn end(&self) -> u64 {
        self.offset + u64::from(self.len)
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.u64(self.offset).u32(self.len).bytes(&self.id);
    }

    /// Decodes one record and checks it on its own: a length in
    /// `1..=MAX_CHUNK_LEN`, and bytes that end at or before `list_offset`,
    /// the chunk list's own place in the stream.
    pub(crate) fn decode(bytes: &[u8; CHUNK_RECORD_LEN], list_offset: u64) -> Result<ChunkRef, DecodeError> {
        let mut d = Decoder::new(bytes, "chunk list");
        let chunk = ChunkRef { offset: d.u64()?, len: d.u32()?, id: d.array()? };
        if chunk.len == 0 || chunk.len > MAX_CHUNK_LEN {
            return Err(malformed("chunk list", "a chunk length out of range"));
        }
        if chunk.offset.checked_add(u64::from(chunk.len)).is_none_or(|end| end > list_offset) {
            return Err(malformed("chunk list", "a chunk that does not lie before its list"));
        }
        Ok(chunk)
    }
}

/// The checks on a chunked entry's fields that need no read of the list:
/// at least one chunk, no more chunks than bytes, and a list that ends
/// within `MAX_FILE_SIZE`. Returns the list's length in bytes.
pub(crate) fn check_chunk_count(list_offset: u64, count: u32, stored: u64) -> Result<u64, DecodeError> {
    let len = u64::from(count) * CHUNK_RECORD_LEN as u64;
    if count == 0 || u64::from(count) > stored {
        return Err(malformed("index entry", "a chunk count out of range"));
    }
    if list_offset.checked_add(len).is_none_or(|end| end > MAX_FILE_SIZE) {
        return Err(malformed("index entry", "chunk list range overflows"));
    }
    Ok(len)
}

/// Checks a whole list as read against the entry that names it: the
/// lengths add up to `stored`, the file's stored bytes.
pub(crate) struct ListSum {
    remaining: u64,
}

impl ListSum {
    pub(crate) fn new(stored: u64) -> ListSum {
        ListSum { remaining: stored }
    }

    /// Counts one chunk; refuses a list whose chunks run past `stored`.
    pub(crate) fn add(&mut self, chunk: &ChunkRef) -> Result<(), DecodeError> {
        self.remaining = self
            .remaining
            .checked_sub(u64::from(chunk.len))
            .ok_or(malformed("chunk list", "chunk lengths do not add up to the file's size"))?;
        Ok(())
    }

    /// Refuses a list whose chunks fall short of `stored`.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        if self.remaining != 0 {
            return Err(malformed("chunk list", "chunk lengths do not add up to the file's size"));
        }
        Ok(())
    }
}

/// Decodes a whole list held in memory (`count` records at `list_offset`,
/// for a file of `stored` bytes), with every check of §3.5c.
pub(crate) fn decode_chunk_list(
    bytes: &[u8],
    list_offset: u64,
    count: u32,
    stored: u64,
) -> Result<Vec<ChunkRef>, DecodeError> {
    let len = check_chunk_count(list_offset, count, stored)?;
    if bytes.len() as u64 != len {
        return Err(malformed("chunk list", "length is not its count's"));
    }
    let mut sum = ListSum::new(stored);
    let mut chunks = Vec::with_capacity(count as usize);
    for record in bytes.chunks_exact(CHUNK_RECORD_LEN) {
        let chunk = ChunkRef::decode(record.try_into().expect("exact chunks"), list_offset)?;
        sum.add(&chunk)?;
        chunks.push(chunk);
    }
    sum.finish()?;
    Ok(chunks)
}

pub(crate) fn encode_chunk_list(chunks: &[ChunkRef]) -> Vec<u8> {
    let mut e = Encoder::default();
    for chunk in chunks {
        chunk.encode(&mut e);
    }
    e.buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(offset: u64, len: u32, tag: u8) -> ChunkRef {
        ChunkRef { offset, len, id: [tag; CHUNK_ID_LEN] }
    }

    #[test]
    fn a_list_round_trips_with_chunks_anywhere_before_it() {
        let list = [chunk(5000, 100, 1), chunk(0, 4096, 2), chunk(5000, 100, 1), chunk(9000, 1, 3)];
        let bytes = encode_chunk_list(&list);
        assert_eq!(bytes.len(), 4 * CHUNK_RECORD_LEN);
        assert_eq!(decode_chunk_list(&bytes, 9001, 4, 4297).unwrap(), list);
    }

    #[test]
    fn each_rule_of_a_list_is_refused_in_one_line() {
        let refused = |list: &[ChunkRef], at: u64, count: u32, stored: u64| {
            decode_chunk_list(&encode_chunk_list(list), at, count, stored).unwrap_err().to_string()
        };
        let one = [chunk(0, 10, 0)];
        assert_eq!(
            refused(&one, 100, 1, 11),
            "malformed chunk list: chunk lengths do not add up to the file's size"
        );
        assert_eq!(
            refused(&one, 100, 1, 9),
            "malformed chunk list: chunk lengths do not add up to the file's size"
        );
        assert_eq!(
            refused(&one, 9, 1, 10),
            "malformed chunk list: a chunk that does not lie before its list"
        );
        assert_eq!(
            refused(&[chunk(0, 0, 0)], 100, 1, 1),
            "malformed chunk list: a chunk length out of range"
        );
        let huge = [chunk(0, MAX_CHUNK_LEN + 1, 0)];
        assert_eq!(refused(&huge, 1 << 40, 1, 1 << 30), "malformed chunk list: a chunk length out of range");
        let wraps = [chunk(u64::MAX - 4, 10, 0)];
        assert_eq!(
            refused(&wraps, 1 << 40, 1, 10),
            "malformed chunk list: a chunk that does not lie before its list"
        );
        assert_eq!(refused(&one, 100, 0, 10), "malformed index entry: a chunk count out of range");
        assert_eq!(refused(&one, 100, 11, 10), "malformed index entry: a chunk count out of range");
        assert_eq!(refused(&one, 100, 2, 10), "malformed chunk list: length is not its count's");
        assert_eq!(
            refused(&one, MAX_FILE_SIZE - 40, 1, 10),
            "malformed index entry: chunk list range overflows"
        );
    }
}
