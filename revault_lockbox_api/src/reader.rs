//! [`Archive`]: opens an archive, authenticates its trailer and index, and
//! reads pages and entries on demand.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use crate::crypto::{unwrap_content_key, Password, SessionKeys};
use crate::format::{
    self, ArchiveId, DecodeError, Entry, EntryKind, Header, Index, KeySlot, PageRecord, Trailer,
    HEADER_PREFIX_LEN, TRAILER_LEN, VERSION,
};
use crate::pipeline::{decompress, open_data_page, OrderedPool};
use crate::{Error, Result, Tuning, WorkloadProfile};

/// An open archive: header, key slots, trailer and index authenticated,
/// data pages read only when asked for.
pub struct Archive<R> {
    src: R,
    archive_id: ArchiveId,
    header: Header,
    trailer: Trailer,
    index: Index,
    /// Keys of each write session, in the order of `index.sessions`.
    session_keys: Vec<Arc<SessionKeys>>,
    /// Offset of each page's first byte in the data stream, and one past the
    /// end: a file's bytes are found by binary search.
    page_starts: Vec<u64>,
    tuning: Tuning,
    cache: VecDeque<(u64, Arc<Vec<u8>>)>,
    file_len: u64,
}

impl<R> std::fmt::Debug for Archive<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("archive_id", &self.archive_id)
            .field("entries", &self.index.entries.len())
            .field("pages", &self.index.pages.len())
            .finish_non_exhaustive()
    }
}

fn read_at<R: Read + Seek>(src: &mut R, offset: u64, buf: &mut [u8], what: &str) -> Result<()> {
    src.seek(SeekFrom::Start(offset)).map_err(Error::stream("seeking in the archive"))?;
    src.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::tampered(format!("{what} (archive truncated)"))
        } else {
            Error::Stream { action: "reading the archive", source: e }
        }
    })
}

impl<R: Read + Seek> Archive<R> {
    /// Opens an archive with the [`WorkloadProfile::Balanced`] reading knobs.
    pub fn open(src: R, password: &Password) -> Result<Archive<R>> {
        Archive::open_with(src, password, WorkloadProfile::Balanced)
    }

    /// Opens an archive, tuning reads (threads, read-ahead, cache) for
    /// `profile`. Fails with [`Error::WrongPassword`] when no key slot opens,
    /// and [`Error::Tampered`] when the trailer or index do not authenticate.
    pub fn open_with(mut src: R, password: &Password, profile: WorkloadProfile) -> Result<Archive<R>> {
        let file_len = src.seek(SeekFrom::End(0)).map_err(Error::stream("seeking in the archive"))?;
        let mut prefix = [0u8; HEADER_PREFIX_LEN];
        if file_len < prefix.len() as u64 {
            return Err(DecodeError { what: "archive", why: "too short to be a lockbox archive" }.into());
        }
        read_at(&mut src, 0, &mut prefix, "header")?;
        let (mut header, header_slots_len) =
            Header::decode_prefix(&prefix).map_err(|e| match Header::peek_version(&prefix) {
                Some(found) if found != VERSION => Error::UnsupportedVersion { found, supported: VERSION },
                _ => Error::from(e),
            })?;
        if file_len < (HEADER_PREFIX_LEN + TRAILER_LEN) as u64 {
            return Err(Error::tampered("trailer (archive truncated)"));
        }
        let trailer_offset = file_len - TRAILER_LEN as u64;
        let mut raw = [0u8; TRAILER_LEN];
        read_at(&mut src, trailer_offset, &mut raw, "trailer")?;
        let trailer = Trailer::decode(&raw, trailer_offset)
            .map_err(|e| Error::tampered(format!("trailer ({})", e.why)))?;
        if trailer.archive_id != header.archive_id {
            return Err(Error::tampered("trailer (belongs to another archive)"));
        }
        let mut slots = vec![0u8; trailer.key_slots_len as usize];
        read_at(&mut src, trailer.key_slots_offset, &mut slots, "key slots")?;
        header.slots = format::decode_key_slots(&slots)?;
        if !header.slots.iter().any(|s| matches!(s, KeySlot::Password(_))) {
            return Err(Error::InvalidInput("archive has no password slot".into()));
        }
        let content_key = unwrap_content_key(&header, password).map_err(|_| Error::WrongPassword)?;
        let last_keys = SessionKeys::derive(&content_key, &trailer.session_salt);
        let body = trailer.body();
        last_keys.check_trailer_tag(&body, &trailer.tag).map_err(|_| Error::tampered("trailer"))?;

        let mut sealed = vec![0u8; trailer.index_stored_len as usize];
        read_at(&mut src, trailer.index_offset, &mut sealed, "index")?;
        last_keys.open_index(&body, &mut sealed).map_err(|_| Error::tampered("index"))?;
        let plain = decompress(&sealed, trailer.index_plain_len as usize)
            .ok_or_else(|| Error::tampered("index (bad zstd frame)"))?;
        let index = Index::decode(&plain)?;
        // The header's own slot block ends where the first page (or the
        // index) starts: this binds the header's length field too.
        let data_start = (HEADER_PREFIX_LEN + header_slots_len) as u64;
        let first_sealed = index.pages.first().map_or(trailer.index_offset, |p| p.offset);
        let consistent = index.pages.len() as u64 == trailer.page_count
            && first_sealed == data_start
            && index.sessions.last().map(|s| s.salt) == Some(trailer.session_salt)
            && index.pages.last().is_none_or(|p| {
                p.offset.checked_add(u64::from(p.stored_len)).is_some_and(|end| end <= trailer.index_offset)
            });
        if !consistent {
            return Err(DecodeError { what: "index", why: "does not match the trailer" }.into());
        }
        let session_keys =
            index.sessions.iter().map(|s| Arc::new(SessionKeys::derive(&content_key, &s.salt))).collect();
        let mut page_starts = Vec::with_capacity(index.pages.len() + 1);
        let mut total = 0u64;
        page_starts.push(0);
        for p in &index.pages {
            total += u64::from(p.plain_len);
            page_starts.push(total);
        }
        Ok(Archive {
            src,
            archive_id: header.archive_id,
            header,
            trailer,
            index,
            session_keys,
            page_starts,
            tuning: profile.tuning(),
            cache: VecDeque::new(),
            file_len,
        })
    }

