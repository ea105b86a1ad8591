//! Entry points for fuzzers (feature `fuzzing`): each decoder that reads
//! bytes from a file, callable in one line from any fuzzing harness
//! (cargo-afl, cargo-fuzz) and from the corpus replay test. None may panic,
//! whatever the input.

use std::io::Cursor;

use crate::format::{
    decode_slot, EntriesLeaf, HeaderPrefix, Internal, PagesLeaf, Root, Trailer, HEADER_PREFIX_LEN,
    KEY_SLOT_LEN, MAX_PAGE_PLAIN_LEN, TRAILER_LEN,
};
use crate::{Archive, Password};

/// The header prefix.
pub fn header(data: &[u8]) {
    if let Ok(prefix) = <&[u8; HEADER_PREFIX_LEN]>::try_from(data) {
        let _ = HeaderPrefix::decode(prefix);
    }
}

/// One key slot (padded or cut to its fixed size).
pub fn key_slots(data: &[u8]) {
    let mut slot = data.to_vec();
    slot.resize(KEY_SLOT_LEN, 0);
    let _ = decode_slot(&slot);
}

/// A trailer; the first 8 bytes give the offset the trailer claims to sit at.
pub fn trailer(data: &[u8]) {
    if data.len() == 8 + TRAILER_LEN {
        let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let _ = Trailer::decode(data[8..].try_into().expect("trailer length"), offset);
    }
}

/// An index node or root plaintext, after opening and decompression: the
/// first byte picks the decoder.
pub fn index(data: &[u8]) {
    let Some((&which, node)) = data.split_first() else { return };
    match which % 4 {
        0 => drop(EntriesLeaf::decode(node)),
        1 => drop(PagesLeaf::decode(node)),
        2 => drop(Internal::decode(node)),
        _ => drop(Root::decode(node)),
    }
}

/// A page body after opening: zstd decompression to the length the first
/// four bytes claim (capped at the format's page limit).
pub fn page(data: &[u8]) {
    if data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().expect("4 bytes")).min(MAX_PAGE_PLAIN_LEN);
        let _ = crate::pipeline::decompress(&data[4..], len as usize);
    }
}

/// The password fuzzers use for whole archives.
pub const PASSWORD: &str = "fuzz";

/// A whole archive: open with [`PASSWORD`], verify, list, look one path up.
/// Archives whose password slot asks for more than a cheap Argon2id cost
/// are skipped, so that the fuzzer spends its time in the decoders, not in
/// the KDF.
pub fn archive(data: &[u8]) {
    let slot = data.get(HEADER_PREFIX_LEN..HEADER_PREFIX_LEN + KEY_SLOT_LEN);
    let cheap = slot.and_then(|s| decode_slot(s).ok()).is_some_and(|s| match s {
        crate::format::KeySlot::Password(p) => p.m_kib <= 64 && p.t <= 2 && p.p <= 2,
        _ => true,
    });
    if !cheap {
        return;
    }
    if let Ok(a) = Archive::open(Cursor::new(data), &Password::from(PASSWORD)) {
        let _ = a.verify();
        let _ = a.info();
        let _ = a.find(b"a");
    }
}
