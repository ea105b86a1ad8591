//! The bytes of a recovery record (format version 4, FORMAT.md §3.12): how
//! a session's protected bytes are cut into shards and groups ([`Layout`]),
//! where each group's checksums and recovery shards lie in the record
//! ([`RecordLayout`]), and the fixed-size [`Footer`] that ends the record,
//! so that a reader finds records backwards from the file's end without a
//! key. The parity itself is computed in `recovery`; nothing here does I/O.
//!
//! ```text
//! record = block[groups] || table
//! block  = sums(g) || recovery shard[recovery]        (each SHARD_LEN bytes)
//! table  = sums(0) || sums(1) || ... || sums(groups - 1)   (the second copy)
//! sums(g) = original_sum[originals] || recovery_sum[recovery] || check[8]
//! ```

use super::codec::{malformed, Decoder, Encoder};
use super::{
    header_copy_len, DecodeError, Hash, ARCHIVE_ID_LEN, HASH_LEN, MAX_KEY_SLOT_LEN, MIN_DATA_START,
    MIN_KEY_SLOT_LEN, SESSION_SALT_LEN, TRAILER_LEN,
};

/// Bytes in a shard: the sector size of most disks, so that one bad sector
/// costs one shard.
pub const SHARD_LEN: usize = 4096;
/// Most originals in one group: 4 MiB of originals, which `recovery::encode` holds
/// in memory for each group of a batch.
pub const MAX_GROUP_SHARDS: u32 = 1024;
/// The largest share of parity a layout takes, in percent.
pub const MAX_PERCENT: u8 = 50;
/// Bytes of a shard's checksum (`recovery::ShardSum`).
pub const SHARD_SUM_LEN: usize = 8;

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

/// The first version whose sessions may carry a recovery record.
const FIRST_RECOVERY_VERSION: u16 = 4;

/// Whether a session of an archive of format `version` may end with a
/// recovery record.
pub(crate) fn recovery_allowed(version: u16) -> bool {
    version >= FIRST_RECOVERY_VERSION
}

/// First bytes of a recovery record's footer.
pub(crate) const FOOTER_MAGIC: [u8; 8] = *b"LBOXRCVR";
/// Bytes of a recovery record's footer.
pub const FOOTER_LEN: usize =
    8 + 2 + 2 + 2 + 4 * 4 + ARCHIVE_ID_LEN + SESSION_SALT_LEN + 8 * 3 + HASH_LEN * 2;
/// Bytes of a footer that its own checksum covers (all but the checksum).
const FOOTER_BODY_LEN: usize = FOOTER_LEN - HASH_LEN;
/// `flags` bit 0: the record's session is the archive's first (its
/// protected bytes start at `data_start`, after the slot table, not at
/// the end of an earlier session).
const FOOTER_FIRST_SESSION: u16 = 1;
/// Bytes of the check that ends each group's checksum list.
const SUMS_CHECK_LEN: usize = 8;

/// Context of a record's hash (in its footer).
const RECORD_HASH: &str = "revault-lockbox v4 recovery record";
/// Context of a footer's own checksum.
const FOOTER_SUM: &str = "revault-lockbox v4 recovery footer";
/// Context of the check of one group's checksum list.
const SUMS_CHECK: &str = "revault-lockbox v4 recovery sums";

/// Where a group's checksums and recovery shards lie in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLayout {
    /// The shards and groups the record protects.
    pub layout: Layout,
}

impl RecordLayout {
    /// Bytes of one group's checksum list: a checksum of each original and
    /// recovery shard, then the list's check.
    pub fn sums_len(&self) -> u64 {
        (u64::from(self.layout.originals) + u64::from(self.layout.recovery)) * SHARD_SUM_LEN as u64
            + SUMS_CHECK_LEN as u64
    }

    /// Bytes of one group's block: its checksum list, then its recovery
    /// shards.
    pub fn block_len(&self) -> u64 {
        self.sums_len() + u64::from(self.layout.recovery) * SHARD_LEN as u64
    }

    /// Offset in the record of group `g`'s first checksum list (in its block).
    pub fn block_sums(&self, g: u32) -> u64 {
        u64::from(g) * self.block_len()
    }

    /// Offset in the record of recovery shard `r` of group `g`.
    pub fn recovery_shard(&self, g: u32, r: u32) -> u64 {
        self.block_sums(g) + self.sums_len() + u64::from(r) * SHARD_LEN as u64
    }

    /// Offset in the record of group `g`'s second checksum list (in the
    /// table at the record's end, as far from the first as the record
    /// allows).
    pub fn table_sums(&self, g: u32) -> u64 {
        u64::from(self.layout.groups) * self.block_len() + u64::from(g) * self.sums_len()
    }

