//! Sparse files: finding a file's data segments (`SEEK_DATA`/`SEEK_HOLE`),
//! reading them back to back, and turning stored bytes back into the
//! logical content (holes as zeros) for hashing, writing and reading.
//!
//! A sparse file's content digest covers its map and stored bytes, not
//! its holes (FORMAT.md §3.5b), so checking it costs what is stored.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use rustix::fs::SeekFrom;
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::format::{Entry, SparseMap, DIGEST_LEN, MAX_SPARSE_SEGMENTS};

/// A piece of logical content: a run of zeros (a hole), or stored bytes
/// at their logical offset.
pub(crate) enum Piece<'b> {
    Zeros(u64),
    Data(u64, &'b [u8]),
}

/// Follows stored bytes through a file's map, yielding the logical
/// content as pieces. A file stored whole is one segment.
#[derive(Debug, Clone)]
pub(crate) struct Expander {
    segments: Vec<(u64, u64)>,
    seg: usize,
    into_seg: u64,
    logical: u64,
}

impl Expander {
    pub(crate) fn new(map: Option<&SparseMap>) -> Expander {
        let segments = map.map_or_else(|| vec![(0, u64::MAX)], |m| m.segments().to_vec());
        Expander { segments, seg: 0, into_seg: 0, logical: 0 }
    }

    /// Hands `f` the pieces that the next stored `bytes` make. Bytes past
    /// the map are dropped (the extent's length is the map's, so none come).
    pub(crate) fn feed<'b, E>(
        &mut self,
        mut bytes: &'b [u8],
        f: &mut dyn FnMut(Piece<'b>) -> Result<(), E>,
    ) -> Result<(), E> {
        while let (false, Some(&(offset, len))) = (bytes.is_empty(), self.segments.get(self.seg)) {
            if self.logical < offset {
                f(Piece::Zeros(offset - self.logical))?;
                self.logical = offset;
            }
            let n = (len - self.into_seg).min(bytes.len() as u64) as usize;
            f(Piece::Data(self.logical, &bytes[..n]))?;
            self.logical += n as u64;
            self.into_seg += n as u64;
            bytes = &bytes[n..];
            if self.into_seg == len {
                (self.seg, self.into_seg) = (self.seg + 1, 0);
            }
        }
        Ok(())
    }

    /// The trailing hole up to the logical `size`.
    pub(crate) fn finish<E>(
        &mut self,
        size: u64,
        f: &mut dyn FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.logical < size {
            f(Piece::Zeros(size - self.logical))?;
            self.logical = size;
        }
        Ok(())
    }
}

/// Domain separator of a sparse file's digest (FORMAT.md §3.5b).
const SPARSE_DIGEST_CONTEXT: &[u8] = b"revault-lockbox v3 sparse";

/// A file's content digest, fed its stored bytes: SHA-256 of them for a
/// file stored whole; for a sparse file, SHA-256 over its logical size,
/// its map and the SHA-256 of its stored bytes, so that checking it costs
/// what is stored, never the holes (FORMAT.md §3.5b).
#[derive(Debug, Clone)]
pub(crate) struct ContentHasher {
    hasher: Sha256,
    sparse: Option<SparseMap>,
    /// The logical size, when known from the start (reading an entry).
    size: u64,
}

impl ContentHasher {
    pub(crate) fn new(map: Option<&SparseMap>) -> ContentHasher {
        ContentHasher { hasher: Sha256::new(), sparse: map.cloned(), size: 0 }
    }

    /// A hasher for the content of `entry`, a file or hard link.
    pub(crate) fn for_entry(entry: &Entry) -> ContentHasher {
        let size = entry.content().map_or(0, |c| c.0);
        ContentHasher { size, ..ContentHasher::new(entry.sparse_map()) }
    }

    /// The digest of the entry's content ([`for_entry`](Self::for_entry)).
    pub(crate) fn finish_entry(self) -> [u8; DIGEST_LEN] {
        let size = self.size;
        self.finish(size)
    }

    /// Takes the next stored bytes (a sparse file's segments, back to back).
    pub(crate) fn update(&mut self, stored: &[u8]) {
        self.hasher.update(stored);
    }

