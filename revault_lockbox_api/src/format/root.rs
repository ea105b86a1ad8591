//! The root of the committed state: counts, the top of the sessions tree
//! (with the last session's record, which holds its pages tree) and the
//! tops of every entries run. It is the one unit a reader opens first.
//!
//! ```text
//! root = page_count u64 || stream_len u64 || entry_count u64
//!        || sessions || run_count u8 || run[run_count]
//!        || [1 u8 || tree(chunks)[run_count]]     (format v4: when any run has a chunk index)
//! run  = session u32 || salt[32] || tree(entries)
//! tree = height u8 || count u32 || child[count]    (the nodes of level height-1)
//! ```
//! `sessions` is the sessions tree's top (`sessions.rs`); runs are oldest
//! first, the last one written by the last session. Each run's chunk
//! index (`chunk_index.rs`) is sealed under the run's session keys.

use super::codec::{malformed, Decoder, Encoder};
use super::node::{decode_children, encode_children, Child};
use super::session_header::SessionKind;
use super::sessions::SessionsTop;
use super::{DecodeError, Table, MAX_RUNS, MAX_TREE_LEVELS, SESSION_SALT_LEN};

/// The top of one tree as the root records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TreeTop {
    /// Levels of nodes below the root; 0 for an empty tree.
    pub(crate) height: u8,
    /// The nodes of level `height - 1`.
    pub(crate) children: Vec<Child>,
}

/// An entries run and the session whose index key seals it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// The number of the session that wrote it.
    pub(crate) session: u32,
    pub(crate) salt: [u8; SESSION_SALT_LEN],
    pub(crate) top: TreeTop,
    /// The chunks the run's sessions stored, by id; empty when none.
    pub(crate) chunks: TreeTop,
}

/// The root: counts, sessions and the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root {
    pub(crate) page_count: u64,
    /// Bytes in the data stream: the sum of every page's plaintext length.
    pub(crate) stream_len: u64,
    /// Entries of the merged view of every run.
    pub(crate) entry_count: u64,
    pub(crate) sessions: SessionsTop,
    /// Every entries run, oldest first; the last is the last session's.
    pub(crate) runs: Vec<Run>,
}

impl Root {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.page_count).u64(self.stream_len).u64(self.entry_count);
        self.sessions.encode(&mut e);
        e.u8(self.runs.len() as u8);
        for run in &self.runs {
            e.u32(run.session).bytes(&run.salt);
            encode_tree(&run.top, &mut e);
        }
        if self.runs.iter().any(|run| run.chunks.height > 0) {
            e.u8(CHUNK_TREES);
            for run in &self.runs {
                encode_tree(&run.chunks, &mut e);
            }
        }
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        let mut d = Decoder::new(bytes, "index root");
        let (page_count, stream_len, entry_count) = (d.u64()?, d.u64()?, d.u64()?);
        let sessions = SessionsTop::decode(&mut d)?;
        let run_count = d.u8()? as usize;
        if run_count == 0 || run_count > MAX_RUNS {
            return Err(malformed("index root", "entries run count out of range"));
        }
        let mut runs: Vec<Run> = Vec::with_capacity(run_count);
        for _ in 0..run_count {
            let (session, salt, top) = (d.u32()?, d.array()?, decode_tree(&mut d, Table::Entries)?);
            let run = Run { session, salt, top, chunks: TreeTop::default() };
            if runs.last().is_some_and(|r| r.session >= run.session) {
                return Err(malformed("index root", "runs out of order"));
            }
            runs.push(run);
        }
        if d.remaining() > 0 {
            if d.u8()? != CHUNK_TREES {
                return Err(malformed("index root", "unknown bytes after the runs"));
            }
            for run in &mut runs {
                run.chunks = decode_tree(&mut d, Table::Chunks)?;
            }
            // One encoding: the section is there only when a run has chunks.
            if runs.iter().all(|run| run.chunks.height == 0) {
                return Err(malformed("index root", "chunk index section with no chunks"));
            }
        }
        d.finish()?;
        let last = sessions.last();
        let newest = runs.last().expect("at least one run");
        if newest.session != last.number || newest.salt != last.salt {
            return Err(malformed("index root", "the newest run is not the last session's"));
        }
        // Record numbers rise by exactly 1, so the first session's number
        // is known here: every run must be one of the archive's sessions'
        // (§3.7), and a merge leaves one run, its own.
        let first = last.number.checked_sub(sessions.count - 1);
        if first.is_none_or(|first| runs[0].session < first) {
            return Err(malformed("index root", "a run of a session the sessions tree does not hold"));
        }
        if last.summary.kind == SessionKind::Merge && runs.len() != 1 {
            return Err(malformed("index root", "a merge session's root lists older runs"));
        }
        if last.first_page > page_count || last.stream_start > stream_len {
            return Err(malformed("index root", "sessions out of order"));
        }
        let single = sessions.count == 1;
        let (pages, entries) = (&last.pages, &newest.top);
        if single && ((page_count == 0) != (pages.height == 0) || (entry_count == 0) != (entries.height == 0))
        {
            return Err(malformed("index root", "counts do not match the trees"));
        }
        Ok(Root { page_count, stream_len, entry_count, sessions, runs })
    }
}

