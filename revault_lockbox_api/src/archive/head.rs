//! Reading the archive's first bytes: the header prefix (its version
//! named when this library does not read it) and the key-slot table, with
//! each slot's label.

use crate::error::{Error, Result};
use crate::format::{decode_labeled_slot, HeaderPrefix, KeySlot, HEADER_PREFIX_LEN, KEY_SLOTS, VERSION};
use crate::index::read_sealed;
use crate::storage::ReadAt;

/// Reads and decodes the header prefix; a version this library does not
/// read is named.
pub(crate) fn read_prefix(src: &dyn ReadAt) -> Result<HeaderPrefix> {
    let mut prefix = [0u8; HEADER_PREFIX_LEN];
    read_exact(src, &mut prefix, 0, "header")?;
    HeaderPrefix::decode(&prefix).map_err(|e| match HeaderPrefix::peek_version(&prefix) {
        Some(found) if found != VERSION => Error::UnsupportedVersion { found, supported: VERSION },
        _ => Error::from(e),
    })
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