    /// Bytes of the whole record.
    pub fn record_len(&self) -> u64 {
        u64::from(self.layout.groups) * (self.block_len() + self.sums_len())
    }
}

/// The check of group `g`'s checksum list `sums` (its originals' and its
/// recovery shards' checksums, concatenated): it tells which of the two
/// copies is intact, and binds the list to its group.
pub fn sums_check(g: u32, sums: &[u8]) -> [u8; SUMS_CHECK_LEN] {
    let mut hasher = blake3::Hasher::new_derive_key(SUMS_CHECK);
    hasher.update(&g.to_le_bytes()).update(sums);
    let mut check = [0u8; SUMS_CHECK_LEN];
    hasher.finalize_xof().fill(&mut check);
    check
}

/// A hasher for a record's bytes, whose result the footer holds.
pub(crate) fn record_hasher() -> blake3::Hasher {
    blake3::Hasher::new_derive_key(RECORD_HASH)
}

/// What ties a record to its session: a writer's view of the footer's
/// fields that are not the record's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOwner {
    /// The archive's format version (4 or later).
    pub version: u16,
    /// The archive's id.
    pub archive_id: [u8; ARCHIVE_ID_LEN],
    /// The session's salt.
    pub session_salt: [u8; SESSION_SALT_LEN],
    /// Whether the session is the archive's first.
    pub first_session: bool,
}

/// The fixed-size end of a recovery record (FORMAT.md §3.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The session the record belongs to.
    pub owner: RecordOwner,
    /// The percentage the layout was made for.
    pub percent: u8,
    /// The protected bytes' shards and groups (`layout.len` bytes).
    pub layout: Layout,
    /// The protected bytes' first offset in the file.
    pub protected_start: u64,
    /// Bytes of the record before the footer.
    pub record_len: u64,
    /// `H("revault-lockbox v4 recovery record", record)`.
    pub record_hash: Hash,
}

impl Footer {
    /// The footer of a record of `percent` over `protected_len` bytes at
    /// `protected_start`, with the record's hash.
    pub fn new(
        owner: RecordOwner,
        percent: u8,
        protected_start: u64,
        protected_len: u64,
        record_hash: Hash,
    ) -> Result<Footer, LayoutError> {
        let layout = Layout::new(protected_len, percent)?;
        let record_len = RecordLayout { layout }.record_len();
        Ok(Footer { owner, percent, layout, protected_start, record_len, record_hash })
    }

    /// Where the record's groups and checksums lie.
    pub fn record_layout(&self) -> RecordLayout {
        RecordLayout { layout: self.layout }
    }