/// The byte that starts the chunk index section.
const CHUNK_TREES: u8 = 1;

pub(super) fn encode_tree(tree: &TreeTop, e: &mut Encoder) {
    e.u8(tree.height);
    encode_children(&tree.children, e);
}

/// A tree's top, its children's first keys strictly increasing in the
/// order of `table` (checked here once, not at every descent).
pub(super) fn decode_tree(d: &mut Decoder<'_>, table: Table) -> Result<TreeTop, DecodeError> {
    let height = d.u8()?;
    let children = decode_children(d)?;
    if height > MAX_TREE_LEVELS || (height == 0) != children.is_empty() {
        return Err(malformed("index root", "tree height out of range"));
    }
    if children.windows(2).any(|w| table.cmp(&w[0].first_key, &w[1].first_key).is_ge()) {
        return Err(malformed("index root", "children out of order"));
    }
    Ok(TreeTop { height, children })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::node::tests::child;
    use crate::format::sessions::tests::record;
    use crate::format::sessions::SessionRecord;

    #[test]
    fn roots_round_trip() {
        let mut last = record(0);
        last.pages = TreeTop { height: 2, children: vec![child(&[0; 8])] };
        let root = Root {
            page_count: 2,
            stream_len: 2000,
            entry_count: 4,
            sessions: SessionsTop { count: 1, forest: Vec::new(), pending: vec![last.clone()] },
            runs: vec![Run {
                session: 0,
                salt: last.salt,
                top: TreeTop { height: 1, children: vec![child(b"d")] },
                chunks: TreeTop::default(),
            }],
        };
        assert_eq!(Root::decode(&root.encode()).unwrap(), root);
        // Format v4: a run's chunk index rides at the end, only when there.
        let v3_len = root.encode().len();
        let mut with_chunks = root.clone();
        with_chunks.runs[0].chunks = TreeTop { height: 1, children: vec![child(&[5; 32]), child(&[6; 32])] };
        let bytes = with_chunks.encode();
        assert!(bytes.len() > v3_len + 1);
        assert_eq!(Root::decode(&bytes).unwrap(), with_chunks);
        let mut empty_section = root.encode();
        empty_section.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
        assert_eq!(Root::decode(&empty_section).unwrap_err().why, "chunk index section with no chunks");
        let mut unknown = root.encode();
        unknown.push(2);
        assert_eq!(Root::decode(&unknown).unwrap_err().why, "unknown bytes after the runs");
        let mut appended = root.clone();
        appended.sessions = SessionsTop { count: 2, forest: Vec::new(), pending: vec![last, record(1)] };
        appended.runs.push(Run {
            session: 1,
            salt: record(1).salt,
            top: TreeTop::default(),
            chunks: TreeTop::default(),
        });
        assert_eq!(Root::decode(&appended.encode()).unwrap(), appended);
        let mut bad = appended.clone();
        bad.runs.swap(0, 1);
        assert!(Root::decode(&bad.encode()).is_err(), "runs out of order");
        let mut bad = appended.clone();
        bad.runs.pop();
        assert!(Root::decode(&bad.encode()).is_err(), "the last session wrote no run");
    }

    #[test]
    fn runs_are_the_archives_sessions_and_a_merge_leaves_one() {
        let (a, b, c) = (record(5), record(6), record(7));
        let run = |r: &SessionRecord| Run {
            session: r.number,
            salt: r.salt,
            top: TreeTop::default(),
            chunks: TreeTop::default(),
        };
        let root = |pending: Vec<SessionRecord>, runs: Vec<Run>| Root {
            page_count: 100,
            stream_len: 1000,
            entry_count: 0,
            sessions: SessionsTop { count: pending.len() as u32, forest: Vec::new(), pending },
            runs,
        };
        let two = root(vec![a.clone(), b.clone()], vec![run(&a), run(&b)]);
        assert_eq!(Root::decode(&two.encode()).unwrap(), two, "sessions 5 and 6, a run each");
        // A run of session 4: an archive of two sessions from 5 holds none.
        let stray = root(vec![a.clone(), b.clone()], vec![run(&record(4)), run(&b)]);
        let err = Root::decode(&stray.encode()).unwrap_err();
        assert_eq!(err.why, "a run of a session the sessions tree does not hold");
        // A merge's root holds its own run only.
        let mut merge = c.clone();
        merge.summary.kind = SessionKind::Merge;
        let merged = root(vec![a.clone(), b.clone(), merge.clone()], vec![run(&merge)]);
        assert!(Root::decode(&merged.encode()).is_ok());
        let kept = root(vec![a.clone(), b, merge.clone()], vec![run(&a), run(&merge)]);
        assert_eq!(Root::decode(&kept.encode()).unwrap_err().why, "a merge session's root lists older runs");
    }
}
