//! `create --from-tar`: a tar or pax stream in, an archive out.
//!
//! A tar stream comes in any order, an archive's entries in index order, so
//! the stream is read to its end first: each entry's name and metadata are
//! kept in memory (about 150 bytes plus twice the name per entry;
//! 100,000 entries with 30-byte names peak at 30 MiB), each file's
//! content waits in a sealed spool file ([`Spool`]); then the entries are
//! sorted and written. Content never sits in memory beyond a chunk, and
//! nothing reaches the output until the whole stream has been read and
//! checked.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;

use tar::EntryType;

use super::spool::{Spool, SpoolRef, SpoolSource};
use crate::error::{EntryPath, TarReason};
use crate::error::{Error, Result};
use crate::format::{check_entry_path, is_within, path_cmp, FirstLinks, MAX_PATH_LEN};
use crate::format::{check_xattr, check_xattr_list, Xattr};
use crate::keys::KeySet;
use crate::session::{ArchiveWriter, CreateOptions, Metadata};
use crate::walk::CreateReport;
use crate::warning::{CreateWarning, WarningKind};

/// Prefix of the pax keys that carry extended attributes (GNU tar, star,
/// bsdtar).
pub(crate) const PAX_XATTR: &[u8] = b"SCHILY.xattr.";

/// What one tar entry becomes.
enum Kind {
    Dir,
    /// A file, with the hard-link group it belongs to (if any).
    File {
        content: SpoolRef,
        group: Option<usize>,
    },
    Symlink(Vec<u8>),
}

struct Record {
    path: Vec<u8>,
    meta: Metadata,
    kind: Kind,
}

/// Streams an archive of the tar stream `input` to `out`; see the module
/// docs for the memory used. Names lose a leading `/` (as tar extracts
/// them); a `..` component, a hard link leaving the stream (absolute, `..`,
/// or naming no earlier file), and a malformed or truncated stream are
/// refused with [`Error::BadTar`] before anything is written to `out`.
pub(crate) fn tar_into<W: Write>(
    input: &mut dyn Read,
    out: W,
    keys: &KeySet,
    options: CreateOptions,
) -> Result<(W, CreateReport)> {
    let mut report = CreateReport::default();
    let (records, spool, group_sizes) = read_stream(input, &mut report)?;
    let mut writer = ArchiveWriter::new(out, keys.clone(), options)?;
    let mut first_of_group = FirstLinks::new();
    for r in &records {
        match &r.kind {
            Kind::Dir => writer.add_dir(&r.path, &r.meta)?,
            Kind::Symlink(target) => writer.add_symlink(&r.path, &r.meta, target)?,
            Kind::File { content, group } => {
                let linked = group.filter(|g| group_sizes[g] > 1);
                if let Some(first) = linked.and_then(|g| first_of_group.first(&g)) {
                    writer.add_hardlink(&r.path, &r.meta, first)?;
                } else {
                    let mut reader = spool.open(*content);
                    let n = match linked {
                        Some(g) => {
                            first_of_group.written(g, r.path.clone());
                            writer.add_linked_file(&r.path, &r.meta, content.len, &mut reader)?
                        }
                        None => writer.add_file(&r.path, &r.meta, content.len, &mut reader)?,
                    };
                    report.content_bytes += n;
                }
            }
        }
        report.entries += 1;
    }
    let (out, archive_bytes) = writer.finish_counted()?;
    report.archive_bytes = archive_bytes;
    Ok((out, report))
}

