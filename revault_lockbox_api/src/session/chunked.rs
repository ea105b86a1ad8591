//! The chunked write path (format v4, FORMAT.md §3.5c, docs/DEDUP.md): a
//! large file is cut into content-defined chunks, each named by its keyed
//! id; a chunk the session already holds (written earlier in this
//! session, or one of the previous version's chunks `update` offered)
//! costs a list record, a new one is appended to the data stream through
//! the normal page filling. Then the file's chunk list goes into the
//! stream after every chunk it names, and the entry points at the list.
//!
//! The file's SHA-256 covers all its content, reused chunks too, so it is
//! computed as the bytes are read, with the chunk ids, by the digest
//! worker (`pipeline::Digester`), not by the page workers (they see only
//! the new chunks' bytes).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{ArchiveWriter, Metadata};
use crate::chunk::{ChunkIdHasher, ChunkKeys, ChunkParams, Chunker, CutPoints};
use crate::crypto::looks_incompressible;
use crate::crypto::ContentKey;
use crate::error::{Error, Result};
use crate::format::{encode_chunk_list, ChunkRef, EntryKind, Extent, ARCHIVE_ID_LEN, CHUNK_ID_LEN};
use crate::pipeline::{DigestJob, Digested, Digester};

/// The least a read from a file asks for, so that small chunk sizes do
/// not make small reads.
const LEAST_READ_LEN: usize = 64 << 10;

/// Bytes read from a file at once: the largest chunk (1 MiB by default)
/// and [`LEAST_READ_LEN`] more. The chunk still open at a read's end,
/// shorter than the largest, moves to the next buffer's front, so each
/// read has room for at least `LEAST_READ_LEN` (and for the largest chunk
/// less the open one's bytes, most of a buffer); larger buffers would only
/// hold more memory, three of them at once (below), which the memory
/// gate's create of a 256 MiB text file has little room for.
fn read_len(params: &ChunkParams) -> usize {
    params.max() + LEAST_READ_LEN
}

/// Buffers with the digest worker at once: one being digested while the
/// next is read and cut. With the one being read, three buffers of
/// [`read_len`] a chunked file.
const DIGEST_DEPTH: usize = 2;

type ChunkMap = HashMap<[u8; CHUNK_ID_LEN], (u64, u32)>;

/// A session's chunking state: keys and sizes, the previous version's
/// chunks, the digest worker and the read buffers it hands back, reused
/// from file to file. (The chunks the session stored are its chunk
/// index's: `SessionChunks`.)
pub(crate) struct Chunking {
    keys: Arc<ChunkKeys>,
    params: ChunkParams,
    /// The previous version's chunks, for the file stored at this path
    /// next (`update`).
    reuse: Option<(Vec<u8>, ChunkMap)>,
    /// The digest worker and its buffers, once a file is chunked.
    digester: Option<Digester>,
    /// A small file's bytes, read whole before they are stored or found.
    small: Vec<u8>,
}

impl Chunking {
    pub(crate) fn new(
        content_key: &ContentKey,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        params: ChunkParams,
    ) -> Chunking {
        Chunking {
            keys: Arc::new(ChunkKeys::derive(content_key, archive_id)),
            params,
            reuse: None,
            digester: None,
            small: Vec::new(),
        }
    }

    /// Whether a file of `size_hint` bytes, neither linked nor sparse, is
    /// stored as chunks: from the smallest chunk size on.
    pub(crate) fn chunks(&self, size_hint: u64) -> bool {
        size_hint >= self.params.min() as u64
    }

    /// Whether a file of `size_hint` bytes, neither linked nor sparse, is
    /// one chunk of its own: not empty, below the smallest chunk size.
    fn small(&self, size_hint: u64) -> bool {
        size_hint > 0 && size_hint < self.params.min() as u64
    }

    /// Where the previous version's chunk `id` lies, if it had one.
    fn reused(&self, id: &[u8; CHUNK_ID_LEN]) -> Option<(u64, u32)> {
        self.reuse.as_ref().and_then(|(_, map)| map.get(id)).copied()
    }
}

/// The buffer being read and cut: `buf[..held]` holds the file's bytes
/// from offset `buf_start`, the first `carry` of them the open chunk's
/// bytes from the buffer before; `ends` the chunk ends found in it.
#[derive(Default)]
struct Cut {
    buf: Vec<u8>,
    buf_start: u64,
    carry: usize,
    held: usize,
    ends: CutPoints,
}

