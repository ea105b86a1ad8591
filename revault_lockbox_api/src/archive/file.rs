//! Reading one file's content: [`EntryReader`], `Read + Seek` over the
//! pages that hold it.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use super::content::ReadAhead;
use super::{no_page, page_in};
use crate::archive::Archive;
use crate::crypto::open_data_page;
use crate::error::{EntryPath, Error, Result};
use crate::format::{
    chunking_allowed, decode_chunk_list, ChunkRef, Entry, Extent, PageRecord, PagesLeaf, DIGEST_LEN,
    MAX_PAGE_PLAIN_LEN,
};
use crate::index::open_unit;
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

#[cfg(test)]
mod tests;

impl<S: ReadAt> Archive<S> {
    /// A reader over one file's content (`Read + Seek`); a hard link reads
    /// the content it shares. Reads the index nodes on the way to `path`,
    /// then only the pages of that content. Each page is authenticated
    /// before any of its bytes are returned; the SHA-256 of the whole file
    /// is checked when it is read through to its end from the start. Read
    /// that way, a file whose bytes go on past their first page has its
    /// pages opened and hashed ahead on the archive's page workers
    /// ([`OpenOptions::threads`](crate::OpenOptions::threads),
    /// [`pages_in_flight`](crate::OpenOptions::pages_in_flight)) from its
    /// first read; a seek ends that and reads page by page. A file within
    /// one page is read on the calling thread, and so is a chunked file
    /// (FORMAT.md §3.5c), through its chunk list, page by page.
    ///
    /// ```
    /// use std::io::{Read, Seek, SeekFrom};
    /// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Password};
    /// use revault_lockbox_api::create::Metadata;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let pw = Password::from("pw");
    /// # let mut w = ArchiveWriter::new(Vec::new(), &pw, CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS))?;
    /// # w.add_file("notes.txt", &Metadata::new(0o644, 0, 0, 0, 0), 11, &b"hello world"[..])?;
    /// # let bytes = w.finish()?;
    /// let archive = Archive::open(std::io::Cursor::new(bytes), &pw)?;
    /// let mut file = archive.open_file("notes.txt")?;
    /// file.seek(SeekFrom::Start(6))?;
    /// let mut tail = String::new();
    /// file.read_to_string(&mut tail)?;
    /// assert_eq!(tail, "world");
    /// # Ok(()) }
    /// ```
    pub fn open_file(&self, path: impl AsRef<[u8]>) -> Result<EntryReader<'_, S>> {
        let path = path.as_ref();
        let entry = self.find(path)?.ok_or_else(|| Error::NotFound { path: path.into() })?;
        Ok(self.content_reader(&entry, None)?.reading_ahead())
    }

    /// A reader over the content of `entry` (a file or hard link read from
    /// this archive), starting from the page-table leaf `leaf` when the
    /// previous reader ended there (a walk reading file after file).
    pub(crate) fn content_reader(
        &self,
        entry: &Entry,
        leaf: Option<PagesLeaf>,
    ) -> Result<EntryReader<'_, S>> {
        let (Some(extent), Some((size, sha256))) = (entry.extent, entry.content()) else {
            return Err(Error::NotAFile { path: entry.path.as_slice().into() });
        };
        let mut chunks = self.chunk_list(entry)?;
        let mut start = extent.offset;
        // Chunks that follow one another in the stream (a file stored
        // anew: none of its chunks was found elsewhere) read as one run,
        // with the pages opened ahead as for a file stored whole.
        if let Some(list) = chunks.as_ref().filter(|list| list.windows(2).all(|w| w[0].end() == w[1].offset))
        {
            start = list.first().map_or(start, |c| c.offset);
            chunks = None;
        }
        let pieces = match (&chunks, entry.sparse_map()) {
            (Some(chunks), _) => {
                let mut logical = 0;
                let pieces = chunks.iter().map(|c| {
                    logical += u64::from(c.len);
                    (logical - u64::from(c.len), u64::from(c.len), c.offset)
                });
                Some(pieces.collect())
            }
            (None, Some(map)) => {
                let mut stream = extent.offset;
                let pieces = map.segments().iter().map(|&(offset, len)| {
                    stream += len;
                    (offset, len, stream - len)
                });
                Some(pieces.collect())
            }
            (None, None) => None,
        };
        Ok(EntryReader {
            archive: self,
            path: entry.path.clone(),
            start,
            size,
            pieces,
            chunked: chunks.is_some(),
            pos: 0,
            hasher: Some(ContentHasher::for_entry(entry)),
            sha256: *sha256,
            leaf,
            page: None,
            ahead: None,
            may_read_ahead: false,
            stored_only: false,
        })
    }
}

