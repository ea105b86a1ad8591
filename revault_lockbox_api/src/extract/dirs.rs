//! The destination's directories, reached through descriptors.
//!
//! The destination is opened once; every step below it is an `openat`
//! with `O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor,
//! and everything else (creating, linking, setting modes and times) acts
//! on a descriptor or on a name inside one. So a symbolic link that
//! appears in the destination while extraction runs is refused, never
//! followed, and no path is resolved twice.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, Timespec, Timestamps, Uid, CWD, UTIME_OMIT};
use rustix::io::Errno;

use crate::error::{Error, Result};
use crate::format::{is_within, Xattr};

/// What a directory gets besides its mode and mtime: an owner when
/// restoring owners, extended attributes when restoring them.
pub(super) struct OwnerAndXattrs<'a> {
    pub(super) owner: Option<(u32, u32)>,
    pub(super) xattrs: &'a [Xattr],
}

/// An open directory of the destination.
pub(super) struct Dir {
    pub(super) fd: OwnedFd,
    /// Device and inode when opened: a directory is only ever changed
    /// again if it is still the same one.
    pub(super) dev: u64,
    ino: u64,
}

impl Dir {
    pub(super) fn from_fd(fd: OwnedFd) -> rustix::io::Result<Dir> {
        let st = rustix::fs::fstat(&fd)?;
        Ok(Dir { fd, dev: st.st_dev, ino: st.st_ino })
    }

