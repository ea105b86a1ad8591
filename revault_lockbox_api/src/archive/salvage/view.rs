//! From what the scan authenticated to what can be proven: each page's
//! place in the data stream, the entries runs merged (FORMAT.md §6.4),
//! and of those entries the ones whose content lies wholly in pages that
//! authenticate; the rest is listed as lost, one line each.

use std::collections::{BTreeMap, HashSet};

use super::scan::{session_name, Scan, ScannedPage};
use crate::archive::checks::Checks;
use crate::error::{EntryPath, Result};
use crate::format::{Entry, EntryKind, Record, SessionKind};

/// A page placed in the data stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub(super) number: u64,
    pub(super) start: u64,
    pub(super) page: ScannedPage,
}

impl Placed {
    pub(super) fn end(&self) -> u64 {
        self.start + u64::from(self.page.record.plain_len)
    }
}

/// What the scan proves.
pub(super) struct View {
    /// Entries in index order whose records and content authenticate.
    pub(super) entries: Vec<Entry>,
    /// For each of `entries`, where in the file the last unit it needs
    /// (its entries leaf, its content's last page) ends.
    pub(super) proof_ends: Vec<u64>,
    /// Pages whose place in the stream is known, in stream order.
    pub(super) placed: Vec<Placed>,
    /// What cannot be proven, one line each.
    pub(super) lost: Vec<String>,
    /// Entries lost, by path.
    pub(super) lost_entries: Vec<(EntryPath, String)>,
}

/// Builds the view of `scan`.
pub(super) fn prove(mut scan: Scan) -> Result<View> {
    let mut lost = std::mem::take(&mut scan.damage);
    let placed = place_pages(&mut scan, &mut lost);
    let (merged, runs) = merge_runs(&scan, &mut lost)?;
    let mut lost_entries = Vec::new();
    let mut linked = HashSet::new();
    let covered = |start: u64, end: u64| covers(&placed, start, end);
    let mut candidates = Vec::new();
    let mut proof_ends = Vec::new();
    for (entry, leaf_end) in merged {
        let whole = match (&entry.kind, entry.extent) {
            (EntryKind::File { .. }, Some(x)) => covered(x.offset, x.end()),
            (EntryKind::Hardlink { target, .. }, _) => linked.contains(target),
            _ => true,
        };
        if !whole {
            let why = match entry.kind {
                EntryKind::Hardlink { .. } => "its target was lost",
                _ => "some of its content lies in pages that were lost",
            };
            lost_entries.push((EntryPath(entry.path), why.to_string()));
            continue;
        }
        if entry.extent.is_some_and(|x| x.linked) {
            linked.insert(entry.path.clone());
        }
        let content_end = match (&entry.kind, entry.extent) {
            (EntryKind::File { .. }, Some(x)) if x.size > 0 => last_unit_end(&placed, x.end()),
            _ => 0,
        };
        proof_ends.push(leaf_end.max(content_end));
        candidates.push(entry);
    }
    // The walk's own checks over what is kept: order, nothing below a
    // file or link, contents ascending in each session, links.
    let offsets = session_offsets(&scan, &placed);
    // An empty file needs no page, and its offset may lie in a page the
    // damage took (its entries leaf was sealed while that page was still
    // filling): the bound on offsets is where the kept records point,
    // which for every other file is within the pages placed.
    let placed_end = placed.last().map_or(0, Placed::end);
    let stream_len = candidates.iter().filter_map(|e| e.extent).map(|x| x.end()).fold(placed_end, u64::max);
    let mut checks = Checks::new(&offsets, stream_len, runs > 1, true, 0);
    let entries = candidates.into_iter().map(|e| checks.entry(e)).collect::<Result<Vec<_>>>()?;
    unnamed_content(&scan, &placed, &entries, &mut lost);
    Ok(View { entries, proof_ends, placed, lost, lost_entries })
}

/// Where the unit of the page holding the stream byte before `end` ends.
fn last_unit_end(placed: &[Placed], end: u64) -> u64 {
    let p = &placed[placed.partition_point(|p| p.end() < end).min(placed.len() - 1)];
    p.page.record.offset + u64::from(p.page.record.unit_len())
}

/// Whether the pages of `placed` cover `start..end` without a gap.
pub(super) fn covers(placed: &[Placed], start: u64, end: u64) -> bool {
    if start == end {
        return true;
    }
    let mut i = placed.partition_point(|p| p.end() <= start);
    let mut at = start;
    while at < end {
        match placed.get(i) {
            Some(p) if p.start <= at => at = p.end(),
            _ => return false,
        }
        i += 1;
    }
    true
}

/// Each page's place in the data stream: from the pages leaves that
/// survive (authenticated records, which also say each page's hash), else
/// following on from the page before it.
fn place_pages(scan: &mut Scan, lost: &mut Vec<String>) -> Vec<Placed> {
    let mut starts: BTreeMap<u64, u64> = BTreeMap::new();
    for leaf in scan.sessions.iter().flat_map(|s| &s.pages_leaves) {
        let mut at = leaf.first_offset;
        for (i, record) in leaf.pages.iter().enumerate() {
            let number = leaf.first_page + i as u64;
            starts.insert(number, at);
            if scan.pages.get(&number).is_some_and(|p| p.record.hash != record.hash) {
                lost.push(format!("data page {number}: differs from its page record"));
                scan.pages.remove(&number);
            }
            at += u64::from(record.plain_len);
        }
    }
    let mut placed: Vec<Placed> = Vec::new();
    for (&number, &page) in &scan.pages {
        let follows = match number.checked_sub(1) {
            None => Some(0),
            Some(before) => placed.last().filter(|p| p.number == before).map(Placed::end),
        };
        if let Some(start) = starts.get(&number).copied().or(follows) {
            if placed.last().is_none_or(|p| p.end() <= start) {
                placed.push(Placed { number, start, page });
            }
        }
    }
    let unplaced = scan.pages.len() - placed.len();
    if unplaced > 0 {
        lost.push(format!(
            "{unplaced} data pages authenticate but their place in the data stream is unknown \
             (a page before them, and the page records that would place them, were lost)"
        ));
    }
    placed
}

