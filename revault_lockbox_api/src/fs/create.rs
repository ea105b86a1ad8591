//! Walks input paths (tar semantics) and streams them into an archive.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use crate::{ArchiveWriter, CreateOptions, Error, Metadata, Password, Result};

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
    /// Things skipped, one line each (sockets, devices, the archive itself).
    pub warnings: Vec<String>,
}

/// Creates the archive `archive` from `inputs`, each taken relative to
/// `base_dir` and stored under the name given (a leading `/` stripped, `.`
/// components removed), recursing into directories without following
/// symbolic links.
///
/// The archive is written under a temporary name beside `archive`, synced,
/// and renamed into place: an interrupted create leaves no file at `archive`
/// and an existing one untouched until the new one is complete.
pub fn create_archive(
    archive: &Path,
    base_dir: &Path,
    inputs: &[PathBuf],
    password: &Password,
    options: CreateOptions,
) -> Result<CreateReport> {
    let dir = match archive.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = archive
        .file_name()
        .ok_or_else(|| Error::InvalidInput(format!("{} is not a file name", archive.display())))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(Error::io("creating a temporary file in", dir))?;
    let own = tmp.as_file().metadata().map_err(Error::io("inspecting", tmp.path()))?;
    let mut skip = vec![(own.dev(), own.ino())];
    if let Ok(old) = fs::metadata(archive) {
        skip.push((old.dev(), old.ino()));
    }
    let out = BufWriter::with_capacity(1 << 20, SyncingWriter::new(tmp)?);
    let (out, report) = walk_into(out, base_dir, inputs, password, options, &skip)?;
    let tmp = out.into_inner().map_err(|e| Error::io("writing", archive)(e.into_error()))?.finish();
    tmp.as_file().sync_all().map_err(Error::io("syncing", tmp.path()))?;
    tmp.persist(archive).map_err(|e| Error::io("renaming the finished archive to", archive)(e.error))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(report)
}

/// Writes to a temporary file and, every [`SYNC_EVERY`] bytes, has a
/// background thread sync what was written so far: the disk works while
/// pages are compressed, and the final sync has little left to do.
struct SyncingWriter {
    tmp: tempfile::NamedTempFile,
    unsynced: u64,
    kick: Option<std::sync::mpsc::SyncSender<()>>,
    syncer: Option<std::thread::JoinHandle<()>>,
}

/// Bytes written between background syncs.
const SYNC_EVERY: u64 = 64 << 20;

impl SyncingWriter {
    fn new(tmp: tempfile::NamedTempFile) -> Result<SyncingWriter> {
        let file = tmp.as_file().try_clone().map_err(Error::io("opening", tmp.path()))?;
        let (kick, kicks) = std::sync::mpsc::sync_channel::<()>(1);
        let syncer = std::thread::Builder::new()
            .name("lockbox-sync".into())
            .spawn(move || {
                // Errors surface in the final, foreground sync.
                while kicks.recv().is_ok() {
                    let _ = file.sync_data();
                }
            })
            .map_err(Error::stream("starting the sync thread"))?;
        Ok(SyncingWriter { tmp, unsynced: 0, kick: Some(kick), syncer: Some(syncer) })
    }

    /// Stops the background syncs and returns the file. (Dropped without
    /// this, the writer's closed channel ends the thread after its current
    /// sync.)
    fn finish(mut self) -> tempfile::NamedTempFile {
        self.kick = None;
        if let Some(t) = self.syncer.take() {
            let _ = t.join();
        }
        self.tmp
    }
}

