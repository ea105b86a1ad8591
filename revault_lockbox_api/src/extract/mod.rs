//! Safe extraction.
//!
//! # Security
//! - Every entry is checked before anything is written, in a first pass
//!   over the index: its path (no absolute path, `..`, `.` or empty
//!   component), no entry below a symbolic link or file of the archive,
//!   hard links naming an earlier file, and no existing target unless
//!   overwriting was asked for.
//! - Parents are created component by component and never followed
//!   through a symbolic link, whether the archive or the destination put
//!   it there; symbolic links from the archive are created last.
//! - Files are written to a temporary name in their directory, checked
//!   against their SHA-256, synced (in batches, with `syncfs`) and renamed
//!   into place: no byte that failed authentication sits under a final
//!   name, and a crash leaves no partial file under one.
//! - Owners are not restored; permission bits and mtimes are.

mod place;

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{self, DirBuilder};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use filetime::FileTime;
use sha2::{Digest, Sha256};

use crate::archive::{ContentVisitor, Damage, Span};
use crate::format::{is_within, path_cmp, Entry, EntryKind};
use crate::pipeline::OrderedPool;
use crate::storage::ReadAt;
use crate::{Archive, EntryPath, Error, Progress, Result};
use place::{sync_and_rename, sync_file_system, temp_beside, Placement, Sink, Written};

/// How to extract. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    overwrite: bool,
    sync: bool,
    keep_going: bool,
    only: Vec<Vec<u8>>,
    progress: Option<Arc<Progress>>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions { overwrite: false, sync: true, keep_going: false, only: Vec::new(), progress: None }
    }
}

impl ExtractOptions {
    /// Defaults: no overwriting, files synced, stop at the first damaged
    /// page, everything extracted.
    pub fn new() -> ExtractOptions {
        ExtractOptions::default()
    }

    /// Replace existing files and links (never a directory with a file).
    /// Default: off; an existing path is an error and nothing is written.
    pub fn overwrite(mut self, yes: bool) -> Self {
        self.overwrite = yes;
        self
    }

    /// Sync files to disk before renaming them into place, so that a crash
    /// never leaves an empty or partial file under its final name. Files
    /// are synced in batches, one `syncfs` per batch. Default: on.
    pub fn sync(mut self, yes: bool) -> Self {
        self.sync = yes;
        self
    }

    /// Restore every intact file when some pages are damaged, and report the
    /// damaged ones in [`ExtractReport::damaged`]. Default: off (stop at the
    /// first failure).
    pub fn keep_going(mut self, yes: bool) -> Self {
        self.keep_going = yes;
        self
    }

    /// Extract only these stored paths, and everything below those that are
    /// directories. Each must match an entry. Default: everything.
    pub fn only(mut self, paths: Vec<Vec<u8>>) -> Self {
        self.only = paths;
        self
    }

    /// Counters updated as files are written. Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// What an extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractReport {
    /// Entries restored.
    pub entries: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// With `keep_going`: entries not restored, with the reason.
    pub damaged: Vec<Damage>,
}

/// Files up to this size are gathered in memory and written, synced and
/// renamed by the placing threads; larger ones are streamed to a temporary
/// file as their pages arrive.
const BUFFERED_FILE_MAX: u64 = 256 << 10;
/// Threads that write, sync and rename files when each file is synced:
/// syncing is I/O-bound, and the file system commits concurrent syncs
/// together, so more threads than cores pays off. Without syncing the work
/// is CPU time in the kernel, and more threads than cores only contend for
/// directory locks.
const SYNCING_PLACING_THREADS: usize = 8;
/// Files handed to the placing threads and not yet placed.
const PLACING_IN_FLIGHT: usize = 64;

/// The selection: subtrees of the archive, in index order, none inside
/// another. Empty means everything.
fn selection(only: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut roots: Vec<Vec<u8>> = only.iter().map(|p| p.strip_suffix(b"/").unwrap_or(p).to_vec()).collect();
    roots.sort_by(|a, b| path_cmp(a, b));
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for r in roots {
        if !kept.last().is_some_and(|k| is_within(k, &r)) {
            kept.push(r);
        }
    }
    kept
}

