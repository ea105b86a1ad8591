//! [`Browser`]: an archive read the way a file system is (what a FUSE
//! mount needs): one path looked up, one directory listed a part at a
//! time, one file's bytes read at any offset, each entry named by a
//! stable [`Place`], its position in the index, so that a caller needs no
//! table of what it has seen. Everything is read on demand; the only state
//! is bounded caches of page-table leaves and of the nodes last looked up
//! or listed (a file system asks for the same entry by place again and
//! again: its attributes, its opening, the entry after a listing), beside
//! the archive's own of opened entries leaves (which lookups share).
//!
//! Entries come from the same lookup and walk as every other reader
//! ([`Archive::find`], the checked walk), so a browser refuses what
//! extraction refuses.

use std::sync::Arc;

use crate::archive::Archive;
use crate::cache::Bounded;
use crate::error::{Error, Result};
use crate::format::{is_within, path_cmp, EntriesLeaf, Entry, EntryKind, PagesLeaf, Record};
use crate::storage::ReadAt;

mod place;

pub use place::Place;

/// One entry as a file system shows it: where it is, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Node {
    /// The inode's place: for a hard link, its file's (one inode, several
    /// names), else the entry's own.
    pub place: Place,
    /// The entry stored at the path looked up.
    pub entry: Entry,
    /// Whether hard links share this content (a linked file or a link):
    /// its link count is then above one.
    pub shared: bool,
}

/// One name in a directory listing: a stored entry, or a directory that
/// no entry lists but that stored paths lie below (an implicit parent: a
/// tar stream without directory members gives them; extraction makes
/// them too). An implicit directory has no place: its path names it.
// Nearly every name listed is an entry: boxing it would cost an
// allocation per name to save bytes on the rare implicit directory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// A stored entry, as [`Browser::lookup`] gives it.
    Entry(Node),
    /// A directory only deeper paths imply: its full path.
    ImplicitDir(Vec<u8>),
}

impl Listed {
    /// The full stored path of the name listed.
    pub fn path(&self) -> &[u8] {
        match self {
            Listed::Entry(node) => &node.entry.path,
            Listed::ImplicitDir(path) => path,
        }
    }
}

/// An archive browsed by path and by [`Place`]; see the module docs.
///
/// ```
/// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Password};
/// use revault_lockbox_api::create::Metadata;
/// use revault_lockbox_api::read::{Browser, Listed};
/// # fn main() -> Result<(), revault_lockbox_api::Error> {
/// # let pw = Password::from("pw");
/// # let mut w = ArchiveWriter::new(Vec::new(), &pw, CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS))?;
/// # let meta = Metadata::new(0o644, 0, 0, 0, 0);
/// # w.add_dir("d", &meta)?;
/// # w.add_file("d/a.txt", &meta, 5, &b"hello"[..])?;
/// # let bytes = w.finish()?;
/// let browser = Browser::new(Archive::open(std::io::Cursor::new(bytes), &pw)?);
/// let listed = browser.children(b"d", None, 100)?;
/// let Listed::Entry(node) = &listed[0] else { unreachable!("d/a.txt is stored") };
/// assert_eq!(node.entry.path, b"d/a.txt");
/// let again = browser.node(node.place)?;
/// let mut buf = [0u8; 3];
/// assert_eq!(browser.read_at(&again.entry, 2, &mut buf)?, 3);
/// assert_eq!(&buf, b"llo");
/// # Ok(()) }
/// ```
pub struct Browser<S> {
    archive: Archive<S>,
    /// Page-table leaves last used by reads, by first offset.
    pages: Bounded<u64, PagesLeaf>,
    /// Nodes checked as a lookup checks them, by place.
    nodes: Bounded<Place, Node>,
}

impl<S> std::fmt::Debug for Browser<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").field("archive", &self.archive).finish_non_exhaustive()
    }
}

/// Nodes kept by place: a few directories' worth (a listing gives up to
/// hundreds at a time, and a reader then opens them one by one); each is
/// a few hundred bytes.
const NODES_KEPT: usize = 4096;

/// Entries read past in a listing below one child before the walk jumps
/// over that child's subtree (a jump restarts the walk, which costs a
/// descent; a few entries cost less).
const SKIP_BEFORE_JUMP: usize = 32;

impl<S: ReadAt> Browser<S> {
    /// Browses `archive`; the cache holds as many page-table leaves as
    /// its read profile caches pages (at least 8), and a few thousand
    /// nodes: memory stays bounded whatever the archive's size.
    pub fn new(archive: Archive<S>) -> Browser<S> {
        let pages = Bounded::new(archive.tuning().page_cache.max(8));
        Browser { archive, pages, nodes: Bounded::new(NODES_KEPT) }
    }

