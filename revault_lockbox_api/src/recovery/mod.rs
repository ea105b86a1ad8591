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
mod lazy;
mod overlay;
mod record;
#[cfg(test)]
mod record_tests;
mod repair;
mod stripes;

pub use crate::format::{sums_check, Footer, RecordLayout, RecordOwner, FOOTER_LEN};
pub use encode::{encode, GroupParity};
pub use lazy::{lazy_records_view, LazyView, SUMS_CACHE};
pub use overlay::{
    records_view, repaired_view, Protected, RecordsView, RepairedView, RunRepair, REPAIR_WINDOW,
};
pub use record::{locate_records, write_record, LocatedRecord, StoredParity};
pub use repair::{repair, repair_groups, Damage, ParitySource, RecoveryShards, Repaired};

pub use crate::format::{Layout, LayoutError, MAX_GROUP_SHARDS, MAX_PERCENT, SHARD_LEN, SHARD_SUM_LEN};

/// A shard's checksum: the first 8 bytes of
/// `H("revault-lockbox v4 recovery shard", shard)` (BLAKE3 in its
/// key-derivation mode). It finds accidental damage; it authenticates
/// nothing (the records that hold it are authenticated where they are
/// stored, and repaired units are checked again as every unit is).
pub type ShardSum = [u8; SHARD_SUM_LEN];

/// The checksum of one shard.
pub fn shard_sum(shard: &[u8]) -> ShardSum {
    // The context's key once, not once a shard: readers hash every shard
    // they read.
    static KEYED: std::sync::LazyLock<blake3::Hasher> =
        std::sync::LazyLock::new(|| blake3::Hasher::new_derive_key("revault-lockbox v4 recovery shard"));
    let mut hasher = KEYED.clone();
    hasher.update(shard);
    let mut sum = [0u8; SHARD_SUM_LEN];
    hasher.finalize_xof().fill(&mut sum);
    sum
}

#[cfg(test)]
mod tests;
