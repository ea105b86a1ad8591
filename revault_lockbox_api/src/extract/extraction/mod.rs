//! One extraction's state: the checks on the destination, the placing and
//! syncing threads, and the directory modes that wait for the end. The
//! visitor that receives each file's bytes (`files`) and the links made
//! at the end (`links`) work on that state from their own files.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustix::fs::Timespec;

use super::dirs::{sync_file_system, timespec, OwnerAndXattrs, Walker, LINK_WHERE_A_DIR_GOES};
use super::owner::Owners;
use super::place::{
    refused_xattrs, sync_and_place, sync_batch_files, Placement, Placer, Sink, Unplaced, Written,
    SYNC_BATCH_BYTES, SYNC_BATCH_MIN_FILES,
};
use super::policy::Modes;
use super::{ExistingFiles, ExtractOptions, ExtractReport};
use crate::archive::ContentSource;
use crate::archive::Damage;
use crate::error::{EntryPath, Error, Result};
use crate::format::{is_within, Entry, EntryKind, Xattr, DIGEST_LEN};
use crate::pipeline::OrderedWorkers;
use crate::sparse::Expander;

mod files;
mod links;
mod run;

use files::{FileWriter, OpenFile};

/// Files up to this size are gathered in memory and written, synced and
/// placed by the placing threads; larger ones are streamed to an unplaced
/// file as their pages arrive.
const BUFFERED_FILE_MAX: u64 = 256 << 10;
/// Jobs handed to the placing threads and not yet done.
const PLACING_IN_FLIGHT: usize = 16;
/// Files per placing job: one hand-off (a wake-up and a wait on each
/// side) for several small files instead of one each.
const JOB_FILES: usize = 16;
/// Bytes of buffered files per placing job, bounding the memory in flight.
const JOB_BYTES: u64 = 1 << 20;

/// A directory entry made, waiting for its final mode and mtime.
struct DirEntry {
    path: Vec<u8>,
    identity: (u64, u64),
    mode: u32,
    mtime: Timespec,
    owner: Option<(u32, u32)>,
    xattrs: Vec<Xattr>,
}

pub(super) struct Extraction<'a> {
    options: &'a ExtractOptions,
    walker: Walker,
    modes: Modes,
    /// Restores owners (`--same-owner`) when set.
    owners: Option<Owners>,
    placer: Arc<Placer>,
    report: ExtractReport,
    /// Directories made, in index order, for their modes and mtimes at the end.
    dirs: Vec<DirEntry>,
    symlinks: Vec<Entry>,
    links: Vec<Entry>,
    /// Linked files placed (or being placed), by stored path.
    extracted_files: HashSet<Vec<u8>>,
    /// Files not restored because their content was damaged.
    lost: HashSet<Vec<u8>>,
    /// Paths the existing-files policy leaves alone (found by the check).
    kept: HashSet<Vec<u8>>,
    placing: OrderedWorkers<Vec<Placement>, Result<Vec<Written>>>,
    /// Checked files not yet handed to the placing threads, and their bytes.
    job: Vec<Placement>,
    job_bytes: u64,
    /// Files written and waiting for their batch's sync and placing.
    pending: Vec<Written>,
    /// The batch being synced and placed, at most one at a time.
    syncing: OrderedWorkers<Vec<Written>, Result<()>>,
    /// Whether that batch is done (the sync thread is free).
    sync_idle: Arc<AtomicBool>,
    /// Files and bytes since the last batch, in flight or written.
    pending_bytes: u64,
    pending_files: usize,
    batch_files: usize,
}