    /// The bytes on disk.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut e = Encoder::default();
        let flags = if self.owner.first_session { FOOTER_FIRST_SESSION } else { 0 };
        e.bytes(&FOOTER_MAGIC)
            .u16(self.owner.version)
            .u16(flags)
            .u16(u16::from(self.percent))
            .u32(SHARD_LEN as u32)
            .u32(self.layout.groups)
            .u32(self.layout.originals)
            .u32(self.layout.recovery)
            .bytes(&self.owner.archive_id)
            .bytes(&self.owner.session_salt)
            .u64(self.protected_start)
            .u64(self.layout.len)
            .u64(self.record_len)
            .bytes(&self.record_hash);
        let sum = footer_sum(&e.buf);
        e.bytes(&sum);
        e.buf.try_into().expect("fixed layout")
    }

    /// Decodes the footer found at `footer_at` and checks everything a
    /// footer alone can prove: its checksum, a shape a writer makes (the
    /// layout of its percentage over its length, the record's length that
    /// layout gives), and places that fit before `footer_at` (the record,
    /// the first trailer, a header copy of a size the format has, the
    /// protected bytes after the slot table).
    pub fn decode(bytes: &[u8; FOOTER_LEN], footer_at: u64) -> Result<Footer, DecodeError> {
        let what = "recovery record footer";
        if bytes[..8] != FOOTER_MAGIC {
            return Err(malformed(what, "missing"));
        }
        if footer_sum(&bytes[..FOOTER_BODY_LEN]) != bytes[FOOTER_BODY_LEN..] {
            return Err(malformed(what, "its checksum fails (damaged)"));
        }
        let mut d = Decoder::new(bytes, what);
        d.array::<8>()?;
        let version = d.u16()?;
        if !recovery_allowed(version) || !super::is_readable_version(version) {
            return Err(malformed(what, "unsupported format version"));
        }
        let flags = d.u16()?;
        if flags & !FOOTER_FIRST_SESSION != 0 {
            return Err(malformed(what, "unknown flags"));
        }
        let percent = d.u16()?;
        if percent == 0 || percent > u16::from(MAX_PERCENT) {
            return Err(malformed(what, "percentage out of range"));
        }
        if d.u32()? != SHARD_LEN as u32 {
            return Err(malformed(what, "shard length is not 4096"));
        }
        let (groups, originals, recovery) = (d.u32()?, d.u32()?, d.u32()?);
        let owner = RecordOwner {
            version,
            archive_id: d.array()?,
            session_salt: d.array()?,
            first_session: flags & FOOTER_FIRST_SESSION != 0,
        };
        let protected_start = d.u64()?;
        let protected_len = d.u64()?;
        let record_len = d.u64()?;
        let record_hash = d.array()?;
        d.array::<HASH_LEN>()?;
        d.finish()?;
        let written = Footer::new(owner, percent as u8, protected_start, protected_len, record_hash)
            .map_err(|_| malformed(what, "a layout no writer makes"))?;
        let stored = Layout { len: protected_len, groups, originals, recovery };
        if stored != written.layout {
            return Err(malformed(what, "a layout no writer makes (groups, originals or recovery shards)"));
        }
        if record_len != written.record_len {
            return Err(malformed(what, "record length is not the one its layout gives"));
        }
        written.check_place(footer_at)?;
        Ok(written)
    }

    /// The places before `footer_at`: the record, the first trailer before
    /// it, a header copy between the protected bytes and that trailer.
    fn check_place(&self, footer_at: u64) -> Result<(), DecodeError> {
        let what = "recovery record footer";
        let past = || malformed(what, "protected range past the record");
        let protected_end = self.protected_start.checked_add(self.layout.len).ok_or_else(past)?;
        let first_trailer = footer_at
            .checked_sub(self.record_len)
            .and_then(|r| r.checked_sub(TRAILER_LEN as u64))
            .ok_or_else(past)?;
        let copy = first_trailer.checked_sub(protected_end).ok_or_else(past)?;
        let slot_len = copy_slot_len(copy)
            .ok_or_else(|| malformed(what, "no header copy between its protected bytes and its trailer"))?;
        let data_start = header_copy_len(slot_len);
        let start_fits = match self.owner.first_session {
            true => self.protected_start == data_start,
            false => self.protected_start >= MIN_DATA_START + TRAILER_LEN as u64,
        };
        if !start_fits {
            return Err(malformed(what, "protected range does not start where a session does"));
        }
        Ok(())
    }

    /// The checks against the trailer of its session (which a key
    /// authenticates): the same archive, session, percentage and
    /// protected range, so that a record moved from another session or
    /// archive is refused.
    pub(crate) fn check_against(&self, trailer: &super::Trailer) -> Result<(), DecodeError> {
        let protected_len = trailer.header_copy_offset().checked_sub(trailer.protected_start());
        let agrees = self.owner.version == trailer.version
            && self.owner.archive_id == trailer.archive_id
            && self.owner.session_salt == trailer.session_salt
            && self.owner.first_session == (trailer.previous_trailer == 0)
            && self.percent == trailer.recovery_percent
            && self.protected_start == trailer.protected_start()
            && Some(self.layout.len) == protected_len;
        match agrees {
            true => Ok(()),
            false => Err(malformed(
                "recovery record footer",
                "it disagrees with its trailer (archive, session, percentage or protected range)",
            )),
        }
    }

    /// Where the record starts, given where the footer is.
    pub fn record_at(&self, footer_at: u64) -> u64 {
        footer_at - self.record_len
    }

    /// Where the protected bytes end.
    pub fn protected_end(&self) -> u64 {
        self.protected_start + self.layout.len
    }

    /// Where the session before this one ends (its second trailer's end):
    /// `None` for the archive's first session.
    pub fn previous_end(&self) -> Option<u64> {
        (!self.owner.first_session).then_some(self.protected_start)
    }
}

/// The slot size of a header copy of `len` bytes, if the format has one.
fn copy_slot_len(len: u64) -> Option<usize> {
    let mut slot_len = MIN_KEY_SLOT_LEN;
    while slot_len <= MAX_KEY_SLOT_LEN {
        if header_copy_len(slot_len) == len {
            return Some(slot_len);
        }
        slot_len *= 2;
    }
    None
}

fn footer_sum(body: &[u8]) -> Hash {
    *blake3::Hasher::new_derive_key(FOOTER_SUM).update(body).finalize().as_bytes()
}
