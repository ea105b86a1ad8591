//! Page filling: file content read straight into the current page, pages
//! handed to the sealing workers and written in order, and the records of
//! written pages gathered into the pages tree.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use super::{ArchiveWriter, Metadata};
use crate::crypto::looks_incompressible;
use crate::error::{Error, Result};
use crate::format::{EntryKind, Extent, SparseMap, INDEX_NODE_TARGET_LEN, PAGE_RECORD_LEN};
use crate::index::page_key;
use crate::sparse::ContentHasher;

impl<W: Write> ArchiveWriter<W> {
    /// Adds a file whose content `content` yields: read straight into the
    /// current page, hashed in line or, once it runs across pages, by the
    /// sealing workers. A large file (half a page or more) starts a new page
    /// and its pages are `page_size`; a page holding only smaller files
    /// grows on to `small_files_page_size` if its first `page_size` bytes
    /// compress (incompressible ones gain nothing from a larger page, and
    /// a read of one of them would open more).
    pub(super) fn add_file_dyn(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        size_hint: u64,
        content: &mut dyn Read,
        linked: bool,
        sparse: Option<(SparseMap, u64)>,
    ) -> Result<u64> {
        self.check_next_path(path)?;
        if self.chunks_file(size_hint, linked, sparse.is_some()) {
            return self.add_chunked_file(path, meta, size_hint, content);
        }
        if self.indexes_small_file(size_hint, linked, sparse.is_some()) {
            return self.add_small_file(path, meta, size_hint, content);
        }
        // `None` while the page workers hash the file (it runs across pages).
        let mut hasher = Some(ContentHasher::new(sparse.as_ref().map(|(map, _)| map)));
        let large = size_hint >= (self.tuning.page_size / 2) as u64;
        if large && !self.page.is_empty() {
            self.flush_page()?;
        }
        let offset = self.page_start + self.page.len() as u64;
        let mut size = 0u64;
        // Where the file's bytes begin in the current page.
        let mut in_page = None;
        loop {
            let page_size = self.tuning.page_size;
            if self.page.len() == page_size
                && self.page_limit > page_size
                && looks_incompressible(self.page.bytes())
            {
                self.page_limit = page_size;
            }
            if self.page.len() >= self.page_limit {
                if in_page.is_some() {
                    if let Some(h) = hasher.take() {
                        self.sealer.hand_over(h);
                    }
                }
                self.flush_page_hashing(in_page.take())?;
            }
            if large {
                // Only an empty page gets here: a large file starts a page.
                self.page_limit = page_size;
            }
            let start = self.page.len();
            in_page.get_or_insert(start);
            // A page stops at `page_size` once, to be probed there.
            let stop = if start < page_size { page_size } else { self.page_limit };
            let room = (stop - start) as u64;
            let n = self
                .page
                .fill(content, stop, size_hint.saturating_sub(size))
                .map_err(Error::from_reader(Error::READING_CONTENT))?;
            size += n as u64;
            if let Some(p) = &self.output.progress {
                p.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
            }
            if (n as u64) < room {
                break;
            }
        }
        let mut hasher = hasher.unwrap_or_else(|| self.sealer.take_back());
        hasher.update(&self.page.bytes()[in_page.unwrap_or(self.page.len())..]);
        let extent = Extent::whole(offset, size, linked);
        // A map whose data ended early keeps the segments filled.
        let (logical, sparse) = match sparse {
            None => (size, None),
            Some((map, logical)) => {
                let map = map.truncated(size);
                (if map.stored_len() == size { logical } else { map.end() }, Some(map))
            }
        };
        let sha256 = hasher.finish_with(logical, sparse.as_ref());
        if linked {
            self.link_targets.insert(path.to_vec(), (extent, sha256, logical, sparse.clone()));
        }
        self.push_entry(path, meta, EntryKind::File { size: logical, sha256 }, Some(extent), sparse)?;
        Ok(size)
    }

    /// Hands the current page to the workers and writes whatever finished.
    pub(super) fn flush_page(&mut self) -> Result<()> {
        self.flush_page_hashing(None)
    }

