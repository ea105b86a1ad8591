//! Extended attributes (and POSIX ACLs, which are the
//! `system.posix_acl_access` and `system.posix_acl_default` attributes):
//! read at `create --xattrs`, written at `extract --xattrs`. Through
//! descriptors; a symbolic link, which cannot be opened, through the `l*`
//! calls on `/proc/self/fd/DIR/NAME`, which name it relative to a
//! directory descriptor without following it.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use crate::format::{Xattr, MAX_XATTR_VALUE_LEN};

/// Linux's limit on a name list (`XATTR_LIST_MAX`) and on a value.
const BUF_LEN: usize = MAX_XATTR_VALUE_LEN;

/// What an attribute is read from or written to.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// An open file or directory.
    Fd(BorrowedFd<'a>),
    /// A symbolic link `name` in the directory `dir`.
    Link(BorrowedFd<'a>, &'a [u8]),
}

impl Target<'_> {
    fn link_path(dir: BorrowedFd<'_>, name: &[u8]) -> PathBuf {
        let mut path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        path.push(OsStr::from_bytes(name));
        path
    }
}

/// Every extended attribute of `target`, sorted by name. A file system
/// without them has none.
pub(crate) fn read_all(target: Target<'_>) -> io::Result<Vec<Xattr>> {
    let mut list = vec![0u8; BUF_LEN];
    let n = match target {
        Target::Fd(fd) => rustix::fs::flistxattr(fd, &mut list[..]),
        Target::Link(dir, name) => rustix::fs::llistxattr(Target::link_path(dir, name), &mut list[..]),
    };
    let n = match n {
        Ok(n) => n,
        Err(Errno::OPNOTSUPP) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut value = vec![0u8; BUF_LEN];
    let mut xattrs = Vec::new();
    for name in list[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let got = match target {
            Target::Fd(fd) => rustix::fs::fgetxattr(fd, OsStr::from_bytes(name), &mut value[..]),
            Target::Link(dir, link) => {
                rustix::fs::lgetxattr(Target::link_path(dir, link), OsStr::from_bytes(name), &mut value[..])
            }
        };
        match got {
            Ok(len) => xattrs.push(Xattr { name: name.to_vec(), value: value[..len].to_vec() }),
            // Removed since the list was read.
            Err(Errno::NODATA) => {}
            Err(e) => return Err(e.into()),
        }
    }
    xattrs.sort();
    Ok(xattrs)
}

/// Sets every attribute of `xattrs` on `target`; returns those the target
/// refused (a namespace the process may not write, a file system without
/// them), with the reason, for warnings.
pub(crate) fn write_all(target: Target<'_>, xattrs: &[Xattr]) -> Vec<(Vec<u8>, io::Error)> {
    let mut refused = Vec::new();
    for x in xattrs {
        let name = OsStr::from_bytes(&x.name);
        let set = match target {
            Target::Fd(fd) => rustix::fs::fsetxattr(fd.as_fd(), name, &x.value, XattrFlags::empty()),
            Target::Link(dir, link) => {
                rustix::fs::lsetxattr(Target::link_path(dir, link), name, &x.value, XattrFlags::empty())
            }
        };
        if let Err(e) = set {
            refused.push((x.name.clone(), e.into()));
        }
    }
    refused
}
