//! Changing an archive in place: [`ArchiveUpdater`] appends one write
//! session per change (`add`, `update`, `remove`).
//!
//! A session writes after the archive's committed end: new data pages
//! (numbered on from the old page count), one new entries run (puts and
//! deletions), its pages tree, a root listing every session and run, and a
//! trailer pointing back at the previous one. The commit protocol (FORMAT.md
//! §5.1): everything but the trailer is written and synced, then the
//! trailer is written and synced. Until the trailer lands, readers see the
//! previous state; a failed session is cut off again.
//!
//! On object storage (`s3` feature) the session is written to a local
//! spool and committed as the archive's next part by a conditional create
//! (`place.rs`); a writer that loses that race to another fails, or with
//! [`UpdateOptions::wait`] opens the new state and writes its session
//! again from the start.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::changes::{below_leaf, count_change, inconsistent, FilterMode, UpdateFilter};
use super::place::{Place, Source};
use super::sync::AppendOut;
use super::{UpdateOptions, UpdateReport};
use crate::archive::{Archive, ChunkLookup, Subtrees};
use crate::error::{EntryPath, Error, Result};
use crate::format::{SessionKind, Table, MAX_RUNS, MAX_SESSIONS};
use crate::index::TreeReader;
use crate::keys::Unlock;
use crate::session::{ArchiveWriter, NextRoot, Selection, SessionStart};
use crate::walk::{check_inputs, ordered_roots, walk_with, WalkRules};

/// A test's change to a session's start (its kind, its state).
#[cfg(test)]
type Shape = fn(SessionStart) -> SessionStart;

#[cfg(test)]
thread_local! {
    /// The [`Shape`] of the next session an updater on this thread starts:
    /// what someone holding the key could write, for the conformance
    /// vectors.
    pub(super) static SHAPE_NEXT_SESSION: std::cell::Cell<Option<Shape>> = const { std::cell::Cell::new(None) };
}

/// The output of an append session: the archive file, after its committed
/// end, synced in the background as it grows (as create's output is), or
/// the byte count of a dry run.
type SessionOut = BufWriter<AppendOut>;

/// The writer of an append session.
type Writer = ArchiveWriter<SessionOut>;

