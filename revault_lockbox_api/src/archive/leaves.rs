//! Opened entries leaves kept for lookups. A lookup (`find`, and so `cat`
//! and every `lookup`, `getattr` and `open` of a mount) checks the leaf that
//! holds its path and the leaves of the paths above it: the files of one
//! directory read the same few leaves again and again. Opening one (read,
//! authenticate, decompress, decode some hundreds of records) costs far
//! more than finding a path in it, so a few stay decoded: bounded, so
//! memory stays flat whatever the archive's size.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::format::{Child, EntriesLeaf, Hash, IndexNodeId};
use crate::index::TreeReader;

/// What a leaf was opened as: under which keys (one run's), as which node,
/// from where, committed to by which hash. A parent that names the same
/// place with another hash or id gets the leaf opened again, and refused
/// as it would be without the cache.
type Key = (usize, IndexNodeId, u64, Hash);

/// The cache; see the module docs.
pub(crate) struct LeafCache {
    leaves: Mutex<VecDeque<(Key, Arc<EntriesLeaf>)>>,
    capacity: usize,
}

impl LeafCache {
    /// A cache of at most `capacity` leaves (at least one).
    pub(crate) fn new(capacity: usize) -> LeafCache {
        LeafCache { leaves: Mutex::default(), capacity: capacity.max(1) }
    }

    /// Leaf `id`, which `child` names in `tree`: from the cache, or read,
    /// opened and decoded (then kept, the least recently used dropped).
    pub(crate) fn leaf(
        &self,
        tree: &TreeReader<'_>,
        id: &IndexNodeId,
        child: &Child,
    ) -> Result<Arc<EntriesLeaf>> {
        let key = (Arc::as_ptr(&tree.keys) as usize, *id, child.offset, child.hash);
        let mut leaves = self.leaves.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = leaves.iter().position(|(k, _)| *k == key) {
            let hit = leaves.remove(at).expect("position is valid");
            let leaf = Arc::clone(&hit.1);
            leaves.push_front(hit);
            return Ok(leaf);
        }
        drop(leaves);
        let leaf = Arc::new(EntriesLeaf::decode(&tree.node(id, child)?)?);
        let mut leaves = self.leaves.lock().unwrap_or_else(|p| p.into_inner());
        leaves.push_front((key, Arc::clone(&leaf)));
        leaves.truncate(self.capacity);
        Ok(leaf)
    }
}
