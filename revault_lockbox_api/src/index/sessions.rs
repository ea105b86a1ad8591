//! The sessions tree's nodes (FORMAT.md §3.7): a session adds its record
//! to the root's last records and, when those were already 16, first
//! writes them as a leaf, and any parent that leaf completes, so each
//! node is written once, full, by the session that fills it. A reader
//! walks the nodes without a parent in order, then takes the last records.

use std::sync::Arc;

use super::build::NodeSink;
use super::read::TreeReader;
use crate::crypto::{ContentKey, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{
    decode_internal, decode_leaf, encode_internal, encode_leaf, sessions_under, Child, IndexNodeId,
    SessionRecord, SessionsChild, SessionsTop, Table, ARCHIVE_ID_LEN, MAX_SESSIONS, SESSIONS_PER_NODE,
    SESSION_SALT_LEN,
};
use crate::storage::ReadAt;

/// `top` with `record` added, by the session with salt `salt` whose nodes
/// go to `sink`. `None` when the archive holds `MAX_SESSIONS` already.
pub(crate) fn push_session(
    top: &SessionsTop,
    record: SessionRecord,
    salt: [u8; SESSION_SALT_LEN],
    sink: &mut dyn NodeSink,
) -> Result<Option<SessionsTop>> {
    if top.count as usize >= MAX_SESSIONS {
        return Ok(None);
    }
    let mut next = top.clone();
    if next.pending.len() == SESSIONS_PER_NODE {
        let records = std::mem::take(&mut next.pending);
        let first = u64::from(next.count) - SESSIONS_PER_NODE as u64;
        let id = IndexNodeId { table: Table::Sessions, level: 0, seq: first / sessions_under(0) };
        let child = Child { first_key: records[0].key(), ..sink.write_node(id, encode_leaf(&records))? };
        next.forest.push((0, SessionsChild { child, salt }));
        let mut level = 0;
        while next.forest.iter().rev().take_while(|(l, _)| *l == level).count() == SESSIONS_PER_NODE {
            let children: Vec<SessionsChild> = next
                .forest
                .split_off(next.forest.len() - SESSIONS_PER_NODE)
                .into_iter()
                .map(|(_, c)| c)
                .collect();
            let first: u64 = next.forest.iter().map(|(l, _)| sessions_under(*l)).sum();
            let id = IndexNodeId {
                table: Table::Sessions,
                level: level + 1,
                seq: first / sessions_under(level + 1),
            };
            let first_key = children[0].child.first_key.clone();
            let child = Child { first_key, ..sink.write_node(id, encode_internal(&children))? };
            next.forest.push((level + 1, SessionsChild { child, salt }));
            level += 1;
        }
    }
    next.pending.push(record);
    next.count += 1;
    Ok(Some(next))
}

/// Every record of the sessions tree `top`, in order.
pub(crate) fn read_sessions(
    src: &dyn ReadAt,
    archive_id: [u8; ARCHIVE_ID_LEN],
    content_key: &ContentKey,
    top: &SessionsTop,
) -> Result<Vec<SessionRecord>> {
    let mut records = Vec::with_capacity(top.count as usize);
    let walk = Walk { src, archive_id, content_key };
    for (level, node) in &top.forest {
        walk.subtree(*level, node, &mut records)?;
    }
    records.extend(top.pending.iter().cloned());
    Ok(records)
}

struct Walk<'a> {
    src: &'a dyn ReadAt,
    archive_id: [u8; ARCHIVE_ID_LEN],
    content_key: &'a ContentKey,
}

impl Walk<'_> {
    /// Appends the records below `node` (of `level`) to `out`, whose length
    /// is the position of the first of them.
    fn subtree(&self, level: u8, node: &SessionsChild, out: &mut Vec<SessionRecord>) -> Result<()> {
        let keys = Arc::new(SessionKeys::derive(self.content_key, &node.salt));
        let reader = TreeReader {
            src: self.src,
            keys,
            archive_id: self.archive_id,
            table: Table::Sessions,
            internals: None,
        };
        let seq = out.len() as u64 / sessions_under(level);
        let plain = reader.node(&IndexNodeId { table: Table::Sessions, level, seq }, &node.child)?;
        let first_key_differs = || Error::malformed("sessions tree", "first key differs from its parent's");
        if level == 0 {
            let records = decode_leaf(&plain)?;
            if records[0].key() != node.child.first_key {
                return Err(first_key_differs());
            }
            out.extend(records);
            return Ok(());
        }
        let children = decode_internal(&plain)?;
        if children[0].child.first_key != node.child.first_key {
            return Err(first_key_differs());
        }
        for child in &children {
            self.subtree(level - 1, child, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Codec, Summary, TreeTop};

    /// Records the id of every node written.
    #[derive(Default)]
    struct Ids(Vec<IndexNodeId>);

    impl NodeSink for Ids {
        fn write_node(&mut self, id: IndexNodeId, _plain: Vec<u8>) -> Result<Child> {
            self.0.push(id);
            let hash = [0; 32];
            Ok(Child {
                first_key: Vec::new(),
                offset: 0,
                stored_len: 16,
                plain_len: 0,
                codec: Codec::Raw,
                hash,
            })
        }
    }

    fn record(number: u32) -> SessionRecord {
        let (salt, pages, summary) = ([0; SESSION_SALT_LEN], TreeTop::default(), Summary::default());
        let at = u64::from(number);
        SessionRecord { number, salt, first_page: at, stream_start: at, header_offset: at, pages, summary }
    }

    #[test]
    fn nodes_are_written_once_full_by_the_session_that_fills_them() {
        let mut top = SessionsTop::default();
        let mut sink = Ids::default();
        for n in 0..16 * 16 + 1 {
            top = push_session(&top, record(n), [n as u8; SESSION_SALT_LEN], &mut sink).unwrap().unwrap();
        }
        let leaf = |seq| IndexNodeId { table: Table::Sessions, level: 0, seq };
        let mut expected: Vec<_> = (0..16).map(leaf).collect();
        expected.push(IndexNodeId { table: Table::Sessions, level: 1, seq: 0 });
        assert_eq!(sink.0, expected);
        assert_eq!((top.count, top.pending.len()), (257, 1));
        assert_eq!(top.forest.len(), 1);
        let (level, node) = &top.forest[0];
        // Written by session 256, the one whose record did not fit.
        assert_eq!((*level, node.salt, &node.child.first_key), (1, [0; 32], &record(0).key()));
        assert_eq!(top.last(), &record(256));
    }
}
