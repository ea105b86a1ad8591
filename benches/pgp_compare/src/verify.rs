//! Checking an extraction against its source before its time counts.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Compares trees with two reusable 1 MiB buffers (a million small files
/// must not mean a million buffer allocations).
pub struct Verifier {
    a: Vec<u8>,
    b: Vec<u8>,
}

impl Verifier {
    pub fn new() -> Verifier {
        Verifier { a: vec![0; 1 << 20], b: vec![0; 1 << 20] }
    }

    /// Compares `src_root/rel` with `dst_root/rel`, recursively: kinds, file
    /// content, symlink targets and, with `strict`, modes and mtimes (seconds).
    pub fn verify(&mut self, src_root: &Path, dst_root: &Path, rel: &Path, strict: bool) -> Result<()> {
        let src = src_root.join(rel);
        let dst = dst_root.join(rel);
        let name = rel.display();
        let sm = fs::symlink_metadata(&src).with_context(|| format!("{name}: reading the source"))?;
        let dm =
            fs::symlink_metadata(&dst).with_context(|| format!("{name}: missing from the extraction"))?;
        if kind(&sm) != kind(&dm) {
            bail!("{name}: a {} in the source, a {} in the extraction", kind(&sm), kind(&dm));
        }
        if sm.file_type().is_symlink() {
            let a = fs::read_link(&src).with_context(|| format!("{name}: reading the source link"))?;
            let b = fs::read_link(&dst).with_context(|| format!("{name}: reading the extracted link"))?;
            if a != b {
                bail!("{name}: symlink target {} should be {}", b.display(), a.display());
            }
            return Ok(());
        }
        if strict {
            let (a, b) = (sm.mode() & 0o7777, dm.mode() & 0o7777);
            if a != b {
                bail!("{name}: mode {b:o} should be {a:o}");
            }
            if sm.mtime() != dm.mtime() {
                bail!("{name}: mtime {} should be {} (seconds)", dm.mtime(), sm.mtime());
            }
        }
        if sm.is_file() {
            if sm.len() != dm.len() {
                bail!("{name}: {} bytes, should be {}", dm.len(), sm.len());
            }
            return self.same_content(&src, &dst).with_context(|| format!("{name}"));
        }
        if sm.is_dir() {
            let (a, b) = (sorted_names(&src)?, sorted_names(&dst)?);
            if let Some(extra) = b.iter().find(|n| a.binary_search(n).is_err()) {
                bail!("{}: not in the source", rel.join(extra).display());
            }
            for child in &a {
                self.verify(src_root, dst_root, &rel.join(child), strict)?;
            }
        }
        Ok(())
    }

    /// Compares two files of equal length, 1 MiB at a time.
    fn same_content(&mut self, a: &Path, b: &Path) -> Result<()> {
        let open = |p: &Path| fs::File::open(p).with_context(|| format!("opening {}", p.display()));
        let (mut fa, mut fb) = (open(a)?, open(b)?);
        let mut offset = 0u64;
        loop {
            let na = read_full(&mut fa, &mut self.a).with_context(|| format!("reading {}", a.display()))?;
            let nb = read_full(&mut fb, &mut self.b).with_context(|| format!("reading {}", b.display()))?;
            let (da, db) = (&self.a[..na], &self.b[..nb]);
            if da != db {
                let at = da.iter().zip(db).position(|(x, y)| x != y).unwrap_or(na.min(nb));
                bail!("content differs at byte {}", offset + at as u64);
            }
            if na == 0 {
                return Ok(());
            }
            offset += na as u64;
        }
    }
}

fn kind(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "directory"
    } else if t.is_file() {
        "file"
    } else {
        "special file"
    }
}

fn sorted_names(dir: &Path) -> Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        names.push(entry.with_context(|| format!("listing {}", dir.display()))?.file_name());
    }
    names.sort();
    Ok(names)
}

fn read_full(f: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
