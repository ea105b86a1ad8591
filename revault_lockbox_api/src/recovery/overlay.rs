//! A repaired view of an archive: its bytes as read, with the shards that
//! failed their checksums replaced by what each protected run's parity
//! rebuilt (in memory; the archive is never written). The one owner of
//! "run every record's repair over a source and read the result".
//!
//! Memory: only rebuilt shards are held, [`SHARD_LEN`] bytes each, and a
//! group is rebuilt only when it lost no more shards than it has intact
//! recovery shards, so the view holds at most the records' recovery
//! shards' worth of bytes (`recovery × groups × 4 KiB` a record: about
//! its percentage of what it protects), plus the window the scan reads
//! through.

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;

use super::{
    locate_records, repair, Damage, Layout, LocatedRecord, ParitySource, Repaired, StoredParity, SHARD_LEN,
};
use crate::format::{HeaderPrefix, ARCHIVE_ID_LEN, HEADER_PREFIX_LEN};
use crate::storage::ReadAt;

/// Bytes of a protected run [`repaired_view`] reads at once (a few groups).
pub const REPAIR_WINDOW: usize = 16 << 20;

/// One recovery record as the view needs it: where its protected run
/// starts, its layout, and where its stored parity is read from.
pub struct Protected<'p> {
    /// Offset of the run's first byte in the archive.
    pub start: u64,
    /// The run's shards and groups.
    pub layout: Layout,
    /// The record's parity.
    pub parity: &'p mut dyn ParitySource,
}

/// What the repair of one protected run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRepair {
    /// Offset of the run's first byte.
    pub start: u64,
    /// Bytes the run protects.
    pub len: u64,
    /// Shards damaged, rebuilt, and the groups parity could not repair.
    pub found: Repaired,
    /// The archive's byte ranges rebuilt, merged where adjacent, in order.
    pub rebuilt: Vec<Range<u64>>,
}

impl RunRepair {
    /// Whether every damaged shard of the run was rebuilt.
    pub fn is_repaired(&self) -> bool {
        self.found.unrepairable.is_empty()
    }

    /// Whether the run had damage.
    pub fn is_damaged(&self) -> bool {
        self.found.damaged > 0
    }

    /// Bytes rebuilt.
    pub fn rebuilt_bytes(&self) -> u64 {
        self.rebuilt.iter().map(|r| r.end - r.start).sum()
    }

    /// The groups parity could not repair.
    pub fn unrepairable(&self) -> &[Damage] {
        &self.found.unrepairable
    }
}

/// `inner` read with rebuilt shards in place of the damaged ones.
pub struct RepairedView<S> {
    inner: S,
    /// Rebuilt shards by the archive offset of their first byte.
    shards: BTreeMap<u64, Box<[u8]>>,
    /// Where the view ends: the source's end, or past it where a rebuilt
    /// shard fills in bytes cut off.
    len: u64,
}

impl<S> RepairedView<S> {
    /// Whether any shard was rebuilt.
    pub fn is_changed(&self) -> bool {
        !self.shards.is_empty()
    }

    /// The source the view reads.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: ReadAt> ReadAt for RepairedView<S> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&end| end <= self.len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the archive's end"))?;
        overlay(&self.inner, &self.shards, buf, offset, end)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        self.inner.will_read(ranges)
    }
    fn at_hand(&self, offset: u64, len: u64) -> bool {
        self.inner.at_hand(offset, len)
    }
}

/// Checks every run of `runs` against its parity's checksums (reading each
/// once, [`REPAIR_WINDOW`] bytes at a time) and rebuilds what parity can:
/// the view of `inner` with the rebuilt shards in place, and per run what
/// was found. Fails on parity that lies (a rebuilt shard that does not
/// match its checksum, parity of the wrong shape) or a read that fails;
/// damage parity cannot cover is reported, not an error.
pub fn repaired_view<S: ReadAt>(
    inner: S,
    runs: Vec<Protected<'_>>,
) -> io::Result<(RepairedView<S>, Vec<RunRepair>)> {
    let (shards, reports, len) = rebuild(&inner, runs)?;
    Ok((RepairedView { inner, shards, len }, reports))
}

/// Reads `offset .. end` of `inner` into `buf`, with the shards of
/// `shards` (by the offset of their first byte) in place of its bytes; a
/// shard may fill in bytes past `inner`'s end. The one owner of "read
/// with rebuilt shards in place", for both views.
pub(super) fn overlay(
    inner: &dyn ReadAt,
    shards: &BTreeMap<u64, Box<[u8]>>,
    buf: &mut [u8],
    offset: u64,
    end: u64,
) -> io::Result<()> {
    let readable = inner.len()?.clamp(offset, end);
    if readable > offset {
        inner.read_exact_at(&mut buf[..(readable - offset) as usize], offset)?;
    }
    if patch(shards, buf, offset, readable) < end {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the archive ends before this read"));
    }
    Ok(())
}