/// Opens data page `number` of `record`: through the cache or not.
pub(crate) type OpenPage<'a> = dyn FnMut(u64, &PageRecord) -> Result<Arc<Vec<u8>>> + 'a;

impl<S: ReadAt> Archive<S> {
    /// A chunked file's chunk list (FORMAT.md §3.5c), read from the data
    /// stream and checked whole against `entry`; `None` for an entry whose
    /// content is stored whole. The list is held in memory: 44 bytes a
    /// chunk, about 176 KiB for a 1 GiB file at the default chunk size.
    pub(crate) fn chunk_list(&self, entry: &Entry) -> Result<Option<Vec<ChunkRef>>> {
        entry.extent.map_or(Ok(None), |extent| self.chunk_list_of(&extent))
    }

    /// [`chunk_list`](Self::chunk_list) of the file whose content `extent` names.
    pub(crate) fn chunk_list_of(&self, extent: &Extent) -> Result<Option<Vec<ChunkRef>>> {
        self.chunk_list_through(extent, &mut |number, record| self.page(number, record))
    }

    /// [`chunk_list_of`](Self::chunk_list_of), the list's pages opened by
    /// `page` (a walk keeps the last one instead of filling the cache).
    pub(crate) fn chunk_list_through(
        &self,
        extent: &Extent,
        page: &mut OpenPage<'_>,
    ) -> Result<Option<Vec<ChunkRef>>> {
        let Some((count, len)) = extent.chunk_list() else { return Ok(None) };
        if !chunking_allowed(self.version()) {
            return Err(Error::malformed("entry", "a chunked file in an archive of version 3"));
        }
        if extent.end() > self.root.stream_len {
            return Err(Error::malformed("chunk list", "it lies past the data stream"));
        }
        // Grown as the list's pages authenticate, not from its count.
        let mut bytes = Vec::with_capacity(len.min(u64::from(MAX_PAGE_PLAIN_LEN)) as usize);
        let mut leaf: Option<PagesLeaf> = None;
        while (bytes.len() as u64) < len {
            let at = extent.offset + bytes.len() as u64;
            let hit = match leaf.as_ref().and_then(|l| page_in(l, at)) {
                Some(hit) => hit,
                None => {
                    let found = self.pages_leaf_at(at)?;
                    let hit = page_in(&found, at).ok_or_else(no_page)?;
                    leaf = Some(found);
                    hit
                }
            };
            let (number, record, page_start) = hit;
            let plain = page(number, &record)?;
            let from = (at - page_start) as usize;
            let n = (plain.len() - from).min((len - bytes.len() as u64) as usize);
            bytes.extend_from_slice(&plain[from..from + n]);
        }
        Ok(Some(decode_chunk_list(&bytes, extent.offset, count, extent.size)?))
    }

    /// Reads and opens data page `number`, through a small cache.
    pub(crate) fn page(&self, number: u64, record: &PageRecord) -> Result<Arc<Vec<u8>>> {
        self.pages.get_or_open(number, || self.page_uncached(number, record))
    }

