//! The one atomic write of a whole file, for every operation that makes
//! one (create, compaction, a rewrite with larger key slots, the CLI's
//! `export -o FILE`): under a temporary name beside it, synced, renamed
//! into place and the directory synced, so that the path holds the old
//! file or the new one, whole. It also owns the "already exists" rule that
//! goes with it.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::sync::SyncingWriter;
use crate::error::{Error, Result};
use crate::session::{LateSlots, SlotsLast};

/// A file being written under a temporary name beside its final path,
/// synced in the background as it grows; [`AtomicFile::commit`] syncs it,
/// renames it into place and syncs the directory. Dropped without a commit,
/// it removes the temporary file and leaves the path as it was.
pub struct AtomicFile {
    out: SyncingWriter,
    path: PathBuf,
    dir: PathBuf,
    overwrite: bool,
    renaming: &'static str,
}

impl AtomicFile {
    /// Starts the file that will be at `path`. An existing `path` is
    /// refused ([`Error::AlreadyExists`]) unless `overwrite`: now, and again
    /// at the rename, so a file that appeared meanwhile is kept.
    pub fn create(path: &Path, overwrite: bool) -> Result<AtomicFile> {
        AtomicFile::beside(path, overwrite, "the path does not name a file", "renaming the finished file to")
    }

    /// Refuses an existing `path` (anything at all, even a dangling
    /// symbolic link) with [`Error::AlreadyExists`] unless `overwrite`: the
    /// check [`AtomicFile::create`] makes, for a caller that wants it made
    /// before it asks for a password or reads any input.
    pub fn refuse_existing(path: &Path, overwrite: bool) -> Result<()> {
        if !overwrite && fs::symlink_metadata(path).is_ok() {
            return Err(Error::AlreadyExists { path: path.to_path_buf() });
        }
        Ok(())
    }

    fn beside(
        path: &Path,
        overwrite: bool,
        no_name: &'static str,
        renaming: &'static str,
    ) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name =
            path.file_name().ok_or_else(|| Error::BadInput { path: path.to_path_buf(), reason: no_name })?;
        AtomicFile::refuse_existing(path, overwrite)?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(Error::io("creating a temporary file in", dir))?;
        Ok(AtomicFile {
            out: SyncingWriter::new(tmp)?,
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            overwrite,
            renaming,
        })
    }

    /// Syncs the file, renames it to its path and syncs the directory.
    pub fn commit(self) -> Result<()> {
        self.finish(None)
    }

    /// [`AtomicFile::commit`], writing `late_slots` at offset 0 first (after
    /// the data is synced, so the final sync has one page to do).
    fn finish(self, late_slots: Option<LateSlots>) -> Result<()> {
        let AtomicFile { out, path, dir, overwrite, renaming } = self;
        let tmp = out.finish();
        if let Some(slots) = late_slots {
            // The data reaches the disk while Argon2id may still run; then the
            // table goes into its room and the final sync has one page to do.
            tmp.as_file().sync_data().map_err(Error::io("syncing", tmp.path()))?;
            let header = slots.wait()?;
            tmp.as_file()
                .write_all_at(&header, 0)
                .map_err(Error::io("writing the key slots of", tmp.path()))?;
        }
        tmp.as_file().sync_all().map_err(Error::io("syncing", tmp.path()))?;
        let persisted = if overwrite { tmp.persist(&path) } else { tmp.persist_noclobber(&path) };
        persisted.map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => Error::AlreadyExists { path: path.clone() },
            _ => Error::io(renaming, &path)(e.error),
        })?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The temporary file an archive is written to, and the key-slot table
/// still being wrapped for it, if any ([`LateSlots`]).
pub(crate) struct ArchiveFile {
    out: BufWriter<AtomicFile>,
    late_slots: Option<LateSlots>,
}

impl SlotsLast for ArchiveFile {
    fn write_slots_last(&mut self, slots: LateSlots) {
        self.late_slots = Some(slots);
    }
}

impl Write for ArchiveFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Runs `write` on a temporary file beside `archive`, then syncs it and
/// renames it to `archive`. `write` also gets the (device, inode) of the
/// files it must not archive: the temporary file and the archive it
/// replaces. An existing `archive` is refused ([`Error::AlreadyExists`])
/// unless `overwrite`: before `write` runs, and again at the rename, so an
/// archive that appeared meanwhile is kept. An interrupted write leaves no
/// file at `archive` and an existing one untouched.
pub(crate) fn write_atomically<T>(
    archive: &Path,
    overwrite: bool,
    write: impl FnOnce(ArchiveFile, &[(u64, u64)]) -> Result<(ArchiveFile, T)>,
) -> Result<T> {
    atomically(archive, overwrite, "renaming the finished archive to", write)
}

/// [`write_atomically`] replacing the archive at `archive` (whose writer
/// lock the caller holds) with the file `write` makes: compaction, and a
/// rewrite with larger key slots.
pub(crate) fn replace_atomically<T>(
    archive: &Path,
    write: impl FnOnce(ArchiveFile) -> Result<(ArchiveFile, T)>,
) -> Result<T> {
    atomically(archive, true, "renaming the compacted archive to", |out, _| write(out))
}

fn atomically<T>(
    archive: &Path,
    overwrite: bool,
    renaming: &'static str,
    write: impl FnOnce(ArchiveFile, &[(u64, u64)]) -> Result<(ArchiveFile, T)>,
) -> Result<T> {
    let file = AtomicFile::beside(archive, overwrite, "the archive path does not name a file", renaming)?;
    let tmp = file.out.get_ref();
    let own = tmp.as_file().metadata().map_err(Error::io("inspecting", tmp.path()))?;
    let mut skip = vec![(own.dev(), own.ino())];
    if let Ok(old) = fs::metadata(archive) {
        skip.push((old.dev(), old.ino()));
    }
    let out = ArchiveFile { out: BufWriter::with_capacity(1 << 20, file), late_slots: None };
    let (out, result) = write(out, &skip)?;
    let ArchiveFile { out, late_slots } = out;
    let file = out.into_inner().map_err(|e| Error::io("writing", archive)(e.into_error()))?;
    file.finish(late_slots)?;
    Ok(result)
}
