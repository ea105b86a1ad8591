//! Decoded index nodes kept for lookups. A lookup (`find`, and so `cat`
//! and every `lookup`, `getattr` and `open` of a mount) descends from the
//! top through the same internal nodes whatever its path, and checks the
//! leaf that holds its path and the leaves of the paths above it: the
//! files of one directory read the same few nodes again and again.
//! Opening one (read, authenticate, decompress, decode its records) costs
//! far more than finding a key in it, so a few stay decoded: bounded, so
//! memory stays flat whatever the archive's size.

use std::sync::Arc;

use super::TreeReader;
use crate::cache::Bounded;
use crate::error::Result;
use crate::format::{Child, EntriesLeaf, Hash, IndexNodeId};

/// What a node was opened as: under which keys (one session's), as which
/// node, from where, committed to by which hash. A parent that names the
/// same place with another hash or id gets the node opened again, and
/// refused as it would be without the cache.
type Key = (usize, IndexNodeId, u64, Hash);

/// The cache of one kind of node; see the module docs.
pub(crate) struct NodeCache<T> {
    nodes: Bounded<Key, Arc<T>>,
}

impl<T> NodeCache<T> {
    /// A cache of at most `capacity` nodes (at least one).
    pub(crate) fn new(capacity: usize) -> NodeCache<T> {
        NodeCache { nodes: Bounded::new(capacity) }
    }

    /// Node `id`, which `child` names in `tree`: from the cache, or read,
    /// opened and decoded by `decode` (then kept, the least recently used
    /// dropped).
    pub(crate) fn node(
        &self,
        tree: &TreeReader<'_>,
        id: &IndexNodeId,
        child: &Child,
        decode: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Arc<T>> {
        let key = (Arc::as_ptr(&tree.keys) as usize, *id, child.offset, child.hash);
        self.nodes.get_or_open(key, || Ok(Arc::new(decode(&tree.node(id, child)?)?)))
    }
}

impl NodeCache<EntriesLeaf> {
    /// Entries leaf `id`, which `child` names in `tree`.
    pub(crate) fn leaf(
        &self,
        tree: &TreeReader<'_>,
        id: &IndexNodeId,
        child: &Child,
    ) -> Result<Arc<EntriesLeaf>> {
        self.node(tree, id, child, |plain| Ok(EntriesLeaf::decode(plain)?))
    }
}
