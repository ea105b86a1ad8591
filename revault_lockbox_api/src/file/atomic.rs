//! The one atomic write of a whole file, for every operation that makes
//! one (create, compaction, a rewrite with larger key slots, the CLI's
//! `export -o FILE`), so that the path holds the old file or the new one,
//! whole. It also owns the "already exists" rule that goes with it.
//!
//! The file is written to an inode without a name (`O_TMPFILE`) in the
//! target's directory and, once complete and synced, linked to its name
//! (`linkat`, which never replaces one): an interrupted write, `kill -9`
//! included, leaves nothing. To replace a file (`--overwrite`, compaction,
//! a key rewrite) it is linked to a temporary name `.NAME.lockbox-<16 hex
//! digits>.tmp` and renamed over the file, so that name lives only between
//! the link and the rename. Where the file system has no unnamed files the
//! file is written under that name throughout. Every such name is listed in
//! [`crate::temporary`] (a signal handler removes them), and its writer
//! holds an `flock` on the file until it ends: the next write beside the
//! same target removes a name of that pattern it can lock, which only a
//! killed writer leaves.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, CWD};
use rustix::io::Errno;

use super::sync::SyncingWriter;
use crate::error::{Error, Result};
use crate::session::{LateSlots, SlotsLast};
use crate::temporary::{self, NameDir, TempName};

/// A file being written beside its final path, with no name (or a
/// temporary one), synced in the background as it grows;
/// [`AtomicFile::commit`] syncs it, gives it its name and syncs the
/// directory. Dropped without a commit, it leaves the path as it was and
/// no other name behind.
pub struct AtomicFile {
    out: SyncingWriter<File>,
    /// Its temporary name, where the file system has no unnamed files.
    temp: Option<TempName>,
    dir: Arc<File>,
    name: Vec<u8>,
    path: PathBuf,
    overwrite: bool,
    renaming: &'static str,
}

impl AtomicFile {
    /// Starts the file that will be at `path`. An existing `path` is
    /// refused ([`Error::AlreadyExists`]) unless `overwrite`: now, and again
    /// when the file gets its name, so a file that appeared meanwhile is
    /// kept.
    pub fn create(path: &Path, overwrite: bool) -> Result<AtomicFile> {
        let no_name = "the path does not name a file";
        AtomicFile::beside(path, overwrite, no_name, "renaming the finished file to", true)
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

    /// `unnamed`: use an unnamed inode where the file system has them (off
    /// only in tests of the temporary-name fallback).
    fn beside(
        path: &Path,
        overwrite: bool,
        no_name: &'static str,
        renaming: &'static str,
        unnamed: bool,
    ) -> Result<AtomicFile> {
        let dir_path = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name =
            path.file_name().ok_or_else(|| Error::BadInput { path: path.to_path_buf(), reason: no_name })?;
        AtomicFile::refuse_existing(path, overwrite)?;
        let creating = Error::io("creating a file in", dir_path);
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = Arc::new(File::from(
            rustix::fs::openat(CWD, dir_path, dir_flags, Mode::empty()).map_err(|e| creating(e.into()))?,
        ));
        remove_stale(&dir, dir_path, name);
        let unnamed = if unnamed { temporary::open_unnamed(&*dir, 0o600) } else { Ok(None) };
        let (fd, temp) = match unnamed.map_err(Error::io("creating a file in", dir_path))? {
            Some(fd) => (fd, None),
            None => {
                let (temp, fd) = named_temp(&dir, name).map_err(Error::io("creating a file in", dir_path))?;
                (fd, Some(temp))
            }
        };
        // Held while the file is written: a name of ours that can be
        // locked was left by a writer that was killed.
        rustix::fs::flock(&fd, FlockOperation::LockExclusive)
            .map_err(|e| Error::io("locking the new file in", dir_path)(e.into()))?;
        let file = File::from(fd);
        let syncs = file.try_clone().map_err(Error::io("creating a file in", dir_path))?;
        Ok(AtomicFile {
            out: SyncingWriter::over(file, syncs)?,
            temp,
            dir,
            name: name.as_bytes().to_vec(),
            path: path.to_path_buf(),
            overwrite,
            renaming,
        })
    }

    /// Syncs the file, gives it its name and syncs the directory.
    pub fn commit(self) -> Result<()> {
        self.finish(None)
    }

    /// [`AtomicFile::commit`], writing `late_slots` at offset 0 first (after
    /// the data is synced, so the final sync has one page to do).
    fn finish(self, late_slots: Option<LateSlots>) -> Result<()> {
        let AtomicFile { out, temp, dir, name, path, overwrite, renaming } = self;
        let file = out.finish();
        if let Some(slots) = late_slots {
            // The data reaches the disk while Argon2id may still run; then the
            // table goes into its room and the final sync has one page to do.
            file.sync_data().map_err(Error::io("writing", &path))?;
            slots.write_into(&file, &path)?;
        }
        file.sync_all().map_err(Error::io("writing", &path))?;
        let exists = || Error::AlreadyExists { path: path.clone() };
        let named = match temp {
            Some(temp) => temp.end(|dir, from| Ok(temporary::rename(dir.as_fd(), from, &name, overwrite)?)),
            None => match temporary::link_unnamed(&file, &*dir, &name) {
                Err(Errno::EXIST) if overwrite => {
                    let dir: NameDir = dir.clone();
                    let (temp, ()) =
                        temporary::make(dir, temp_name(OsStr::from_bytes(&name))?, |dir, temp| {
                            Ok(temporary::link_unnamed(&file, dir.as_fd(), temp)?)
                        })
                        .map_err(Error::io(renaming, &path))?;
                    temp.end(|dir, from| Ok(temporary::rename(dir.as_fd(), from, &name, true)?))
                }
                other => other.map_err(io::Error::from),
            },
        };
        named.map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => exists(),
            _ => Error::io(renaming, &path)(e),
        })?;
        let _ = dir.sync_all();
        Ok(())
    }
}