    /// Identifies the directory for [`Walker::finish_dir`].
    pub(super) fn identity(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

/// Opens directories below the destination, keeping those along the last
/// path asked for: entries come in index order, where a directory's
/// contents follow it, so most lookups open nothing.
pub(super) struct Walker {
    dest: PathBuf,
    root: Arc<Dir>,
    /// Stored path and directory, outermost first.
    open: Vec<(Vec<u8>, Arc<Dir>)>,
    /// The directories this extraction created, in order: each as the
    /// first `len` bytes of a stored path shared by those made with it.
    pub(super) made: Vec<(Arc<[u8]>, usize)>,
}

const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// Why a symbolic link in the destination is not followed to a directory.
pub(super) const LINK_WHERE_A_DIR_GOES: &str = "a symbolic link stands where a directory goes";

/// Directories the archive does not list get the usual mode, less the umask.
const IMPLICIT_DIR_MODE: u32 = 0o777;
/// Directory entries stay private until their final mode is set at the end.
pub(super) const NEW_DIR_MODE: u32 = 0o700;

impl Walker {
    /// Opens `dest`, which must be a directory (the user named it, so it
    /// may be reached through a symbolic link).
    pub(super) fn open(dest: &Path) -> Result<Walker> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rustix::fs::openat(CWD, dest, flags, Mode::empty()).and_then(Dir::from_fd).map_err(
            |e| match e {
                Errno::NOTDIR => {
                    Error::BadInput { path: dest.into(), reason: "destination is not a directory" }
                }
                e => Error::io("opening destination", dest)(e.into()),
            },
        )?;
        Ok(Walker { dest: dest.to_path_buf(), root: Arc::new(root), open: Vec::new(), made: Vec::new() })
    }

    /// The destination directory itself.
    pub(super) fn root(&self) -> &Arc<Dir> {
        &self.root
    }

    /// Where a stored path is, for messages.
    pub(super) fn display(&self, path: &[u8]) -> PathBuf {
        self.dest.join(OsStr::from_bytes(path))
    }

    /// The directory at stored path `dir` (empty: the destination),
    /// creating missing components when `create`, never following a
    /// symbolic link.
    pub(super) fn dir(&mut self, dir: &[u8], create: bool) -> Result<Arc<Dir>> {
        while self.open.last().is_some_and(|(p, _)| !is_within(p, dir)) {
            self.open.pop();
        }
        let mut current = self.open.last().map_or_else(|| Arc::clone(&self.root), |(_, d)| Arc::clone(d));
        let mut at = self.open.last().map_or(0, |(p, _)| p.len() + 1);
        let mut shared: Option<Arc<[u8]>> = None;
        while at < dir.len() {
            let end = dir[at..].iter().position(|&b| b == b'/').map_or(dir.len(), |i| at + i);
            let name = &dir[at..end];
            let (child, made) =
                self.open_child(&current, name, create.then_some(IMPLICIT_DIR_MODE), &dir[..end])?;
            if made {
                let path = shared.get_or_insert_with(|| Arc::from(dir));
                self.made.push((Arc::clone(path), end));
            }
            current = Arc::new(child);
            self.open.push((dir[..end].to_vec(), Arc::clone(&current)));
            at = end + 1;
        }
        Ok(current)
    }

    /// The directory holding stored path `path`, and its last component.
    pub(super) fn parent<'p>(&mut self, path: &'p [u8], create: bool) -> Result<(Arc<Dir>, &'p [u8])> {
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&path[..0], path),
        };
        Ok((self.dir(dir, create)?, name))
    }

    /// What is at stored path `path`, if anything, and its modification
    /// time, creating nothing and following no symbolic link (a parent that
    /// is one is an error).
    pub(super) fn existing(&mut self, path: &[u8]) -> Result<Option<(FileType, (i64, i64))>> {
        let (dir, name) = match self.parent(path, false) {
            Ok(found) => found,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            #[allow(clippy::unnecessary_cast)] // field types differ between targets
            Ok(st) => {
                Ok(Some((FileType::from_raw_mode(st.st_mode), (st.st_mtime as i64, st.st_mtime_nsec as i64))))
            }
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io("inspecting", self.display(path))(e.into())),
        }
    }

    /// Makes the directory entry `path` (or takes the one there), private
    /// until [`Walker::finish_dir`] gives it its mode.
    pub(super) fn make_dir(&mut self, path: &[u8]) -> Result<Arc<Dir>> {
        let (parent, name) = self.parent(path, true)?;
        let opened = self.open_child(&parent, name, Some(NEW_DIR_MODE), path);
        // A file where the directory goes is in the way; a symbolic link
        // there is refused as unsafe, as the checking pass refuses it.
        let (dir, made) = opened.map_err(|e| match e {
            Error::UnsafePath { reason, .. } if reason != LINK_WHERE_A_DIR_GOES => {
                Error::AlreadyExists { path: self.display(path) }
            }
            e => e,
        })?;
        if made {
            self.made.push((Arc::from(path), path.len()));
        }
        let dir = Arc::new(dir);
        self.open.push((path.to_vec(), Arc::clone(&dir)));
        Ok(dir)
    }

    /// Gives directory `path` its final mode and mtime, through a
    /// descriptor, if it is still the directory made as `identity`; one
    /// replaced meanwhile is left alone.
    pub(super) fn finish_dir(
        &mut self,
        path: &[u8],
        identity: (u64, u64),
        mode: u32,
        mtime: Timespec,
        meta: OwnerAndXattrs<'_>,
    ) -> Result<Vec<(Vec<u8>, std::io::Error)>> {
        let dir = self.dir(path, false)?;
        if dir.identity() != identity {
            return Err(Error::io("setting the mode of", self.display(path))(std::io::Error::other(
                "it was replaced by another directory during extraction",
            )));
        }
        if let Some((uid, gid)) = meta.owner {
            rustix::fs::fchown(&dir.fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))
                .map_err(|e| Error::io("setting the owner of", self.display(path))(e.into()))?;
        }
        let refused = crate::xattrs::write_all(crate::xattrs::Target::Fd(dir.fd.as_fd()), meta.xattrs);
        rustix::fs::fchmod(&dir.fd, Mode::from_raw_mode(mode))
            .map_err(|e| Error::io("setting permissions of", self.display(path))(e.into()))?;
        rustix::fs::futimens(&dir.fd, &mtime_only(mtime))
            .map_err(|e| Error::io("setting mtime of", self.display(path))(e.into()))?;
        Ok(refused)
    }

    /// Opens directory `name` in `parent`; creates it with `create` mode
    /// first when it is missing. Also says whether it created it.
    fn open_child(&self, parent: &Dir, name: &[u8], create: Option<u32>, path: &[u8]) -> Result<(Dir, bool)> {
        let io = |action| {
            let shown = self.display(path);
            move |e: Errno| Error::io(action, shown)(e.into())
        };
        let mut made = false;
        if let Some(mode) = create {
            match rustix::fs::mkdirat(&parent.fd, name, Mode::from_raw_mode(mode)) {
                Ok(()) => made = true,
                Err(Errno::EXIST) => {}
                Err(e) => return Err(io("creating directory")(e)),
            }
        }
        match rustix::fs::openat(&parent.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok((Dir::from_fd(fd).map_err(io("opening directory"))?, made)),
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let is_link = rustix::fs::statat(&parent.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode).is_symlink());
                let reason = if is_link { LINK_WHERE_A_DIR_GOES } else { "not a directory" };
                Err(Error::UnsafePath { path: path.into(), reason })
            }
            Err(e) => Err(io("opening directory")(e)),
        }
    }
}

/// Times that set the mtime and leave the atime alone.
pub(super) fn mtime_only(mtime: Timespec) -> Timestamps {
    Timestamps { last_access: Timespec { tv_sec: 0, tv_nsec: UTIME_OMIT }, last_modification: mtime }
}

/// An entry's stored mtime.
pub(super) fn timespec(secs: i64, nanos: u32) -> Timespec {
    Timespec { tv_sec: secs, tv_nsec: nanos.into() }
}

/// Flushes the file system holding `fd` (`syncfs`).
pub(super) fn sync_file_system(fd: impl AsFd, shown: &Path) -> Result<()> {
    rustix::fs::syncfs(fd).map_err(|e| Error::io("syncing the file system of", shown)(e.into()))
}
