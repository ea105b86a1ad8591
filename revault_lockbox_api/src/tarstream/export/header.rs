//! Tar headers and content blocks: the pax records and ustar header of an
//! entry, its content's pieces (holes as zeros) and padding.

use std::io::{self, Write};
use std::sync::atomic::Ordering;

use super::TAR;
use crate::error::{Error, Result};
use crate::format::Entry;
use crate::progress::Progress;
use crate::sparse::Piece;
use crate::tarstream::import::PAX_XATTR;

/// The longest owner or group name a ustar header holds (the field has
/// room for a NUL after it).
const USTAR_OWNER_NAME_LEN: usize = 31;

/// The largest size a ustar header holds in octal; larger ones go in a pax
/// `size` record.
const USTAR_MAX_SIZE: u64 = 0o77_777_777_777;
/// The length of a ustar name or link-name field.
const USTAR_NAME_LEN: usize = 100;

/// Writes the pax records `entry` needs and its ustar header; a regular
/// file's `size` bytes of content and their padding follow.
pub(super) fn write_header<W: Write>(
    tar: &mut tar::Builder<W>,
    entry: &Entry,
    kind: tar::EntryType,
    size: u64,
    link: Option<&[u8]>,
) -> Result<()> {
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
    tar.get_mut().write_all(h.as_bytes()).map_err(Error::stream(TAR))
}

/// A tar block: headers and content padding come in these.
pub(super) const BLOCK_LEN: u64 = 512;
/// Zeros to write holes and padding from.
pub(super) static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// Writes a piece of a file's logical content: its bytes, or a hole's
/// zeros; counted on `progress` (logical bytes, as its total counts them).
pub(super) fn write_piece(
    out: &mut impl Write,
    piece: Piece<'_>,
    progress: Option<&Progress>,
) -> io::Result<()> {
    let n = match piece {
        Piece::Data(_, bytes) => {
            out.write_all(bytes)?;
            bytes.len() as u64
        }
        Piece::Zeros(n) => {
            let mut left = n;
            while left > 0 {
                let chunk = left.min(ZEROS.len() as u64) as usize;
                out.write_all(&ZEROS[..chunk])?;
                left -= chunk as u64;
            }
            n
        }
    };
    if let Some(p) = progress {
        p.bytes_in.fetch_add(n, Ordering::Relaxed);
    }
    Ok(())
}

/// Copies what fits of `bytes` into a header field (a pax record holds the
/// whole value when it does not fit).
fn copy_truncated(field: &mut [u8], bytes: &[u8]) {
    let n = field.len().min(bytes.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

/// A pax time: seconds, and nanoseconds when there are any.
pub(super) fn pax_time(secs: i64, nanos: u32) -> String {
    match (nanos, secs < 0) {
        (0, _) => secs.to_string(),
        (n, false) => format!("{secs}.{n:09}"),
        // -1.25 s is secs = -2, nanos = 750_000_000.
        (n, true) => format!("-{}.{:09}", -(secs + 1), 1_000_000_000 - n),
    }
}
