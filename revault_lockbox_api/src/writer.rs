//! [`ArchiveWriter`]: streams entries into an archive in one pass.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::crypto::{random_bytes, wrap_password_slot, ContentKey, KdfParams, Password, SessionKeys};
use crate::format::{
    ArchiveId, Entry, EntryKind, FileLocation, Header, Index, KeySlot, PageRecord, Session, Trailer,
    HEADER_PREFIX_LEN, MAX_INDEX_PLAIN_LEN, MAX_INDEX_STORED_LEN, MAX_PATH_LEN, SESSION_SALT_LEN, VERSION,
};
use crate::pipeline::{seal_data_page, OrderedPool, SealedPage};
use crate::{check_entry_path, Error, Metadata, Progress, Result, Tuning, WorkloadProfile};

/// How an archive is written. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    pub(crate) tuning: Tuning,
    pub(crate) profile: WorkloadProfile,
    pub(crate) kdf: KdfParams,
    pub(crate) progress: Option<Arc<Progress>>,
    pub(crate) unchecked_paths: bool,
    pub(crate) skip_files: Vec<(u64, u64)>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions::new()
    }
}

impl CreateOptions {
    /// The [`WorkloadProfile::Balanced`] preset and the default Argon2id cost.
    pub fn new() -> CreateOptions {
        CreateOptions {
            tuning: WorkloadProfile::Balanced.tuning(),
            profile: WorkloadProfile::Balanced,
            kdf: KdfParams::default(),
            progress: None,
            unchecked_paths: false,
            skip_files: Vec::new(),
        }
    }

    /// Takes every knob from `profile`. Default: [`WorkloadProfile::Balanced`].
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.profile = profile;
        self.tuning = profile.tuning();
        self
    }

    /// Overrides the zstd level of data pages. Default: the profile's (3 for
    /// `Balanced`).
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.tuning.zstd_level = level;
        self
    }

    /// Overrides the plaintext bytes per page. Default: the profile's (1 MiB
    /// for `Balanced`).
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.tuning.page_size = bytes;
        self
    }

    /// Overrides the worker threads. Default: the profile's (all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.tuning.threads = threads;
        self.tuning.pages_in_flight = self.tuning.pages_in_flight.max(threads + 1);
        self
    }

    /// Argon2id cost of the password slot. Default: m = 64 MiB, t = 3, p = 4.
    /// Lower costs make password guessing cheaper for whoever holds the file.
    pub fn kdf(mut self, params: KdfParams) -> Self {
        self.kdf = params;
        self
    }

    /// Counters updated as data is archived, for progress displays.
    /// Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Never archives the file with this device and inode number: the
    /// archive itself when it is streamed into the tree being archived
    /// (`create -o - . > x.lbox`). [`create_archive`](crate::create_archive)
    /// skips its own output without being told. Default: none.
    pub fn skip_file(mut self, dev: u64, ino: u64) -> Self {
        self.skip_files.push((dev, ino));
        self
    }

    /// The tuning in effect.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// Lets entry paths through unchecked (`..`, absolute). Only for
    /// building hostile archives in tests of readers: extraction refuses
    /// such entries.
    #[doc(hidden)]
    pub fn unchecked_paths_for_tests(mut self) -> Self {
        self.unchecked_paths = true;
        self
    }
}

