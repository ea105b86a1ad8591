//! Codecs, the three index tables, and the id that places an index node.
//! The frame that binds each sealed unit to its place is `frame`'s.

use super::codec::malformed;
use super::DecodeError;

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

/// Which tree an index node belongs to: a session's entries run or pages
/// tree, or the archive's sessions tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum Table {
    /// Entries, keyed by path.
    Entries = 1,
    /// Data page records, keyed by data-stream offset.
    Pages = 2,
    /// Session records, keyed by data-stream offset and session number.
    Sessions = 3,
    /// Chunks a session stored, keyed by chunk id (format v4, §3.6b).
    Chunks = 4,
}

impl Table {
    /// The order of this tree's keys: paths in the index order, page keys
    /// (big-endian offsets) bytewise.
    pub(crate) fn cmp(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match self {
            Table::Entries => super::path_cmp(a, b),
            Table::Pages | Table::Sessions | Table::Chunks => a.cmp(b),
        }
    }
}

/// The place of one index node in its session's trees: table, level (0 for
/// leaves) and position within that level. It gives the node's nonce and
/// is bound into its associated data, so nodes cannot be swapped, moved
/// or reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct IndexNodeId {
    pub(crate) table: Table,
    pub(crate) level: u8,
    pub(crate) seq: u64,
}
