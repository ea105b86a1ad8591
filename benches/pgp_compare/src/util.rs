//! Small helpers: shell quoting, finding tools, creating and removing files.

use std::fs;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Shell-quotes anything path-like.
pub fn q(s: impl AsRef<std::ffi::OsStr>) -> String {
    let s = s.as_ref().to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        return s.into_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub fn last_number(s: &str) -> Option<u64> {
    s.split_whitespace().rev().find_map(|w| w.parse().ok())
}

pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

pub fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        remove_tree(dir)?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Removes a tree, first making its directories writable (corpora and
/// extractions contain read-only directories).
pub fn remove_tree(dir: &Path) -> Result<()> {
    if fs::remove_dir_all(dir).is_ok() {
        return Ok(());
    }
    fn open_up(dir: &Path) {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o755));
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&e.path());
                }
            }
        }
    }
    open_up(dir);
    fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .with_context(|| format!("writing {}", path.display()))
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    fs::write(&tmp, bytes)
        .and_then(|()| fs::rename(&tmp, path))
        .with_context(|| format!("writing {}", path.display()))
}
