//! Computing a run's parity: one pass over the run, a batch of groups at a
//! time (memory: the batch), each group's recovery shards and every shard's
//! checksum handed out as the group is done.

use std::io;

use reed_solomon_simd::ReedSolomonEncoder;

use super::stripes::{batch_groups, for_each_batch};
use super::{shard_sum, Layout, ShardSum, SHARD_LEN};
use crate::storage::ReadAt;

/// One group's parity, as [`encode`] hands it out.
#[derive(Debug)]
pub struct GroupParity<'a> {
    /// The group.
    pub group: u32,
    /// The checksum of each original shard, by position.
    pub original_sums: &'a [ShardSum],
    /// The recovery shards, [`SHARD_LEN`] bytes each, in order.
    pub recovery: &'a [u8],
    /// The checksum of each recovery shard.
    pub recovery_sums: &'a [ShardSum],
}

/// Computes the parity of the `layout.len` bytes at `start` of `source`,
/// reading them once and holding at most about `window` bytes of them
/// (at least one group, 4 MiB at most), and hands each group's parity to
/// `emit`, groups in order. Fails when the source ends before the run
/// does (the parity of missing bytes would protect nothing).
pub fn encode(
    source: &dyn ReadAt,
    start: u64,
    layout: &Layout,
    window: usize,
    mut emit: impl FnMut(GroupParity<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut encoder = ReedSolomonEncoder::new(layout.originals as usize, layout.recovery as usize, SHARD_LEN)
        .map_err(coder_error)?;
    let mut original_sums = Vec::with_capacity(layout.originals as usize);
    let mut recovery = Vec::with_capacity(layout.recovery as usize * SHARD_LEN);
    let mut recovery_sums = Vec::with_capacity(layout.recovery as usize);
    for_each_batch(source, start, layout, 0..layout.groups, batch_groups(layout, window), |batch| {
        for j in 0..batch.count {
            original_sums.clear();
            for position in 0..layout.originals {
                if !batch.is_present(j, position) {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the source ends before the bytes a recovery record protects",
                    ));
                }
                let shard = batch.shard(layout, j, position);
                original_sums.push(shard_sum(shard));
                encoder.add_original_shard(shard).map_err(coder_error)?;
            }
            recovery.clear();
            recovery_sums.clear();
            for shard in encoder.encode().map_err(coder_error)?.recovery_iter() {
                recovery.extend_from_slice(shard);
                recovery_sums.push(shard_sum(shard));
            }
            emit(GroupParity {
                group: batch.first + j,
                original_sums: &original_sums,
                recovery: &recovery,
                recovery_sums: &recovery_sums,
            })?;
        }
        Ok(())
    })
}

/// The coder refuses only shapes [`Layout::checked`] refuses first.
pub(super) fn coder_error(e: reed_solomon_simd::Error) -> io::Error {
    io::Error::other(format!("Reed-Solomon coder: {e}"))
}
