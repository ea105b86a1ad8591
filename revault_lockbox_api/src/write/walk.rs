//! Walks input paths (tar semantics) in the index order and streams them
//! into an archive.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use super::atomic::write_atomically;
use super::writer::{ArchiveWriter, CreateOptions, Metadata};
use super::Selection;
use crate::format::path_cmp;
use crate::{Error, KeySet, Result};

/// What a create did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateReport {
    /// Entries archived.
    pub entries: u64,
    /// Bytes of file content archived.
    pub content_bytes: u64,
    /// Archive size.
    pub archive_bytes: u64,
    /// Things skipped or changed, one line each (sockets, devices, the
    /// archive itself, files that vanished or changed size while read).
    pub warnings: Vec<String>,
}

/// Creates the archive `archive` from `inputs`, each taken relative to
/// `base_dir` and stored under the name given (a leading `/` stripped, `.`
/// components removed), recursing into directories without following
/// symbolic links, an input that is itself a symbolic link included.
///
/// The archive is written under a temporary name beside `archive`, synced,
/// and renamed into place: an interrupted create leaves no file at `archive`
/// and an existing one untouched until the new one is complete. An existing
/// `archive` is refused ([`Error::AlreadyExists`], before anything is read or
/// written) unless [`CreateOptions::overwrite`] allows replacing it.
pub fn create_archive(
    archive: &Path,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<CreateReport> {
    let keys = keys.into();
    write_atomically(archive, options.overwrite, |out, skip| {
        walk_into(out, base_dir, inputs, &keys, options, skip)
    })
}

/// Streams an archive of `inputs` to `out` (a pipe, stdout, a socket): the
/// same walk as [`create_archive`] without the temporary file.
pub fn write_archive<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: impl Into<KeySet>,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    walk_into(out, base_dir, inputs, &keys.into(), options, &[])
}

fn walk_into<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    keys: &KeySet,
    options: CreateOptions,
    skip: &[(u64, u64)],
) -> Result<(W, CreateReport)> {
    if inputs.is_empty() {
        return Err(Error::BadInput {
            path: PathBuf::new(),
            reason: "nothing to archive: no input paths given",
        });
    }
    let meta = fs::metadata(base_dir).map_err(Error::io("opening directory", base_dir))?;
    if !meta.is_dir() {
        return Err(Error::BadInput { path: base_dir.to_path_buf(), reason: "not a directory" });
    }
    let mut skip = skip.to_vec();
    skip.extend_from_slice(&options.skip_files);
    let roots = ordered_roots(base_dir, inputs)?;
    let selection = options.selection.clone();
    let mut walk = Walk {
        writer: ArchiveWriter::new(out, keys.clone(), options)?,
        report: CreateReport::default(),
        links: HashMap::new(),
        skip: &skip,
        selection: &selection,
    };
    for (full, name) in roots {
        walk.add_tree(&full, name)?;
    }
    let Walk { writer, mut report, .. } = walk;
    let (out, archive_bytes) = writer.finish_counted()?;
    report.archive_bytes = archive_bytes;
    Ok((out, report))
}

/// The inputs as (file-system path, stored name), in the index order of
/// their stored names, without those that another input contains: walked
/// one after the other, they give every entry in the index order.
fn ordered_roots(base_dir: &Path, inputs: &[PathBuf]) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut roots = Vec::with_capacity(inputs.len());
    for input in inputs {
        let full = base_dir.join(input);
        fs::symlink_metadata(&full).map_err(Error::io("reading", &full))?;
        roots.push((full, stored_name(input)?));
    }
    roots.sort_by(|a, b| path_cmp(&a.1, &b.1));
    let mut kept: Vec<(PathBuf, Vec<u8>)> = Vec::with_capacity(roots.len());
    for (full, name) in roots {
        let inside = kept.last().is_some_and(|(_, outer)| {
            outer.is_empty()
                || name == *outer
                || (name.starts_with(outer) && name.get(outer.len()) == Some(&b'/'))
        });
        if !inside {
            kept.push((full, name));
        }
    }
    Ok(kept)
}

/// The stored name of an input: tar semantics, `..` refused.
fn stored_name(input: &Path) -> Result<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in input.components() {
        match c {
            Component::Normal(s) => parts.push(s.as_bytes()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                return Err(Error::BadInput {
                    path: input.to_path_buf(),
                    reason: "contains `..`; use -C to change directory instead",
                });
            }
        }
    }
    Ok(parts.join(&b'/'))
}

struct Walk<'a, W: Write> {
    writer: ArchiveWriter<W>,
    report: CreateReport,
    /// First stored path of each multiply-linked file, by (device, inode).
    links: HashMap<(u64, u64), Vec<u8>>,
    skip: &'a [(u64, u64)],
    /// What the user left out (`--exclude` and the like).
    selection: &'a Selection,
}

