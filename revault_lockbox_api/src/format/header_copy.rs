//! The copy of the header prefix and key-slot table that ends every
//! session of format version 4, right before its trailer (FORMAT.md §3.11):
//! one contiguous damage cannot take both the archive's first bytes and
//! the last session's end, so no single damaged byte loses the keys.
//!
//! ```text
//! header_copy = slot[16] || header_prefix          (16 × slot_len + 32 bytes)
//! ```
//! The prefix comes last, so that a reader that knows only where the
//! trailer is finds it in the 32 bytes before it. The trailer's `flags`
//! say that a copy is there and the slot size (so its length), and the
//! trailer is committed and tagged: the copy's place is authenticated, its
//! prefix must agree with the trailer, and each slot authenticates itself
//! (its AEAD opens or not).

use super::codec::malformed;
use super::{DecodeError, HeaderPrefix, Trailer, HEADER_PREFIX_LEN, KEY_SLOTS};

/// The first version whose sessions end with a header copy.
const FIRST_HEADER_COPY_VERSION: u16 = 4;

/// Whether a session of an archive of format `version` ends with a copy
/// of the header (a version 3 archive stays one a version 3 reader reads).
pub(crate) fn header_copy_allowed(version: u16) -> bool {
    version >= FIRST_HEADER_COPY_VERSION
}

/// Bytes of a header copy with slots of `slot_len`.
pub(crate) fn header_copy_len(slot_len: usize) -> u64 {
    (HEADER_PREFIX_LEN + KEY_SLOTS * slot_len) as u64
}

/// The copy of `head` (the prefix and the slot table, as at offset 0).
pub(crate) fn encode_header_copy(head: &[u8]) -> Vec<u8> {
    let (prefix, table) = head.split_at(HEADER_PREFIX_LEN);
    [table, prefix].concat()
}

/// The header as at offset 0 (prefix, then table) from a copy's bytes.
pub(crate) fn head_of_copy(copy: &[u8]) -> Vec<u8> {
    let (table, prefix) = copy.split_at(copy.len() - HEADER_PREFIX_LEN);
    [prefix, table].concat()
}

/// Decodes the prefix of `copy`, the copy before `trailer`, and checks
/// that it agrees with the trailer: the same archive, version and slot
/// size. The slots are left to the caller (each authenticates itself).
pub(crate) fn decode_header_copy(copy: &[u8], trailer: &Trailer) -> Result<HeaderPrefix, DecodeError> {
    let what = "header copy";
    if copy.len() as u64 != trailer.header_copy_len() || copy.len() < HEADER_PREFIX_LEN {
        return Err(malformed(what, "its length is not the one the trailer gives"));
    }
    let prefix: &[u8; HEADER_PREFIX_LEN] = copy[copy.len() - HEADER_PREFIX_LEN..].try_into().expect("prefix");
    let header = HeaderPrefix::decode(prefix).map_err(|_| malformed(what, "its prefix does not decode"))?;
    let agrees = header.archive_id == trailer.archive_id
        && header.version == trailer.version
        && header.slot_len == usize::from(trailer.copy_slot_len);
    if !agrees {
        return Err(malformed(what, "its prefix disagrees with the trailer (archive, version or slot size)"));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{KeySlot, VERSION};

    #[test]
    fn a_copy_puts_the_prefix_last_and_decodes_against_its_trailer() {
        let prefix = HeaderPrefix::fitting([5; 16], &[]);
        let head = prefix.encode_with(&vec![KeySlot::Empty; KEY_SLOTS]);
        let copy = encode_header_copy(&head);
        assert_eq!(copy.len() as u64, header_copy_len(prefix.slot_len));
        assert_eq!(&copy[copy.len() - HEADER_PREFIX_LEN..], &prefix.encode());
        assert_eq!(head_of_copy(&copy), head);
        let trailer = Trailer {
            archive_id: [5; 16],
            version: VERSION,
            copy_slot_len: prefix.slot_len as u16,
            ..crate::format::trailer::tests::sample()
        };
        assert_eq!(decode_header_copy(&copy, &trailer).unwrap(), prefix);
        for other in [
            Trailer { archive_id: [6; 16], ..trailer.clone() },
            Trailer { version: 3, ..trailer.clone() },
            Trailer { copy_slot_len: 512, ..trailer.clone() },
        ] {
            assert!(decode_header_copy(&copy, &other).is_err(), "{other:?}");
        }
        let mut flipped = copy.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(decode_header_copy(&flipped, &trailer).is_err());
    }
}