/// Copies the shards of `shards` that overlap `buf` (read at `offset`,
/// its bytes up to `covered` read) over it; returns where the bytes read
/// or copied end without a gap.
pub(super) fn patch(shards: &BTreeMap<u64, Box<[u8]>>, buf: &mut [u8], offset: u64, mut covered: u64) -> u64 {
    let end = offset + buf.len() as u64;
    // The first shard that may overlap starts at most SHARD_LEN before.
    let from = offset.saturating_sub(SHARD_LEN as u64 - 1);
    for (&at, shard) in shards.range(from..end) {
        let shard_end = at + shard.len() as u64;
        if shard_end <= offset {
            continue;
        }
        let (lo, hi) = (at.max(offset), shard_end.min(end));
        buf[(lo - offset) as usize..(hi - offset) as usize]
            .copy_from_slice(&shard[(lo - at) as usize..(hi - at) as usize]);
        if lo <= covered {
            covered = covered.max(hi);
        }
    }
    covered
}

/// An archive read through the recovery records found at its end
/// ([`locate_records`]): [`repaired_view`] over each record's protected
/// bytes, with the record's stored parity; `None` when it has none.
/// Records are refused, before any is used, when their archive id is not
/// the one of the header at byte 0 (when that header reads): a record
/// spliced in from another archive.
pub fn records_view<S: ReadAt>(inner: S) -> io::Result<Option<RecordsView<S>>> {
    let located = usable_records(&inner)?;
    if located.is_empty() {
        return Ok(None);
    }
    let (shards, runs, len) = {
        let mut parities: Vec<StoredParity<'_>> =
            located.iter().map(|r| StoredParity::new(&inner, r.record_at(), &r.footer)).collect();
        let runs = located
            .iter()
            .zip(parities.iter_mut())
            .map(|(r, parity)| Protected {
                start: r.footer.protected_start,
                layout: r.footer.layout,
                parity: parity as &mut dyn ParitySource,
            })
            .collect();
        rebuild(&inner, runs)?
    };
    Ok(Some(RecordsView { view: RepairedView { inner, shards, len }, records: located, runs }))
}

/// An archive through its recovery records ([`records_view`]).
pub struct RecordsView<S> {
    /// The archive's bytes, rebuilt shards in place.
    pub view: RepairedView<S>,
    /// The records, oldest first.
    pub records: Vec<LocatedRecord>,
    /// What the repair of each record's protected bytes found, in the
    /// records' order.
    pub runs: Vec<RunRepair>,
}

impl<S> RecordsView<S> {
    /// Whether any protected byte was damaged.
    pub fn is_damaged(&self) -> bool {
        self.runs.iter().any(RunRepair::is_damaged)
    }

    /// Whether every damaged shard was rebuilt.
    pub fn is_repaired(&self) -> bool {
        self.runs.iter().all(RunRepair::is_repaired)
    }
}

/// The records found at the end of `inner` ([`locate_records`]), refused,
/// before any is used, when one's archive id is not the one of the header
/// at byte 0 (when that header reads): a record spliced in from another
/// archive.
pub(super) fn usable_records(inner: &dyn ReadAt) -> io::Result<Vec<LocatedRecord>> {
    let located = locate_records(inner, inner.len()?)?;
    if let Some(id) = header_archive_id(inner).filter(|_| !located.is_empty()) {
        if let Some(other) = located.iter().find(|r| r.footer.owner.archive_id != id) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the recovery record ending at byte {} belongs to another archive (its archive id is not the header's): not used",
                    other.footer_at
                ),
            ));
        }
    }
    Ok(located)
}

/// The archive id of the header prefix at byte 0, when it decodes.
fn header_archive_id(source: &dyn ReadAt) -> Option<[u8; ARCHIVE_ID_LEN]> {
    let mut prefix = [0u8; HEADER_PREFIX_LEN];
    source.read_exact_at(&mut prefix, 0).ok()?;
    HeaderPrefix::decode(&prefix).ok().map(|h| h.archive_id)
}

/// Rebuilt shards by offset, what each run's repair found, and where the
/// view ends.
type Rebuilt = (BTreeMap<u64, Box<[u8]>>, Vec<RunRepair>, u64);

fn rebuild(inner: &dyn ReadAt, runs: Vec<Protected<'_>>) -> io::Result<Rebuilt> {
    let mut shards = BTreeMap::new();
    let mut reports = Vec::with_capacity(runs.len());
    let mut len = inner.len()?;
    for run in runs {
        let mut rebuilt: Vec<Range<u64>> = Vec::new();
        let found = repair(inner, run.start, &run.layout, REPAIR_WINDOW, run.parity, |index, bytes| {
            let at = run.start + index * SHARD_LEN as u64;
            rebuilt.push(at..at + bytes.len() as u64);
            shards.insert(at, bytes.into());
            Ok(())
        })?;
        let merged = merged(rebuilt);
        if let Some(last) = merged.last() {
            len = len.max(last.end);
        }
        reports.push(RunRepair { start: run.start, len: run.layout.len, found, rebuilt: merged });
    }
    Ok((shards, reports, len))
}

