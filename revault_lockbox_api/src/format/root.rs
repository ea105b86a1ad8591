//! The root of a write session's index: counts, the sessions table, the
//! tops of the newest entries run and of the last session's pages tree,
//! and the history of earlier sessions. Sealed with the trailer body as
//! associated data, it is what a reader opens first.
//!
//! ```text
//! root         = page_count u64 || stream_len u64 || entry_count u64
//!                || session_count u32 || session[session_count] || tree(entries) || tree(pages)
//! session      = first_page u64 || salt[32]
//! tree         = height u8 || count u32 || child[count]    (the nodes of level height-1)
//! history      = tree(pages)[session_count - 1] || run_count u32 || run[run_count]
//! run          = session u32 || tree(entries)
//! ```
//! The two trees of the root are the newest entries run and the last
//! session's pages; `history` follows them only when there is more than one
//! session: each earlier session's pages tree, then the earlier runs,
//! oldest first.

use super::codec::{malformed, Decoder, Encoder};
use super::node::{checked_count, decode_children, encode_children, Child};
use super::{DecodeError, MAX_RUNS, MAX_SESSIONS, MAX_TREE_LEVELS, SESSION_SALT_LEN};

/// One write session: its pages start at `first_page` and are sealed under
/// keys derived from `salt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub(crate) first_page: u64,
    pub(crate) salt: [u8; SESSION_SALT_LEN],
}

/// The top of one tree as the root records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TreeTop {
    /// Levels of nodes below the root; 0 for an empty tree.
    pub(crate) height: u8,
    /// The nodes of level `height - 1`.
    pub(crate) children: Vec<Child>,
}

/// An entries run of an earlier session: its index key seals the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// Position in the sessions table of the session that wrote it.
    pub(crate) session: u32,
    pub(crate) top: TreeTop,
}

/// What the root records of earlier sessions: empty for an archive written
/// in one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct History {
    /// The pages tree of each session but the last, in session order.
    pub(crate) pages: Vec<TreeTop>,
    /// The entries runs other than the newest, oldest first.
    pub(crate) runs: Vec<Run>,
}

/// The root: counts, sessions and the tops of both trees. Sealed with the
/// trailer body as associated data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root {
    pub(crate) page_count: u64,
    /// Bytes in the data stream: the sum of every page's plaintext length.
    pub(crate) stream_len: u64,
    /// Entries of the merged view of every run.
    pub(crate) entry_count: u64,
    pub(crate) sessions: Vec<Session>,
    /// The newest entries run, written by the last session.
    pub(crate) entries: TreeTop,
    /// The pages of the last session.
    pub(crate) pages: TreeTop,
    pub(crate) history: History,
}

