//! The streaming chunker: a file's bytes in slices of any size in, its
//! chunks out, cut where the keyed FastCDC 2020 rule cuts the whole file.
//!
//! fastcdc's `cut_gear` scans one contiguous window from a chunk's `min`
//! and cannot be handed a hash to resume from. What makes resuming exact
//! anyway: the cut test at byte `p` reads only bits 0..48 of the gear hash
//! (every mask is below 2^48), and those bits depend only on the 48 bytes
//! ending at `p`, since each byte's term is shifted one bit further per
//! byte and carries run upwards. So a scan may restart at any byte with 48
//! or more bytes of warm-up before it, which `cut_gear` is told to test
//! with the mask `u64::MAX` (a match there needs a hash whose tested bits
//! are all 0, and is retried from another start). A chunk that spans
//! slices therefore costs a stitch of at most 130 bytes (at most 65 of the
//! chunk's last 128, kept, and at most the first 65 of the next slice),
//! never a copy of the chunk; each byte is tested once, and a restart
//! hashes at most 64 bytes again.

use fastcdc::v2020::cut_gear;

use super::ChunkParams;
use crate::crypto::ChunkKeys;

/// Warm-up before a restarted scan: decisions read 48 bits ...
const WARM_UP: usize = 64;
/// ... so the start may move up to 16 bytes later when a warm-up byte
/// matched by chance.
const WARM_UP_LEAST: usize = 48;
/// Bytes of the current chunk kept for a warm-up across slices: at least
/// `WARM_UP` + 1 (the frontier may lie one byte before the slice).
const HISTORY: usize = 128;
/// Room for a stitched window (at most 130 bytes are used: the warm-up and
/// one byte from each side); sized to the whole history for simplicity.
const STITCH: usize = HISTORY + WARM_UP + 2;

/// Where a [`Chunker`] sends a file's bytes and chunk ends, in order: the
/// bytes of a chunk (in one or more calls to [`bytes`](Self::bytes)), then
/// its [`end`](Self::end), then the next chunk's bytes.
pub trait ChunkSink {
    /// The next bytes of the current chunk.
    fn bytes(&mut self, bytes: &[u8]);
    /// The current chunk ends before file offset `end`.
    fn end(&mut self, end: u64);
}

/// Cuts one file's content into chunks as it streams by.
///
/// Feed it the file in slices of any size with [`feed`](Self::feed), then
/// call [`finish`](Self::finish): the chunks are the same whatever the
/// slicing. A file shorter than the smallest chunk is one chunk; an empty
/// file has none. The writer cuts every large file with it (format v4's
/// deduplication, docs/DEDUP.md).
pub struct Chunker<'k> {
    keys: &'k ChunkKeys,
    params: ChunkParams,
    masks: (u64, u64),
    /// File offset of the current chunk's first byte.
    chunk_start: u64,
    /// Bytes of the current chunk seen so far.
    seen: usize,
    /// Bytes of the current chunk sent to the sink: all of `seen` but the
    /// last byte when `seen` is odd and past `min` (its cut test needs the
    /// byte after it).
    sent: usize,
    /// Cut tests run (all negative) at chunk positions `min..frontier`;
    /// even, and `min` before any ran.
    frontier: usize,
    /// The last `history_len` bytes of the current chunk.
    history: [u8; HISTORY],
    history_len: usize,
}

