//! Safe extraction.
//!
//! # Security
//! - Every entry path is checked before anything is written: absolute
//!   paths, `..`, `.` and empty components are refused, as are entries
//!   below a symbolic link of the same archive.
//! - Parents are created component by component and never followed
//!   through a symbolic link, whether the archive or the destination put
//!   it there; symbolic links from the archive are created last.
//! - Files are written to a temporary name in their directory, checked
//!   against their SHA-256, synced (in batches, with `syncfs`) and renamed
//!   into place: no byte that failed authentication sits under a final
//!   name, and a crash leaves no partial file under one.
//! - Existing paths are refused unless overwriting was asked for.
//! - Owners are not restored; permission bits and mtimes are.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{self, DirBuilder};
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use filetime::FileTime;
use sha2::{Digest, Sha256};
use tempfile::{NamedTempFile, TempPath};

use crate::format::{Entry, EntryKind};
use crate::pipeline::OrderedPool;
use crate::stream::{Span, SpanVisitor};
use crate::writer::show;
use crate::{check_entry_path, Archive, Error, Progress, Result};

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
    pub damaged: Vec<(String, String)>,
}

/// A file whose bytes are streamed from the data pages.
struct FileJob {
    entry: usize,
    start: u64,
    size: u64,
    sha256: [u8; 32],
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

/// Where a file's bytes go while it is being extracted.
enum Sink {
    Buffer(Vec<u8>),
    Temp(NamedTempFile),
}

/// A file being extracted.
struct OpenFile {
    sink: Sink,
    hasher: Sha256,
}

/// Everything a placing thread needs to put one checked file in place.
struct Placement {
    sink: Sink,
    path: PathBuf,
    mode: u32,
    mtime: FileTime,
    overwrite: bool,
}

/// A complete file under its temporary name, waiting for the sync of its
/// batch before it is renamed into place.
struct Written {
    tmp: TempPath,
    path: PathBuf,
    dev: u64,
    overwrite: bool,
}

impl Placement {
    /// Writes the file (if buffered) and sets its mode and mtime, under its
    /// temporary name.
    fn write(self) -> Result<Written> {
        let path = self.path;
        let tmp = match self.sink {
            Sink::Temp(tmp) => tmp,
            Sink::Buffer(bytes) => {
                let mut tmp = temp_beside(&path)?;
                tmp.write_all(&bytes).map_err(Error::io("writing", tmp.path()))?;
                tmp
            }
        };
        let file = tmp.as_file();
        file.set_permissions(fs::Permissions::from_mode(self.mode))
            .map_err(Error::io("setting permissions of", &path))?;
        filetime::set_file_handle_times(file, None, Some(self.mtime))
            .map_err(Error::io("setting mtime of", &path))?;
        let dev = file.metadata().map_err(Error::io("inspecting", &path))?.dev();
        Ok(Written { tmp: tmp.into_temp_path(), path, dev, overwrite: self.overwrite })
    }
}

impl Written {
    /// Renames the file into place; never replaces an existing path unless
    /// overwriting was asked for.
    fn rename(self) -> Result<()> {
        let path = self.path;
        let persisted =
            if self.overwrite { self.tmp.persist(&path) } else { self.tmp.persist_noclobber(&path) };
        persisted.map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                Error::AlreadyExists { path: path.clone() }
            } else {
                Error::io("renaming into place", &path)(e.error)
            }
        })
    }
}

/// Files synced together: a batch is flushed with one `syncfs` per file
/// system, then renamed into place. One sync for many files costs about
/// what one `fsync` does.
const SYNC_BATCH_FILES: usize = 4096;
/// Bytes written before a batch is synced, bounding how much a crash can
/// leave behind under temporary names.
const SYNC_BATCH_BYTES: u64 = 256 << 20;

/// Syncs the file systems a batch of written files is on, then renames
/// them into place. Runs on a thread of its own while extraction goes on.
fn sync_and_rename(batch: Vec<Written>) -> Result<()> {
    let mut synced = HashSet::new();
    for w in &batch {
        if synced.insert(w.dev) {
            sync_file_system(w.path.parent().expect("entry paths have a parent under dest"))?;
        }
    }
    batch.into_iter().try_for_each(Written::rename)
}

/// Flushes the file system holding `dir` (`syncfs`): the data of every
/// file written there is on disk when it returns.
fn sync_file_system(dir: &Path) -> Result<()> {
    let dir_file = fs::File::open(dir).map_err(Error::io("opening", dir))?;
    rustix::fs::syncfs(&dir_file).map_err(|e| Error::io("syncing the file system of", dir)(e.into()))
}

