//! The frame in front of every sealed unit (data page, index node, root):
//! what it is, where it belongs and how long it is, so that a scanner can
//! walk a session front to back. It is the unit's associated data after
//! the archive id, so it cannot change without the key; the unit's hash
//! (`hash::unit_hash`) covers it too.
//!
//! ```text
//! frame    = kind u8 || table u8 || level u8 || codec u8 || number u64
//!            || plain_len u32 || stored_len u32                        (20 bytes)
//! unit_aad = archive_id[16] || frame                                   (36 bytes)
//! ```

use super::codec::{malformed, Decoder};
use super::page::{Codec, IndexNodeId, Table};
use super::DecodeError;
use super::{
    ARCHIVE_ID_LEN, MAX_INDEX_NODE_LEN, MAX_PAGE_PLAIN_LEN, MAX_PAGE_STORED_LEN, MAX_ROOT_LEN,
    MAX_TREE_LEVELS, TAG_LEN,
};

/// Length of a frame.
pub(crate) const FRAME_LEN: usize = 20;
/// Length of a unit's associated data.
pub(crate) const UNIT_AAD_LEN: usize = ARCHIVE_ID_LEN + FRAME_LEN;

/// What a sealed unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum UnitKind {
    Page = 1,
    Node = 2,
    Root = 3,
}

/// One unit's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) kind: UnitKind,
    /// The node's table (0 for pages and the root).
    pub(crate) table: u8,
    /// The node's level (0 for pages and the root).
    pub(crate) level: u8,
    pub(crate) codec: Codec,
    /// The page number, the node's seq, or 0 for the root.
    pub(crate) number: u64,
    pub(crate) plain_len: u32,
    /// Sealed length: the stored form and the tag.
    pub(crate) stored_len: u32,
}

impl Frame {
    /// The frame of data page `number`.
    pub(crate) fn page(number: u64, codec: Codec, plain_len: u32, stored_len: u32) -> Frame {
        Frame { kind: UnitKind::Page, table: 0, level: 0, codec, number, plain_len, stored_len }
    }

    /// The frame of index node `id`.
    pub(crate) fn node(id: &IndexNodeId, codec: Codec, plain_len: u32, stored_len: u32) -> Frame {
        let (table, level) = (id.table as u8, id.level);
        Frame { kind: UnitKind::Node, table, level, codec, number: id.seq, plain_len, stored_len }
    }

    /// The frame of a session's root (always one zstd frame).
    pub(crate) fn root(plain_len: u32, stored_len: u32) -> Frame {
        Frame {
            kind: UnitKind::Root,
            table: 0,
            level: 0,
            codec: Codec::Zstd,
            number: 0,
            plain_len,
            stored_len,
        }
    }

    /// The frame's bytes, written in place: this runs for every page, and
    /// the page path allocates nothing per page.
    pub(crate) fn encode(&self) -> [u8; FRAME_LEN] {
        let mut out = [0u8; FRAME_LEN];
        out[0] = self.kind as u8;
        out[1] = self.table;
        out[2] = self.level;
        out[3] = self.codec as u8;
        out[4..12].copy_from_slice(&self.number.to_le_bytes());
        out[12..16].copy_from_slice(&self.plain_len.to_le_bytes());
        out[16..20].copy_from_slice(&self.stored_len.to_le_bytes());
        out
    }

    /// Decodes a frame read from the file (a scanner's view: nothing to
    /// compare it with but its own rules). Readers that come through an
    /// index record compare the bytes instead; salvage (FORMAT.md §6.6)
    /// calls this.
    pub(crate) fn decode(bytes: &[u8; FRAME_LEN]) -> Result<Frame, DecodeError> {
        let mut d = Decoder::new(bytes, "frame");
        let kind = match d.u8()? {
            1 => UnitKind::Page,
            2 => UnitKind::Node,
            3 => UnitKind::Root,
            _ => return Err(malformed("frame", "unknown unit kind")),
        };
        let (table, level) = (d.u8()?, d.u8()?);
        let codec = Codec::decode(d.u8()?)?;
        let frame =
            Frame { kind, table, level, codec, number: d.u64()?, plain_len: d.u32()?, stored_len: d.u32()? };
        d.finish()?;
        let placed = match kind {
            UnitKind::Node => (Table::Entries as u8..=Table::Chunks as u8).contains(&table),
            UnitKind::Page => table == 0 && level == 0,
            UnitKind::Root => table == 0 && level == 0 && frame.number == 0 && codec == Codec::Zstd,
        };
        if !placed {
            return Err(malformed("frame", "fields do not fit the unit kind"));
        }
        Ok(frame)
    }

    /// Whether the lengths are within the limits of the unit's kind
    /// (FORMAT.md §7), so that a scanner may read that many bytes.
    pub(crate) fn within_limits(&self) -> bool {
        let (plain, stored) = match self.kind {
            UnitKind::Page => (MAX_PAGE_PLAIN_LEN, MAX_PAGE_STORED_LEN),
            UnitKind::Node => (MAX_INDEX_NODE_LEN, MAX_INDEX_NODE_LEN + TAG_LEN as u32),
            UnitKind::Root => (MAX_ROOT_LEN, MAX_ROOT_LEN + TAG_LEN as u32),
        };
        self.plain_len <= plain
            && (TAG_LEN as u32..=stored).contains(&self.stored_len)
            && self.level < MAX_TREE_LEVELS
    }

    /// The unit's associated data: the archive id, then the frame.
    pub(crate) fn aad(&self, archive_id: &[u8; ARCHIVE_ID_LEN]) -> [u8; UNIT_AAD_LEN] {
        let mut aad = [0u8; UNIT_AAD_LEN];
        aad[..ARCHIVE_ID_LEN].copy_from_slice(archive_id);
        aad[ARCHIVE_ID_LEN..].copy_from_slice(&self.encode());
        aad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_refuse_misplaced_fields() {
        let id = IndexNodeId { table: Table::Pages, level: 2, seq: 9 };
        for f in
            [Frame::page(7, Codec::Raw, 10, 26), Frame::node(&id, Codec::Zstd, 5, 30), Frame::root(40, 30)]
        {
            assert_eq!(Frame::decode(&f.encode()).unwrap(), f);
        }
        let mut bad = Frame::page(7, Codec::Raw, 10, 26).encode();
        bad[1] = 1;
        assert!(Frame::decode(&bad).is_err(), "a page with a table");
        let mut bad = Frame::root(40, 30).encode();
        bad[0] = 4;
        assert!(Frame::decode(&bad).is_err(), "an unknown kind");
    }
}