impl<'k> Chunker<'k> {
    /// A chunker for one file, cutting with `keys`' gear table to `params`.
    pub fn new(keys: &'k ChunkKeys, params: ChunkParams) -> Chunker<'k> {
        Chunker {
            keys,
            params,
            masks: params.masks(),
            chunk_start: 0,
            seen: 0,
            sent: 0,
            frontier: params.min(),
            history: [0; HISTORY],
            history_len: 0,
        }
    }

    /// Takes the next `data` of the file; sends `sink` every byte known to
    /// belong to a chunk and the ends of the chunks found.
    pub fn feed(&mut self, mut data: &[u8], sink: &mut dyn ChunkSink) {
        let (min, max) = (self.params.min(), self.params.max());
        while !data.is_empty() {
            let avail = self.seen + data.len();
            let to = avail.min(max) & !1;
            match self.find_cut(data, to) {
                Some(cut) => data = self.cut_at(cut, data, sink),
                None if to == max => data = self.cut_at(max, data, sink),
                None => {
                    let certain = if avail <= min { avail } else { to };
                    self.send(&data[..certain - self.seen], certain, sink);
                    self.remember(data);
                    self.seen = avail;
                    self.frontier = self.frontier.max(to);
                    return;
                }
            }
        }
    }

    /// Ends the file: sends the rest as its last chunk.
    pub fn finish(mut self, sink: &mut dyn ChunkSink) {
        if self.seen > 0 {
            let seen = self.seen;
            self.send(&[], seen, sink);
            self.end_chunk(seen, sink);
        }
    }

    /// The first cut at chunk positions `frontier..to`, `data` following
    /// the `seen` bytes of the chunk.
    fn find_cut(&self, data: &[u8], to: usize) -> Option<usize> {
        let mut from = self.frontier;
        if from >= to {
            return None;
        }
        let start = from.saturating_sub(WARM_UP).max(self.params.min());
        if start < self.seen {
            // The warm-up reaches back before `data`: stitch the history
            // and the first bytes of `data` for the tests that need it.
            let stitch_to = to.min((self.seen + WARM_UP + 1) & !1);
            let kept = self.seen - start;
            let mut stitch = [0u8; STITCH];
            stitch[..kept].copy_from_slice(&self.history[self.history_len - kept..self.history_len]);
            let taken = stitch_to - self.seen;
            stitch[kept..kept + taken].copy_from_slice(&data[..taken]);
            if let Some(cut) = self.probe(&stitch[..kept + taken], start, from, stitch_to) {
                return Some(cut);
            }
            from = stitch_to;
        }
        self.probe(data, self.seen, from, to)
    }

    /// The first cut at chunk positions `from..to` (even), `bytes[0]` being
    /// chunk position `q` and `bytes` reaching at least to `to`.
    fn probe(&self, bytes: &[u8], q: usize, mut from: usize, to: usize) -> Option<usize> {
        let (avg, (mask_s, mask_l)) = (self.params.avg(), self.masks);
        while from < to {
            // One mask a scan: the strict one before `avg`, then the relaxed.
            let (until, mask) = if from < avg { (avg.min(to), mask_s) } else { (to, mask_l) };
            if let Some(cut) = self.scan(bytes, q, from, until, mask) {
                return Some(cut);
            }
            from = until;
        }
        None
    }

    /// `cut_gear` over positions `from..to` with `mask`, after a warm-up
    /// tested with a mask no real hash is expected to match.
    fn scan(&self, bytes: &[u8], q: usize, from: usize, to: usize, mask: u64) -> Option<usize> {
        for warm_up in (WARM_UP_LEAST..=WARM_UP).rev().step_by(2) {
            // From `min` the hash is the whole file's; later, it agrees on
            // the 48 bits tested once `warm_up` bytes went in.
            let start = from.saturating_sub(warm_up).max(self.params.min());
            let window = &bytes[start - q..to - q];
            let (_hash, at) = cut_gear(
                window,
                0,
                from - start,
                to - start,
                u64::MAX,
                mask,
                u64::MAX << 1,
                mask << 1,
                self.keys.gear(),
                self.keys.gear_shifted(),
            );
            if at == window.len() {
                return None;
            }
            if start + at >= from {
                return Some(start + at);
            }
            // A warm-up hash whose tested bits are all 0: try from another start.
        }
        // Nine warm-ups each met a hash of 0 (about 2^-500): cutting here
        // is still a valid chunk end, only not the whole-file one.
        Some(from)
    }

    /// Ends the current chunk at position `cut` (at least `sent`, at most
    /// `seen + data.len()`); returns the rest of `data`, which starts the
    /// next chunk with the byte held back, if `cut` falls on it.
    fn cut_at<'d>(&mut self, cut: usize, data: &'d [u8], sink: &mut dyn ChunkSink) -> &'d [u8] {
        if cut < self.seen {
            // The held-back byte starts the next chunk.
            debug_assert_eq!(cut, self.sent);
            let byte = self.history[self.history_len - 1];
            self.end_chunk(cut, sink);
            self.seen = 1;
            self.history[0] = byte;
            self.history_len = 1;
            return data;
        }
        let used = cut - self.seen;
        self.send(&data[..used], cut, sink);
        self.end_chunk(cut, sink);
        &data[used..]
    }

    /// Sends the held-back byte, if any, then `more`, so that `upto` bytes
    /// of the chunk are sent.
    fn send(&mut self, more: &[u8], upto: usize, sink: &mut dyn ChunkSink) {
        if self.seen > self.sent {
            sink.bytes(&self.history[self.history_len - 1..self.history_len]);
        }
        if !more.is_empty() {
            sink.bytes(more);
        }
        self.sent = upto;
    }

    /// Keeps the last bytes of the chunk, `data` now following `seen`.
    fn remember(&mut self, data: &[u8]) {
        if data.len() >= HISTORY {
            self.history.copy_from_slice(&data[data.len() - HISTORY..]);
            self.history_len = HISTORY;
        } else {
            let keep = (HISTORY - data.len()).min(self.history_len);
            self.history.copy_within(self.history_len - keep..self.history_len, 0);
            self.history[keep..keep + data.len()].copy_from_slice(data);
            self.history_len = keep + data.len();
        }
    }

    /// Starts the next chunk after `len` bytes of the current one.
    fn end_chunk(&mut self, len: usize, sink: &mut dyn ChunkSink) {
        self.chunk_start += len as u64;
        sink.end(self.chunk_start);
        self.seen = 0;
        self.sent = 0;
        self.frontier = self.params.min();
        self.history_len = 0;
    }

    /// The length of the chunk starting at `window[0]`, if the file went on
    /// as `window` does: fastcdc 2020's cut on the whole window, with the
    /// keyed tables (the reference the tests hold the streaming to).
    #[cfg(test)]
    fn cut(&self, window: &[u8]) -> usize {
        let (mask_s, mask_l) = self.masks;
        let p = &self.params;
        let (_hash, cut) = cut_gear(
            window,
            p.min(),
            p.avg(),
            p.max(),
            mask_s,
            mask_l,
            mask_s << 1,
            mask_l << 1,
            self.keys.gear(),
            self.keys.gear_shifted(),
        );
        cut
    }
}

