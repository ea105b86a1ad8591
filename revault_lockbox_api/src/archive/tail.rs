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
    let found = search_back(src, at_end, header.data_start(), &mut |offset| {
        try_trailer(src, offset, header, content_key)
    })?;
    found.ok_or_else(|| Error::tampered("trailer (archive truncated or damaged: no trailer authenticates)"))
}

/// The first `Some` that `try_at` gives for `at_end`, then for each
/// `TRAILER_MAGIC` at an offset in `[from, at_end)`, highest first: read
/// backwards chunk by chunk, and only when the end gives `None`.
pub(super) fn search_back<T>(
    src: &dyn ReadAt,
    at_end: u64,
    from: u64,
    try_at: &mut dyn FnMut(u64) -> Result<Option<T>>,
) -> Result<Option<T>> {
    if let Some(found) = try_at(at_end)? {
        return Ok(Some(found));
    }
    // Search [at_end) backwards; a chunk overlaps the next by
    // the magic's length so that no match is split.
    let magic = TRAILER_MAGIC.len() as u64;
    let mut end = at_end + magic - 1;
    while end > from {
        let start = end.saturating_sub(SEARCH_CHUNK).max(from);
        let bytes = read_sealed(src, start, (end - start) as u32, || "archive".into())?;
        for i in (0..bytes.len().saturating_sub(magic as usize - 1)).rev() {
            if bytes[i..].starts_with(&TRAILER_MAGIC) && start + (i as u64) < at_end {
                if let Some(found) = try_at(start + i as u64)? {
                    return Ok(Some(found));
                }
            }
        }
        if start == from {
            break;
        }
        end = start + magic - 1;
    }
    Ok(None)
}

/// The trailer at `offset` if it decodes there, belongs to this archive
/// and authenticates.
pub(super) fn try_trailer(
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
    if trailer.copy_slot_len != 0 && usize::from(trailer.copy_slot_len) != header.slot_len {
        return Err(Error::malformed("trailer", "its header copy's slot size is not the header's"));
    }
    // A trailer before a recovery record commits only where the file holds
    // its whole session (FORMAT.md §3.12): a writer cut short after the
    // first copy left the previous state.
    let end = trailer.session_end();
    if end > src.len()? {
        return Ok(None);
    }
    Ok(Some(Committed { trailer, keys, end }))
}
