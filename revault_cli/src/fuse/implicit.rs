//! Inode numbers of directories the archive does not list but whose paths
//! lie below them (implicit parents): no index place names them, so the
//! mount numbers them as it meets them, from 2^63 + 2 up (entries'
//! numbers, their places plus 2, stay below), and keeps each path for the mount's
//! life. The table grows with the implicit directories looked up or
//! listed, never with stored entries; archives `lockbox create` writes
//! list every directory and leave it empty.

use std::collections::HashMap;
use std::sync::Mutex;

use fuser::INodeNo;

/// The first inode number of an implicit directory.
const FIRST: u64 = (1 << 63) + 2;

#[derive(Default)]
pub struct ImplicitDirs {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    paths: Vec<(u64, Vec<u8>)>,
    numbers: HashMap<(u64, Vec<u8>), u64>,
}

impl ImplicitDirs {
    /// The inode of the implicit directory at `path` in `view`, the same
    /// each time.
    pub fn ino(&self, view: u64, path: &[u8]) -> INodeNo {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let key = (view, path.to_vec());
        if let Some(&n) = t.numbers.get(&key) {
            return INodeNo(n);
        }
        let n = FIRST + t.paths.len() as u64;
        t.paths.push(key.clone());
        t.numbers.insert(key, n);
        INodeNo(n)
    }

    /// The view and path of implicit directory `ino`, if it is one.
    pub fn path(&self, ino: INodeNo) -> Option<(u64, Vec<u8>)> {
        let i = usize::try_from(ino.0.checked_sub(FIRST)?).ok()?;
        self.table.lock().unwrap_or_else(|p| p.into_inner()).paths.get(i).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable_and_above_every_place() {
        let dirs = ImplicitDirs::default();
        let a = dirs.ino(0, b"a");
        assert_eq!(dirs.ino(0, b"a/b").0, a.0 + 1);
        assert_eq!(dirs.ino(0, b"a"), a);
        assert_ne!(dirs.ino(1, b"a"), a, "another view's a");
        assert!(a.0 >= 1 << 63);
        assert_eq!(dirs.path(a), Some((0, b"a".to_vec())));
        assert_eq!(dirs.path(INodeNo(2)), None);
        assert_eq!(dirs.path(INodeNo(a.0 + 3)), None);
    }
}
