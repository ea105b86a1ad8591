//! Putting checked files in place: written under a temporary name beside
//! their target, synced in batches (one `syncfs` per batch), then renamed.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use filetime::FileTime;
use tempfile::{NamedTempFile, TempPath};

use crate::{Error, Result};

/// Where a file's bytes go while it is being extracted.
pub(super) enum Sink {
    Buffer(Vec<u8>),
    Temp(NamedTempFile),
}

/// Everything a placing thread needs to put one checked file in place.
pub(super) struct Placement {
    pub(super) sink: Sink,
    pub(super) path: PathBuf,
    pub(super) mode: u32,
    pub(super) mtime: FileTime,
    pub(super) overwrite: bool,
}

/// A complete file under its temporary name, waiting for the sync of its
/// batch before it is renamed into place.
pub(super) struct Written {
    tmp: TempPath,
    path: PathBuf,
    dev: u64,
    overwrite: bool,
}

impl Placement {
    /// Writes the file (if buffered) and sets its mode and mtime, under its
    /// temporary name.
    pub(super) fn write(self) -> Result<Written> {
        let path = self.path;
        let tmp = match self.sink {
            Sink::Temp(tmp) => tmp,
            Sink::Buffer(bytes) => {
                let mut tmp = temp_beside(&path)?;
                tmp.write_all(&bytes).map_err(Error::io("writing", tmp.path()))?;
                tmp
            }
        };
        let file = tmp.as_file();
        file.set_permissions(fs::Permissions::from_mode(self.mode))
            .map_err(Error::io("setting permissions of", &path))?;
        filetime::set_file_handle_times(file, None, Some(self.mtime))
            .map_err(Error::io("setting mtime of", &path))?;
        let dev = file.metadata().map_err(Error::io("inspecting", &path))?.dev();
        Ok(Written { tmp: tmp.into_temp_path(), path, dev, overwrite: self.overwrite })
    }
}

impl Written {
    /// Renames the file into place; never replaces an existing path unless
    /// overwriting was asked for.
    pub(super) fn rename(self) -> Result<()> {
        let path = self.path;
        let persisted =
            if self.overwrite { self.tmp.persist(&path) } else { self.tmp.persist_noclobber(&path) };
        persisted.map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                Error::AlreadyExists { path: path.clone() }
            } else {
                Error::io("renaming into place", &path)(e.error)
            }
        })
    }
}

/// Files synced together: a batch is flushed with one `syncfs` per file
/// system, then renamed into place. One sync for many files costs about
/// what one `fsync` does.
pub(super) const SYNC_BATCH_FILES: usize = 4096;
/// Bytes written before a batch is synced, bounding how much a crash can
/// leave behind under temporary names.
pub(super) const SYNC_BATCH_BYTES: u64 = 256 << 20;

/// Syncs the file systems a batch of written files is on, then renames
/// them into place. Runs on a thread of its own while extraction goes on.
pub(super) fn sync_and_rename(batch: Vec<Written>) -> Result<()> {
    let mut synced = HashSet::new();
    for w in &batch {
        if synced.insert(w.dev) {
            sync_file_system(w.path.parent().expect("entry paths have a parent under dest"))?;
        }
    }
    batch.into_iter().try_for_each(Written::rename)
}

/// Flushes the file system holding `dir` (`syncfs`): the data of every
/// file written there is on disk when it returns.
pub(super) fn sync_file_system(dir: &Path) -> Result<()> {
    let dir_file = fs::File::open(dir).map_err(Error::io("opening", dir))?;
    rustix::fs::syncfs(&dir_file).map_err(|e| Error::io("syncing the file system of", dir)(e.into()))
}

/// A new temporary file in the directory of `path`.
pub(super) fn temp_beside(path: &Path) -> Result<NamedTempFile> {
    let dir = path.parent().expect("entry paths have a parent under dest");
    tempfile::Builder::new()
        .prefix(".lockbox-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(Error::io("creating a temporary file in", dir))
}
