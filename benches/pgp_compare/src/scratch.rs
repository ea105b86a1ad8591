//! Where archives and extractions go while a run lasts, and when they are
//! deleted.
//!
//! Archives are written under `<root>/work` (the disk). Extractions go to
//! `--extract-root DIR` when given (e.g. a tmpfs, so that no tool pays for
//! the disk), else next to the archives. `--mount-tmpfs` mounts a fresh
//! tmpfs there for the run (root only).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::util::{fresh_dir, remove_tree};

/// Bytes of extractions kept in the trash at most (file content plus a
/// 4 KiB block a file); beyond this they are deleted at once.
const TRASH_BUDGET: u64 = 2 << 30;

/// The directories of one run.
pub struct Scratch {
    /// Archives, gpg warm-ups, the passphrase file: on the disk.
    pub work: PathBuf,
    /// Extractions go below this.
    pub extract: PathBuf,
    /// The file system type of `extract` (`ext4`, `tmpfs`, ...).
    pub extract_fs: String,
    /// A tmpfs this run mounted, unmounted on drop.
    mounted: Option<PathBuf>,
    trash: Trash,
}

impl Scratch {
    /// Makes fresh `work` and extraction directories; mounts a tmpfs on
    /// `extract_root` (default `<root>/tmpfs`) when `mount_tmpfs`.
    pub fn new(root: &Path, extract_root: Option<&Path>, mount_tmpfs: bool) -> Result<Scratch> {
        let work = root.join("work");
        // A previous run's scratch is deleted at the end, not before
        // measuring (see `Trash`).
        if work.exists() {
            let stale = root.join(format!("stale-work-{}", std::process::id()));
            fs::rename(&work, &stale).with_context(|| format!("moving {} aside", work.display()))?;
        }
        fresh_dir(&work)?;
        let mut mounted = None;
        let extract = match (extract_root, mount_tmpfs) {
            (None, false) => work.join("extract"),
            (dir, _) => {
                let dir = dir.map_or_else(|| root.join("tmpfs"), Path::to_path_buf);
                fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
                if mount_tmpfs && fs_type(&dir) != "tmpfs" {
                    mount_tmpfs_on(&dir)?;
                    mounted = Some(dir.clone());
                }
                remove_abandoned(&dir);
                dir.join(format!("pgp_compare-{}", std::process::id()))
            }
        };
        fresh_dir(&extract)?;
        let extract_fs = fs_type(&extract);
        // On a tmpfs, freed inodes cost nothing to reuse, and kept
        // extractions would hold memory.
        let keep = extract_fs != "tmpfs";
        let trash = Trash { dir: extract.join("trash"), bytes: 0, count: 0, keep };
        Ok(Scratch { work, extract, extract_fs, mounted, trash })
    }

    /// Done with the verified extraction `dest` of `bytes` in `files` files.
    pub fn discard(&mut self, dest: &Path, bytes: u64, files: u64) -> Result<()> {
        self.trash.take(dest, bytes + files * 4096)
    }

    /// Removes the run's directories and unmounts its tmpfs. Without
    /// this (a failed run) they are left for inspection.
    pub fn finish(mut self) {
        let _ = remove_tree(&self.extract);
        let _ = remove_tree(&self.work);
        if let Some(dir) = self.mounted.take() {
            match Command::new("umount").arg(&dir).status() {
                Ok(s) if s.success() => {}
                _ => eprintln!("note: could not unmount the tmpfs on {}", dir.display()),
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = &self.mounted {
            eprintln!("note: the tmpfs on {0} stays mounted for inspection: umount {0}", dir.display());
        }
    }
}

/// Where verified extractions go until the run ends. Deleting thousands of
/// files shortly (under about 30 s) before an extraction slows it down:
/// ext4 without a journal avoids reusing recently freed inodes and scans
/// for others (`recently_deleted`, `find_inode_bit`). On the dev machine
/// that scan took half the CPU time of a `small-tree` extraction and made
/// `tar -xf` 8 times slower.
struct Trash {
    dir: PathBuf,
    bytes: u64,
    count: u32,
    /// False: delete at once.
    keep: bool,
}

impl Trash {
    fn take(&mut self, dest: &Path, bytes: u64) -> Result<()> {
        if !self.keep || self.bytes + bytes > TRASH_BUDGET {
            return remove_tree(dest);
        }
        fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))?;
        let to = self.dir.join(self.count.to_string());
        fs::rename(dest, &to).with_context(|| format!("moving {} to {}", dest.display(), to.display()))?;
        self.bytes += bytes;
        self.count += 1;
        Ok(())
    }
}

/// Removes `pgp_compare-PID` directories in `dir` left by runs that failed
/// (their process is gone): on a tmpfs they hold memory.
fn remove_abandoned(dir: &Path) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix("pgp_compare-"));
        let pid = pid.filter(|pid| pid.parse::<u32>().is_ok());
        if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = remove_tree(&entry.path());
        }
    }
}

/// The type of the file system `path` is on, from `/proc/self/mountinfo`
/// (the longest mount point that holds it); `unknown` if not found.
pub fn fs_type(path: &Path) -> String {
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        // `id parent major:minor root MOUNT_POINT options ... - FSTYPE source ...`
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let (Some(point), Some(kind)) = (left.split(' ').nth(4), right.split(' ').next()) else { continue };
        let point = point.replace("\\040", " ");
        if path.starts_with(&point) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), kind.to_string()));
        }
    }
    best.map_or_else(|| "unknown".into(), |(_, kind)| kind)
}

fn mount_tmpfs_on(dir: &Path) -> Result<()> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|uids| uids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0");
    if !root {
        bail!("--mount-tmpfs needs root; use --extract-root /dev/shm (a tmpfs on most Linux systems)");
    }
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "mode=0755", "pgp_compare"])
        .arg(dir)
        .output()
        .context("running mount")?;
    if !out.status.success() {
        bail!("mounting a tmpfs on {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}
