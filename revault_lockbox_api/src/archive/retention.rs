//! Which states a compaction keeps ([`Retention`]) and what it would
//! reclaim ([`Archive::reclaimable`]): read from the sessions tree and the
//! page tables, no data page.
//!
//! Both policies keep a run of states ending with the last one, so a
//! compacted archive numbers its states on from the first it kept.

use std::num::NonZeroU64;

use super::info::LivePages;
use super::{Archive, AsOf, SessionSummary};
use crate::error::Result;
use crate::format::{
    encoded_record_len, EntryKind, Record, INDEX_NODE_TARGET_LEN, PAGE_RECORD_LEN, TRAILER_LEN,
};
use crate::storage::ReadAt;

/// Which states a compaction keeps readable (`--session N`, `--at TIME`);
/// the others are removed and their pages reclaimed. Every policy keeps the
/// last state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// The last state only (`compact`).
    #[default]
    Latest,
    /// The last `n` states (`--keep-sessions N`, restic's `--keep-last`).
    LastStates(NonZeroU64),
    /// The states committed at or after this instant (UTC nanoseconds
    /// since 1970), and the state that was current at it, as restic's and
    /// borg's `--keep-within` keep what was live at the window's start.
    Since(i64),
}

/// What a compaction under one [`Retention`] would keep and reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reclaim {
    /// The first and last state kept, as [`Archive::history`] numbers them.
    pub states: (u64, u64),
    /// Bytes the compaction reclaims at least: the archive's committed
    /// length less what the rewrite writes at most: the first kept state's
    /// pages as stored now, its index entries uncompressed, a session's
    /// header, root and trailer, and what each later kept state's session
    /// wrote. The rewrite packs and compresses the first state's files and
    /// entries afresh and stores only what each later state changed, so
    /// it usually reclaims more; `compact --dry-run` counts the bytes.
    pub bytes: u64,
}

impl<S: ReadAt> Archive<S> {
    /// The states `retention` keeps, oldest first (never empty).
    pub fn kept_states(&self, retention: Retention) -> Result<Vec<SessionSummary>> {
        let mut states: Vec<SessionSummary> =
            self.history()?.into_iter().filter(|s| s.state.is_some()).collect();
        let keep = match retention {
            Retention::Latest => 1,
            Retention::LastStates(n) => usize::try_from(n.get()).unwrap_or(usize::MAX),
            Retention::Since(at_ns) => {
                let later = states.iter().rev().take_while(|s| s.created_ns >= at_ns).count();
                // The state current at `at_ns`: the last one before it.
                later + 1
            }
        };
        let from = states.len().saturating_sub(keep);
        Ok(states.split_off(from))
    }

    /// What a compaction under `retention` would keep and reclaim at least
    /// (see [`Reclaim::bytes`]). Reads the first kept state's entries and
    /// the page tables they point into, no data page.
    pub fn reclaimable(&self, retention: Retention) -> Result<Reclaim> {
        let kept = self.kept_states(retention)?;
        let number = |s: &SessionSummary| s.state.unwrap_or(0);
        let (Some(first), Some(last)) = (kept.first(), kept.last()) else {
            return Ok(Reclaim { states: (0, 0), bytes: 0 });
        };
        // The first kept state, whole: its files' pages as they are stored
        // now (packed afresh they take no more), its entries unpacked (the
        // rewrite compresses them), a header, root and trailer.
        let mut live = LivePages::default();
        let mut records = 0;
        // A chunked file's chunks, counted at their plain length (the
        // rewrite stores them at most that large): reading its list would
        // read data pages.
        let mut chunked = 0;
        for e in self.at(AsOf::State(number(first) as i64))?.entries()? {
            let e = e?;
            if let (EntryKind::File { .. }, Some(x)) = (&e.kind, e.extent) {
                live.mark_content(self, &x)?;
                if x.chunk_list().is_some() {
                    chunked += x.size;
                }
            }
            records += encoded_record_len(&Record::Put(e)) as u64;
        }
        // A frame, tag and parent's child per node, and a page record each.
        let nodes = records / INDEX_NODE_TARGET_LEN as u64 + 1;
        let index = records + nodes * 128 + live.pages * PAGE_RECORD_LEN as u64;
        let session = self.session_overhead() + u64::from(self.trailer_root_len()) + TRAILER_LEN as u64;
        // Each later state: what its session (and any merge) wrote, about
        // what the rewrite writes for the difference it holds.
        let later: u64 =
            self.history()?.iter().filter(|s| s.number > first.number).map(|s| s.bytes_written).sum();
        let used = self.data_start + live.bytes + chunked + index + session + later;
        Ok(Reclaim { states: (number(first), number(last)), bytes: self.committed_len.saturating_sub(used) })
    }
}