/// Writes an archive to any [`Write`], in one pass: header, data pages,
/// index, trailer. Call [`finish`](Self::finish): an archive whose writer is
/// dropped unfinished has no trailer and reads as truncated.
///
/// Pages are compressed and sealed on worker threads, with at most
/// `pages_in_flight` pages held in memory.
pub struct ArchiveWriter<W: Write> {
    out: W,
    position: u64,
    archive_id: ArchiveId,
    session_salt: [u8; SESSION_SALT_LEN],
    keys: Arc<SessionKeys>,
    key_slots: (u64, u32),
    options: CreateOptions,
    page: Vec<u8>,
    next_page: u64,
    pages: Vec<PageRecord>,
    entries: Vec<Entry>,
    kinds: HashMap<Vec<u8>, bool>,
    pool: OrderedPool<SealedPage>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Starts an archive protected by `password`; writes the header at once.
    pub fn new(mut out: W, password: &Password, options: CreateOptions) -> Result<Self> {
        options.tuning.validate()?;
        if !options.kdf.is_valid() {
            return Err(Error::InvalidInput(format!(
                "invalid or too costly Argon2id parameters {:?} (a reader accepts at most {} MiB, {} passes, {} lanes)",
                options.kdf,
                crate::format::MAX_KDF_MEMORY_KIB / 1024,
                crate::format::MAX_KDF_PASSES,
                crate::format::MAX_KDF_LANES
            )));
        }
        let mut id = [0u8; 16];
        let mut session_salt = [0u8; SESSION_SALT_LEN];
        random_bytes(&mut id).map_err(Error::stream("drawing random bytes"))?;
        random_bytes(&mut session_salt).map_err(Error::stream("drawing random bytes"))?;
        let content_key = ContentKey::random().map_err(Error::stream("drawing random bytes"))?;
        let mut header = Header { version: VERSION, flags: 0, archive_id: ArchiveId(id), slots: vec![] };
        let slot = wrap_password_slot(&header, &content_key, password, options.kdf)
            .map_err(|e| Error::InvalidInput(e.to_string()))?;
        header.slots.push(KeySlot::Password(slot));
        let bytes = header.encode();
        out.write_all(&bytes).map_err(Error::stream("writing the archive header"))?;
        let keys = Arc::new(SessionKeys::derive(&content_key, &session_salt));
        let key_slots = (HEADER_PREFIX_LEN as u64, (bytes.len() - HEADER_PREFIX_LEN) as u32);
        Ok(ArchiveWriter {
            out,
            position: bytes.len() as u64,
            archive_id: header.archive_id,
            session_salt,
            keys,
            key_slots,
            page: Vec::with_capacity(options.tuning.page_size),
            next_page: 0,
            pages: Vec::new(),
            entries: Vec::new(),
            kinds: HashMap::new(),
            pool: OrderedPool::new(options.tuning.threads),
            options,
        })
    }

    /// Whether an entry was added under `path`.
    pub fn contains(&self, path: impl AsRef<[u8]>) -> bool {
        self.kinds.contains_key(path.as_ref())
    }

    /// Adds a directory.
    pub fn add_dir(&mut self, path: impl AsRef<[u8]>, meta: &Metadata) -> Result<()> {
        self.push_entry(path.as_ref(), meta, EntryKind::Dir)
    }

    /// Adds a symbolic link whose target is kept byte for byte.
    pub fn add_symlink(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        target: impl AsRef<[u8]>,
    ) -> Result<()> {
        let target = target.as_ref();
        if target.is_empty() || target.len() > MAX_PATH_LEN {
            return Err(Error::InvalidInput(format!(
                "symlink target of {} is empty or too long",
                show(path.as_ref())
            )));
        }
        self.push_entry(path.as_ref(), meta, EntryKind::Symlink { target: target.to_vec() })
    }

    /// Adds a hard link to `target`, a file added earlier.
    pub fn add_hardlink(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        target: impl AsRef<[u8]>,
    ) -> Result<()> {
        let target = target.as_ref();
        if self.kinds.get(target) != Some(&true) {
            return Err(Error::InvalidInput(format!(
                "hard link {} points to {}, which is not a file added earlier",
                show(path.as_ref()),
                show(target)
            )));
        }
        self.push_entry(path.as_ref(), meta, EntryKind::Hardlink { target: target.to_vec() })
    }

