//! The streaming chunker: a file's bytes in slices of any size in, its
//! chunks out, cut where the keyed FastCDC 2020 rule cuts the whole file.
//!
//! fastcdc's `cut_gear` looks at one contiguous window and cannot resume a
//! scan, so a chunk that spans two slices is copied into a carry buffer
//! (at most `max` bytes). The rule that keeps the cut points independent of
//! the slicing: a window's answer is final when the cut lies before the
//! window's end, or the window holds `max` bytes, or the file has ended;
//! otherwise the bytes wait for more. Scanning the carry only once it has
//! grown (twice what it held, at least `2 × avg`, at most `max`) bounds the
//! rescans of a chunk to a few; docs/DEDUP.md has the measured cost.

use fastcdc::v2020::cut_gear;

use super::ChunkParams;
use crate::crypto::ChunkKeys;

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
/// file has none. Not yet called by the writer: it is the first piece of
/// format v4's deduplication (docs/DEDUP.md).
pub struct Chunker<'k> {
    keys: &'k ChunkKeys,
    params: ChunkParams,
    masks: (u64, u64),
    /// The bytes of the current chunk not yet sent: empty, or a chunk that
    /// spans slices (fewer than `max` bytes between calls).
    carry: Vec<u8>,
    /// Carry length at which to scan it next.
    scan_at: usize,
    /// File offset of the current chunk's first byte.
    chunk_start: u64,
}

impl<'k> Chunker<'k> {
    /// A chunker for one file, cutting with `keys`' gear table to `params`.
    pub fn new(keys: &'k ChunkKeys, params: ChunkParams) -> Chunker<'k> {
        Chunker { keys, params, masks: params.masks(), carry: Vec::new(), scan_at: 0, chunk_start: 0 }
    }

    /// Takes the next `data` of the file; sends `sink` every byte up to the
    /// last cut found and the ends of the chunks before it.
    pub fn feed(&mut self, mut data: &[u8], sink: &mut dyn ChunkSink) {
        let max = self.params.max();
        while !data.is_empty() {
            if self.carry.is_empty() {
                // In place: no copy for the chunks that lie within `data`.
                let cut = self.cut(data);
                if cut < data.len() || data.len() >= max {
                    data = self.emit(data, cut, sink);
                    continue;
                }
                self.carry.reserve_exact(max);
                self.carry.extend_from_slice(data);
                self.scan_at = self.next_scan(data.len());
                return;
            }
            let take = data.len().min(max - self.carry.len());
            self.carry.extend_from_slice(&data[..take]);
            if self.carry.len() < self.scan_at {
                return; // `take` was all of `data`
            }
            let cut = self.cut(&self.carry);
            if cut == self.carry.len() && cut < max {
                self.scan_at = self.next_scan(self.carry.len());
                return; // no cut yet, and all of `data` is in the carry
            }
            let carried = self.carry.len() - take;
            sink.bytes(&self.carry[..cut]);
            self.end_chunk(cut, sink);
            if cut >= carried {
                // The next chunk starts inside `data`: scan it there.
                self.carry.clear();
                data = &data[cut - carried..];
            } else {
                // It starts in the carry: give back what was taken.
                self.carry.truncate(carried);
                self.carry.drain(..cut);
                self.scan_at = 0;
            }
        }
    }

    /// Ends the file: sends the rest as its last chunks.
    pub fn finish(mut self, sink: &mut dyn ChunkSink) {
        let carry = std::mem::take(&mut self.carry);
        let mut rest = &carry[..];
        while !rest.is_empty() {
            let cut = self.cut(rest);
            rest = self.emit(rest, cut, sink);
        }
    }

    /// Sends `window[..cut]` as the end of the current chunk; returns the
    /// rest.
    fn emit<'d>(&mut self, window: &'d [u8], cut: usize, sink: &mut dyn ChunkSink) -> &'d [u8] {
        sink.bytes(&window[..cut]);
        self.end_chunk(cut, sink);
        &window[cut..]
    }

    fn end_chunk(&mut self, len: usize, sink: &mut dyn ChunkSink) {
        self.chunk_start += len as u64;
        sink.end(self.chunk_start);
    }

    /// The carry length at which a carry of `len` bytes with no cut yet is
    /// worth scanning again.
    fn next_scan(&self, len: usize) -> usize {
        (2 * len).max(2 * self.params.avg()).min(self.params.max())
    }

    /// The length of the chunk starting at `window[0]`, if the file went on
    /// as `window` does: fastcdc 2020's cut, with the keyed tables.
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
        let mut sink = Checked { data: &data, at: 0, start: 0, params: p, ends: Vec::new() };
        let mut c = Chunker::new(&k, p);
        for slice in data.chunks(3000) {
            c.feed(slice, &mut sink);
        }
        c.finish(&mut sink);
        assert_eq!((sink.at, sink.ends), (data.len(), whole));
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
