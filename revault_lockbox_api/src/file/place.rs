//! Where an archive changed by an append lives: a local file, locked, the
//! session written after its committed end; or, with the `s3` feature, an
//! archive on object storage, the session spooled to an unnamed local file
//! and then committed as the archive's next part (docs/SCALE.md, "Appends
//! on an object store"). The updater reads and writes through this, and
//! nothing else in it knows which.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
#[cfg(feature = "s3")]
use std::sync::Arc;

use super::lock::open_locked;
use super::sync::{AppendOut, SyncingWriter};
use crate::error::{Error, Result};
#[cfg(feature = "s3")]
use crate::format::TRAILER_LEN;
#[cfg(feature = "s3")]
use crate::s3::{S3Reader, S3Store};
use crate::storage::ReadAt;

/// The archive an updater changes.
pub(crate) enum Place {
    /// A local file, holding the writer lock.
    File(File),
    /// An archive on object storage and the session spooled for it.
    #[cfg(feature = "s3")]
    Object(ObjectPlace),
}

/// An archive on object storage as an append sees it: its committed
/// objects, and the local spool that holds the session's bytes (those a
/// local append would write after offset `at`, the committed end).
#[cfg(feature = "s3")]
pub(crate) struct ObjectPlace {
    store: S3Store,
    committed: Arc<S3Reader>,
    spool: File,
    at: u64,
}

/// The bytes of the archive an updater reads: the file, or the committed
/// objects followed, when asked for, by the session spooled so far.
pub(crate) enum Source {
    /// The archive file (its bytes past the committed end included).
    File(File),
    /// The committed objects, and the spool after them from its offset.
    #[cfg(feature = "s3")]
    Object(Arc<S3Reader>, Option<(File, u64)>),
}

impl ReadAt for Source {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self {
            Source::File(file) => FileExt::read_exact_at(file, buf, offset),
            #[cfg(feature = "s3")]
            Source::Object(committed, spool) => {
                let Some((spool, at)) = spool else { return committed.read_exact_at(buf, offset) };
                let before = at.saturating_sub(offset).min(buf.len() as u64) as usize;
                let (head, rest) = buf.split_at_mut(before);
                if !head.is_empty() {
                    committed.read_exact_at(head, offset)?;
                }
                match rest.is_empty() {
                    true => Ok(()),
                    false => FileExt::read_exact_at(spool, rest, offset + before as u64 - at),
                }
            }
        }
    }

    fn len(&self) -> io::Result<u64> {
        match self {
            Source::File(file) => Ok(file.metadata()?.len()),
            #[cfg(feature = "s3")]
            Source::Object(committed, None) => committed.len(),
            #[cfg(feature = "s3")]
            Source::Object(_, Some((spool, at))) => Ok(at + spool.metadata()?.len()),
        }
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        #[cfg(feature = "s3")]
        if let Source::Object(committed, _) = self {
            committed.will_read(ranges);
        }
        let _ = ranges;
    }

    fn at_hand(&self, offset: u64, len: u64) -> bool {
        match self {
            #[cfg(feature = "s3")]
            Source::Object(committed, None) => committed.at_hand(offset, len),
            _ => false,
        }
    }
}

impl Place {
    /// The archive file at `path`, locked against other writers (`wait`:
    /// for the one holding it to finish).
    pub(crate) fn file(path: &Path, wait: bool) -> Result<Place> {
        Ok(Place::File(open_locked(path, wait)?))
    }

    /// The archive `committed` reads (its objects as opened), with an
    /// empty spool.
    #[cfg(feature = "s3")]
    pub(crate) fn object(committed: S3Reader, path: &Path) -> Result<Place> {
        let store = committed.store().clone();
        let committed = Arc::new(committed);
        let at = committed.len().map_err(Error::io("opening", path))?;
        let spool = tempfile::tempfile().map_err(Error::io("making a spool for a session of", path))?;
        Ok(Place::Object(ObjectPlace { store, committed, spool, at }))
    }

    /// The archive's bytes as committed when it was opened.
    pub(crate) fn committed(&self, path: &Path) -> Result<Source> {
        match self {
            Place::File(file) => Ok(Source::File(file.try_clone().map_err(Error::io("opening", path))?)),
            #[cfg(feature = "s3")]
            Place::Object(o) => Ok(Source::Object(Arc::clone(&o.committed), None)),
        }
    }

    /// The archive's bytes with what this updater wrote after them so far.
    pub(crate) fn written(&self, path: &Path) -> Result<Source> {
        match self {
            Place::File(_) => self.committed(path),
            #[cfg(feature = "s3")]
            Place::Object(o) => {
                let spool = o.spool.try_clone().map_err(Error::io("opening the spool of", path))?;
                Ok(Source::Object(Arc::clone(&o.committed), Some((spool, o.at))))
            }
        }
    }

