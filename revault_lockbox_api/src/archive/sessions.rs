//! The archive's sessions as a reader needs them: every session's record
//! (its salt, first page, stream offset and pages tree), read from the
//! sessions tree the first time content or a session's history is asked
//! for, and checked as a whole then. Opening reads only the root.
//! [`Archive::history`] describes them for `log`; [`Archive::at`] opens
//! the state one of them left ([`AsOf`]).

use std::sync::Arc;

use super::{Archive, OpenOptions};
use crate::crypto::{ContentKey, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{SessionKind, SessionRecord, Table, TreeTop};
use crate::index::{read_sessions, TreeReader};
use crate::quote::SessionName;
use crate::storage::ReadAt;

/// Which state of an archive to read: numbered as [`Archive::history`]
/// numbers states (from 1; `-1` is the last, `-2` the one before), or the
/// last one at or before a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// State `n` (from 1), or counted back (from -1).
    State(i64),
    /// The last state whose session time is at or before this instant, UTC
    /// nanoseconds since 1970.
    Time(i64),
}

/// One write session of an archive, as its record in the sessions tree
/// describes it (FORMAT.md §3.7): read without any entry or page.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionSummary {
    /// The session's number: 0 for the create, one more per session
    /// (merges and compactions included; a compaction carries it on).
    pub number: u32,
    /// Its place among the states a user made, from 1: changes (create,
    /// add, update, rm) count on from the state before; a compaction holds
    /// the state it kept, under that state's number (the states before it
    /// were removed); `None` for a merge of index runs, which changes
    /// nothing a reader sees.
    pub state: Option<u64>,
    /// When it started: UTC nanoseconds since 1970 (a compaction's and
    /// the sessions after it, the time of the state each keeps).
    pub created_ns: i64,
    /// A change, a merge of index runs, or a compaction.
    pub kind: SessionKind,
    /// The `-m` label, empty when none was given.
    pub label: String,
    /// Entries it stored (for a merge or compaction: every entry).
    pub stored: u64,
    /// Paths it removed (deletion records; a directory's covers its subtree).
    pub removed: u64,
    /// Entries of the archive right after it.
    pub entries: u64,
    /// Bytes it added to the file, from its header to its trailer's end.
    pub bytes_written: u64,
    /// Key ids of the keys that signed it.
    pub signers: Vec<Vec<u8>>,
}

impl SessionSummary {
    /// The session as messages name it: by the state it holds.
    pub fn name(&self) -> SessionName {
        SessionName { number: self.number, state: self.state }
    }
}

/// Every session's record, oldest first, and its keys.
pub(crate) struct SessionTable {
    records: Vec<SessionRecord>,
    /// The state each session leaves, numbered from the records
    /// ([`number_states`]); `None` for a merge.
    states: Vec<Option<u64>>,
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
        let states = number_states(&records)?;
        let keys =
            records.iter().map(|r| Arc::new(SessionKeys::derive(&archive.content_key, &r.salt))).collect();
        Ok(SessionTable { records, states, keys })
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

    /// The record of the session numbered `number`.
    pub(crate) fn record(&self, number: u32) -> Option<&SessionRecord> {
        self.place(number).map(|at| &self.records[at])
    }

    /// Where session `number` is among the records (numbers follow on, so
    /// no search).
    fn place(&self, number: u32) -> Option<usize> {
        let at = number.checked_sub(self.records.first()?.number)? as usize;
        (at < self.records.len()).then_some(at)
    }
}

/// The state each record leaves (FORMAT.md §3.7): a compaction, only
/// ever the first record, holds the state it names; each change counts
/// on from the state before it (the create is state 1), or holds the
/// state it names, which must be later than the one before; a merge changes
/// nothing a reader sees and holds none. So states are unique and
/// increasing by construction; one past `u64::MAX` is refused, not
/// wrapped to 0.
fn number_states(records: &[SessionRecord]) -> Result<Vec<Option<u64>>> {
    let mut state = 0u64;
    let mut states = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let held = match r.summary.kind {
            // A change a compaction carried over after a gap (calendar
            // retention kept states 3 and 7, say) names its state, which
            // must still come after the one before.
            SessionKind::Change if r.summary.state != 0 => match r.summary.state > state {
                true => Some(r.summary.state),
                false => {
                    return Err(Error::malformed(
                        "sessions tree",
                        "a change naming a state not after the last",
                    ))
                }
            },
            SessionKind::Change => Some(state.checked_add(1).ok_or_else(past_the_last_state)?),
            SessionKind::Compaction if i == 0 => Some(r.summary.state),
            SessionKind::Compaction => {
                return Err(Error::malformed("sessions tree", "a compaction record after the first session"))
            }
            SessionKind::Merge => None,
        };
        state = held.unwrap_or(state);
        states.push(held);
    }
    Ok(states)
}