    /// Reads and opens data page `number`, through a small cache.
    pub(crate) fn page(&mut self, number: u64) -> Result<Arc<Vec<u8>>> {
        if let Some(pos) = self.cache.iter().position(|(n, _)| *n == number) {
            let hit = self.cache.remove(pos).expect("position is valid");
            self.cache.push_front(hit.clone());
            return Ok(hit.1);
        }
        let record = *self.page_record(number)?;
        let bytes = self.read_sealed(number, &record)?;
        let plain =
            Arc::new(open_data_page(self.keys_for(number), &self.archive_id, number, &record, bytes)?);
        self.cache.push_front((number, Arc::clone(&plain)));
        self.cache.truncate(self.tuning.page_cache.max(1));
        Ok(plain)
    }

    fn page_record(&self, number: u64) -> Result<&PageRecord> {
        usize::try_from(number)
            .ok()
            .and_then(|n| self.index.pages.get(n))
            .ok_or_else(|| Error::InvalidInput(format!("page {number} does not exist")))
    }

    fn keys_for(&self, page: u64) -> &Arc<SessionKeys> {
        &self.session_keys[self.index.session_of(page)]
    }

    fn read_sealed(&mut self, number: u64, record: &PageRecord) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; record.stored_len as usize];
        read_at(&mut self.src, record.offset, &mut bytes, &format!("page {number}"))?;
        Ok(bytes)
    }

    /// Opens the listed data pages (ascending) on worker threads, reading
    /// ahead at most `pages_in_flight` pages, and hands each plaintext to
    /// `sink` in order. Stops at the first error `sink` returns; a page that
    /// fails to open is passed to `sink` as its error.
    pub(crate) fn for_each_page(
        &mut self,
        pages: impl IntoIterator<Item = u64>,
        mut sink: impl FnMut(u64, Result<Vec<u8>>) -> Result<()>,
    ) -> Result<()> {
        let mut pool: OrderedPool<(u64, Result<Vec<u8>>)> = OrderedPool::new(self.tuning.threads);
        for number in pages {
            let record = *self.page_record(number)?;
            let keys = Arc::clone(self.keys_for(number));
            let id = self.archive_id;
            match self.read_sealed(number, &record) {
                Ok(bytes) => {
                    pool.submit(move || (number, open_data_page(&keys, &id, number, &record, bytes)))
                }
                Err(e) => pool.submit(move || (number, Err(e))),
            }
            while pool.in_flight() >= self.tuning.pages_in_flight {
                let (n, page) = pool.pop().expect("in flight");
                sink(n, page)?;
            }
        }
        while let Some((n, page)) = pool.pop() {
            sink(n, page)?;
        }
        Ok(())
    }

    /// The reading knobs in effect (from the profile given to `open_with`).
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// Runs `f` with the entries moved out of the archive, so that `f` can
    /// borrow them while reading pages, without a copy of the index.
    pub(crate) fn with_entries<T>(&mut self, f: impl FnOnce(&mut Self, &[Entry]) -> T) -> T {
        let entries = std::mem::take(&mut self.index.entries);
        let result = f(self, &entries);
        self.index.entries = entries;
        result
    }

    /// Number of data pages.
    pub(crate) fn page_count(&self) -> u64 {
        self.index.pages.len() as u64
    }

    /// Every entry, in archive order.
    pub fn entries(&self) -> &[Entry] {
        &self.index.entries
    }

    /// The entry stored under `path`, if any.
    pub fn find(&self, path: impl AsRef<[u8]>) -> Option<&Entry> {
        let path = path.as_ref();
        self.index.entries.iter().find(|e| e.path == path)
    }

    /// A reader over one file's content (`Read + Seek`). Hard links read
    /// their target's content. Each page is authenticated before any of its
    /// bytes are returned; the SHA-256 of the whole file is checked when it is
    /// read through to its end from the start.
    pub fn open_file(&mut self, path: impl AsRef<[u8]>) -> Result<EntryReader<'_, R>> {
        let path = path.as_ref();
        let not_found =
            || Error::InvalidInput(format!("{} is not a file in the archive", crate::writer::show(path)));
        let mut entry = self.find(path).ok_or_else(not_found)?;
        if let EntryKind::Hardlink { target } = &entry.kind {
            entry = self.find(target.clone()).ok_or_else(not_found)?;
        }
        let EntryKind::File { size, location, sha256 } = entry.kind.clone() else {
            return Err(not_found());
        };
        let start = self.page_starts[location.first_page as usize] + u64::from(location.offset);
        Ok(EntryReader {
            path: entry.path.clone(),
            archive: self,
            start,
            size,
            pos: 0,
            hasher: Some(sha2::Sha256::default()),
            sha256,
        })
    }

    /// Where file bytes at data-stream offset `at` are: page number and
    /// offset within it.
    pub(crate) fn locate(&self, at: u64) -> (u64, usize) {
        let page = self.page_starts.partition_point(|&s| s <= at) - 1;
        (page as u64, (at - self.page_starts[page]) as usize)
    }

    /// Offset in the data stream of page `page`'s first byte (`page` may be
    /// one past the last page).
    pub(crate) fn page_start(&self, page: u64) -> u64 {
        self.page_starts[page as usize]
    }

    /// Offset in the data stream of a file's first byte.
    pub(crate) fn stream_offset(&self, location: &format::FileLocation) -> u64 {
        self.page_starts[location.first_page as usize] + u64::from(location.offset)
    }

    /// Facts about the archive, read from its header, trailer and index.
    pub fn info(&self) -> ArchiveInfo {
        let mut info = ArchiveInfo {
            version: self.header.version,
            archive_bytes: self.file_len,
            pages: self.index.pages.len() as u64,
            sessions: self.index.sessions.len() as u64,
            index_bytes: self.trailer.index_stored_len,
            ..ArchiveInfo::default()
        };
        for slot in &self.header.slots {
            if let KeySlot::Password(p) = slot {
                info.kdf.push(crate::KdfParams { m_kib: p.m_kib, t: p.t, p: p.p });
            }
        }
        for p in &self.index.pages {
            info.stored_page_bytes += u64::from(p.stored_len);
            info.raw_pages += u64::from(p.codec == format::Codec::Raw);
        }
        for e in &self.index.entries {
            match &e.kind {
                EntryKind::Dir => info.dirs += 1,
                EntryKind::File { size, .. } => {
                    info.files += 1;
                    info.content_bytes += size;
                }
                EntryKind::Symlink { .. } => info.symlinks += 1,
                EntryKind::Hardlink { .. } => info.hardlinks += 1,
            }
        }
        info
    }
}