    /// [`flush_page`](Self::flush_page), the workers hashing its bytes from
    /// `hash_from` into the hasher handed over to them.
    pub(super) fn flush_page_hashing(&mut self, hash_from: Option<usize>) -> Result<()> {
        let fresh = self.sealer.buffer();
        let plain = self.page.take(fresh);
        self.page_limit = self.tuning.small_files_page_size;
        self.page_start += plain.len() as u64;
        self.sealer.submit(self.next_page, plain, hash_from);
        self.next_page += 1;
        while self.sealer.in_flight() >= self.tuning.pages_in_flight {
            self.write_oldest()?;
        }
        // Files stored before a large one are named now, not after its
        // last byte.
        if self.leaf_spans_to(self.page_start) {
            self.flush_leaf()?;
        }
        Ok(())
    }

    pub(super) fn write_oldest(&mut self) -> Result<()> {
        let Some(sealed) = self.sealer.pop() else { return Ok(()) };
        let offset = self.output.position;
        self.output.write(&sealed.frame, "writing a page")?;
        self.output.write(&sealed.bytes, "writing a page")?;
        self.page_records.pages.push(sealed.page_record(offset));
        self.sealer.recycle(sealed.bytes);
        if (self.page_records.pages.len() + 1) * PAGE_RECORD_LEN > INDEX_NODE_TARGET_LEN {
            self.flush_page_records()?;
        }
        Ok(())
    }

    pub(super) fn flush_page_records(&mut self) -> Result<()> {
        let leaf = &mut self.page_records;
        if leaf.pages.is_empty() {
            return Ok(());
        }
        let plain = leaf.encode();
        let key = page_key(leaf.first_offset);
        leaf.first_page += leaf.pages.len() as u64;
        leaf.first_offset += leaf.pages.iter().map(|p| u64::from(p.plain_len)).sum::<u64>();
        leaf.pages.clear();
        self.pages.add_leaf(key, plain, &mut self.output)
    }
}

/// The page being filled: the first `len` bytes of `buf`. The rest of
/// `buf` (a recycled buffer's old bytes) is room that reads overwrite, so
/// a buffer is zeroed once in its life, not once a page.
pub(super) struct FillingPage {
    buf: Vec<u8>,
    len: usize,
}

