//! Codecs and the associated data that binds each sealed unit to its place.
//!
//! ```text
//! data_page_aad  = archive_id[16] || 0x01 || page_number u64 || codec u8
//!                  || plain_len u32 || stored_len u32                    (34 bytes)
//! index_node_aad = archive_id[16] || 0x02 || table u8 || level u8 || seq u64
//!                  || codec u8 || plain_len u32 || stored_len u32        (36 bytes)
//! ```

use super::codec::{malformed, Encoder};
use super::{DecodeError, ARCHIVE_ID_LEN};

/// How a sealed unit's plaintext is stored before sealing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Codec {
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

const KIND_DATA: u8 = 1;
/// Length of a data page's associated data.
pub(crate) const DATA_AAD_LEN: usize = ARCHIVE_ID_LEN + 18;
const KIND_INDEX: u8 = 2;

/// Associated data of one sealed data page.
pub(crate) struct PageAad;

impl PageAad {
    pub(crate) fn data(
        archive_id: &[u8; ARCHIVE_ID_LEN],
        page_number: u64,
        codec: Codec,
        plain_len: u32,
        stored_len: u32,
    ) -> [u8; DATA_AAD_LEN] {
        // A fixed array, not an encoder's Vec: one is built for every page.
        let mut aad = [0u8; DATA_AAD_LEN];
        aad[..ARCHIVE_ID_LEN].copy_from_slice(archive_id);
        aad[16] = KIND_DATA;
        aad[17..25].copy_from_slice(&page_number.to_le_bytes());
        aad[25] = codec as u8;
        aad[26..30].copy_from_slice(&plain_len.to_le_bytes());
        aad[30..34].copy_from_slice(&stored_len.to_le_bytes());
        aad
    }
}

/// Which of a session's two trees an index node belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Table {
    /// Entries, keyed by path.
    Entries = 1,
    /// Data page records, keyed by data-stream offset.
    Pages = 2,
}

impl Table {
    /// The order of this tree's keys: paths in the index order, page keys
    /// (big-endian offsets) bytewise.
    pub(crate) fn cmp(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match self {
            Table::Entries => super::path_cmp(a, b),
            Table::Pages => a.cmp(b),
        }
    }
}

/// The place of one index node in its session's trees: table, level (0 for
/// leaves) and position within that level. It gives the node's nonce and
/// is bound into its associated data, so nodes cannot be swapped, moved
/// or reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexNodeId {
    pub(crate) table: Table,
    pub(crate) level: u8,
    pub(crate) seq: u64,
}

impl IndexNodeId {
    pub(crate) fn aad(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        codec: Codec,
        plain_len: u32,
        stored_len: u32,
    ) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(archive_id)
            .u8(KIND_INDEX)
            .u8(self.table as u8)
            .u8(self.level)
            .u64(self.seq)
            .u8(codec as u8)
            .u32(plain_len)
            .u32(stored_len);
        e.buf
    }
}
