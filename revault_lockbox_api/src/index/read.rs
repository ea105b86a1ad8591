//! Reading one tree: descend to the leaf that may hold a key, or walk every
//! leaf in order while checking that the tree is whole (each level's nodes
//! numbered without gaps, keys strictly increasing, each child's first key
//! that of its node).

use std::sync::Arc;

use crate::crypto::open_index_node;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{Child, IndexNodeId, Internal, Table, TreeTop, ARCHIVE_ID_LEN};
use crate::storage::ReadAt;

use super::NodeCache;

/// Leaves a walk from a key reads before it tells the source which leaves
/// come next: a lookup reads the leaf holding its key and, at most, the
/// next one (for the entry after it).
const LOOKUP_LEAVES: usize = 2;

/// Reads the nodes of one session's tree.
#[derive(Clone)]
pub(crate) struct TreeReader<'a> {
    pub(crate) src: &'a dyn ReadAt,
    pub(crate) keys: Arc<SessionKeys>,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) table: Table,
    /// Where decoded internal nodes are kept between descents, if anywhere.
    pub(crate) internals: Option<&'a NodeCache<Internal>>,
}

/// Reads the sealed bytes at `offset`, as they are on a plain source;
/// a recovery view checks them first ([`ReadAt::read_exact_at`]). For the
/// small structures read once (header, trailers, footers); a unit the
/// caller opens with its own tag goes through [`open_unit`].
pub(crate) fn read_sealed(
    src: &dyn ReadAt,
    offset: u64,
    len: u32,
    what: impl Fn() -> String,
) -> Result<Vec<u8>> {
    read_into(src, offset, len, what, Vec::new(), Checked::BySource)
}

/// Whether the source checks the bytes it reads, or the caller does.
#[derive(Clone, Copy)]
enum Checked {
    BySource,
    ByUnit,
}

/// Reads the sealed unit at `offset` into `bytes` (a recycled buffer of
/// any length: it grows only when its capacity is below `len`, and only
/// bytes beyond its length are zeroed before the read overwrites them
/// all), unchecked by a recovery view ([`ReadAt::read_unit_at`]): the
/// caller opens it, and on failure asks [`reread_unit`].
pub(crate) fn read_unit_into(
    src: &dyn ReadAt,
    offset: u64,
    len: u32,
    what: impl Fn() -> String,
    bytes: Vec<u8>,
) -> Result<Vec<u8>> {
    read_into(src, offset, len, what, bytes, Checked::ByUnit)
}

fn read_into(
    src: &dyn ReadAt,
    offset: u64,
    len: u32,
    what: impl Fn() -> String,
    mut bytes: Vec<u8>,
    checked: Checked,
) -> Result<Vec<u8>> {
    bytes.resize(len as usize, 0);
    let read = match checked {
        Checked::BySource => src.read_exact_at(&mut bytes, offset),
        Checked::ByUnit => src.read_unit_at(&mut bytes, offset),
    };
    read.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::tampered(format!("{} (archive truncated)", what()))
        } else {
            Error::Stream { action: "reading the archive", source: e }
        }
    })?;
    Ok(bytes)
}

/// After the unit at `offset` failed its own check: its bytes read again
/// when the source rebuilt some of them from a recovery record
/// ([`ReadAt::recheck`]); `None` when it rebuilt nothing (or could not
/// check), and the failure stands.
pub(crate) fn reread_unit(
    src: &dyn ReadAt,
    offset: u64,
    len: u32,
    what: impl Fn() -> String,
) -> Option<Result<Vec<u8>>> {
    match src.recheck(offset, len.into()) {
        Ok(true) => Some(read_unit_into(src, offset, len, what, Vec::new())),
        Ok(false) | Err(_) => None,
    }
}