    /// Adds a regular file with the bytes `content` yields until its end;
    /// returns how many there were. `size_hint` (the expected length) only
    /// decides whether the file starts on a page of its own.
    pub fn add_file(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        size_hint: u64,
        mut content: impl Read,
    ) -> Result<u64> {
        self.add_file_dyn(path.as_ref(), meta, size_hint, &mut content)
    }

    fn add_file_dyn(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        size_hint: u64,
        content: &mut dyn Read,
    ) -> Result<u64> {
        self.check_new_path(path)?;
        let page_size = self.options.tuning.page_size;
        if size_hint >= (page_size / 2) as u64 && !self.page.is_empty() {
            self.flush_page()?;
        }
        let location = FileLocation { first_page: self.next_page, offset: self.page.len() as u32 };
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            if self.page.len() == page_size {
                self.flush_page()?;
            }
            let start = self.page.len();
            let room = (page_size - start) as u64;
            let n = fill(content, &mut self.page, page_size, size_hint.saturating_sub(size))
                .map_err(Error::io("reading", std::ffi::OsStr::from_bytes(path)))?;
            hasher.update(&self.page[start..]);
            size += n as u64;
            if let Some(p) = &self.options.progress {
                p.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
            }
            if (n as u64) < room {
                break;
            }
        }
        let location =
            if size == 0 { FileLocation { first_page: self.next_page, offset: 0 } } else { location };
        let kind = EntryKind::File { size, location, sha256: hasher.finalize().into() };
        self.push_entry(path, meta, kind)?;
        Ok(size)
    }

    fn check_new_path(&self, path: &[u8]) -> Result<()> {
        if !self.options.unchecked_paths {
            check_entry_path(path).map_err(|reason| Error::UnsafePath { path: show(path), reason })?;
        } else if path.is_empty() || path.len() > MAX_PATH_LEN {
            return Err(Error::InvalidInput("entry path is empty or too long".into()));
        }
        if self.kinds.contains_key(path) {
            return Err(Error::InvalidInput(format!("{} added twice", show(path))));
        }
        Ok(())
    }

    fn push_entry(&mut self, path: &[u8], meta: &Metadata, kind: EntryKind) -> Result<()> {
        if !matches!(kind, EntryKind::File { .. }) {
            self.check_new_path(path)?;
        }
        self.kinds.insert(path.to_vec(), matches!(kind, EntryKind::File { .. }));
        self.entries.push(Entry {
            path: path.to_vec(),
            kind,
            mode: meta.mode & 0o7777,
            uid: meta.uid,
            gid: meta.gid,
            mtime_secs: meta.mtime_secs,
            mtime_nanos: meta.mtime_nanos.min(999_999_999),
        });
        if let Some(p) = &self.options.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Hands the current page to the workers and writes whatever finished.
    fn flush_page(&mut self) -> Result<()> {
        let plain = std::mem::replace(&mut self.page, Vec::with_capacity(self.options.tuning.page_size));
        let (keys, id, number, level) =
            (Arc::clone(&self.keys), self.archive_id, self.next_page, self.options.tuning.zstd_level);
        self.next_page += 1;
        self.pool.submit(move || seal_data_page(&keys, &id, number, plain, level));
        while self.pool.in_flight() >= self.options.tuning.pages_in_flight {
            self.write_oldest()?;
        }
        Ok(())
    }

    fn write_oldest(&mut self) -> Result<()> {
        let Some(sealed) = self.pool.pop() else { return Ok(()) };
        debug_assert_eq!(sealed.number, self.pages.len() as u64);
        self.write(&sealed.bytes, "writing a page")?;
        self.pages.push(PageRecord {
            offset: self.position - sealed.bytes.len() as u64,
            stored_len: sealed.bytes.len() as u32,
            plain_len: sealed.plain_len,
            codec: sealed.codec,
        });
        Ok(())
    }

    fn write(&mut self, bytes: &[u8], action: &'static str) -> Result<()> {
        self.out.write_all(bytes).map_err(Error::stream(action))?;
        self.position += bytes.len() as u64;
        if let Some(p) = &self.options.progress {
            p.bytes_out.store(self.position, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes the last page, the index and the trailer, flushes, and returns
    /// the output. The archive is complete only once this returns `Ok`.
    pub fn finish(self) -> Result<W> {
        self.finish_counted().map(|(out, _)| out)
    }

    /// [`finish`](Self::finish), also returning the archive's length.
    pub(crate) fn finish_counted(mut self) -> Result<(W, u64)> {
        if !self.page.is_empty() {
            self.flush_page()?;
        }
        while self.pool.in_flight() > 0 {
            self.write_oldest()?;
        }
        let index = Index {
            sessions: vec![Session { first_page: 0, salt: self.session_salt }],
            pages: std::mem::take(&mut self.pages),
            entries: std::mem::take(&mut self.entries),
        };
        let plain = index.encode();
        let mut sealed = zstd::bulk::compress(&plain, 3).map_err(Error::stream("compressing the index"))?;
        if plain.len() as u64 > MAX_INDEX_PLAIN_LEN || sealed.len() as u64 >= MAX_INDEX_STORED_LEN {
            return Err(Error::InvalidInput(format!(
                "too many entries for one archive: the index would take {} bytes (limit {MAX_INDEX_PLAIN_LEN})",
                plain.len()
            )));
        }
        let mut trailer = Trailer {
            archive_id: self.archive_id,
            session_salt: self.session_salt,
            key_slots_offset: self.key_slots.0,
            key_slots_len: self.key_slots.1,
            index_offset: self.position,
            index_stored_len: (sealed.len() + crate::format::TAG_LEN) as u64,
            index_plain_len: plain.len() as u64,
            page_count: index.pages.len() as u64,
            tag: [0; crate::format::TAG_LEN],
        };
        let body = trailer.body();
        self.keys.seal_index(&body, &mut sealed);
        trailer.tag = self.keys.trailer_tag(&body);
        self.write(&sealed, "writing the index")?;
        self.write(&trailer.encode(), "writing the trailer")?;
        self.out.flush().map_err(Error::stream("flushing the archive"))?;
        Ok((self.out, self.position))
    }
}

/// Reads from `content` into `page` until it holds `page_size` bytes or the
/// content ends; returns how many bytes were added. Reads straight into the
/// page with large reads (small ones cost more in system time than the
/// compression does), and zeroes only the room it expects to need: `hint`
/// bytes plus one to see the end, growing if the content is longer.
fn fill(content: &mut dyn Read, page: &mut Vec<u8>, page_size: usize, hint: u64) -> io::Result<usize> {
    let start = page.len();
    let mut filled = start;
    let mut want = (hint.saturating_add(1).max(MIN_READ as u64) as usize).min(page_size - start);
    page.resize(start + want, 0);
    loop {
        if filled == page.len() {
            if page.len() == page_size {
                break;
            }
            want = (want * 2).min(page_size - start);
            page.resize(start + want, 0);
        }
        match content.read(&mut page[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                page.truncate(filled);
                return Err(e);
            }
        }
    }
    page.truncate(filled);
    Ok(filled - start)
}

/// Smallest read into a page.
const MIN_READ: usize = 16 << 10;

/// A stored path for messages: UTF-8 where it is, escaped bytes elsewhere.
pub(crate) fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Stream { action: "I/O", source }
    }
}

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

    #[test]
    fn fill_takes_everything_whatever_the_hint() {
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        for (hint, page_size) in
            [(0, 1 << 20), (10, 1 << 20), (100_000, 1 << 20), (1 << 30, 1 << 20), (5, 40_000)]
        {
            let mut page = b"prefix".to_vec();
            let n = fill(&mut Trickle(&data), &mut page, page_size, hint).unwrap();
            let expect = data.len().min(page_size - 6);
            assert_eq!(n, expect, "hint {hint}");
            assert_eq!(&page[6..], &data[..expect]);
        }
    }
}
