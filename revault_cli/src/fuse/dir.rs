//! Directory listings through the mount: a listing goes on from the last
//! name it gave (a cookie counts the names given), so a large directory
//! is read a step at a time, never whole.

use fuser::{Errno, FileHandle};
use revault_lockbox_api::read::Listed;
use revault_lockbox_api::storage::ReadAt;

use super::fs::LockboxFs;

/// Children listed per step of a directory listing.
const LIST_STEP: usize = 256;

/// An open directory: the listing's position (its cookie) and the last
/// name listed, from which the next step goes on.
pub struct OpenDir {
    pub path: Vec<u8>,
    pub cookie: u64,
    pub last: Option<Vec<u8>>,
}

impl<S: ReadAt + 'static> LockboxFs<S> {
    /// Lists `dir` from its handle's position on, calling `add` with each
    /// child and its cookie until `add` says the reply is full.
    pub(super) fn list(
        &self,
        fh: FileHandle,
        offset: u64,
        mut add: impl FnMut(u64, &Listed) -> bool,
    ) -> Result<(), Errno> {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        let dir = dirs.get_mut(&fh.0).ok_or(Errno::EBADF)?;
        if offset != dir.cookie {
            // A seek back: list again from the start up to that cookie.
            dir.cookie = 0;
            dir.last = None;
            while dir.cookie < offset {
                let want = (offset - dir.cookie).min(LIST_STEP as u64) as usize;
                let step = self.children(&dir.path, dir.last.as_deref(), want)?;
                let Some(last) = step.last() else { break };
                dir.last = Some(name_of(last.path()).to_vec());
                dir.cookie += step.len() as u64;
                if step.len() < want {
                    break;
                }
            }
        }
        loop {
            let step = self.children(&dir.path, dir.last.as_deref(), LIST_STEP)?;
            let full_step = step.len() == LIST_STEP;
            for node in &step {
                if add(dir.cookie + 1, node) {
                    return Ok(());
                }
                dir.cookie += 1;
                dir.last = Some(name_of(node.path()).to_vec());
            }
            if !full_step {
                return Ok(());
            }
        }
    }

    fn children(&self, dir: &[u8], after: Option<&[u8]>, limit: usize) -> Result<Vec<Listed>, Errno> {
        self.browser.children(dir, after, limit).map_err(|e| self.failed("listing a directory", &e))
    }
}

/// The last component of a stored path.
pub fn name_of(path: &[u8]) -> &[u8] {
    path.iter().rposition(|&b| b == b'/').map_or(path, |i| &path[i + 1..])
}
