//! [`Place`]: an entry's position in the index (its run, its leaf's seq,
//! its slot in that leaf) packed in 63 bits, the seq highest so that the
//! places of an index of fewer than 2^24 leaves per run stay below 2^43, and the descent from the top
//! of a run to the leaf of a given seq. The index numbers each level's
//! nodes from 0 in key order, so a leaf's seq is found without a key:
//! each internal node on the way says where its children's seqs begin.

use crate::error::{Error, Result};
use crate::format::{Child, IndexNodeId, Internal, Table, TreeTop, MAX_RUNS};
use crate::index::TreeReader;

const SLOT_BITS: u32 = 15;
const SEQ_BITS: u32 = 44;
const RUN_BITS: u32 = 4;
const _: () = assert!(SLOT_BITS + SEQ_BITS + RUN_BITS == 63 && MAX_RUNS <= 1 << RUN_BITS);
// A leaf holds at most MAX_INDEX_NODE_LEN / 5 records (the shortest).
const _: () = assert!(crate::format::MAX_INDEX_NODE_LEN as usize / 5 < 1 << SLOT_BITS);

/// Where an entry is in the index: stable for as long as the archive is
/// not changed, distinct for every record, and below 2^63 (a caller may
/// add a small offset, say to keep inode numbers 0 and 1 free).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place(u64);

impl Place {
    pub(super) fn new(run: usize, seq: u64, slot: usize) -> Result<Place> {
        if run >= 1 << RUN_BITS || seq >= 1 << SEQ_BITS || slot >= 1 << SLOT_BITS {
            return Err(Error::malformed("index", "too many leaves to number their entries"));
        }
        Ok(Place(seq << (RUN_BITS + SLOT_BITS) | (run as u64) << SLOT_BITS | slot as u64))
    }

    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The place numbered `n` (any number below 2^63; one no entry holds
    /// is refused when used).
    pub fn from_number(n: u64) -> Option<Place> {
        (n < 1 << 63).then_some(Place(n))
    }

    /// Run (oldest 0), leaf seq, slot.
    pub(super) fn parts(self) -> (usize, u64, usize) {
        let slot = (self.0 & ((1 << SLOT_BITS) - 1)) as usize;
        let run = ((self.0 >> SLOT_BITS) & ((1 << RUN_BITS) - 1)) as usize;
        (run, self.0 >> (RUN_BITS + SLOT_BITS), slot)
    }
}

/// The leaf numbered `seq` of the tree under `top`, and where it lies.
pub(super) fn find_leaf_by_seq(
    tree: &TreeReader<'_>,
    top: &TreeTop,
    seq: u64,
) -> Result<(IndexNodeId, Child)> {
    let mut level = top.height.checked_sub(1).ok_or_else(no_leaf)?;
    let (mut first, mut children) = (0u64, top.children.clone());
    while level > 0 {
        // The last child whose subtree's first leaf is at or below `seq`.
        let (mut lo, mut hi) = (0usize, children.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if first_leaf(tree, level, first + mid as u64, &children[mid])? <= seq {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let node = internal(tree, level, first + lo as u64, &children[lo])?;
        (first, children) = (node.first_child_seq, node.children);
        level -= 1;
    }
    let i = seq.checked_sub(first).filter(|&i| i < children.len() as u64).ok_or_else(no_leaf)?;
    let id = IndexNodeId { table: Table::Entries, level: 0, seq };
    Ok((id, children[i as usize].clone()))
}

/// The seq of the first leaf below node `seq` of `level` (at least 1).
fn first_leaf(tree: &TreeReader<'_>, level: u8, seq: u64, child: &Child) -> Result<u64> {
    let node = internal(tree, level, seq, child)?;
    if level == 1 {
        return Ok(node.first_child_seq);
    }
    first_leaf(tree, level - 1, node.first_child_seq, &node.children[0])
}

fn internal(tree: &TreeReader<'_>, level: u8, seq: u64, child: &Child) -> Result<Internal> {
    let id = IndexNodeId { table: Table::Entries, level, seq };
    let node = Internal::decode(&tree.node(&id, child)?)?;
    if node.children.first().map(|c| &c.first_key) != Some(&child.first_key) {
        return Err(Error::malformed("index node", "first key differs from its parent's"));
    }
    Ok(node)
}

fn no_leaf() -> Error {
    Error::malformed("browse place", "no leaf has its seq")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_pack_and_unpack_their_parts() {
        let p = Place::new(15, (1 << 44) - 1, (1 << 15) - 1).unwrap();
        assert_eq!(p.parts(), (15, (1 << 44) - 1, (1 << 15) - 1));
        assert!(p.get() < 1 << 63);
        assert_eq!(Place::new(3, 7, 9).unwrap().parts(), (3, 7, 9));
        let small = Place::new(15, (1 << 24) - 1, (1 << 15) - 1).unwrap();
        assert!(small.get() < 1 << 43, "fewer than 2^24 leaves a run: below 2^43");
        assert!(Place::new(16, 0, 0).is_err() && Place::new(0, 1 << 44, 0).is_err());
        assert_eq!(Place::from_number(p.get()), Some(p));
        assert_eq!(Place::from_number(1 << 63), None);
    }
}
