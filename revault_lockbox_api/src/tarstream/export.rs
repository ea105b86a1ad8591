//! `export`: an archive's entries as a pax tar stream.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use super::import::PAX_XATTR;
use crate::archive::{Archive, Members};
use crate::error::{Error, Result};
use crate::format::{Entry, EntryKind, FirstLinks};
use crate::progress::Progress;
use crate::storage::ReadAt;

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// Entries written.
    pub entries: u64,
    /// Bytes of file content written.
    pub content_bytes: u64,
}

/// The longest owner or group name a ustar header holds (the field has
/// room for a NUL after it).
const USTAR_OWNER_NAME_LEN: usize = 31;

/// The largest size a ustar header holds in octal; larger ones go in a pax
/// `size` record.
const USTAR_MAX_SIZE: u64 = 0o77_777_777_777;
/// The length of a ustar name or link-name field.
const USTAR_NAME_LEN: usize = 100;

/// Writes the entries of `archive` that `members` selects as a pax tar
/// stream to `out` ([`Members::all`]: every one). A name (no wildcards)
/// that matches no entry is [`Error::NotFound`] before anything is
/// written; a pattern that matched none is that error after the last
/// entry, before the end-of-archive blocks. Names, link targets and nanosecond mtimes that a ustar header
/// cannot hold go in pax records (`hdrcharset=BINARY` for names that are not
/// UTF-8), modes and owner ids in the header. A hard link whose target is
/// not exported is written as a file. Each file's content is authenticated
/// and its SHA-256 checked as it is copied; a damaged one stops the export
/// with the error, the stream then incomplete (no end-of-archive blocks).
pub fn export<W: Write, S: ReadAt>(
    out: W,
    archive: &Archive<S>,
    members: &Members,
) -> Result<(W, ExportReport)> {
    if let Some(missing) = members.first_missing_name(archive)? {
        return Err(Error::NotFound { path: missing.into() });
    }
    if let Some(p) = archive.progress() {
        p.total_bytes.store(members.content_bytes(archive)?, Ordering::Relaxed);
    }
    let mut tar = tar::Builder::new(out);
    let mut report = ExportReport::default();
    // By the stored file's path: the name its content went out under.
    let mut written = FirstLinks::new();
    let mut selected = members.entries(archive)?;
    for entry in selected.by_ref() {
        let entry = entry?;
        let (kind, size, link) = match &entry.kind {
            EntryKind::Dir => (tar::EntryType::Directory, 0, None),
            EntryKind::Symlink { target } => (tar::EntryType::Symlink, 0, Some(target.clone())),
            EntryKind::File { size, .. } => {
                written.written(entry.path.clone(), entry.path.clone());
                (tar::EntryType::Regular, *size, None)
            }
            EntryKind::Hardlink { target, size, .. } => match written.first(target) {
                Some(first) => (tar::EntryType::Link, 0, Some(first.to_vec())),
                None => {
                    written.written(target.clone(), entry.path.clone());
                    (tar::EntryType::Regular, *size, None)
                }
            },
        };
        let header = header(&entry, kind, size, link.as_deref(), &mut tar)?;
        if kind == tar::EntryType::Regular {
            let reader = archive.content_reader(&entry, None)?.reading_ahead();
            let mut counted = Counted { inner: reader, n: 0, progress: archive.progress() };
            tar.append(&header, &mut counted).map_err(content_error)?;
            if counted.n != size {
                return Err(Error::ChecksumMismatch { path: entry.path.as_slice().into() });
            }
            report.content_bytes += size;
        } else {
            tar.append(&header, io::empty()).map_err(Error::stream("writing the tar stream"))?;
        }
        report.entries += 1;
        if let Some(p) = archive.progress() {
            p.entries.fetch_add(1, Ordering::Relaxed);
        }
    }
    selected.all_matched()?;
    let out = tar.into_inner().map_err(Error::stream("writing the tar stream"))?;
    Ok((out, report))
}

