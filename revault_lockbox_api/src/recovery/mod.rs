//! Recovery records: Reed–Solomon parity over a run of archive bytes, so
//! that damage the checks find can be filled in again (issue 50; the bytes
//! on disk are FORMAT.md's once the writer carries them).
//!
//! The protected bytes are cut into **shards** of [`SHARD_LEN`] bytes (the
//! last one padded with zeros), and the shards are dealt round-robin into
//! **groups**: shard `i` is position `i / groups` of group `i % groups`.
//! Each group is one Reed–Solomon code (`reed-solomon-simd`, GF(2^16),
//! O(n log n)) of at most [`MAX_GROUP_SHARDS`] originals and its own
//! recovery shards, and each shard, original or recovery, has a short
//! checksum ([`ShardSum`]) so that damage is located to the shard: a bad
//! 4 KiB sector costs one shard of one group, not the unit it falls in.
//!
//! Why dealt round-robin: a contiguous run of damage falls on consecutive
//! shards, which land in consecutive groups, so every group loses about
//! the same share of it. Each group has `ceil(originals × percent / 100)`
//! recovery shards and one more ([`Layout::new`]), so any one contiguous
//! run of up to `percent` % of the protected bytes is repairable (the one
//! more covers the partial shards at the run's two ends), and so are
//! scattered bad sectors as long as no group loses more shards than it
//! has recovery shards.
//!
//! Why groups of at most 1,024 shards (4 MiB): encoding a group needs all
//! of its originals in memory, and a group's originals are spread across
//! the whole run. [`encode`] therefore reads the run once, in stripes: a
//! batch of adjacent groups at a time, each stripe one positioned read of
//! a shard of each group in the batch, so memory is the batch
//! (`window` bytes) whatever the run's length, and every byte is read
//! once.

mod encode;
mod overlay;
mod repair;
mod stripes;

pub use encode::{encode, GroupParity};
pub use overlay::{repaired_view, Protected, RepairedView, RunRepair, REPAIR_WINDOW};
pub use repair::{repair, Damage, ParitySource, RecoveryShards, Repaired};

/// Bytes in a shard: the sector size of most disks, so that one bad sector
/// costs one shard.
pub const SHARD_LEN: usize = 4096;
/// Most originals in one group: 4 MiB of originals, which [`encode`] holds
/// in memory for each group of a batch.
pub const MAX_GROUP_SHARDS: u32 = 1024;
/// The largest share of parity a layout takes, in percent.
pub const MAX_PERCENT: u8 = 50;
/// Bytes of a [`ShardSum`].
pub const SHARD_SUM_LEN: usize = 8;

/// A shard's checksum: the first 8 bytes of
/// `H("revault-lockbox v4 recovery shard", shard)` (BLAKE3 in its
/// key-derivation mode). It finds accidental damage; it authenticates
/// nothing (the records that hold it are authenticated where they are
/// stored, and repaired units are checked again as every unit is).
pub type ShardSum = [u8; SHARD_SUM_LEN];

/// The checksum of one shard.
pub fn shard_sum(shard: &[u8]) -> ShardSum {
    let mut hasher = blake3::Hasher::new_derive_key("revault-lockbox v4 recovery shard");
    hasher.update(shard);
    let mut sum = [0u8; SHARD_SUM_LEN];
    hasher.finalize_xof().fill(&mut sum);
    sum
}

/// How a run of `len` bytes is cut into shards and groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The protected bytes.
    pub len: u64,
    /// Groups the shards are dealt into.
    pub groups: u32,
    /// Original shards in each group (the last positions of some groups
    /// lie past `len` and are all zeros).
    pub originals: u32,
    /// Recovery shards in each group.
    pub recovery: u32,
}

/// Why a layout cannot be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The percentage is 0 or over [`MAX_PERCENT`].
    #[error("a recovery record of {0} % is out of range (1 to {MAX_PERCENT} %)")]
    Percent(u8),
    /// Nothing to protect.
    #[error("a recovery record over no bytes")]
    Empty,
    /// A layout read from an archive that no writer makes.
    #[error("a recovery layout that does not fit its length ({0})")]
    Inconsistent(&'static str),
}

impl Layout {
    /// The layout that protects `len` bytes with `percent` % of parity.
    pub fn new(len: u64, percent: u8) -> Result<Layout, LayoutError> {
        if percent == 0 || percent > MAX_PERCENT {
            return Err(LayoutError::Percent(percent));
        }
        if len == 0 {
            return Err(LayoutError::Empty);
        }
        let shards = len.div_ceil(SHARD_LEN as u64);
        let groups = shards.div_ceil(u64::from(MAX_GROUP_SHARDS));
        let originals = shards.div_ceil(groups) as u32;
        let recovery = (u64::from(originals) * u64::from(percent)).div_ceil(100) as u32 + 1;
        let groups = u32::try_from(groups).map_err(|_| LayoutError::Inconsistent("too many groups"))?;
        Layout { len, groups, originals, recovery }.checked()
    }

    /// `self` when a writer could have made it: the checks a reader makes
    /// on a layout it reads, before it allocates anything by it.
    pub fn checked(self) -> Result<Layout, LayoutError> {
        let bad = |why| Err(LayoutError::Inconsistent(why));
        if self.len == 0 {
            return Err(LayoutError::Empty);
        }
        if self.groups == 0 || self.originals == 0 || self.originals > MAX_GROUP_SHARDS {
            return bad("group shape");
        }
        let shards = self.len.div_ceil(SHARD_LEN as u64);
        // Every group holds at least one real shard, and the grid holds
        // them all.
        let grid = u64::from(self.groups) * u64::from(self.originals);
        if grid < shards || grid - shards >= u64::from(self.groups) {
            return bad("shard count");
        }
        let most = (u64::from(self.originals) * u64::from(MAX_PERCENT)).div_ceil(100) + 1;
        if self.recovery == 0 || u64::from(self.recovery) > most {
            return bad("recovery shard count");
        }
        Ok(self)
    }

    /// Shards that hold protected bytes (the grid's padding excluded).
    pub fn shards(&self) -> u64 {
        self.len.div_ceil(SHARD_LEN as u64)
    }

    /// Where shard `index` of the run lies in the grid: (group, position).
    pub fn place(&self, index: u64) -> (u32, u32) {
        let groups = u64::from(self.groups);
        ((index % groups) as u32, (index / groups) as u32)
    }

    /// The run's shard at `position` of `group`.
    pub fn index(&self, group: u32, position: u32) -> u64 {
        u64::from(position) * u64::from(self.groups) + u64::from(group)
    }

    /// Bytes of parity and checksums the layout adds: each group's
    /// recovery shards, and a checksum of every shard of the grid.
    pub fn parity_len(&self) -> u64 {
        let per_group = u64::from(self.recovery) * (SHARD_LEN + SHARD_SUM_LEN) as u64
            + u64::from(self.originals) * SHARD_SUM_LEN as u64;
        per_group * u64::from(self.groups)
    }

    /// The longest run of contiguous damage the layout repairs wherever it
    /// falls: each group then loses at most `recovery` shards.
    pub fn contiguous_repairable(&self) -> u64 {
        // A run of n shards touches at most ceil(n / groups) of any one
        // group's; a run of `b` bytes touches at most ceil(b / SHARD_LEN) + 1
        // shards.
        let shards = u64::from(self.recovery) * u64::from(self.groups);
        (shards - 1) * SHARD_LEN as u64
    }
}

#[cfg(test)]
mod tests;
