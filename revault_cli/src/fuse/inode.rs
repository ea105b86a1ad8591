//! What an inode number names (the top, a stored entry by its index
//! place, an implicit directory), and its attributes.

use fuser::{Errno, FileAttr, INodeNo};
use revault_lockbox_api::read::{Listed, Node};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::EntryKind;

use super::attr::{attr_of, ino_of, place_of, unstored_dir_attr, ROOT};
use super::fs::LockboxFs;

/// What an inode number names (one per request, on the stack: an entry
/// is what nearly every request resolves to, so it is not boxed).
#[allow(clippy::large_enum_variant)]
pub(super) enum Inode {
    /// The mount's top directory.
    Root,
    /// A stored entry.
    Entry(Node),
    /// A directory no entry lists (its path).
    ImplicitDir(Vec<u8>),
}

impl<S: ReadAt + 'static> LockboxFs<S> {
    pub(super) fn inode(&self, ino: INodeNo) -> Result<Inode, Errno> {
        if ino.0 == ROOT {
            return Ok(Inode::Root);
        }
        if let Some(path) = self.implicit.path(ino) {
            return Ok(Inode::ImplicitDir(path));
        }
        let place = place_of(ino).ok_or(Errno::ENOENT)?;
        self.browser.node(place).map(Inode::Entry).map_err(|e| self.failed("reading the index", &e))
    }

    /// The stored entry `ino` names; a directory the archive does not
    /// store has none.
    pub(super) fn node(&self, ino: INodeNo) -> Result<Option<Node>, Errno> {
        match self.inode(ino)? {
            Inode::Entry(node) => Ok(Some(node)),
            Inode::Root | Inode::ImplicitDir(_) => Ok(None),
        }
    }

    pub(super) fn attr(&self, ino: INodeNo, inode: &Inode) -> FileAttr {
        match inode {
            Inode::Entry(node) => attr_of(node, self.owners),
            Inode::Root | Inode::ImplicitDir(_) => unstored_dir_attr(ino, self.owners, self.mounted_at),
        }
    }

    /// The stored path of directory `ino` (`b""` at the top).
    pub(super) fn dir_path(&self, ino: INodeNo) -> Result<Vec<u8>, Errno> {
        match self.inode(ino)? {
            Inode::Root => Ok(Vec::new()),
            Inode::ImplicitDir(path) => Ok(path),
            Inode::Entry(node) if matches!(node.entry.kind, EntryKind::Dir) => Ok(node.entry.path),
            Inode::Entry(_) => Err(Errno::ENOTDIR),
        }
    }

    /// The inode number of a name a listing gave.
    pub(super) fn ino_of_listed(&self, listed: &Listed) -> INodeNo {
        match listed {
            Listed::Entry(node) => ino_of(node.place),
            Listed::ImplicitDir(path) => self.implicit.ino(path),
        }
    }

    /// The attributes of a name a listing gave.
    pub(super) fn attr_of_listed(&self, listed: &Listed) -> FileAttr {
        match listed {
            Listed::Entry(node) => attr_of(node, self.owners),
            Listed::ImplicitDir(path) => {
                unstored_dir_attr(self.implicit.ino(path), self.owners, self.mounted_at)
            }
        }
    }
}
