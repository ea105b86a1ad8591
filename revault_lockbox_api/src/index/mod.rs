//! The index: per write session, two sorted trees of sealed nodes, one of
//! entries (keyed by path) and one of data page records (keyed by
//! data-stream offset); per archive, the sessions tree of their records. Writers build them bottom-up as leaves fill;
//! readers descend to one key or walk the leaves in order, never holding a
//! whole tree.

mod build;
mod cache;
mod read;
mod sessions;

pub(crate) use build::{NodeSink, TreeBuilder};
pub(crate) use cache::NodeCache;
pub(crate) use read::{open_unit, read_sealed, read_unit_into, reread_unit, LeafCursor, TreeReader};
pub(crate) use sessions::{push_session, read_sessions};

/// The key of the page record whose page starts at data-stream `offset`.
pub(crate) fn page_key(offset: u64) -> Vec<u8> {
    offset.to_be_bytes().to_vec()
}
