//! The archive's sessions as a reader needs them: every session's record
//! (its salt, first page, stream offset and pages tree), read from the
//! sessions tree the first time content or a session's history is asked
//! for, and checked as a whole then. Opening reads only the root.

use std::sync::Arc;

use super::Archive;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{SessionRecord, Table, TreeTop};
use crate::index::{read_sessions, TreeReader};
use crate::storage::ReadAt;

/// Every session's record, oldest first, and its keys.
pub(crate) struct SessionTable {
    records: Vec<SessionRecord>,
    keys: Vec<Arc<SessionKeys>>,
}

impl SessionTable {
    /// The records, after the checks that need all of them: numbers follow
    /// on, pages and stream offsets never decrease, headers ascend, and
    /// the last record is the root's.
    fn new<S: ReadAt>(archive: &Archive<S>) -> Result<SessionTable> {
        let top = &archive.root.sessions;
        let records = read_sessions(&archive.src, archive.archive_id, &archive.content_key, top)?;
        let follows = |w: &[SessionRecord]| {
            w[0].number.checked_add(1) == Some(w[1].number)
                && w[0].first_page <= w[1].first_page
                && w[0].stream_start <= w[1].stream_start
                && w[0].header_offset < w[1].header_offset
        };
        let first = &records[0];
        if records.len() != top.count as usize
            || !records.windows(2).all(follows)
            || first.first_page != 0
            || first.stream_start != 0
            || first.header_offset != archive.data_start
        {
            return Err(Error::malformed("sessions tree", "sessions out of order"));
        }
        let keys =
            records.iter().map(|r| Arc::new(SessionKeys::derive(&archive.content_key, &r.salt))).collect();
        Ok(SessionTable { records, keys })
    }

    /// Sessions, the create (or compaction) first.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Session `s`'s pages tree.
    pub(crate) fn pages(&self, s: usize) -> &TreeTop {
        &self.records[s].pages
    }

    /// Session `s`'s first page number.
    pub(crate) fn first_page(&self, s: usize) -> u64 {
        self.records[s].first_page
    }

    /// Where session `s`'s part of the data stream starts (for a session
    /// without pages, the next one's).
    pub(crate) fn stream_start(&self, s: usize) -> u64 {
        self.records[s].stream_start
    }

    /// Where each session's part of the data stream starts.
    pub(crate) fn offsets(&self) -> Vec<u64> {
        self.records.iter().map(|r| r.stream_start).collect()
    }

    /// The session whose pages hold data-stream offset `at`.
    pub(crate) fn at_stream(&self, at: u64) -> usize {
        self.records.partition_point(|r| r.stream_start <= at).saturating_sub(1)
    }

    /// The session that sealed data page `page`.
    pub(crate) fn of_page(&self, page: u64) -> usize {
        self.records.partition_point(|r| r.first_page <= page).saturating_sub(1)
    }

    /// Session `s`'s keys.
    pub(crate) fn keys(&self, s: usize) -> &Arc<SessionKeys> {
        &self.keys[s]
    }
}

impl<S: ReadAt> Archive<S> {
    /// The sessions, read on first use.
    pub(crate) fn sessions_table(&self) -> Result<&SessionTable> {
        if let Some(table) = self.sessions.get() {
            return Ok(table);
        }
        let table = SessionTable::new(self)?;
        Ok(self.sessions.get_or_init(|| table))
    }

    /// The keys of the session that sealed data page `page`.
    pub(crate) fn keys_for(&self, page: u64) -> Result<&Arc<SessionKeys>> {
        let table = self.sessions_table()?;
        Ok(table.keys(table.of_page(page)))
    }

    /// A reader of session `s`'s pages tree.
    pub(crate) fn pages_tree(&self, s: usize) -> Result<TreeReader<'_>> {
        Ok(self.tree_with(self.sessions_table()?.keys(s), Table::Pages))
    }

    /// Where each session's part of the data stream starts.
    pub(crate) fn session_offsets(&self) -> Result<Vec<u64>> {
        Ok(self.sessions_table()?.offsets())
    }

    /// The session whose pages hold data-stream offset `at`.
    pub(crate) fn session_at(&self, at: u64) -> Result<usize> {
        Ok(self.sessions_table()?.at_stream(at))
    }
}