/// What [`Archive::info`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveInfo {
    /// Format version.
    pub version: u16,
    /// Size of the archive file.
    pub archive_bytes: u64,
    /// Argon2id parameters of each password slot.
    pub kdf: Vec<crate::KdfParams>,
    /// Data pages.
    pub pages: u64,
    /// Data pages stored without compression.
    pub raw_pages: u64,
    /// Sealed bytes of all data pages.
    pub stored_page_bytes: u64,
    /// Sealed bytes of the index.
    pub index_bytes: u64,
    /// Write sessions.
    pub sessions: u64,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Hard links.
    pub hardlinks: u64,
    /// Total bytes of file content.
    pub content_bytes: u64,
}

/// One file's content as `Read + Seek`; see [`Archive::open_file`].
pub struct EntryReader<'a, R> {
    archive: &'a mut Archive<R>,
    path: Vec<u8>,
    start: u64,
    size: u64,
    pos: u64,
    /// Hashes bytes read sequentially from 0; dropped on the first seek.
    hasher: Option<sha2::Sha256>,
    sha256: [u8; 32],
}

impl<R> EntryReader<'_, R> {
    /// The file's length.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
}

impl<R: Read + Seek> Read for EntryReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pos >= self.size {
            self.check_digest()?;
            return Ok(0);
        }
        let (page, offset) = self.archive.locate(self.start + self.pos);
        let plain = self.archive.page(page).map_err(io::Error::other)?;
        let available = (plain.len() - offset).min((self.size - self.pos) as usize);
        let n = available.min(buf.len());
        buf[..n].copy_from_slice(&plain[offset..offset + n]);
        if let Some(h) = &mut self.hasher {
            sha2::Digest::update(h, &buf[..n]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R> EntryReader<'_, R> {
    fn check_digest(&mut self) -> io::Result<()> {
        if let Some(h) = self.hasher.take() {
            if sha2::Digest::finalize(h)[..] != self.sha256 {
                let path = crate::writer::show(&self.path);
                return Err(io::Error::other(Error::ChecksumMismatch { path }));
            }
        }
        Ok(())
    }
}

impl<R: Read + Seek> Seek for EntryReader<'_, R> {
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
        }
        self.pos = target;
        Ok(target)
    }
}