fn past_the_last_state() -> Error {
    Error::malformed("sessions tree", "a state numbered past the last number there is")
}

impl<S: ReadAt> Archive<S> {
    /// The number the state a change appended now would leave: one past
    /// the last state; refused where that is past `u64::MAX` (only a
    /// forged compaction record can get there), never wrapped to 0.
    pub(crate) fn next_state(&self) -> Result<u64> {
        let last = self.sessions_table()?.states.iter().flatten().last().copied().unwrap_or(0);
        last.checked_add(1).ok_or_else(past_the_last_state)
    }

    /// Every write session, oldest first: reads the root's sessions tree
    /// (about 150 bytes a session), no entry, page or session header.
    pub fn history(&self) -> Result<Vec<SessionSummary>> {
        let table = self.sessions_table()?;
        let records = &table.records;
        let ends = records.iter().skip(1).map(|r| r.header_offset).chain([self.committed_len]);
        Ok(records
            .iter()
            .zip(ends)
            .zip(&table.states)
            .map(|((r, end), &state)| {
                let s = &r.summary;
                SessionSummary {
                    number: r.number,
                    state,
                    created_ns: s.created_ns,
                    kind: s.kind,
                    label: s.label.clone(),
                    stored: s.stored,
                    removed: s.removed,
                    entries: s.entries,
                    bytes_written: end - r.header_offset,
                    signers: s.signers.clone(),
                }
            })
            .collect())
    }

    /// Where the state `as_of` names ends: its session's trailer's end.
    pub(super) fn state_end(&self, as_of: AsOf) -> Result<u64> {
        let history = self.history()?;
        let states: Vec<&SessionSummary> = history.iter().filter(|s| s.state.is_some()).collect();
        let (first, last) = match (states.first(), states.last()) {
            (Some(f), Some(l)) => (f.state.unwrap_or(0), l.state.unwrap_or(0)),
            _ => return Err(Error::NoSuchState { asked: 0, first: 1, states: 0 }),
        };
        let no_such = |asked: i64| Error::NoSuchState { asked, first, states: last };
        let chosen = match as_of {
            // Numbered from the records, as `log` shows them: a state is
            // found by its number, never by its place among the others.
            AsOf::State(state @ 1..) => {
                let asked = Some(state.unsigned_abs());
                states.iter().find(|s| s.state == asked).copied().ok_or_else(|| no_such(state))?
            }
            AsOf::State(state) => {
                let index = (states.len() as u64).checked_sub(state.unsigned_abs()).filter(|_| state != 0);
                index.and_then(|i| states.get(i as usize).copied()).ok_or_else(|| no_such(state))?
            }
            AsOf::Time(at_ns) => match states.iter().rposition(|s| s.created_ns <= at_ns) {
                Some(i) => states[i],
                None => {
                    let first_ns = states[0].created_ns;
                    return Err(Error::NoStateAt { at_ns, first_ns });
                }
            },
        };
        self.session_end(chosen.number)
    }

    /// Where session `number` ends: the next one's header, or the
    /// committed end.
    fn session_end(&self, number: u32) -> Result<u64> {
        let table = self.sessions_table()?;
        let at = table.place(number).ok_or(Error::NoSuchState {
            asked: i64::from(number),
            first: 0,
            states: 0,
        })?;
        Ok(table.records.get(at + 1).map_or(self.committed_len, |next| next.header_offset))
    }

    /// Session `number` as people are told of it: by the state it holds,
    /// as [`history`](Self::history) numbers them. Every message, report
    /// and listing that names a session takes its name from here.
    pub(crate) fn session_name(&self, number: u32) -> Result<SessionName> {
        let table = self.sessions_table()?;
        let at = table
            .place(number)
            .ok_or_else(|| Error::malformed("sessions tree", "a session it does not hold"))?;
        Ok(SessionName { number, state: table.states[at] })
    }

