//! The fixed-size trailer: the last bytes of every archive version.
//!
//! ```text
//! trailer = TRAILER_MAGIC[8] || version u16 || flags u16 || archive_id[16]
//!           || session_salt[32] || root_offset u64 || root_stored_len u32
//!           || root_plain_len u32 || page_count u64 || entry_count u64
//!           || previous_trailer u64 || tag[16]
//! ```
//! The tag is ChaCha20-Poly1305 over an empty message with the trailer body
//! as associated data. The body is also the root's associated data, so it
//! commits to the page count and the root's position: dropping pages or
//! truncating the file is detected.

use super::codec::{malformed, Decoder, Encoder};
use super::{
    DecodeError, ARCHIVE_ID_LEN, MAX_ROOT_LEN, MIN_DATA_START, SESSION_SALT_LEN, TAG_LEN, TRAILER_MAGIC,
    VERSION,
};

/// Length of the trailer body, before its tag.
pub(crate) const TRAILER_BODY_LEN: usize = 8 + 2 + 2 + ARCHIVE_ID_LEN + SESSION_SALT_LEN + 8 + 4 + 4 + 8 * 3;
/// Length of the whole trailer.
pub(crate) const TRAILER_LEN: usize = TRAILER_BODY_LEN + TAG_LEN;

/// The decoded trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// Must match the header's id.
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    /// Salt of the write session that wrote this trailer and its root.
    pub(crate) session_salt: [u8; SESSION_SALT_LEN],
    pub(crate) root_offset: u64,
    /// Sealed root length, tag included.
    pub(crate) root_stored_len: u32,
    pub(crate) root_plain_len: u32,
    /// Data pages the root describes.
    pub(crate) page_count: u64,
    /// Entries the root describes.
    pub(crate) entry_count: u64,
    /// Where the previous session's trailer ends (the archive's length
    /// before this session); 0 for the first session.
    pub(crate) previous_trailer: u64,
    pub(crate) tag: [u8; TAG_LEN],
}

impl Trailer {
    /// The body: everything but the tag; the associated data of both the
    /// trailer tag and the root.
    pub(crate) fn body(&self) -> [u8; TRAILER_BODY_LEN] {
        let mut e = Encoder::default();
        e.bytes(&TRAILER_MAGIC)
            .u16(VERSION)
            .u16(0)
            .bytes(&self.archive_id)
            .bytes(&self.session_salt)
            .u64(self.root_offset)
            .u32(self.root_stored_len)
            .u32(self.root_plain_len)
            .u64(self.page_count)
            .u64(self.entry_count)
            .u64(self.previous_trailer);
        e.buf.try_into().expect("fixed layout")
    }

    pub(crate) fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut out = [0u8; TRAILER_LEN];
        out[..TRAILER_BODY_LEN].copy_from_slice(&self.body());
        out[TRAILER_BODY_LEN..].copy_from_slice(&self.tag);
        out
    }

    /// Decodes a trailer found at `trailer_offset` and checks its lengths
    /// against the limits and the file.
    pub(crate) fn decode(bytes: &[u8; TRAILER_LEN], trailer_offset: u64) -> Result<Trailer, DecodeError> {
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
            archive_id: d.array()?,
            session_salt: d.array()?,
            root_offset: d.u64()?,
            root_stored_len: d.u32()?,
            root_plain_len: d.u32()?,
            page_count: d.u64()?,
            entry_count: d.u64()?,
            previous_trailer: d.u64()?,
            tag: d.array()?,
        };
        d.finish()?;
        if t.root_plain_len > MAX_ROOT_LEN || t.root_stored_len > MAX_ROOT_LEN + TAG_LEN as u32 {
            return Err(malformed("trailer", "root length over its limit"));
        }
        let previous_fits = t.previous_trailer == 0
            || (t.previous_trailer >= MIN_DATA_START + TRAILER_LEN as u64
                && t.previous_trailer <= t.root_offset);
        if !previous_fits {
            return Err(malformed("trailer", "previous trailer out of range"));
        }
        let root_end = t.root_offset.checked_add(u64::from(t.root_stored_len));
        if root_end != Some(trailer_offset) || t.root_offset < MIN_DATA_START {
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
            archive_id: [1; ARCHIVE_ID_LEN],
            session_salt: [2; SESSION_SALT_LEN],
            root_offset: MIN_DATA_START + 1000,
            root_stored_len: 200,
            root_plain_len: 900,
            page_count: 3,
            entry_count: 7,
            previous_trailer: 0,
            tag: [7; TAG_LEN],
        };
        let bytes = t.encode();
        assert_eq!(Trailer::decode(&bytes, MIN_DATA_START + 1200).unwrap(), t);
        assert!(Trailer::decode(&bytes, MIN_DATA_START + 1201).is_err());
        let appended = Trailer { previous_trailer: MIN_DATA_START + 116, ..t.clone() };
        assert_eq!(Trailer::decode(&appended.encode(), MIN_DATA_START + 1200).unwrap(), appended);
        for bad in [1, MIN_DATA_START + 1001] {
            let t = Trailer { previous_trailer: bad, ..t.clone() };
            assert!(Trailer::decode(&t.encode(), MIN_DATA_START + 1200).is_err());
        }
    }
}
