//! Finding damaged shards by their checksums and filling them in from
//! their groups' recovery shards.

use std::io;
use std::ops::Range;

use reed_solomon_simd::ReedSolomonDecoder;

use super::encode::coder_error;
use super::stripes::{batch_groups, for_each_batch};
use super::{shard_sum, Layout, ShardSum, SHARD_LEN};
use crate::storage::ReadAt;

/// Where [`repair`] finds a run's stored parity, group by group.
pub trait ParitySource {
    /// The checksum of each original shard of `group`, by position (asked
    /// once for every group, in order).
    fn original_sums(&mut self, group: u32) -> io::Result<Vec<ShardSum>>;
    /// The recovery shards of `group` (asked only for a group with damage).
    fn recovery(&mut self, group: u32) -> io::Result<RecoveryShards>;
}

/// One group's stored recovery shards, as a reader finds them.
#[derive(Debug, Clone)]
pub struct RecoveryShards {
    /// The shards, [`SHARD_LEN`] bytes each; one that could not be read is
    /// `None`.
    pub shards: Vec<Option<Vec<u8>>>,
    /// The checksum of each.
    pub sums: Vec<ShardSum>,
}

/// What [`repair`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// Shards whose bytes did not match their checksums (or could not be
    /// read).
    pub damaged: u64,
    /// Of those, the shards rebuilt (handed to the caller).
    pub rebuilt: u64,
    /// Groups that lost more shards than they had good recovery shards
    /// for, each with its count of lost shards and of good recovery shards.
    pub unrepairable: Vec<Damage>,
}

/// A group parity could not repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The group.
    pub group: u32,
    /// Its original shards found damaged.
    pub lost: u32,
    /// Its recovery shards that were intact.
    pub usable: u32,
}

/// Reads the run at `start` of `source` once (holding about `window`
/// bytes), checks every shard against its group's checksums, and rebuilds
/// each damaged shard of a group that has enough intact recovery shards,
/// handing `(shard index, bytes)` to `rebuilt` (the last shard's bytes end
/// at the run's end), from the stored parity `parity` gives.
///
/// Never hands out bytes that do not match the checksum recorded for
/// them: a rebuilt shard that does not is an error (parity that lies).
pub fn repair(
    source: &dyn ReadAt,
    start: u64,
    layout: &Layout,
    window: usize,
    parity: &mut dyn ParitySource,
    rebuilt: impl FnMut(u64, &[u8]) -> io::Result<()>,
) -> io::Result<Repaired> {
    repair_groups(source, start, layout, 0..layout.groups, window, parity, rebuilt)
}

/// [`repair`] of the groups `groups` only (one pass over their originals,
/// which are spread over the whole run): what a reader that found one
/// damaged shard does with its group.
pub fn repair_groups(
    source: &dyn ReadAt,
    start: u64,
    layout: &Layout,
    groups: Range<u32>,
    window: usize,
    parity: &mut dyn ParitySource,
    mut rebuilt: impl FnMut(u64, &[u8]) -> io::Result<()>,
) -> io::Result<Repaired> {
    let mut report = Repaired::default();
    let mut decoder = ReedSolomonDecoder::new(layout.originals as usize, layout.recovery as usize, SHARD_LEN)
        .map_err(coder_error)?;
    for_each_batch(source, start, layout, groups, batch_groups(layout, window), |batch| {
        for j in 0..batch.count {
            let group = batch.first + j;
            let sums = parity.original_sums(group)?;
            if sums.len() != layout.originals as usize {
                return Err(misshaped(group));
            }
            let lost: Vec<u32> = (0..layout.originals)
                .filter(|&p| {
                    !batch.is_present(j, p) || shard_sum(batch.shard(layout, j, p)) != sums[p as usize]
                })
                .collect();
            if lost.is_empty() {
                continue;
            }
            report.damaged += lost.len() as u64;
            let stored = parity.recovery(group)?;
            let recovery = layout.recovery as usize;
            let shaped = stored.shards.len() == recovery
                && stored.sums.len() == recovery
                && stored.shards.iter().flatten().all(|s| s.len() == SHARD_LEN);
            if !shaped {
                return Err(misshaped(group));
            }
            let usable: Vec<(usize, &[u8])> = (0..recovery)
                .filter_map(|r| {
                    let shard = stored.shards[r].as_deref()?;
                    (shard_sum(shard) == stored.sums[r]).then_some((r, shard))
                })
                .collect();
            if usable.len() < lost.len() {
                report.unrepairable.push(Damage {
                    group,
                    lost: lost.len() as u32,
                    usable: usable.len() as u32,
                });
                continue;
            }
            for p in (0..layout.originals).filter(|p| lost.binary_search(p).is_err()) {
                decoder.add_original_shard(p as usize, batch.shard(layout, j, p)).map_err(coder_error)?;
            }
            for (r, shard) in usable {
                decoder.add_recovery_shard(r, shard).map_err(coder_error)?;
            }
            let restored = decoder.decode().map_err(coder_error)?;
            for &p in &lost {
                let shard = restored
                    .restored_original(p as usize)
                    .ok_or_else(|| io::Error::other("the Reed-Solomon coder restored too few shards"))?;
                if shard_sum(shard) != sums[p as usize] {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("recovery group {group}: the rebuilt shard at position {p} does not match its checksum (the parity lies)"),
                    ));
                }
                let index = layout.index(group, p);
                let from = index * SHARD_LEN as u64;
                let len = layout.len.saturating_sub(from).min(SHARD_LEN as u64) as usize;
                if len > 0 {
                    rebuilt(index, &shard[..len])?;
                    report.rebuilt += 1;
                }
            }
        }
        Ok(())
    })?;
    Ok(report)
}

fn misshaped(group: u32) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("recovery group {group}: its parity does not match the layout"),
    )
}
