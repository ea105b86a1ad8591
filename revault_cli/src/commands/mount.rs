//! `mount` and `umount`: an archive as a read-only file system (see
//! [`crate::fuse`]), and the unmount of one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use revault_lockbox_api::Quoted;

use super::Outcome;
use crate::flags::{MountArgs, UmountArgs};

/// How the mount table's source field starts for a lockbox mount; the
/// archive's name follows (commas and blanks, which mount options cannot
/// hold, as `_`).
const SOURCE: &str = "lockbox:";

#[cfg(feature = "mount")]
pub fn run(a: MountArgs) -> Result<Outcome> {
    use std::sync::Arc;

    use revault_lockbox_api::read::Browser;
    use revault_lockbox_api::WorkloadProfile;

    use crate::fuse::Views;
    use crate::progress::Opening;

    let shown = Quoted::path(&a.mountpoint);
    let is_dir = std::fs::metadata(&a.mountpoint).with_context(|| format!("mounting at {shown}"))?.is_dir();
    if !is_dir {
        bail!("mounting at {shown}: not a directory");
    }
    if mounted_at(&absolute(&a.mountpoint)?)?.is_some() {
        bail!("mounting at {shown}: a lockbox archive is mounted there already");
    }
    let asked = a.threads.count();
    let (archive, name) = super::open_counted(
        &a.archive,
        &a.read,
        WorkloadProfile::RandomRead,
        asked,
        None,
        Opening::Shown,
        super::Records::Repair,
    )?;
    let threads = archive.tuning().threads;
    let views = if a.all_sessions {
        let options = super::open_options(&a.read, WorkloadProfile::RandomRead, asked, None)?;
        Views::all_states(archive, options).with_context(|| format!("reading the sessions of {name}"))?
    } else {
        Views::One(Arc::new(Browser::new(archive)))
    };
    let owners = crate::fuse::Owners { uid: a.uid, gid: a.gid };
    let source = a.archive.to_string_lossy().replace([',', ' ', '\t', '\n'], "_");
    crate::fuse::serve(views, name, &format!("{SOURCE}{source}"), &a.mountpoint, owners, threads)?;
    Ok(Outcome::Success)
}

#[cfg(not(feature = "mount"))]
pub fn run(_a: MountArgs) -> Result<Outcome> {
    bail!("mounting: this lockbox was built without FUSE support (the `mount` cargo feature)")
}

pub fn umount(a: UmountArgs) -> Result<Outcome> {
    let shown = Quoted::path(&a.mountpoint);
    let path = absolute(&a.mountpoint)?;
    if mounted_at(&path)?.is_none() {
        bail!("unmounting {shown}: no lockbox archive is mounted there");
    }
    if rustix::process::geteuid().is_root() {
        rustix::mount::unmount(&path, rustix::mount::UnmountFlags::empty()).map_err(|e| match e {
            rustix::io::Errno::BUSY => {
                anyhow::anyhow!("unmounting {shown}: busy (a file or directory in it is in use)")
            }
            e => anyhow::Error::from(std::io::Error::from(e)).context(format!("unmounting {shown}")),
        })?;
        return Ok(Outcome::Success);
    }
    let status = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg(&path)
        .status()
        .with_context(|| format!("unmounting {shown}: running fusermount3 (from the fuse3 package)"))?;
    if !status.success() {
        bail!("unmounting {shown}: fusermount3 -u failed");
    }
    Ok(Outcome::Success)
}

/// `path` made absolute without following its last component (a mount
/// whose server is gone cannot be stat'ed).
fn absolute(path: &Path) -> Result<PathBuf> {
    let what = || format!("finding {}", Quoted::path(path));
    let name = path.file_name().filter(|n| *n != "..");
    let Some(name) = name else { return std::fs::canonicalize(path).with_context(what) };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok(std::fs::canonicalize(parent).with_context(what)?.join(name))
}

/// The source of the lockbox mount at `path`, from the mount table.
fn mounted_at(path: &Path) -> Result<Option<String>> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    Ok(table.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let point = unescape(before.split(' ').nth(4)?);
        let mut rest = after.split(' ');
        let (fstype, source) = (rest.next()?, rest.next()?);
        let ours = (fstype == "fuse" || fstype.starts_with("fuse.")) && source.starts_with(SOURCE);
        (ours && Path::new(&point) == path).then(|| unescape(source))
    }))
}

/// A mount-table field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal =
            bytes.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_table_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/my\040backup"), "/mnt/my backup");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"a\\b\9"), r"a\\b\9");
    }
}
