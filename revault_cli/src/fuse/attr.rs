//! How an entry shows through the mount: inode numbers from index places,
//! attributes from the stored metadata.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};
use revault_lockbox_api::read::{Node, Place};
use revault_lockbox_api::EntryKind;

/// The top directory's inode (the kernel's `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;
/// Inode numbers of entries are their places plus this: 0 and 1 stay free.
const FIRST: u64 = 2;

/// The archive does not change under a mount (an append is seen after a
/// remount): the kernel may keep names and attributes this long.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

pub fn ino_of(place: Place) -> INodeNo {
    INodeNo(place.get() + FIRST)
}

pub fn place_of(ino: INodeNo) -> Option<Place> {
    ino.0.checked_sub(FIRST).and_then(Place::from_number)
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

/// The attributes of `node`. Link counts: a directory 1 (the archive keeps
/// no count of its subdirectories; `find` then reads every directory), a
/// file that hard links share 2 (at least two names; the exact count is
/// not stored), any other entry 1.
pub fn attr_of(node: &Node, owners: Owners) -> FileAttr {
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
        ino: ino_of(node.place),
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
        assert_eq!(place_of(ino_of(place)), Some(place));
        assert_eq!(place_of(INodeNo(ROOT)), None);
    }
}