/// A sink that keeps the chunk ends only.
#[derive(Debug, Default)]
pub struct CutPoints(
    /// Each chunk's end (a file offset), in order.
    pub Vec<u64>,
);

impl ChunkSink for CutPoints {
    fn bytes(&mut self, _bytes: &[u8]) {}
    fn end(&mut self, end: u64) {
        self.0.push(end);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn keys(seed: u8) -> ChunkKeys {
        ChunkKeys::from_key_bytes(&[seed; 32], &[0x11; 16])
    }

    fn small() -> ChunkParams {
        ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap()
    }

    fn random(seed: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        let mut h = blake3::Hasher::new();
        h.update(&seed.to_le_bytes());
        h.finalize_xof().fill(&mut out);
        out
    }

    /// The cut points of `data` fed in slices of the given lengths (cycled).
    fn cuts_in_slices(keys: &ChunkKeys, params: ChunkParams, data: &[u8], lens: &[usize]) -> Vec<u64> {
        let mut sink = CutPoints::default();
        let mut c = Chunker::new(keys, params);
        let mut rest = data;
        for len in lens.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at((*len).min(rest.len()));
            c.feed(now, &mut sink);
            rest = later;
        }
        c.finish(&mut sink);
        sink.0
    }

    /// The reference: fastcdc's own loop over the whole file at once.
    fn cuts_whole(keys: &ChunkKeys, params: ChunkParams, data: &[u8]) -> Vec<u64> {
        let c = Chunker::new(keys, params);
        let (mut at, mut out) = (0, Vec::new());
        while at < data.len() {
            at += c.cut(&data[at..]);
            out.push(at as u64);
        }
        out
    }

