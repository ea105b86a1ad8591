//! The fixed-size trailer: the last bytes of every archive version.
//!
//! ```text
//! trailer = TRAILER_MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!           || session_salt[32] || key_slots_offset u64 || key_slots_len u32
//!           || index_offset u64 || index_stored_len u64 || index_plain_len u64
//!           || page_count u64 || tag[16]
//! ```
//! The tag is ChaCha20-Poly1305 over an empty message with the trailer body
//! as associated data. The trailer body is also the index's associated data,
//! so it commits to the page count and the index position: dropping pages or
//! truncating the file is detected.

use super::codec::{malformed, Decoder, Encoder};
use super::{
    ArchiveId, DecodeError, ARCHIVE_ID_LEN, MAX_INDEX_PLAIN_LEN, MAX_INDEX_STORED_LEN,
    MAX_KEY_SLOT_BLOCK_LEN, SESSION_SALT_LEN, TAG_LEN, TRAILER_MAGIC, VERSION,
};

/// Length of the trailer body, before its tag.
pub const TRAILER_BODY_LEN: usize = 8 + 2 + 2 + ARCHIVE_ID_LEN + SESSION_SALT_LEN + 8 + 4 + 8 * 4;
/// Length of the whole trailer.
pub const TRAILER_LEN: usize = TRAILER_BODY_LEN + TAG_LEN;

/// The decoded trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// Must match the header's id.
    pub archive_id: ArchiveId,
    /// Salt of the write session that wrote this trailer and its index.
    pub session_salt: [u8; SESSION_SALT_LEN],
    /// Where the key-slot block in force starts.
    pub key_slots_offset: u64,
    /// Its length.
    pub key_slots_len: u32,
    /// Where the sealed index starts.
    pub index_offset: u64,
    /// Sealed index length, tag included.
    pub index_stored_len: u64,
    /// Index length once opened and decompressed.
    pub index_plain_len: u64,
    /// Number of data pages the index describes.
    pub page_count: u64,
    /// Authentication tag over the body.
    pub tag: [u8; TAG_LEN],
}

impl Trailer {
    /// The body: everything but the tag; it is the associated data of both
    /// the trailer tag and the index.
    pub fn body(&self) -> [u8; TRAILER_BODY_LEN] {
        let mut e = Encoder::default();
        e.bytes(&TRAILER_MAGIC)
            .u16(VERSION)
            .u16(0)
            .bytes(&self.archive_id.0)
            .bytes(&self.session_salt)
            .u64(self.key_slots_offset)
            .u32(self.key_slots_len)
            .u64(self.index_offset)
            .u64(self.index_stored_len)
            .u64(self.index_plain_len)
            .u64(self.page_count);
        e.buf.try_into().expect("fixed layout")
    }

    /// Encodes the whole trailer.
    pub fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut out = [0u8; TRAILER_LEN];
        out[..TRAILER_BODY_LEN].copy_from_slice(&self.body());
        out[TRAILER_BODY_LEN..].copy_from_slice(&self.tag);
        out
    }

    /// Decodes a trailer and checks its lengths against the limits and the
    /// file length (`file_len`, the offset at which the trailer starts).
    pub fn decode(bytes: &[u8; TRAILER_LEN], trailer_offset: u64) -> Result<Trailer, DecodeError> {
        let mut d = Decoder::new(bytes, "trailer");
        if d.array::<8>()? != TRAILER_MAGIC {
            return Err(malformed("trailer", "missing (file truncated or not an archive)"));
        }
        if d.u16()? != VERSION {
            return Err(malformed("trailer", "unsupported format version"));
        }
        if d.u16()? != 0 {
            return Err(malformed("trailer", "unknown flags"));
        }
        let t = Trailer {
            archive_id: ArchiveId(d.array()?),
            session_salt: d.array()?,
            key_slots_offset: d.u64()?,
            key_slots_len: d.u32()?,
            index_offset: d.u64()?,
            index_stored_len: d.u64()?,
            index_plain_len: d.u64()?,
            page_count: d.u64()?,
            tag: d.array()?,
        };
        d.finish()?;
        if t.index_stored_len > MAX_INDEX_STORED_LEN
            || t.index_plain_len > MAX_INDEX_PLAIN_LEN
            || t.key_slots_len as usize > MAX_KEY_SLOT_BLOCK_LEN
        {
            return Err(malformed("trailer", "index or key-slot length over its limit"));
        }
        let index_end = t.index_offset.checked_add(t.index_stored_len);
        let slots_end = t.key_slots_offset.checked_add(u64::from(t.key_slots_len));
        if index_end != Some(trailer_offset) || slots_end.is_none_or(|end| end > t.index_offset) {
            return Err(malformed("trailer", "offsets do not fit the file"));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_round_trips_and_checks_offsets() {
        let t = Trailer {
            archive_id: ArchiveId([1; ARCHIVE_ID_LEN]),
            session_salt: [2; SESSION_SALT_LEN],
            key_slots_offset: 32,
            key_slots_len: 95,
            index_offset: 1000,
            index_stored_len: 200,
            index_plain_len: 900,
            page_count: 3,
            tag: [7; TAG_LEN],
        };
        let bytes = t.encode();
        assert_eq!(Trailer::decode(&bytes, 1200).unwrap(), t);
        assert!(Trailer::decode(&bytes, 1201).is_err());
    }
}
