//! Writing an archive file: synced in the background as it grows, so that
//! the final sync before the rename has little left to do.

use std::io::Write;

use crate::error::{Error, Result};

/// Writes to a file (a temporary one, or an archive being appended to)
/// and, every [`SYNC_EVERY`] bytes, has a background thread sync what was
/// written so far: the disk works while pages are compressed, and the
/// final sync has little left to do.
pub(crate) struct SyncingWriter<F: Write> {
    tmp: F,
    unsynced: u64,
    kick: Option<std::sync::mpsc::SyncSender<()>>,
    syncer: Option<std::thread::JoinHandle<()>>,
}

/// Bytes written between background syncs.
const SYNC_EVERY: u64 = 64 << 20;

impl<F: Write> SyncingWriter<F> {
    /// Writes to `out`, syncing `file` (the same file) in the background.
    pub(crate) fn over(out: F, file: std::fs::File) -> Result<SyncingWriter<F>> {
        let (kick, kicks) = std::sync::mpsc::sync_channel::<()>(1);
        let syncer = std::thread::Builder::new()
            .name("lockbox-sync".into())
            .spawn(move || {
                // Errors surface in the final, foreground sync.
                while kicks.recv().is_ok() {
                    let _ = file.sync_data();
                }
            })
            .map_err(Error::stream("starting the sync thread"))?;
        Ok(SyncingWriter { tmp: out, unsynced: 0, kick: Some(kick), syncer: Some(syncer) })
    }

    /// The file written to.
    pub(crate) fn get_ref(&self) -> &F {
        &self.tmp
    }

    /// Stops the background syncs and returns the file. (Dropped without
    /// this, the writer's closed channel ends the thread after its current
    /// sync.)
    pub(crate) fn finish(mut self) -> F {
        self.kick = None;
        if let Some(t) = self.syncer.take() {
            let _ = t.join();
        }
        self.tmp
    }
}

impl<F: Write> Write for SyncingWriter<F> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.tmp.write(buf)?;
        self.unsynced += n as u64;
        if self.unsynced >= SYNC_EVERY {
            self.unsynced = 0;
            if let Some(kick) = &self.kick {
                // A sync already queued covers this data too.
                let _ = kick.try_send(());
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// The output of an append session: the archive file after its committed
/// end, synced in the background as it grows, or, for a dry run, nothing
/// (the bytes are only counted).
pub(crate) enum AppendOut {
    File(SyncingWriter<std::fs::File>),
    /// The local spool of a session for an archive on object storage: a
    /// file without a name that the commit uploads, never synced.
    #[cfg(feature = "s3")]
    Spool(std::fs::File),
    Counted(u64),
}

impl AppendOut {
    /// Syncs the file's data to disk (nothing to do for a dry run).
    pub(crate) fn sync_data(&self) -> std::io::Result<()> {
        match self {
            AppendOut::File(out) => out.get_ref().sync_data(),
            #[cfg(feature = "s3")]
            AppendOut::Spool(_) => Ok(()),
            AppendOut::Counted(_) => Ok(()),
        }
    }
}

impl Write for AppendOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            AppendOut::File(out) => out.write(buf),
            #[cfg(feature = "s3")]
            AppendOut::Spool(out) => out.write(buf),
            AppendOut::Counted(n) => {
                *n += buf.len() as u64;
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            AppendOut::File(out) => out.flush(),
            #[cfg(feature = "s3")]
            AppendOut::Spool(out) => out.flush(),
            AppendOut::Counted(_) => Ok(()),
        }
    }
}