/// `ranges` in order, those that touch merged into one.
pub(super) fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if last.end >= range.start => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::recovery::tests::{protect, Stored};
    use crate::test_data::random;

    /// Two protected runs in one source, with bytes outside both (as a
    /// record and its footer lie outside what they protect).
    fn two_runs() -> (Vec<u8>, [(u64, Layout, Stored); 2]) {
        let source = random(3 << 20, 50);
        let (first, second) = (17u64..(1 << 20) + 1001, (1 << 20) + 5000..(3 << 20) - 300);
        let protect_at = |run: &Range<u64>| {
            let (layout, stored) = protect(&source[run.start as usize..run.end as usize], 5);
            (run.start, layout, stored)
        };
        let runs = [protect_at(&first), protect_at(&second)];
        (source, runs)
    }

    type View = RepairedView<Cursor<Vec<u8>>>;

    fn view_of(
        damaged: Vec<u8>,
        runs: &mut [(u64, Layout, Stored); 2],
    ) -> io::Result<(View, Vec<RunRepair>)> {
        let protected = runs
            .iter_mut()
            .map(|(start, layout, stored)| Protected { start: *start, layout: *layout, parity: stored })
            .collect();
        repaired_view(Cursor::new(damaged), protected)
    }

    fn read_all<S: ReadAt>(view: &S) -> Vec<u8> {
        let mut all = vec![0u8; view.len().unwrap() as usize];
        view.read_exact_at(&mut all, 0).unwrap();
        all
    }

    #[test]
    fn the_view_reads_the_bytes_written_before_the_damage() {
        let (source, mut runs) = two_runs();
        let mut damaged = source.clone();
        // A run across the first record's end (into unprotected bytes),
        // and scattered sectors in the second.
        let across = (1 << 20) - 20_000..(1 << 20) + 3000;
        damaged[across.clone()].fill(0x55);
        for at in [(1 << 20) + 9000, 2 << 20, (3 << 20) - 5000] {
            damaged[at..at + 4096].fill(0xAA);
        }
        let (view, reports) = view_of(damaged, &mut runs).unwrap();
        let all = read_all(&view);
        // The unprotected bytes stay as damaged; everything protected is back.
        let unprotected = (1 << 20) + 1001..(1 << 20) + 3000;
        assert!(all[unprotected.clone()].iter().all(|&b| b == 0x55));
        assert_eq!(all[..unprotected.start], source[..unprotected.start]);
        assert_eq!(all[unprotected.end..], source[unprotected.end..]);
        // Reads of any shape see the same bytes.
        for (at, len) in [(0u64, 1usize), (1 << 20, 4096), ((1 << 20) - 20_001, 7), ((2 << 20) - 1, 4098)] {
            let mut buf = vec![0u8; len];
            view.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, all[at as usize..at as usize + len]);
        }
        assert!(reports.iter().all(|r| r.is_damaged() && r.is_repaired()));
        assert_eq!(reports[0].rebuilt.len(), 1, "one merged range");
        assert_eq!(reports[0].rebuilt[0].end, (1 << 20) + 1001, "up to the run's end");
        assert!(reports[0].rebuilt[0].start <= across.start as u64);
        assert_eq!(reports[1].rebuilt.len(), 3, "each sector's two shards merged");
        assert_eq!(reports[1].found.rebuilt, 6, "each sector spans two shards");
    }

    #[test]
    fn an_undamaged_source_reads_through_unchanged() {
        let (source, mut runs) = two_runs();
        let (view, reports) = view_of(source.clone(), &mut runs).unwrap();
        assert!(!view.is_changed());
        assert!(reports.iter().all(|r| !r.is_damaged() && r.rebuilt.is_empty()));
        assert_eq!(read_all(&view), source);
    }

    #[test]
    fn bytes_cut_off_are_filled_in_up_to_the_run_s_end() {
        let (source, mut runs) = two_runs();
        let cut = (3 << 20) - 9000;
        let (view, reports) = view_of(source[..cut].to_vec(), &mut runs).unwrap();
        let end = runs[1].0 + runs[1].1.len;
        assert_eq!(view.len().unwrap(), end);
        assert_eq!(read_all(&view), source[..end as usize]);
        assert!(reports[1].is_repaired() && reports[1].is_damaged());
        let mut past = [0u8; 1];
        let eof = view.read_exact_at(&mut past, end).unwrap_err();
        assert_eq!(eof.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn damage_past_the_parity_is_reported_and_left_as_read() {
        let (source, mut runs) = two_runs();
        let mut damaged = source.clone();
        // 20 % of the second run: more than its 5 %.
        let wide = (2 << 20)..(2 << 20) + 400_000;
        damaged[wide.clone()].fill(0);
        let (view, reports) = view_of(damaged.clone(), &mut runs).unwrap();
        assert!(reports[0].is_repaired() && !reports[0].is_damaged());
        assert!(!reports[1].is_repaired());
        let lost = &reports[1].unrepairable()[0];
        assert!(lost.lost > lost.usable);
        // What could not be rebuilt reads as it is; nothing else changed.
        let all = read_all(&view);
        assert!(all[wide].iter().all(|&b| b == 0));
        assert_eq!(all[..2 << 20], source[..2 << 20]);
    }
}