impl<S: ReadAt> Archive<S> {
    /// Restores the archive's entries under `dest`, which must exist.
    /// See the module's security rules.
    pub fn extract(&self, dest: &Path, options: &ExtractOptions) -> Result<ExtractReport> {
        let md = fs::metadata(dest).map_err(Error::io("opening destination", dest))?;
        if !md.is_dir() {
            return Err(Error::BadInput {
                path: dest.to_path_buf(),
                reason: "destination is not a directory",
            });
        }
        let roots = selection(&options.only);
        self.check_before_writing(dest, &roots, options)?;
        let mut x = Extraction::new(dest, options, self.tuning().threads)?;
        let mut visitor = FileWriter {
            x: &mut x,
            selected: self.selected(&roots)?,
            open: HashMap::new(),
            files: HashMap::new(),
            next_token: 0,
            copies: Vec::new(),
        };
        self.walk_content(&mut visitor, false)?;
        let copies = std::mem::take(&mut visitor.copies);
        drop(visitor);
        x.place_all()?;
        x.copy_links(self, copies)?;
        x.finish()?;
        Ok(x.report)
    }

    /// The selected entries in index order: everything, or each selected
    /// subtree read from its lookup on.
    fn selected<'a>(&'a self, roots: &'a [Vec<u8>]) -> Result<Box<dyn Iterator<Item = Result<Entry>> + 'a>> {
        if roots.is_empty() {
            return Ok(Box::new(self.entries()?));
        }
        Ok(Box::new(roots.iter().flat_map(move |root| -> Box<dyn Iterator<Item = Result<Entry>> + 'a> {
            match self.entries_from(root) {
                Ok(entries) => Box::new(
                    entries.take_while(move |e| e.as_ref().map_or(true, |e| is_within(root, &e.path))),
                ),
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        })))
    }

    /// The first pass: every selected entry checked (by the index walk),
    /// every named path found, and no existing target unless overwriting.
    fn check_before_writing(&self, dest: &Path, roots: &[Vec<u8>], options: &ExtractOptions) -> Result<()> {
        for root in roots {
            let first = self.entries_from(root)?.next().transpose()?;
            if !first.is_some_and(|e| is_within(root, &e.path)) {
                return Err(Error::NotFound { path: EntryPath(root.clone()) });
            }
        }
        // This walk of the selection (the whole index when nothing was
        // named) runs every index check before anything is written. Below
        // a directory that does not exist yet nothing exists either.
        let mut missing: Option<Vec<u8>> = None;
        for e in self.selected(roots)? {
            let e = e?;
            if missing.as_ref().is_some_and(|m| is_within(m, &e.path)) {
                continue;
            }
            let path = dest.join(OsStr::from_bytes(&e.path));
            let Ok(md) = fs::symlink_metadata(&path) else {
                missing = Some(e.path);
                continue;
            };
            let ok = if matches!(e.kind, EntryKind::Dir) {
                md.is_dir()
            } else {
                options.overwrite && !md.is_dir()
            };
            if !ok {
                return Err(Error::AlreadyExists { path });
            }
        }
        Ok(())
    }
}

/// A file being written.
struct OpenFile {
    entry: Entry,
    sink: Sink,
    hasher: Sha256,
}

/// Hands the walk the spans of the selected files, creating directories as
/// their entries come, and writes each file as its bytes arrive.
struct FileWriter<'x, 'a, 'e> {
    x: &'x mut Extraction<'a>,
    selected: Box<dyn Iterator<Item = Result<Entry>> + 'e>,
    open: HashMap<usize, OpenFile>,
    /// Files handed out, until their span ends.
    files: HashMap<usize, Entry>,
    next_token: usize,
    /// Hard links whose target is not extracted: written as copies later.
    copies: Vec<Entry>,
}