/// A new temporary file in the directory of `path`.
fn temp_beside(path: &Path) -> Result<NamedTempFile> {
    let dir = path.parent().expect("entry paths have a parent under dest");
    tempfile::Builder::new()
        .prefix(".lockbox-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(Error::io("creating a temporary file in", dir))
}

impl<R: Read + Seek> Archive<R> {
    /// Restores the archive's entries under `dest`, which must exist.
    /// See the module's security rules.
    pub fn extract(&mut self, dest: &Path, options: &ExtractOptions) -> Result<ExtractReport> {
        let md = fs::metadata(dest).map_err(Error::io("opening destination", dest))?;
        if !md.is_dir() {
            return Err(Error::InvalidInput(format!("destination {} is not a directory", dest.display())));
        }
        self.with_entries(|archive, entries| archive.extract_entries(entries, dest, options))
    }

    fn extract_entries(
        &mut self,
        entries: &[Entry],
        dest: &Path,
        options: &ExtractOptions,
    ) -> Result<ExtractReport> {
        let selected = select(entries, &options.only)?;
        check_paths(entries)?;
        let mut x = Extraction {
            dest,
            options,
            entries,
            verified: HashSet::new(),
            report: ExtractReport::default(),
            dirs: Vec::new(),
            placing: OrderedPool::new(if options.sync {
                SYNCING_PLACING_THREADS
            } else {
                self.tuning().threads
            }),
            lost: HashSet::new(),
            pending: Vec::new(),
            syncing: OrderedPool::new(1),
            pending_bytes: 0,
        };
        x.check_targets(&selected)?;

        // Hard links whose target is not extracted become copies of it, so
        // that `extract ARCHIVE some/path` gives whole files.
        let mut link_to: HashMap<&[u8], usize> = HashMap::new();
        let mut jobs = Vec::new();
        let mut links = Vec::new();
        let mut symlinks = Vec::new();
        for &i in &selected {
            let e = &entries[i];
            match &e.kind {
                EntryKind::Dir => x.make_dir(i)?,
                EntryKind::File { size, location, sha256 } => {
                    link_to.insert(&e.path, i);
                    let start = self.stream_offset(location);
                    jobs.push(FileJob { entry: i, start, size: *size, sha256: *sha256 });
                }
                EntryKind::Hardlink { target } => match link_to.get(target.as_slice()) {
                    Some(&t) => links.push((i, t)),
                    None => {
                        let t = entries.iter().position(|c| &c.path == target).expect("checked target");
                        let EntryKind::File { size, location, sha256 } = &entries[t].kind else {
                            unreachable!("checked target")
                        };
                        link_to.insert(target, i);
                        let start = self.stream_offset(location);
                        jobs.push(FileJob { entry: i, start, size: *size, sha256: *sha256 });
                    }
                },
                EntryKind::Symlink { .. } => symlinks.push(i),
            }
        }
        jobs.sort_by_key(|j| j.start);
        let spans: Vec<Span> = jobs.iter().map(|j| Span { start: j.start, size: j.size }).collect();
        let pages = self.pages_of(&spans);
        self.stream_spans(&spans, &pages, &mut FileWriter { x: &mut x, jobs: &jobs, open: HashMap::new() })?;
        x.place_all()?;
        for (i, target) in links {
            x.make_hardlink(i, target)?;
        }
        for i in symlinks {
            x.make_symlink(i)?;
        }
        x.finish_dirs()?;
        if options.sync {
            // Makes the renames, links and directory metadata durable too.
            sync_file_system(dest)?;
        }
        Ok(x.report)
    }
}

/// Indices of the entries to extract, in archive order.
fn select(entries: &[Entry], only: &[Vec<u8>]) -> Result<Vec<usize>> {
    if only.is_empty() {
        return Ok((0..entries.len()).collect());
    }
    let only: Vec<&[u8]> = only.iter().map(|p| p.strip_suffix(b"/").unwrap_or(p)).collect();
    let mut used = vec![false; only.len()];
    let picked = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            let mut hit = false;
            for (k, p) in only.iter().enumerate() {
                if e.path == *p || (e.path.starts_with(p) && e.path.get(p.len()) == Some(&b'/')) {
                    used[k] = true;
                    hit = true;
                }
            }
            hit
        })
        .map(|(i, _)| i)
        .collect();
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(Error::InvalidInput(format!("{}: not found in the archive", show(only[k]))));
    }
    Ok(picked)
}

