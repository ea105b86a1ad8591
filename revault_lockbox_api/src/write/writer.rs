//! [`ArchiveWriter`]: streams entries into an archive in one pass, in index
//! order, with memory bounded whatever the number of entries.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::atomic::ArchiveFile;
use super::late_slots::LateSlots;
use super::Selection;
use crate::crypto::{compress_root, seal_index_node, seal_root, to_seal, Sealing};
use crate::crypto::{random_bytes, ContentKey, KdfParams, SessionKeys};
use crate::format::{
    check_entry_path, check_name, check_symlink_target, check_xattr_list, encoded_record_len, is_within,
    path_cmp, Child, EntriesLeaf, Entry, EntryKind, Extent, Extra, HeaderPrefix, History, IndexNodeId,
    KeySlot, PageRecord, PagesLeaf, Record, Root, Session, SparseMap, Table, Trailer, TreeTop, Xattr,
    ARCHIVE_ID_LEN, INDEX_NODE_TARGET_LEN, KEY_SLOTS, MAX_ROOT_LEN, PAGE_RECORD_LEN, SESSION_SALT_LEN,
    TAG_LEN, TRAILER_LEN,
};
use crate::index::{page_key, NodeSink, TreeBuilder};
use crate::pipeline::{PageSealer, SealingKeys};
use crate::progress::Progress;
use crate::sparse::ContentHasher;
use crate::{CreateTuning, Error, KeySet, Result, WorkloadProfile};

/// Metadata stored with each entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// Permission bits (only `0o7777` is kept).
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime_secs: i64,
    /// Nanoseconds part of the modification time.
    pub mtime_nanos: u32,
    /// Owner's user name (1 to 255 bytes, no NUL), when known.
    pub user: Option<Vec<u8>>,
    /// Owner's group name, when known.
    pub group: Option<Vec<u8>>,
    /// Extended attributes, names unique (stored sorted).
    pub xattrs: Vec<Xattr>,
}

impl Metadata {
    /// Mode, owner and mtime given directly; no names, no xattrs.
    pub fn new(mode: u32, uid: u32, gid: u32, mtime_secs: i64, mtime_nanos: u32) -> Metadata {
        Metadata { mode, uid, gid, mtime_secs, mtime_nanos, ..Metadata::default() }
    }

    /// What `entry` holds: mode, owner ids and names, mtime, xattrs.
    pub(crate) fn of_entry(entry: &Entry) -> Metadata {
        Metadata::new(entry.mode, entry.uid, entry.gid, entry.mtime_secs, entry.mtime_nanos)
            .with_names(entry.user().map(<[u8]>::to_vec), entry.group().map(<[u8]>::to_vec))
            .with_xattrs(entry.xattrs().to_vec())
    }

    /// The same, with the owner's user and group names.
    pub fn with_names(mut self, user: Option<Vec<u8>>, group: Option<Vec<u8>>) -> Metadata {
        (self.user, self.group) = (user, group);
        self
    }

    /// The same, with extended attributes.
    pub fn with_xattrs(mut self, xattrs: Vec<Xattr>) -> Metadata {
        self.xattrs = xattrs;
        self
    }

    /// Takes mode, owner and mtime from file-system metadata.
    pub fn from_fs(md: &std::fs::Metadata) -> Metadata {
        use std::os::unix::fs::MetadataExt;
        Metadata::new(md.mode() & 0o7777, md.uid(), md.gid(), md.mtime(), md.mtime_nsec() as u32)
    }
}

/// What a hard link repeats of its file: extent, digest, logical size and
/// sparse map.
type LinkTarget = (Extent, [u8; 32], u64, Option<SparseMap>);