impl<W: Write> Walk<'_, W> {
    fn add_tree(&mut self, root: &Path, name: Vec<u8>) -> Result<()> {
        let walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .follow_root_links(false)
            .sort_by_file_name()
            .same_file_system(self.selection.stays_on_one_file_system());
        let mut items = walk.into_iter();
        while let Some(item) = items.next() {
            let item = match item {
                Ok(item) => item,
                Err(e) if e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) => {
                    let path = e.path().unwrap_or(root).display().to_string();
                    self.report.warnings.push(format!("{path}: vanished while archiving, not stored"));
                    continue;
                }
                Err(e) => {
                    let path = e.path().unwrap_or(root).to_path_buf();
                    return Err(Error::Io { action: "reading", path, source: e.into() });
                }
            };
            let rel = item.path().strip_prefix(root).expect("walkdir yields paths under its root");
            let mut stored = name.clone();
            for c in rel.components() {
                if !stored.is_empty() {
                    stored.push(b'/');
                }
                stored.extend_from_slice(c.as_os_str().as_bytes());
            }
            if stored.is_empty() {
                continue;
            }
            if self.selection.excludes(&stored) {
                if item.file_type().is_dir() {
                    items.skip_current_dir();
                }
                continue;
            }
            self.add_one(item.path(), stored)?;
        }
        Ok(())
    }

    fn add_one(&mut self, path: &Path, stored: Vec<u8>) -> Result<()> {
        let md = match fs::symlink_metadata(path) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.warn(path, "vanished while archiving, not stored");
                return Ok(());
            }
            Err(e) => return Err(Error::io("reading", path)(e)),
        };
        let meta = Metadata::from_fs(&md);
        let ft = md.file_type();
        if self.skip.contains(&(md.dev(), md.ino())) {
            self.warn(path, "the archive itself, not stored");
            return Ok(());
        }
        if ft.is_dir() {
            self.writer.add_dir(&stored, &meta)?;
        } else if ft.is_symlink() {
            let target = fs::read_link(path).map_err(Error::io("reading link", path))?;
            self.writer.add_symlink(&stored, &meta, target.as_os_str().as_bytes())?;
        } else if ft.is_file() {
            let linked = md.nlink() > 1;
            if linked {
                if let Some(first) = self.links.get(&(md.dev(), md.ino())) {
                    let first = first.clone();
                    self.report.entries += 1;
                    return self.writer.add_hardlink(&stored, &meta, first);
                }
                self.links.insert((md.dev(), md.ino()), stored.clone());
            }
            let file = File::open(path).map_err(Error::io("opening", path))?;
            // A file that grows while read is stored at the size it had
            // (tar's rule): the walk must end.
            let mut content = file.take(md.len());
            let with_path = |e| match e {
                Error::Stream { source, .. } => {
                    Error::Io { action: "reading", path: path.to_path_buf(), source }
                }
                e => e,
            };
            let n = if linked {
                self.writer.add_linked_file(&stored, &meta, md.len(), &mut content)
            } else {
                self.writer.add_file(&stored, &meta, md.len(), &mut content)
            }
            .map_err(with_path)?;
            let grew = content.into_inner().read(&mut [0u8]).map_err(Error::io("reading", path))? > 0;
            if n != md.len() || grew {
                self.warn(path, &format!("changed size while being archived; its first {n} bytes stored"));
            }
            self.report.content_bytes += n;
        } else {
            let what = if ft.is_fifo() {
                "a FIFO"
            } else if ft.is_socket() {
                "a socket"
            } else {
                "a device"
            };
            self.warn(path, &format!("{what}, not stored"));
            return Ok(());
        }
        self.report.entries += 1;
        Ok(())
    }

    fn warn(&mut self, path: &Path, what: &str) {
        self.report.warnings.push(format!("{}: {what}", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_follow_tar() {
        assert_eq!(stored_name(Path::new("/etc/hosts")).unwrap(), b"etc/hosts");
        assert_eq!(stored_name(Path::new("./a/./b/")).unwrap(), b"a/b");
        assert!(stored_name(Path::new("a/../b")).is_err());
    }

    #[test]
    fn inputs_are_merged_into_index_order() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "a/x", "b"] {
            fs::create_dir(dir.path().join(d)).unwrap();
        }
        fs::write(dir.path().join("a.txt"), b"").unwrap();
        let inputs: Vec<PathBuf> = ["b", "a.txt", "./a/x", "a", "b/"].iter().map(PathBuf::from).collect();
        let names: Vec<Vec<u8>> =
            ordered_roots(dir.path(), &inputs).unwrap().into_iter().map(|r| r.1).collect();
        assert_eq!(names, [b"a".to_vec(), b"a.txt".to_vec(), b"b".to_vec()]);
    }
}
