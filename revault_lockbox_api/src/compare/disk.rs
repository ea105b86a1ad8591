//! A directory on disk as a diff's new view: the entries under some of its
//! names, in index order (each directory read sorted by name, its contents
//! right after it, as a create stores them), and a file's digest, made as
//! the stored entry's was (FORMAT.md §3.5b for a sparse one), read only
//! when a diff needs it. Nothing is followed: a symbolic link is an entry.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::{Entry, EntryKind, Metadata, DIGEST_LEN};
use crate::sparse::ContentHasher;

const READ_LEN: usize = 1 << 20;

/// The names in `dir`, sorted bytewise (index order for one component).
pub(super) fn names(dir: &Path) -> Result<Vec<Vec<u8>>> {
    let io =
        |source: io::Error| Error::Io { action: "reading the directory", path: dir.to_path_buf(), source };
    let mut names = Vec::new();
    for found in fs::read_dir(dir).map_err(io)? {
        names.push(found.map_err(io)?.file_name().as_bytes().to_vec());
    }
    names.sort();
    Ok(names)
}

/// The entries of `dir` under each root (stored paths, in index order, none
/// inside another), as an archive made with `-C dir` would hold them;
/// devices, FIFOs and sockets are left out, as a create leaves them out.
pub(super) struct Entries {
    dir: PathBuf,
    roots: std::vec::IntoIter<Vec<u8>>,
    /// The root being walked, and its walk.
    walk: Option<(Vec<u8>, walkdir::IntoIter)>,
    /// A file left out, by device and inode (the archive itself).
    leave_out: Option<(u64, u64)>,
}

impl Entries {
    pub(super) fn new(dir: &Path, roots: Vec<Vec<u8>>, leave_out: Option<(u64, u64)>) -> Entries {
        Entries { dir: dir.to_path_buf(), roots: roots.into_iter(), walk: None, leave_out }
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some((root, walk)) = &mut self.walk {
                match walk.next() {
                    None => self.walk = None,
                    Some(found) => {
                        let found = found.map_err(|e| walk_error(&self.dir, e))?;
                        if let Some(entry) = entry(root, &found, self.leave_out)? {
                            return Ok(Some(entry));
                        }
                    }
                }
                continue;
            }
            let Some(root) = self.roots.next() else { return Ok(None) };
            let full = self.dir.join(OsStr::from_bytes(&root));
            match fs::symlink_metadata(&full) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(Error::Io { action: "reading", path: full, source }),
                Ok(_) => {}
            }
            let walk = walkdir::WalkDir::new(full).follow_links(false).follow_root_links(false);
            self.walk = Some((root, walk.sort_by_file_name().into_iter()));
        }
    }
}

impl Iterator for Entries {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        self.next_entry().transpose()
    }
}

fn walk_error(dir: &Path, e: walkdir::Error) -> Error {
    let path = e.path().map_or_else(|| dir.to_path_buf(), Path::to_path_buf);
    Error::Io { action: "reading", path, source: e.into() }
}

/// The entry `found` (under `root`) stands for, or `None` for a kind an
/// archive does not hold and for the file `leave_out` names.
fn entry(root: &[u8], found: &walkdir::DirEntry, leave_out: Option<(u64, u64)>) -> Result<Option<Entry>> {
    let io = |source: io::Error| Error::Io { action: "reading", path: found.path().to_path_buf(), source };
    let meta = found.metadata().map_err(|e| io(e.into()))?;
    let kind = if leave_out == Some((meta.dev(), meta.ino())) {
        return Ok(None);
    } else if meta.is_dir() {
        EntryKind::Dir
    } else if meta.is_file() {
        EntryKind::File { size: meta.len(), sha256: [0; DIGEST_LEN] }
    } else if meta.file_type().is_symlink() {
        let target = fs::read_link(found.path()).map_err(io)?;
        EntryKind::Symlink { target: target.into_os_string().as_bytes().to_vec() }
    } else {
        return Ok(None);
    };
    let mut path = root.to_vec();
    for component in found.path().components().skip(found.path().components().count() - found.depth()) {
        path.push(b'/');
        path.extend_from_slice(component.as_os_str().as_bytes());
    }
    Ok(Some(Entry { path, kind, meta: Metadata::from_fs(&meta), extent: None, sparse: None }))
}

/// The digest of the file at `path` under `dir`, made as `stored`'s was:
/// SHA-256 of the content, or for a sparse entry the digest over its map
/// of what lies in its data segments (then anything but zeros outside
/// them is a difference, and gives a digest that cannot match).
pub(super) fn digest(dir: &Path, path: &[u8], stored: &Entry) -> Result<[u8; DIGEST_LEN]> {
    let full = dir.join(OsStr::from_bytes(path));
    let io = |source: io::Error| Error::Io { action: "reading", path: full.clone(), source };
    let file = File::open(&full).map_err(io)?;
    let size = stored.content().map_or(0, |c| c.0);
    let mut hasher = ContentHasher::for_entry(stored);
    let mut buf = vec![0u8; READ_LEN];
    let Some(map) = stored.sparse_map() else {
        let mut reader = file.take(size);
        loop {
            let n = reader.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        return Ok(hasher.finish_entry());
    };
    let mut at = 0;
    for &(offset, len) in map.segments().iter().chain([&(size, 0)]) {
        if !zeros(&file, at, offset.saturating_sub(at), &mut buf).map_err(io)? {
            return Ok([0xff; DIGEST_LEN]);
        }
        each_piece(&file, offset, len, &mut buf, |piece| hasher.update(piece)).map_err(io)?;
        at = offset + len;
    }
    Ok(hasher.finish_entry())
}

/// Whether the `len` bytes of `file` at `offset` are all zeros.
fn zeros(file: &File, offset: u64, len: u64, buf: &mut [u8]) -> io::Result<bool> {
    let mut all = true;
    each_piece(file, offset, len, buf, |piece| all &= piece.iter().all(|&b| b == 0))?;
    Ok(all)
}

/// Reads the `len` bytes of `file` at `offset` a buffer at a time.
fn each_piece(
    file: &File,
    offset: u64,
    len: u64,
    buf: &mut [u8],
    mut f: impl FnMut(&[u8]),
) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], offset + done)?;
        f(&buf[..n]);
        done += n as u64;
    }
    Ok(())
}
