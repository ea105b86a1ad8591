//! The tree walk of `create` and of an append: directory descriptors all
//! the way down, so that a process racing in the tree cannot make the walk
//! store a file from outside it. This file holds the walk's state and the
//! directories; `leaf.rs` the files and links.
//!
//! Each name is looked at with `fstatat` (`lstat` unless dereferencing),
//! then opened relative to its directory's descriptor with `O_NOFOLLOW |
//! O_NONBLOCK` and `fstat`ed: the opened file must be the one looked at
//! (device, inode and kind), else it was swapped and is skipped. A symbolic
//! link swapped in is never followed (`O_NOFOLLOW`), a FIFO swapped in never
//! blocks the open (`O_NONBLOCK`). Size, mode and times come from the
//! descriptor; a file is read up to the size it had when opened.
//!
//! A directory holding a tag file (`--exclude-caches`,
//! `--exclude-if-present`) is stored with its tag files only, as tar does.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{fstat, openat, statat, AtFlags, Dir, FileType, Mode, OFlags, Stat, CWD};
use rustix::io::Errno;

use super::CreateReport;
use crate::error::{Error, Result};
use crate::format::{check_xattr_list, FirstLinks, MAX_PATH_LEN};
use crate::owners::OwnerNames;
use crate::session::{ArchiveWriter, Metadata, Selection, CACHEDIR_SIGNATURE, CACHEDIR_TAG};
use crate::warning::{CreateWarning, WarningKind};
use crate::xattrs::{self, Target};

/// Walks input trees into an [`ArchiveWriter`], in index order.
pub(super) struct Walk<'a, W: Write> {
    pub(super) writer: ArchiveWriter<W>,
    pub(super) report: CreateReport,
    /// First stored path of each multiply-linked file, by (device, inode).
    pub(super) links: FirstLinks<(u64, u64)>,
    /// Files never archived (the archive itself), by (device, inode).
    pub(super) skip: &'a [(u64, u64)],
    /// Follow symbolic links (`-h`).
    pub(super) follow: bool,
    /// Fail at the first warning instead of skipping.
    pub(super) strict: bool,
    /// The directories being walked, outermost first: one met again inside
    /// itself is a loop.
    pub(super) open_dirs: Vec<(u64, u64)>,
    /// Decides what is stored (`update`); everything when `None`.
    pub(super) filter: Option<&'a mut dyn WalkFilter<W>>,
    /// Excludes and `--one-file-system`.
    pub(super) selection: &'a Selection,
    /// The device of the input being walked, for `--one-file-system`.
    pub(super) root_dev: Option<u64>,
    /// Owner and group names by id, looked up once each.
    pub(super) names: OwnerNames,
    /// Store extended attributes (`--xattrs`).
    pub(super) xattrs: bool,
}

/// What the walk saw of a name before storing it.
pub(crate) struct Seen {
    pub(crate) kind: FileType,
    pub(crate) size: u64,
    pub(crate) mtime_secs: i64,
    pub(crate) mtime_nanos: u32,
}

/// Decides, for each name the walk reaches, whether it is stored (`update`
/// skips unchanged files, and records deletions before a path). A
/// directory not stored is still walked into.
pub(crate) trait WalkFilter<W: Write> {
    fn admit(&mut self, writer: &mut ArchiveWriter<W>, stored: &[u8], seen: &Seen) -> Result<bool>;
}

/// A name met in a directory the walk holds open.
pub(super) struct Found<'d> {
    pub(super) dir: BorrowedFd<'d>,
    pub(super) name: &'d OsStr,
    /// How warnings name it.
    pub(super) shown: PathBuf,
    /// What it is stored as.
    pub(super) stored: Vec<u8>,
}

/// What must not change between looking at a name and opening it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Identity {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) kind: FileType,
}

impl Identity {
    #[allow(clippy::unnecessary_cast)] // field types differ between targets
    pub(super) fn of(st: &Stat) -> Identity {
        Identity { dev: st.st_dev as u64, ino: st.st_ino as u64, kind: FileType::from_raw_mode(st.st_mode) }
    }
}

#[allow(clippy::unnecessary_cast)] // field types differ between targets
fn metadata_of(st: &Stat) -> Metadata {
    Metadata::new(
        st.st_mode as u32 & 0o7777,
        st.st_uid,
        st.st_gid,
        st.st_mtime as i64,
        st.st_mtime_nsec as u32,
    )
}

#[allow(clippy::unnecessary_cast)] // field types differ between targets
fn mtime_nanos(st: &Stat) -> i128 {
    i128::from(st.st_mtime as i64) * 1_000_000_000 + i128::from(st.st_mtime_nsec as i64)
}

