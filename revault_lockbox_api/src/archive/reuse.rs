//! What a session reused ([`Archive::reused_bytes`]): the content its
//! files reference that earlier sessions stored, read from its own
//! entries run and its chunked files' lists (for `log --stats`).

use super::Archive;
use crate::error::{Error, Result};
use crate::format::{EntryKind, SessionKind};
use crate::storage::ReadAt;

impl<S: ReadAt> Archive<S> {
    /// The bytes of content the files session `number` stored reference
    /// in earlier sessions' part of the data stream: a chunked file's
    /// chunks that lie before the session's start, and a file whose
    /// content lies there whole (a compaction's rewrite of an unchanged
    /// file's entry). `None` for a merge of index runs, which stores no
    /// file. What the session stored itself is its
    /// [`bytes_written`](super::SessionSummary::bytes_written).
    ///
    /// Reads the session's entries run (as [`Archive::at`] that state
    /// would) and the chunk list of each chunked file in it: about one
    /// data page a large changed file, nothing of an unchanged one.
    pub fn reused_bytes(&self, number: u32) -> Result<Option<u64>> {
        let table = self.sessions_table()?;
        let record =
            table.record(number).ok_or_else(|| Error::malformed("sessions tree", "no such session"))?;
        if record.summary.kind == SessionKind::Merge {
            return Ok(None);
        }
        let start = record.stream_start;
        let state = self.after_session(number)?;
        if state.root.runs.last().map(|run| run.session) != Some(number) {
            return Err(Error::malformed("root", "a session's last run is not its own"));
        }
        let mut reused = 0u64;
        for entry in state.last_run_entries()? {
            let entry = entry?;
            let (EntryKind::File { .. }, Some(extent)) = (&entry.kind, entry.extent) else { continue };
            let before = match state.chunk_list_of(&extent)? {
                Some(chunks) => chunks.iter().filter(|c| c.offset < start).map(|c| u64::from(c.len)).sum(),
                None if extent.offset < start => extent.size,
                None => 0,
            };
            reused = reused.saturating_add(before);
        }
        Ok(Some(reused))
    }
}
