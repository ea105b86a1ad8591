//! The range cache in front of ranged GETs: which byte ranges to fetch for
//! a read, and which to read ahead. It owns no I/O, so its decisions are
//! tested alone.
//!
//! The reader asks for exact ranges, many of them small (a header, a key
//! slot table, an index node of a few KiB) and some sequential (the data
//! pages of an extraction, in order). So:
//! - a read that misses fetches at least [`MIN_FETCH`] bytes, which merges
//!   the small neighbouring reads that follow into that one GET;
//! - up to [`STREAMS`] sequential streams are followed (an extraction reads
//!   data pages from the front and page-table leaves from the back); a
//!   read continues one if it starts at most a chunk past its position
//!   (a leaf further on, inside the window, starts its own); each read
//!   that continues one doubles its read-ahead window, up to
//!   `requests in flight × READ_AHEAD_CHUNK`, fetched in chunks so several
//!   GETs run at once, as a kernel's read-ahead does for a disk; once the
//!   window holds a chunk it is topped up by whole chunks only, one GET per
//!   chunk read rather than one per page;
//! - ranges the reader says it will read soon (the leaves below an index
//!   node: [`RangeCache::hint`]) are fetched lowest offset first, a few
//!   before read-ahead takes the free GETs, neighbours within [`MIN_FETCH`] of
//!   each other in one GET, so a walk over leaves scattered through the
//!   archive keeps several GETs in flight too (their reads are no
//!   stream's: the data pages between the leaves are not read ahead);
//!   up to [`HINT_BUDGET`] bytes
//!   of them are held until read, whether fetched for the hint or already
//!   cached (an extraction walks the entries leaves twice: the second walk
//!   finds them still there);
//! - cached bytes are bounded ([`RangeCache::capacity`]); the least recently
//!   used chunks that have arrived are dropped first, those fetched ahead
//!   and not read yet, or holding a hinted range not read yet, last.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

mod slot;
#[cfg(test)]
mod tests;

pub(super) use slot::Slot;

/// Smallest GET for a read that misses: the header and the 64 KiB key-slot
/// table arrive in one.
pub(super) const MIN_FETCH: u64 = 128 << 10;
/// Size of each read-ahead GET.
pub(super) const READ_AHEAD_CHUNK: u64 = 4 << 20;
/// Sequential streams followed at once.
const STREAMS: usize = 4;
/// Hinted ranges remembered; the furthest are dropped first.
const MAX_HINTS: usize = 8192;
/// Bytes of hinted ranges fetched (or found cached) and held until read.
pub(super) const HINT_BUDGET: u64 = 16 << 20;
/// Bytes an object's cache keeps of what was read once reads moved on to
/// another object ([`RangeCache::trim`]): its tail and header, a few
/// index nodes.
const TRIMMED: u64 = 1 << 20;
/// Hinted GETs that may start before read-ahead takes the free ones.
const HINT_GETS: usize = 2;

struct Chunk {
    end: u64,
    slot: Arc<Slot>,
    last_used: u64,
    /// Fetched ahead (read-ahead or a hint) and not read yet.
    unread: bool,
}

/// A sequential reader's position and how far ahead of it fetches go.
#[derive(Clone, Copy)]
struct Stream {
    /// Reads that continued the stream; read-ahead starts at the second,
    /// so that a header followed by its slot table is not taken for a scan.
    hits: u32,
    next: u64,
    /// The end of what its read-ahead fetched. A chunk found cached,
    /// fetched for another read, does not count: the opening's GET of an
    /// object's first 128 KiB would otherwise make every read within it,
    /// a lookup's leaf there, continue the stream of the header's reads
    /// and read ahead past it.
    ahead: u64,
    window: u64,
    last_used: u64,
}

/// Why a range is fetched (the trace names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Why {
    /// A read needs it now.
    Read,
    /// A sequential stream's read-ahead.
    Ahead,
    /// The reader said it will read it soon.
    Hint,
}

impl Why {
    pub(super) fn letter(self) -> char {
        match self {
            Why::Read => 'r',
            Why::Ahead => 'a',
            Why::Hint => 'h',
        }
    }
}