impl ContentVisitor for FileWriter<'_, '_, '_> {
    fn next_span(&mut self) -> Result<Option<(usize, Span)>> {
        for entry in self.selected.by_ref() {
            let entry = entry?;
            let extent = match &entry.kind {
                EntryKind::Dir => {
                    self.x.make_dir(&entry)?;
                    continue;
                }
                EntryKind::Symlink { .. } => {
                    self.x.symlinks.push(entry);
                    continue;
                }
                EntryKind::Hardlink { target, .. } => {
                    if self.x.extracted_files.contains(target) || self.x.lost.contains(target) {
                        self.x.links.push(entry);
                    } else {
                        self.copies.push(entry);
                    }
                    continue;
                }
                EntryKind::File { .. } => entry.extent.expect("files have an extent"),
            };
            if extent.linked {
                self.x.extracted_files.insert(entry.path.clone());
            }
            let token = self.next_token;
            self.next_token += 1;
            self.files.insert(token, entry);
            return Ok(Some((token, Span { start: extent.offset, size: extent.size })));
        }
        Ok(None)
    }

    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        if !self.open.contains_key(&token) {
            let entry = self.files.remove(&token).expect("span handed out");
            let f = self.x.open_file(entry)?;
            self.open.insert(token, f);
        }
        let f = self.open.get_mut(&token).expect("opened above");
        match &mut f.sink {
            Sink::Buffer(buf) => buf.extend_from_slice(bytes),
            Sink::Temp(tmp) => tmp.write_all(bytes).map_err(Error::io("writing", tmp.path()))?,
        }
        f.hasher.update(bytes);
        if let Some(p) = &self.x.options.progress {
            p.bytes_in.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn end(&mut self, token: usize) -> Result<()> {
        let f = self.open.remove(&token).expect("bytes came first");
        self.x.finish_file(f)
    }

    fn damaged(&mut self, token: usize, error: &Error) -> bool {
        let path = match (self.open.remove(&token), self.files.remove(&token)) {
            (Some(f), _) => f.entry.path,
            (None, Some(e)) => e.path,
            (None, None) => return self.x.options.keep_going,
        };
        self.x.extracted_files.remove(&path);
        if self.x.options.keep_going {
            self.x.report.damaged.push(Damage { path: EntryPath(path.clone()), reason: error.to_string() });
        }
        self.x.lost.insert(path);
        self.x.options.keep_going
    }
}

struct Extraction<'a> {
    dest: &'a Path,
    options: &'a ExtractOptions,
    /// Directories under `dest` known to be real directories.
    verified: HashSet<PathBuf>,
    report: ExtractReport,
    /// Directories made, for their modes and mtimes at the end.
    dirs: Vec<(PathBuf, u32, FileTime)>,
    symlinks: Vec<Entry>,
    links: Vec<Entry>,
    /// Linked files placed (or being placed), by stored path.
    extracted_files: HashSet<Vec<u8>>,
    /// Files not restored because their content was damaged.
    lost: HashSet<Vec<u8>>,
    placing: OrderedPool<Result<Option<Written>>>,
    /// Files written and waiting for their batch's sync and rename.
    pending: Vec<Written>,
    /// The batch being synced and renamed, at most one at a time.
    syncing: OrderedPool<Result<()>>,
    pending_bytes: u64,
}

