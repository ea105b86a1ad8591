//! Putting checked files in place, never a partial file under a final name.
//!
//! Each file is written to an inode without a name (`O_TMPFILE`) in its
//! directory, or, where the file system refuses those, under a temporary
//! name there (mode 0600); it gets its mode and mtime through its
//! descriptor; batches are synced (one `syncfs` per file system); then
//! each is linked (or renamed) to its name, never over an existing one
//! unless overwriting was asked for. A crash before the link leaves no
//! trace of an `O_TMPFILE` file.

use std::collections::HashSet;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{Gid, Mode, OFlags, Timespec, Uid};
use rustix::io::Errno;

use super::dirs::{mtime_only, sync_file_system, Dir};
use crate::archive::Damage;
use crate::error::{EntryPath, Error, Result};
use crate::format::Xattr;
use crate::quote::Quoted;
use crate::temporary::{self, TempName};
use crate::xattrs::{self, Target};

/// Where a file's bytes go while it is being extracted.
pub(super) enum Sink {
    Buffer(Vec<u8>),
    File(Unplaced),
}

/// What every placement shares.
pub(super) struct Placer {
    overwrite: bool,
    /// Cleared the first time a file system refuses `O_TMPFILE` (or
    /// there is no `/proc` to name one through).
    tmpfile: AtomicBool,
    /// Extended attributes files were refused, for the report.
    pub(super) warnings: Mutex<Vec<Damage>>,
}

impl Placer {
    pub(super) fn new(overwrite: bool) -> Placer {
        Placer { overwrite, tmpfile: AtomicBool::new(true), warnings: Mutex::new(Vec::new()) }
    }
}

/// A file being written, with no final name yet.
pub(super) struct Unplaced {
    file: File,
    dir: Arc<Dir>,
    /// Its temporary name, when it is not an `O_TMPFILE` inode; removed
    /// unless the file is placed.
    temp_name: Option<TempName>,
}

impl Unplaced {
    /// A new file in `dir`, created with permission bits `mode` (less the
    /// umask) if it has no name, 0600 if it has a temporary one.
    pub(super) fn create(placer: &Placer, dir: Arc<Dir>, mode: u32, shown: &Path) -> Result<Unplaced> {
        let io = Error::io("creating a temporary file beside", shown);
        if placer.tmpfile.load(Ordering::Relaxed) {
            match temporary::open_unnamed(&dir.fd, mode) {
                Ok(Some(fd)) => return Ok(Unplaced { file: fd.into(), dir, temp_name: None }),
                Ok(None) => placer.tmpfile.store(false, Ordering::Relaxed),
                Err(e) => return Err(io(e)),
            }
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        loop {
            let made = temporary::make(in_dir(&dir), temp_name()?, |dir, name| {
                Ok(rustix::fs::openat(dir.as_fd(), name, flags, Mode::from_raw_mode(0o600))?)
            });
            match made {
                Ok((name, fd)) => return Ok(Unplaced { file: fd.into(), dir, temp_name: Some(name) }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(e)),
            }
        }
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)
    }

    /// Writes `bytes` at `offset` (a sparse file's data segment).
    pub(super) fn write_all_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, bytes, offset)
    }

    /// Sets the length: a sparse file's trailing hole.
    pub(super) fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.file.set_len(len)
    }

    /// Links (or renames) the file to `name` in its directory.
    fn place(mut self, name: &[u8], overwrite: bool, shown: &Path) -> Result<()> {
        let exists = || Error::AlreadyExists { path: shown.to_path_buf() };
        let io = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                exists()
            } else {
                Error::io("putting in place", shown)(e)
            }
        };
        let rename = |temp: TempName, replace: bool| {
            temp.end(|dir, from| Ok(temporary::rename(dir.as_fd(), from, name, replace)?)).map_err(io)
        };
        if let Some(temp) = self.temp_name.take() {
            return rename(temp, overwrite);
        }
        match temporary::link_unnamed(&self.file, &self.dir.fd, name) {
            Err(Errno::EXIST) if overwrite => {
                // Replaced through a temporary name, which lives only
                // between this link and the rename.
                let temp = loop {
                    let made = temporary::make(in_dir(&self.dir), temp_name()?, |dir, temp| {
                        Ok(temporary::link_unnamed(&self.file, dir.as_fd(), temp)?)
                    });
                    match made {
                        Ok((temp, ())) => break temp,
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(io(e)),
                    }
                };
                rename(temp, true)
            }
            other => other.map_err(|e| io(e.into())),
        }
    }
}

