//! Changing an archive in place: [`ArchiveUpdater`] appends one write
//! session per change (`add`, `update`, `remove`), [`compact_archive`]
//! rewrites it without what later sessions superseded, and
//! [`repair_archive`] cuts off a torn tail.
//!
//! A session writes after the archive's committed end: new data pages
//! (numbered on from the old page count), one new entries run (puts and
//! deletions), its pages tree, a root listing every session and run, and a
//! trailer pointing back at the previous one. The commit protocol (FORMAT.md
//! §5.1): everything but the trailer is written and synced, then the
//! trailer is written and synced. Until the trailer lands, readers see the
//! previous state; a failed session is cut off again.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::create::{check_inputs, ordered_roots, walk_with, WalkRules};
use super::lock::open_locked;
use super::sync::SyncingWriter;
use super::walk::{Seen, WalkFilter};
use super::writer::{ArchiveWriter, CreateOptions, Metadata, SessionStart};
use super::CreateWarning;
use crate::archive::Merged;
use crate::format::{
    is_within, path_cmp, Entry, EntryKind, Root, Run, Session, Table, TreeTop, MAX_RUNS, MAX_SESSIONS,
};
use crate::index::TreeReader;
use crate::progress::Progress;
use crate::sparse::DataOnly;
use crate::{Archive, EntryPath, Error, OpenOptions, Result, Unlock, WorkloadProfile};
use rustix::fs::FileType;

/// How an archive is changed in place. Every setter's doc states its
/// default.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    create: CreateOptions,
    profile: WorkloadProfile,
    wait: bool,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions::new()
    }
}

impl UpdateOptions {
    /// The [`WorkloadProfile::Balanced`] preset; fail at once when another
    /// writer holds the archive.
    pub fn new() -> UpdateOptions {
        UpdateOptions { create: CreateOptions::new(), profile: WorkloadProfile::Balanced, wait: false }
    }

    /// Page size, zstd level and threads of the new pages, and the reading
    /// knobs, from `profile`. Default: `Balanced`.
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.create = self.create.profile(profile);
        self.profile = profile;
        self
    }

    /// Overrides the zstd level of new pages. Default: the profile's.
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.create = self.create.zstd_level(level);
        self
    }

    /// Overrides the worker threads. Default: the profile's (all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.create = self.create.threads(threads);
        self
    }

    /// Waits for another writer to finish instead of failing with
    /// [`Error::Locked`]. Default: `false`.
    pub fn wait(mut self, wait: bool) -> Self {
        self.wait = wait;
        self
    }

    /// Counters updated as data is archived. Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.create = self.create.progress(progress);
        self
    }

    fn open_options(&self) -> OpenOptions {
        OpenOptions::new().profile(self.profile).threads(self.create.tuning.threads)
    }
}

/// What a change in place did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpdateReport {
    /// Entries stored by the session.
    pub stored: u64,
    /// Deletion records written (each hides a path and what lies below it).
    pub deleted: u64,
    /// Bytes of file content stored.
    pub content_bytes: u64,
    /// Bytes appended to the archive (0 when nothing changed).
    pub bytes_written: u64,
    /// Entries in the archive afterwards.
    pub entries: u64,
    /// Bytes of a torn tail (an interrupted session) cut off first.
    pub torn_tail_cut: u64,
    /// Whether the entries runs were first merged into one (past the bound
    /// on runs), in a session of its own.
    pub runs_merged: bool,
    /// Things skipped, one line each, as [`CreateReport`](crate::CreateReport) has them.
    pub warnings: Vec<CreateWarning>,
}

/// The output of an append session: the archive file, after its committed
/// end, synced in the background as it grows (as create's output is).
type SessionOut = BufWriter<SyncingWriter<File>>;

