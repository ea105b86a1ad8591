//! The FUSE side of `lockbox mount`: an archive as a read-only FUSE file system, served in
//! the foreground until it is unmounted (`lockbox umount`, `fusermount3
//! -u`, `umount`) or the process gets SIGINT, SIGTERM or SIGHUP, which
//! unmount it (asked of [`crate::signals`], the one taker of signals) and
//! end `mount` with exit 0. The library is reached only through
//! `read::Browser`; the FUSE crate (`fuser`, no libfuse: as root it mounts
//! with mount(2) itself, else through `fusermount3`) stays in this module.

mod attr;
mod dir;
mod fs;
mod implicit;
mod inode;
mod seek;
mod views;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use fuser::{Config, MountOption, SessionACL, SessionUnmounter};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::Quoted;

use crate::signals;

pub use attr::Owners;
pub use views::Views;

/// The file system type the mount table shows where the mount helper
/// sets it (`fuse.lockbox`; mount(2) as root shows `fuse`).
pub const SUBTYPE: &str = "lockbox";

/// Mounts the `views` of an archive (named `name` in messages, `source`
/// in the mount table) at `mountpoint` and serves them on `threads`
/// threads until it is unmounted.
pub fn serve<S: ReadAt + Clone + 'static>(
    views: Views<S>,
    name: String,
    source: &str,
    mountpoint: &Path,
    owners: Owners,
    threads: usize,
) -> Result<()> {
    let shown = Quoted::path(mountpoint).to_string();
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::NoAtime,
        MountOption::DefaultPermissions,
        MountOption::FSName(source.into()),
        MountOption::Subtype(SUBTYPE.into()),
    ];
    config.acl = SessionACL::Owner;
    config.n_threads = Some(threads.max(2));
    let fs = fs::LockboxFs::new(views, name, owners);
    // Asked for before the mount is made: a signal meanwhile unmounts it
    // as soon as it exists, instead of ending the process and leaving it.
    let unmount = Arc::new(Mutex::new(Unmount::default()));
    let asker = Arc::clone(&unmount);
    let stopping = signals::stop_with(move || unmount_lock(&asker).ask());
    let mut session =
        fuser::Session::new(fs, mountpoint, &config).with_context(|| format!("mounting at {shown}"))?;
    unmount_lock(&unmount).ready(session.unmount_callable());
    let served = session.run().with_context(|| format!("serving the mount at {shown}"));
    drop(stopping);
    served
}

/// The unmount that SIGINT, SIGTERM or SIGHUP asks for: at once where the
/// mount exists, else as soon as it does (a signal may come while it is
/// being made).
#[derive(Default)]
struct Unmount {
    asked: bool,
    unmounter: Option<SessionUnmounter>,
}

impl Unmount {
    fn ask(&mut self) {
        self.asked = true;
        self.run();
    }

    fn ready(&mut self, unmounter: SessionUnmounter) {
        self.unmounter = Some(unmounter);
        if self.asked {
            self.run();
        }
    }

    /// The session loop ends once the kernel lets the mount go.
    fn run(&mut self) {
        if let Some(unmounter) = &mut self.unmounter {
            if let Err(e) = unmounter.unmount() {
                eprintln!("lockbox: unmounting: {e}");
            }
        }
    }
}

fn unmount_lock(unmount: &Mutex<Unmount>) -> MutexGuard<'_, Unmount> {
    unmount.lock().unwrap_or_else(|e| e.into_inner())
}
