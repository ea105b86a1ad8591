//! Directory listings through the mount: a listing goes on from the last
//! name it gave (a cookie counts the names given), so a large directory
//! is read a step at a time, never whole. Every listing starts with `.`
//! and `..`, as on any other file system (cookies 1 and 2). The top of a
//! mount of every state lists the states.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use fuser::{Errno, FileAttr, FileHandle};
use revault_lockbox_api::read::Listed;
use revault_lockbox_api::storage::ReadAt;

use super::fs::LockboxFs;
use super::inode::DirAt;

/// `.` and `..`, listed first.
const DOTS: u64 = 2;

/// Children listed per step of a directory listing.
const LIST_STEP: usize = 256;

/// An open directory: what it is, the listing's position (its cookie),
/// the last name listed, from which the next step goes on, and the names
/// of the last step not yet given (a reply holds a few dozen names, a
/// step hundreds: the next reply takes them, not a new step).
pub struct OpenDir {
    at: DirAt,
    /// What `.` and `..` name.
    dots: [FileAttr; 2],
    cookie: u64,
    last: Option<Vec<u8>>,
    ahead: VecDeque<Listed>,
    /// The last step was short: nothing follows what is ahead.
    ended: bool,
}

impl OpenDir {
    pub(super) fn new(at: DirAt, dots: [FileAttr; 2]) -> OpenDir {
        OpenDir { at, dots, cookie: 0, last: None, ahead: VecDeque::new(), ended: false }
    }
}

impl<S: ReadAt + Clone + 'static> LockboxFs<S> {
    /// Lists the directory of handle `fh` from its position on, calling
    /// `add` with each name, its cookie and attributes until `add` says
    /// the reply is full.
    pub(super) fn list(
        &self,
        fh: FileHandle,
        offset: u64,
        mut add: impl FnMut(u64, &OsStr, &FileAttr) -> bool,
    ) -> Result<(), Errno> {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        let dir = dirs.get_mut(&fh.0).ok_or(Errno::EBADF)?;
        for (at, name) in [".", ".."].into_iter().enumerate().skip(offset as usize) {
            if add(at as u64 + 1, OsStr::new(name), &dir.dots[at]) {
                return Ok(());
            }
        }
        // The names after the dots, counted from 0.
        let offset = offset.saturating_sub(DOTS);
        let (view, path) = match &dir.at {
            DirAt::States => {
                for (i, state) in self.views.states().iter().enumerate().skip(offset as usize) {
                    let view = i as u64 + 1;
                    if add(DOTS + view, OsStr::new(&state.name), &self.state_attr(view)) {
                        break;
                    }
                }
                return Ok(());
            }
            DirAt::In(view, path) => (*view, path.clone()),
        };
        if offset != dir.cookie {
            // A seek back: list again from the start up to that cookie.
            dir.cookie = 0;
            dir.last = None;
            dir.ahead.clear();
            dir.ended = false;
            while dir.cookie < offset {
                let want = (offset - dir.cookie).min(LIST_STEP as u64) as usize;
                let step = self.children(view, &path, dir.last.as_deref(), want)?;
                let Some(last) = step.last() else { break };
                dir.last = Some(name_of(last.path()).to_vec());
                dir.cookie += step.len() as u64;
                if step.len() < want {
                    dir.ended = true;
                    break;
                }
            }
        }
        loop {
            if dir.ahead.is_empty() {
                if dir.ended {
                    return Ok(());
                }
                let step = self.children(view, &path, dir.last.as_deref(), LIST_STEP)?;
                dir.ended = step.len() < LIST_STEP;
                dir.ahead = step.into();
            }
            let Some(listed) = dir.ahead.front() else { return Ok(()) };
            let name = OsStr::from_bytes(name_of(listed.path()));
            if add(DOTS + dir.cookie + 1, name, &self.attr_of_listed(view, listed)?) {
                return Ok(());
            }
            dir.cookie += 1;
            dir.last = Some(name.as_bytes().to_vec());
            dir.ahead.pop_front();
        }
    }

    fn children(
        &self,
        view: u64,
        dir: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<Listed>, Errno> {
        self.browser(view)?.children(dir, after, limit).map_err(|e| self.failed("listing a directory", &e))
    }
}

/// The last component of a stored path.
pub fn name_of(path: &[u8]) -> &[u8] {
    path.iter().rposition(|&b| b == b'/').map_or(path, |i| &path[i + 1..])
}