/// How an archive is written. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    pub(crate) tuning: CreateTuning,
    pub(crate) kdf: KdfParams,
    pub(crate) progress: Option<Arc<Progress>>,
    pub(crate) skip_files: Vec<(u64, u64)>,
    pub(crate) dereference: bool,
    pub(crate) strict: bool,
    pub(crate) overwrite: bool,
    pub(crate) selection: Selection,
    pub(crate) xattrs: bool,
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
            tuning: WorkloadProfile::Balanced.create_tuning(),
            kdf: KdfParams::default(),
            progress: None,
            skip_files: Vec::new(),
            dereference: false,
            strict: false,
            overwrite: false,
            selection: Selection::new(),
            xattrs: false,
        }
    }

    /// Takes every knob from `profile`. Default: [`WorkloadProfile::Balanced`].
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.tuning = profile.create_tuning();
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

    /// Store every extended attribute of each entry (POSIX ACLs
    /// included, as the `system.posix_acl_*` attributes), as `tar
    /// --xattrs` does. An entry whose attributes cannot be read or exceed
    /// 72 KiB is stored without them, with a warning. Default: off.
    pub fn xattrs(mut self, yes: bool) -> Self {
        self.xattrs = yes;
        self
    }

    /// Follow symbolic links, inputs and those inside the trees, storing
    /// what they point to (tar's `-h`); a link to a directory containing it
    /// is skipped with a warning, not followed forever. Default: off, links
    /// are stored as links.
    pub fn dereference(mut self, follow: bool) -> Self {
        self.dereference = follow;
        self
    }

    /// Fail at the first thing the walk would skip or store incompletely
    /// with a warning ([`Error::Strict`]), before the archive is renamed
    /// into place. Default: off, such things are reported in
    /// [`CreateReport::warnings`](crate::CreateReport::warnings).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Lets [`create_archive`](crate::create_archive) replace an existing
    /// archive (once the new one is complete). Default: false, an existing
    /// file is refused with [`Error::AlreadyExists`].
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Which paths the tree walk of [`create_archive`](crate::create_archive)
    /// and [`write_archive`](crate::write_archive) takes. Default: all.
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// The tuning in effect.
    pub fn tuning(&self) -> &CreateTuning {
        &self.tuning
    }
}

/// The output: position tracking, and index nodes sealed and written in
/// line with the data pages.
struct Output<W> {
    out: W,
    position: u64,
    archive_id: [u8; ARCHIVE_ID_LEN],
    keys: Arc<SessionKeys>,
    progress: Option<Arc<Progress>>,
}

