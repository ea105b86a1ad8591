//! A lazily repaired view of an archive. Units read with
//! [`read_unit_at`](ReadAt::read_unit_at) (pages, index nodes, the root:
//! each has its own tag) pass through unchecked; only when a unit fails
//! its own check does the reader ask [`recheck`](ReadAt::recheck), which
//! checks the shards under it against their record's checksums and
//! rebuilds the group of each that fails (one pass over the group's
//! originals, at most [`MAX_GROUP_SHARDS`] × 4 KiB); the reader then reads
//! the unit again, the rebuilt shards in place. So an undamaged read costs
//! what it costs without records, and parity is never consulted for a
//! unit that passed its check. Other reads ([`read_exact_at`]: header,
//! trailers, footers) are small and check each shard they touch the first
//! time. Readers keep random access: `cat` of one file reads its index
//! path and its pages, never the whole archive ([`records_view`] checks
//! every shard before the first read, which `verify` and `repair` want).
//!
//! Memory: a bitmap of checked shards per record (1 bit per 4 KiB: 32 KiB
//! per GiB protected), the checksum lists read, in a cache of at most
//! [`SUMS_CACHE`] bytes, and the rebuilt shards (as [`RepairedView`]:
//! at most a record's recovery shards' worth).
//!
//! [`read_exact_at`]: ReadAt::read_exact_at
//! [`records_view`]: super::records_view
//! [`RepairedView`]: super::RepairedView
//! [`MAX_GROUP_SHARDS`]: super::MAX_GROUP_SHARDS

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

use super::overlay::{merged, patch, usable_records};
use super::repair::repair_groups;
use super::{
    shard_sum, sums_check, Layout, LocatedRecord, RecordLayout, Repaired, RunRepair, ShardSum, StoredParity,
    REPAIR_WINDOW, SHARD_LEN, SHARD_SUM_LEN,
};
use crate::storage::ReadAt;

/// Bytes of checksum lists a [`LazyView`] keeps (about 2,000 groups of
/// 1,024 shards: 8 GiB of protected bytes); past it the cache starts
/// again empty.
pub const SUMS_CACHE: usize = 16 << 20;

/// Checksum lists read at once: adjacent groups' lists lie next to each
/// other in the record's table, and a read's adjacent shards fall in
/// adjacent groups.
const LIST_RUN: u32 = 64;

/// `inner` read through the recovery records at its end, a unit's shards
/// checked when the unit fails its own check ([`lazy_records_view`]).
pub struct LazyView<S> {
    inner: S,
    records: Vec<LocatedRecord>,
    state: Mutex<State>,
}

/// What reading has found so far.
struct State {
    runs: Vec<RunState>,
    /// Original shards' checksums by (record, group), from a list whose
    /// check passed.
    sums: HashMap<(usize, u32), Vec<ShardSum>>,
    sums_bytes: usize,
    /// Rebuilt shards by the archive offset of their first byte.
    shards: BTreeMap<u64, Box<[u8]>>,
}

/// One record's progress.
struct RunState {
    /// A bit per shard: checked and whole.
    checked: Vec<u64>,
    /// Groups checked whole by a repair pass (rebuilt or not repairable).
    settled: HashSet<u32>,
    found: Repaired,
    rebuilt: Vec<Range<u64>>,
    /// Why the record is no longer used (its parity lies, its lists are
    /// damaged): its bytes are then read as they are.
    refused: Option<String>,
}

impl RunState {
    fn is_checked(&self, index: u64) -> bool {
        self.checked[(index / 64) as usize] & (1 << (index % 64)) != 0
    }

    fn set_checked(&mut self, index: u64) {
        self.checked[(index / 64) as usize] |= 1 << (index % 64);
    }
}

/// `inner` read through the recovery records found at its end
/// ([`locate_records`](super::locate_records)), checking shards only under
/// a unit that failed its own check, or when a plain read first touches
/// them (the module's doc); `None` when it has none. Refuses, as
/// [`records_view`](super::records_view) does, records whose archive id is
/// not the header's.
pub fn lazy_records_view<S: ReadAt>(inner: S) -> io::Result<Option<LazyView<S>>> {
    let records = usable_records(&inner)?;
    if records.is_empty() {
        return Ok(None);
    }
    let runs = records
        .iter()
        .map(|r| RunState {
            checked: vec![0; r.footer.layout.shards().div_ceil(64) as usize],
            settled: HashSet::new(),
            found: Repaired::default(),
            rebuilt: Vec::new(),
            refused: None,
        })
        .collect();
    let state = State { runs, sums: HashMap::new(), sums_bytes: 0, shards: BTreeMap::new() };
    Ok(Some(LazyView { inner, records, state: Mutex::new(state) }))
}