/// An archive opened for one change in place, holding its writer lock.
///
/// ```
/// use revault_lockbox_api::{create_archive, Archive, ArchiveUpdater, CreateOptions, KdfParams, Password, UpdateOptions};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let work = tempfile::tempdir()?;
/// std::fs::write(work.path().join("a.txt"), b"first")?;
/// let pw = Password::from("pw");
/// let path = work.path().join("a.lbox");
/// create_archive(&path, work.path(), &["a.txt".into()], &pw, CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS))?;
/// std::fs::write(work.path().join("b.txt"), b"second")?;
/// ArchiveUpdater::open(&path, &pw, UpdateOptions::new())?.add(work.path(), &["b.txt".into()])?;
/// ArchiveUpdater::open(&path, &pw, UpdateOptions::new())?.remove(&[b"a.txt".to_vec()])?;
/// let archive = Archive::open(std::fs::File::open(&path)?, &pw)?;
/// let names: Vec<_> = archive.entries()?.map(|e| e.map(|e| e.path)).collect::<Result<_, _>>()?;
/// assert_eq!(names, [b"b.txt".to_vec()]);
/// # Ok(()) }
/// ```
pub struct ArchiveUpdater {
    path: PathBuf,
    file: File,
    archive: Archive<File>,
    options: UpdateOptions,
    report: UpdateReport,
}

impl std::fmt::Debug for ArchiveUpdater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveUpdater").field("path", &self.path).finish_non_exhaustive()
    }
}