/// An extraction directory as a [`temporary`] name's directory.
fn in_dir(dir: &Arc<Dir>) -> temporary::NameDir {
    struct InDir(Arc<Dir>);
    impl AsFd for InDir {
        fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
            self.0.fd.as_fd()
        }
    }
    Arc::new(InDir(Arc::clone(dir)))
}

/// A fresh temporary name, `.lockbox-XXXXXXXXXXXXXXXX.tmp`.
fn temp_name() -> Result<Vec<u8>> {
    let hex = temporary::random_hex().map_err(Error::stream("choosing a temporary name"))?;
    Ok(format!(".lockbox-{hex}.tmp").into_bytes())
}

/// Everything a placing thread needs to put one checked file in place.
pub(super) struct Placement {
    pub(super) sink: Sink,
    pub(super) size: u64,
    pub(super) dir: Arc<Dir>,
    pub(super) name: Vec<u8>,
    /// Where it goes, for messages.
    pub(super) shown: PathBuf,
    /// Permission bits to create it with, and a mode to set afterwards.
    pub(super) mode: (u32, Option<u32>),
    pub(super) mtime: Timespec,
    /// Owner and group to give it, when restoring owners.
    pub(super) owner: Option<(u32, u32)>,
    /// Extended attributes to restore.
    pub(super) xattrs: Vec<Xattr>,
    pub(super) placer: Arc<Placer>,
}

/// A complete file with no final name yet, waiting for the sync of its
/// batch before it is put in place.
pub(super) struct Written {
    file: Unplaced,
    /// Its size, counted against the batch's bytes.
    pub(super) size: u64,
    name: Vec<u8>,
    shown: PathBuf,
    overwrite: bool,
}

impl Placement {
    /// Writes the file (if buffered) and sets its mode and mtime.
    pub(super) fn write(self) -> Result<Written> {
        let shown = self.shown;
        let (create_mode, chmod) = self.mode;
        let file = match self.sink {
            Sink::File(file) => file,
            Sink::Buffer(bytes) => {
                let mut file = Unplaced::create(&self.placer, self.dir, create_mode, &shown)?;
                file.write_all(&bytes).map_err(Error::io("writing", &shown))?;
                file
            }
        };
        // Before the mode: chown clears setuid and setgid bits.
        if let Some((uid, gid)) = self.owner {
            let ids = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
            rustix::fs::fchown(&file.file, ids.0, ids.1)
                .map_err(|e| Error::io("setting the owner of", &shown)(e.into()))?;
        }
        let refused = xattrs::write_all(Target::Fd(file.file.as_fd()), &self.xattrs);
        if !refused.is_empty() {
            let mut warnings = self.placer.warnings.lock().unwrap_or_else(|p| p.into_inner());
            warnings.extend(refused_xattrs(&shown, refused));
        }
        // A temporary name was created 0600; an unnamed inode has its mode.
        let chmod = if file.temp_name.is_some() { Some(chmod.unwrap_or(create_mode)) } else { chmod };
        if let Some(mode) = chmod {
            rustix::fs::fchmod(&file.file, Mode::from_raw_mode(mode))
                .map_err(|e| Error::io("setting permissions of", &shown)(e.into()))?;
        }
        rustix::fs::futimens(&file.file, &mtime_only(self.mtime))
            .map_err(|e| Error::io("setting mtime of", &shown)(e.into()))?;
        let overwrite = self.placer.overwrite;
        Ok(Written { file, size: self.size, name: self.name, shown, overwrite })
    }
}

impl Written {
    /// Puts the file in place.
    pub(super) fn place(self) -> Result<()> {
        self.file.place(&self.name, self.overwrite, &self.shown)
    }
}

/// Warnings for the extended attributes `shown` was refused.
pub(super) fn refused_xattrs(shown: &Path, refused: Vec<(Vec<u8>, std::io::Error)>) -> Vec<Damage> {
    let path = EntryPath(shown.as_os_str().as_bytes().to_vec());
    refused
        .into_iter()
        .map(|(name, e)| Damage {
            path: path.clone(),
            reason: format!("extended attribute {} not restored: {e}", Quoted::bytes(&name)),
        })
        .collect()
}

/// Files synced together: a batch is flushed with one `syncfs` per file
/// system, then put in place. One sync for many files costs about what
/// one `fsync` does.
pub(super) const SYNC_BATCH_FILES: usize = 4096;
/// Files after which a batch is handed over as soon as the sync thread is
/// free (group commit): where a sync is cheap (a tmpfs) files get their
/// names while the extraction goes on, not all at its end; where it is
/// slow, batches grow to its pace, up to [`SYNC_BATCH_FILES`].
pub(super) const SYNC_BATCH_MIN_FILES: usize = 256;
/// Bytes written before a batch is synced, bounding how much a crash can
/// leave behind (and, under temporary names, on disk).
pub(super) const SYNC_BATCH_BYTES: u64 = 256 << 20;

