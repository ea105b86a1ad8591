//! Differences between two views of a tree, each an entry stream in index
//! order: two states of an archive ([`states`]), or a state and a directory
//! on disk ([`directory`]). Both streams come sorted by path, so the
//! comparison is a merge of the two, one entry of each in hand: memory stays
//! flat however many entries there are.
//!
//! What counts as a change is GNU tar's `--compare` and `restic diff`'s:
//! kind, content (SHA-256; with [`DiffOptions::quick`] size and mtime only),
//! mode, owner, modification time (of files and symbolic links; of
//! directories only when asked, since `add` and `rm` do not store parents
//! again) and a symbolic link's target. A hard link compares as the file
//! whose content it shares.

mod disk;

use std::iter::Peekable;
use std::path::{Path, PathBuf};

use crate::archive::{Archive, Subtrees};
use crate::error::{Error, Result};
use crate::format::{path_cmp, Entry, EntryKind};
use crate::storage::ReadAt;

/// What a diff compares. Every setter's doc states its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiffOptions {
    quick: bool,
    dir_mtimes: bool,
    leave_out: Option<(u64, u64)>,
    exact: bool,
}

impl DiffOptions {
    /// Content by SHA-256, directories' mtimes not compared.
    pub fn new() -> DiffOptions {
        DiffOptions::default()
    }

    /// Compares files' content by size and modification time only, reading
    /// no file on disk. Default: by SHA-256 (the stored digest of each
    /// state; a file on disk is read and hashed when the sizes agree).
    pub fn quick(mut self, quick: bool) -> Self {
        self.quick = quick;
        self
    }

    /// Also compares directories' modification times. Default: not (GNU
    /// tar's `--compare` does not either: adding or removing a path below a
    /// directory changes its mtime on disk, not in the archive).
    pub fn dir_mtimes(mut self, dir_mtimes: bool) -> Self {
        self.dir_mtimes = dir_mtimes;
        self
    }

    /// Compares everything an entry stores (a compaction rewriting one
    /// state as the difference from the one before): directories' mtimes,
    /// and [`Changes::other`]. Default: not.
    pub(crate) fn exact(mut self) -> Self {
        self.exact = true;
        self.dir_mtimes = true;
        self
    }

    /// Leaves the file with this device and inode number out of a
    /// directory's side (the archive itself, which a create never stores
    /// in itself). Default: none.
    pub fn leave_out(mut self, dev: u64, ino: u64) -> Self {
        self.leave_out = Some((dev, ino));
        self
    }
}

/// What differs between two entries at one path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Changes {
    /// Directory, file or symbolic link: one became another (nothing else
    /// is compared then).
    pub kind: bool,
    /// A file's content (or, with [`DiffOptions::quick`], its size or mtime).
    pub content: bool,
    /// Permission bits (not compared for symbolic links).
    pub mode: bool,
    /// Owner user or group id.
    pub owner: bool,
    /// Modification time, to the nanosecond.
    pub mtime: bool,
    /// A symbolic link's target.
    pub target: bool,
    /// Anything else an entry stores: owner names, extended attributes, a
    /// sparse map, a hard link's target path, whether hard links share a
    /// file's content (compared only when a compaction asks).
    pub other: bool,
}

impl Changes {
    /// Whether anything differs.
    pub fn any(&self) -> bool {
        let Changes { kind, content, mode, owner, mtime, target, other } = *self;
        kind || content || mode || owner || mtime || target || other
    }
}

/// One path that differs, in index order. For a directory on disk, a
/// file's `sha256` is its digest only when it was compared with a stored
/// file of the same size; otherwise zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // yielded one at a time; boxing would cost each change two allocations
pub enum Difference {
    /// In the new view only.
    Added(Entry),
    /// In the old view only.
    Removed(Entry),
    /// In both, not alike.
    Changed {
        /// The old view's entry.
        old: Entry,
        /// The new view's entry.
        new: Entry,
        /// What differs.
        changes: Changes,
    },
}

impl Difference {
    /// The path that differs.
    pub fn path(&self) -> &[u8] {
        match self {
            Difference::Added(e) | Difference::Removed(e) | Difference::Changed { new: e, .. } => &e.path,
        }
    }
}

type Stream<'a> = Peekable<Box<dyn Iterator<Item = Result<Entry>> + 'a>>;

/// The differences between an old and a new view, in index order; see
/// [`states`] and [`directory`]. Yields an error once, then ends.
pub struct Diff<'a> {
    old: Stream<'a>,
    new: Stream<'a>,
    /// Where the new view's files are read from when it is a directory.
    on_disk: Option<PathBuf>,
    options: DiffOptions,
    done: bool,
}

/// The differences from state `old` to state `new` (two archives, or two
/// states of one, as [`Archive::at`] opens them). Contents are compared by
/// their stored SHA-256: no data page is read.
pub fn states<'a, S: ReadAt, T: ReadAt>(
    old: &'a Archive<S>,
    new: &'a Archive<T>,
    options: DiffOptions,
) -> Result<Diff<'a>> {
    Ok(Diff::new(Box::new(old.entries()?), Box::new(new.entries()?), None, options))
}

