//! Building one tree bottom-up while its leaves stream out: each level keeps
//! the children waiting for a parent, and a parent is written whenever they
//! fill a node. Memory is a node per level, whatever the tree's size.

use crate::error::Result;
use crate::format::{Child, IndexNodeId, Internal, Table, TreeTop, INDEX_NODE_TARGET_LEN};

/// Where sealed nodes go: seals `plain` as node `id`, writes it, and says
/// where it lies (`first_key` left empty for the caller).
pub(crate) trait NodeSink {
    fn write_node(&mut self, id: IndexNodeId, plain: Vec<u8>) -> Result<Child>;
}

/// One level's children waiting for a parent.
#[derive(Default)]
struct Level {
    waiting: Vec<Child>,
    bytes: usize,
    /// Nodes written at this level so far.
    written: u64,
}

/// The levels of one tree under construction.
pub(crate) struct TreeBuilder {
    table: Table,
    levels: Vec<Level>,
}

impl TreeBuilder {
    pub(crate) fn new(table: Table) -> TreeBuilder {
        TreeBuilder { table, levels: vec![Level::default()] }
    }

    /// The id the next leaf gets.
    pub(crate) fn next_leaf(&self) -> IndexNodeId {
        IndexNodeId { table: self.table, level: 0, seq: self.levels[0].written }
    }

    /// Writes a leaf (plaintext `plain`, first key `first_key`) and any
    /// parents it completes.
    pub(crate) fn add_leaf(
        &mut self,
        first_key: Vec<u8>,
        plain: Vec<u8>,
        sink: &mut dyn NodeSink,
    ) -> Result<()> {
        let id = self.next_leaf();
        let child = Child { first_key, ..sink.write_node(id, plain)? };
        self.push(0, child, sink)
    }

    fn push(&mut self, level: usize, child: Child, sink: &mut dyn NodeSink) -> Result<()> {
        let l = &mut self.levels[level];
        l.written += 1;
        l.bytes += child.encoded_len();
        l.waiting.push(child);
        if l.bytes >= INDEX_NODE_TARGET_LEN {
            self.write_parent(level, sink)?;
        }
        Ok(())
    }

    /// Writes the children waiting at `level` as one node of `level + 1`.
    fn write_parent(&mut self, level: usize, sink: &mut dyn NodeSink) -> Result<()> {
        if self.levels.len() == level + 1 {
            self.levels.push(Level::default());
        }
        let l = &mut self.levels[level];
        let children = std::mem::take(&mut l.waiting);
        l.bytes = 0;
        let node = Internal { first_child_seq: l.written - children.len() as u64, children };
        let first_key = node.children[0].first_key.clone();
        let id =
            IndexNodeId { table: self.table, level: level as u8 + 1, seq: self.levels[level + 1].written };
        let child = Child { first_key, ..sink.write_node(id, node.encode())? };
        self.push(level + 1, child, sink)
    }

    /// Writes what is still waiting below the top and returns the top for
    /// the root: the lowest level above which nothing was written.
    pub(crate) fn finish(mut self, sink: &mut dyn NodeSink) -> Result<TreeTop> {
        let mut level = 0;
        loop {
            let above = self.levels.get(level + 1).map_or(0, |l| l.written);
            if above == 0 {
                let children = std::mem::take(&mut self.levels[level].waiting);
                let height = if children.is_empty() { 0 } else { level as u8 + 1 };
                return Ok(TreeTop { height, children });
            }
            if !self.levels[level].waiting.is_empty() {
                self.write_parent(level, sink)?;
            }
            level += 1;
        }
    }
}