    /// The digest of a file of logical `size` bytes, with the map given at
    /// the start.
    pub(crate) fn finish(self, size: u64) -> [u8; DIGEST_LEN] {
        let map = self.sparse.clone();
        self.finish_with(size, map.as_ref())
    }

    /// The digest of a file of logical `size` bytes whose map is `map`
    /// (a writer's map, cut short when the data ended early).
    pub(crate) fn finish_with(self, size: u64, map: Option<&SparseMap>) -> [u8; DIGEST_LEN] {
        let data: [u8; DIGEST_LEN] = self.hasher.finalize().into();
        match map {
            None => data,
            Some(map) => sparse_digest(size, map, &data),
        }
    }
}

/// `SHA-256("revault-lockbox v3 sparse" || size u64 || count u32 ||
/// segment[count] || data_sha256)`, each segment `offset u64 || len u64`.
pub(crate) fn sparse_digest(size: u64, map: &SparseMap, data_sha256: &[u8; DIGEST_LEN]) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    h.update(SPARSE_DIGEST_CONTEXT);
    h.update(size.to_le_bytes());
    h.update((map.segments().len() as u32).to_le_bytes());
    for &(offset, len) in map.segments() {
        h.update(offset.to_le_bytes());
        h.update(len.to_le_bytes());
    }
    h.update(data_sha256);
    h.finalize().into()
}

/// The data segments of `file` (of `size` bytes, `blocks` 512-byte blocks
/// allocated) when it has holes: fewer blocks than its size needs. `None`
/// for a file stored whole: no holes, or a file system without
/// `SEEK_DATA`. More than [`MAX_SPARSE_SEGMENTS`] segments are merged
/// across their smallest holes.
pub(crate) fn data_segments(file: &File, size: u64, blocks: u64) -> io::Result<Option<SparseMap>> {
    if blocks.saturating_mul(512) >= size {
        return Ok(None);
    }
    let mut segments: Vec<(u64, u64)> = Vec::new();
    let mut at = 0u64;
    while at < size {
        let data = match rustix::fs::seek(file, SeekFrom::Data(at)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if data >= size {
            break;
        }
        let hole = rustix::fs::seek(file, SeekFrom::Hole(data))?.min(size);
        segments.push((data, hole - data));
        at = hole;
    }
    rustix::fs::seek(file, SeekFrom::Start(0))?;
    // One segment over the whole file: no hole after all (a compressed or
    // inline file has fewer blocks than bytes).
    if segments == [(0, size)] {
        return Ok(None);
    }
    let segments = merge_smallest_holes(segments, MAX_SPARSE_SEGMENTS);
    Ok(SparseMap::new(segments, size).ok())
}

/// At most `max` segments: the holes kept are the largest.
fn merge_smallest_holes(segments: Vec<(u64, u64)>, max: usize) -> Vec<(u64, u64)> {
    if segments.len() <= max {
        return segments;
    }
    let mut gaps: Vec<(u64, usize)> =
        segments.windows(2).enumerate().map(|(i, w)| (w[1].0 - (w[0].0 + w[0].1), i)).collect();
    gaps.sort_unstable_by(|a, b| b.cmp(a));
    let mut kept = vec![false; segments.len()];
    gaps.iter().take(max - 1).for_each(|&(_, i)| kept[i] = true);
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(max);
    for (i, &(offset, len)) in segments.iter().enumerate() {
        match merged.last_mut() {
            Some(last) if !kept[i - 1] => last.1 = offset + len - last.0,
            _ => merged.push((offset, len)),
        }
    }
    merged
}

/// Reads a file's data segments back to back.
pub(crate) struct SegmentReader<'f> {
    file: &'f File,
    segments: Vec<(u64, u64)>,
    seg: usize,
    into_seg: u64,
}