impl Root {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.page_count).u64(self.stream_len).u64(self.entry_count).u32(self.sessions.len() as u32);
        for s in &self.sessions {
            e.u64(s.first_page).bytes(&s.salt);
        }
        for tree in [&self.entries, &self.pages] {
            encode_tree(tree, &mut e);
        }
        if self.sessions.len() > 1 {
            for tree in &self.history.pages {
                encode_tree(tree, &mut e);
            }
            e.u32(self.history.runs.len() as u32);
            for run in &self.history.runs {
                e.u32(run.session);
                encode_tree(&run.top, &mut e);
            }
        }
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        let mut d = Decoder::new(bytes, "index root");
        let (page_count, stream_len, entry_count) = (d.u64()?, d.u64()?, d.u64()?);
        let session_count = d.u32()? as usize;
        if session_count == 0 || session_count > MAX_SESSIONS {
            return Err(malformed("index root", "session count out of range"));
        }
        let mut sessions: Vec<Session> = Vec::with_capacity(session_count);
        for _ in 0..session_count {
            sessions.push(Session { first_page: d.u64()?, salt: d.array()? });
        }
        if sessions[0].first_page != 0 || sessions.windows(2).any(|w| w[0].first_page > w[1].first_page) {
            return Err(malformed("index root", "sessions out of order"));
        }
        if sessions.last().is_some_and(|s| s.first_page > page_count) {
            return Err(malformed("index root", "sessions out of order"));
        }
        let entries = decode_tree(&mut d)?;
        let pages = decode_tree(&mut d)?;
        let mut history = History::default();
        if session_count > 1 {
            for _ in 1..session_count {
                history.pages.push(decode_tree(&mut d)?);
            }
            let run_count = checked_count(d.u32()?.into(), 4 + 1 + 4, &d)?;
            if run_count >= MAX_RUNS {
                return Err(malformed("index root", "too many entries runs"));
            }
            for _ in 0..run_count {
                let session = d.u32()?;
                let after = history.runs.last().map(|r: &Run| r.session);
                if session as usize >= session_count - 1 || after.is_some_and(|a| session <= a) {
                    return Err(malformed("index root", "runs out of order"));
                }
                history.runs.push(Run { session, top: decode_tree(&mut d)? });
            }
        }
        d.finish()?;
        let single = session_count == 1;
        if single && ((page_count == 0) != (pages.height == 0) || (entry_count == 0) != (entries.height == 0))
        {
            return Err(malformed("index root", "counts do not match the trees"));
        }
        Ok(Root { page_count, stream_len, entry_count, sessions, entries, pages, history })
    }

    /// Position in `sessions` of the session that sealed data page `page`.
    pub(crate) fn session_of(&self, page: u64) -> usize {
        self.sessions.partition_point(|s| s.first_page <= page).saturating_sub(1)
    }

    /// The pages tree of session `session`.
    pub(crate) fn pages_of(&self, session: usize) -> &TreeTop {
        self.history.pages.get(session).unwrap_or(&self.pages)
    }

    /// Every entries run, oldest first, with the session that sealed it.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (usize, &TreeTop)> + '_ {
        let newest = (self.sessions.len() - 1, &self.entries);
        self.history.runs.iter().map(|r| (r.session as usize, &r.top)).chain(std::iter::once(newest))
    }
}

fn encode_tree(tree: &TreeTop, e: &mut Encoder) {
    e.u8(tree.height);
    encode_children(&tree.children, e);
}

fn decode_tree(d: &mut Decoder<'_>) -> Result<TreeTop, DecodeError> {
    let height = d.u8()?;
    let children = decode_children(d)?;
    if height > MAX_TREE_LEVELS || (height == 0) != children.is_empty() {
        return Err(malformed("index root", "tree height out of range"));
    }
    Ok(TreeTop { height, children })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::node::tests::child;

    #[test]
    fn roots_round_trip() {
        let root = Root {
            page_count: 2,
            stream_len: 2000,
            entry_count: 4,
            sessions: vec![Session { first_page: 0, salt: [4; SESSION_SALT_LEN] }],
            entries: TreeTop { height: 1, children: vec![child(b"d")] },
            pages: TreeTop { height: 2, children: vec![child(&[0; 8])] },
            history: History::default(),
        };
        assert_eq!(Root::decode(&root.encode()).unwrap(), root);
        let appended = Root {
            page_count: 3,
            sessions: vec![
                Session { first_page: 0, salt: [4; SESSION_SALT_LEN] },
                Session { first_page: 2, salt: [5; SESSION_SALT_LEN] },
                Session { first_page: 3, salt: [6; SESSION_SALT_LEN] },
            ],
            history: History {
                pages: vec![root.pages.clone(), TreeTop { height: 1, children: vec![child(&[1; 8])] }],
                runs: vec![Run { session: 0, top: root.entries.clone() }],
            },
            pages: TreeTop::default(),
            ..root.clone()
        };
        assert_eq!(Root::decode(&appended.encode()).unwrap(), appended);
        let mut bad = appended.clone();
        bad.history.runs.push(Run { session: 2, top: TreeTop::default() });
        assert!(Root::decode(&bad.encode()).is_err(), "a run of the last session among the earlier ones");
    }
}