impl<'a> Extraction<'a> {
    fn new(dest: &'a Path, options: &'a ExtractOptions, threads: usize) -> Result<Extraction<'a>> {
        Ok(Extraction {
            dest,
            options,
            verified: HashSet::new(),
            report: ExtractReport::default(),
            dirs: Vec::new(),
            symlinks: Vec::new(),
            links: Vec::new(),
            extracted_files: HashSet::new(),
            lost: HashSet::new(),
            placing: OrderedPool::new(if options.sync { SYNCING_PLACING_THREADS } else { threads })?,
            pending: Vec::new(),
            syncing: OrderedPool::new(1)?,
            pending_bytes: 0,
        })
    }

    fn target(&self, path: &[u8]) -> PathBuf {
        self.dest.join(OsStr::from_bytes(path))
    }

    /// Makes sure every parent of `path` is a real directory under `dest`,
    /// creating missing ones, never following a symbolic link.
    fn ensure_parents(&mut self, path: &[u8]) -> Result<()> {
        for (end, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            let dir = self.dest.join(OsStr::from_bytes(&path[..end]));
            if self.verified.contains(&dir) {
                continue;
            }
            let unsafe_path = |reason| Error::UnsafePath { path: path.into(), reason };
            match fs::symlink_metadata(&dir) {
                Ok(md) if md.is_dir() => {}
                Ok(md) if md.file_type().is_symlink() => {
                    return Err(unsafe_path("a parent directory is a symbolic link"))
                }
                Ok(_) => return Err(unsafe_path("a parent is not a directory")),
                Err(_) => fs::create_dir(&dir).map_err(Error::io("creating directory", &dir))?,
            }
            self.verified.insert(dir);
        }
        Ok(())
    }

    fn make_dir(&mut self, e: &Entry) -> Result<()> {
        self.ensure_parents(&e.path)?;
        let path = self.target(&e.path);
        match fs::symlink_metadata(&path) {
            Ok(md) if md.is_dir() => {}
            Ok(_) => return Err(Error::AlreadyExists { path }),
            Err(_) => {
                DirBuilder::new().mode(0o700).create(&path).map_err(Error::io("creating directory", &path))?
            }
        }
        self.verified.insert(path.clone());
        self.dirs.push((path, e.mode, FileTime::from_unix_time(e.mtime_secs, e.mtime_nanos)));
        self.report.entries += 1;
        Ok(())
    }

    fn open_file(&mut self, entry: Entry) -> Result<OpenFile> {
        self.ensure_parents(&entry.path)?;
        let size = entry.content().map_or(0, |c| c.0);
        let sink = if size <= BUFFERED_FILE_MAX {
            Sink::Buffer(Vec::with_capacity(size as usize))
        } else {
            Sink::Temp(temp_beside(&self.target(&entry.path))?)
        };
        Ok(OpenFile { entry, sink, hasher: Sha256::new() })
    }

    /// Checks a complete file against its SHA-256 and hands it to the
    /// placing threads; a mismatch never reaches its final name.
    fn finish_file(&mut self, f: OpenFile) -> Result<()> {
        let (size, sha256) = f.entry.content().map(|(s, d)| (s, *d)).expect("files have content");
        if f.hasher.finalize()[..] != sha256 {
            let path = EntryPath(f.entry.path.clone());
            let err = Error::ChecksumMismatch { path: path.clone() };
            self.extracted_files.remove(&f.entry.path);
            self.lost.insert(f.entry.path);
            if self.options.keep_going {
                self.report.damaged.push(Damage { path, reason: err.to_string() });
                return Ok(());
            }
            return Err(err);
        }
        let placement = Placement {
            sink: f.sink,
            path: self.target(&f.entry.path),
            mode: f.entry.mode,
            mtime: FileTime::from_unix_time(f.entry.mtime_secs, f.entry.mtime_nanos),
            overwrite: self.options.overwrite,
        };
        // Without syncing, files are renamed into place at once; with it,
        // they wait for their batch's sync.
        let sync = self.options.sync;
        self.placing.submit(move || {
            let written = placement.write()?;
            if sync {
                return Ok(Some(written));
            }
            written.rename().map(|()| None)
        });
        self.pending_bytes += size;
        while self.placing.in_flight() >= PLACING_IN_FLIGHT {
            self.take_placed()?;
        }
        if self.pending.len() >= place::SYNC_BATCH_FILES || self.pending_bytes >= place::SYNC_BATCH_BYTES {
            self.flush_placed()?;
        }
        self.report.entries += 1;
        self.report.bytes += size;
        if let Some(p) = &self.options.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Collects the oldest placing result.
    fn take_placed(&mut self) -> Result<()> {
        if let Some(written) = self.placing.pop().expect("in flight")? {
            self.pending.push(written);
        }
        Ok(())
    }

    /// Waits for every file handed to the placing threads; when syncing,
    /// hands the batch to the sync thread, which syncs each file system
    /// once, then renames them into place.
    fn flush_placed(&mut self) -> Result<()> {
        while self.placing.in_flight() > 0 {
            self.take_placed()?;
        }
        self.pending_bytes = 0;
        if self.pending.is_empty() {
            return Ok(());
        }
        self.syncing.pop().transpose()?;
        let batch = std::mem::take(&mut self.pending);
        self.syncing.submit(move || sync_and_rename(batch));
        Ok(())
    }

    /// Waits until every file is renamed into place.
    fn place_all(&mut self) -> Result<()> {
        self.flush_placed()?;
        self.syncing.pop().transpose()?;
        Ok(())
    }

    /// Hard links whose target was not extracted become copies of its
    /// content, so that `extract ARCHIVE some/path` gives whole files;
    /// links sharing one target share the first copy.
    fn copy_links<S: ReadAt>(&mut self, archive: &Archive<S>, mut copies: Vec<Entry>) -> Result<()> {
        copies.sort_by_key(|e| e.extent.map(|x| x.offset));
        let mut first_copy: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut to_copy = Vec::new();
        for e in copies {
            let EntryKind::Hardlink { target, .. } = &e.kind else { unreachable!("hard links only") };
            match first_copy.get(target) {
                Some(copy) => {
                    let mut link = e.clone();
                    link.kind = EntryKind::Hardlink { target: copy.clone(), size: 0, sha256: [0; 32] };
                    self.links.push(link);
                }
                None => {
                    first_copy.insert(target.clone(), e.path.clone());
                    to_copy.push(e);
                }
            }
        }
        if to_copy.is_empty() {
            return Ok(());
        }
        let mut visitor = FileWriter {
            x: self,
            selected: Box::new(to_copy.into_iter().map(|mut e| {
                let (size, sha256) = e.content().map(|(s, d)| (s, *d)).expect("hard links have content");
                e.kind = EntryKind::File { size, sha256 };
                e.extent = e.extent.map(|x| crate::format::Extent { linked: true, ..x });
                Ok(e)
            })),
            open: HashMap::new(),
            files: HashMap::new(),
            next_token: 0,
            copies: Vec::new(),
        };
        archive.walk_content(&mut visitor, false)?;
        self.place_all()
    }

    /// Hard links, then symbolic links, then directory modes and mtimes;
    /// then, when syncing, one sync for the renames and links.
    fn finish(&mut self) -> Result<()> {
        for e in std::mem::take(&mut self.links) {
            self.make_hardlink(&e)?;
        }
        for e in std::mem::take(&mut self.symlinks) {
            self.make_symlink(&e)?;
        }
        // Deepest first: writing into a directory changes its mtime, and a
        // read-only mode would stop writes.
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.0.as_os_str().len()));
        for (path, mode, mtime) in dirs {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                .map_err(Error::io("setting permissions of", &path))?;
            filetime::set_file_mtime(&path, mtime).map_err(Error::io("setting mtime of", &path))?;
        }
        if self.options.sync {
            sync_file_system(self.dest)?;
        }
        Ok(())
    }

    fn make_hardlink(&mut self, e: &Entry) -> Result<()> {
        let EntryKind::Hardlink { target, .. } = &e.kind else { unreachable!("hard links only") };
        if self.lost.contains(target) {
            let reason = format!("its target {} is damaged", EntryPath(target.clone()));
            self.report.damaged.push(Damage { path: EntryPath(e.path.clone()), reason });
            return Ok(());
        }
        self.ensure_parents(&e.path)?;
        let (path, original) = (self.target(&e.path), self.target(target));
        if self.options.overwrite && fs::symlink_metadata(&path).is_ok() {
            fs::remove_file(&path).map_err(Error::io("replacing", &path))?;
        }
        fs::hard_link(&original, &path).map_err(Error::io("creating hard link", &path))?;
        self.report.entries += 1;
        Ok(())
    }

    fn make_symlink(&mut self, e: &Entry) -> Result<()> {
        self.ensure_parents(&e.path)?;
        let path = self.target(&e.path);
        let EntryKind::Symlink { target } = &e.kind else { unreachable!("symlinks only") };
        if self.options.overwrite && fs::symlink_metadata(&path).is_ok() {
            fs::remove_file(&path).map_err(Error::io("replacing", &path))?;
        }
        std::os::unix::fs::symlink(OsStr::from_bytes(target), &path)
            .map_err(Error::io("creating symbolic link", &path))?;
        let mtime = FileTime::from_unix_time(e.mtime_secs, e.mtime_nanos);
        filetime::set_symlink_file_times(&path, mtime, mtime)
            .map_err(Error::io("setting mtime of", &path))?;
        self.report.entries += 1;
        Ok(())
    }
}
