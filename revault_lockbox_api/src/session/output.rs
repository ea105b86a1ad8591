//! The session's output sink: tracks the position, counts bytes for
//! progress, and seals index nodes and writes them in line with the pages.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::crypto::seal_index_node;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{
    encode_header_copy, header_copy_allowed, Child, HeaderPrefix, IndexNodeId, ARCHIVE_ID_LEN,
    HEADER_PREFIX_LEN,
};
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
    /// The header copy the session ends with (version 4), taken when written.
    pub(super) header_copy: Option<HeaderCopy>,
}

/// The copy of the header prefix and slot table a session writes before
/// its trailer (FORMAT.md §3.11).
pub(super) struct HeaderCopy {
    pub(super) bytes: Vec<u8>,
    pub(super) slot_len: u16,
    /// Where it was written: a create whose slots come last writes them
    /// here too (`late_slots`).
    pub(super) written_at: Arc<AtomicU64>,
}

impl HeaderCopy {
    /// The copy of `head` that a session of `version` ends with, if any.
    pub(super) fn of(head: &[u8], version: u16, written_at: Arc<AtomicU64>) -> Option<HeaderCopy> {
        if !header_copy_allowed(version) {
            return None;
        }
        let prefix = head[..HEADER_PREFIX_LEN].try_into().expect("a prefix");
        let slot_len = HeaderPrefix::decode(prefix).map_or(0, |p| p.slot_len as u16);
        Some(HeaderCopy { bytes: encode_header_copy(head), slot_len, written_at })
    }
}

impl<W: Write> Output<W> {
    pub(super) fn write(&mut self, bytes: &[u8], action: &'static str) -> Result<()> {
        self.out.write_all(bytes).map_err(Error::stream(action))?;
        self.advance(bytes.len() as u64);
        Ok(())
    }

    /// Counts `len` bytes written to `out` directly.
    pub(super) fn advance(&mut self, len: u64) {
        self.position += len;
        if let Some(p) = &self.progress {
            p.bytes_out.store(self.position, Ordering::Relaxed);
        }
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