impl ArchiveUpdater {
    /// Locks the archive at `path` against other writers, opens it with
    /// `key` (which must open it: a wrong key writes nothing), and cuts off a
    /// torn tail left by an interrupted session.
    pub fn open<'k>(path: &Path, key: impl Into<Unlock<'k>>, options: UpdateOptions) -> Result<Self> {
        let file = open_locked(path, options.wait)?;
        let reader = file.try_clone().map_err(Error::io("opening", path))?;
        let archive = Archive::open_with(reader, key, options.open_options())?;
        let mut updater = ArchiveUpdater {
            path: path.to_path_buf(),
            file,
            archive,
            options,
            report: UpdateReport::default(),
        };
        updater.report.torn_tail_cut = updater.archive.torn_tail_bytes();
        if updater.report.torn_tail_cut > 0 {
            updater.cut_back()?;
        }
        Ok(updater)
    }

    /// Stores `inputs` (taken relative to `base_dir`, as
    /// [`create_archive`](crate::create_archive) takes them) in a new
    /// session: new paths are added, stored paths replaced (tar's `-r`).
    /// A directory replaces only its own entry: what the archive holds below
    /// it stays unless the walk stores it again. A file or symbolic link
    /// replaces a directory with everything below it.
    pub fn add(self, base_dir: &Path, inputs: &[PathBuf]) -> Result<UpdateReport> {
        check_inputs(base_dir, inputs)?;
        self.check_ancestors(base_dir, inputs)?;
        let skip = self.own_file()?;
        self.session(|writer, _, report| {
            let (writer, walked) = walk_with(writer, base_dir, inputs, &skip, no_rules(), None)?;
            report.warnings = walked.warnings;
            report.content_bytes = walked.content_bytes;
            Ok(writer)
        })
    }

    /// Like [`add`](Self::add), but stores only paths whose kind, size or
    /// modification time differ from the stored entry (tar's `-u`). With
    /// `delete_missing`, also deletes stored paths under `inputs` that are
    /// no longer on disk.
    pub fn update(self, base_dir: &Path, inputs: &[PathBuf], delete_missing: bool) -> Result<UpdateReport> {
        check_inputs(base_dir, inputs)?;
        self.check_ancestors(base_dir, inputs)?;
        let skip = self.own_file()?;
        let roots: Vec<Vec<u8>> =
            ordered_roots(base_dir, inputs, false)?.into_iter().map(|r| r.stored).collect();
        self.session(|writer, archive, report| {
            let old = archive.merged_from(roots.first().map(Vec::as_slice))?;
            let mut filter =
                UpdateFilter { old, peeked: None, roots: &roots, delete_missing, hidden: None, deleted: 0 };
            let (mut writer, walked) =
                walk_with(writer, base_dir, inputs, &skip, no_rules(), Some(&mut filter))?;
            filter.delete_before(&mut writer, None)?;
            report.warnings = walked.warnings;
            report.content_bytes = walked.content_bytes;
            report.deleted = filter.deleted;
            Ok(writer)
        })
    }

    /// Deletes `paths` (stored paths; a directory with everything below
    /// it) in a new session. A path not in the archive is an error, and
    /// nothing is written.
    pub fn remove(self, paths: &[Vec<u8>]) -> Result<UpdateReport> {
        let mut paths = paths.to_vec();
        paths.sort_by(|a, b| path_cmp(a, b));
        paths.dedup_by(|inner, outer| is_within(outer, inner));
        for path in &paths {
            if self.archive.find(path)?.is_none() {
                return Err(Error::NotFound { path: EntryPath(path.clone()) });
            }
        }
        self.session(|mut writer, _, report| {
            for path in &paths {
                writer.delete(path)?;
                report.deleted += 1;
            }
            Ok(writer)
        })
    }

    /// The archive file itself, never stored in itself.
    fn own_file(&self) -> Result<Vec<(u64, u64)>> {
        let md = self.file.metadata().map_err(Error::io("inspecting", &self.path))?;
        Ok(vec![(md.dev(), md.ino())])
    }

    /// Refuses, before anything is written, an input that would lie below a
    /// stored file or symbolic link.
    fn check_ancestors(&self, base_dir: &Path, inputs: &[PathBuf]) -> Result<()> {
        for root in ordered_roots(base_dir, inputs, false)? {
            if let Some(blocker) = self.archive.leaf_above(&root.stored)? {
                return Err(below_leaf(blocker));
            }
        }
        Ok(())
    }

    /// Cuts the file back to its committed end.
    fn cut_back(&self) -> Result<()> {
        let (_, _, end) = self.archive.append_point();
        self.file.set_len(end).map_err(Error::io("truncating", &self.path))?;
        self.file.sync_all().map_err(Error::io("syncing", &self.path))
    }

    /// Runs one append session: `body` adds records to the writer; then the
    /// new run is checked against the archive and committed. On any error
    /// before the commit, the file is cut back to its committed end.
    fn session(
        mut self,
        body: impl FnOnce(
            ArchiveWriter<SessionOut>,
            &Archive<File>,
            &mut UpdateReport,
        ) -> Result<ArchiveWriter<SessionOut>>,
    ) -> Result<UpdateReport> {
        if self.archive.root().sessions.len() + 2 > MAX_SESSIONS {
            return Err(Error::BadInput {
                path: self.path.clone(),
                reason: "too many sessions: compact the archive first (lockbox compact)",
            });
        }
        if self.archive.root().history.runs.len() + 1 >= MAX_RUNS {
            self.merge_runs()?;
        }
        let mut report = std::mem::take(&mut self.report);
        let result = self.append(body, &mut report);
        match result {
            Ok(Some(written)) => {
                report.bytes_written = written;
                Ok(report)
            }
            Ok(None) => {
                self.cut_back()?;
                report.entries = self.archive.entry_count();
                Ok(report)
            }
            Err(e) => {
                // The session never committed; its bytes are a torn tail.
                let _ = self.cut_back();
                Err(e)
            }
        }
    }

    /// Writes a session; `None` when `body` recorded nothing.
    fn append(
        &self,
        body: impl FnOnce(
            ArchiveWriter<SessionOut>,
            &Archive<File>,
            &mut UpdateReport,
        ) -> Result<ArchiveWriter<SessionOut>>,
        report: &mut UpdateReport,
    ) -> Result<Option<u64>> {
        let archive = &self.archive;
        let (archive_id, _, end) = archive.append_point();
        let root = archive.root();
        let mut writer = body(self.start_session()?, archive, report)?;
        let (stored, first, last) = writer.run_span();
        let (Some(first), Some(last)) = (first.map(<[u8]>::to_vec), last.map(<[u8]>::to_vec)) else {
            return Ok(None);
        };
        report.stored = stored;
        let (entries, pages) = writer.finish_trees()?;
        writer.output_mut().flush().map_err(Error::io("writing", &self.path))?;
        let (page_count, stream_len) = writer.pages_and_stream();
        let new_run =
            TreeReader { src: &self.file, keys: writer.session_keys(), archive_id, table: Table::Entries };
        let mut offsets = archive.session_offsets().to_vec();
        offsets.push(root.stream_len);
        let delta = count_change(archive, (new_run, entries.clone()), &first, &last, &offsets, stream_len)?;
        let entry_count = (root.entry_count + delta.1).checked_sub(delta.0).ok_or_else(inconsistent)?;
        let new_root = Root {
            page_count,
            stream_len,
            entry_count,
            ..next_root(root, writer.session_salt(), entries, pages, true)
        };
        report.entries = entry_count;
        let (_, len) = writer.commit(&new_root, end, &mut |out| sync(out, &self.path))?;
        Ok(Some(len - end))
    }

    /// A writer of a new session after the committed end.
    fn start_session(&self) -> Result<ArchiveWriter<SessionOut>> {
        let (archive_id, content_key, end) = self.archive.append_point();
        let root = self.archive.root();
        let start = SessionStart {
            archive_id,
            position: end,
            next_page: root.page_count,
            stream_len: root.stream_len,
        };
        let mut out = self.file.try_clone().map_err(Error::io("opening", &self.path))?;
        out.seek(SeekFrom::Start(end)).map_err(Error::io("seeking in", &self.path))?;
        // The background syncs use a file description of their own: one
        // shared with `self.file` would hold the writer lock for as long
        // as the sync thread lives.
        let syncs = File::open(&self.path).map_err(Error::io("opening", &self.path))?;
        let out = BufWriter::with_capacity(1 << 20, SyncingWriter::over(out, syncs)?);
        ArchiveWriter::session(out, content_key, start, self.options.create.clone())
    }

    /// Merges every entries run into one, in a session of its own that
    /// writes no data page, and re-reads the archive.
    fn merge_runs(&mut self) -> Result<()> {
        let merged = (|| {
            let archive = &self.archive;
            let (_, _, end) = archive.append_point();
            let root = archive.root();
            let mut writer = self.start_session()?;
            for entry in archive.merged_from(None)? {
                writer.copy_entry(entry?)?;
            }
            if writer.run_span().0 != root.entry_count {
                return Err(inconsistent());
            }
            let (entries, pages) = writer.finish_trees()?;
            let new_root = next_root(root, writer.session_salt(), entries, pages, false);
            writer.commit(&new_root, end, &mut |out| sync(out, &self.path))
        })();
        if let Err(e) = merged {
            let _ = self.cut_back();
            return Err(e);
        }
        let reader = self.file.try_clone().map_err(Error::io("opening", &self.path))?;
        let key = crate::crypto::ContentKey::from_bytes(self.archive.append_point().1.bytes());
        self.archive = Archive::reopen(reader, &key, self.options.open_options())?;
        self.report.runs_merged = true;
        Ok(())
    }
}