    /// A sink that checks the bytes it gets are the file's, in order, and
    /// that every chunk but the last is within the sizes.
    struct Checked<'a> {
        data: &'a [u8],
        at: usize,
        start: usize,
        params: ChunkParams,
        ends: Vec<u64>,
    }

    impl ChunkSink for Checked<'_> {
        fn bytes(&mut self, bytes: &[u8]) {
            assert_eq!(bytes, &self.data[self.at..self.at + bytes.len()]);
            self.at += bytes.len();
        }
        fn end(&mut self, end: u64) {
            assert_eq!(end, self.at as u64, "the bytes sent so far end the chunk");
            let len = self.at - self.start;
            assert!(len > 0 && len <= self.params.max());
            if self.at < self.data.len() {
                assert!(len >= self.params.min(), "a chunk before the last is at least min");
            }
            self.start = self.at;
            self.ends.push(end);
        }
    }

    #[test]
    fn slicing_does_not_move_cut_points() {
        let (k, p) = (keys(1), small());
        let data = random(1, 300 << 10);
        let whole = cuts_whole(&k, p, &data);
        assert!(whole.len() > 40, "{} chunks", whole.len());
        for lens in
            [&[1][..], &[7, 1, 4096], &[1023], &[16 << 10], &[(16 << 10) + 1], &[1 << 20], &[5000, 70000]]
        {
            assert_eq!(cuts_in_slices(&k, p, &data, lens), whole, "slices {lens:?}");
        }
        // The sink gets every byte once, in order, each before its chunk's
        // end (a byte held back for its cut test included).
        for slice in [1, 3, 3001] {
            let mut sink = Checked { data: &data, at: 0, start: 0, params: p, ends: Vec::new() };
            let mut c = Chunker::new(&k, p);
            for part in data.chunks(slice) {
                c.feed(part, &mut sink);
            }
            c.finish(&mut sink);
            assert_eq!((sink.at, &sink.ends), (data.len(), &whole), "slices of {slice}");
        }
    }

    /// Resuming a scan after a 48-byte warm-up is exact only while every
    /// mask a valid size picks stays below bit 48 (module docs).
    #[test]
    fn every_mask_lies_below_bit_48() {
        for bits in 8..=22 {
            let avg = 1usize << bits;
            for avg in [avg, avg + avg / 2] {
                let Ok(p) = ChunkParams::new(64, avg.min(4 << 20), 16 << 20) else { continue };
                let (strict, relaxed) = p.masks();
                assert!(strict < 1 << 48 && relaxed < 1 << 48, "average {avg}");
            }
        }
    }

    #[test]
    fn short_and_empty_files() {
        let (k, p) = (keys(1), small());
        assert_eq!(cuts_in_slices(&k, p, b"", &[1]), Vec::<u64>::new());
        assert_eq!(cuts_in_slices(&k, p, b"x", &[1]), [1]);
        let short = random(2, p.min() - 1);
        assert_eq!(cuts_in_slices(&k, p, &short, &[100]), [short.len() as u64]);
    }

    /// Bytes that never match a mask (all zeros under most keys) are cut at
    /// `max`, and the cut at `max` is the same whatever the slicing.
    #[test]
    fn runs_without_a_cut_are_cut_at_max() {
        let (k, p) = (keys(1), small());
        let zeros = vec![0u8; 100 << 10];
        let whole = cuts_whole(&k, p, &zeros);
        for lens in [&[1][..], &[999], &[p.max()], &[p.max() + 1]] {
            assert_eq!(cuts_in_slices(&k, p, &zeros, lens), whole);
        }
    }

    #[test]
    fn another_content_key_cuts_elsewhere() {
        let data = random(3, 256 << 10);
        let p = small();
        let a = cuts_whole(&keys(1), p, &data);
        let b = cuts_whole(&keys(2), p, &data);
        assert!(a.len() > 10 && b.len() > 10);
        let shared = a.iter().filter(|end| b.contains(end)).count();
        // The file's end is shared, and a chance meeting would keep the two
        // in step from there on; these fixed inputs meet at the end only.
        assert_eq!(shared, 1, "{shared} of {} cut points shared", a.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_slicings_give_the_whole_file_cuts(
            seed in any::<u64>(),
            len in 0usize..(200 << 10),
            lens in proptest::collection::vec(prop_oneof![1usize..4, 1usize..5000, 15000usize..40000], 1..20),
        ) {
            let (k, p) = (keys(7), small());
            let data = random(seed, len);
            prop_assert_eq!(cuts_in_slices(&k, p, &data, &lens), cuts_whole(&k, p, &data));
        }
    }
}
