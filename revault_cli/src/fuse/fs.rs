//! The FUSE file system over the [`Views`] of an archive: every request
//! answered from the index on demand (no table of inodes: an inode number
//! is a view and an index place), reads served from the pages they need, a damaged page an `EIO`
//! and one line on stderr naming the file, every change `EROFS`.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use fuser::{
    Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, KernelConfig, OpenAccMode, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen,
    ReplyStatfs, ReplyXattr, Request,
};
use revault_lockbox_api::read::{Browser, Node};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{EntryKind, Error, Quoted};

use super::attr::{Numbering, Owners, TTL};
use super::dir::OpenDir;
use super::implicit::ImplicitDirs;
use super::inode::DirAt;
use super::seek::seek;
use super::views::Views;

/// Bytes read ahead of a sequential reader, in the background.
const READ_AHEAD: usize = 1 << 20;

/// An open file: its view's browser, its entry, where the last read
/// ended, how far reading ahead has been asked for, and whether its damage
/// was reported.
struct OpenFile<S> {
    browser: Arc<Browser<S>>,
    node: Node,
    next: u64,
    ahead: u64,
    reported: bool,
}

/// A read-ahead request: whose file, which entry, from where.
type ReadAhead<S> = (Arc<Browser<S>>, Node, u64);

pub struct LockboxFs<S> {
    pub(super) views: Views<S>,
    pub(super) numbering: Numbering,
    pub(super) implicit: ImplicitDirs,
    name: String,
    pub(super) owners: Owners,
    pub(super) mounted_at: SystemTime,
    files: Mutex<HashMap<u64, OpenFile<S>>>,
    pub(super) dirs: Mutex<HashMap<u64, OpenDir>>,
    next_handle: AtomicU64,
    /// Read-ahead requests for the background reader; full means skipped.
    ahead: SyncSender<ReadAhead<S>>,
}

impl<S: ReadAt + Clone + 'static> LockboxFs<S> {
    /// The file system of `views`, whose archive messages call `name`.
    pub fn new(views: Views<S>, name: String, owners: Owners) -> LockboxFs<S> {
        let (ahead, requests) = sync_channel::<ReadAhead<S>>(4);
        // Reads that warm the archive's page cache; errors are the next
        // real read's to report.
        std::thread::Builder::new()
            .name("lockbox-read-ahead".into())
            .spawn(move || {
                let mut buf = vec![0u8; READ_AHEAD];
                for (browser, node, at) in requests {
                    let _ = browser.read_at(&node.entry, at, &mut buf);
                }
            })
            .expect("spawns the read-ahead thread");
        LockboxFs {
            numbering: Numbering { all_states: views.all() },
            views,
            implicit: ImplicitDirs::default(),
            name,
            owners,
            mounted_at: SystemTime::now(),
            files: Mutex::default(),
            dirs: Mutex::default(),
            next_handle: AtomicU64::new(1),
            ahead,
        }
    }

    /// The errno for a library error, with one line on stderr for damage.
    pub(super) fn failed(&self, what: &str, e: &Error) -> Errno {
        match e {
            Error::NotFound { .. } => Errno::ENOENT,
            _ => {
                eprintln!("lockbox: {what} of {}: {e}", self.name);
                Errno::EIO
            }
        }
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }
}

