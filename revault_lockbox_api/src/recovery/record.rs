//! A session's recovery record on disk (FORMAT.md §3.12): writing one over
//! the protected bytes just written, reading its parity back for
//! [`repair`](super::repair), and finding records from the file's end by
//! their footers, without a key. The bytes' layout and the footer's checks
//! are `format`'s ([`Footer`], [`RecordLayout`]); this file does the I/O.

use std::io::{self, Write};
use std::ops::Range;

use super::encode::encode;
use super::repair::{ParitySource, RecoveryShards};
use super::{ShardSum, SHARD_LEN, SHARD_SUM_LEN};
use crate::format::{record_hasher, sums_check, Footer, RecordLayout, RecordOwner, FOOTER_LEN, TRAILER_LEN};
use crate::storage::ReadAt;

/// Writes the recovery record of `percent` % over the `protected` bytes of
/// `source`, and its footer, to `out`; returns the footer.
///
/// Reads the protected bytes once (about `window` bytes at a time, see
/// [`encode`]); holds, besides, each group's checksums until the record's
/// end, where they are written a second time (8 bytes a 4 KiB shard: 1/512
/// of the protected bytes).
pub fn write_record(
    source: &dyn ReadAt,
    protected: Range<u64>,
    percent: u8,
    window: usize,
    owner: RecordOwner,
    out: &mut dyn Write,
) -> io::Result<Footer> {
    let len = protected.end.saturating_sub(protected.start);
    let shaped = Footer::new(owner, percent, protected.start, len, [0; 32])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let layout = shaped.layout;
    let mut hasher = record_hasher();
    let mut table = Vec::with_capacity(layout.groups as usize * shaped.record_layout().sums_len() as usize);
    let mut written = 0u64;
    let mut put = |bytes: &[u8], out: &mut dyn Write| -> io::Result<()> {
        hasher.update(bytes);
        written += bytes.len() as u64;
        out.write_all(bytes)
    };
    encode(source, protected.start, &layout, window, |g| {
        let start = table.len();
        for sum in g.original_sums.iter().chain(g.recovery_sums) {
            table.extend_from_slice(sum);
        }
        let check = sums_check(g.group, &table[start..]);
        table.extend_from_slice(&check);
        put(&table[start..], out)?;
        put(g.recovery, out)
    })?;
    put(&table, out)?;
    let footer = Footer { record_hash: *hasher.finalize().as_bytes(), ..shaped };
    debug_assert_eq!(written, footer.record_len);
    out.write_all(&footer.encode())?;
    Ok(footer)
}

/// A stored record's parity, read through a [`ReadAt`] as [`repair`]
/// asks for it.
///
/// Each group's checksums are kept twice (in its block and in the table at
/// the record's end), each copy with a check of its own: a copy whose
/// check fails is not used, and a group whose two copies both fail (or
/// pass and differ) is refused: a checksum is never trusted unchecked.
///
/// [`repair`]: super::repair
pub struct StoredParity<'a> {
    source: &'a dyn ReadAt,
    record_at: u64,
    layout: RecordLayout,
}

impl<'a> StoredParity<'a> {
    /// The parity of the record that `footer` ends, the record starting at
    /// `record_at` of `source`.
    pub fn new(source: &'a dyn ReadAt, record_at: u64, footer: &Footer) -> StoredParity<'a> {
        StoredParity { source, record_at, layout: footer.record_layout() }
    }

    /// The checksums of group `g` (its originals', then its recovery
    /// shards'), from whichever copy passes its check.
    pub fn sums(&self, g: u32) -> io::Result<Vec<ShardSum>> {
        let len = self.layout.sums_len() as usize;
        let read = |at: u64| -> Option<Vec<u8>> {
            let mut bytes = vec![0u8; len];
            self.source.read_exact_at(&mut bytes, self.record_at + at).ok()?;
            let (sums, check) = bytes.split_at(len - 8);
            (sums_check(g, sums) == check).then(|| sums.to_vec())
        };
        let (first, second) = (read(self.layout.block_sums(g)), read(self.layout.table_sums(g)));
        let sums = match (first, second) {
            (Some(a), Some(b)) if a != b => {
                return Err(invalid(format!(
                    "recovery group {g}: its two checksum lists both pass their checks and differ (the record lies)"
                )))
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => {
                return Err(invalid(format!(
                    "recovery group {g}: both copies of its checksum list are damaged"
                )))
            }
        };
        Ok(sums.chunks(SHARD_SUM_LEN).map(|s| s.try_into().expect("a sum")).collect())
    }
}

impl ParitySource for StoredParity<'_> {
    fn original_sums(&mut self, group: u32) -> io::Result<Vec<ShardSum>> {
        let mut sums = self.sums(group)?;
        sums.truncate(self.layout.layout.originals as usize);
        Ok(sums)
    }

    fn recovery(&mut self, group: u32) -> io::Result<RecoveryShards> {
        let sums = self.sums(group)?.split_off(self.layout.layout.originals as usize);
        let shards = (0..self.layout.layout.recovery)
            .map(|r| {
                let mut shard = vec![0u8; SHARD_LEN];
                let at = self.record_at + self.layout.recovery_shard(group, r);
                self.source.read_exact_at(&mut shard, at).ok().map(|_| shard)
            })
            .collect();
        Ok(RecoveryShards { shards, sums })
    }
}

/// A record found by its footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocatedRecord {
    /// Where its footer starts.
    pub footer_at: u64,
    /// The footer, decoded and checked.
    pub footer: Footer,
}

impl LocatedRecord {
    /// Where the record starts.
    pub fn record_at(&self) -> u64 {
        self.footer.record_at(self.footer_at)
    }

    /// Where its session ends (after the trailer's second copy).
    pub fn session_end(&self) -> u64 {
        self.footer_at + (FOOTER_LEN + TRAILER_LEN) as u64
    }
}

/// The records of the sessions at the end of `source` (`file_len` bytes),
/// found without a key: the footer at a fixed distance before the file's
/// end, then the one before the end of the session it names as its
/// predecessor, and so on. Stops, cleanly, at the first session without a
/// record (or whose footer is damaged) or at the archive's first session.
/// In file order, oldest first.
pub fn locate_records(source: &dyn ReadAt, file_len: u64) -> io::Result<Vec<LocatedRecord>> {
    let mut found = Vec::new();
    let mut end = Some(file_len);
    while let Some(session_end) = end {
        let Some(footer_at) = session_end.checked_sub((FOOTER_LEN + TRAILER_LEN) as u64) else { break };
        let mut bytes = [0u8; FOOTER_LEN];
        match source.read_exact_at(&mut bytes, footer_at) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let Ok(footer) = Footer::decode(&bytes, footer_at) else { break };
        found.push(LocatedRecord { footer_at, footer });
        // Each step goes back by at least a trailer, so the walk ends.
        end = footer.previous_end().filter(|&previous| previous < session_end);
    }
    found.reverse();
    Ok(found)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
