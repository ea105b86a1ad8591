//! [`ArchiveWriter`]: streams entries into an archive in one pass, in index
//! order, with memory bounded whatever the number of entries. This file
//! holds the writer's state, its start and the checks on each entry; page
//! filling, key setup and the commit have files of their own.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::chunk_index::{SessionChunks, StoredChunks};
use super::chunked::Chunking;
use super::options::Signing;
use super::output::{HeaderCopy, Output};
use super::pages::FillingPage;
use super::{CreateOptions, Metadata, SessionStart};
use crate::crypto::{random_bytes, ContentKey, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{
    check_entry_path, check_name, check_symlink_target, check_xattr_list, encoded_record_len, is_within,
    path_cmp, recovery_allowed, EntriesLeaf, Entry, EntryKind, Extent, Hash, PagesLeaf, Record, SessionInfo,
    SparseMap, Table, TreeTop, INDEX_NODE_TARGET_LEN, SESSION_SALT_LEN,
};
use crate::index::TreeBuilder;
use crate::keys::KeySet;
use crate::pipeline::{PageSealer, SealingKeys};
use crate::profile::CreateTuning;
use crate::storage::ReadAt;

/// Data pages after which an entries leaf is sealed even when not full.
const LEAF_SPAN_PAGES: usize = 4;

/// What a hard link repeats of its file: extent, digest, logical size and
/// sparse map.
type LinkTarget = (Extent, [u8; 32], u64, Option<SparseMap>);

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
/// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Password};
/// use revault_lockbox_api::create::Metadata;
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
    pub(super) output: Output<W>,
    pub(super) session_salt: [u8; SESSION_SALT_LEN],
    /// Hash of this session's header, for its trailer.
    pub(super) header_hash: Hash,
    /// The previous trailer's end and commit hash.
    pub(super) previous: (u64, Hash),
    /// What this session's header says, for its record in the sessions tree.
    pub(super) info: SessionInfo,
    /// Where this session starts: its header's offset, its first page
    /// number and data-stream offset.
    pub(super) start: (u64, u64, u64),
    /// Deletion records written.
    pub(super) deleted: u64,
    /// Key ids of the keys that sign this session, for its summary.
    pub(crate) signers: Vec<Vec<u8>>,
    pub(super) tuning: CreateTuning,
    pub(super) page: FillingPage,
    /// The size the current page fills to: `small_files_page_size` until
    /// bytes of a large file go into it, then `page_size`.
    pub(super) page_limit: usize,
    /// Data-stream offset of the current page's first byte.
    pub(super) page_start: u64,
    pub(super) next_page: u64,
    pub(super) sealer: PageSealer,
    /// Records of written pages waiting for their leaf.
    pub(super) page_records: PagesLeaf,
    pub(super) pages: TreeBuilder,
    /// Records waiting for their leaf, and their encoded size.
    pub(super) leaf: Vec<Record>,
    pub(super) leaf_bytes: usize,
    /// Data-stream offset when the current leaf's first record came.
    pub(super) leaf_stream_start: u64,
    pub(super) entries: TreeBuilder,
    /// Entries stored (deletions not counted).
    pub(super) entry_count: u64,
    /// The first record's path, once there is one.
    pub(super) first_path: Option<Vec<u8>>,
    pub(super) last_path: Option<Vec<u8>>,
    /// The last entry that is not a directory: nothing may follow below it.
    pub(super) last_leaf: Option<Vec<u8>>,
    /// Files with more than one link, by path, for their hard links.
    pub(super) link_targets: HashMap<Vec<u8>, LinkTarget>,
    /// Who signs the commit.
    pub(super) signing: Signing,
    /// For a compaction: the state it holds, for its summary.
    pub(super) state: u64,
    /// The chunks this session stores: found again by id, and its chunk
    /// index (format v4).
    pub(crate) chunk_index: SessionChunks,
    /// The chunk index's top once written, for the session's run.
    pub(super) chunk_top: TreeTop,
    /// Chunks earlier sessions stored (an append).
    pub(super) stored_chunks: Option<Box<dyn StoredChunks>>,
    /// How large files are cut into chunks, and the chunks known.
    pub(super) chunking: Chunking,
    /// The file being written, to read the session back for its recovery
    /// record (none: a stream, which cannot carry one).
    pub(super) read_back: Option<Arc<dyn ReadAt>>,
}