/// Where a read's bytes come from, and what to fetch for it.
#[derive(Default)]
pub(super) struct Plan {
    /// In order: a chunk's slot, the chunk's first offset, and the part of
    /// the read it holds.
    pub(super) pieces: Vec<(Arc<Slot>, u64, Range<u64>)>,
    /// New ranges to GET, each with the slot its bytes go to and why.
    pub(super) fetches: Vec<(Range<u64>, Arc<Slot>, Why)>,
    /// The read starts where a hinted range did.
    pub(super) hinted: bool,
}

/// The chunks fetched or being fetched, and the streams being followed.
pub(super) struct RangeCache {
    chunks: BTreeMap<u64, Chunk>,
    streams: Vec<Stream>,
    /// Hinted ranges not fetched yet, by start: their ends.
    hints: BTreeMap<u64, u64>,
    /// Hinted ranges fetched or found cached, held until read (one never
    /// read, as when a walk stops early, keeps its share of the budget).
    held: BTreeMap<u64, u64>,
    /// Their bytes.
    held_bytes: u64,
    /// Hinted GETs not answered yet.
    hints_in_flight: Vec<Arc<Slot>>,
    tick: u64,
    len: u64,
    max_window: u64,
    cached: u64,
}

impl RangeCache {
    /// A cache for an object of `len` bytes with up to `in_flight` GETs
    /// reading ahead.
    pub(super) fn new(len: u64, in_flight: usize) -> RangeCache {
        RangeCache {
            chunks: BTreeMap::new(),
            streams: Vec::new(),
            hints: BTreeMap::new(),
            held: BTreeMap::new(),
            held_bytes: 0,
            hints_in_flight: Vec::new(),
            tick: 0,
            len,
            max_window: READ_AHEAD_CHUNK * in_flight.max(1) as u64,
            cached: 0,
        }
    }

    /// Bytes kept at most (a chunk being fetched is never dropped): two
    /// full read-ahead windows and the hinted ranges held.
    pub(super) fn capacity(&self) -> u64 {
        2 * self.max_window + HINT_BUDGET
    }

    /// Adds bytes already fetched (the tail read when the object opens).
    pub(super) fn insert(&mut self, start: u64, bytes: Bytes) {
        let slot = Arc::new(Slot::default());
        let end = start + bytes.len() as u64;
        slot.fill(Ok(bytes));
        self.tick += 1;
        self.cached += end - start;
        self.chunks.insert(start, Chunk { end, slot, last_used: self.tick, unread: false });
    }

    /// Whether every byte of `range` has arrived.
    pub(super) fn holds(&self, range: Range<u64>) -> bool {
        let mut pos = range.start;
        while pos < range.end {
            match self.chunks.range(..=pos).next_back() {
                Some((_, chunk)) if chunk.end > pos && chunk.slot.state() == Some(true) => pos = chunk.end,
                _ => return false,
            }
        }
        true
    }

    /// Forgets a chunk whose fetch failed, so that a later read asks again.
    pub(super) fn forget(&mut self, start: u64) {
        if let Some(chunk) = self.chunks.remove(&start) {
            self.cached -= chunk.end - start;
        }
    }

    /// Plans the read of `range` (within the object). `room`: how many
    /// more GETs may start to read ahead.
    pub(super) fn plan(&mut self, range: Range<u64>, room: usize) -> Plan {
        self.tick += 1;
        let mut plan = Plan { hinted: self.hint_read(range.start), ..Plan::default() };
        let mut pos = range.start;
        while pos < range.end {
            if let Some((&start, chunk)) = self.chunks.range_mut(..=pos).next_back() {
                if chunk.end > pos {
                    chunk.last_used = self.tick;
                    chunk.unread = false;
                    let to = chunk.end.min(range.end);
                    plan.pieces.push((Arc::clone(&chunk.slot), start, pos..to));
                    pos = to;
                    continue;
                }
            }
            let next_start = self.chunks.range(pos..).next().map_or(self.len, |(&s, _)| s);
            let end = next_start.min(self.len).min(range.end.max(pos + MIN_FETCH));
            let slot = self.add_chunk(pos..end, false);
            let to = end.min(range.end);
            plan.pieces.push((Arc::clone(&slot), pos, pos..to));
            plan.fetches.push((pos..end, slot, Why::Read));
            pos = to;
        }
        // A few hinted GETs first (a walk waits for its next leaf, while
        // read-ahead has a window of chunks in flight already), then
        // read-ahead, then hinted GETs in the room it leaves.
        self.hints_in_flight.retain(|slot| slot.state().is_none());
        let first = room.min(HINT_GETS.saturating_sub(self.hints_in_flight.len()));
        let mut started = self.start_hinted(first, &mut plan);
        // A walk's leaves lie a few pages apart: taken for a stream, they
        // would have read-ahead fetch the data pages between them.
        if !plan.hinted {
            started += self.follow(range, room - started, &mut plan);
        }
        self.start_hinted(room - started, &mut plan);
        self.evict();
        plan
    }