    /// Reads and opens data page `number`, leaving the cache alone.
    pub(crate) fn page_uncached(&self, number: u64, record: &PageRecord) -> Result<Arc<Vec<u8>>> {
        let what = || format!("page {number}");
        let keys = self.keys_for(number)?;
        let open = |bytes| open_data_page(keys, &self.archive_id, number, record, bytes);
        Ok(Arc::new(open_unit(&self.src, record.offset, record.unit_len(), what, open)?))
    }
}

/// One file's content as `Read + Seek`; see [`Archive::open_file`].
pub struct EntryReader<'a, S> {
    archive: &'a Archive<S>,
    path: Vec<u8>,
    /// Data-stream offset of the first byte (of a chunked file's list).
    start: u64,
    /// Logical length.
    size: u64,
    /// Where the content lies when not stored whole from `start`: a
    /// sparse file's data segments or a chunked file's chunks, each as
    /// logical offset, length and data-stream offset, in logical order.
    pieces: Option<Vec<(u64, u64, u64)>>,
    /// Whether the pieces are chunks, which may lie anywhere before the
    /// list: such a file is read page by page, not ahead.
    chunked: bool,
    pos: u64,
    /// Hashes the stored bytes read sequentially from 0 (not the holes);
    /// dropped on the first seek.
    hasher: Option<ContentHasher>,
    sha256: [u8; DIGEST_LEN],
    /// The page-table leaf last used, so that a sequential read looks up
    /// the table once per leaf, not once per page.
    leaf: Option<PagesLeaf>,
    /// The page last read: number's record start, and its plaintext.
    page: Option<(u64, Arc<Vec<u8>>)>,
    /// The file's pages, opened ahead (and the file hashed) on the
    /// workers, while the read goes on in order from the start.
    ahead: Option<ReadAhead<'a, S>>,
    /// Whether the first read may start reading ahead.
    may_read_ahead: bool,
    /// Whether a read skips the holes instead of reading zeros from them.
    stored_only: bool,
}

impl<S> EntryReader<'_, S> {
    /// Opens the pages ahead when the file is read in order from its
    /// start and goes on past its first page: for readers that go through
    /// whole files, not the short reads at an offset a mount makes.
    pub(crate) fn reading_ahead(mut self) -> Self {
        self.may_read_ahead = true;
        self
    }

    /// Reads a sparse file's stored bytes only, its data segments back to
    /// back, as the data stream holds them: what a rewrite copies, at the
    /// cost of what is stored, however large the holes (FORMAT.md §3.5b;
    /// read through them, a 1 PiB hole kept `compact` busy for hours).
    /// The digest is still checked at the end.
    pub(crate) fn stored_only(mut self) -> Self {
        self.stored_only = true;
        self
    }

    /// The page-table leaf last used, for the next reader.
    pub(crate) fn into_leaf(self) -> Option<PagesLeaf> {
        self.leaf
    }

    /// The file's length.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    fn check_digest(&mut self) -> io::Result<()> {
        let digest = match (self.hasher.take(), self.ahead.take()) {
            (Some(h), _) => h.finish_entry(),
            (None, Some(ahead)) => ahead.digest().ok_or_else(|| io::Error::other(no_page()))?,
            (None, None) => return Ok(()),
        };
        if digest != self.sha256 {
            return Err(io::Error::other(Error::ChecksumMismatch { path: EntryPath(self.path.clone()) }));
        }
        Ok(())
    }
}

/// What lies at a reader's position: a hole of this many bytes, or stored
/// bytes at this data-stream offset, so many of them.
enum Located {
    Hole(u64),
    Data(u64, u64),
}

impl<S> EntryReader<'_, S> {
    /// What lies at the position; `None` at or past the end.
    fn locate_from_here(&self) -> Option<Located> {
        (self.pos < self.size).then(|| self.locate())
    }

    /// What lies at the position, which is before the end.
    fn locate(&self) -> Located {
        let Some(pieces) = &self.pieces else {
            return Located::Data(self.start + self.pos, self.size - self.pos);
        };
        let next = pieces.partition_point(|s| s.0 <= self.pos);
        if let Some(&(offset, len, stream)) = next.checked_sub(1).map(|i| &pieces[i]) {
            if self.pos < offset + len {
                return Located::Data(stream + self.pos - offset, offset + len - self.pos);
            }
        }
        let hole_end = pieces.get(next).map_or(self.size, |s| s.0);
        Located::Hole(hole_end - self.pos)
    }
}