/// The ustar header of `entry`, after writing the pax records it needs.
fn header<W: Write>(
    entry: &Entry,
    kind: tar::EntryType,
    size: u64,
    link: Option<&[u8]>,
    tar: &mut tar::Builder<W>,
) -> Result<tar::Header> {
    let mut pax: Vec<(String, Vec<u8>)> = Vec::new();
    pax.push(("mtime".into(), pax_time(entry.meta.mtime_secs, entry.meta.mtime_nanos).into_bytes()));
    let mut binary = false;
    if entry.path.len() > USTAR_NAME_LEN {
        binary |= std::str::from_utf8(&entry.path).is_err();
        pax.push(("path".into(), entry.path.clone()));
    }
    if let Some(target) = link.filter(|t| t.len() > USTAR_NAME_LEN) {
        binary |= std::str::from_utf8(target).is_err();
        pax.push(("linkpath".into(), target.to_vec()));
    }
    if size > USTAR_MAX_SIZE {
        pax.push(("size".into(), size.to_string().into_bytes()));
    }
    // Names a ustar field cannot hold whole go in pax records as well.
    for (key, name) in [("uname", entry.meta.user.as_deref()), ("gname", entry.meta.group.as_deref())] {
        if let Some(name) = name.filter(|n| n.len() > USTAR_OWNER_NAME_LEN) {
            binary |= std::str::from_utf8(name).is_err();
            pax.push((key.into(), name.to_vec()));
        }
    }
    // GNU tar's and star's records; a name that is not UTF-8 cannot be a
    // pax key, and is left out.
    for x in &entry.meta.xattrs {
        if let Ok(name) = std::str::from_utf8(&x.name) {
            pax.push((format!("{}{name}", std::str::from_utf8(PAX_XATTR).expect("ASCII")), x.value.clone()));
        }
    }
    if binary {
        pax.insert(0, ("hdrcharset".into(), b"BINARY".to_vec()));
    }
    tar.append_pax_extensions(pax.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
        .map_err(Error::stream("writing the tar stream"))?;
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_mode(entry.meta.mode);
    h.set_uid(entry.meta.uid.into());
    h.set_gid(entry.meta.gid.into());
    h.set_mtime(entry.meta.mtime_secs.max(0) as u64);
    h.set_size(size.min(USTAR_MAX_SIZE));
    let old = h.as_old_mut();
    copy_truncated(&mut old.name, &entry.path);
    if let Some(target) = link {
        copy_truncated(&mut old.linkname, target);
    }
    if let Some(ustar) = h.as_ustar_mut() {
        copy_truncated(
            &mut ustar.uname[..USTAR_OWNER_NAME_LEN],
            entry.meta.user.as_deref().unwrap_or_default(),
        );
        copy_truncated(
            &mut ustar.gname[..USTAR_OWNER_NAME_LEN],
            entry.meta.group.as_deref().unwrap_or_default(),
        );
    }
    h.set_cksum();
    Ok(h)
}

/// Copies what fits of `bytes` into a header field (a pax record holds the
/// whole value when it does not fit).
fn copy_truncated(field: &mut [u8], bytes: &[u8]) {
    let n = field.len().min(bytes.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

/// A pax time: seconds, and nanoseconds when there are any.
fn pax_time(secs: i64, nanos: u32) -> String {
    match (nanos, secs < 0) {
        (0, _) => secs.to_string(),
        (n, false) => format!("{secs}.{n:09}"),
        // -1.25 s is secs = -2, nanos = 750_000_000.
        (n, true) => format!("-{}.{:09}", -(secs + 1), 1_000_000_000 - n),
    }
}

/// A file's content failing to read is the archive's fault (damage, a
/// checksum mismatch: the library's error inside the `io::Error`); failing
/// to write, the output's.
fn content_error(e: io::Error) -> Error {
    if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        if let Some(Ok(lib)) = e.into_inner().map(|inner| inner.downcast::<Error>()) {
            return *lib;
        }
        unreachable!("checked to hold a library error");
    }
    Error::Stream { action: "writing the tar stream", source: e }
}

/// A file's content as it goes into the stream, counted (and shown on
/// the archive's progress counters, when it has some).
struct Counted<'p, R> {
    inner: R,
    n: u64,
    progress: Option<&'p Progress>,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        if let Some(p) = self.progress {
            p.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_times_round_trip_the_import_parser() {
        assert_eq!(pax_time(1_700_000_000, 0), "1700000000");
        assert_eq!(pax_time(1_700_000_000, 5), "1700000000.000000005");
        assert_eq!(pax_time(-2, 750_000_000), "-1.250000000");
    }
}
