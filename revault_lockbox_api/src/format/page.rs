//! Page kinds, codecs and the associated data that binds a sealed page to
//! its place.
//!
//! ```text
//! page_aad = archive_id[16] || page_number u64 || kind u8 || codec u8
//!            || plain_len u32 || stored_len u32
//! ```

use super::codec::{malformed, Encoder};
use super::{ArchiveId, DecodeError};

/// What a sealed unit holds; part of its associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// File contents.
    Data = 1,
    /// The index of one write session.
    Index = 2,
}

/// How a page's plaintext is stored before sealing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Codec {
    /// Stored as is: compression did not pay.
    Raw = 0,
    /// One zstd frame.
    Zstd = 1,
}

impl Codec {
    pub(crate) fn decode(v: u8) -> Result<Codec, DecodeError> {
        match v {
            0 => Ok(Codec::Raw),
            1 => Ok(Codec::Zstd),
            _ => Err(malformed("page record", "unknown codec")),
        }
    }
}

impl PageKind {
    pub(crate) fn decode(v: u8) -> Result<PageKind, DecodeError> {
        match v {
            1 => Ok(PageKind::Data),
            _ => Err(malformed("page record", "unknown page kind")),
        }
    }
}

/// Associated data of one data page.
pub(crate) struct PageAad;

impl PageAad {
    pub(crate) fn encode(
        archive_id: &ArchiveId,
        page_number: u64,
        codec: Codec,
        plain_len: u32,
        stored_len: u32,
    ) -> [u8; 34] {
        let mut e = Encoder::default();
        e.bytes(&archive_id.0)
            .u64(page_number)
            .u8(PageKind::Data as u8)
            .u8(codec as u8)
            .u32(plain_len)
            .u32(stored_len);
        e.buf.try_into().expect("fixed layout")
    }
}
