//! What an inode number names (the top, a state's directory, a stored
//! entry by its view and index place, an implicit directory), and its
//! attributes.

use std::sync::Arc;

use fuser::{Errno, FileAttr, INodeNo};
use revault_lockbox_api::read::{Browser, Listed, Node};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::EntryKind;

use super::attr::{attr_of, unstored_dir_attr, Numbered, ROOT};
use super::dir::OpenDir;
use super::fs::LockboxFs;

/// What an inode number names (one per request, on the stack: an entry
/// is what nearly every request resolves to, so it is not boxed).
#[allow(clippy::large_enum_variant)]
pub(super) enum Inode {
    /// The mount's top directory.
    Root,
    /// The directory of one state (`--all-sessions`), by its view.
    StateTop(u64),
    /// A stored entry, in a view.
    Entry(u64, Node),
    /// A directory no entry lists, in a view (its path).
    ImplicitDir(u64, Vec<u8>),
}

/// A directory: its view and stored path (`b""` at a view's top), or the
/// top of a mount of every state, which lists the states.
pub(super) enum DirAt {
    States,
    In(u64, Vec<u8>),
}

impl<S: ReadAt + Clone + 'static> LockboxFs<S> {
    pub(super) fn inode(&self, ino: INodeNo) -> Result<Inode, Errno> {
        if ino.0 == ROOT {
            return Ok(Inode::Root);
        }
        if let Some((view, path)) = self.implicit.path(ino) {
            return Ok(Inode::ImplicitDir(view, path));
        }
        match self.numbering.decode(ino).ok_or(Errno::ENOENT)? {
            Numbered::StateTop(view) if view as usize <= self.views.states().len() => {
                Ok(Inode::StateTop(view))
            }
            Numbered::StateTop(_) => Err(Errno::ENOENT),
            Numbered::Entry { view, place } => {
                let node =
                    self.browser(view)?.node(place).map_err(|e| self.failed("reading the index", &e))?;
                Ok(Inode::Entry(view, node))
            }
        }
    }

    /// The browser of `view`, opening its state if need be.
    pub(super) fn browser(&self, view: u64) -> Result<Arc<Browser<S>>, Errno> {
        self.views.browser(view).map_err(|e| self.failed("opening a state", &e))
    }

    /// The stored entry `ino` names, with its view; a directory the
    /// archive does not store has none.
    pub(super) fn node(&self, ino: INodeNo) -> Result<Option<(u64, Node)>, Errno> {
        match self.inode(ino)? {
            Inode::Entry(view, node) => Ok(Some((view, node))),
            Inode::Root | Inode::StateTop(_) | Inode::ImplicitDir(..) => Ok(None),
        }
    }

    pub(super) fn attr(&self, ino: INodeNo, inode: &Inode) -> FileAttr {
        match inode {
            Inode::Entry(_, node) => attr_of(node, ino, self.owners),
            Inode::StateTop(view) => {
                let committed = self.views.states()[*view as usize - 1].committed;
                unstored_dir_attr(ino, self.owners, committed)
            }
            Inode::Root | Inode::ImplicitDir(..) => unstored_dir_attr(ino, self.owners, self.mounted_at),
        }
    }

    /// The directory `ino` names.
    pub(super) fn dir_at(&self, ino: INodeNo) -> Result<DirAt, Errno> {
        match self.inode(ino)? {
            Inode::Root if self.views.all() => Ok(DirAt::States),
            Inode::Root => Ok(DirAt::In(0, Vec::new())),
            Inode::StateTop(view) => Ok(DirAt::In(view, Vec::new())),
            Inode::ImplicitDir(view, path) => Ok(DirAt::In(view, path)),
            Inode::Entry(view, node) if matches!(node.entry.kind, EntryKind::Dir) => {
                Ok(DirAt::In(view, node.entry.path))
            }
            Inode::Entry(..) => Err(Errno::ENOTDIR),
        }
    }

    /// The attributes (number included) of a name a listing of `view` gave.
    pub(super) fn attr_of_listed(&self, view: u64, listed: &Listed) -> Result<FileAttr, Errno> {
        Ok(match listed {
            Listed::Entry(node) => attr_of(node, self.numbering.entry(view, node.place)?, self.owners),
            Listed::ImplicitDir(path) => {
                unstored_dir_attr(self.implicit.ino(view, path), self.owners, self.mounted_at)
            }
        })
    }

    /// The attributes of what stored `path` names in `view` (its top when
    /// empty): an entry, or a directory only paths below it imply.
    pub(super) fn attr_at(&self, view: u64, path: Vec<u8>) -> Result<FileAttr, Errno> {
        if path.is_empty() {
            return Ok(match self.views.all() {
                true => self.state_attr(view),
                false => self.attr(INodeNo(ROOT), &Inode::Root),
            });
        }
        let browser = self.browser(view)?;
        match browser.lookup(&path) {
            Ok(Some(node)) => Ok(attr_of(&node, self.numbering.entry(view, node.place)?, self.owners)),
            Ok(None) => match browser.has_below(&path) {
                Ok(true) => self.attr_of_listed(view, &Listed::ImplicitDir(path)),
                Ok(false) => Err(Errno::ENOENT),
                Err(e) => Err(self.failed("looking a name up", &e)),
            },
            Err(e) => Err(self.failed("looking a name up", &e)),
        }
    }

    /// Directory `ino` (at `at`) opened for listing, with what its `.` and
    /// `..` name: the top's `..` is the top itself, as at `/`.
    pub(super) fn open_dir(&self, ino: INodeNo, at: DirAt) -> Result<OpenDir, Errno> {
        let dot = self.attr(ino, &self.inode(ino)?);
        let dotdot = match &at {
            DirAt::States => dot,
            DirAt::In(_, path) if path.is_empty() => self.attr(INodeNo(ROOT), &Inode::Root),
            DirAt::In(view, path) => {
                let parent = path.iter().rposition(|&b| b == b'/').map_or(&path[..0], |i| &path[..i]);
                self.attr_at(*view, parent.to_vec())?
            }
        };
        Ok(OpenDir::new(at, [dot, dotdot]))
    }

    /// The attributes of state `view`'s directory.
    pub(super) fn state_attr(&self, view: u64) -> FileAttr {
        self.attr(self.numbering.state_top(view), &Inode::StateTop(view))
    }
}