    /// The archive right after session `number` (as [`SessionSummary::number`]
    /// names it), without going through the states' numbering: what a
    /// compaction reads each kept state from.
    pub(crate) fn after_session(&self, number: u32) -> Result<Archive<&S>> {
        let options = OpenOptions { tuning: self.tuning, ..OpenOptions::new() };
        self.opened_to(&self.src, self.session_end(number)?, options)
    }

    /// The archive as it was right after the state `as_of` names, read from
    /// the same source without unlocking it again: what `--session` and
    /// `--at` open, and the two sides of a diff between states.
    pub fn at(&self, as_of: AsOf) -> Result<Archive<&S>> {
        let options = OpenOptions { tuning: self.tuning, ..OpenOptions::new() };
        self.state_from(&self.src, as_of, options)
    }

    /// [`Archive::at`] owning a copy of the source (an `Arc`, say), so the
    /// state outlives this borrow (a mount keeps several open), read with
    /// `options`' knobs and trusted signers, checked against that state's
    /// session; their own state is ignored.
    pub fn open_state(&self, as_of: AsOf, options: OpenOptions) -> Result<Archive<S>>
    where
        S: Clone,
    {
        self.state_from(self.src.clone(), as_of, options)
    }

    fn state_from<T: ReadAt>(&self, src: T, as_of: AsOf, options: OpenOptions) -> Result<Archive<T>> {
        self.opened_to(src, self.state_end(as_of)?, options)
    }

    /// The archive cut at `end` (a session's end), read from `src`.
    fn opened_to<T: ReadAt>(&self, src: T, end: u64, options: OpenOptions) -> Result<Archive<T>> {
        let key = ContentKey::from_bytes(self.content_key.bytes());
        let options = OpenOptions { state: None, ..options };
        Archive::open_unlocked(src, self.head_in_use(), key, end, options)
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Summary;

    fn record(kind: SessionKind, state: u64) -> SessionRecord {
        let summary = Summary {
            created_ns: 0,
            kind,
            label: String::new(),
            stored: 0,
            removed: 0,
            entries: 0,
            signers: Vec::new(),
            state,
        };
        SessionRecord {
            number: 0,
            salt: [0; 32],
            first_page: 0,
            stream_start: 0,
            header_offset: 0,
            pages: TreeTop::default(),
            summary,
        }
    }

    #[test]
    fn states_are_numbered_from_the_records_and_never_wrap() {
        use SessionKind::{Change, Compaction, Merge};
        let states = |records: &[(SessionKind, u64)]| {
            number_states(&records.iter().map(|&(k, s)| record(k, s)).collect::<Vec<_>>())
        };
        let numbered = states(&[(Compaction, 7), (Merge, 0), (Change, 0), (Change, 0)]).unwrap();
        assert_eq!(numbered, [Some(7), None, Some(8), Some(9)]);
        assert_eq!(states(&[(Change, 0), (Change, 0)]).unwrap(), [Some(1), Some(2)]);
        // B4: a compaction after the first session would take the states
        // back (`log` and `--session` disagreed); B5: one past the last
        // number wrapped to state 0, and `compact` kept that.
        for bad in [
            &[(Change, 0), (Compaction, 1)][..],
            &[(Change, 0), (Compaction, 9)],
            &[(Compaction, u64::MAX), (Change, 0)],
        ] {
            let err = states(bad).unwrap_err();
            assert!(matches!(err, Error::Malformed(_)), "{bad:?}: {err}");
        }
        assert_eq!(states(&[(Compaction, u64::MAX), (Merge, 0)]).unwrap(), [Some(u64::MAX), None]);
        // Calendar retention keeps states with gaps: a carried-over change
        // names its state, and the states after it count on from there.
        let gaps = states(&[(Compaction, 3), (Change, 7), (Merge, 0), (Change, 12), (Change, 0)]).unwrap();
        assert_eq!(gaps, [Some(3), Some(7), None, Some(12), Some(13)]);
        for bad in [&[(Compaction, 3), (Change, 3)][..], &[(Change, 0), (Change, 5), (Change, 2)]] {
            let err = states(bad).unwrap_err();
            assert!(matches!(err, Error::Malformed(_)), "{bad:?}: {err}");
        }
    }
}