/// One file's chunks so far.
struct FileChunks {
    list: Vec<ChunkRef>,
    /// File offset where the next chunk starts (after the listed ones).
    start: u64,
    /// Whether the file is large enough for pages of its own (half a page).
    large: bool,
    /// Whether a new chunk of the file was stored (a large file's first
    /// starts a page).
    started_page: bool,
    /// The file's SHA-256, once its last buffer is digested.
    sha256: Option<[u8; 32]>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Offers the chunks of the version of `path` stored before (its chunk
    /// list), for the file stored at `path` next: a chunk it still has is
    /// listed where it lies, not stored again. The next chunked file
    /// drops them, whatever its path.
    pub(crate) fn reuse_chunks(&mut self, path: &[u8], chunks: &[ChunkRef]) {
        let map = chunks.iter().map(|c| (c.id, (c.offset, c.len))).collect();
        self.chunking.reuse = Some((path.to_vec(), map));
    }

    /// Whether the next file, of `size_hint` bytes, goes through
    /// [`add_chunked_file`](Self::add_chunked_file).
    pub(super) fn chunks_file(&self, size_hint: u64, linked: bool, sparse: bool) -> bool {
        !linked && !sparse && self.chunking_allowed() && self.chunking.chunks(size_hint)
    }

    /// Whether the next file, of `size_hint` bytes, goes through
    /// [`add_small_file`](Self::add_small_file).
    pub(super) fn indexes_small_file(&self, size_hint: u64, linked: bool, sparse: bool) -> bool {
        !linked && !sparse && self.chunking_allowed() && self.chunking.small(size_hint)
    }

    /// Adds a regular file below the smallest chunk size (FORMAT.md
    /// §3.6b): one chunk, named by the keyed id of its bytes. A chunk an
    /// earlier session stored (the sessions an append follows) is named
    /// by a one-chunk list; otherwise the file is stored whole in the
    /// small files' pages, as before chunking, and goes in the session's
    /// chunk index (once: a copy from earlier in the session keeps its
    /// place). A file that turns out to reach the
    /// smallest chunk size is chunked after all. Returns its length; the
    /// path is checked already.
    pub(super) fn add_small_file(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        size_hint: u64,
        content: &mut dyn Read,
    ) -> Result<u64> {
        let min = self.chunking.params.min();
        let mut bytes = std::mem::take(&mut self.chunking.small);
        bytes.resize(min, 0);
        let read = read_full(content, &mut bytes).map_err(Error::from_reader(Error::READING_CONTENT));
        let stored = match read {
            // It grew to a chunk's size: the bytes read come first.
            Ok(n) if n == min => {
                let mut whole = io::Cursor::new(&bytes[..]).chain(content);
                self.add_chunked_file(path, meta, size_hint.max(min as u64), &mut whole)
            }
            Ok(n) => self.store_small(path, meta, &bytes[..n]).map(|()| n as u64),
            Err(e) => Err(e),
        };
        self.chunking.small = bytes;
        stored
    }

    /// Stores the whole small file `bytes`, or names the chunk of the same
    /// bytes stored already.
    fn store_small(&mut self, path: &[u8], meta: &Metadata, bytes: &[u8]) -> Result<()> {
        if let Some(p) = &self.output.progress {
            p.bytes_in.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        let size = bytes.len() as u64;
        let sha256: [u8; 32] = Sha256::digest(bytes).into();
        let kind = EntryKind::File { size, sha256 };
        let at = self.page_start + self.page.len() as u64;
        if bytes.is_empty() {
            // It was empty after all: nothing to name.
            return self.push_entry(path, meta, kind, Some(Extent::whole(at, 0, false)), None);
        }
        let id = *ChunkIdHasher::id_of(&self.chunking.keys, bytes).as_bytes();
        let len = bytes.len() as u32;
        // Only an earlier session's copy is named. A copy from earlier in
        // this session lies behind the walk's place in the stream (files
        // are stored in path order), so each one would cost every later
        // extract and verify a pass that opens the copy's page again
        // (100,000 copies of one file: 110 s against 3.3 s); a copy from
        // an earlier session is met in order (a renamed or copied
        // directory) and costs a pass at most.
        let known = match self.chunk_index.find(&id)? {
            Some(_) => None,
            None => self.stored_chunk(&id)?,
        };
        if let Some(chunk) = known.filter(|e| e.len == len) {
            let list = [ChunkRef { offset: chunk.offset, len, id }];
            self.append_to_pages(&encode_chunk_list(&list), false)?;
            let extent = Extent { offset: at, size, linked: false, chunks: 1 };
            return self.push_entry(path, meta, kind, Some(extent), None);
        }
        // As `add_file` would: a file of half a page or more starts one.
        let large = size >= (self.tuning.page_size / 2) as u64;
        if large && !self.page.is_empty() {
            self.flush_page()?;
        }
        let offset = self.page_start + self.page.len() as u64;
        self.append_to_pages(bytes, large)?;
        self.chunk_index.record(id, offset, len)?;
        self.push_entry(path, meta, kind, Some(Extent::whole(offset, size, false)), None)
    }

    /// Adds a regular file as chunks, then its chunk list; returns its
    /// length. The path is checked already.
    pub(super) fn add_chunked_file(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        size_hint: u64,
        content: &mut dyn Read,
    ) -> Result<u64> {
        if self.chunking.reuse.as_ref().is_some_and(|(p, _)| p != path) {
            self.chunking.reuse = None;
        }
        let large = size_hint >= (self.tuning.page_size / 2) as u64;
        let stored = self.store_chunks(content, large);
        self.chunking.reuse = None;
        let (list, size, sha256) = stored?;
        let extent = if list.is_empty() {
            // The file was empty after all: nothing to list.
            Extent::whole(self.page_start + self.page.len() as u64, 0, false)
        } else {
            let offset = self.page_start + self.page.len() as u64;
            self.append_to_pages(&encode_chunk_list(&list), false)?;
            let count =
                u32::try_from(list.len()).map_err(|_| Error::malformed("chunk list", "too many chunks"))?;
            Extent { offset, size, linked: false, chunks: count }
        };
        self.push_entry(path, meta, EntryKind::File { size, sha256 }, Some(extent), None)?;
        Ok(size)
    }

    /// Reads `content` in buffers of [`read_len`], cutting each where the
    /// chunker says and handing it to the digest worker (the chunk ids and
    /// the file's SHA-256); stores or finds the chunks of each buffer that
    /// comes back, in order. Returns the list, the length and the SHA-256.
    fn store_chunks(
        &mut self,
        content: &mut dyn Read,
        large: bool,
    ) -> Result<(Vec<ChunkRef>, u64, [u8; 32])> {
        if self.chunking.digester.is_none() {
            let keys = Arc::clone(&self.chunking.keys);
            self.chunking.digester = Some(Digester::new(keys, DIGEST_DEPTH)?);
        }
        // Nothing of an earlier file, even one a panic cut short.
        self.digester().discard();
        let mut file = FileChunks { list: Vec::new(), start: 0, large, started_page: false, sha256: None };
        let stored = self.read_and_store(content, &mut file);
        if stored.is_err() {
            self.digester().discard();
        }
        stored?;
        let sha256 = file.sha256.expect("the last buffer digested");
        Ok((file.list, file.start, sha256))
    }

    fn read_and_store(&mut self, content: &mut dyn Read, file: &mut FileChunks) -> Result<()> {
        let keys = Arc::clone(&self.chunking.keys);
        let mut chunker = Chunker::new(&keys, self.chunking.params);
        let len = read_len(&self.chunking.params);
        let mut cut = Cut { buf: self.digester().buffer(len), ..Cut::default() };
        loop {
            let room = cut.buf.len() - cut.carry;
            let n = read_full(content, &mut cut.buf[cut.carry..])
                .map_err(Error::from_reader(Error::READING_CONTENT))?;
            if let Some(p) = &self.output.progress {
                p.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
            }
            chunker.feed(&cut.buf[cut.carry..cut.carry + n], &mut cut.ends);
            cut.held = cut.carry + n;
            // A short read is the content's end.
            if n < room {
                break;
            }
            self.hand_to_digester(&mut cut, file, false)?;
        }
        chunker.finish(&mut cut.ends);
        self.hand_to_digester(&mut cut, file, true)?;
        while file.sha256.is_none() {
            self.store_digested(file)?;
        }
        Ok(())
    }

    /// Hands the buffer `cut` read, with the chunks that end in it, to the
    /// digest worker, and (but for the `last`) starts the next buffer with
    /// the bytes of the chunk still open. A whole file in one buffer is
    /// digested here.
    fn hand_to_digester(&mut self, cut: &mut Cut, file: &mut FileChunks, last: bool) -> Result<()> {
        let (mut ends, ids) = self.digester().lists();
        ends.extend(cut.ends.0.drain(..).map(|end| (end - cut.buf_start) as usize));
        let whole = ends.last().copied().unwrap_or(0);
        // Room first, so that the next buffer is the one given back.
        while !self.digester().has_room() {
            self.store_digested(file)?;
        }
        let buf = if last {
            std::mem::take(&mut cut.buf)
        } else {
            let mut next = self.digester().buffer(cut.buf.len());
            next[..cut.held - whole].copy_from_slice(&cut.buf[whole..cut.held]);
            std::mem::replace(&mut cut.buf, next)
        };
        let (first, new) = (cut.buf_start == 0 && cut.carry == 0, cut.carry..cut.held);
        let job = DigestJob { buf, ends, new, ids, first, last };
        if first && last {
            let done = self.digester().digest_here(job);
            self.store_done(file, done)?;
        } else {
            self.digester().submit(job);
        }
        cut.carry = cut.held - whole;
        cut.held = cut.carry;
        cut.buf_start += whole as u64;
        Ok(())
    }

    fn digester(&mut self) -> &mut Digester {
        self.chunking.digester.as_mut().expect("started for the file")
    }

    /// Stores or finds the chunks of the oldest buffer in flight.
    fn store_digested(&mut self, file: &mut FileChunks) -> Result<()> {
        let done = self.digester().pop().expect("a buffer in flight");
        self.store_done(file, done)
    }

    /// Stores or finds the chunks of `done`, and recycles its buffer.
    fn store_done(&mut self, file: &mut FileChunks, done: Digested) -> Result<()> {
        let stored = self.store_found(file, &done);
        file.sha256 = done.sha256;
        self.digester().recycle(done);
        stored
    }

    /// Stores or finds the chunks `done` holds.
    fn store_found(&mut self, file: &mut FileChunks, done: &Digested) -> Result<()> {
        let mut start = 0;
        for (&end, &id) in done.ends.iter().zip(&done.ids) {
            let bytes = &done.buf[start..end];
            start = end;
            let len = bytes.len() as u32;
            let known = match self.chunking.reused(&id) {
                Some(found) => Some(found),
                // Stored earlier in this session, or by an earlier session
                // (an append's chunk indexes).
                None => match self.chunk_index.find(&id)? {
                    Some(e) => Some((e.offset, e.len)),
                    None => self.stored_chunk(&id)?.map(|e| (e.offset, e.len)),
                },
            };
            let offset = match known {
                Some((offset, known_len)) if known_len == len => offset,
                _ => {
                    // A large file's new chunks start a page, as its bytes
                    // would stored whole.
                    if file.large && !std::mem::replace(&mut file.started_page, true) && !self.page.is_empty()
                    {
                        self.flush_page()?;
                    }
                    let offset = self.page_start + self.page.len() as u64;
                    self.append_to_pages(bytes, file.large)?;
                    self.chunk_index.record(id, offset, len)?;
                    offset
                }
            };
            file.list.push(ChunkRef { offset, len, id });
            file.start += u64::from(len);
        }
        Ok(())
    }

    /// Appends `bytes` to the data stream, handing each full page to the
    /// sealing workers, with the page sizes of `add_file`: a large file's
    /// bytes fill pages of `page_size`, a smaller file's share the small
    /// files' pages (grown past `page_size` only when they compress).
    fn append_to_pages(&mut self, mut bytes: &[u8], large: bool) -> Result<()> {
        let page_size = self.tuning.page_size;
        while !bytes.is_empty() {
            if self.page.len() == page_size
                && self.page_limit > page_size
                && looks_incompressible(self.page.bytes())
            {
                self.page_limit = page_size;
            }
            if large {
                self.page_limit = page_size;
            }
            if self.page.len() >= self.page_limit {
                self.flush_page()?;
                if large {
                    self.page_limit = page_size;
                }
            }
            // A page stops at `page_size` once, to be probed there.
            let stop = if self.page.len() < page_size { page_size } else { self.page_limit };
            let hint = bytes.len() as u64;
            self.page.fill(&mut bytes, stop, hint).expect("a slice reads without error");
        }
        Ok(())
    }
}

impl<W: Write> ArchiveWriter<W> {
    /// Appends `bytes` to the data stream with no entry naming them, as
    /// an attacker holding the key could (a forged chunk list); returns
    /// where they start.
    #[cfg(test)]
    pub(crate) fn append_raw(&mut self, bytes: &[u8]) -> u64 {
        let at = self.page_start + self.page.len() as u64;
        self.append_to_pages(bytes, false).unwrap();
        at
    }
}

/// Reads until `buf` is full or the content ends; returns how many bytes.
fn read_full(content: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match content.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read};

    use super::*;
    use crate::archive::Archive;
    use crate::crypto::{KdfParams, Password};
    use crate::format::{chunk_key, ChunkEntry, SparseMap};
    use crate::session::chunk_index::SessionChunks;
    use crate::session::CreateOptions;
    use crate::test_data::random;

    fn password() -> Password {
        Password::from("chunks")
    }

    fn options(params: ChunkParams) -> CreateOptions {
        CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(64 << 10).chunk_sizes(params)
    }

    fn small_chunks() -> ChunkParams {
        ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap()
    }

    fn read_all(archive: &Archive<Cursor<Vec<u8>>>, path: &str) -> Vec<u8> {
        let mut got = Vec::new();
        archive.open_file(path).unwrap().read_to_end(&mut got).unwrap();
        got
    }

    #[test]
    fn identical_files_in_one_create_are_stored_once() {
        const LEN: usize = 2 << 20;
        for params in [small_chunks(), ChunkParams::default()] {
            let data = random(LEN, 1);
            let meta = Metadata::new(0o644, 0, 0, 0, 0);
            let mut w = ArchiveWriter::new(Vec::new(), &password(), options(params)).unwrap();
            w.add_file("a", &meta, LEN as u64, &data[..]).unwrap();
            w.add_file("b", &meta, LEN as u64, &data[..]).unwrap();
            // A copy that differs in one byte in the middle stores about one chunk.
            let mut edited = data.clone();
            edited[LEN / 2] ^= 1;
            w.add_file("c", &meta, LEN as u64, &edited[..]).unwrap();
            let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
            let stored = archive.content_bytes();
            // One copy, three lists (44 bytes a chunk) and the edited
            // chunk; a second copy would double it.
            let chunks = (LEN / params.min()) as u64;
            let bound = LEN as u64 + 3 * 44 * chunks + 2 * params.max() as u64;
            assert!(
                (LEN as u64..bound).contains(&stored),
                "{params:?}: {stored} bytes stored for three 2 MiB files, want one copy ({LEN}..{bound})"
            );
            assert!(read_all(&archive, "a") == data && read_all(&archive, "b") == data);
            assert!(read_all(&archive, "c") == edited);
            let a = archive.find("a").unwrap().unwrap();
            let list = archive.chunk_list(&a).unwrap().unwrap();
            assert!(list.len() > 1, "{params:?}: {} chunks", list.len());
        }
    }

    /// Yields its bytes, then fails.
    struct FailsAfter(Cursor<Vec<u8>>);

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(io::Error::other("the disk went away")),
                n => Ok(n),
            }
        }
    }

    #[test]
    fn files_about_the_read_size_read_back_whole_after_a_file_that_failed() {
        let params = small_chunks();
        let len = read_len(&params);
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options(params)).unwrap();
        // Half way through its second buffer, with the first in flight.
        let failing = FailsAfter(Cursor::new(random(len * 3 / 2, 99)));
        let error = w.add_file("0-failed", &meta, 3 * len as u64, failing).unwrap_err();
        assert!(error.to_string().contains("reading a file's content"), "{error}");
        let sizes = [0, params.min(), len - 1, len, len + 1, 2 * len, 2 * len + params.max() / 2];
        let files: Vec<Vec<u8>> = sizes.iter().zip(40..).map(|(&n, seed)| random(n, seed)).collect();
        for (i, data) in files.iter().enumerate() {
            // Hints that are wrong both ways: only the content's end counts.
            let hint = if i % 2 == 0 { 2 * len } else { params.min() } as u64;
            w.add_file(format!("f{i}"), &meta, hint, &data[..]).unwrap();
        }
        let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        assert!(archive.find("0-failed").unwrap().is_none());
        for (i, data) in files.iter().enumerate() {
            assert!(read_all(&archive, &format!("f{i}")) == *data, "file {i}, {} bytes", data.len());
        }
    }

    #[test]
    fn small_linked_and_sparse_files_stay_whole() {
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options(small_chunks())).unwrap();
        let big = random(50 << 10, 2);
        w.add_file("a-small", &meta, 1000, &big[..1000]).unwrap();
        w.add_file("b-chunked", &meta, big.len() as u64, &big[..]).unwrap();
        w.add_linked_file("c-linked", &meta, big.len() as u64, &big[..]).unwrap();
        w.add_hardlink("d-link", &meta, "c-linked").unwrap();
        let map = SparseMap::new(vec![(0, 20 << 10), (40 << 10, 10 << 10)], 60 << 10).unwrap();
        w.add_sparse_file("e-sparse", &meta, map, 60 << 10, false, &big[..30 << 10]).unwrap();
        // A hint below the smallest chunk keeps a file whole, whatever follows.
        w.add_file("f-no-hint", &meta, 0, &big[..]).unwrap();
        // A file that turns out empty is stored whole, with no list.
        w.add_file("g-shrank", &meta, 1 << 20, &b""[..]).unwrap();
        let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        for (path, chunked) in [
            ("a-small", false),
            ("b-chunked", true),
            ("c-linked", false),
            ("d-link", false),
            ("e-sparse", false),
            ("f-no-hint", false),
            ("g-shrank", false),
        ] {
            let entry = archive.find(path).unwrap().unwrap();
            assert_eq!(entry.extent.unwrap().chunks > 0, chunked, "{path}");
        }
        assert!(read_all(&archive, "b-chunked") == big);
        assert!(read_all(&archive, "g-shrank").is_empty());
    }

    /// FORMAT.md §10: a small file's chunk id is the keyed BLAKE3 of its
    /// bytes (no id of its own kind), under the vectors' keys (content key
    /// 00 01 .. 1f, archive id a0 a1 .. af); the session's chunk index
    /// finds the file's stored bytes by it.
    #[test]
    fn a_small_files_id_is_the_known_answer_and_finds_its_bytes() {
        use crate::keys::KeySet;

        let content: &[u8] = b"revault-lockbox chunker test vector";
        let want = "8e774caf874dc63e2bf4baca42303a1db69f31e891ca93a01dd6a6347b4436e6";
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let archive_id: [u8; 16] = std::array::from_fn(|i| 0xa0 + i as u8);
        let content_key = ContentKey::from_bytes(&key);
        let id = ChunkIdHasher::id_of(&ChunkKeys::derive(&content_key, &archive_id), content);
        assert_eq!(id.to_string(), want);

        let keys: KeySet = (&password()).into();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w =
            ArchiveWriter::with_known_keys(Vec::new(), &keys, options, (archive_id, &content_key)).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        w.add_file("a", &meta, 35, content).unwrap();
        w.add_file("b", &meta, 35, content).unwrap();
        let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        let a = archive.find("a").unwrap().unwrap().extent.unwrap();
        let entry = ChunkEntry { key: chunk_key(id.as_bytes()), offset: a.offset, len: 35 };
        assert_eq!((a.chunks, archive.find_chunk(id.as_bytes()).unwrap()), (0, Some(entry)));
        // A copy in the same session is stored again (a reference back
        // would cost every walk a pass), and the index keeps the first.
        let b = archive.find("b").unwrap().unwrap().extent.unwrap();
        assert_eq!((b.chunks, b.offset), (0, a.offset + 35));
        assert_eq!(archive.chunk_entries().unwrap().count(), 1);
        assert!(read_all(&archive, "b") == content);
    }

    #[test]
    fn chunks_spilled_past_the_memory_cap_are_still_found_and_indexed() {
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options(small_chunks())).unwrap();
        // 8 chunks in memory: 1 MiB of 4 KiB-average chunks spills about 30
        // runs, merged twice over (runs of 4, then of 16 spills).
        w.chunk_index = SessionChunks::with_cap(8);
        let data = random(1 << 20, 3);
        w.add_file("a", &meta, data.len() as u64, &data[..]).unwrap();
        w.add_file("b", &meta, data.len() as u64, &data[..]).unwrap();
        let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        let stored = archive.content_bytes();
        assert!(stored < data.len() as u64 * 11 / 10, "{stored} bytes stored: the copy was stored again");
        assert!(read_all(&archive, "a") == data && read_all(&archive, "b") == data);
        let list = archive.chunk_list(&archive.find("a").unwrap().unwrap()).unwrap().unwrap();
        assert!(list.len() > 16 * 8, "{} chunks", list.len());
        for chunk in &list {
            let entry = ChunkEntry { key: chunk_key(&chunk.id), offset: chunk.offset, len: chunk.len };
            assert_eq!(archive.find_chunk(&chunk.id).unwrap(), Some(entry));
        }
        let mut distinct: Vec<_> = list.iter().map(|c| c.id).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(archive.chunk_entries().unwrap().count(), distinct.len());
    }
}