/// Refuses unsafe paths, paths below the archive's own symbolic links, and
/// hard links to anything but an earlier file, before anything is written.
/// Every entry is checked, not only those selected: an archive holding one
/// hostile path is not trusted for any.
fn check_paths(entries: &[Entry]) -> Result<()> {
    let symlinks: HashSet<&[u8]> = entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Symlink { .. }))
        .map(|e| e.path.as_slice())
        .collect();
    let mut files_before: HashSet<&[u8]> = HashSet::new();
    for e in entries {
        let unsafe_path = |reason| Error::UnsafePath { path: show(&e.path), reason };
        check_entry_path(&e.path).map_err(unsafe_path)?;
        let mut prefix_end = e.path.iter().enumerate().filter(|(_, &b)| b == b'/').map(|(i, _)| i);
        if prefix_end.any(|i| symlinks.contains(&e.path[..i])) {
            return Err(unsafe_path("it lies below a symbolic link of the archive"));
        }
        match &e.kind {
            EntryKind::File { .. } => {
                files_before.insert(&e.path);
            }
            EntryKind::Hardlink { target } if !files_before.contains(target.as_slice()) => {
                return Err(unsafe_path("hard link to something that is not an earlier file"));
            }
            _ => {}
        }
    }
    Ok(())
}

struct Extraction<'a> {
    dest: &'a Path,
    options: &'a ExtractOptions,
    entries: &'a [Entry],
    /// Directories under `dest` known to be real directories.
    verified: HashSet<PathBuf>,
    report: ExtractReport,
    dirs: Vec<usize>,
    placing: OrderedPool<Result<Option<Written>>>,
    /// Files written and waiting for their batch's sync and rename.
    pending: Vec<Written>,
    /// The batch being synced and renamed, at most one at a time.
    syncing: OrderedPool<Result<()>>,
    pending_bytes: u64,
    /// Entries not restored because their content was damaged: hard links
    /// to them are not restored either.
    lost: HashSet<usize>,
}

/// Writes the files of an extraction as their bytes arrive.
struct FileWriter<'x, 'a> {
    x: &'x mut Extraction<'a>,
    jobs: &'x [FileJob],
    open: HashMap<usize, OpenFile>,
}

impl SpanVisitor for FileWriter<'_, '_> {
    fn begin(&mut self, span: usize) -> Result<()> {
        let f = self.x.open_file(&self.jobs[span])?;
        self.open.insert(span, f);
        Ok(())
    }

    fn bytes(&mut self, span: usize, bytes: &[u8]) -> Result<()> {
        let f = self.open.get_mut(&span).expect("begun");
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

    fn end(&mut self, span: usize) -> Result<()> {
        let f = self.open.remove(&span).expect("begun");
        self.x.finish_file(&self.jobs[span], f)
    }

    fn damaged(&mut self, span: usize, error: &Error) -> bool {
        self.open.remove(&span);
        self.x.lost.insert(self.jobs[span].entry);
        if self.x.options.keep_going {
            self.x
                .report
                .damaged
                .push((show(&self.x.entries[self.jobs[span].entry].path), error.to_string()));
        }
        self.x.options.keep_going
    }
}

impl Extraction<'_> {
    fn target(&self, i: usize) -> PathBuf {
        self.dest.join(OsStr::from_bytes(&self.entries[i].path))
    }

    /// Refuses existing targets up front (unless overwriting), so that a
    /// refused extraction writes nothing.
    fn check_targets(&self, selected: &[usize]) -> Result<()> {
        for &i in selected {
            let path = self.target(i);
            let Ok(md) = fs::symlink_metadata(&path) else { continue };
            let is_dir_entry = matches!(self.entries[i].kind, EntryKind::Dir);
            let ok = if is_dir_entry { md.is_dir() } else { self.options.overwrite && !md.is_dir() };
            if !ok {
                return Err(Error::AlreadyExists { path });
            }
        }
        Ok(())
    }

    /// Makes sure every parent of entry `i` is a real directory under
    /// `dest`, creating missing ones, never following a symbolic link.
    fn ensure_parents(&mut self, i: usize) -> Result<()> {
        let path = &self.entries[i].path;
        for (end, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            let dir = self.dest.join(OsStr::from_bytes(&path[..end]));
            if self.verified.contains(&dir) {
                continue;
            }
            match fs::symlink_metadata(&dir) {
                Ok(md) if md.is_dir() => {}
                Ok(md) if md.file_type().is_symlink() => {
                    return Err(Error::UnsafePath {
                        path: show(path),
                        reason: "a parent directory is a symbolic link",
                    });
                }
                Ok(_) => {
                    return Err(Error::UnsafePath { path: show(path), reason: "a parent is not a directory" })
                }
                Err(_) => fs::create_dir(&dir).map_err(Error::io("creating directory", &dir))?,
            }
            self.verified.insert(dir);
        }
        Ok(())
    }