/// The differences from `archive` (the old view) to the directory `dir`
/// (the new one), whose paths are taken relative to it as a create with
/// `-C dir` stores them: under `paths` (stored paths, each a subtree), or,
/// when none is given, under every name of `dir` that the archive holds
/// something under (so a file beside what was archived is not reported).
/// A file on disk is read and hashed when its size equals the stored one.
pub fn directory<'a, S: ReadAt>(
    archive: &'a Archive<S>,
    dir: &Path,
    paths: &[Vec<u8>],
    options: DiffOptions,
) -> Result<Diff<'a>> {
    let io = |source: std::io::Error| Error::Io {
        action: "reading the directory",
        path: dir.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(dir).map_err(io)?;
    if !meta.is_dir() {
        return Err(io(std::io::Error::from(std::io::ErrorKind::NotADirectory)));
    }
    let (old, roots): (Box<dyn Iterator<Item = Result<Entry>> + 'a>, Vec<Vec<u8>>) = if paths.is_empty() {
        let mut roots = Vec::new();
        for name in disk::names(dir)? {
            if Subtrees::new(std::slice::from_ref(&name)).first_missing(archive)?.is_none() {
                roots.push(name);
            }
        }
        (Box::new(archive.entries()?), roots)
    } else {
        let subtrees = Subtrees::new(paths);
        let roots = subtrees.roots().to_vec();
        (subtrees.into_entries(archive)?, roots)
    };
    let new = Box::new(disk::Entries::new(dir, roots, options.leave_out));
    Ok(Diff::new(old, new, Some(dir.to_path_buf()), options))
}

impl<'a> Diff<'a> {
    fn new(
        old: Box<dyn Iterator<Item = Result<Entry>> + 'a>,
        new: Box<dyn Iterator<Item = Result<Entry>> + 'a>,
        on_disk: Option<PathBuf>,
        options: DiffOptions,
    ) -> Diff<'a> {
        Diff { old: old.peekable(), new: new.peekable(), on_disk, options, done: false }
    }

    fn step(&mut self) -> Result<Option<Difference>> {
        loop {
            if let Some(Err(_)) = self.old.peek() {
                return Err(self.old.next().expect("peeked").expect_err("peeked an error"));
            }
            if let Some(Err(_)) = self.new.peek() {
                return Err(self.new.next().expect("peeked").expect_err("peeked an error"));
            }
            let order = match (self.old.peek(), self.new.peek()) {
                (None, None) => return Ok(None),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(Ok(o)), Some(Ok(n))) => path_cmp(&o.path, &n.path),
                _ => unreachable!("errors taken above"),
            };
            let take = |s: &mut Stream<'a>| s.next().expect("peeked").expect("peeked an entry");
            match order {
                std::cmp::Ordering::Less => return Ok(Some(Difference::Removed(take(&mut self.old)))),
                std::cmp::Ordering::Greater => return Ok(Some(Difference::Added(take(&mut self.new)))),
                std::cmp::Ordering::Equal => {
                    let (old, mut new) = (take(&mut self.old), take(&mut self.new));
                    let changes = self.compare(&old, &mut new)?;
                    if changes.any() {
                        return Ok(Some(Difference::Changed { old, new, changes }));
                    }
                }
            }
        }
    }

    /// What differs between `old` and `new` at one path; a file on disk is
    /// hashed (into `new`) when its content must be compared.
    fn compare(&self, old: &Entry, new: &mut Entry) -> Result<Changes> {
        let (kind_old, kind_new) = (Kind::of(old), Kind::of(new));
        if kind_old != kind_new {
            return Ok(Changes { kind: true, ..Changes::default() });
        }
        let (o, n) = (&old.meta, &new.meta);
        let mtime = (o.mtime_secs, o.mtime_nanos) != (n.mtime_secs, n.mtime_nanos);
        let mut changes = Changes {
            mode: kind_new != Kind::Symlink && o.mode & 0o7777 != n.mode & 0o7777,
            owner: (o.uid, o.gid) != (n.uid, n.gid),
            mtime: mtime && (kind_new != Kind::Dir || self.options.dir_mtimes),
            other: self.options.exact
                && (o != n
                    || old.kind != new.kind
                    || old.sparse != new.sparse
                    || old.extent.map(|x| x.linked) != new.extent.map(|x| x.linked)),
            ..Changes::default()
        };
        match (&old.kind, &mut new.kind) {
            (EntryKind::Symlink { target: a }, EntryKind::Symlink { target: b }) => changes.target = a != b,
            (EntryKind::File { size, sha256 } | EntryKind::Hardlink { size, sha256, .. }, new_kind) => {
                let (new_size, new_sha) = match new_kind {
                    EntryKind::File { size, sha256 } | EntryKind::Hardlink { size, sha256, .. } => {
                        (*size, sha256)
                    }
                    _ => unreachable!("same kind"),
                };
                changes.content = if *size != new_size {
                    true
                } else if self.options.quick {
                    mtime
                } else {
                    if let Some(dir) = &self.on_disk {
                        *new_sha = disk::digest(dir, &new.path, old)?;
                    }
                    sha256 != new_sha
                };
            }
            _ => {}
        }
        Ok(changes)
    }
}

impl Iterator for Diff<'_> {
    type Item = Result<Difference>;

    fn next(&mut self) -> Option<Result<Difference>> {
        if self.done {
            return None;
        }
        let item = self.step().transpose();
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

/// An entry's kind as a diff compares it: a hard link is a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
}

impl Kind {
    fn of(e: &Entry) -> Kind {
        match e.kind {
            EntryKind::Dir => Kind::Dir,
            EntryKind::File { .. } | EntryKind::Hardlink { .. } => Kind::File,
            EntryKind::Symlink { .. } => Kind::Symlink,
        }
    }
}