/// Reads the whole stream: the records in index order (the last of several
/// entries with one name wins, as when tar extracts), the spool of their
/// contents, and the size of each hard-link group.
fn read_stream(
    input: &mut dyn Read,
    report: &mut CreateReport,
) -> Result<(Vec<Record>, SpoolSource, HashMap<usize, usize>)> {
    let mut spool = Spool::new().map_err(Error::stream("creating the spool file for the tar stream"))?;
    let mut records: Vec<Record> = Vec::new();
    let mut by_name: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut groups = 0usize;
    let mut input = SeenBytes { inner: input, any: false };
    let mut archive = tar::Archive::new(&mut input);
    let entries = archive.entries().map_err(|e| bad(0, &[], unreadable(e)))?;
    for (number, entry) in entries.enumerate() {
        let number = number as u64 + 1;
        let mut entry = entry.map_err(|e| bad(number, &[], unreadable(e)))?;
        let raw_path = entry.path_bytes().into_owned();
        let fail = |reason: TarReason| bad(number, &raw_path, reason);
        let kind = entry.header().entry_type();
        let (meta, sparse) = metadata(&mut entry).map_err(fail)?;
        if sparse {
            return Err(fail(TarReason::Sparse));
        }
        let Some(path) = member_name(&raw_path).map_err(|r| fail(TarReason::UnsafeName(r)))? else {
            continue;
        };
        let (kind, meta) = match kind {
            EntryType::Directory => (Kind::Dir, meta),
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                let expected = entry.size();
                let content = spool
                    .store(&mut entry)
                    .map_err(|e| fail(unreadable(format!("reading its content: {e}"))))?;
                if content.len != expected {
                    return Err(fail(TarReason::Truncated { stored: content.len, expected }));
                }
                (Kind::File { content, group: None }, meta)
            }
            EntryType::Symlink => {
                let target = entry.link_name_bytes().map(|t| t.into_owned()).unwrap_or_default();
                if target.is_empty() || target.len() > MAX_PATH_LEN {
                    return Err(fail(TarReason::BadSymlink));
                }
                (Kind::Symlink(target), meta)
            }
            EntryType::Link => {
                let raw = entry.link_name_bytes().map(|t| t.into_owned()).unwrap_or_default();
                let target = link_target(&raw).map_err(|r| fail(TarReason::UnsafeName(r)))?;
                // A hard link shares its file's content and metadata.
                let file = by_name.get(&target).map(|&i| &mut records[i]);
                let Some(Record { kind: Kind::File { content, group }, meta: linked, .. }) = file else {
                    return Err(fail(TarReason::HardLinkTarget(EntryPath(target))));
                };
                let g = *group.get_or_insert_with(|| {
                    groups += 1;
                    groups
                });
                (Kind::File { content: *content, group: Some(g) }, linked.clone())
            }
            EntryType::XGlobalHeader => continue,
            other => {
                let what = match other {
                    EntryType::Char | EntryType::Block => "device",
                    EntryType::Fifo => "FIFO",
                    _ => "entry of an unknown type",
                };
                let path = std::path::PathBuf::from(std::ffi::OsString::from_vec(path));
                report.warnings.push(CreateWarning::new(path, WarningKind::Unsupported(what)));
                continue;
            }
        };
        match by_name.get(&path) {
            Some(&i) => records[i] = Record { path, meta, kind },
            None => {
                by_name.insert(path.clone(), records.len());
                records.push(Record { path, meta, kind });
            }
        }
    }
    if !input.any {
        return Err(Error::BadTar { number: None, path: None, reason: TarReason::Empty });
    }
    drop(by_name);
    let mut group_sizes: HashMap<usize, usize> = HashMap::new();
    for r in &records {
        if let Kind::File { group: Some(g), .. } = r.kind {
            *group_sizes.entry(g).or_default() += 1;
        }
    }
    records.sort_unstable_by(|a, b| path_cmp(&a.path, &b.path));
    check_placement(&records)?;
    let spool = spool.finish().map_err(Error::stream("writing the spool file for the tar stream"))?;
    Ok((records, spool, group_sizes))
}

/// The error for entry `number`. The reason may quote header bytes (the
/// tar crate's messages do): escaped and shortened to stay one short line.
/// Refuses, before anything is written, an entry the writer would refuse
/// half-way: one below a symbolic link or a file of the stream (in index
/// order, it follows that entry).
fn check_placement(records: &[Record]) -> Result<()> {
    let mut last_leaf: Option<&[u8]> = None;
    for r in records {
        if let Some(leaf) = last_leaf.filter(|leaf| is_within(leaf, &r.path)) {
            let reason = TarReason::BelowLeaf(EntryPath(leaf.to_vec()));
            return Err(Error::BadTar { number: None, path: Some(EntryPath(r.path.clone())), reason });
        }
        last_leaf = match r.kind {
            Kind::Dir => None,
            _ => Some(&r.path),
        };
    }
    Ok(())
}

fn bad(number: u64, path: &[u8], reason: TarReason) -> Error {
    let path = (!path.is_empty()).then(|| EntryPath(path.to_vec()));
    Error::BadTar { number: Some(number), path, reason }
}

/// The tar input, noting whether it held any byte: an input with none is
/// no tar stream at all (GNU tar refuses it), unlike an empty archive,
/// whose end-of-archive blocks are bytes.
struct SeenBytes<'a> {
    inner: &'a mut dyn Read,
    any: bool,
}

impl Read for SeenBytes<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.any |= n > 0;
        Ok(n)
    }
}

/// The tar reader's message, which may quote header bytes: escaped and
/// shortened to stay one short line.
fn unreadable(message: impl ToString) -> TarReason {
    let mut text = EntryPath(message.to_string().into_bytes()).to_string();
    if let Some((cut, _)) = text.char_indices().nth(160) {
        text.truncate(cut);
        text.push('…');
    }
    TarReason::Unreadable(text)
}