/// Reads the sealed unit at `offset` and opens it with `open` (which
/// checks its tag); when that fails, once more with the bytes a recovery
/// view rebuilt under it ([`reread_unit`]). Rebuilt bytes pass the same
/// `open`, so parity only ever stands in for bytes the unit's check
/// accepts.
pub(crate) fn open_unit<T>(
    src: &dyn ReadAt,
    offset: u64,
    len: u32,
    what: impl Fn() -> String,
    open: impl Fn(Vec<u8>) -> Result<T>,
) -> Result<T> {
    match open(read_unit_into(src, offset, len, &what, Vec::new())?) {
        Ok(opened) => Ok(opened),
        Err(failed) => match reread_unit(src, offset, len, &what) {
            Some(again) => open(again?),
            None => Err(failed),
        },
    }
}

impl<'a> TreeReader<'a> {
    /// Reads, opens and decompresses node `id`.
    pub(crate) fn node(&self, id: &IndexNodeId, child: &Child) -> Result<Vec<u8>> {
        let what = || format!("index node {}", id.seq);
        open_unit(self.src, child.offset, child.unit_len(), what, |bytes| {
            open_index_node(&self.keys, &self.archive_id, id, child, bytes)
        })
    }

    fn internal(&self, id: &IndexNodeId, child: &Child) -> Result<Arc<Internal>> {
        // The order of its children is checked once, when it is decoded.
        let decode = |plain: &[u8]| {
            let node = Internal::decode(plain)?;
            self.check_order(&node.children)?;
            Ok(node)
        };
        let node = match self.internals {
            Some(cache) => cache.node(self, id, child, decode)?,
            None => Arc::new(decode(&self.node(id, child)?)?),
        };
        if node.children[0].first_key != child.first_key {
            return Err(Error::malformed("index node", "first key differs from its parent's"));
        }
        Ok(node)
    }

    /// Tells the source that a walk will read these leaves next (a remote
    /// source fetches them ahead).
    fn will_read(&self, leaves: &[Child]) {
        let ranges: Vec<(u64, u32)> = leaves.iter().map(|c| (c.offset, c.unit_len())).collect();
        self.src.will_read(&ranges);
    }

    /// A top's children: entries and pages tops were checked when the root
    /// or session record holding them was decoded (or built by this
    /// writer), so only a sessions tree's is checked here.
    fn check_top(&self, top: &TreeTop) -> Result<()> {
        match self.table {
            Table::Sessions => self.check_order(&top.children),
            Table::Entries | Table::Pages | Table::Chunks => Ok(()),
        }
    }

    fn check_order(&self, children: &[Child]) -> Result<()> {
        if children.windows(2).any(|w| self.table.cmp(&w[0].first_key, &w[1].first_key).is_ge()) {
            return Err(Error::malformed("index node", "children out of order"));
        }
        Ok(())
    }

    /// The leaf whose key range may hold `key`: the last leaf whose first
    /// key is at or below it. `None` when `key` sorts before every leaf.
    pub(crate) fn find_leaf(&self, top: &TreeTop, key: &[u8]) -> Result<Option<(IndexNodeId, Child)>> {
        self.check_top(top)?;
        let pick = |children: &[Child]| {
            children.partition_point(|c| self.table.cmp(&c.first_key, key).is_le()).checked_sub(1)
        };
        let Some(mut i) = pick(&top.children) else { return Ok(None) };
        let mut level = top.height.saturating_sub(1);
        let mut id = IndexNodeId { table: self.table, level, seq: i as u64 };
        let mut child = top.children[i].clone();
        while level > 0 {
            let node = self.internal(&id, &child)?;
            i = pick(&node.children)
                .ok_or_else(|| Error::malformed("index node", "key below its first key"))?;
            level -= 1;
            id = IndexNodeId { table: self.table, level, seq: node.first_child_seq + i as u64 };
            child = node.children[i].clone();
        }
        Ok(Some((id, child)))
    }