    /// The archive browsed.
    pub fn archive(&self) -> &Archive<S> {
        &self.archive
    }

    /// The entry at `path` (as stored: no leading `./` or trailing `/`),
    /// if the merged view holds one; reads the index nodes on the way.
    pub fn lookup(&self, path: &[u8]) -> Result<Option<Node>> {
        let Some(entry) = self.archive.find(path)? else { return Ok(None) };
        let node = self.node_of(entry)?;
        self.keep(&node);
        Ok(Some(node))
    }

    /// The entry at `place`, as a lookup of its path gives it now.
    /// [`Error::NotFound`] when the place holds no entry of the view.
    pub fn node(&self, place: Place) -> Result<Node> {
        if let Some(node) = self.nodes.get(&place) {
            return Ok(node);
        }
        let (run, seq, slot) = place.parts();
        let leaf = self.leaf_by_seq(run, seq)?;
        let Some(Record::Put(stored)) = leaf.entries.get(slot) else {
            return Err(bad_place("it holds no entry"));
        };
        let path = stored.path.clone();
        // A file system asks for one entry by place, then for its
        // neighbours: check the whole leaf once and keep its nodes, rather
        // than walk it from its start again for each of them. A hard link
        // is never kept (see `keep`), and damage anywhere in the leaf
        // leaves the answer to the exact lookup of this one path.
        if !matches!(stored.kind, EntryKind::Hardlink { .. }) && self.keep_leaf(&leaf).is_ok() {
            if let Some(node) = self.nodes.get(&place) {
                return Ok(node);
            }
        }
        self.lookup(&path)?.ok_or(Error::NotFound { path: path.as_slice().into() })
    }

    /// Keeps the node of every entry of `leaf`'s part of the merged view,
    /// each checked as its own lookup checks it: one walk from the leaf's
    /// first entry (through the paths above it) to the entry after its
    /// last, a node kept only once the entry after it has passed too.
    fn keep_leaf(&self, leaf: &EntriesLeaf) -> Result<()> {
        let (Some(first), Some(last)) = (leaf.entries.first(), leaf.entries.last()) else { return Ok(()) };
        let mut checked: Option<Node> = None;
        for entry in self.archive.lookup_from(first.path())? {
            let entry = entry?;
            if let Some(node) = checked.take() {
                self.keep(&node);
            }
            if path_cmp(&entry.path, last.path()).is_gt() {
                return Ok(());
            }
            checked = Some(self.node_of(entry)?);
        }
        if let Some(node) = checked {
            self.keep(&node);
        }
        Ok(())
    }

    /// Whether stored paths lie below `path` (`b""`: the top): a
    /// directory the archive lists, or one it implies. Reads the index
    /// nodes on the way to the first path at or after `path`.
    pub fn has_below(&self, path: &[u8]) -> Result<bool> {
        if path.is_empty() {
            return Ok(true);
        }
        for entry in self.archive.lookup_from(path)? {
            let entry = entry?;
            if entry.path.as_slice() != path {
                return Ok(is_within(path, &entry.path));
            }
        }
        Ok(false)
    }

    /// The names directly inside directory `dir` (`b""` for the top), in
    /// index order, from the first that sorts after `after` (all when
    /// `None`), at most `limit`: a listing goes on from its last name.
    /// Stored entries come with their nodes; a name that only deeper
    /// paths imply is an [`Listed::ImplicitDir`]. Deeper entries are read
    /// past or jumped over, never returned.
    pub fn children(&self, dir: &[u8], after: Option<&[u8]>, limit: usize) -> Result<Vec<Listed>> {
        let prefix_len = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let mut start = after.map(|name| past_subtree(&join(dir, name)));
        let mut found = Vec::new();
        'restart: loop {
            // A lookup's walk, also for the top: a listing reads the leaves
            // it lists from, not a full walk's read-ahead of every leaf.
            let mut entries = self.archive.lookup_from(start.as_deref().unwrap_or(dir))?;
            let mut deeper = 0;
            loop {
                let Some(entry) = entries.next().transpose()? else { break 'restart };
                if found.len() == limit {
                    // Checked (the entry after the last one listed, as a
                    // lookup checks it), not listed.
                    break 'restart;
                }
                if !dir.is_empty() && !is_within(dir, &entry.path) {
                    break 'restart;
                }
                if entry.path.len() <= prefix_len {
                    continue; // `dir` itself
                }
                let name = &entry.path[prefix_len..];
                let Some(end) = name.iter().position(|&b| b == b'/') else {
                    deeper = 0;
                    let node = self.node_of(entry)?;
                    self.keep(&node);
                    found.push(Listed::Entry(node));
                    continue;
                };
                let child = &entry.path[..prefix_len + end];
                // A listed child comes right before the paths below it
                // (`/` sorts below every byte), so a deeper path whose
                // child was not the last name listed implies that child.
                if found.last().map(Listed::path) != Some(child) {
                    found.push(Listed::ImplicitDir(child.to_vec()));
                    start = Some(past_subtree(child));
                    continue 'restart;
                }
                deeper += 1;
                if deeper > SKIP_BEFORE_JUMP {
                    start = Some(past_subtree(child));
                    continue 'restart;
                }
            }
        }
        Ok(found)
    }