/// The entry's metadata, and whether it is a pax sparse file.
fn metadata<R: Read>(entry: &mut tar::Entry<'_, R>) -> Result<(Metadata, bool), TarReason> {
    let h = entry.header();
    let mode = h.mode().map_err(unreadable)? & 0o7777;
    let id = |v: std::io::Result<u64>, what: &'static str| {
        let value = v.map_err(unreadable)?;
        u32::try_from(value).map_err(|_| TarReason::OutOfRange { what, value })
    };
    let uid = id(h.uid(), "uid")?;
    let gid = id(h.gid(), "gid")?;
    let value = h.mtime().map_err(unreadable)?;
    let mut mtime = (i64::try_from(value).map_err(|_| TarReason::OutOfRange { what: "mtime", value })?, 0);
    let name = |n: Option<&[u8]>| n.filter(|n| !n.is_empty()).map(<[u8]>::to_vec);
    let (mut user, mut group) = (name(h.username_bytes()), name(h.groupname_bytes()));
    let mut xattrs = Vec::new();
    let mut sparse = false;
    if let Some(pax) = entry.pax_extensions().map_err(unreadable)? {
        for ext in pax {
            let ext = ext.map_err(|e| unreadable(format!("pax header: {e}")))?;
            match ext.key_bytes() {
                b"mtime" => mtime = pax_time(ext.value_bytes()).ok_or(TarReason::BadPaxTime)?,
                b"uname" => user = name(Some(ext.value_bytes())),
                b"gname" => group = name(Some(ext.value_bytes())),
                k if k.starts_with(b"GNU.sparse.") => sparse = true,
                k if k.starts_with(PAX_XATTR) => {
                    let x = Xattr { name: k[PAX_XATTR.len()..].to_vec(), value: ext.value_bytes().to_vec() };
                    check_xattr(&x).map_err(|why| TarReason::Xattrs { several: false, why })?;
                    xattrs.retain(|old: &Xattr| old.name != x.name);
                    xattrs.push(x);
                }
                _ => {}
            }
        }
    }
    check_xattr_list(&{
        xattrs.sort();
        xattrs.clone()
    })
    .map_err(|why| TarReason::Xattrs { several: true, why })?;
    let meta = Metadata::new(mode, uid, gid, mtime.0, mtime.1).with_names(user, group).with_xattrs(xattrs);
    Ok((meta, sparse))
}

/// A pax time, `[-]SECONDS[.FRACTION]`, as seconds and nanoseconds.
fn pax_time(value: &[u8]) -> Option<(i64, u32)> {
    let text = std::str::from_utf8(value).ok()?;
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = int.parse().ok()?;
    let nanos: u32 = format!("{:0<9}", &frac[..frac.len().min(9)]).parse().ok()?;
    Some(match (negative, nanos) {
        (false, _) => (secs, nanos),
        (true, 0) => (-secs, 0),
        (true, n) => (-secs - 1, 1_000_000_000 - n),
    })
}

/// A member name as stored: `.` components and a leading `/` dropped (as
/// tar extracts it), `..` refused. `None` for the top directory itself
/// (`./`).
fn member_name(raw: &[u8]) -> Result<Option<Vec<u8>>, &'static str> {
    let parts: Vec<&[u8]> = raw.split(|&b| b == b'/').filter(|p| !p.is_empty() && *p != b".").collect();
    if parts.iter().any(|p| *p == b"..") {
        return Err("a `..` component in the name");
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let name = parts.join(&b'/');
    check_entry_path(&name)?;
    Ok(Some(name))
}

/// A hard link's target, which must name an entry of the stream: an
/// absolute target or one with `..` is refused.
fn link_target(raw: &[u8]) -> Result<Vec<u8>, &'static str> {
    if raw.starts_with(b"/") {
        return Err("a hard link with an absolute target");
    }
    member_name(raw)?.ok_or("a hard link with an empty target")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_times_keep_nanoseconds() {
        assert_eq!(pax_time(b"1700000000.123456789"), Some((1_700_000_000, 123_456_789)));
        assert_eq!(pax_time(b"1700000000.5"), Some((1_700_000_000, 500_000_000)));
        assert_eq!(pax_time(b"12"), Some((12, 0)));
        assert_eq!(pax_time(b"-1.25"), Some((-2, 750_000_000)));
        assert_eq!(pax_time(b"1.1234567891"), Some((1, 123_456_789)));
        assert_eq!(pax_time(b"x"), None);
        assert_eq!(pax_time(b".5"), None);
    }

    #[test]
    fn member_names_follow_tar() {
        assert_eq!(member_name(b"./a/./b/").unwrap(), Some(b"a/b".to_vec()));
        assert_eq!(member_name(b"/etc/hosts").unwrap(), Some(b"etc/hosts".to_vec()));
        assert_eq!(member_name(b"./").unwrap(), None);
        assert!(member_name(b"a/../../b").is_err());
        assert!(link_target(b"/etc/passwd").is_err());
        assert!(link_target(b"../x").is_err());
        assert_eq!(link_target(b"./a").unwrap(), b"a");
    }
}