impl<S: ReadAt + Clone + 'static> Filesystem for LockboxFs<S> {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Listings carry attributes (one request per directory, not one
        // per name); the kernel may look names up in parallel and cache
        // symbolic links; large read-ahead for sequential readers.
        let wanted = fuser::InitFlags::FUSE_DO_READDIRPLUS
            | fuser::InitFlags::FUSE_READDIRPLUS_AUTO
            | fuser::InitFlags::FUSE_PARALLEL_DIROPS
            | fuser::InitFlags::FUSE_CACHE_SYMLINKS;
        let _ = config.add_capabilities(wanted & config.capabilities());
        let _ = config.set_max_readahead(READ_AHEAD as u32);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = self.dir_at(parent).and_then(|dir| {
            let (view, dir) = match dir {
                DirAt::States => {
                    let view = self.views.view_named(name.as_bytes()).ok_or(Errno::ENOENT)?;
                    return Ok(self.state_attr(view));
                }
                DirAt::In(view, dir) => (view, dir),
            };
            let path = if dir.is_empty() {
                name.as_bytes().to_vec()
            } else {
                [&dir[..], b"/", name.as_bytes()].concat()
            };
            self.attr_at(view, path)
        });
        match found {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(errno) => reply.error(errno),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.inode(ino) {
            Ok(inode) => reply.attr(&TTL, &self.attr(ino, &inode)),
            Err(errno) => reply.error(errno),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.node(ino).map(|n| n.map(|(_, n)| n.entry.kind)) {
            Ok(Some(EntryKind::Symlink { target, .. })) => reply.data(&target),
            Ok(_) => reply.error(Errno::EINVAL),
            Err(errno) => reply.error(errno),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        match self.node(ino) {
            Ok(Some((view, node))) if node.entry.content().is_some() => {
                let browser = match self.browser(view) {
                    Ok(browser) => browser,
                    Err(errno) => return reply.error(errno),
                };
                let fh = self.handle();
                let file = OpenFile { browser, node, next: 0, ahead: 0, reported: false };
                self.files.lock().unwrap_or_else(|p| p.into_inner()).insert(fh, file);
                // The content never changes: the kernel may keep its pages.
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_KEEP_CACHE);
            }
            Ok(_) => reply.error(Errno::EISDIR),
            Err(errno) => reply.error(errno),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let Some((browser, node)) = self
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&fh.0)
            .map(|f| (Arc::clone(&f.browser), f.node.clone()))
        else {
            return reply.error(Errno::EBADF);
        };
        let mut buf = vec![0u8; size as usize];
        match browser.read_at(&node.entry, offset, &mut buf) {
            Ok(n) => {
                let end = offset + n as u64;
                let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
                // A sequential reader past half the window asked for asks
                // for the next window (once, not at every read).
                let ahead = files.get_mut(&fh.0).and_then(|f| {
                    let sequential = f.next == offset;
                    f.next = end;
                    let due = sequential && end + (READ_AHEAD as u64) / 2 >= f.ahead;
                    due.then(|| std::mem::replace(&mut f.ahead, end + READ_AHEAD as u64))
                });
                drop(files);
                let more = node.entry.content().is_some_and(|(len, _)| end < len);
                if let (Some(asked), true) = (ahead, more && n > 0) {
                    let _ = self.ahead.try_send((browser, node, end.max(asked)));
                }
                reply.data(&buf[..n]);
            }
            Err(e) => {
                let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
                let first = files.get_mut(&fh.0).is_some_and(|f| !std::mem::replace(&mut f.reported, true));
                drop(files);
                if first {
                    let path = Quoted::bytes(&node.entry.path);
                    eprintln!("lockbox: {path} in {}: {e}; its reads fail with EIO", self.name);
                }
                reply.error(Errno::EIO);
            }
        }
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        let e = &file.node.entry;
        let size = e.content().map_or(0, |(size, _)| size);
        match seek(size, e.sparse_map(), offset, whence) {
            Ok(at) => reply.offset(at as i64),
            Err(errno) => reply.error(errno),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<fuser::LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.lock().unwrap_or_else(|p| p.into_inner()).remove(&fh.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.dir_at(ino).and_then(|at| self.open_dir(ino, at)) {
            Ok(dir) => {
                let fh = self.handle();
                self.dirs.lock().unwrap_or_else(|p| p.into_inner()).insert(fh, dir);
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR);
            }
            Err(errno) => reply.error(errno),
        }
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let listed = self.list(fh, offset, |cookie, name, attr| reply.add(attr.ino, cookie, attr.kind, name));
        match listed {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let listed = self.list(fh, offset, |cookie, name, attr| {
            reply.add(attr.ino, cookie, name, &TTL, attr, Generation(0))
        });
        match listed {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner()).remove(&fh.0);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let archive = self.views.latest();
        let blocks = archive.content_bytes().div_ceil(4096);
        reply.statfs(blocks, 0, 0, archive.entry_count(), 0, 4096, 255, 4096);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let node = match self.node(ino) {
            Ok(Some((_, node))) => node,
            Ok(None) => return reply.error(Errno::NO_XATTR),
            Err(errno) => return reply.error(errno),
        };
        match node.entry.meta.xattrs.iter().find(|x| x.name == name.as_bytes()) {
            None => reply.error(Errno::NO_XATTR),
            Some(x) => xattr_reply(reply, &x.value, size),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        match self.node(ino) {
            Ok(None) => xattr_reply(reply, &[], size),
            Ok(Some((_, node))) => {
                let names: Vec<u8> =
                    node.entry.meta.xattrs.iter().flat_map(|x| x.name.iter().copied().chain([0])).collect();
                xattr_reply(reply, &names, size);
            }
            Err(errno) => reply.error(errno),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, mask: fuser::AccessFlags, reply: ReplyEmpty) {
        if mask.contains(fuser::AccessFlags::W_OK) {
            return reply.error(Errno::EROFS);
        }
        reply.ok();
    }

    // Every change: the mount is read-only (the kernel refuses most of
    // them itself on a read-only mount; these answer what reaches us).
    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(&self, _: &Request, _: INodeNo, _: &OsStr, _: u32, _: u32, _: u32, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(&self, _: &Request, _: INodeNo, _: &OsStr, _: u32, _: u32, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _: &Request, _: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _: &Request, _: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(&self, _: &Request, _: INodeNo, _: &OsStr, _: &std::path::Path, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _: &Request,
        _: INodeNo,
        _: &OsStr,
        _: INodeNo,
        _: &OsStr,
        _: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(&self, _: &Request, _: INodeNo, _: INodeNo, _: &OsStr, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(&self, _: &Request, _: INodeNo, _: &OsStr, _: &[u8], _: i32, _: u32, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _: &Request, _: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn create(&self, _: &Request, _: INodeNo, _: &OsStr, _: u32, _: u32, _: i32, reply: fuser::ReplyCreate) {
        reply.error(Errno::EROFS);
    }
}

/// An xattr value or name list: its size when asked for 0 bytes, `ERANGE`
/// when it does not fit.
fn xattr_reply(reply: ReplyXattr, bytes: &[u8], size: u32) {
    match size {
        0 => reply.size(bytes.len() as u32),
        n if (n as usize) < bytes.len() => reply.error(Errno::ERANGE),
        _ => reply.data(bytes),
    }
}
