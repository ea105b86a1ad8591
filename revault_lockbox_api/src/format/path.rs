//! Stored paths: what a valid one is, and the one order every index keeps.
//!
//! A valid path or link target is one extraction can restore: these
//! checks are the rules `extract` and `verify` share, applied wherever an
//! entry is decoded, and by writers before one is written.

use std::cmp::Ordering;

use super::{MAX_NAME_LEN, MAX_PATH_LEN, MAX_SYMLINK_TARGET_LEN};

/// Checks a stored entry path: relative, `/`-separated, no empty, `.` or
/// `..` components, none longer than [`MAX_NAME_LEN`], no NUL byte, at
/// most [`MAX_PATH_LEN`] bytes. Writers refuse other paths and readers
/// refuse archives holding them.
pub(crate) fn check_entry_path(path: &[u8]) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.len() > MAX_PATH_LEN {
        return Err("path too long");
    }
    if path[0] == b'/' {
        return Err("absolute path");
    }
    if path.contains(&0) {
        return Err("NUL byte in path");
    }
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" => return Err("empty path component"),
            b"." => return Err("`.` component"),
            b".." => return Err("`..` component"),
            long if long.len() > MAX_NAME_LEN => return Err("a component longer than 255 bytes"),
            _ => {}
        }
    }
    Ok(())
}

/// Checks a symbolic link's target: not empty, no NUL byte, at most
/// [`MAX_SYMLINK_TARGET_LEN`] bytes; `symlink(2)` takes nothing else.
pub(crate) fn check_symlink_target(target: &[u8]) -> Result<(), &'static str> {
    if target.is_empty() {
        return Err("empty link target");
    }
    if target.contains(&0) {
        return Err("NUL byte in link target");
    }
    if target.len() > MAX_SYMLINK_TARGET_LEN {
        return Err("link target longer than 4095 bytes");
    }
    Ok(())
}

/// Whether `path` is `root` or lies below it.
pub(crate) fn is_within(root: &[u8], path: &[u8]) -> bool {
    path.starts_with(root) && (path.len() == root.len() || path[root.len()] == b'/')
}

/// The index order: paths compared component by component, bytewise within
/// a component, so that a directory comes right before its contents
/// (`a`, `a/b`, `a.txt`). For valid paths this is the bytewise order with
/// `/` ranked below every other byte.
pub(crate) fn path_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let rank = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    for (&x, &y) in a.iter().zip(b) {
        if x != y {
            return rank(x).cmp(&rank(y));
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_checked() {
        assert!(check_entry_path(b"a/b\xff/c").is_ok());
        for bad in [&b""[..], b"/etc/x", b"../x", b"a/../../x", b"a//b", b"a/./b", b"a/", b"a\0b"] {
            assert!(check_entry_path(bad).is_err(), "{bad:?}");
        }
        let name = |n| vec![b'n'; n];
        assert!(check_entry_path(&name(255)).is_ok());
        assert!(check_entry_path(&[&name(255)[..], b"/", &name(256)].concat()).is_err());
    }

    #[test]
    fn symlink_targets_are_checked() {
        assert!(check_symlink_target(b"../\xff/x").is_ok());
        assert!(check_symlink_target(&[b'/'; 4095]).is_ok());
        for bad in [&b""[..], b"a\0b", &[b'x'; 4096]] {
            assert!(check_symlink_target(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn directories_come_right_before_their_contents() {
        let mut paths: Vec<&[u8]> = vec![b"a.txt", b"a/b", b"a", b"a/b/c", b"a-b", b"b", b"a/b.c", b"\xff"];
        paths.sort_by(|x, y| path_cmp(x, y));
        let expect: Vec<&[u8]> = vec![b"a", b"a/b", b"a/b/c", b"a/b.c", b"a-b", b"a.txt", b"b", b"\xff"];
        assert_eq!(paths, expect);
    }
}
