//! How an entry shows through the mount: inode numbers from index places,
//! attributes from the stored metadata.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo};
use revault_lockbox_api::read::{Node, Place};
use revault_lockbox_api::EntryKind;

/// The top directory's inode (the kernel's `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;
/// Inode numbers of entries start here: 0 and 1 stay free.
const FIRST: u64 = 2;
/// With every state shown, the bits of an inode number below its view's.
const VIEW_SHIFT: u32 = 43;
/// The place part that numbers a state's own directory (`@N`).
const STATE_TOP: u64 = (1 << VIEW_SHIFT) - 1;
/// Views a number can name (the format allows 2^20 sessions).
pub const MAX_VIEWS: u64 = (1 << (63 - VIEW_SHIFT)) - 1;

/// The archive does not change under a mount (an append is seen after a
/// remount): the kernel may keep names and attributes this long.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How inode numbers name entries. With one view (one state of the
/// archive) an entry's number is its index place plus 2. With every
/// state side by side (`--all-sessions`), view k's (k from 1) entries are
/// 2 + (k << 43 | place), which holds the places of an index of fewer than
/// 2^24 leaves a run and every state the format allows, and the state's
/// own directory `@k` is 2 + (k << 43 | 2^43 - 1). Either way no table of
/// numbers is kept.
#[derive(Debug, Clone, Copy)]
pub struct Numbering {
    pub all_states: bool,
}

/// What an entry's inode number decodes to.
pub enum Numbered {
    Entry { view: u64, place: Place },
    StateTop(u64),
}

impl Numbering {
    /// The number of the entry at `place` in `view` (0 with one view).
    pub fn entry(self, view: u64, place: Place) -> Result<INodeNo, Errno> {
        if !self.all_states {
            return Ok(INodeNo(place.get() + FIRST));
        }
        if place.get() >= STATE_TOP {
            return Err(Errno::EOVERFLOW);
        }
        Ok(INodeNo(FIRST + (view << VIEW_SHIFT | place.get())))
    }

    /// The number of state `view`'s directory.
    pub fn state_top(self, view: u64) -> INodeNo {
        INodeNo(FIRST + (view << VIEW_SHIFT | STATE_TOP))
    }

    /// What `ino` numbers, if it is an entry's or a state's number.
    pub fn decode(self, ino: INodeNo) -> Option<Numbered> {
        let n = ino.0.checked_sub(FIRST).filter(|&n| n < 1 << 63)?;
        if !self.all_states {
            return Place::from_number(n).map(|place| Numbered::Entry { view: 0, place });
        }
        let (view, rest) = (n >> VIEW_SHIFT, n & STATE_TOP);
        match (view, rest) {
            (0, _) => None,
            (_, STATE_TOP) => Some(Numbered::StateTop(view)),
            _ => Place::from_number(rest).map(|place| Numbered::Entry { view, place }),
        }
    }
}

/// Owners shown instead of the stored ones (`--uid`, `--gid`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Owners {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

pub fn kind_of(kind: &EntryKind) -> FileType {
    match kind {
        EntryKind::Dir => FileType::Directory,
        EntryKind::Symlink { .. } => FileType::Symlink,
        _ => FileType::RegularFile,
    }
}

fn time_of(secs: i64, nanos: u32) -> SystemTime {
    let magnitude = Duration::new(secs.unsigned_abs(), 0);
    let whole = if secs >= 0 { UNIX_EPOCH + magnitude } else { UNIX_EPOCH - magnitude };
    whole + Duration::from_nanos(u64::from(nanos))
}

/// The attributes of `node`, numbered `ino`. Link counts: a directory 1 (the archive keeps
/// no count of its subdirectories; `find` then reads every directory), a
/// file that hard links share 2 (at least two names; the exact count is
/// not stored), any other entry 1.
pub fn attr_of(node: &Node, ino: INodeNo, owners: Owners) -> FileAttr {
    let e = &node.entry;
    let (size, stored) = match &e.kind {
        EntryKind::Symlink { target, .. } => (target.len() as u64, target.len() as u64),
        EntryKind::Dir => (0, 0),
        _ => {
            let size = e.content().map_or(0, |(size, _)| size);
            let stored = e.sparse_map().map_or(size, |m| m.segments().iter().map(|s| s.1).sum());
            (size, stored)
        }
    };
    let mtime = time_of(e.meta.mtime_secs, e.meta.mtime_nanos);
    FileAttr {
        ino,
        size,
        blocks: stored.div_ceil(512),
        atime: mtime,
        mtime,
        ctime: mtime,
        crtime: mtime,
        kind: kind_of(&e.kind),
        perm: (e.meta.mode & 0o7777) as u16,
        nlink: if node.shared { 2 } else { 1 },
        uid: owners.uid.unwrap_or(e.meta.uid),
        gid: owners.gid.unwrap_or(e.meta.gid),
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// A directory the archive does not store (the top, an implicit parent):
/// mode 0755, owned by whoever mounted it (or `--uid`/`--gid`), dated
/// `mtime`.
pub fn unstored_dir_attr(ino: INodeNo, owners: Owners, mtime: SystemTime) -> FileAttr {
    FileAttr {
        ino,
        size: 0,
        blocks: 0,
        atime: mtime,
        mtime,
        ctime: mtime,
        crtime: mtime,
        kind: FileType::Directory,
        perm: 0o755,
        nlink: 1,
        uid: owners.uid.unwrap_or_else(|| rustix::process::geteuid().as_raw()),
        gid: owners.gid.unwrap_or_else(|| rustix::process::getegid().as_raw()),
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_1970_and_nanoseconds_are_kept() {
        assert_eq!(time_of(-1, 500), UNIX_EPOCH - Duration::from_secs(1) + Duration::from_nanos(500));
        assert_eq!(
            time_of(1_700_000_000, 123_456_789).duration_since(UNIX_EPOCH).unwrap().subsec_nanos(),
            123_456_789
        );
    }

    #[test]
    fn inode_numbers_and_places_map_both_ways() {
        let place = Place::from_number(77).unwrap();
        let one = Numbering { all_states: false };
        let entry = |n: Option<Numbered>| match n {
            Some(Numbered::Entry { view, place }) => Some((view, place)),
            _ => None,
        };
        assert_eq!(entry(one.decode(one.entry(0, place).unwrap())), Some((0, place)));
        assert!(one.decode(INodeNo(ROOT)).is_none() && one.decode(INodeNo((1 << 63) + 2)).is_none());
        let all = Numbering { all_states: true };
        for view in [1, 2, (1 << 20) - 1] {
            let ino = all.entry(view, place).unwrap();
            assert_eq!(entry(all.decode(ino)), Some((view, place)));
            assert!(matches!(all.decode(all.state_top(view)), Some(Numbered::StateTop(v)) if v == view));
            assert!(all.state_top(view).0 < (1 << 63) + 2, "below the implicit directories' numbers");
        }
        let big = Place::from_number(1 << 43).unwrap();
        assert_eq!(all.entry(1, big).unwrap_err(), Errno::EOVERFLOW);
        assert!(all.decode(one.entry(0, place).unwrap()).is_none(), "view 0 is not a state");
    }
}
