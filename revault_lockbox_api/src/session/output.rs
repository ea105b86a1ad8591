//! The session's output sink: tracks the position, counts bytes for
//! progress, and seals index nodes and writes them in line with the pages.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::crypto::seal_index_node;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{Child, IndexNodeId, ARCHIVE_ID_LEN};
use crate::index::NodeSink;
use crate::progress::Progress;

/// The output: position tracking, and index nodes sealed and written in
/// line with the data pages.
pub(super) struct Output<W> {
    pub(super) out: W,
    pub(super) position: u64,
    pub(super) archive_id: [u8; ARCHIVE_ID_LEN],
    /// The archive's format version, which the session header and trailer
    /// carry.
    pub(super) version: u16,
    pub(super) keys: Arc<SessionKeys>,
    pub(super) progress: Option<Arc<Progress>>,
    /// Told of each entry as it is stored (`-v`).
    pub(super) log: Option<crate::entry_log::Log>,
}

impl<W: Write> Output<W> {
    pub(super) fn write(&mut self, bytes: &[u8], action: &'static str) -> Result<()> {
        self.out.write_all(bytes).map_err(Error::stream(action))?;
        self.position += bytes.len() as u64;
        if let Some(p) = &self.progress {
            p.bytes_out.store(self.position, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl<W: Write> NodeSink for Output<W> {
    fn write_node(&mut self, id: IndexNodeId, plain: Vec<u8>) -> Result<Child> {
        let sealed = seal_index_node(&self.keys, &self.archive_id, &id, plain);
        let offset = self.position;
        self.write(&sealed.frame, "writing an index node")?;
        self.write(&sealed.bytes, "writing an index node")?;
        Ok(Child {
            first_key: Vec::new(),
            offset,
            stored_len: sealed.stored_len(),
            plain_len: sealed.plain_len,
            codec: sealed.codec,
            hash: sealed.hash,
        })
    }
}