/// Files a batch may hold: each keeps its descriptor (and perhaps its
/// directory's) open until it is placed, and the next batch fills while
/// one is synced, so the open-file limit bounds it.
pub(super) fn sync_batch_files() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
    let room = limit.saturating_sub(DESCRIPTORS_KEPT) / 4;
    usize::try_from(room).unwrap_or(usize::MAX).clamp(16, SYNC_BATCH_FILES)
}

/// Descriptors left for everything else: the archive, directories open
/// along the current path, files in flight.
const DESCRIPTORS_KEPT: u64 = 256;

/// Syncs the file systems a batch of written files is on, then puts them
/// in place. Runs on a thread of its own while extraction goes on.
pub(super) fn sync_and_place(batch: Vec<Written>) -> Result<()> {
    let mut synced = HashSet::new();
    for w in &batch {
        if synced.insert(w.file.dir.dev) {
            sync_file_system(&w.file.file, &w.shown)?;
        }
    }
    batch.into_iter().try_for_each(Written::place)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::CWD;

    fn dir(path: &Path) -> Arc<Dir> {
        let fd = rustix::fs::openat(CWD, path, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        Arc::new(Dir::from_fd(fd).unwrap())
    }

    /// Writes `bytes` as `name` in `dest`, with O_TMPFILE or a temporary name.
    fn place(dest: &Path, name: &str, bytes: &[u8], tmpfile: bool, overwrite: bool) -> Result<()> {
        let placer =
            Arc::new(Placer { overwrite, tmpfile: AtomicBool::new(tmpfile), warnings: Mutex::default() });
        let shown = dest.join(name);
        let placement = Placement {
            sink: Sink::Buffer(bytes.to_vec()),
            size: bytes.len() as u64,
            dir: dir(dest),
            name: name.as_bytes().to_vec(),
            shown: shown.clone(),
            mode: (0o640, None),
            mtime: Timespec { tv_sec: 1_600_000_000, tv_nsec: 5 },
            owner: None,
            xattrs: Vec::new(),
            placer,
        };
        let before = std::fs::read(&shown).ok();
        let written = placement.write()?;
        // The final name is untouched until the file is placed.
        assert_eq!(std::fs::read(&shown).ok(), before);
        written.place()
    }

    fn names(dest: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dest).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn files_are_placed_with_and_without_o_tmpfile() {
        use std::os::unix::fs::MetadataExt;
        for tmpfile in [true, false] {
            let dest = tempfile::tempdir().unwrap();
            place(dest.path(), "f", b"new", tmpfile, false).unwrap();
            let md = std::fs::metadata(dest.path().join("f")).unwrap();
            assert_eq!((md.mode() & 0o7777, md.mtime(), md.mtime_nsec()), (0o640, 1_600_000_000, 5));
            assert_eq!(std::fs::read(dest.path().join("f")).unwrap(), b"new");
            // No temporary name is left behind.
            assert_eq!(names(dest.path()), ["f"]);
        }
    }

    #[test]
    fn existing_files_are_kept_unless_overwriting() {
        for tmpfile in [true, false] {
            let dest = tempfile::tempdir().unwrap();
            std::fs::write(dest.path().join("f"), b"old").unwrap();
            let err = place(dest.path(), "f", b"new", tmpfile, false).unwrap_err();
            assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
            assert_eq!(std::fs::read(dest.path().join("f")).unwrap(), b"old");
            assert_eq!(names(dest.path()), ["f"]);
            place(dest.path(), "f", b"new", tmpfile, true).unwrap();
            assert_eq!(std::fs::read(dest.path().join("f")).unwrap(), b"new");
            assert_eq!(names(dest.path()), ["f"]);
        }
    }

    #[test]
    fn an_unplaced_file_leaves_nothing() {
        for tmpfile in [true, false] {
            let dest = tempfile::tempdir().unwrap();
            let placer =
                Placer { overwrite: false, tmpfile: AtomicBool::new(tmpfile), warnings: Mutex::default() };
            let mut file = Unplaced::create(&placer, dir(dest.path()), 0o644, dest.path()).unwrap();
            file.write_all(b"partial").unwrap();
            assert_eq!(names(dest.path()).len(), usize::from(!tmpfile));
            drop(file);
            assert!(names(dest.path()).is_empty());
        }
    }
}