/// The root after `old` of a session with salt `salt` that wrote the run
/// `entries` and the pages tree `pages`: the old root's trees move to the
/// history; with `keep_runs` false the new run replaces every older one.
/// Counts are the old root's, for the caller to update.
fn next_root(old: &Root, salt: [u8; 32], entries: TreeTop, pages: TreeTop, keep_runs: bool) -> Root {
    let mut history = old.history.clone();
    history.pages.push(old.pages.clone());
    if keep_runs {
        history.runs.push(Run { session: (old.sessions.len() - 1) as u32, top: old.entries.clone() });
    } else {
        history.runs.clear();
    }
    let mut sessions = old.sessions.clone();
    sessions.push(Session { first_page: old.page_count, salt });
    Root { sessions, entries, pages, history, ..old.clone() }
}

/// Flushes the session's output and syncs the file's data to disk.
fn sync(out: &mut SessionOut, path: &Path) -> Result<()> {
    out.flush().map_err(Error::io("writing", path))?;
    out.get_ref().get_ref().sync_data().map_err(Error::io("syncing", path))
}

fn inconsistent() -> Error {
    crate::format::malformed_error("index", "entry count differs from the root's")
}

fn below_leaf(blocker: Vec<u8>) -> Error {
    Error::Conflict {
        path: EntryPath(blocker),
        reason: "is a file or symbolic link in the archive; nothing can be stored below it (remove it first)",
    }
}