impl<S> LazyView<S> {
    /// What reading found so far, per record (oldest first): damaged
    /// shards, those rebuilt, the groups parity could not repair.
    pub fn runs(&self) -> Vec<RunRepair> {
        let state = self.lock();
        self.records
            .iter()
            .zip(&state.runs)
            .map(|(r, run)| RunRepair {
                start: r.footer.protected_start,
                len: r.footer.layout.len,
                found: run.found.clone(),
                rebuilt: merged(run.rebuilt.clone()),
            })
            .collect()
    }

    /// The records no longer used, each with why (parity that lies,
    /// checksum lists damaged in both copies), oldest first.
    pub fn refused(&self) -> Vec<String> {
        self.lock().runs.iter().filter_map(|r| r.refused.clone()).collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere leaves the state whole: each change is one step.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: ReadAt> LazyView<S> {
    /// Checks the shards of record `r` that `buf` (read at `offset`)
    /// touches and were not checked yet; rebuilds the groups of those that
    /// fail.
    fn check(&self, r: usize, buf: &[u8], offset: u64) -> io::Result<()> {
        let record = &self.records[r];
        let (start, layout) = (record.footer.protected_start, record.footer.layout);
        let end = offset + buf.len() as u64;
        let (lo, hi) = (offset.max(start) - start, end.min(start + layout.len) - start);
        let shards = lo / SHARD_LEN as u64..hi.div_ceil(SHARD_LEN as u64);
        let wanted: Vec<(u64, ShardSum)> = {
            let mut state = self.lock();
            let run = &state.runs[r];
            if run.refused.is_some() {
                return Ok(());
            }
            let unchecked: Vec<u64> =
                shards.filter(|&i| !run.is_checked(i) && !run.settled.contains(&layout.place(i).0)).collect();
            if unchecked.is_empty() {
                return Ok(());
            }
            match self.sums_for(&mut state, r, &unchecked) {
                Ok(wanted) => wanted,
                Err(e) => {
                    state.runs[r].refused = Some(e.to_string());
                    return Ok(());
                }
            }
        };
        // Hashed outside the lock: readers on other threads go on.
        let mut whole = Vec::with_capacity(wanted.len());
        let mut failed = Vec::new();
        let mut scratch = vec![0u8; SHARD_LEN];
        for (index, sum) in wanted {
            let at = start + index * SHARD_LEN as u64;
            let len = (layout.len - index * SHARD_LEN as u64).min(SHARD_LEN as u64) as usize;
            let bytes = if len == SHARD_LEN && at >= offset && at + SHARD_LEN as u64 <= end {
                &buf[(at - offset) as usize..][..SHARD_LEN]
            } else {
                // A shard the read only partly covers, or the run's last
                // (padded with zeros): read on its own.
                scratch.fill(0);
                match self.inner.read_exact_at(&mut scratch[..len], at) {
                    Ok(()) => &scratch[..],
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        failed.push(index);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            };
            match shard_sum(bytes) == sum {
                true => whole.push(index),
                false => failed.push(index),
            }
        }
        let mut state = self.lock();
        for index in whole {
            state.runs[r].set_checked(index);
        }
        let mut groups: Vec<u32> = failed.iter().map(|&i| layout.place(i).0).collect();
        groups.sort_unstable();
        groups.dedup();
        for group in groups {
            if state.runs[r].settled.contains(&group) || state.runs[r].refused.is_some() {
                continue;
            }
            self.rebuild_group(&mut state, r, group);
        }
        Ok(())
    }

    /// Each of `unchecked` with its checksum, the lists of their groups
    /// read as needed (a run of adjacent groups' lists in one read).
    fn sums_for(&self, state: &mut State, r: usize, unchecked: &[u64]) -> io::Result<Vec<(u64, ShardSum)>> {
        let layout = self.records[r].footer.layout;
        let mut missing: Vec<u32> = unchecked
            .iter()
            .map(|&i| layout.place(i).0)
            .filter(|&g| !state.sums.contains_key(&(r, g)))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let mut i = 0;
        while i < missing.len() {
            let first = missing[i];
            let mut count = 1;
            while i + (count as usize) < missing.len()
                && missing[i + count as usize] == first + count
                && count < LIST_RUN
            {
                count += 1;
            }
            for (g, sums) in self.read_lists(r, first, count)? {
                let bytes = sums.len() * SHARD_SUM_LEN;
                if state.sums_bytes + bytes > SUMS_CACHE {
                    state.sums.clear();
                    state.sums_bytes = 0;
                }
                state.sums_bytes += bytes;
                state.sums.insert((r, g), sums);
            }
            i += count as usize;
        }
        unchecked
            .iter()
            .map(|&index| {
                let (g, p) = layout.place(index);
                // Lists read in this call may have pushed an earlier one
                // out of a full cache: read it again.
                let sums = match state.sums.get(&(r, g)) {
                    Some(sums) => sums[p as usize],
                    None => self.read_lists(r, g, 1)?[0].1[p as usize],
                };
                Ok((index, sums))
            })
            .collect()
    }

    /// The original shards' checksums of groups `first .. first + count`
    /// of record `r`: from the table at the record's start, read in one go;
    /// a group whose list there fails its check from both copies as
    /// [`StoredParity`] reads them.
    fn read_lists(&self, r: usize, first: u32, count: u32) -> io::Result<Vec<(u32, Vec<ShardSum>)>> {
        let record = &self.records[r];
        let shape = RecordLayout { layout: record.footer.layout };
        let (len, originals) = (shape.sums_len() as usize, shape.layout.originals as usize);
        let mut table = vec![0u8; len * count as usize];
        let read = self.inner.read_exact_at(&mut table, record.record_at() + shape.first_sums(first));
        let parity = StoredParity::new(&self.inner, record.record_at(), &record.footer);
        (first..first + count)
            .zip(table.chunks(len))
            .map(|(g, list)| {
                let (sums, check) = list.split_at(len - 8);
                let mut sums: Vec<ShardSum> = match read.is_ok() && sums_check(g, sums) == check {
                    true => sums.chunks(SHARD_SUM_LEN).map(|s| s.try_into().expect("a sum")).collect(),
                    false => parity.sums(g)?,
                };
                sums.truncate(originals);
                Ok((g, sums))
            })
            .collect()
    }

    /// Rebuilds group `group` of record `r` from the record: every
    /// original of the group checked, the damaged ones rebuilt and kept.
    fn rebuild_group(&self, state: &mut State, r: usize, group: u32) {
        let record = &self.records[r];
        let (start, layout): (u64, Layout) = (record.footer.protected_start, record.footer.layout);
        let mut parity = StoredParity::new(&self.inner, record.record_at(), &record.footer);
        let mut rebuilt = Vec::new();
        let found = repair_groups(
            &self.inner,
            start,
            &layout,
            group..group + 1,
            REPAIR_WINDOW,
            &mut parity,
            |index, bytes| {
                rebuilt.push((start + index * SHARD_LEN as u64, Box::<[u8]>::from(bytes)));
                Ok(())
            },
        );
        let run = &mut state.runs[r];
        match found {
            Ok(found) => {
                run.settled.insert(group);
                run.found.damaged += found.damaged;
                run.found.rebuilt += found.rebuilt;
                run.found.unrepairable.extend(found.unrepairable);
                for (at, shard) in rebuilt {
                    run.rebuilt.push(at..at + shard.len() as u64);
                    state.shards.insert(at, shard);
                }
            }
            Err(e) => run.refused = Some(e.to_string()),
        }
    }
}

impl<S: ReadAt> ReadAt for LazyView<S> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        let end = offset + buf.len() as u64;
        let mut touched = false;
        for (r, record) in self.records.iter().enumerate() {
            let start = record.footer.protected_start;
            if start < end && offset < start + record.footer.layout.len {
                self.check(r, buf, offset)?;
                touched = true;
            }
        }
        if touched {
            patch(&self.lock().shards, buf, offset, end);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        self.inner.will_read(ranges)
    }
    fn at_hand(&self, offset: u64, len: u64) -> bool {
        self.inner.at_hand(offset, len)
    }

    /// The bytes as they are, with the shards rebuilt so far in place:
    /// the caller's check of the unit decides whether to [`recheck`].
    ///
    /// [`recheck`]: ReadAt::recheck
    fn read_unit_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        let state = self.lock();
        if !state.shards.is_empty() {
            patch(&state.shards, buf, offset, offset + buf.len() as u64);
        }
        Ok(())
    }

    /// Checks the shards under `offset..offset + len` not checked yet and
    /// rebuilds the groups of those that fail; `true` when rebuilt shards
    /// now lie under the range (a read again gives other bytes, unless
    /// they were in place already: one read more, on a failure only).
    fn recheck(&self, offset: u64, len: u64) -> io::Result<bool> {
        let end = offset.saturating_add(len);
        let mut buf = Vec::new();
        for (r, record) in self.records.iter().enumerate() {
            let start = record.footer.protected_start;
            let (lo, hi) = (offset.max(start), end.min(start + record.footer.layout.len));
            if lo >= hi {
                continue;
            }
            buf.resize((hi - lo) as usize, 0);
            self.inner.read_exact_at(&mut buf, lo)?;
            self.check(r, &buf, lo)?;
        }
        let state = self.lock();
        let from = offset.saturating_sub(SHARD_LEN as u64 - 1);
        Ok(state.shards.range(from..end).any(|(&at, shard)| at + shard.len() as u64 > offset))
    }
}
