//! Reading the archive's first bytes: the header prefix (its version
//! named when this library does not read it) and the key-slot table, with
//! each slot's label. The prefix's version is the archive's: every session
//! header and trailer must carry the same.

use crate::error::{Error, Result};
use crate::format::{
    decode_labeled_slot, is_readable_version, HeaderPrefix, KeySlot, HEADER_PREFIX_LEN, KEY_SLOTS,
    OLDEST_VERSION, VERSION,
};
use crate::index::read_sealed;
use crate::storage::ReadAt;

/// Reads and decodes the header prefix; a version this library does not
/// read is named.
pub(crate) fn read_prefix(src: &dyn ReadAt) -> Result<HeaderPrefix> {
    let mut prefix = [0u8; HEADER_PREFIX_LEN];
    read_exact(src, &mut prefix, 0, "header")?;
    HeaderPrefix::decode(&prefix).map_err(|e| match HeaderPrefix::peek_version(&prefix) {
        Some(found) if !is_readable_version(found) => {
            Error::UnsupportedVersion { found, oldest: OLDEST_VERSION, newest: VERSION }
        }
        _ => Error::from(e),
    })
}

/// A session header or trailer (`what`) whose version is not the
/// header's: malformed, even when it authenticates (a writer never mixes
/// versions in one archive).
pub(super) fn other_version(what: &'static str) -> Error {
    Error::malformed(what, "format version differs from the archive header's")
}

/// Reads and decodes every slot of the key-slot table `header` describes.
pub(crate) fn read_slots(src: &dyn ReadAt, header: &HeaderPrefix) -> Result<Vec<KeySlot>> {
    Ok(read_labeled_slots(src, header)?.into_iter().map(|(slot, _)| slot).collect())
}

/// [`read_slots`], each slot with its label.
pub(crate) fn read_labeled_slots(src: &dyn ReadAt, header: &HeaderPrefix) -> Result<Vec<(KeySlot, String)>> {
    let mut table = vec![0u8; KEY_SLOTS * header.slot_len];
    read_exact(src, &mut table, HEADER_PREFIX_LEN as u64, "key slots")?;
    Ok(table.chunks(header.slot_len).map(decode_labeled_slot).collect::<Result<Vec<_>, _>>()?)
}

fn read_exact(src: &dyn ReadAt, buf: &mut [u8], offset: u64, what: &str) -> Result<()> {
    let bytes = read_sealed(src, offset, buf.len() as u32, || what.to_string())?;
    buf.copy_from_slice(&bytes);
    Ok(())
}