/// How a new run changes the entry count over the range it touches (from
/// its first path to the end of its last path's subtree): entries of the
/// old view there, and of the new view, which is checked as a reader
/// would check it. Nothing outside the range changes.
fn count_change(
    archive: &Archive<File>,
    new_run: (TreeReader<'_>, TreeTop),
    first: &[u8],
    last: &[u8],
    offsets: &[u64],
    stream_len: u64,
) -> Result<(u64, u64)> {
    if let Some(blocker) = archive.leaf_above(first)? {
        return Err(below_leaf(blocker));
    }
    let in_range = |e: &Entry| path_cmp(&e.path, last).is_le() || is_within(last, &e.path);
    let count = |view: &mut dyn Iterator<Item = Result<Entry>>| -> Result<u64> {
        let mut n = 0;
        for e in view {
            if !in_range(&e?) {
                break;
            }
            n += 1;
        }
        Ok(n)
    };
    let old = count(&mut archive.merged_from(Some(first))?)?;
    let new_view: Merged<'_> = archive.merged_with(Some(first), &[new_run])?;
    let new =
        count(&mut Archive::<File>::checked(new_view, false, offsets, stream_len)).map_err(|e| match e {
            Error::UnsafePath { path, .. } => Error::Conflict {
                path,
                reason: "would lie below a file or symbolic link of the archive (remove that first)",
            },
            e => e,
        })?;
    Ok((old, new))
}

/// `update`'s view of the walk: each path reached is compared with the
/// stored entry, and stored paths under the inputs that the walk passed
/// by are deleted (with `delete_missing`).
struct UpdateFilter<'a, 'r> {
    old: Merged<'a>,
    peeked: Option<Entry>,
    roots: &'r [Vec<u8>],
    delete_missing: bool,
    /// A path stored or deleted in this session that hides what the old
    /// view holds below it.
    hidden: Option<Vec<u8>>,
    deleted: u64,
}

impl UpdateFilter<'_, '_> {
    fn peek(&mut self) -> Result<Option<&Entry>> {
        if self.peeked.is_none() {
            self.peeked = self.old.next().transpose()?;
        }
        Ok(self.peeked.as_ref())
    }

    /// Deletes the old entries before `before` (all, when `None`) that lie
    /// under an input and were not reached; stops past the last input.
    fn delete_before(&mut self, writer: &mut ArchiveWriter<SessionOut>, before: Option<&[u8]>) -> Result<()> {
        let last_root = self.roots.last().cloned().unwrap_or_default();
        while let Some(e) = self.peek()? {
            if before.is_some_and(|b| path_cmp(&e.path, b).is_ge()) {
                break;
            }
            if path_cmp(&e.path, &last_root).is_gt() && !is_within(&last_root, &e.path) {
                break;
            }
            let e = self.peeked.take().expect("peeked");
            if self.hidden.as_ref().is_some_and(|h| is_within(h, &e.path)) {
                continue;
            }
            if self.delete_missing && self.roots.iter().any(|r| is_within(r, &e.path)) {
                writer.delete(&e.path)?;
                self.deleted += 1;
                self.hidden = Some(e.path);
            }
        }
        Ok(())
    }
}

impl WalkFilter<SessionOut> for UpdateFilter<'_, '_> {
    fn admit(&mut self, writer: &mut ArchiveWriter<SessionOut>, stored: &[u8], seen: &Seen) -> Result<bool> {
        self.delete_before(writer, Some(stored))?;
        let unchanged = match self.peek()? {
            Some(e) if e.path == stored => {
                let e = self.peeked.take().expect("peeked");
                same_as_stored(&e, seen)
            }
            _ => false,
        };
        if !unchanged && seen.kind != FileType::Directory {
            self.hidden = Some(stored.to_vec());
        }
        Ok(!unchanged)
    }
}

/// Whether what the walk saw looks like stored entry `e`: same
/// kind, size and modification time (what tar's `-u` compares).
fn same_as_stored(e: &Entry, seen: &Seen) -> bool {
    let same_time = (e.mtime_secs, e.mtime_nanos) == (seen.mtime_secs, seen.mtime_nanos);
    let same_kind = match &e.kind {
        EntryKind::Dir => seen.kind == FileType::Directory,
        EntryKind::Symlink { .. } => seen.kind == FileType::Symlink,
        EntryKind::File { size, .. } | EntryKind::Hardlink { size, .. } => {
            seen.kind == FileType::RegularFile && *size == seen.size
        }
    };
    same_kind && same_time
}

/// Rewrites the archive at `path` (opened with `key`) without what later
/// sessions superseded: one session, one run, only the live files'
/// content. The new archive keeps the archive id and key slots; it is
/// written to a temporary file beside the old one, synced, and renamed
/// over it, so the path holds either the old or the new archive, whole.
/// Holds the writer lock throughout. Returns the new archive's length.
pub fn compact_archive<'k>(path: &Path, key: impl Into<Unlock<'k>>, options: UpdateOptions) -> Result<u64> {
    let file = open_locked(path, options.wait)?;
    let reader = file.try_clone().map_err(Error::io("opening", path))?;
    let archive = Archive::open_with(reader, key, options.open_options())?;
    let mut head = vec![0u8; archive.data_start() as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0).map_err(Error::io("reading", path))?;
    let len = rewrite_archive(path, archive, &head, &options.create)?;
    drop(file);
    Ok(len)
}