    /// The leaves in order from the one that may hold `key` (from the first
    /// when `key` sorts before every leaf). Its hints wait until the walk
    /// has read `LOOKUP_LEAVES` leaves: a lookup reads one or two, and a
    /// remote source would fetch the rest of the node's leaves for nothing.
    pub(crate) fn leaves_from(&self, top: &TreeTop, key: &[u8]) -> Result<LeafCursor<'a>> {
        self.check_top(top)?;
        let pick = |children: &[Child]| {
            children.partition_point(|c| self.table.cmp(&c.first_key, key).is_le()).saturating_sub(1)
        };
        let mut cursor = self.leaves(top);
        cursor.hint_after = LOOKUP_LEAVES;
        let mut level = top.height;
        while let Some(frame) = cursor.stack.last_mut() {
            // Frames entered part-way: the walk checks continuity from here.
            let i = pick(&frame.children);
            frame.next = i;
            frame.entered = true;
            cursor.expected[usize::from(frame.level)] = frame.first_seq + frame.children.len() as u64;
            level -= 1;
            if level == 0 {
                break;
            }
            let id = IndexNodeId { table: self.table, level, seq: frame.first_seq + i as u64 };
            let child = frame.children[i].clone();
            frame.next = i + 1;
            let node = self.internal(&id, &child)?;
            cursor.stack.push(Frame {
                level: level - 1,
                first_seq: node.first_child_seq,
                children: node.children.clone(),
                next: 0,
                entered: true,
                hinted: false,
            });
        }
        Ok(cursor)
    }

    /// Every leaf in order.
    pub(crate) fn leaves(&self, top: &TreeTop) -> LeafCursor<'a> {
        let levels = usize::from(top.height);
        let mut stack = Vec::new();
        if levels > 0 {
            stack.push(Frame {
                level: top.height - 1,
                first_seq: 0,
                children: top.children.clone(),
                next: 0,
                entered: false,
                hinted: false,
            });
        }
        LeafCursor {
            reader: self.clone(),
            stack,
            expected: vec![0; levels],
            read: 0,
            hint_after: 0,
            failed: false,
            internal_bytes: 0,
        }
    }
}

/// One node's children being walked.
struct Frame {
    level: u8,
    first_seq: u64,
    children: Vec<Child>,
    next: usize,
    /// Its children's positions were checked and counted.
    entered: bool,
    /// Its leaves were hinted to the source (children of a level-0 frame).
    hinted: bool,
}

/// The leaves of a tree in order, with the checks that make a walk trust
/// the tree: no node missing, none repeated, keys in order.
pub(crate) struct LeafCursor<'a> {
    reader: TreeReader<'a>,
    stack: Vec<Frame>,
    /// Next expected position at each level.
    expected: Vec<u64>,
    /// Leaves returned so far.
    read: usize,
    /// Leaves returned before the walk hints those that follow: none for a
    /// walk from the first leaf, `LOOKUP_LEAVES` for one from a key.
    hint_after: usize,
    failed: bool,
    /// Sealed bytes of the internal nodes read so far.
    pub(crate) internal_bytes: u64,
}

impl LeafCursor<'_> {
    fn step(&mut self) -> Result<Option<(IndexNodeId, Child)>> {
        loop {
            let Some(frame) = self.stack.last_mut() else { return Ok(None) };
            if frame.next == 0 && !frame.entered {
                frame.entered = true;
                let level = usize::from(frame.level);
                if frame.first_seq != self.expected[level] {
                    return Err(Error::malformed("index", "nodes missing or repeated"));
                }
                self.reader.check_order(&frame.children)?;
                self.expected[level] += frame.children.len() as u64;
            }
            if frame.next == frame.children.len() {
                self.stack.pop();
                continue;
            }
            let child = frame.children[frame.next].clone();
            let id = IndexNodeId {
                table: self.reader.table,
                level: frame.level,
                seq: frame.first_seq + frame.next as u64,
            };
            frame.next += 1;
            if id.level == 0 {
                // This leaf and the rest of its node's, once the walk has
                // shown that it goes on.
                if !frame.hinted && self.read >= self.hint_after {
                    frame.hinted = true;
                    self.reader.will_read(&frame.children[frame.next - 1..]);
                }
                self.read += 1;
                return Ok(Some((id, child)));
            }
            let node = self.reader.internal(&id, &child)?;
            self.internal_bytes += u64::from(child.unit_len());
            self.stack.push(Frame {
                level: id.level - 1,
                first_seq: node.first_child_seq,
                children: node.children.clone(),
                next: 0,
                entered: false,
                hinted: false,
            });
        }
    }
}

impl Iterator for LeafCursor<'_> {
    type Item = Result<(IndexNodeId, Child)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.step().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}