/// The pattern of our temporary names beside `name`: `.NAME.lockbox-`, the
/// name cut to leave room within the 255 bytes a name may have.
fn temp_prefix(name: &OsStr) -> Vec<u8> {
    let name = name.as_bytes();
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(&name[..name.len().min(200)]);
    prefix.extend_from_slice(b".lockbox-");
    prefix
}

/// A fresh temporary name beside `name`: `.NAME.lockbox-<16 hex>.tmp`.
fn temp_name(name: &OsStr) -> Result<Vec<u8>> {
    let hex = temporary::random_hex().map_err(Error::stream("choosing a temporary name"))?;
    let mut temp = temp_prefix(name);
    temp.extend_from_slice(format!("{hex}.tmp").as_bytes());
    Ok(temp)
}

/// Whether `candidate` is one of our temporary names beside a file whose
/// names start with `prefix`.
fn is_ours(candidate: &[u8], prefix: &[u8]) -> bool {
    let hex = candidate.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(b".tmp"));
    hex.is_some_and(|hex| hex.len() == 16 && hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Creates a file under a fresh temporary name beside `name` in `dir`
/// (mode 0600), listed as live.
fn named_temp(dir: &Arc<File>, name: &OsStr) -> io::Result<(TempName, OwnedFd)> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    loop {
        let temp = temp_name(name).map_err(io::Error::other)?;
        let made = temporary::make(dir.clone(), temp, |dir, temp| {
            Ok(rustix::fs::openat(dir.as_fd(), temp, flags, Mode::from_raw_mode(0o600))?)
        });
        match made {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            other => return other,
        }
    }
}

/// Removes the temporary names beside `name` in `dir` that a killed writer
/// left: of our pattern, a regular file, and one no writer holds locked.
/// Best effort: what cannot be checked is left.
fn remove_stale(dir: &File, dir_path: &Path, name: &OsStr) {
    let prefix = temp_prefix(name);
    let Ok(entries) = fs::read_dir(dir_path) else { return };
    for entry in entries.flatten() {
        let candidate = entry.file_name();
        if is_ours(candidate.as_bytes(), &prefix) {
            let _ = remove_if_unlocked(dir, candidate.as_bytes());
        }
    }
}