    fn make_dir(&mut self, i: usize) -> Result<()> {
        self.ensure_parents(i)?;
        let path = self.target(i);
        match fs::symlink_metadata(&path) {
            Ok(md) if md.is_dir() => {}
            Ok(_) => return Err(Error::AlreadyExists { path }),
            Err(_) => {
                DirBuilder::new().mode(0o700).create(&path).map_err(Error::io("creating directory", &path))?
            }
        }
        self.verified.insert(path);
        self.dirs.push(i);
        self.report.entries += 1;
        Ok(())
    }

    fn open_file(&mut self, job: &FileJob) -> Result<OpenFile> {
        self.ensure_parents(job.entry)?;
        let sink = if job.size <= BUFFERED_FILE_MAX {
            Sink::Buffer(Vec::with_capacity(job.size as usize))
        } else {
            Sink::Temp(temp_beside(&self.target(job.entry))?)
        };
        Ok(OpenFile { sink, hasher: Sha256::new() })
    }

    /// Checks a complete file against its SHA-256 and hands it to the
    /// placing threads; a mismatch never reaches its final name.
    fn finish_file(&mut self, job: &FileJob, f: OpenFile) -> Result<()> {
        let entry = &self.entries[job.entry];
        if f.hasher.finalize()[..] != job.sha256 {
            let err = Error::ChecksumMismatch { path: show(&entry.path) };
            self.lost.insert(job.entry);
            if self.options.keep_going {
                self.report.damaged.push((show(&entry.path), err.to_string()));
                return Ok(());
            }
            return Err(err);
        }
        let placement = Placement {
            sink: f.sink,
            path: self.target(job.entry),
            mode: entry.mode,
            mtime: FileTime::from_unix_time(entry.mtime_secs, entry.mtime_nanos),
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
        self.pending_bytes += job.size;
        while self.placing.in_flight() >= PLACING_IN_FLIGHT {
            self.take_placed()?;
        }
        if self.pending.len() >= SYNC_BATCH_FILES || self.pending_bytes >= SYNC_BATCH_BYTES {
            self.flush_placed()?;
        }
        self.report.entries += 1;
        self.report.bytes += job.size;
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
    /// syncs each file system they are on once, then renames them into
    /// place.
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

    fn make_hardlink(&mut self, i: usize, target: usize) -> Result<()> {
        if self.lost.contains(&target) {
            let why = format!("its target {} is damaged", show(&self.entries[target].path));
            self.report.damaged.push((show(&self.entries[i].path), why));
            return Ok(());
        }
        self.ensure_parents(i)?;
        let (path, original) = (self.target(i), self.target(target));
        if self.options.overwrite && fs::symlink_metadata(&path).is_ok() {
            fs::remove_file(&path).map_err(Error::io("replacing", &path))?;
        }
        fs::hard_link(&original, &path).map_err(Error::io("creating hard link", &path))?;
        self.report.entries += 1;
        Ok(())
    }

    fn make_symlink(&mut self, i: usize) -> Result<()> {
        self.ensure_parents(i)?;
        let path = self.target(i);
        let entry = &self.entries[i];
        let EntryKind::Symlink { target } = &entry.kind else { unreachable!("symlinks only") };
        if self.options.overwrite && fs::symlink_metadata(&path).is_ok() {
            fs::remove_file(&path).map_err(Error::io("replacing", &path))?;
        }
        std::os::unix::fs::symlink(OsStr::from_bytes(target), &path)
            .map_err(Error::io("creating symbolic link", &path))?;
        let mtime = FileTime::from_unix_time(entry.mtime_secs, entry.mtime_nanos);
        filetime::set_symlink_file_times(&path, mtime, mtime)
            .map_err(Error::io("setting mtime of", &path))?;
        self.report.entries += 1;
        Ok(())
    }

    /// Directory modes and mtimes last, deepest first: writing into a
    /// directory changes its mtime, and a read-only mode would stop writes.
    fn finish_dirs(&mut self) -> Result<()> {
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by_key(|&i| std::cmp::Reverse(self.entries[i].path.len()));
        for i in dirs {
            let path = self.target(i);
            let e = &self.entries[i];
            fs::set_permissions(&path, fs::Permissions::from_mode(e.mode))
                .map_err(Error::io("setting permissions of", &path))?;
            let mtime = FileTime::from_unix_time(e.mtime_secs, e.mtime_nanos);
            filetime::set_file_mtime(&path, mtime).map_err(Error::io("setting mtime of", &path))?;
        }
        Ok(())
    }
}