impl<W: Write> Output<W> {
    fn write(&mut self, bytes: &[u8], action: &'static str) -> Result<()> {
        self.out.write_all(bytes).map_err(Error::stream(action))?;
        self.position += bytes.len() as u64;
        if let Some(p) = &self.progress {
            p.bytes_out.store(self.position, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl<W: Write> NodeSink for Output<W> {
    fn write_node(&mut self, id: IndexNodeId, plain: Vec<u8>) -> Result<Child> {
        let sealed = seal_index_node(&self.keys, &self.archive_id, &id, plain);
        let offset = self.position;
        self.write(&sealed.bytes, "writing an index node")?;
        Ok(Child {
            first_key: Vec::new(),
            offset,
            stored_len: sealed.bytes.len() as u32,
            plain_len: sealed.plain_len,
            codec: sealed.codec,
        })
    }
}

/// Writes an archive to any [`Write`], in one pass: header and key slots,
/// then data pages with the index nodes between them as they fill, then the
/// root and the trailer. Call [`finish`](Self::finish): an archive whose
/// writer is dropped unfinished has no trailer and reads as truncated.
///
/// Entries must be added in the index order: paths compared component by
/// component, so a directory right before its contents (`a`, `a/b`,
/// `a.txt`); each path once. Pages are compressed and sealed on worker
/// threads, with at most `pages_in_flight` pages held in memory.
///
/// ```
/// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Metadata, Password};
/// # fn main() -> Result<(), revault_lockbox_api::Error> {
/// let password = Password::from("correct horse battery staple");
/// let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS); // tests only
/// let mut w = ArchiveWriter::new(Vec::new(), &password, options)?;
/// let meta = Metadata::new(0o644, 1000, 1000, 1_700_000_000, 0);
/// w.add_dir("logs", &Metadata::new(0o755, 1000, 1000, 1_700_000_000, 0))?;
/// w.add_file("logs/today.txt", &meta, 6, &b"hello\n"[..])?;
/// let bytes = w.finish()?;
/// let archive = Archive::open(std::io::Cursor::new(bytes), &password)?;
/// assert_eq!(archive.entry_count(), 2);
/// # Ok(()) }
/// ```
pub struct ArchiveWriter<W: Write> {
    output: Output<W>,
    session_salt: [u8; SESSION_SALT_LEN],
    tuning: CreateTuning,
    page: Vec<u8>,
    /// Data-stream offset of the current page's first byte.
    page_start: u64,
    next_page: u64,
    sealer: PageSealer,
    /// Records of written pages waiting for their leaf.
    page_records: PagesLeaf,
    pages: TreeBuilder,
    /// Records waiting for their leaf, and their encoded size.
    leaf: Vec<Record>,
    leaf_bytes: usize,
    entries: TreeBuilder,
    /// Entries stored (deletions not counted).
    entry_count: u64,
    /// The first record's path, once there is one.
    first_path: Option<Vec<u8>>,
    last_path: Option<Vec<u8>>,
    /// The last entry that is not a directory: nothing may follow below it.
    last_leaf: Option<Vec<u8>>,
    /// Files with more than one link, by path, for their hard links.
    link_targets: HashMap<Vec<u8>, LinkTarget>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Starts an archive locked with `keys` (a `&Password`, or a
    /// [`KeySet`] of passwords and recipients); writes the header at once.
    pub fn new(out: W, keys: impl Into<KeySet>, options: CreateOptions) -> Result<Self> {
        Self::with_keys(out, &keys.into(), options)
    }

    /// [`new`](Self::new) with the keys already gathered.
    pub(crate) fn with_keys(out: W, keys: &KeySet, options: CreateOptions) -> Result<Self> {
        let (archive_id, content_key) = new_archive_keys(&options)?;
        let slots = keys.slots(&archive_id, &content_key, options.kdf)?;
        let header = HeaderPrefix::fitting(archive_id, &slots).encode_with(&slots);
        Self::begin(out, archive_id, &content_key, &header, options)
    }

    /// Writes `header` (the prefix and the slot table), and starts the
    /// first session.
    fn begin(
        mut out: W,
        archive_id: [u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        header: &[u8],
        options: CreateOptions,
    ) -> Result<Self> {
        out.write_all(header).map_err(Error::stream("writing the archive header"))?;
        let start = SessionStart { archive_id, position: header.len() as u64, next_page: 0, stream_len: 0 };
        Self::session(out, content_key, start, options)
    }

    /// A write session of the archive `start` describes, writing to `out`
    /// from `start.position` on: new pages numbered from `start.next_page`,
    /// under keys from a fresh random salt.
    pub(crate) fn session(
        out: W,
        content_key: &ContentKey,
        start: SessionStart,
        options: CreateOptions,
    ) -> Result<Self> {
        options.tuning.validate()?;
        let mut session_salt = [0u8; SESSION_SALT_LEN];
        random_bytes(&mut session_salt).map_err(Error::stream("drawing random bytes"))?;
        let keys = Arc::new(SessionKeys::derive(content_key, &session_salt));
        let tuning = &options.tuning;
        let sealing = SealingKeys {
            keys: Arc::clone(&keys),
            archive_id: start.archive_id,
            zstd_level: tuning.zstd_level,
        };
        let mut sealer = PageSealer::new(sealing, tuning.page_size, tuning.threads, tuning.pages_in_flight)?;
        let output = Output {
            out,
            position: start.position,
            archive_id: start.archive_id,
            keys,
            progress: options.progress.clone(),
        };
        Ok(ArchiveWriter {
            output,
            session_salt,
            page: sealer.buffer(),
            page_start: start.stream_len,
            next_page: start.next_page,
            sealer,
            page_records: PagesLeaf {
                first_page: start.next_page,
                first_offset: start.stream_len,
                pages: Vec::new(),
            },
            pages: TreeBuilder::new(Table::Pages),
            leaf: Vec::new(),
            leaf_bytes: 0,
            entries: TreeBuilder::new(Table::Entries),
            entry_count: 0,
            first_path: None,
            last_path: None,
            last_leaf: None,
            link_targets: HashMap::new(),
            tuning: options.tuning,
        })
    }

    /// The last path added, if any: the next must sort after it.
    pub fn last_path(&self) -> Option<&[u8]> {
        self.last_path.as_deref()
    }

    /// Adds a directory.
    pub fn add_dir(&mut self, path: impl AsRef<[u8]>, meta: &Metadata) -> Result<()> {
        self.check_next_path(path.as_ref())?;
        self.push_entry(path.as_ref(), meta, EntryKind::Dir, None, None)
    }

    /// Adds a symbolic link whose target is kept byte for byte.
    pub fn add_symlink(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        target: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (path, target) = (path.as_ref(), target.as_ref());
        self.check_next_path(path)?;
        if check_symlink_target(target).is_err() {
            return Err(Error::BadSymlink { path: path.into() });
        }
        self.push_entry(path, meta, EntryKind::Symlink { target: target.to_vec() }, None, None)
    }

    /// Adds a hard link to `target`, a file added earlier with
    /// [`add_linked_file`](Self::add_linked_file).
    pub fn add_hardlink(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        target: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (path, target) = (path.as_ref(), target.as_ref());
        self.check_next_path(path)?;
        let Some((extent, sha256, size, sparse)) = self.link_targets.get(target).cloned() else {
            return Err(Error::BadHardLink { path: path.into(), target: target.into() });
        };
        let kind = EntryKind::Hardlink { target: target.to_vec(), size, sha256 };
        // The link shares the file's inode: its xattrs come with it.
        let meta = Metadata { xattrs: Vec::new(), ..meta.clone() };
        self.push_entry(path, &meta, kind, Some(Extent { linked: false, ..extent }), sparse)
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
        self.add_file_dyn(path.as_ref(), meta, size_hint, &mut content, false, None)
    }

    /// Adds a sparse file of `size` bytes whose data lies in `map`'s
    /// segments: `data` yields their bytes back to back, the holes between
    /// them read as zeros. `linked` as for
    /// [`add_linked_file`](Self::add_linked_file). Returns the data bytes
    /// read, which fall short of the map's only if `data` ended early (the
    /// entry then records the segments it filled).
    pub fn add_sparse_file(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        map: SparseMap,
        size: u64,
        linked: bool,
        mut data: impl Read,
    ) -> Result<u64> {
        let path = path.as_ref();
        let stored = map.stored_len();
        let mut limited = (&mut data).take(stored);
        self.add_file_dyn(path, meta, stored, &mut limited, linked, Some((map, size)))
    }

    /// [`add_file`](Self::add_file) for a file that later entries name in
    /// [`add_hardlink`](Self::add_hardlink). The writer remembers its
    /// content's place until it finishes.
    pub fn add_linked_file(
        &mut self,
        path: impl AsRef<[u8]>,
        meta: &Metadata,
        size_hint: u64,
        mut content: impl Read,
    ) -> Result<u64> {
        self.add_file_dyn(path.as_ref(), meta, size_hint, &mut content, true, None)
    }

    fn add_file_dyn(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        size_hint: u64,
        content: &mut dyn Read,
        linked: bool,
        sparse: Option<(SparseMap, u64)>,
    ) -> Result<u64> {
        self.check_next_path(path)?;
        // `None` while the page workers hash the file (it runs across pages).
        let mut hasher = Some(ContentHasher::new(sparse.as_ref().map(|(map, _)| map)));
        let page_size = self.tuning.page_size;
        if size_hint >= (page_size / 2) as u64 && !self.page.is_empty() {
            self.flush_page()?;
        }
        let offset = self.page_start + self.page.len() as u64;
        let mut size = 0u64;
        // Where the file's bytes begin in the current page.
        let mut in_page = None;
        loop {
            if self.page.len() == page_size {
                if in_page.is_some() {
                    if let Some(h) = hasher.take() {
                        self.sealer.hand_over(h);
                    }
                }
                self.flush_page_hashing(in_page.take())?;
            }
            let start = self.page.len();
            in_page = Some(start);
            let room = (page_size - start) as u64;
            let n = fill(content, &mut self.page, page_size, size_hint.saturating_sub(size))
                .map_err(|source| Error::Stream { action: "reading a file's content", source })?;
            size += n as u64;
            if let Some(p) = &self.output.progress {
                p.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
            }
            if (n as u64) < room {
                break;
            }
        }
        let mut hasher = hasher.unwrap_or_else(|| self.sealer.take_back());
        hasher.update(&self.page[in_page.unwrap_or(self.page.len())..]);
        let extent = Extent { offset, size, linked };
        // A map whose data ended early keeps the segments filled.
        let (logical, sparse) = match sparse {
            None => (size, None),
            Some((map, logical)) => {
                let map = map.truncated(size);
                (if map.stored_len() == size { logical } else { map.end() }, Some(map))
            }
        };
        let sha256 = hasher.finish(logical);
        if linked {
            self.link_targets.insert(path.to_vec(), (extent, sha256, logical, sparse.clone()));
        }
        self.push_entry(path, meta, EntryKind::File { size: logical, sha256 }, Some(extent), sparse)?;
        Ok(size)
    }

    /// Refuses unsafe paths, and paths not after the last one.
    fn check_next_path(&self, path: &[u8]) -> Result<()> {
        check_entry_path(path).map_err(|reason| Error::UnsafePath { path: path.into(), reason })?;
        if let Some(last) = &self.last_path {
            if path_cmp(last, path).is_ge() {
                return Err(Error::OutOfOrder { previous: last.as_slice().into(), path: path.into() });
            }
        }
        if self.last_leaf.as_ref().is_some_and(|leaf| is_within(leaf, path)) {
            let reason = "it lies below a symbolic link or file of the archive";
            return Err(Error::UnsafePath { path: path.into(), reason });
        }
        Ok(())
    }

    fn push_entry(
        &mut self,
        path: &[u8],
        meta: &Metadata,
        kind: EntryKind,
        extent: Option<Extent>,
        sparse: Option<SparseMap>,
    ) -> Result<()> {
        let bad = |reason| Error::BadMetadata { path: path.into(), reason };
        let mut xattrs = meta.xattrs.clone();
        xattrs.sort();
        check_xattr_list(&xattrs).map_err(bad)?;
        // A name the format cannot hold is left out: the id stays.
        let name = |n: &Option<Vec<u8>>| n.clone().filter(|n| check_name(n).is_ok());
        let extra = Extra { user: name(&meta.user), group: name(&meta.group), xattrs, sparse };
        self.push_checked(Entry {
            path: path.to_vec(),
            kind,
            mode: meta.mode & 0o7777,
            uid: meta.uid,
            gid: meta.gid,
            mtime_secs: meta.mtime_secs,
            mtime_nanos: meta.mtime_nanos.min(999_999_999),
            extent,
            extra,
        })
    }

    /// Records that `path` and everything below it are deleted: older runs'
    /// entries there are hidden (an append session).
    pub(crate) fn delete(&mut self, path: &[u8]) -> Result<()> {
        self.check_next_path(path)?;
        self.push_record(Record::Delete(path.to_vec()))
    }

    /// Appends an entry as it was read from another run (merging runs):
    /// its content is where that run said.
    pub(crate) fn copy_entry(&mut self, entry: Entry) -> Result<()> {
        self.check_next_path(&entry.path)?;
        self.push_checked(entry)
    }

    /// Appends an entry whose path was checked to the current leaf.
    fn push_checked(&mut self, entry: Entry) -> Result<()> {
        self.entry_count += 1;
        if let Some(p) = &self.output.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
        self.push_record(Record::Put(entry))
    }

    fn push_record(&mut self, record: Record) -> Result<()> {
        let len = encoded_record_len(&record);
        if self.leaf_bytes + len > INDEX_NODE_TARGET_LEN {
            self.flush_leaf()?;
        }
        let path = record.path().to_vec();
        if record.hides_below() {
            self.last_leaf = Some(path.clone());
        }
        if self.first_path.is_none() {
            self.first_path = Some(path.clone());
        }
        self.last_path = Some(path);
        self.leaf_bytes += len;
        self.leaf.push(record);
        Ok(())
    }

    /// Appends `entry` as given, unchecked: for tests that build hostile
    /// archives the way an attacker holding the key could.
    #[cfg(test)]
    pub(crate) fn push_raw(&mut self, entry: Entry) -> Result<()> {
        self.push_checked(entry)
    }

    /// Makes the root and trailer claim `count` entries.
    #[cfg(test)]
    pub(crate) fn claim_entries(&mut self, count: u64) {
        self.entry_count = count;
    }

    fn flush_leaf(&mut self) -> Result<()> {
        if self.leaf.is_empty() {
            return Ok(());
        }
        let plain = EntriesLeaf::encode(&self.leaf);
        let first_key = self.leaf[0].path().to_vec();
        self.leaf.clear();
        self.leaf_bytes = 0;
        self.entries.add_leaf(first_key, plain, &mut self.output)
    }

    /// Hands the current page to the workers and writes whatever finished.
    fn flush_page(&mut self) -> Result<()> {
        self.flush_page_hashing(None)
    }

    /// [`flush_page`](Self::flush_page), the workers hashing its bytes from
    /// `hash_from` into the hasher handed over to them.
    fn flush_page_hashing(&mut self, hash_from: Option<usize>) -> Result<()> {
        let fresh = self.sealer.buffer();
        let plain = std::mem::replace(&mut self.page, fresh);
        self.page_start += plain.len() as u64;
        self.sealer.submit(self.next_page, plain, hash_from);
        self.next_page += 1;
        while self.sealer.in_flight() >= self.tuning.pages_in_flight {
            self.write_oldest()?;
        }
        Ok(())
    }

    fn write_oldest(&mut self) -> Result<()> {
        let Some(sealed) = self.sealer.pop() else { return Ok(()) };
        let offset = self.output.position;
        self.output.write(&sealed.bytes, "writing a page")?;
        self.page_records.pages.push(PageRecord {
            offset,
            stored_len: sealed.bytes.len() as u32,
            plain_len: sealed.plain_len,
            codec: sealed.codec,
        });
        self.sealer.recycle(sealed.bytes);
        if (self.page_records.pages.len() + 1) * PAGE_RECORD_LEN > INDEX_NODE_TARGET_LEN {
            self.flush_page_records()?;
        }
        Ok(())
    }

    fn flush_page_records(&mut self) -> Result<()> {
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

    /// Writes the last page, the rest of the index, the root and the
    /// trailer, flushes, and returns the output. The archive is complete
    /// only once this returns `Ok`.
    pub fn finish(self) -> Result<W> {
        self.finish_counted().map(|(out, _)| out)
    }

    /// [`finish`](Self::finish), also returning the archive's length.
    pub(crate) fn finish_counted(mut self) -> Result<(W, u64)> {
        let (entries, pages) = self.finish_trees()?;
        let root = Root {
            page_count: self.next_page,
            stream_len: self.page_start,
            entry_count: self.entry_count,
            sessions: vec![Session { first_page: 0, salt: self.session_salt }],
            entries,
            pages,
            history: History::default(),
        };
        self.commit(&root, 0, &mut |_| Ok(()))
    }

    /// Writes the last page and the rest of both trees of this session;
    /// returns their tops (the newest entries run, this session's pages).
    pub(crate) fn finish_trees(&mut self) -> Result<(TreeTop, TreeTop)> {
        if !self.page.is_empty() {
            self.flush_page()?;
        }
        while self.sealer.in_flight() > 0 {
            self.write_oldest()?;
        }
        self.flush_page_records()?;
        self.flush_leaf()?;
        let entries = std::mem::replace(&mut self.entries, TreeBuilder::new(Table::Entries));
        let pages = std::mem::replace(&mut self.pages, TreeBuilder::new(Table::Pages));
        Ok((entries.finish(&mut self.output)?, pages.finish(&mut self.output)?))
    }

    /// Writes `root` and the trailer that commits it, calling `sync` with
    /// the output in between (an append syncs everything the trailer points
    /// to before the trailer exists) and after. Returns the output and the
    /// archive's length.
    pub(crate) fn commit(
        mut self,
        root: &Root,
        previous_trailer: u64,
        sync: &mut dyn FnMut(&mut W) -> Result<()>,
    ) -> Result<(W, u64)> {
        let plain = to_seal(&self.output.archive_id, Sealing::Root, root.encode());
        if plain.len() > MAX_ROOT_LEN as usize {
            return Err(Error::BadInput {
                path: std::path::PathBuf::new(),
                reason: "the index root would be too large: too many sessions (compact the archive)",
            });
        }
        let frame = compress_root(&plain)?;
        let stored_len = (frame.len() + TAG_LEN) as u32;
        let out = &mut self.output;
        let mut trailer = Trailer {
            archive_id: out.archive_id,
            session_salt: self.session_salt,
            root_offset: out.position,
            root_stored_len: stored_len,
            root_plain_len: plain.len() as u32,
            page_count: root.page_count,
            entry_count: root.entry_count,
            previous_trailer,
            tag: [0; TAG_LEN],
        };
        let body = trailer.body();
        let sealed = seal_root(&out.keys, frame, &body);
        trailer.tag = out.keys.trailer_tag(&body);
        out.write(&sealed, "writing the index root")?;
        out.out.flush().map_err(Error::stream("flushing the archive"))?;
        sync(&mut out.out)?;
        out.write(&trailer.encode(), "writing the trailer")?;
        out.out.flush().map_err(Error::stream("flushing the archive"))?;
        sync(&mut out.out)?;
        debug_assert_eq!(trailer.root_offset + u64::from(stored_len) + TRAILER_LEN as u64, out.position);
        Ok((self.output.out, self.output.position))
    }

    /// This session's salt.
    pub(crate) fn session_salt(&self) -> [u8; SESSION_SALT_LEN] {
        self.session_salt
    }

    /// This session's keys.
    pub(crate) fn session_keys(&self) -> Arc<SessionKeys> {
        Arc::clone(&self.output.keys)
    }

    /// Data pages of the archive so far, and its data stream's length.
    pub(crate) fn pages_and_stream(&self) -> (u64, u64) {
        (self.next_page, self.page_start + self.page.len() as u64)
    }

    /// Entries stored in this session, and the first and last paths of its
    /// records.
    pub(crate) fn run_span(&self) -> (u64, Option<&[u8]>, Option<&[u8]>) {
        (self.entry_count, self.first_path.as_deref(), self.last_path.as_deref())
    }

    /// The output, to flush and sync it (an append, before reading back).
    pub(crate) fn output_mut(&mut self) -> &mut W {
        &mut self.output.out
    }
}

impl ArchiveWriter<ArchiveFile> {
    /// [`with_keys`](Self::with_keys) for an archive file: with a password
    /// among the keys, the slot table is wrapped on its own thread while
    /// the data is written, and written last (`late_slots`).
    pub(crate) fn with_late_slots(
        mut out: ArchiveFile,
        keys: &KeySet,
        options: CreateOptions,
    ) -> Result<Self> {
        if !keys.has_password() {
            return Self::with_keys(out, keys, options);
        }
        let (archive_id, content_key) = new_archive_keys(&options)?;
        let (late, prefix) = LateSlots::start(keys, archive_id, &content_key, options.kdf)?;
        out.write_slots_last(late);
        let header = prefix.encode_with(&vec![KeySlot::Empty; KEY_SLOTS]);
        Self::begin(out, archive_id, &content_key, &header, options)
    }
}

/// Checks the KDF parameters, then draws a new archive's id and content key.
fn new_archive_keys(options: &CreateOptions) -> Result<([u8; ARCHIVE_ID_LEN], ContentKey)> {
    options.tuning.validate()?;
    if !options.kdf.is_valid() {
        return Err(Error::InvalidKdf(format!(
            "{:?} (a reader accepts at most {} MiB, {} passes, {} lanes)",
            options.kdf,
            crate::format::MAX_KDF_MEMORY_KIB / 1024,
            crate::format::MAX_KDF_PASSES,
            crate::format::MAX_KDF_LANES
        )));
    }
    let mut archive_id = [0u8; ARCHIVE_ID_LEN];
    random_bytes(&mut archive_id).map_err(Error::stream("drawing random bytes"))?;
    let content_key = ContentKey::random().map_err(Error::stream("drawing random bytes"))?;
    Ok((archive_id, content_key))
}

/// Where a write session begins: the archive's id, the offset of its first
/// byte, and the page number and stream offset it continues from.
pub(crate) struct SessionStart {
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) position: u64,
    pub(crate) next_page: u64,
    pub(crate) stream_len: u64,
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

        use crate::{Archive, CreateOptions, KdfParams, Password, SparseMap};

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
                    "sparse" => <[u8; 32]>::from(Sha256::digest(&logical)),
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
