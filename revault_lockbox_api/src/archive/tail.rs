//! Finding the last committed trailer. A session commits by writing its
//! trailer last, after syncing everything the trailer points to; a crash
//! before that leaves a torn tail: bytes after the last trailer that
//! authenticates. Readers take that trailer and ignore the tail; writers
//! cut the tail off before they append.

use crate::crypto::{ContentKey, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{HeaderPrefix, Trailer, TRAILER_LEN, TRAILER_MAGIC};
use crate::index::read_sealed;
use crate::storage::ReadAt;

use super::other_version;

/// The trailer a reader trusts, and where it ends: the archive's committed
/// length. Bytes past it are a torn tail.
pub(crate) struct Committed {
    pub(crate) trailer: Trailer,
    pub(crate) keys: SessionKeys,
    pub(crate) end: u64,
}

/// Bytes read at a time while searching backwards for a trailer.
const SEARCH_CHUNK: u64 = 1 << 20;

/// The last trailer of `src` (of `file_len` bytes) that decodes at its
/// place and authenticates under `content_key`: at the end of the file, or
/// else the last one before the end, searched backwards chunk by chunk.
/// The search reads at most the whole file, and only when the end is not
/// a valid trailer (a torn tail, a truncated or damaged archive).
pub(crate) fn find_committed(
    src: &dyn ReadAt,
    file_len: u64,
    header: &HeaderPrefix,
    content_key: &ContentKey,
) -> Result<Committed> {
    let at_end = file_len - TRAILER_LEN as u64;
    if let Some(found) = try_trailer(src, at_end, header, content_key)? {
        return Ok(found);
    }
    // Search [at_end) backwards; a chunk overlaps the next by
    // the magic's length so that no match is split.
    let magic = TRAILER_MAGIC.len() as u64;
    let mut end = at_end + magic - 1;
    let mut buf = Vec::new();
    let data_start = header.data_start();
    while end > data_start {
        let start = end.saturating_sub(SEARCH_CHUNK).max(data_start);
        buf.resize((end - start) as usize, 0);
        let bytes = read_sealed(src, start, buf.len() as u32, || "archive".into())?;
        for i in (0..bytes.len().saturating_sub(magic as usize - 1)).rev() {
            if bytes[i..].starts_with(&TRAILER_MAGIC) && start + (i as u64) < at_end {
                if let Some(found) = try_trailer(src, start + i as u64, header, content_key)? {
                    return Ok(found);
                }
            }
        }
        if start == data_start {
            break;
        }
        end = start + magic - 1;
    }
    Err(Error::tampered("trailer (archive truncated or damaged: no trailer authenticates)"))
}

/// The trailer at `offset` if it decodes there, belongs to this archive
/// and authenticates.
fn try_trailer(
    src: &dyn ReadAt,
    offset: u64,
    header: &HeaderPrefix,
    content_key: &ContentKey,
) -> Result<Option<Committed>> {
    let raw = read_sealed(src, offset, TRAILER_LEN as u32, || "trailer".into())?;
    let raw: &[u8; TRAILER_LEN] = raw.as_slice().try_into().expect("read exactly");
    let Ok(trailer) = Trailer::decode(raw, offset) else { return Ok(None) };
    if trailer.archive_id != header.archive_id || trailer.root_offset < header.data_start() {
        return Ok(None);
    }
    let keys = SessionKeys::derive(content_key, &trailer.session_salt);
    if keys.check_trailer_tag(&trailer.body(), &trailer.tag).is_err() {
        return Ok(None);
    }
    if trailer.version != header.version {
        return Err(other_version("trailer"));
    }
    Ok(Some(Committed { trailer, keys, end: offset + TRAILER_LEN as u64 }))
}