impl<'f> SegmentReader<'f> {
    pub(crate) fn new(file: &'f File, map: &SparseMap) -> SegmentReader<'f> {
        SegmentReader { file, segments: map.segments().to_vec(), seg: 0, into_seg: 0 }
    }
}

impl Read for SegmentReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(&(offset, len)) = self.segments.get(self.seg) else { return Ok(0) };
        let want = (len - self.into_seg).min(buf.len() as u64) as usize;
        let n = self.file.read_at(&mut buf[..want], offset + self.into_seg)?;
        if n == 0 && want > 0 {
            // Shrunk since it was mapped: the data ends here.
            self.seg = self.segments.len();
            return Ok(0);
        }
        self.into_seg += n as u64;
        if self.into_seg == len {
            (self.seg, self.into_seg) = (self.seg + 1, 0);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(map: Option<&SparseMap>, chunks: &[&[u8]], size: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut push = |p: Piece<'_>| -> Result<(), ()> {
            match p {
                Piece::Zeros(n) => out.resize(out.len() + n as usize, 0),
                Piece::Data(at, b) => {
                    assert_eq!(at, out.len() as u64);
                    out.extend_from_slice(b)
                }
            }
            Ok(())
        };
        let mut x = Expander::new(map);
        for c in chunks {
            x.feed(c, &mut push).unwrap();
        }
        x.finish(size, &mut push).unwrap();
        out
    }

    #[test]
    fn stored_bytes_expand_to_the_logical_content_however_they_are_cut() {
        let map = SparseMap::new(vec![(2, 3), (8, 2)], 12).unwrap();
        let want = b"\0\0abc\0\0\0de\0\0".to_vec();
        assert_eq!(pieces(Some(&map), &[b"abcde"], 12), want);
        assert_eq!(pieces(Some(&map), &[b"a", b"bcd", b"e"], 12), want);
        assert_eq!(pieces(None, &[b"ab", b"c"], 3), b"abc");
    }

    /// FORMAT.md §10's vector (computed with Python's hashlib): the map
    /// `(2, 3), (8, 2)` of a 12-byte file whose stored bytes are `abcde`.
    #[test]
    fn a_sparse_digest_covers_size_map_and_stored_bytes_not_the_holes() {
        let map = SparseMap::new(vec![(2, 3), (8, 2)], 12).unwrap();
        let mut h = ContentHasher::new(Some(&map));
        h.update(b"ab");
        h.update(b"cde");
        let digest = h.finish(12);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "bb687aebcb0887c6e45648630e0a21102d354a58e621e01b815dcb95402f7519");
        // The logical size and the map are bound: either changed, the digest does.
        let mut other = ContentHasher::new(Some(&map));
        other.update(b"abcde");
        assert_ne!(other.finish(13), digest);
        let moved = SparseMap::new(vec![(1, 3), (8, 2)], 12).unwrap();
        let mut other = ContentHasher::new(Some(&moved));
        other.update(b"abcde");
        assert_ne!(other.finish(12), digest);
        // A file stored whole hashes as `sha256sum` does.
        let mut whole = ContentHasher::new(None);
        whole.update(b"abc");
        assert_eq!(whole.finish(3), <[u8; 32]>::from(Sha256::digest(b"abc")));
    }

    #[test]
    fn too_many_segments_merge_across_the_smallest_holes() {
        let segs = vec![(0, 1), (2, 1), (10, 1), (11 + 100, 1), (113, 1)];
        assert_eq!(merge_smallest_holes(segs.clone(), 5), segs);
        assert_eq!(merge_smallest_holes(segs, 2), vec![(0, 11), (111, 3)]);
    }

    #[test]
    fn a_map_refuses_overlaps_empty_segments_and_running_past_the_size() {
        assert!(SparseMap::new(vec![(0, 4), (3, 2)], 10).is_err());
        assert!(SparseMap::new(vec![(0, 4), (4, 2)], 10).is_err());
        assert!(SparseMap::new(vec![(5, 4), (0, 2)], 10).is_err());
        assert!(SparseMap::new(vec![(0, 0)], 10).is_err());
        assert!(SparseMap::new(vec![(8, 3)], 10).is_err());
        assert!(SparseMap::new(vec![(u64::MAX, 3)], 10).is_err());
        assert!(SparseMap::new(vec![(0, 4), (6, 4)], 10).is_ok());
    }
}