#[allow(clippy::unnecessary_cast)] // field types differ between targets
fn ctime_nanos(st: &Stat) -> i128 {
    i128::from(st.st_ctime as i64) * 1_000_000_000 + i128::from(st.st_ctime_nsec as i64)
}

#[allow(clippy::unnecessary_cast)] // field types differ between targets
pub(super) fn size_and_mtime(st: &Stat) -> (u64, i64, u64) {
    (st.st_size as u64, st.st_mtime as i64, st.st_mtime_nsec as u64)
}

impl<'a, W: Write> Walk<'a, W> {
    pub(super) fn new(
        writer: ArchiveWriter<W>,
        skip: &'a [(u64, u64)],
        follow: bool,
        strict: bool,
        selection: &'a Selection,
        filter: Option<&'a mut dyn WalkFilter<W>>,
    ) -> Self {
        Walk {
            writer,
            report: CreateReport::default(),
            links: FirstLinks::new(),
            skip,
            follow,
            strict,
            open_dirs: Vec::new(),
            filter,
            selection,
            root_dev: None,
            names: OwnerNames::default(),
            xattrs: false,
        }
    }

    /// What is stored of `st`: mode, owner ids and names, mtime, and with
    /// `xattrs` the extended attributes of `target` (left out with a
    /// warning when they cannot be read or are too many).
    pub(super) fn metadata(&mut self, st: &Stat, target: Target<'_>, shown: &Path) -> Result<Metadata> {
        let meta = metadata_of(st);
        let (user, group) = (self.names.user(meta.uid), self.names.group(meta.gid));
        let meta = meta.with_names(user, group);
        if !self.xattrs {
            return Ok(meta);
        }
        let xattrs = xattrs::read_all(target)
            .map_err(|e| e.to_string())
            .and_then(|x| check_xattr_list(&x).map(|()| x).map_err(str::to_string));
        match xattrs {
            Ok(xattrs) => Ok(meta.with_xattrs(xattrs)),
            Err(error) => {
                self.warn(shown.to_path_buf(), WarningKind::XattrsNotStored { error })?;
                Ok(meta)
            }
        }
    }

    /// Adds the input at `full` under the name `stored`, and everything
    /// below it. `shown` names it in warnings.
    pub(super) fn add_root(&mut self, full: &Path, shown: PathBuf, stored: Vec<u8>) -> Result<()> {
        self.root_dev = None;
        let name = full.file_name().filter(|_| !stored.is_empty());
        let Some(name) = name else {
            // `.` or `/` (stored as nothing): the directory itself, stored
            // as its contents.
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let dir = openat(CWD, full, flags, Mode::empty())
                .map_err(|e| Error::io("opening directory", full)(e.into()))?;
            let st = fstat(&dir).map_err(|e| Error::io("inspecting", full)(e.into()))?;
            self.root_dev = Some(Identity::of(&st).dev);
            return self.add_dir_contents(dir, &st, &shown, &stored);
        };
        let parent = match full.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // The path leading to an input is followed, as tar does; the input
        // itself is not, unless dereferencing.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = openat(CWD, parent, flags, Mode::empty())
            .map_err(|e| Error::io("opening directory", parent)(e.into()))?;
        self.add_entry(dir.as_fd(), name, shown, stored)
    }

    /// Adds the entry `name` of the directory `dir`.
    pub(super) fn add_entry(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        shown: PathBuf,
        stored: Vec<u8>,
    ) -> Result<()> {
        // An excluded name is not looked at, nor anything below it.
        if self.selection.excludes(&stored) {
            return Ok(());
        }
        // Checked before anything is read, and before the walk goes deeper.
        if stored.len() > MAX_PATH_LEN {
            return self.warn(shown, WarningKind::NameTooLong);
        }
        let at = if self.follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
        let st = match statat(dir, name, at) {
            Ok(st) => st,
            // Dereferencing, a dangling link is there but cannot be read.
            Err(Errno::NOENT) if self.follow && statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() => {
                return self.skip_with(CreateWarning::unreadable(shown, &Errno::NOENT.into()))
            }
            Err(e) => return self.skip_after(shown, e, &[]),
        };
        let seen = Identity::of(&st);
        if seen.kind != FileType::Directory
            && !self.selection.is_new_enough(mtime_nanos(&st), ctime_nanos(&st))
        {
            return Ok(());
        }
        if self.skip.contains(&(seen.dev, seen.ino)) {
            return self.warn(shown, WarningKind::ArchiveItself);
        }
        let store = match self.filter.as_mut() {
            Some(filter) => {
                let (size, mtime_secs, mtime_nanos) = size_and_mtime(&st);
                let what = Seen { kind: seen.kind, size, mtime_secs, mtime_nanos: mtime_nanos as u32 };
                filter.admit(&mut self.writer, &stored, &what)?
            }
            None => true,
        };
        let found = Found { dir, name, shown, stored };
        if !store && seen.kind != FileType::Directory {
            return Ok(());
        }
        match seen.kind {
            FileType::Directory => self.add_dir(found, seen, store),
            FileType::RegularFile => self.add_file(found, seen),
            FileType::Symlink => self.add_symlink(found),
            FileType::Fifo => self.warn(found.shown, WarningKind::Unsupported("FIFO")),
            FileType::Socket => self.warn(found.shown, WarningKind::Unsupported("socket")),
            _ => self.warn(found.shown, WarningKind::Unsupported("device")),
        }
    }