/// Writes the live state of `archive` (read from `path`, whose writer lock
/// the caller holds) after `head` (the header and key-slot table, resized
/// or not) to a temporary file beside `path`, syncs it and renames it over
/// `path`. Returns the new archive's length.
pub(crate) fn rewrite_archive(
    path: &Path,
    archive: Archive<File>,
    head: &[u8],
    options: &CreateOptions,
) -> Result<u64> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(Error::io("creating a temporary file in", dir))?;
    let mut out = BufWriter::with_capacity(1 << 20, SyncingWriter::new(tmp)?);
    out.write_all(head).map_err(Error::io("writing", path))?;
    let (archive_id, content_key, _) = archive.append_point();
    let start = SessionStart { archive_id, position: head.len() as u64, next_page: 0, stream_len: 0 };
    let mut writer = ArchiveWriter::session(out, content_key, start, options.clone())?;
    let mut leaf = None;
    for entry in archive.entries()? {
        let entry = entry?;
        let meta = Metadata::of_entry(&entry);
        match &entry.kind {
            EntryKind::Dir => writer.add_dir(&entry.path, &meta)?,
            EntryKind::Symlink { target } => writer.add_symlink(&entry.path, &meta, target)?,
            EntryKind::Hardlink { target, .. } => writer.add_hardlink(&entry.path, &meta, target)?,
            EntryKind::File { size, .. } => {
                let mut content = archive.content_reader(&entry, leaf.take())?;
                let linked = entry.extent.is_some_and(|x| x.linked);
                let n = if let Some(map) = entry.sparse_map() {
                    let data = DataOnly::new(&mut content, map);
                    let stored =
                        writer.add_sparse_file(&entry.path, &meta, map.clone(), *size, linked, data)?;
                    if stored == map.stored_len() {
                        *size
                    } else {
                        stored
                    }
                } else if linked {
                    writer.add_linked_file(&entry.path, &meta, *size, &mut content)?
                } else {
                    writer.add_file(&entry.path, &meta, *size, &mut content)?
                };
                // Read to the end once more: the reader checks the digest there.
                content.read(&mut [0u8; 1]).map_err(Error::io("reading from", path))?;
                if n != *size {
                    return Err(inconsistent());
                }
                leaf = content.into_leaf();
            }
        }
    }
    let (out, len) = writer.finish_counted()?;
    let tmp = out.into_inner().map_err(|e| Error::io("writing", path)(e.into_error()))?.finish();
    tmp.as_file().sync_all().map_err(Error::io("syncing", tmp.path()))?;
    tmp.persist(path).map_err(|e| Error::io("renaming the compacted archive to", path)(e.error))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(len)
}

/// Cuts off the torn tail of the archive at `path` (what an interrupted
/// session left after the last committed trailer), after checking with
/// `key` which trailer is committed. Returns the bytes cut (0 when the
/// archive was whole).
pub fn repair_archive<'k>(path: &Path, key: impl Into<Unlock<'k>>, wait: bool) -> Result<u64> {
    let file = open_locked(path, wait)?;
    let reader = file.try_clone().map_err(Error::io("opening", path))?;
    let archive = Archive::open(reader, key)?;
    let torn = archive.torn_tail_bytes();
    if torn > 0 {
        let (_, _, end) = archive.append_point();
        file.set_len(end).map_err(Error::io("truncating", path))?;
        file.sync_all().map_err(Error::io("syncing", path))?;
    }
    Ok(torn)
}

/// Appends walk as `create` does by default: links stored as links, every
/// path selected, warnings reported.
fn no_rules() -> WalkRules<'static> {
    static ALL: std::sync::OnceLock<super::Selection> = std::sync::OnceLock::new();
    WalkRules {
        follow: false,
        strict: false,
        selection: ALL.get_or_init(super::Selection::new),
        xattrs: false,
    }
}