impl FillingPage {
    /// An empty page in `buf` (of any length: its bytes are room).
    pub(super) fn new(buf: Vec<u8>) -> FillingPage {
        FillingPage { buf, len: 0 }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes filled so far.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The filled bytes as a page to seal; this page starts again in `fresh`.
    pub(super) fn take(&mut self, fresh: Vec<u8>) -> Vec<u8> {
        let mut page = std::mem::replace(&mut self.buf, fresh);
        page.truncate(self.len);
        self.len = 0;
        page
    }

    /// Reads from `content` until the page holds `page_size` bytes or the
    /// content ends; returns how many bytes were added. Reads straight into
    /// the page with large reads (small ones cost more in system time than
    /// the compression does), and makes room only as far as it expects to
    /// need: `hint` bytes plus one to see the end, growing if the content
    /// is longer (zeroing only room the buffer never had).
    pub(super) fn fill(&mut self, content: &mut dyn Read, page_size: usize, hint: u64) -> io::Result<usize> {
        let start = self.len;
        let mut want = (hint.saturating_add(1).max(MIN_READ as u64) as usize).min(page_size - start);
        loop {
            if self.len == start + want {
                if self.len == page_size {
                    break;
                }
                want = (want * 2).min(page_size - start);
            }
            if self.buf.len() < start + want {
                self.buf.resize(start + want, 0);
            }
            match content.read(&mut self.buf[self.len..start + want]) {
                Ok(0) => break,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.len - start)
    }
}

/// Smallest read into a page.
const MIN_READ: usize = 16 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields its bytes a few at a time, like a pipe.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(7);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Files that run across pages are hashed by the sealing workers, in
    /// turn; the digests must be those of the content whatever the page
    /// boundaries, hints, thread counts and holes.
    #[test]
    fn digests_of_files_across_pages_are_their_contents() {
        use sha2::{Digest, Sha256};

        use crate::archive::Archive;
        use crate::crypto::{KdfParams, Password};
        use crate::format::SparseMap;
        use crate::session::CreateOptions;

        let content = |i: usize, size: usize| -> Vec<u8> {
            (0..size).map(|j| (j * 31 + i * 7 + j / 251) as u8).collect()
        };
        let sizes = [0, 1, 4095, 4096, 4097, 3 * 4096 + 5, 20_000, 7, 9 * 4096];
        let map = SparseMap::new(vec![(100, 5000), (12_000, 6000), (40_000, 1)], 50_000).unwrap();
        for threads in [1, 3] {
            let password = Password::from("digests");
            let options =
                CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096).threads(threads);
            let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
            let meta = Metadata::new(0o644, 0, 0, 0, 0);
            let mut want = Vec::new();
            for (i, &size) in sizes.iter().enumerate() {
                let bytes = content(i, size);
                // Odd files come with no size hint, so they start mid-page.
                let hint = if i % 2 == 0 { size as u64 } else { 0 };
                w.add_file(format!("f{i}"), &meta, hint, &bytes[..]).unwrap();
                want.push(<[u8; 32]>::from(Sha256::digest(&bytes)));
            }
            let data = content(99, map.stored_len() as usize);
            w.add_sparse_file("sparse", &meta, map.clone(), 50_000, false, &data[..]).unwrap();
            let mut logical = vec![0u8; 50_000];
            let mut at = 0;
            for &(offset, len) in map.segments() {
                logical[offset as usize..(offset + len) as usize]
                    .copy_from_slice(&data[at..at + len as usize]);
                at += len as usize;
            }
            let archive = Archive::open(io::Cursor::new(w.finish().unwrap()), &password).unwrap();
            for entry in archive.entries().unwrap() {
                let entry = entry.unwrap();
                let (_, digest) = entry.content().unwrap();
                let expected = match std::str::from_utf8(&entry.path).unwrap() {
                    "sparse" => {
                        let data = <[u8; 32]>::from(Sha256::digest(&data));
                        crate::sparse::sparse_digest(50_000, &map, &data)
                    }
                    name => want[name[1..].parse::<usize>().unwrap()],
                };
                assert_eq!(
                    digest,
                    &expected,
                    "{} with {threads} threads",
                    String::from_utf8_lossy(&entry.path)
                );
            }
            assert!(archive.verify().unwrap().is_ok());
            // A reader still yields the logical bytes, holes as zeros, and
            // checks the digest at the end.
            let mut read = Vec::new();
            io::Read::read_to_end(&mut archive.open_file("sparse").unwrap(), &mut read).unwrap();
            assert!(read == logical, "the sparse file reads as its logical content");
        }
    }

    #[test]
    fn a_small_files_page_smaller_than_a_page_is_refused() {
        use crate::crypto::{KdfParams, Password};
        use crate::session::CreateOptions;

        let options = CreateOptions::new()
            .kdf(KdfParams::INSECURE_FOR_TESTS)
            .page_size(8192)
            .small_files_page_size(4096);
        let refused = ArchiveWriter::new(Vec::new(), &Password::from("p"), options).err().unwrap();
        assert!(
            matches!(refused, Error::InvalidTuning { page_size: 8192, small_files_page_size: 4096, .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("small files' page size 4096 (page size..16 MiB)"), "{refused}");
    }

    #[test]
    fn fill_takes_everything_whatever_the_hint() {
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        for (hint, page_size) in
            [(0, 1 << 20), (10, 1 << 20), (100_000, 1 << 20), (1 << 30, 1 << 20), (5, 40_000)]
        {
            // A recycled buffer: old bytes past the six filled ones.
            let mut page = FillingPage::new(b"prefix, then old bytes".to_vec());
            page.len = 6;
            let n = page.fill(&mut Trickle(&data), page_size, hint).unwrap();
            let expect = data.len().min(page_size - 6);
            assert_eq!(n, expect, "hint {hint}");
            assert_eq!(&page.bytes()[..6], b"prefix");
            assert_eq!(&page.bytes()[6..], &data[..expect]);
            assert_eq!(page.take(Vec::new()).len(), 6 + expect);
        }
    }
}