    /// Where a session starting at offset `end` writes its bytes.
    pub(crate) fn output(&self, end: u64, path: &Path) -> Result<AppendOut> {
        match self {
            Place::File(file) => {
                let mut out = file.try_clone().map_err(Error::io("opening", path))?;
                out.seek(SeekFrom::Start(end)).map_err(Error::io("seeking in", path))?;
                // The background syncs use a file description of their own:
                // one shared with the locked file would hold the writer lock
                // for as long as the sync thread lives.
                let syncs = File::open(path).map_err(Error::io("opening", path))?;
                Ok(AppendOut::File(SyncingWriter::over(out, syncs)?))
            }
            #[cfg(feature = "s3")]
            Place::Object(o) => {
                let mut out = o.spool.try_clone().map_err(Error::io("opening the spool of", path))?;
                let from = end.checked_sub(o.at).ok_or_else(|| {
                    Error::tampered(
                        "parts after the archive's last committed session (an interrupted \
                             `create --overwrite`?): remove them from KEY.parts/ to append",
                    )
                })?;
                out.seek(SeekFrom::Start(from)).map_err(Error::io("seeking in the spool of", path))?;
                Ok(AppendOut::Spool(out))
            }
        }
    }

    /// Cuts what was written after offset `end` off again.
    pub(crate) fn cut_back(&self, end: u64, path: &Path) -> Result<()> {
        match self {
            Place::File(file) => {
                file.set_len(end).map_err(Error::io("truncating", path))?;
                file.sync_all().map_err(Error::io("syncing", path))
            }
            #[cfg(feature = "s3")]
            Place::Object(o) => {
                o.spool.set_len(end.saturating_sub(o.at)).map_err(Error::io("truncating the spool of", path))
            }
        }
    }

    /// The archive file itself (device and inode), which a walk never
    /// stores in itself; none for an object.
    pub(crate) fn own_file(&self, path: &Path) -> Result<Vec<(u64, u64)>> {
        match self {
            Place::File(file) => {
                let md = file.metadata().map_err(Error::io("inspecting", path))?;
                Ok(vec![(md.dev(), md.ino())])
            }
            #[cfg(feature = "s3")]
            Place::Object(_) => Ok(Vec::new()),
        }
    }

    /// Makes the session written durable as the archive's: nothing more
    /// for a file (its trailer was synced last); for an object, the
    /// conditional create of its next part from the spool, which fails
    /// with an error that [`Place::raced`] tells when another writer
    /// created that part first.
    /// Parts are at least S3's minimum and four pages of `page_size`, as
    /// a create's.
    pub(crate) fn commit(&mut self, page_size: usize, path: &Path) -> Result<()> {
        #[cfg(not(feature = "s3"))]
        let _ = (page_size, path);
        match self {
            Place::File(_) => Ok(()),
            #[cfg(feature = "s3")]
            Place::Object(o) => {
                let part_size = crate::s3::MIN_PART_SIZE.max(4 * page_size);
                let part = o.committed.parts() + 1;
                o.store
                    .create_part(part, &mut o.spool, part_size)
                    .map_err(Error::io("committing a session to", path))?;
                o.committed.delete_stale_staging();
                Ok(())
            }
        }
    }

    /// After a commit refused as raced: whether the archive now ends with
    /// exactly this session (a request the client retried after its first
    /// try had landed, answered "exists" the second time). The session's
    /// trailer, which holds its salt and commit hash, tells it from any
    /// other writer's.
    pub(crate) fn landed(&self, path: &Path) -> Result<bool> {
        #[cfg(feature = "s3")]
        if let Place::Object(o) = self {
            let spooled = o.spool.metadata().map_err(Error::io("reading the spool of", path))?.len();
            let fresh = o.store.open().map_err(|e| Error::io("opening", path)(io::Error::other(e)))?;
            let len = fresh.len().map_err(Error::io("opening", path))?;
            if spooled < TRAILER_LEN as u64 || len != o.at + spooled {
                return Ok(false);
            }
            let (mut ours, mut theirs) = ([0u8; TRAILER_LEN], [0u8; TRAILER_LEN]);
            FileExt::read_exact_at(&o.spool, &mut ours, spooled - TRAILER_LEN as u64)
                .map_err(Error::io("reading the spool of", path))?;
            fresh.read_exact_at(&mut theirs, len - TRAILER_LEN as u64).map_err(Error::io("reading", path))?;
            return Ok(ours == theirs);
        }
        let _ = path;
        Ok(false)
    }

    /// Whether `e` says that another writer committed first.
    pub(crate) fn raced(e: &Error) -> bool {
        #[cfg(feature = "s3")]
        if let Error::Io { source, .. } = e {
            return crate::s3::is_raced(source);
        }
        let _ = e;
        false
    }

    /// For an object: the archive as it is now (after another writer's
    /// commit), with an empty spool; `None` for a file, which no other
    /// writer changes while the lock is held.
    #[cfg(feature = "s3")]
    pub(crate) fn reopened(&mut self, path: &Path) -> Result<Option<u64>> {
        let Place::Object(o) = self else { return Ok(None) };
        let fresh = o.store.open().map_err(|e| Error::io("opening", path)(io::Error::other(e)))?;
        o.at = fresh.len().map_err(Error::io("opening", path))?;
        o.committed = Arc::new(fresh);
        o.spool.set_len(0).map_err(Error::io("truncating the spool of", path))?;
        Ok(Some(o.committed.parts()))
    }
}
