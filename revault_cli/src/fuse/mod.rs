//! The FUSE side of `lockbox mount`: an archive as a read-only FUSE file system, served in
//! the foreground until it is unmounted (`lockbox umount`, `fusermount3
//! -u`, `umount`) or the process gets SIGINT, SIGTERM or SIGHUP, which
//! unmount it. The library is reached only through
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

use anyhow::{Context, Result};
use fuser::{Config, MountOption, SessionACL};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::Quoted;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

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
    let mut session =
        fuser::Session::new(fs, mountpoint, &config).with_context(|| format!("mounting at {shown}"))?;
    let mut unmounter = session.unmount_callable();
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP]).context("watching for signals")?;
    let handle = signals.handle();
    let watcher = std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            // The session loop ends once the kernel lets the mount go.
            if let Err(e) = unmounter.unmount() {
                eprintln!("lockbox: unmounting: {e}");
            }
        }
    });
    let served = session.run().with_context(|| format!("serving the mount at {shown}"));
    handle.close();
    let _ = watcher.join();
    served
}