fn remove_if_unlocked(dir: &File, name: &[u8]) -> rustix::io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    let opened = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
        return Ok(());
    }
    // Fails while its writer lives.
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)?;
    let now = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino) {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(())
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

impl ArchiveFile {
    /// A file beside `archive` to write a rewrite into and read it back,
    /// never given a name: a dry run's scratch copy, gone when dropped.
    pub(crate) fn scratch_beside(archive: &Path) -> Result<ArchiveFile> {
        let file = AtomicFile::beside(archive, true, "the archive path does not name a file", "", true)?;
        Ok(ArchiveFile { out: BufWriter::with_capacity(1 << 20, file), late_slots: None })
    }

    /// The file written, to read back what was flushed.
    pub(crate) fn reader(&self) -> io::Result<File> {
        self.out.get_ref().out.get_ref().try_clone()
    }
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
    let no_name = "the archive path does not name a file";
    let file = AtomicFile::beside(archive, overwrite, no_name, renaming, true)?;
    let own = file.out.get_ref().metadata().map_err(Error::io("writing", archive))?;
    let mut skip = vec![(own.dev(), own.ino())];
    if let Ok(old) = fs::metadata(archive) {
        skip.push((old.dev(), old.ino()));
    }
    let out = ArchiveFile { out: BufWriter::with_capacity(1 << 20, file), late_slots: None };
    let (out, result) = write(out, &skip).map_err(|e| e.writing_to(archive))?;
    let ArchiveFile { out, late_slots } = out;
    let file = out.into_inner().map_err(|e| Error::io("writing", archive)(e.into_error()))?;
    file.finish(late_slots)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    fn start(path: &Path, overwrite: bool, unnamed: bool) -> Result<AtomicFile> {
        AtomicFile::beside(path, overwrite, "no name", "renaming to", unnamed)
    }

    #[test]
    fn a_file_gets_its_name_whole_or_not_at_all() {
        for unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("a.lbox");
            let mut file = start(&path, false, unnamed).unwrap();
            file.write_all(b"half").unwrap();
            // Unnamed while written; a temporary name only in the fallback.
            assert_eq!(names(dir.path()).len(), usize::from(!unnamed), "{unnamed}");
            drop(file);
            assert!(names(dir.path()).is_empty(), "{unnamed}");
            let mut file = start(&path, false, unnamed).unwrap();
            file.write_all(b"whole").unwrap();
            file.commit().unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"whole");
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
            assert_eq!(names(dir.path()), ["a.lbox"]);
        }
    }

    #[test]
    fn an_existing_file_is_kept_unless_overwriting() {
        for unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("a.lbox");
            let early = start(&path, false, unnamed).unwrap();
            fs::write(&path, b"old").unwrap();
            // It appeared while the new one was written: kept.
            assert!(matches!(early.commit(), Err(Error::AlreadyExists { .. })));
            assert!(matches!(start(&path, false, unnamed), Err(Error::AlreadyExists { .. })));
            let mut file = start(&path, true, unnamed).unwrap();
            file.write_all(b"new").unwrap();
            file.commit().unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"new");
            assert_eq!(names(dir.path()), ["a.lbox"], "{unnamed}");
        }
    }

    #[test]
    fn a_killed_writers_temporary_name_is_removed_by_the_next_and_only_that() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lbox");
        let stale = ".a.lbox.lockbox-0123456789abcdef.tmp";
        let not_ours = [
            ".a.lbox.lockbox-0123456789ABCDEF.tmp",
            ".a.lbox.XyZ123.tmp",
            ".b.lbox.lockbox-0123456789abcdef.tmp",
        ];
        for name in std::iter::once(stale).chain(not_ours) {
            fs::write(dir.path().join(name), b"left").unwrap();
        }
        // A live writer's name, in the fallback: locked, so kept.
        let live = start(&path, false, false).unwrap();
        let live_name: Vec<String> = names(dir.path())
            .into_iter()
            .filter(|n| is_ours(n.as_bytes(), &temp_prefix(OsStr::new("a.lbox"))))
            .collect();
        assert_eq!(live_name.len(), 1, "{live_name:?}");
        let mut file = start(&path, false, true).unwrap();
        file.write_all(b"new").unwrap();
        file.commit().unwrap();
        let mut expected: Vec<String> = not_ours.iter().map(|n| n.to_string()).collect();
        expected.extend(live_name.iter().cloned());
        expected.push("a.lbox".into());
        expected.sort();
        assert_eq!(names(dir.path()), expected);
        drop(live);
    }
}
