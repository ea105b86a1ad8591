//! Entry points for fuzzers: each decoder that reads bytes from a file,
//! callable in one line from any fuzzing harness (cargo-afl, cargo-fuzz)
//! and from the corpus replay test. None may panic, whatever the input.

use std::io::Cursor;

use crate::format::{self, Header, Index, Trailer, HEADER_PREFIX_LEN, TRAILER_LEN};
use crate::{Archive, KdfParams, Password};

/// The header prefix and the key-slot block after it.
pub fn header(data: &[u8]) {
    if let Ok((_, slots_len)) = Header::decode_prefix(data) {
        let slots = data.get(HEADER_PREFIX_LEN..).unwrap_or_default();
        let _ = format::decode_key_slots(&slots[..slots.len().min(slots_len)]);
    }
}

/// A key-slot block on its own.
pub fn key_slots(data: &[u8]) {
    let _ = format::decode_key_slots(data);
}

/// A trailer; the first 8 bytes give the offset the trailer claims to sit at.
pub fn trailer(data: &[u8]) {
    if data.len() == 8 + TRAILER_LEN {
        let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let _ = Trailer::decode(data[8..].try_into().expect("trailer length"), offset);
    }
}

/// An index plaintext (after opening and decompression).
pub fn index(data: &[u8]) {
    let _ = Index::decode(data);
}

/// A page body after opening: zstd decompression to the length the first
/// four bytes claim (capped at the format's page limit).
pub fn page(data: &[u8]) {
    if data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().expect("4 bytes")).min(format::MAX_PAGE_PLAIN_LEN);
        let _ = crate::pipeline::decompress(&data[4..], len as usize);
    }
}

/// The password fuzzers use for whole archives.
pub const PASSWORD: &str = "fuzz";

/// A whole archive: open with [`PASSWORD`], verify, list. Archives whose
/// password slot asks for more than the cheapest Argon2id cost are skipped,
/// so that the fuzzer spends its time in the decoders, not in the KDF.
pub fn archive(data: &[u8]) {
    let cheap = KdfParams::INSECURE_FOR_TESTS;
    let too_costly = |slots: &[u8]| {
        format::decode_key_slots(slots).is_ok_and(|slots| {
            slots.iter().any(|s| match s {
                format::KeySlot::Password(p) => p.m_kib > cheap.m_kib * 8 || p.t > 2 || p.p > 2,
                _ => false,
            })
        })
    };
    // The reader takes its key slots from where the trailer points.
    let costly = data.len().checked_sub(TRAILER_LEN).and_then(|at| {
        let raw: &[u8; TRAILER_LEN] = data[at..].try_into().ok()?;
        let t = Trailer::decode(raw, at as u64).ok()?;
        let start = usize::try_from(t.key_slots_offset).ok()?;
        Some(too_costly(data.get(start..start.checked_add(t.key_slots_len as usize)?)?))
    });
    if costly != Some(false) {
        return;
    }
    if let Ok(mut a) = Archive::open(Cursor::new(data), &Password::from(PASSWORD)) {
        let _ = a.verify();
        let _ = a.info();
    }
}