/// The runs of the sessions found, merged newest first; also how many
/// runs took part. A committed merge or compaction session's run holds
/// the whole view, so the runs before it are left out.
fn merge_runs(scan: &Scan, lost: &mut Vec<String>) -> Result<(Vec<(Entry, u64)>, usize)> {
    let mut first = 0;
    for (s, session) in scan.sessions.iter().enumerate() {
        let kind = session.info.as_ref().map(|i| i.kind);
        if session.committed && matches!(kind, Some(SessionKind::Merge | SessionKind::Compaction)) {
            first = s;
        }
    }
    // Keyed so that byte order is the index order: `/` ranks below every
    // other byte of a valid path, and NUL never occurs in one.
    let key = |path: &[u8]| -> Vec<u8> { path.iter().map(|&b| if b == b'/' { 0 } else { b }).collect() };
    let mut view: BTreeMap<Vec<u8>, (Record, u64)> = BTreeMap::new();
    let mut runs = 0;
    for (s, session) in scan.sessions.iter().enumerate().skip(first) {
        note_lost_leaves(scan, s, lost);
        if session.leaves.is_empty() {
            continue;
        }
        runs += 1;
        let mut last: Option<Vec<u8>> = None;
        for (record, leaf_end) in
            session.leaves.values().flat_map(|(l, end)| l.iter().map(move |r| (r, *end)))
        {
            let k = key(record.path());
            if last.as_ref().is_some_and(|l| *l >= k) {
                return Err(crate::error::Error::malformed(
                    "index",
                    "paths not in strictly increasing order",
                ));
            }
            if record.hides_below() {
                let mut below = k.clone();
                below.push(0);
                let mut after = k.clone();
                after.push(1);
                let hidden: Vec<Vec<u8>> = view.range(below..after).map(|(k, _)| k.clone()).collect();
                for h in hidden {
                    view.remove(&h);
                }
            }
            view.insert(k.clone(), (record.clone(), leaf_end));
            last = Some(k);
        }
    }
    let entries = view.into_values().filter_map(|(r, end)| match r {
        Record::Put(e) => Some((e, end)),
        Record::Delete(_) => None,
    });
    Ok((entries.collect(), runs))
}

/// One line per entries leaf of session `s` the scan did not find between
/// those it found (named by its first path where a parent node survives),
/// and one for a session without a trailer.
fn note_lost_leaves(scan: &Scan, s: usize, lost: &mut Vec<String>) {
    let session = &scan.sessions[s];
    let name = session_name(scan, s);
    let known = session.leaves.keys().chain(session.leaf_keys.keys()).max().copied();
    for seq in (0..known.map_or(0, |k| k + 1)).filter(|seq| !session.leaves.contains_key(seq)) {
        let from = match session.leaf_keys.get(&seq) {
            Some(path) => format!(" (its entries from {} on)", EntryPath(path.clone())),
            None => String::new(),
        };
        lost.push(format!("{name}: entries leaf #{seq} was lost{from}"));
    }
    if !session.committed {
        // A later session's header was found: this one's trailer was there
        // and is damaged, not cut off.
        let why =
            if s + 1 < scan.sessions.len() { "its trailer is damaged" } else { "it was cut or interrupted" };
        lost.push(format!(
            "{name} (from byte {}) has no trailer that authenticates ({why}): \
             what it wrote after its last surviving unit is lost",
            session.offset
        ));
    }
}

/// Where each session's part of the data stream starts, as far as its
/// placed pages say; a session without one starts where the next does.
fn session_offsets(scan: &Scan, placed: &[Placed]) -> Vec<u64> {
    let end = placed.last().map_or(0, Placed::end);
    let mut offsets = vec![end; scan.sessions.len()];
    for p in placed.iter().rev() {
        offsets[p.page.session] = p.start;
    }
    for s in (0..offsets.len().saturating_sub(1)).rev() {
        offsets[s] = offsets[s].min(offsets[s + 1]);
    }
    if let Some(first) = offsets.first_mut() {
        *first = 0;
    }
    offsets
}

/// A line for content that authenticates but that no surviving record
/// names: the pages after the last file kept, when the entries leaf that
/// would name them was never written (a cut before a session's leaf).
fn unnamed_content(scan: &Scan, placed: &[Placed], entries: &[Entry], lost: &mut Vec<String>) {
    let named_end = entries.iter().filter_map(|e| e.extent).map(|x| x.end()).max().unwrap_or(0);
    let unnamed: Vec<&Placed> = placed.iter().filter(|p| p.start >= named_end).collect();
    if let (Some(first), Some(last)) = (unnamed.first(), unnamed.last()) {
        lost.push(format!(
            "data pages {}..={} ({} bytes of {}) authenticate, but no entries record that survives \
             names them: their files are lost",
            first.number,
            last.number,
            last.end() - first.start,
            session_name(scan, last.page.session),
        ));
    }
}
