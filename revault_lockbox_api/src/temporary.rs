//! The temporary names this process has given files and not yet renamed
//! or removed: an archive's between its link and its rename over an
//! existing file (or throughout, where a file system has no unnamed
//! files), an extracted file's where it needs one. Each name is made and
//! ended under one lock, so [`remove_all`], run by a signal handler before
//! the process ends, removes every name that exists and lets no new one
//! be made after it. The helpers for unnamed files (`O_TMPFILE`) and
//! renames that never replace are here too, for both writers.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, CWD};
use rustix::io::Errno;

/// The directory a name is in: removed through its descriptor, never by a
/// path that a rename elsewhere could make point somewhere else.
pub(crate) type NameDir = Arc<dyn AsFd + Send + Sync>;

struct Live {
    next_id: u64,
    names: Vec<(u64, NameDir, Vec<u8>)>,
    /// Set by [`remove_all`]: the process is ending; no new names.
    ended: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live { next_id: 0, names: Vec::new(), ended: false });

fn live() -> MutexGuard<'static, Live> {
    // A poisoned list still names the files to remove.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A live temporary name. [`TempName::end`] renames it away; dropped, the
/// name is removed.
#[must_use = "a temporary name is removed when dropped"]
pub(crate) struct TempName {
    id: u64,
}

/// Runs `create`, which makes the name `name` in `dir`, and lists the name
/// as live, both under the lock. Once [`remove_all`] has run, nothing is
/// made: an [`io::ErrorKind::Interrupted`] error.
pub(crate) fn make<T>(
    dir: NameDir,
    name: Vec<u8>,
    create: impl FnOnce(&NameDir, &[u8]) -> io::Result<T>,
) -> io::Result<(TempName, T)> {
    let mut live = live();
    if live.ended {
        return Err(ending());
    }
    let made = create(&dir, &name)?;
    let id = live.next_id;
    live.next_id += 1;
    live.names.push((id, dir, name));
    Ok((TempName { id }, made))
}

impl TempName {
    /// Runs `rename`, which moves the name away (to its final name), then
    /// removes the name if it is still there (`rename` failed) and forgets
    /// it, all under the lock. Returns what `rename` returned, or an
    /// [`io::ErrorKind::Interrupted`] error if [`remove_all`] removed the
    /// name first.
    pub(crate) fn end<T>(self, rename: impl FnOnce(&NameDir, &[u8]) -> io::Result<T>) -> io::Result<T> {
        let mut live = live();
        let Some(at) = live.names.iter().position(|(id, _, _)| *id == self.id) else {
            std::mem::forget(self);
            return Err(ending());
        };
        let (_, dir, name) = live.names.swap_remove(at);
        let result = rename(&dir, &name);
        let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_slice(), AtFlags::empty());
        std::mem::forget(self);
        result
    }
}

impl Drop for TempName {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(at) = live.names.iter().position(|(id, _, _)| *id == self.id) {
            let (_, dir, name) = live.names.swap_remove(at);
            let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_slice(), AtFlags::empty());
        }
    }
}

fn ending() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "the process is ending on a signal")
}

/// Removes every temporary name this process has made and not yet renamed
/// or removed, and refuses new ones from now on: for a signal handler
/// (a thread of its own, not the handler itself) to call before the
/// process ends. Returns how many names it removed.
pub fn remove_all() -> usize {
    let mut live = live();
    live.ended = true;
    let names = std::mem::take(&mut live.names);
    for (_, dir, name) in &names {
        let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_slice(), AtFlags::empty());
    }
    names.len()
}

/// Opens an inode without a name (`O_TMPFILE`) in `dir`, for writing, with
/// permission bits `mode` (less the umask); `None` where the file system
/// has none, or `/proc` is not mounted (naming one later needs it).
pub(crate) fn open_unnamed(dir: impl AsFd, mode: u32) -> io::Result<Option<OwnedFd>> {
    if !Path::new("/proc/self/fd").is_dir() {
        return Ok(None);
    }
    let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, ".", flags, Mode::from_raw_mode(mode)) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Gives the unnamed inode `file` ([`open_unnamed`]) the name `name` in
/// `dir`; never replaces one (`EEXIST`).
pub(crate) fn link_unnamed(file: impl AsFd, dir: impl AsFd, name: &[u8]) -> rustix::io::Result<()> {
    let fd_path = format!("/proc/self/fd/{}", file.as_fd().as_raw_fd());
    rustix::fs::linkat(CWD, fd_path.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
}

/// Renames `from` to `to` in `dir`. Without `replace`, never replaces:
/// `renameat2(RENAME_NOREPLACE)`, or a link and an unlink where the file
/// system lacks it (`EEXIST` either way).
pub(crate) fn rename(dir: impl AsFd, from: &[u8], to: &[u8], replace: bool) -> rustix::io::Result<()> {
    let dir = dir.as_fd();
    if replace {
        return rustix::fs::renameat(dir, from, dir, to);
    }
    match rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => rustix::fs::linkat(dir, from, dir, to, AtFlags::empty())
            .and_then(|()| rustix::fs::unlinkat(dir, from, AtFlags::empty())),
        other => other,
    }
}

/// 16 random hexadecimal digits, for a temporary name.
pub(crate) fn random_hex() -> io::Result<String> {
    Ok(format!("{:016x}", getrandom::u64().map_err(io::Error::other)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    fn dir_of(path: &Path) -> NameDir {
        Arc::new(std::fs::File::open(path).unwrap())
    }

    fn create(dir: &NameDir, name: &[u8]) -> io::Result<OwnedFd> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(dir.as_fd(), name, flags, Mode::from_raw_mode(0o600))?)
    }

    #[test]
    fn a_dropped_name_is_removed_and_an_ended_one_renamed() {
        let tmp = tempfile::tempdir().unwrap();
        let (name, _fd) = make(dir_of(tmp.path()), b".t1".to_vec(), create).unwrap();
        assert_eq!(names(tmp.path()), [".t1"]);
        drop(name);
        assert!(names(tmp.path()).is_empty());
        let (name, _fd) = make(dir_of(tmp.path()), b".t2".to_vec(), create).unwrap();
        name.end(|dir, from| Ok(rename(dir.as_fd(), from, b"final", false)?)).unwrap();
        assert_eq!(names(tmp.path()), ["final"]);
        // A failed rename leaves no temporary name either.
        let (name, _fd) = make(dir_of(tmp.path()), b".t3".to_vec(), create).unwrap();
        let err = name.end(|dir, from| Ok(rename(dir.as_fd(), from, b"final", false)?)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(names(tmp.path()), ["final"]);
    }

    #[test]
    fn an_unnamed_file_gets_its_name_only_when_linked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::File::open(tmp.path()).unwrap();
        let fd = open_unnamed(&dir, 0o600).unwrap().expect("O_TMPFILE where the tests run");
        rustix::io::write(&fd, b"whole").unwrap();
        assert!(names(tmp.path()).is_empty());
        link_unnamed(&fd, &dir, b"f").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("f")).unwrap(), b"whole");
        assert_eq!(link_unnamed(&fd, &dir, b"f"), Err(Errno::EXIST));
    }
}
