//! The leaves of the tree walk: files and symbolic links, each opened
//! relative to its directory, checked to be what the walk looked at, and
//! read; and what is skipped, with a warning or (strict) an error.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use rustix::fs::{fstat, openat, readlinkat, statat, AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::tree::{size_and_mtime, Found, Identity, Walk};
use crate::error::{Error, Result};
use crate::sparse::{data_segments, SegmentReader};
use crate::warning::{CreateWarning, WarningKind};
use crate::xattrs::Target;

impl<W: Write> Walk<'_, W> {
    pub(super) fn add_symlink(&mut self, found: Found<'_>) -> Result<()> {
        // The link's own metadata: `fstatat` again, now that its target is
        // read (a link cannot be opened without following it).
        let target = match readlinkat(found.dir, found.name, Vec::new()) {
            Ok(t) => t,
            // No longer a link.
            Err(e) => return self.skip_after(found.shown, e, &[Errno::INVAL]),
        };
        let st = match statat(found.dir, found.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(e) => return self.skip_after(found.shown, e, &[]),
        };
        let meta = self.metadata(&st, Target::Link(found.dir, found.name.as_bytes()), &found.shown)?;
        self.writer.add_symlink(&found.stored, &meta, target.as_bytes())?;
        self.report.entries += 1;
        Ok(())
    }

    pub(super) fn add_file(&mut self, found: Found<'_>, seen: Identity) -> Result<()> {
        let Some((fd, st)) = self.open(&found, seen, OFlags::empty())? else { return Ok(()) };
        let Found { shown, stored, .. } = found;
        let meta = self.metadata(&st, Target::Fd(fd.as_fd()), &shown)?;
        let linked = st.st_nlink > 1;
        if linked {
            if let Some(first) = self.links.first(&(seen.dev, seen.ino)) {
                self.writer.add_hardlink(&stored, &meta, first)?;
                self.report.entries += 1;
                return Ok(());
            }
        }
        let (size, mtime, mtime_nanos) = size_and_mtime(&st);
        let file = File::from(fd);
        // Read up to the size at open (tar's rule): a growing file must not
        // keep the walk reading.
        let mut content = (&file).take(size);
        // A read of the file names it; a write of the archive is the
        // caller's to name.
        let with_path = |e| match e {
            Error::Stream { action, source } if action == Error::READING_CONTENT => {
                Error::Io { action: "reading", path: shown.clone(), source }
            }
            e => e,
        };
        #[allow(clippy::unnecessary_cast)] // field types differ between targets
        let sparse =
            data_segments(&file, size, st.st_blocks as u64).map_err(Error::io("mapping holes of", &shown))?;
        let (n, expected) = match sparse {
            Some(map) => {
                let stored_len = map.stored_len();
                let data = SegmentReader::new(&file, &map);
                (self.writer.add_sparse_file(&stored, &meta, map, size, linked, data), stored_len)
            }
            None if linked => (self.writer.add_linked_file(&stored, &meta, size, &mut content), size),
            None => (self.writer.add_file(&stored, &meta, size, &mut content), size),
        };
        let n = n.map_err(with_path)?;
        if linked {
            self.links.written((seen.dev, seen.ino), stored);
        }
        self.report.entries += 1;
        self.report.content_bytes += n;
        let grew = file.read_at(&mut [0u8], size).map_err(Error::io("reading", &shown))? > 0;
        let after = fstat(&file).map_err(|e| Error::io("inspecting", &shown)(e.into()))?;
        if n != expected || grew || size_and_mtime(&after) != (size, mtime, mtime_nanos) {
            return self.warn(shown, WarningKind::Changed { stored: n });
        }
        Ok(())
    }

    /// Opens what was found without following a symbolic link (unless
    /// dereferencing) and without blocking on a FIFO, and checks that it is
    /// the file the walk looked at. `None`: skipped with a warning.
    pub(super) fn open(
        &mut self,
        found: &Found<'_>,
        seen: Identity,
        extra: OFlags,
    ) -> Result<Option<(OwnedFd, Stat)>> {
        let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY | extra;
        if !self.follow {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = match openat(found.dir, found.name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Now a symbolic link (`O_NOFOLLOW`), a non-directory, a socket.
            Err(e) => {
                let replaced = [Errno::LOOP, Errno::NOTDIR, Errno::NXIO];
                let replaced = if self.follow { &replaced[1..] } else { &replaced[..] };
                return self.skip_after(found.shown.clone(), e, replaced).map(|()| None);
            }
        };
        let st = fstat(&fd).map_err(|e| Error::io("inspecting", &found.shown)(e.into()))?;
        if Identity::of(&st) != seen {
            return self.warn(found.shown.clone(), WarningKind::Replaced).map(|()| None);
        }
        Ok(Some((fd, st)))
    }

    /// Skips `path` after the error `e`: vanished, replaced (the errors
    /// `replaced` say so here), or unreadable.
    pub(super) fn skip_after(&mut self, path: PathBuf, e: Errno, replaced: &[Errno]) -> Result<()> {
        match e {
            Errno::NOENT => self.warn(path, WarningKind::Vanished),
            e if replaced.contains(&e) => self.warn(path, WarningKind::Replaced),
            e => self.skip_with(CreateWarning::unreadable(path, &e.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::crypto::{KdfParams, Password};
    use crate::format::MAX_PATH_LEN;
    use crate::session::{ArchiveWriter, CreateOptions, Selection};
    use rustix::fs::CWD;
    use std::ffi::OsStr;
    use std::path::Path;

    fn walk(strict: bool) -> Walk<'static, Vec<u8>> {
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let writer = ArchiveWriter::new(Vec::new(), &Password::from("pw"), options).unwrap();
        Walk::new(writer, &[], false, strict, Box::leak(Box::new(Selection::new())), None)
    }

    fn open_dir(path: &Path) -> OwnedFd {
        openat(CWD, path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    fn kinds(walk: &Walk<'_, Vec<u8>>) -> Vec<WarningKind> {
        walk.report.warnings.iter().map(|w| w.kind.clone()).collect()
    }

    #[test]
    fn a_name_removed_after_the_directory_read_is_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open_dir(tmp.path());
        let mut walk = walk(false);
        walk.add_entry(dir.as_fd(), OsStr::new("gone"), "t/gone".into(), b"t/gone".to_vec()).unwrap();
        assert_eq!(kinds(&walk), [WarningKind::Vanished]);
        assert_eq!(walk.report.entries, 0);
        assert_eq!(walk.report.warnings[0].to_string(), "t/gone: file removed before we read it");
    }

    #[test]
    fn a_name_too_long_for_the_index_is_skipped_before_it_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("d")).unwrap();
        let dir = open_dir(tmp.path());
        let mut walk = walk(false);
        let stored = [vec![b'x'; MAX_PATH_LEN - 1], b"/d".to_vec()].concat();
        walk.add_entry(dir.as_fd(), OsStr::new("d"), "d".into(), stored).unwrap();
        assert_eq!(kinds(&walk), [WarningKind::NameTooLong]);
        assert_eq!(walk.report.entries, 0);
    }

    #[test]
    fn strict_turns_the_first_warning_into_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open_dir(tmp.path());
        let err = walk(true).add_entry(dir.as_fd(), OsStr::new("gone"), "gone".into(), b"gone".to_vec());
        assert!(matches!(err, Err(Error::Strict(CreateWarning { kind: WarningKind::Vanished, .. }))));
    }

    /// What a racing process can put under a name between the walk's look
    /// at a regular file and its open: each is skipped, nothing is read
    /// from it, and a FIFO does not block the open.
    #[test]
    fn a_file_swapped_after_the_look_is_skipped_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::write(&outside, b"secret").unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir(&tree).unwrap();
        let dir = open_dir(&tree);
        type SwapIn = fn(&Path, &Path);
        let swaps: [(&str, SwapIn); 3] = [
            ("a symlink to a file outside", |name, outside| symlink(outside, name).unwrap()),
            ("a FIFO", |name, _| rustix::fs::mkfifoat(CWD, name, Mode::RUSR | Mode::WUSR).unwrap()),
            ("another file", |name, _| fs::write(name, b"decoy!").unwrap()),
        ];
        for (what, swap_in) in swaps {
            let name = tree.join("f");
            fs::write(&name, b"decoy!").unwrap();
            let seen = Identity::of(&statat(&dir, "f", AtFlags::SYMLINK_NOFOLLOW).unwrap());
            // Made aside and renamed over, as an attacker would, so that the
            // old file's inode is not free for reuse.
            swap_in(&tree.join("new"), &outside);
            fs::rename(tree.join("new"), &name).unwrap();
            let mut walk = walk(false);
            let found = Found {
                dir: dir.as_fd(),
                name: OsStr::new("f"),
                shown: "tree/f".into(),
                stored: b"tree/f".to_vec(),
            };
            walk.add_file(found, seen).unwrap();
            assert_eq!(kinds(&walk), [WarningKind::Replaced], "{what}");
            assert_eq!((walk.report.entries, walk.report.content_bytes), (0, 0), "{what}");
            fs::remove_file(&name).unwrap();
        }
    }
}