/// How many times a writer that lost the race for the next part to
/// another (on object storage, with [`UpdateOptions::wait`]) writes its
/// session again before it gives up.
const RACE_RETRIES: u32 = 8;

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
    /// The archive's path, or its `s3://` location, as messages name it.
    path: PathBuf,
    place: Place,
    archive: Archive<Source>,
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
        let place = Place::file(path, options.wait)?;
        let mut updater = ArchiveUpdater::opened(path.to_path_buf(), place, key.into(), options)?;
        updater.report.torn_tail_cut = updater.archive.torn_tail_bytes();
        if updater.report.torn_tail_cut > 0 && !updater.options.dry_run {
            updater.cut_back()?;
        }
        Ok(updater)
    }

    /// Opens the archive on object storage that `reader` reads (its base
    /// object and the parts appended since, as opened), with `key`. No
    /// lock is taken:
    /// the change commits by creating the archive's next part only if no
    /// other writer did (docs/SCALE.md); with [`UpdateOptions::wait`], a
    /// writer that loses that race writes its session again on the new
    /// state, up to eight times.
    #[cfg(feature = "s3")]
    pub fn open_object<'k>(
        reader: crate::s3::S3Reader,
        key: impl Into<Unlock<'k>>,
        options: UpdateOptions,
    ) -> Result<Self> {
        let path = PathBuf::from(reader.store().location().to_string());
        let place = Place::object(reader, &path)?;
        let updater = ArchiveUpdater::opened(path, place, key.into(), options)?;
        let torn = updater.archive.torn_tail_bytes();
        if torn > 0 {
            // Each part is whole or absent: bytes after the last commit
            // are not an interrupted session's and cannot be cut off.
            return Err(Error::tampered(format!("{torn} bytes after the last committed session")));
        }
        Ok(updater)
    }

    /// The archive at `place`, opened with `key` and checked for a change.
    fn opened(path: PathBuf, place: Place, key: Unlock<'_>, mut options: UpdateOptions) -> Result<Self> {
        let archive = Archive::open_with(place.committed(&path)?, key, options.open_options())?;
        check_for_change(&archive, &options)?;
        options.adopt_recorded_rules(&archive)?;
        Ok(ArchiveUpdater { path, place, archive, options, report: UpdateReport::default() })
    }

    /// Whether the archive's last session is signed: a change without
    /// [`UpdateOptions::sign`] leaves it with an unsigned last session,
    /// which readers that trust only signers refuse.
    pub fn is_signed(&self) -> bool {
        self.archive.signature_count() > 0
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
        let roots = stored_roots(base_dir, inputs, self.options.create.dereference)?;
        let selection = self.options.create.selection.clone();
        let rules = self.walk_rules(&selection);
        self.session(|writer, archive, report| {
            let mut filter = UpdateFilter::new(archive, &roots, FilterMode::StoreAll)?;
            let (writer, walked) = walk_with(writer, base_dir, inputs, &skip, rules, Some(&mut filter))?;
            report.warnings = walked.warnings;
            report.content_bytes = walked.content_bytes;
            report.replaced = filter.replaced;
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
        let roots = stored_roots(base_dir, inputs, self.options.create.dereference)?;
        let selection = self.options.create.selection.clone();
        let rules = self.walk_rules(&selection);
        self.session(|writer, archive, report| {
            let mode = FilterMode::Changed { delete_missing };
            let mut filter = UpdateFilter::new(archive, &roots, mode)?;
            let (mut writer, walked) = walk_with(writer, base_dir, inputs, &skip, rules, Some(&mut filter))?;
            filter.delete_before(&mut writer, None)?;
            report.warnings = walked.warnings;
            report.content_bytes = walked.content_bytes;
            report.deleted = filter.deleted;
            report.kept_missing = filter.kept_missing;
            report.replaced = filter.replaced;
            Ok(writer)
        })
    }

    /// Deletes `paths` (stored paths, spelled as [`Subtrees`] spells them;
    /// a directory with everything below it) in a new session. A path not in the archive is an error, and
    /// nothing is written.
    pub fn remove(self, paths: &[Vec<u8>]) -> Result<UpdateReport> {
        let subtrees = Subtrees::new(paths);
        let paths = subtrees.roots();
        for path in paths {
            if self.archive.find(path)?.is_none() {
                return Err(Error::NotFound { path: EntryPath(path.clone()) });
            }
        }
        self.session(|mut writer, _, report| {
            for path in paths {
                writer.delete(path)?;
                report.deleted += 1;
            }
            Ok(writer)
        })
    }

    /// How `add` and `update` walk: by the options' rules (the archive's
    /// recorded ones included, [`UpdateOptions::recorded_rules`]).
    fn walk_rules<'s>(&self, selection: &'s Selection) -> WalkRules<'s> {
        let o = &self.options.create;
        WalkRules { follow: o.dereference, strict: o.strict, selection, xattrs: o.xattrs }
    }

    /// The archive file itself, never stored in itself.
    fn own_file(&self) -> Result<Vec<(u64, u64)>> {
        self.place.own_file(&self.path)
    }

    /// Refuses, before anything is written, an input that would lie below a
    /// stored file or symbolic link.
    fn check_ancestors(&self, base_dir: &Path, inputs: &[PathBuf]) -> Result<()> {
        for root in ordered_roots(base_dir, inputs, self.options.create.dereference)? {
            if let Some(blocker) = self.archive.leaf_above(&root.stored)? {
                return Err(below_leaf(blocker));
            }
        }
        Ok(())
    }

    /// Cuts the file back to its committed end.
    fn cut_back(&self) -> Result<()> {
        let (_, _, end) = self.archive.append_point();
        self.place.cut_back(end, &self.path)
    }

    /// Runs one append session (see [`attempt`](Self::attempt)); on object
    /// storage with [`UpdateOptions::wait`], again on the new state each
    /// time another writer commits first, from scratch.
    fn session(
        mut self,
        mut body: impl FnMut(Writer, &Archive<Source>, &mut UpdateReport) -> Result<Writer>,
    ) -> Result<UpdateReport> {
        let first = self.report.clone();
        let mut retries = 0;
        loop {
            match self.attempt(&mut body) {
                Err(e) if Place::raced(&e) && self.options.wait && retries < RACE_RETRIES => {
                    retries += 1;
                    if !self.reopen()? {
                        return Err(e);
                    }
                    self.report = first.clone();
                }
                done => return done,
            }
        }
    }

    /// The archive as another writer left it, for a session written again;
    /// `false` when it cannot be: the walk rules the archive records
    /// changed, and the walk was set up with the old ones (the command run
    /// again adopts the new).
    fn reopen(&mut self) -> Result<bool> {
        #[cfg(feature = "s3")]
        if self.place.reopened(&self.path)?.is_some() {
            let archive =
                self.archive.reopen_as(self.place.committed(&self.path)?, self.options.open_options())?;
            check_for_change(&archive, &self.options)?;
            let rules_changed = archive.last_session().walk != self.archive.last_session().walk;
            self.archive = archive;
            return Ok(!(rules_changed && self.options.applies_recorded_rules()));
        }
        Ok(true)
    }

    /// Writes one append session: `body` adds records to the writer; then
    /// the new run is checked against the archive and committed. On any
    /// error before the commit, the file is cut back to its committed end.
    fn attempt(
        &mut self,
        body: &mut impl FnMut(Writer, &Archive<Source>, &mut UpdateReport) -> Result<Writer>,
    ) -> Result<UpdateReport> {
        // One more session, and maybe a merge session before it.
        if self.archive.sessions() as usize + 2 > MAX_SESSIONS {
            return Err(Error::TooManySessions { path: self.path.clone() });
        }
        if self.archive.root().runs.len() >= MAX_RUNS {
            match self.options.dry_run {
                true => self.report.runs_merged = true,
                false => self.merge_runs()?,
            }
        }
        let mut report = std::mem::take(&mut self.report);
        let result = self.append(body, &mut report);
        match result {
            Ok(Some(written)) if self.options.dry_run => {
                report.bytes_written = written;
                Ok(report)
            }
            Ok(Some(written)) => {
                report.bytes_written = written;
                if let Err(e) = self.place.commit(self.options.create.tuning.page_size, &self.path) {
                    if Place::raced(&e) && self.place.landed(&self.path)? {
                        return Ok(report);
                    }
                    let _ = self.cut_back();
                    return Err(e);
                }
                Ok(report)
            }
            Ok(None) if self.options.dry_run => Ok(report),
            Ok(None) => {
                self.cut_back()?;
                report.entries = self.archive.entry_count();
                Ok(report)
            }
            // A dry run wrote nothing to cut back.
            Err(e) if self.options.dry_run => Err(self.named(e)),
            Err(e) => {
                // The session never committed; its bytes are a torn tail.
                let _ = self.cut_back();
                Err(self.named(e))
            }
        }
    }

    /// `e`, naming this archive where the session could not (its root
    /// grew too large).
    fn named(&self, e: Error) -> Error {
        match e {
            Error::TooManySessions { path } if path.as_os_str().is_empty() => {
                Error::TooManySessions { path: self.path.clone() }
            }
            e => e,
        }
    }

    /// Writes a session; `None` when `body` recorded nothing.
    fn append(
        &self,
        body: &mut impl FnMut(Writer, &Archive<Source>, &mut UpdateReport) -> Result<Writer>,
        report: &mut UpdateReport,
    ) -> Result<Option<u64>> {
        let archive = &self.archive;
        let (archive_id, _, end) = archive.append_point();
        let root = archive.root();
        let mut writer = body(self.start_session(SessionKind::Change)?, archive, report)?;
        let (stored, first, last) = writer.run_span();
        let (Some(first), Some(last)) = (first.map(<[u8]>::to_vec), last.map(<[u8]>::to_vec)) else {
            return Ok(None);
        };
        report.stored = stored;
        let (entries, pages) = writer.finish_trees()?;
        writer.output_mut().flush().map_err(Error::io("writing", &self.path))?;
        if let AppendOut::Counted(would_write) = writer.output_mut().get_ref() {
            return Ok(Some(*would_write));
        }
        let (_, stream_len) = writer.pages_and_stream();
        let written = self.place.written(&self.path)?;
        let new_run = TreeReader {
            src: &written,
            keys: writer.session_keys(),
            archive_id,
            table: Table::Entries,
            internals: None,
        };
        let mut offsets = archive.session_offsets()?;
        offsets.push(root.stream_len);
        let delta = count_change(archive, (new_run, entries.clone()), &first, &last, &offsets, stream_len)?;
        let entry_count = (root.entry_count + delta.1).checked_sub(delta.0).ok_or_else(inconsistent)?;
        let next = NextRoot {
            entry_count,
            sessions: root.sessions.clone(),
            runs: root.runs.clone(),
            entries,
            pages,
        };
        report.entries = entry_count;
        let (_, len) = writer.commit(next, &mut |out| sync(out, &self.path))?;
        Ok(Some(len - end))
    }

    /// A writer of a new session of `kind` after the committed end.
    fn start_session(&self, kind: SessionKind) -> Result<ArchiveWriter<SessionOut>> {
        let (archive_id, content_key, end) = self.archive.append_point();
        let (last, _, commit) = self.archive.chain_point();
        let root = self.archive.root();
        let number = last.checked_add(1).ok_or_else(|| Error::TooManySessions { path: self.path.clone() })?;
        if kind == SessionKind::Change {
            // A change counts the states on: refused at the last number.
            self.archive.next_state()?;
        }
        let start = SessionStart {
            archive_id,
            version: self.archive.version(),
            position: end,
            next_page: root.page_count,
            stream_len: root.stream_len,
            number,
            kind,
            previous: (end, commit),
            created_ns: None,
            state: 0,
            head: std::sync::Arc::clone(self.archive.head()),
        };
        #[cfg(test)]
        let start = match SHAPE_NEXT_SESSION.take() {
            Some(shape) => shape(start),
            None => start,
        };
        let out = match self.options.dry_run {
            true => AppendOut::Counted(0),
            false => self.place.output(end, &self.path)?,
        };
        let out = BufWriter::with_capacity(1 << 20, out);
        let mut options = match self.options.dry_run {
            // Nothing written to read back: counted without a record.
            true => self.options.create.clone().recovery(0),
            false => self.options.create.clone().read_back(self.place.written(&self.path)?),
        };
        if kind == SessionKind::Merge {
            // The label names the change that follows, not the merge.
            options = options.label("");
        }
        let mut writer = ArchiveWriter::session(out, content_key, start, options)?;
        if kind == SessionKind::Change {
            // The chunk indexes of the state this change follows, read
            // through a second open of the file (its committed part only).
            let reader = self.place.written(&self.path)?;
            let lookup = ChunkLookup::new(self.archive.reopen_as(reader, self.options.open_options())?);
            if !lookup.is_empty() {
                writer.reuse_stored_chunks(Box::new(lookup));
            }
        }
        Ok(writer)
    }

    /// Merges every entries run into one, in a session of its own whose
    /// state is valid alone (FORMAT.md §5.1), and re-reads the archive.
    fn merge_runs(&mut self) -> Result<()> {
        let merged = (|| {
            let archive = &self.archive;
            let root = archive.root();
            let mut writer = self.start_session(SessionKind::Merge)?;
            super::merge::write_merged(&mut writer, archive, &self.path)?;
            // The merged run's chunk index replaces the older runs' too.
            writer.write_chunk_index(archive.chunk_entries()?)?;
            if writer.run_span().0 != root.entry_count {
                return Err(inconsistent());
            }
            let (entries, pages) = writer.finish_trees()?;
            // The merged run replaces every older one.
            let sessions = root.sessions.clone();
            let next = NextRoot { entry_count: root.entry_count, sessions, runs: Vec::new(), entries, pages };
            writer.commit(next, &mut |out| sync(out, &self.path))
        })();
        if let Err(e) = merged {
            let _ = self.cut_back();
            return Err(self.named(e));
        }
        let reader = self.place.written(&self.path)?;
        self.archive = self.archive.reopen_as(reader, self.options.open_options())?;
        self.report.runs_merged = true;
        Ok(())
    }
}

/// Checks `archive` before a change: the signature chain, and the walk
/// rules it recorded, which an append would otherwise walk without.
fn check_for_change(archive: &Archive<Source>, options: &UpdateOptions) -> Result<()> {
    options.check_chain(archive)?;
    if let (Some(damage), true) = (archive.session_header_damage(), options.applies_recorded_rules()) {
        return Err(Error::tampered(format!(
            "{damage}: the walk rules it recorded are unknown (append without recorded rules, or compact first)"
        )));
    }
    Ok(())
}

/// Flushes the session's output and syncs the file's data to disk.
fn sync(out: &mut SessionOut, path: &Path) -> Result<()> {
    out.flush().map_err(Error::io("writing", path))?;
    out.get_ref().sync_data().map_err(Error::io("syncing", path))
}

/// The stored paths of `inputs` in index order: where the walk goes.
fn stored_roots(base_dir: &Path, inputs: &[PathBuf], follow: bool) -> Result<Vec<Vec<u8>>> {
    Ok(ordered_roots(base_dir, inputs, follow)?.into_iter().map(|r| r.stored).collect())
}