    /// Fills `buf` from byte `offset` of `entry`'s content (a file or hard
    /// link this browser returned); returns how many bytes it read, 0 at
    /// the end. Reads only the pages that hold them, each authenticated
    /// first: a damaged page is an error, however few of its bytes are
    /// asked for.
    pub fn read_at(&self, entry: &Entry, offset: u64, buf: &mut [u8]) -> Result<usize> {
        use std::io::{Read, Seek, SeekFrom};
        let hint = entry.extent.and_then(|x| self.pages_leaf_for(x.offset));
        let mut reader = self.archive.content_reader(entry, hint)?;
        if offset >= reader.len() {
            return Ok(0);
        }
        reader.seek(SeekFrom::Start(offset)).map_err(Error::stream("seeking in a file"))?;
        let mut filled = 0;
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) => return Err(Error::from_reader("reading a file")(e)),
            }
        }
        if let Some(leaf) = reader.into_leaf() {
            self.keep_pages_leaf(leaf);
        }
        Ok(filled)
    }

    /// Keeps `node` for [`node`](Self::node), unless it is a hard link:
    /// its place may be its file's (which [`node`](Self::node) answers with
    /// the file), and a listing does not check it against its target as a
    /// lookup of its own path does.
    fn keep(&self, node: &Node) {
        if !matches!(node.entry.kind, EntryKind::Hardlink { .. }) {
            self.nodes.put(node.place, node.clone());
        }
    }

    /// `entry` with its inode's place.
    fn node_of(&self, entry: Entry) -> Result<Node> {
        let shared =
            entry.extent.is_some_and(|x| x.linked) || matches!(entry.kind, EntryKind::Hardlink { .. });
        let own = || self.place_of(&entry.path);
        let place = match &entry.kind {
            // The link's inode is its file's, when the view still holds it.
            EntryKind::Hardlink { target, .. } => match self.archive.find(target)? {
                Some(file)
                    if file.extent.map(|x| (x.offset, x.size))
                        == entry.extent.map(|x| (x.offset, x.size)) =>
                {
                    self.place_of(target)?
                }
                _ => own()?,
            },
            _ => own()?,
        };
        Ok(Node { place, entry, shared })
    }

    /// The place of the record the merged view takes at `path`: the
    /// newest run's (the rule of `find_merged`).
    fn place_of(&self, path: &[u8]) -> Result<Place> {
        let runs: Vec<_> = self.archive.runs().collect();
        for (run, (tree, top)) in runs.iter().enumerate().rev() {
            let Some((id, child)) = tree.find_leaf(top, path)? else { continue };
            let leaf = self.archive.leaves.leaf(tree, &id, &child)?;
            // A leaf's records ascend (a walk refuses one that does not).
            if let Ok(slot) = leaf.entries.binary_search_by(|r| path_cmp(r.path(), path)) {
                return Place::new(run, id.seq, slot);
            }
        }
        Err(Error::NotFound { path: path.into() })
    }

    /// Entries leaf `seq` of run `run` (oldest 0), through the cache.
    fn leaf_by_seq(&self, run: usize, seq: u64) -> Result<Arc<EntriesLeaf>> {
        let (tree, top) = self.archive.runs().nth(run).ok_or_else(|| bad_place("no such run"))?;
        let (id, child) = place::find_leaf_by_seq(&tree, top, seq)?;
        self.archive.leaves.leaf(&tree, &id, &child)
    }

    fn pages_leaf_for(&self, at: u64) -> Option<PagesLeaf> {
        self.pages.take(|leaf| super::page_in(leaf, at).is_some())
    }

    fn keep_pages_leaf(&self, leaf: PagesLeaf) {
        self.pages.put(leaf.first_offset, leaf);
    }
}

fn bad_place(why: &'static str) -> Error {
    Error::malformed("browse place", why)
}

/// `dir/name` (`name` at the top).
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        return name.to_vec();
    }
    [dir, b"/", name].concat()
}

/// A key sorting after `path` and everything below it and before the
/// next sibling: a NUL is below every byte of a name but above `/`.
fn past_subtree(path: &[u8]) -> Vec<u8> {
    [path, b"\0"].concat()
}