impl<'a> Extraction<'a> {
    pub(super) fn new(dest: &Path, options: &'a ExtractOptions, threads: usize) -> Result<Extraction<'a>> {
        let sync = options.sync;
        let place = move |job: Vec<Placement>| {
            let mut written = Vec::with_capacity(if sync { job.len() } else { 0 });
            for placement in job {
                let file = placement.write()?;
                if sync {
                    written.push(file);
                } else {
                    file.place()?;
                }
            }
            Ok(written)
        };
        let sync_idle = Arc::new(AtomicBool::new(true));
        let idle = Arc::clone(&sync_idle);
        let sync_batch = move |batch: Vec<Written>| {
            let done = sync_and_place(batch);
            idle.store(true, Ordering::Release);
            done
        };
        Ok(Extraction {
            options,
            walker: Walker::open(dest)?,
            modes: Modes::for_process(options.same_permissions),
            owners: options.restores_owners().then(|| Owners::new(options.numeric_owner)),
            placer: Arc::new(Placer::new(options.replaces())),
            report: ExtractReport::default(),
            dirs: Vec::new(),
            symlinks: Vec::new(),
            links: Vec::new(),
            extracted_files: HashSet::new(),
            lost: HashSet::new(),
            kept: HashSet::new(),
            placing: OrderedWorkers::new("lockbox-placer", threads, PLACING_IN_FLIGHT, place)?,
            pending: Vec::new(),
            syncing: OrderedWorkers::new("lockbox-sync", 1, 1, sync_batch)?,
            sync_idle,
            job: Vec::new(),
            job_bytes: 0,
            pending_bytes: 0,
            pending_files: 0,
            batch_files: sync_batch_files(),
        })
    }

    /// No existing target unless the policy replaces or keeps it (and
    /// never a directory replaced by something else), for every entry of
    /// `entries`; the targets kept are remembered for [`Self::take_kept`].
    pub(super) fn check_targets(&mut self, entries: impl Iterator<Item = Result<Entry>>) -> Result<()> {
        // Below a directory that does not exist yet nothing exists either.
        let mut missing: Option<Vec<u8>> = None;
        for e in entries {
            let e = e?;
            if missing.as_ref().is_some_and(|m| is_within(m, &e.path)) {
                continue;
            }
            let Some((kind, mtime)) = self.walker.existing(&e.path)? else {
                missing = Some(e.path);
                continue;
            };
            if matches!(e.kind, EntryKind::Dir) {
                if kind.is_symlink() {
                    // Never followed, never replaced: unsafe, overwriting or not.
                    let path = EntryPath(e.path);
                    return Err(Error::UnsafePath { path, reason: LINK_WHERE_A_DIR_GOES });
                }
                if kind.is_dir() {
                    continue;
                }
            }
            let in_the_way = kind.is_dir() || matches!(e.kind, EntryKind::Dir);
            match self.options.existing {
                ExistingFiles::Skip => {}
                ExistingFiles::Replace if !in_the_way => continue,
                ExistingFiles::KeepNewer if !in_the_way => {
                    if mtime < (e.meta.mtime_secs, i64::from(e.meta.mtime_nanos)) {
                        continue;
                    }
                    let reason = "kept: the existing file is newer or the same age".to_string();
                    self.report.warnings.push(Damage { path: EntryPath(e.path.clone()), reason });
                }
                _ => return Err(Error::AlreadyExists { path: self.walker.display(&e.path) }),
            }
            self.report.skipped += 1;
            self.kept.insert(e.path);
        }
        Ok(())
    }

    /// Counts one entry restored, in the report and on the progress
    /// counters: every kind, as a create counts what it stores, so that
    /// both bars end on the same count for the same tree.
    pub(super) fn restored(&mut self) {
        self.report.entries += 1;
        if let Some(p) = &self.options.progress {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A dry run's second pass: each entry told to the log and counted,
    /// nothing made.
    pub(super) fn count_only(&mut self, entries: impl Iterator<Item = Result<Entry>>) -> Result<()> {
        for e in entries {
            let e = e?;
            if let Some(log) = &self.options.log {
                log.0.entry(&e);
            }
            self.restored();
            self.report.bytes += e.content().map_or(0, |c| c.0);
        }
        Ok(())
    }

    /// What a dry run found.
    pub(super) fn into_report(self) -> ExtractReport {
        self.report
    }

    /// The paths [`Self::check_targets`] found to leave alone.
    pub(super) fn take_kept(&mut self) -> HashSet<Vec<u8>> {
        std::mem::take(&mut self.kept)
    }

    /// Writes every file of `entries` as its bytes arrive and makes their
    /// directories; returns the hard links whose target is not extracted.
    pub(super) fn write_files(
        &mut self,
        archive: &dyn ContentSource,
        entries: Box<dyn Iterator<Item = Result<Entry>> + '_>,
        logs: bool,
    ) -> Result<Vec<Entry>> {
        let mut visitor = FileWriter {
            x: self,
            selected: entries,
            open: HashMap::new(),
            files: HashMap::new(),
            next_token: 0,
            copies: Vec::new(),
            logs,
        };
        archive.walk_content(&mut visitor, false)?;
        let copies = std::mem::take(&mut visitor.copies);
        self.place_all()?;
        Ok(copies)
    }

    /// The owner to give `e`, when restoring owners.
    fn owner(&mut self, e: &Entry) -> Option<(u32, u32)> {
        self.owners.as_mut().map(|o| o.of(e))
    }

    /// The extended attributes to give `e`, when restoring them.
    fn xattrs(&self, e: &Entry) -> Vec<Xattr> {
        if self.options.xattrs {
            e.meta.xattrs.clone()
        } else {
            Vec::new()
        }
    }

    fn make_dir(&mut self, e: &Entry) -> Result<()> {
        let dir = self.walker.make_dir(&e.path)?;
        let (owner, xattrs) = (self.owner(e), self.xattrs(e));
        self.dirs.push(DirEntry {
            path: e.path.clone(),
            identity: dir.identity(),
            mode: self.modes.final_mode(e.meta.mode),
            mtime: timespec(e.meta.mtime_secs, e.meta.mtime_nanos),
            owner,
            xattrs,
        });
        self.restored();
        Ok(())
    }

    fn open_file(&mut self, entry: Entry) -> Result<OpenFile> {
        let (dir, _) = self.walker.parent(&entry.path, true)?;
        let size = entry.content().map_or(0, |c| c.0);
        let sink = if size <= BUFFERED_FILE_MAX {
            Sink::Buffer(Vec::with_capacity(size as usize))
        } else {
            let (mode, _) = self.modes.file_creation(entry.meta.mode);
            Sink::File(Unplaced::create(&self.placer, dir, mode, &self.walker.display(&entry.path))?)
        };
        let expander = Expander::new(entry.sparse_map());
        Ok(OpenFile { entry, sink, expander })
    }

    /// Checks a complete file's `digest` against its SHA-256 and hands it
    /// to the placing threads; a mismatch never reaches its final name.
    fn finish_file(&mut self, f: OpenFile, digest: [u8; DIGEST_LEN]) -> Result<()> {
        let (size, sha256) = f.entry.content().map(|(s, d)| (s, *d)).expect("files have content");
        if digest != sha256 {
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
        let (dir, name) = self.walker.parent(&f.entry.path, true)?;
        let placement = Placement {
            sink: f.sink,
            size,
            dir,
            name: name.to_vec(),
            shown: self.walker.display(&f.entry.path),
            mode: self.modes.file_creation(f.entry.meta.mode),
            mtime: timespec(f.entry.meta.mtime_secs, f.entry.meta.mtime_nanos),
            owner: self.owner(&f.entry),
            xattrs: self.xattrs(&f.entry),
            placer: Arc::clone(&self.placer),
        };
        self.job.push(placement);
        self.job_bytes += size.min(BUFFERED_FILE_MAX);
        self.pending_bytes += size;
        self.pending_files += 1;
        if self.job.len() >= JOB_FILES || self.job_bytes >= JOB_BYTES {
            self.submit_job()?;
        }
        if self.pending_files >= self.batch_files || self.pending_bytes >= SYNC_BATCH_BYTES {
            self.flush_placed()?;
        } else if self.pending.len() >= SYNC_BATCH_MIN_FILES && self.sync_idle.load(Ordering::Acquire) {
            self.sync_written()?;
        }
        self.restored();
        self.report.bytes += size;
        Ok(())
    }

    /// Hands the files gathered so far to a placing thread. Without
    /// syncing, it places them at once; with it, they wait for their
    /// batch's sync.
    fn submit_job(&mut self) -> Result<()> {
        if self.job.is_empty() {
            return Ok(());
        }
        let job = std::mem::take(&mut self.job);
        self.job_bytes = 0;
        self.placing.submit(job);
        while self.placing.in_flight() >= PLACING_IN_FLIGHT {
            self.take_placed()?;
        }
        Ok(())
    }

    /// Collects the oldest placing result.
    fn take_placed(&mut self) -> Result<()> {
        let written = self.placing.pop().expect("in flight")?;
        self.pending.extend(written);
        Ok(())
    }

    /// Waits for every file handed to the placing threads; when syncing,
    /// hands the batch to the sync thread, which syncs each file system
    /// once, then puts the files in place.
    fn flush_placed(&mut self) -> Result<()> {
        self.submit_job()?;
        while self.placing.in_flight() > 0 {
            self.take_placed()?;
        }
        self.sync_written()?;
        // Without syncing, files are placed as they are written and never
        // wait here: nothing is left either way.
        (self.pending_files, self.pending_bytes) = (0, 0);
        Ok(())
    }

    /// Hands the files written so far (not those still with the placing
    /// threads) to the sync thread, once it is done with the last batch.
    fn sync_written(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.syncing.pop().transpose()?;
        let batch = std::mem::take(&mut self.pending);
        self.pending_files -= batch.len();
        self.pending_bytes -= batch.iter().map(|w| w.size).sum::<u64>();
        self.sync_idle.store(false, Ordering::Release);
        self.syncing.submit(batch);
        Ok(())
    }

    /// Waits until every file is in place.
    fn place_all(&mut self) -> Result<()> {
        self.flush_placed()?;
        self.syncing.pop().transpose()?;
        Ok(())
    }

    /// Hard links, then symbolic links, then directory modes and mtimes;
    /// then, when syncing, one sync for the links, names and modes.
    /// After a failure: removes the directories made that are still empty.
    pub(super) fn remove_made_dirs(&mut self) {
        self.walker.remove_made_dirs();
    }

    pub(super) fn finish(mut self) -> Result<ExtractReport> {
        for e in std::mem::take(&mut self.links) {
            self.make_hardlink(&e)?;
        }
        for e in std::mem::take(&mut self.symlinks) {
            self.make_symlink(&e)?;
        }
        // In reverse index order every directory comes after its contents:
        // writing into a directory changes its mtime, and a read-only mode
        // would stop writes.
        for d in std::mem::take(&mut self.dirs).into_iter().rev() {
            let meta = OwnerAndXattrs { owner: d.owner, xattrs: &d.xattrs };
            let refused = self.walker.finish_dir(&d.path, d.identity, d.mode, d.mtime, meta)?;
            self.report.warnings.extend(refused_xattrs(&self.walker.display(&d.path), refused));
        }
        let placed = std::mem::take(&mut *self.placer.warnings.lock().unwrap_or_else(|p| p.into_inner()));
        self.report.warnings.extend(placed);
        if self.options.sync {
            sync_file_system(&self.walker.root().fd, &self.walker.display(b""))?;
        }
        Ok(self.report)
    }
}
