//! [`S3Writer`]: an archive streamed into one object by a multipart upload,
//! with bounded memory. The object appears under its key whole, when the
//! upload completes in [`S3Writer::finish`]; an upload that is not finished
//! (an error, a panic, the writer dropped) is aborted, and nothing appears.

use std::io::{self, Write};

use object_store::{MultipartUpload, ObjectStore, PutMode, PutOptions, PutPayload};
use tokio::task::JoinSet;

use super::{io_error, S3Error, S3Location, S3Store, MIN_PART_SIZE};

/// S3 accepts at most this many parts in one upload.
const MAX_PARTS: usize = 10_000;
/// Part size doubles after every this many parts, so that an upload
/// reaches S3's 5 TiB object limit within its 10,000 parts while small
/// archives keep small parts.
const PARTS_PER_SIZE: usize = 1_000;
/// Largest part S3 accepts.
const MAX_PART_SIZE: usize = 5 << 30;
/// Parts in flight hold at most about this many bytes (at least one part),
/// whatever the configured number of requests: memory stays bounded as
/// parts grow.
const MAX_BYTES_IN_FLIGHT: usize = 256 << 20;

enum State {
    /// Less than one part written: kept in memory; a single conditional
    /// PUT if the archive ends here.
    Buffering,
    /// A multipart upload with parts uploading in the background.
    Uploading { upload: Box<dyn MultipartUpload>, parts: JoinSet<object_store::Result<()>>, sent: usize },
    /// Completed, or aborted after an error.
    Done,
}

/// Writes one object; see the module docs.
pub struct S3Writer {
    store: S3Store,
    /// The object written.
    location: S3Location,
    overwrite: bool,
    /// Replacing an archive: its appends' parts are deleted once the new
    /// object is complete (before, a failed create would lose them).
    drop_parts: bool,
    first_part: usize,
    buffer: Vec<u8>,
    state: State,
}

impl std::fmt::Debug for S3Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Writer").field("location", &self.location).finish_non_exhaustive()
    }
}

impl S3Writer {
    pub(super) fn start(store: S3Store, overwrite: bool, part_size: usize) -> Result<S3Writer, S3Error> {
        if !overwrite && store.exists()? {
            return Err(S3Error::AlreadyExists { location: store.location().clone() });
        }
        let location = store.location().clone();
        let mut writer = S3Writer::new(store, location, overwrite, part_size);
        writer.drop_parts = overwrite;
        Ok(writer)
    }

    /// Writes `location` (in the store's bucket), replacing whatever is
    /// there: an object of a name nobody else writes.
    pub(super) fn to(store: S3Store, location: S3Location, part_size: usize) -> S3Writer {
        S3Writer::new(store, location, true, part_size)
    }

    fn new(store: S3Store, location: S3Location, overwrite: bool, part_size: usize) -> S3Writer {
        let first_part = part_size.clamp(MIN_PART_SIZE, MAX_PART_SIZE);
        let state = State::Buffering;
        S3Writer { store, location, overwrite, drop_parts: false, first_part, buffer: Vec::new(), state }
    }

    fn part_size(&self, parts_sent: usize) -> usize {
        let doublings = (parts_sent / PARTS_PER_SIZE).min(20) as u32;
        self.first_part.saturating_mul(1 << doublings).min(MAX_PART_SIZE)
    }

    /// Sends the full buffer as the next part, once fewer than the
    /// configured number of parts are uploading.
    fn send_part(&mut self) -> io::Result<()> {
        let (store, location) = (self.store.clone(), self.location.clone());
        if matches!(self.state, State::Buffering) {
            let path = location.object_path();
            let upload = store
                .block_on(store.object_store().put_multipart(&path))
                .map_err(|e| io_error(store.error_at("starting the upload of", &location, e)))?;
            self.state = State::Uploading { upload, parts: JoinSet::new(), sent: 0 };
        }
        let State::Uploading { upload, parts, sent } = &mut self.state else { unreachable!("set above") };
        let part_size = self.buffer.len();
        let limit = store.requests_in_flight().min((MAX_BYTES_IN_FLIGHT / part_size.max(1)).max(1));
        while parts.len() >= limit {
            let joined = store.block_on(parts.join_next()).expect("the set is not empty");
            joined
                .map_err(io::Error::other)?
                .map_err(|e| io_error(store.error_at("uploading", &location, e)))?;
        }
        if *sent >= MAX_PARTS {
            return Err(io::Error::other(format!("{location}: more than {MAX_PARTS} parts")));
        }
        let part = PutPayload::from(std::mem::take(&mut self.buffer));
        let _runtime = store.handle().enter();
        parts.spawn(upload.put_part(part));
        *sent += 1;
        Ok(())
    }

