//! Links, made at the end of an extraction: hard links once their target
//! is placed (or, when it was not extracted, copies of its content), then
//! symbolic links, so that no write goes through a link the archive made.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Gid, Uid};
use rustix::io::Errno;

use super::{refused_xattrs, Extraction};
use crate::archive::{ContentSource, Damage};
use crate::error::{EntryPath, Error, Result};
use crate::extract::dirs::{mtime_only, timespec, Dir};
use crate::format::{Entry, EntryKind, Extent, FirstLinks};
use crate::xattrs::{self, Target};

impl<'a> Extraction<'a> {
    /// Hard links whose target was not extracted become copies of its
    /// content, so that `extract ARCHIVE some/path` gives whole files;
    /// links sharing one target share the first copy.
    pub(in crate::extract) fn copy_links(
        &mut self,
        archive: &dyn ContentSource,
        mut copies: Vec<Entry>,
    ) -> Result<()> {
        copies.sort_by_key(|e| e.extent.map(|x| x.offset));
        // By the stored target: the link that became its copy.
        let mut first_copy = FirstLinks::new();
        let mut to_copy = Vec::new();
        for e in copies {
            let EntryKind::Hardlink { target, .. } = &e.kind else { unreachable!("hard links only") };
            match first_copy.first(target) {
                Some(copy) => {
                    let mut link = e.clone();
                    link.kind = EntryKind::Hardlink { target: copy.to_vec(), size: 0, sha256: [0; 32] };
                    self.links.push(link);
                }
                None => {
                    first_copy.written(target.clone(), e.path.clone());
                    to_copy.push(e);
                }
            }
        }
        if to_copy.is_empty() {
            return Ok(());
        }
        let as_files = to_copy.into_iter().map(|mut e| {
            let (size, sha256) = e.content().map(|(s, d)| (s, *d)).expect("hard links have content");
            e.kind = EntryKind::File { size, sha256 };
            e.extent = e.extent.map(|x| Extent { linked: true, ..x });
            Ok(e)
        });
        self.write_files(archive, Box::new(as_files), false)?;
        Ok(())
    }

    /// Removes what is at `name` in `dir` (never a directory), when
    /// overwriting.
    fn clear(&self, dir: &Dir, name: &[u8], shown: &Path) -> Result<()> {
        if !self.options.replaces() {
            return Ok(());
        }
        match rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io("replacing", shown)(e.into())),
        }
    }

    pub(super) fn make_hardlink(&mut self, e: &Entry) -> Result<()> {
        let EntryKind::Hardlink { target, .. } = &e.kind else { unreachable!("hard links only") };
        if self.lost.contains(target) {
            let reason = format!("its target {} is damaged", EntryPath(target.clone()));
            self.report.damaged.push(Damage { path: EntryPath(e.path.clone()), reason });
            return Ok(());
        }
        let (from_dir, from_name) = self.walker.parent(target, false)?;
        let (dir, name) = self.walker.parent(&e.path, true)?;
        let shown = self.walker.display(&e.path);
        self.clear(&dir, name, &shown)?;
        rustix::fs::linkat(&from_dir.fd, from_name, &dir.fd, name, AtFlags::empty())
            .map_err(|err| link_error(err, "creating hard link", shown))?;
        self.restored();
        Ok(())
    }

    pub(super) fn make_symlink(&mut self, e: &Entry) -> Result<()> {
        let EntryKind::Symlink { target } = &e.kind else { unreachable!("symlinks only") };
        let (dir, name) = self.walker.parent(&e.path, true)?;
        let shown = self.walker.display(&e.path);
        self.clear(&dir, name, &shown)?;
        rustix::fs::symlinkat(target.as_slice(), &dir.fd, name)
            .map_err(|err| link_error(err, "creating symbolic link", shown.clone()))?;
        if let Some((uid, gid)) = self.owner(e) {
            let ids = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
            rustix::fs::chownat(&dir.fd, name, ids.0, ids.1, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|err| Error::io("setting the owner of", shown.clone())(err.into()))?;
        }
        let refused = xattrs::write_all(Target::Link(dir.fd.as_fd(), name), &self.xattrs(e));
        self.report.warnings.extend(refused_xattrs(&shown, refused));
        let times = mtime_only(timespec(e.meta.mtime_secs, e.meta.mtime_nanos));
        rustix::fs::utimensat(&dir.fd, name, &times, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|err| Error::io("setting mtime of", shown)(err.into()))?;
        self.restored();
        Ok(())
    }
}

/// An existing path is named as such (the hint to `--overwrite` follows).
pub(super) fn link_error(err: Errno, action: &'static str, shown: PathBuf) -> Error {
    if err == Errno::EXIST {
        Error::AlreadyExists { path: shown }
    } else {
        Error::io(action, shown)(err.into())
    }
}