impl<W: Write> ArchiveWriter<W> {
    /// Starts an archive locked with `keys` (a `&Password`, or a
    /// [`KeySet`] of passwords and recipients); writes the header at once.
    pub fn new(out: W, keys: impl Into<KeySet>, options: CreateOptions) -> Result<Self> {
        Self::with_keys(out, &keys.into(), options)
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
        if options.tuning.recovery_percent != 0 && !recovery_allowed(start.version) {
            return Err(Error::RecoveryUnavailable {
                reason: "an archive of format version 3 has no place for it (compact it to version 4 first)",
            });
        }
        if options.tuning.recovery_percent != 0 && options.read_back.is_none() {
            // Refused before a byte is written.
            return Err(Error::RecoveryUnavailable {
                reason: "the archive goes to a stream, which cannot be read back to compute it",
            });
        }
        super::header::checked_label(&options.label)?;
        options.walk_record()?;
        let mut session_salt = [0u8; SESSION_SALT_LEN];
        random_bytes(&mut session_salt).map_err(Error::stream("drawing random bytes"))?;
        let keys = Arc::new(SessionKeys::derive(content_key, &session_salt));
        let tuning = &options.tuning;
        let sealing = SealingKeys {
            keys: Arc::clone(&keys),
            archive_id: start.archive_id,
            zstd_level: tuning.zstd_level,
        };
        let mut sealer =
            PageSealer::new(sealing, tuning.small_files_page_size, tuning.threads, tuning.pages_in_flight)?;
        let mut output = Output {
            out,
            position: start.position,
            archive_id: start.archive_id,
            version: start.version,
            keys,
            progress: options.progress.clone(),
            log: options.log.clone(),
            header_copy: HeaderCopy::of(&start.head, start.version, Arc::default()),
        };
        let (header_hash, info) = super::header::write_header(&mut output, &start, &session_salt, &options)?;
        Ok(ArchiveWriter {
            output,
            session_salt,
            header_hash,
            previous: start.previous,
            info,
            start: (start.position, start.next_page, start.stream_len),
            deleted: 0,
            // Key ids as the signature block's (FORMAT.md §3.10): fingerprints.
            signers: options.signing.keys.iter().map(|k| k.fingerprint().0.to_vec()).collect(),
            page: FillingPage::new(sealer.buffer()),
            page_limit: tuning.small_files_page_size,
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
            leaf_stream_start: start.stream_len,
            entries: TreeBuilder::new(Table::Entries),
            entry_count: 0,
            first_path: None,
            last_path: None,
            last_leaf: None,
            link_targets: HashMap::new(),
            signing: options.signing,
            tuning: options.tuning,
            state: start.state,
            chunk_index: SessionChunks::default(),
            chunk_top: TreeTop::default(),
            stored_chunks: None,
            chunking: Chunking::new(content_key, &start.archive_id, options.chunk_params),
            read_back: options.read_back.map(|r| r.0),
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

    /// Refuses unsafe paths, and paths not after the last one.
    pub(super) fn check_next_path(&self, path: &[u8]) -> Result<()> {
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

    pub(super) fn push_entry(
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
        let meta = Metadata {
            mode: meta.mode & 0o7777,
            mtime_nanos: meta.mtime_nanos.min(999_999_999),
            user: name(&meta.user),
            group: name(&meta.group),
            xattrs,
            ..meta.clone()
        };
        let entry = Entry { path: path.to_vec(), kind, meta, extent, sparse };
        if let Some(log) = &self.output.log {
            log.0.entry(&entry);
        }
        self.push_checked(entry)
    }

    /// Records that `path` and everything below it are deleted: older runs'
    /// entries there are hidden (an append session).
    pub(crate) fn delete(&mut self, path: &[u8]) -> Result<()> {
        self.check_next_path(path)?;
        if let Some(log) = &self.output.log {
            log.0.removed(path);
        }
        if let Some(p) = &self.output.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
        self.deleted += 1;
        self.push_record(Record::Delete(path.to_vec()))
    }

    /// Whether this session stored a file that hard links may name at
    /// `path` (a linked file).
    pub(crate) fn links_to(&self, path: &[u8]) -> bool {
        self.link_targets.contains_key(path)
    }

    /// Appends an entry as it was read from another run (merging runs):
    /// its content is where that run said.
    pub(crate) fn copy_entry(&mut self, entry: Entry) -> Result<()> {
        self.check_next_path(&entry.path)?;
        self.push_checked(entry)
    }

    /// Appends an entry whose path was checked to the current leaf.
    pub(super) fn push_checked(&mut self, entry: Entry) -> Result<()> {
        self.entry_count += 1;
        if let Some(p) = &self.output.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
        self.push_record(Record::Put(entry))
    }

    pub(super) fn push_record(&mut self, record: Record) -> Result<()> {
        let len = encoded_record_len(&record);
        let stream = self.page_start + self.page.len() as u64;
        if self.leaf_bytes + len > INDEX_NODE_TARGET_LEN || self.leaf_spans_to(stream) {
            self.flush_leaf()?;
        }
        if self.leaf.is_empty() {
            self.leaf_stream_start = stream;
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

    /// Flips a bit of the last file's SHA-256 in its record: content that
    /// authenticates but does not match its digest, as a key holder could
    /// write.
    #[cfg(test)]
    pub(crate) fn misdigest_last_file(&mut self) {
        match self.leaf.last_mut() {
            Some(Record::Put(Entry { kind: EntryKind::File { sha256, .. }, .. })) => sha256[0] ^= 1,
            other => panic!("the last record is no file: {other:?}"),
        }
    }

    /// Makes the last file a chunked one (FORMAT.md §3.5c) of `size` bytes
    /// hashing to `sha256`, whose list is the content just written for it:
    /// how tests build chunked files as a key holder could.
    #[cfg(test)]
    pub(crate) fn chunk_last_file(&mut self, size: u64, sha256: [u8; crate::format::DIGEST_LEN]) {
        match self.leaf.last_mut() {
            Some(Record::Put(Entry {
                kind: EntryKind::File { size: s, sha256: d },
                extent: Some(x),
                ..
            })) => {
                let chunks = (x.size / crate::format::CHUNK_RECORD_LEN as u64) as u32;
                (*s, *d) = (size, sha256);
                *x = Extent { size, chunks, ..*x };
            }
            other => panic!("the last record is no file: {other:?}"),
        }
    }

    /// Makes the session's record in the root say `created_ns`, whatever
    /// its header (already written) says.
    #[cfg(test)]
    pub(crate) fn misdate_record(&mut self, created_ns: i64) {
        self.info.created_ns = created_ns;
    }

    /// Makes the root and trailer claim `count` entries.
    #[cfg(test)]
    pub(crate) fn claim_entries(&mut self, count: u64) {
        self.entry_count = count;
    }

    /// Whether the data stream, at `stream`, has grown by LEAF_SPAN_PAGES
    /// small files' pages since the current leaf's first record came. Such
    /// a leaf is sealed, when the next record comes or a page is handed
    /// over, whichever is first, so that a cut archive keeps the names of
    /// all but its last few pages' files, also those stored before a large
    /// file the cut falls in (FORMAT.md §5, §6.6).
    pub(super) fn leaf_spans_to(&self, stream: u64) -> bool {
        let span = (LEAF_SPAN_PAGES * self.tuning.small_files_page_size) as u64;
        !self.leaf.is_empty() && stream - self.leaf_stream_start >= span
    }

    pub(super) fn flush_leaf(&mut self) -> Result<()> {
        if self.leaf.is_empty() {
            return Ok(());
        }
        let plain = EntriesLeaf::encode(&self.leaf);
        let first_key = self.leaf[0].path().to_vec();
        self.leaf.clear();
        self.leaf_bytes = 0;
        self.entries.add_leaf(first_key, plain, &mut self.output)
    }
}