    /// Completes the upload: the object appears under its key now, whole.
    /// Without `overwrite`, an object that appeared under the key since
    /// the start is refused and the upload aborted.
    ///
    /// Replacing an archive, its appends' parts are deleted after the new
    /// object is complete, newest first: a crash in between leaves the new
    /// archive followed by parts no trailer of it commits, which readers
    /// skip as a torn tail and appends refuse until they are gone.
    pub fn finish(mut self) -> io::Result<()> {
        let result = self.complete();
        if result.is_err() {
            self.abort();
            return result;
        }
        if self.drop_parts {
            self.store.delete_parts().map_err(|e| {
                io::Error::other(format!(
                    "written, but the replaced archive's parts were not all deleted: {e}"
                ))
            })?;
        }
        Ok(())
    }

    fn complete(&mut self) -> io::Result<()> {
        let (store, location) = (self.store.clone(), self.location.clone());
        let path = location.object_path();
        let already = || io_error(S3Error::AlreadyExists { location: location.clone() });
        let last = PutPayload::from(std::mem::take(&mut self.buffer));
        match &mut self.state {
            State::Buffering => {
                self.state = State::Done;
                let mode = if self.overwrite { PutMode::Overwrite } else { PutMode::Create };
                let options = PutOptions { mode, ..PutOptions::default() };
                match store.block_on(store.object_store().put_opts(&path, last, options)) {
                    Ok(_) => Ok(()),
                    Err(object_store::Error::AlreadyExists { .. }) => Err(already()),
                    Err(e) => Err(io_error(store.error_at("writing", &location, e))),
                }
            }
            State::Uploading { upload, parts, .. } => {
                store.block_on(async {
                    if last.content_length() > 0 {
                        parts.spawn(upload.put_part(last));
                    }
                    while let Some(joined) = parts.join_next().await {
                        let done = joined.map_err(io::Error::other)?;
                        done.map_err(|e| io_error(store.error_at("uploading", &location, e)))?;
                    }
                    Ok::<_, io::Error>(())
                })?;
                if !self.overwrite && store.exists().map_err(io_error)? {
                    return Err(already());
                }
                store
                    .block_on(upload.complete())
                    .map_err(|e| io_error(store.error_at("completing the upload of", &location, e)))?;
                self.state = State::Done;
                Ok(())
            }
            State::Done => Err(io::Error::other("the upload already ended")),
        }
    }

    /// Aborts an unfinished upload (best effort: a store that is gone keeps
    /// the parts until its lifecycle rules drop them; the key stays empty
    /// either way).
    fn abort(&mut self) {
        if let State::Uploading { mut upload, mut parts, .. } =
            std::mem::replace(&mut self.state, State::Done)
        {
            let store = self.store.clone();
            let _ = store.block_on(async {
                parts.shutdown().await;
                tokio::time::timeout(std::time::Duration::from_secs(10), upload.abort()).await
            });
        }
    }
}

impl Write for S3Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if matches!(self.state, State::Done) {
            return Err(io::Error::other("the upload already ended"));
        }
        let sent = match &self.state {
            State::Uploading { sent, .. } => *sent,
            _ => 0,
        };
        let part = self.part_size(sent);
        if self.buffer.capacity() < part {
            self.buffer.reserve_exact(part - self.buffer.len());
        }
        let n = buf.len().min(part - self.buffer.len());
        self.buffer.extend_from_slice(&buf[..n]);
        if self.buffer.len() == part {
            if let Err(e) = self.send_part() {
                self.abort();
                return Err(e);
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for S3Writer {
    fn drop(&mut self) {
        self.abort();
    }
}