impl<S: ReadAt> EntryReader<'_, S> {
    /// Copies into `buf` the bytes at stream offset `at`, at most `len`
    /// of them; returns how many.
    fn copy_at(&mut self, at: u64, len: u64, buf: &mut [u8]) -> Result<usize> {
        if self.may_read_ahead && self.hasher.is_some() && !self.chunked {
            // Decided once, at the first bytes read (so never while reading
            // ahead already).
            self.may_read_ahead = false;
            let end = self.stored_end();
            let (_, record, page_start) = self.locate_page(at)?;
            if end > page_start + u64::from(record.plain_len) {
                self.ahead = Some(ReadAhead::new(self.archive, at, end, &mut self.hasher)?);
            }
        }
        let copy = |(page_start, plain): (u64, &[u8]), buf: &mut [u8]| {
            let offset = (at - page_start) as usize;
            let n = (plain.len() - offset).min(len as usize).min(buf.len());
            buf[..n].copy_from_slice(&plain[offset..offset + n]);
            n
        };
        match &mut self.ahead {
            Some(ahead) => Ok(copy(ahead.page_at(at)?, buf)),
            None => {
                let (start, plain) = self.page_at(at)?;
                Ok(copy((start, &plain), buf))
            }
        }
    }

    /// Where a file stored in one run of the stream ends there (a sparse
    /// file's holes take no bytes).
    fn stored_end(&self) -> u64 {
        match &self.pieces {
            Some(pieces) => pieces.last().map_or(self.start, |&(_, len, stream)| stream + len),
            None => self.start + self.size,
        }
    }

    /// The page holding stream offset `at`, with its first byte's offset.
    fn page_at(&mut self, at: u64) -> Result<(u64, Arc<Vec<u8>>)> {
        if let Some((start, plain)) = &self.page {
            if (*start..*start + plain.len() as u64).contains(&at) {
                return Ok((*start, Arc::clone(plain)));
            }
        }
        let (number, record, start) = self.locate_page(at)?;
        let plain = self.archive.page(number, &record)?;
        self.page = Some((start, Arc::clone(&plain)));
        Ok((start, plain))
    }

    /// The page holding stream offset `at`: its number, record and first
    /// byte's offset, from the leaf last used when that leaf holds it.
    fn locate_page(&mut self, at: u64) -> Result<(u64, PageRecord, u64)> {
        if let Some(hit) = self.leaf.as_ref().and_then(|leaf| page_in(leaf, at)) {
            return Ok(hit);
        }
        let leaf = self.archive.pages_leaf_at(at)?;
        let hit = page_in(&leaf, at).ok_or_else(no_page)?;
        self.leaf = Some(leaf);
        Ok(hit)
    }
}

impl<S: ReadAt> Read for EntryReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut located = self.locate_from_here();
        while let (Some(Located::Hole(len)), true) = (&located, self.stored_only) {
            self.pos += len;
            located = self.locate_from_here();
        }
        let Some(located) = located else {
            self.check_digest()?;
            return Ok(0);
        };
        let n = match located {
            Located::Hole(len) => {
                let n = len.min(buf.len() as u64) as usize;
                buf[..n].fill(0);
                self.pos += n as u64;
                return Ok(n);
            }
            Located::Data(at, len) => self.copy_at(at, len, buf).map_err(io::Error::other)?,
        };
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl<S> Seek for EntryReader<'_, S> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target =
            target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before start"))?;
        if target != self.pos {
            self.hasher = None;
            self.ahead = None;
        }
        self.pos = target;
        Ok(target)
    }
}