    /// Forgets the hint of a range starting at `start`, now read; whether
    /// there was one.
    fn hint_read(&mut self, start: u64) -> bool {
        if let Some(end) = self.held.remove(&start) {
            self.held_bytes -= end - start;
            return true;
        }
        self.hints.remove(&start).is_some()
    }

    /// The first byte of `range` not cached or being fetched.
    fn first_missing(&self, range: Range<u64>) -> Option<u64> {
        let mut pos = range.start;
        while let Some((_, c)) = self.chunks.range(..=pos).next_back().filter(|(_, c)| c.end > pos) {
            pos = c.end;
            if pos >= range.end {
                return None;
            }
        }
        Some(pos)
    }

    /// Remembers ranges that will be read soon; [`plan`](Self::plan)
    /// starts their GETs as room allows. Ranges past the end are ignored.
    pub(super) fn hint(&mut self, ranges: impl IntoIterator<Item = Range<u64>>) {
        for r in ranges {
            if r.start < r.end && r.end <= self.len && !self.held.contains_key(&r.start) {
                self.hints.insert(r.start, r.end);
            }
        }
        while self.hints.len() > MAX_HINTS {
            self.hints.pop_last();
        }
    }

    /// Holds hinted ranges, lowest first, while [`HINT_BUDGET`] allows:
    /// those cached already stay; up to `room` GETs fetch the others, each
    /// with the hinted ranges that follow within [`MIN_FETCH`]. The number
    /// of GETs started.
    fn start_hinted(&mut self, room: usize, plan: &mut Plan) -> usize {
        let mut started = 0;
        while self.held_bytes < HINT_BUDGET {
            let Some((&start, &end)) = self.hints.first_key_value() else { break };
            let Some(from) = self.first_missing(start..end) else {
                self.hold(start, end);
                continue;
            };
            if started == room {
                break;
            }
            // Up to the next cached chunk: a range only partly cached reads
            // the rest itself.
            let limit = self.chunks.range(from..).next().map_or(self.len, |(&s, _)| s);
            self.hold(start, end);
            let mut to = end.min(limit);
            while let Some((&next, &next_end)) = self.hints.first_key_value() {
                if next > to + MIN_FETCH || next_end > limit || next_end - from > READ_AHEAD_CHUNK {
                    break;
                }
                self.hold(next, next_end);
                to = to.max(next_end);
            }
            let slot = self.add_chunk(from..to, true);
            self.hints_in_flight.push(Arc::clone(&slot));
            plan.fetches.push((from..to, slot, Why::Hint));
            started += 1;
        }
        started
    }

    /// Moves a hint to those held until read.
    fn hold(&mut self, start: u64, end: u64) {
        self.hints.remove(&start);
        self.held.insert(start, end);
        self.held_bytes += end - start;
    }

    fn add_chunk(&mut self, range: Range<u64>, unread: bool) -> Arc<Slot> {
        let slot = Arc::new(Slot::default());
        self.cached += range.end - range.start;
        let chunk = Chunk { end: range.end, slot: Arc::clone(&slot), last_used: self.tick, unread };
        self.chunks.insert(range.start, chunk);
        slot
    }

