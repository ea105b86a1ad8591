//! Reading a batch of adjacent groups' originals in one pass: a stripe is
//! the shards at one position of every group in the batch, which lie next
//! to each other in the run, so each stripe is one positioned read.

use std::io;
use std::ops::Range;

use super::{Layout, SHARD_LEN};
use crate::storage::ReadAt;

/// The originals of groups `first .. first + count`, position-major: the
/// shard at `position` of the batch's `j`-th group is
/// `bytes[(position × count + j) × SHARD_LEN ..][.. SHARD_LEN]`.
pub(super) struct Batch {
    pub(super) first: u32,
    pub(super) count: u32,
    pub(super) bytes: Vec<u8>,
    /// Per shard (same order): whether its bytes could all be read; a
    /// shard cut off by the source's end reads as missing, not as zeros.
    pub(super) present: Vec<bool>,
}

impl Batch {
    pub(super) fn shard(&self, layout: &Layout, j: u32, position: u32) -> &[u8] {
        let at = (position as usize * self.count as usize + j as usize) * SHARD_LEN;
        debug_assert!(position < layout.originals);
        &self.bytes[at..at + SHARD_LEN]
    }

    pub(super) fn is_present(&self, j: u32, position: u32) -> bool {
        self.present[position as usize * self.count as usize + j as usize]
    }
}

/// Groups per batch for a memory budget of `window` bytes (at least one).
pub(super) fn batch_groups(layout: &Layout, window: usize) -> u32 {
    let group_bytes = layout.originals as usize * SHARD_LEN;
    ((window / group_bytes).max(1) as u32).min(layout.groups)
}

/// Reads batch after batch of `batch` groups of `groups` from the run at
/// `start` of `source`, handing each to `each`, reusing one buffer.
pub(super) fn for_each_batch(
    source: &dyn ReadAt,
    start: u64,
    layout: &Layout,
    groups: Range<u32>,
    batch: u32,
    mut each: impl FnMut(&Batch) -> io::Result<()>,
) -> io::Result<()> {
    let available = source.len()?.saturating_sub(start).min(layout.len);
    let last = groups.end.min(layout.groups);
    let mut current = Batch { first: groups.start, count: 0, bytes: Vec::new(), present: Vec::new() };
    while current.first + current.count < last {
        current.first += current.count;
        current.count = batch.min(last - current.first);
        let stripe = current.count as usize * SHARD_LEN;
        current.bytes.clear();
        current.bytes.resize(stripe * layout.originals as usize, 0);
        current.present.clear();
        for position in 0..layout.originals {
            let index = layout.index(current.first, position);
            let from = index * SHARD_LEN as u64;
            let at = position as usize * stripe;
            // Past the run's end the grid is zeros (present); past what
            // the source holds it is missing.
            let wanted = layout.len.saturating_sub(from).min(stripe as u64) as usize;
            let readable = available.saturating_sub(from).min(wanted as u64) as usize;
            if readable > 0 {
                source.read_exact_at(&mut current.bytes[at..at + readable], start + from)?;
            }
            for j in 0..current.count as usize {
                let shard_start = j * SHARD_LEN;
                let shard_end = (shard_start + SHARD_LEN).min(wanted);
                current.present.push(shard_start >= wanted || shard_end <= readable);
            }
        }
        each(&current)?;
    }
    Ok(())
}
