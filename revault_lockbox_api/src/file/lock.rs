//! One writer at a time: every change to an archive file in place (an
//! append session, compaction, repair, key management) holds an exclusive
//! advisory lock (`flock`) on it. Readers take no lock: a committed state
//! never changes under them, and what a writer adds is ignored until its
//! trailer lands.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{flock, FlockOperation};

use crate::error::{Error, Result};

/// Opens the archive at `path` for reading and writing and locks it. With
/// `wait`, waits for another writer to finish; without, fails at once with
/// [`Error::Locked`]. Compaction renames a new file into place, so a lock
/// won on a file that is no longer at `path` is dropped and taken again on
/// the new one.
pub(crate) fn open_locked(path: &Path, wait: bool) -> Result<File> {
    loop {
        let file =
            OpenOptions::new().read(true).write(true).open(path).map_err(Error::io("opening", path))?;
        let how = if wait { FlockOperation::LockExclusive } else { FlockOperation::NonBlockingLockExclusive };
        match flock(&file, how) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(Error::Locked { path: path.to_path_buf() });
            }
            Err(e) => return Err(Error::io("locking", path)(e.into())),
        }
        let held = file.metadata().map_err(Error::io("inspecting", path))?;
        let now = fs::metadata(path).map_err(Error::io("inspecting", path))?;
        if (held.dev(), held.ino()) == (now.dev(), now.ino()) {
            return Ok(file);
        }
    }
}