    /// Updates the stream `range` continues (or starts one) and plans its
    /// read-ahead, up to `room` GETs; the number it started.
    fn follow(&mut self, range: Range<u64>, room: usize, plan: &mut Plan) -> usize {
        let len = range.end - range.start;
        // A read continues a stream if it starts near its position: at most
        // one chunk ahead (a walk skipping a few pages). An index leaf read
        // further ahead, inside the read-ahead window, starts a stream of
        // its own rather than moving the data's stream past the pages the
        // walk reads next (whose reads would then each start again).
        // Of several, the stream whose position is nearest.
        let continues = self
            .streams
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                range.start >= s.next.saturating_sub(MIN_FETCH)
                    && range.start <= s.ahead.max(s.next).min(s.next + READ_AHEAD_CHUNK)
            })
            .min_by_key(|(_, s)| range.start.abs_diff(s.next))
            .map(|(i, _)| i);
        let Some(i) = continues else {
            let stream =
                Stream { hits: 0, next: range.end, ahead: range.end, window: 0, last_used: self.tick };
            if self.streams.len() < STREAMS {
                self.streams.push(stream);
            } else if let Some(oldest) = self.streams.iter_mut().min_by_key(|s| s.last_used) {
                *oldest = stream;
            }
            return 0;
        };
        let mut s = self.streams[i];
        s.hits += 1;
        s.next = s.next.max(range.end);
        s.last_used = self.tick;
        if s.hits < 2 {
            self.streams[i] = s;
            return 0;
        }
        s.window = (2 * s.window).max(2 * len).min(self.max_window);
        let target = (s.next + s.window).min(self.len);
        // From the stream's position, not from where read-ahead last
        // stopped: a chunk dropped before it was read is fetched again.
        let mut pos = s.next;
        let mut started = 0;
        let mut fetched_to = s.ahead;
        while pos < target && started < room {
            if let Some((_, chunk)) = self.chunks.range(..=pos).next_back().filter(|(_, c)| c.end > pos) {
                pos = chunk.end;
                continue;
            }
            let next_start = self.chunks.range(pos..).next().map_or(self.len, |(&s, _)| s);
            let end = (pos + READ_AHEAD_CHUNK).min(self.len).min(next_start);
            // Once the window holds a whole chunk, GETs are whole chunks (or
            // end where the object or a cached chunk does): topping the
            // window up by each read's length would send one small GET per
            // page, and a store's cost is per GET as much as per byte.
            if end > target && s.window >= READ_AHEAD_CHUNK {
                break;
            }
            let end = end.min(target);
            let slot = self.add_chunk(pos..end, true);
            plan.fetches.push((pos..end, slot, Why::Ahead));
            started += 1;
            pos = end;
            fetched_to = end;
        }
        s.ahead = fetched_to;
        self.streams[i] = s;
        started
    }

    /// Drops the least recently used arrived chunks while over capacity;
    /// this read's chunks were just used, so they stay. Chunks fetched
    /// ahead and not read yet, and those holding a hinted range not read
    /// yet, go last: by use they look old (fetched a window ago, or read by
    /// an earlier walk), but they are the next wanted.
    fn evict(&mut self) {
        while self.cached > self.capacity() {
            let wanted = |start: u64, c: &Chunk| c.unread || self.held.range(start..c.end).next().is_some();
            let victim = self
                .chunks
                .iter()
                .filter(|(_, c)| c.last_used < self.tick && c.slot.state().is_some())
                .min_by_key(|&(&start, c)| (wanted(start, c), c.last_used))
                .map(|(&start, _)| start);
            let Some(start) = victim else { break };
            self.forget(start);
        }
    }

    /// Drops the least recently used chunks that have arrived and were
    /// read, unless they hold a hinted range not read yet, until at most
    /// [`TRIMMED`] bytes are cached: what an object of a joined archive
    /// keeps once reads moved on to another object (an extraction reads
    /// the objects' data pages one object after the other, and each
    /// object's cache would otherwise keep up to its capacity for the whole
    /// run), its tail and header among them, which reads come back to.
    pub(super) fn trim(&mut self) {
        while self.cached > TRIMMED {
            let victim = self
                .chunks
                .iter()
                .filter(|&(&start, c)| {
                    c.slot.state().is_some() && !c.unread && self.held.range(start..c.end).next().is_none()
                })
                .min_by_key(|(_, c)| c.last_used)
                .map(|(&start, _)| start);
            let Some(start) = victim else { break };
            self.forget(start);
        }
    }

    /// Bytes held or being fetched.
    #[cfg(test)]
    fn cached(&self) -> u64 {
        self.cached
    }
}