    /// Adds a directory (its entry only when `store`) and what it holds.
    pub(super) fn add_dir(&mut self, found: Found<'_>, seen: Identity, store: bool) -> Result<()> {
        let Some((fd, st)) = self.open(&found, seen, OFlags::DIRECTORY)? else { return Ok(()) };
        if self.open_dirs.contains(&(seen.dev, seen.ino)) {
            return self.warn(found.shown, WarningKind::Loop);
        }
        if store {
            let meta = self.metadata(&st, Target::Fd(fd.as_fd()), &found.shown)?;
            self.writer.add_dir(&found.stored, &meta)?;
            self.report.entries += 1;
        }
        // `--one-file-system`: a mount point is stored, not what it holds.
        let root_dev = *self.root_dev.get_or_insert(seen.dev);
        if self.selection.stays_on_one_file_system() && seen.dev != root_dev {
            return Ok(());
        }
        self.add_dir_contents(fd, &st, &found.shown, &found.stored)
    }

    /// Adds what the open directory `fd` holds, in index order.
    fn add_dir_contents(&mut self, fd: OwnedFd, st: &Stat, shown: &Path, stored: &[u8]) -> Result<()> {
        let mut names = match read_names(&fd) {
            Ok(names) => names,
            Err(e) => return self.skip_with(CreateWarning::unreadable(shown.to_path_buf(), &e)),
        };
        // A tagged directory keeps its tag files and nothing else.
        if names.iter().any(|n| self.is_tag_in(&fd, n)) {
            names.retain(|n| self.is_tag_in(&fd, n));
        }
        let id = Identity::of(st);
        self.open_dirs.push((id.dev, id.ino));
        for name in names {
            let name = OsStr::from_bytes(&name);
            let mut child = stored.to_vec();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(name.as_bytes());
            self.add_entry(fd.as_fd(), name, shown.join(name), child)?;
        }
        self.open_dirs.pop();
        Ok(())
    }

    /// Whether `name` in the directory `fd` is a tag file: an
    /// `--exclude-if-present` name, or a `CACHEDIR.TAG` whose first bytes
    /// are the signature (tar checks it too, so a stray file of that name
    /// hides nothing).
    fn is_tag_in(&self, fd: &OwnedFd, name: &[u8]) -> bool {
        if !self.selection.is_tag(name) {
            return false;
        }
        if name != CACHEDIR_TAG || self.selection.is_tag_name_only(name) {
            return true;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(file) = openat(fd, OsStr::from_bytes(name), flags, Mode::empty()) else { return false };
        let mut head = [0u8; CACHEDIR_SIGNATURE.len()];
        std::fs::File::from(file).read_exact(&mut head).is_ok() && head == CACHEDIR_SIGNATURE
    }

    pub(super) fn warn(&mut self, path: PathBuf, kind: WarningKind) -> Result<()> {
        self.skip_with(CreateWarning::new(path, kind))
    }

    /// Records `warning`, or fails with it when strict.
    pub(super) fn skip_with(&mut self, warning: CreateWarning) -> Result<()> {
        if self.strict {
            return Err(Error::Strict(warning));
        }
        self.report.warnings.push(warning);
        Ok(())
    }
}

/// The names in the open directory `fd`, sorted bytewise (the index order
/// of siblings), without `.` and `..`.
fn read_names(fd: &OwnedFd) -> std::io::Result<Vec<Vec<u8>>> {
    let mut names = Vec::new();
    for entry in Dir::new(fd.try_clone()?)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    names.sort_unstable();
    Ok(names)
}