impl Write for SyncingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.tmp.write(buf)?;
        self.unsynced += n as u64;
        if self.unsynced >= SYNC_EVERY {
            self.unsynced = 0;
            if let Some(kick) = &self.kick {
                // A sync already queued covers this data too.
                let _ = kick.try_send(());
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// Streams an archive of `inputs` to `out` (a pipe, stdout, a socket): the
/// same walk as [`create_archive`] without the temporary file.
pub fn write_archive<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    password: &Password,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    walk_into(out, base_dir, inputs, password, options, &[])
}

fn walk_into<W: Write>(
    out: W,
    base_dir: &Path,
    inputs: &[PathBuf],
    password: &Password,
    options: CreateOptions,
    skip: &[(u64, u64)],
) -> Result<(W, CreateReport)> {
    if inputs.is_empty() {
        return Err(Error::InvalidInput("nothing to archive: no input paths given".into()));
    }
    let meta = fs::metadata(base_dir).map_err(Error::io("opening directory", base_dir))?;
    if !meta.is_dir() {
        return Err(Error::InvalidInput(format!("{} is not a directory", base_dir.display())));
    }
    let mut skip = skip.to_vec();
    skip.extend_from_slice(&options.skip_files);
    let skip = &skip[..];
    let stored: Vec<Vec<u8>> = inputs.iter().map(|p| stored_name(p)).collect::<Result<_>>()?;
    for input in inputs {
        let full = base_dir.join(input);
        fs::symlink_metadata(&full).map_err(Error::io("reading", &full))?;
    }
    let mut walk = Walk {
        writer: ArchiveWriter::new(out, password, options)?,
        report: CreateReport::default(),
        links: HashMap::new(),
        skip,
    };
    for (input, name) in inputs.iter().zip(stored) {
        walk.add_tree(&base_dir.join(input), name)?;
    }
    let Walk { writer, mut report, .. } = walk;
    let (out, archive_bytes) = writer.finish_counted()?;
    report.archive_bytes = archive_bytes;
    Ok((out, report))
}

/// The stored name of an input: tar semantics, `..` refused.
fn stored_name(input: &Path) -> Result<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in input.components() {
        match c {
            Component::Normal(s) => parts.push(s.as_bytes()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                return Err(Error::InvalidInput(format!(
                    "input path {} contains `..`; use -C to change directory instead",
                    input.display()
                )));
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
}

impl<W: Write> Walk<'_, W> {
    fn add_tree(&mut self, root: &Path, name: Vec<u8>) -> Result<()> {
        for item in walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name() {
            let item = item.map_err(|e| {
                let path = e.path().unwrap_or(root).to_path_buf();
                Error::Io { action: "reading", path, source: e.into() }
            })?;
            let rel = item.path().strip_prefix(root).expect("walkdir yields paths under its root");
            let mut stored = name.clone();
            for c in rel.components() {
                if !stored.is_empty() {
                    stored.push(b'/');
                }
                stored.extend_from_slice(c.as_os_str().as_bytes());
            }
            // An input named twice, or inside another input, is stored once.
            if stored.is_empty() || self.writer.contains(&stored) {
                continue;
            }
            self.add_one(item.path(), stored)?;
        }
        Ok(())
    }

    fn add_one(&mut self, path: &Path, stored: Vec<u8>) -> Result<()> {
        let md = fs::symlink_metadata(path).map_err(Error::io("reading", path))?;
        let meta = Metadata::from_fs(&md);
        let ft = md.file_type();
        if self.skip.contains(&(md.dev(), md.ino())) {
            self.report.warnings.push(format!("{}: the archive itself, not stored", path.display()));
            return Ok(());
        }
        if ft.is_dir() {
            self.writer.add_dir(&stored, &meta)?;
        } else if ft.is_symlink() {
            let target = fs::read_link(path).map_err(Error::io("reading link", path))?;
            self.writer.add_symlink(&stored, &meta, target.as_os_str().as_bytes())?;
        } else if ft.is_file() {
            if md.nlink() > 1 {
                if let Some(first) = self.links.get(&(md.dev(), md.ino())) {
                    let first = first.clone();
                    self.report.entries += 1;
                    return self.writer.add_hardlink(&stored, &meta, first);
                }
                self.links.insert((md.dev(), md.ino()), stored.clone());
            }
            let file = File::open(path).map_err(Error::io("opening", path))?;
            let n = self.writer.add_file(&stored, &meta, md.len(), file).map_err(|e| match e {
                Error::Io { action, source, .. } => Error::Io { action, path: path.to_path_buf(), source },
                e => e,
            })?;
            self.report.content_bytes += n;
        } else {
            let what = if ft.is_fifo() {
                "a FIFO"
            } else if ft.is_socket() {
                "a socket"
            } else {
                "a device"
            };
            self.report.warnings.push(format!("{}: {what}, not stored", path.display()));
            return Ok(());
        }
        self.report.entries += 1;
        Ok(())
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
}
