//! Entry points for fuzzers (feature `fuzzing`): each decoder that reads
//! bytes from a file, callable in one line from any fuzzing harness
//! (cargo-afl, cargo-fuzz) and from the corpus replay test. None may panic,
//! whatever the input. Also what a seed generator needs to cut real
//! archives into the inputs of each target (`seeds`), the target behind
//! the MAC, which writes its own archive (`sealed`), and the decoders of
//! format v3's session headers, frames, signature blocks, sessions tree
//! and salvage scan (`v3`).

use std::io::Cursor;
use std::sync::OnceLock;

use crate::archive::Archive;
use crate::crypto::{Password, DEFAULT_KDF_BUDGET};
use crate::error::Result;
use crate::format::{
    decode_slot, EntriesLeaf, HeaderPrefix, Internal, KeySlot, PagesLeaf, Root, Trailer, ARCHIVE_ID_LEN,
    KEY_SLOTS, MAX_PAGE_PLAIN_LEN,
};
use crate::keys::{unwrap_content_key, Identity, KeyFile, Unlock};

mod sealed;
mod seeds;
mod v3;

pub use sealed::{
    sealed, sealed_seeds, SEALED_ENTRIES_LEAF, SEALED_FIRST_PAGE, SEALED_PAGES_LEAF, SEALED_ROOT,
};
pub use seeds::{index_plaintexts, key_seeds};
pub use v3::{
    frame, salvage, session_header, sessions, signature_block, v3_seeds, FRAME_INPUT_LEN, SESSIONS_INTERNAL,
    SESSIONS_LEAF, SESSION_HEADER_CLEAR, SIGNED_PREFIX_LEN,
};

/// Length of the header prefix, the input of [`header`].
pub const HEADER_PREFIX_LEN: usize = crate::format::HEADER_PREFIX_LEN;
/// Length of the largest key slot, the input of [`key_slots`] and a slot
/// of [`slot_table`]'s input; an archive's first slot starts right after
/// the header prefix, and its slots may be smaller (see [`slot_len`]).
pub const KEY_SLOT_LEN: usize = crate::format::MAX_KEY_SLOT_LEN;

/// The slot size a header prefix declares, if it decodes.
pub fn slot_len(prefix: &[u8]) -> Option<usize> {
    let prefix = <&[u8; HEADER_PREFIX_LEN]>::try_from(prefix.get(..HEADER_PREFIX_LEN)?).ok()?;
    HeaderPrefix::decode(prefix).ok().map(|h| h.slot_len)
}
/// Length of the trailer at the end of every archive.
pub const TRAILER_LEN: usize = crate::format::TRAILER_LEN;

/// First byte of an [`index`] input that decodes the rest as an entries leaf.
pub const INDEX_ENTRIES_LEAF: u8 = 0;
/// First byte of an [`index`] input that decodes the rest as a page-table leaf.
pub const INDEX_PAGES_LEAF: u8 = 1;
/// First byte of an [`index`] input that decodes the rest as an internal node.
pub const INDEX_INTERNAL: u8 = 2;
/// First byte of an [`index`] input that decodes the rest as the root.
pub const INDEX_ROOT: u8 = 3;

/// The header prefix.
pub fn header(data: &[u8]) {
    if let Ok(prefix) = <&[u8; HEADER_PREFIX_LEN]>::try_from(data) {
        let _ = HeaderPrefix::decode(prefix);
    }
}

/// One key slot (padded or cut to the largest size).
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

/// A recovery record's footer (FORMAT.md §3.12); the first 8 bytes give the
/// offset the footer claims to sit at.
pub fn recovery_footer(data: &[u8]) {
    if data.len() == 8 + crate::format::FOOTER_LEN {
        let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let _ = crate::format::Footer::decode(data[8..].try_into().expect("footer length"), offset);
    }
}

/// A seed for [`recovery_footer`]: the footer of FORMAT.md §10's tiny
/// record (5 % over 152 bytes of a first session) at its offset.
pub fn recovery_footer_seed() -> Vec<u8> {
    use crate::format::{Footer, RecordOwner};
    let owner = RecordOwner {
        version: crate::format::VERSION,
        archive_id: core::array::from_fn(|i| i as u8),
        session_salt: [0x20; 32],
        first_session: true,
    };
    let footer = Footer::new(owner, 5, 4128, 152, [0x33; 32]).expect("a layout");
    [&16880u64.to_le_bytes()[..], &footer.encode()].concat()
}

/// An index node or root plaintext, after opening and decompression: the
/// first byte picks the decoder (modulo 4: [`INDEX_ENTRIES_LEAF`],
/// [`INDEX_PAGES_LEAF`], [`INDEX_INTERNAL`], [`INDEX_ROOT`]).
pub fn index(data: &[u8]) {
    let Some((&which, node)) = data.split_first() else { return };
    match which % 4 {
        INDEX_ENTRIES_LEAF => drop(EntriesLeaf::decode(node)),
        INDEX_PAGES_LEAF => drop(PagesLeaf::decode(node)),
        INDEX_INTERNAL => drop(Internal::decode(node)),
        _ => drop(Root::decode(node)),
    }
}

/// A page body after opening: zstd decompression to the length the first
/// four bytes claim (capped at the format's page limit).
pub fn page(data: &[u8]) {
    if data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().expect("4 bytes")).min(MAX_PAGE_PLAIN_LEN);
        let _ = crate::crypto::decompress(&data[4..], len as usize);
    }
}

/// A whole byte string read as readers read an archive with recovery
/// records (docs/RECOVERY.md): the records found from its end by their
/// footers (no key), every protected shard checked against its group's
/// checksum lists, what parity rebuilds rebuilt, and the view read back;
/// and read through the lazy view readers use.
pub fn recovery(data: &[u8]) {
    use crate::storage::ReadAt;
    if let Ok(Some(records)) = crate::recovery::records_view(Cursor::new(data)) {
        let len = records.view.len().unwrap_or(0).min(MAX_PAGE_PLAIN_LEN as u64);
        let _ = records.view.read_exact_at(&mut vec![0u8; len as usize], 0);
    }
    // As readers read: shards checked as reads touch them, from the end
    // back (the footers first, then what they protect).
    if let Ok(Some(view)) = crate::recovery::lazy_records_view(Cursor::new(data)) {
        let len = view.len().unwrap_or(0).min(MAX_PAGE_PLAIN_LEN as u64);
        let mut buf = vec![0u8; 10_000];
        let starts: Vec<u64> = (0..len.saturating_sub(buf.len() as u64)).step_by(7_919).collect();
        for at in starts.into_iter().rev() {
            let _ = view.read_exact_at(&mut buf, at);
        }
        let _ = (view.runs(), view.refused());
    }
}

/// The password fuzzers use for whole archives.
pub const PASSWORD: &str = "fuzz";

/// A whole archive: open with [`PASSWORD`], verify, list, look one path up.
/// Archives with a password slot (any of them: the reader tries several)
/// that asks for more than a cheap Argon2id cost are skipped, so that the
/// fuzzer spends its time in the decoders, not in the KDF.
pub fn archive(data: &[u8]) {
    if !cheap_slots(data) {
        return;
    }
    if let Ok(a) = Archive::open(Cursor::new(data), &Password::from(PASSWORD)) {
        let _ = a.verify();
        let _ = a.info();
        let _ = a.find(b"a");
        // The states' numbering and the earlier states the chain commits to.
        let _ = a.history();
        let _ = a.at(crate::archive::AsOf::State(1)).map(|s| s.verify());
    }
}

/// Test-only identities the key targets unwrap with (never use them for
/// anything else): an X25519 and a hybrid one.
pub const IDENTITIES: &str = "AGE-SECRET-KEY-1MAAWXJEEZ3GZ45NCEQHZNE77NWMXDVPYXFDUKSFZG830UYMKZXMSGD3QVH
AGE-SECRET-KEY-PQ-1QUPXX3344SDHF84JR2TCMJ2N03MFYUCC73Z2ZNJ5DE32NMR9SFMS9055KS
";
/// The test-only key file the key targets unwrap with.
pub const KEY_FILE: &str = "LOCKBOX-KEY-1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
/// The archive id the key targets authenticate slots with.
pub const ARCHIVE_ID: [u8; ARCHIVE_ID_LEN] = [0x5a; ARCHIVE_ID_LEN];

/// A seed's name and bytes.
pub type Seed = (String, Vec<u8>);

pub(super) fn identities() -> &'static [Identity] {
    static IDS: OnceLock<Vec<Identity>> = OnceLock::new();
    IDS.get_or_init(|| Identity::parse_file(IDENTITIES.as_bytes(), &mut |_| None).expect("test identities"))
}

pub(super) fn key_file() -> &'static KeyFile {
    static KEY: OnceLock<KeyFile> = OnceLock::new();
    KEY.get_or_init(|| KeyFile::parse(KEY_FILE.as_bytes()).expect("test key file"))
}

/// A recipient slot body (after the slot table's kind and length): its
/// stanzas parsed and unwrapped with [`IDENTITIES`], the content key's seal
/// checked against [`ARCHIVE_ID`].
pub fn recipient_slot(data: &[u8]) {
    let aad = crate::format::recipient_slot_aad(&ARCHIVE_ID);
    let _ = unwrap_content_key(identities(), data, &aad);
    let _ = crate::keys::stanza_types(data);
}

/// The whole key-slot table (zero-padded or cut to its 16 slots): every
/// slot decoded, then unlocked as `Archive::open` would with
/// [`IDENTITIES`], [`KEY_FILE`] and [`PASSWORD`] (password slots only when
/// all are cheap, as in [`archive`]).
pub fn slot_table(data: &[u8]) {
    let mut table = data.to_vec();
    table.resize(KEY_SLOTS * KEY_SLOT_LEN, 0);
    let Ok(slots) = table.chunks(KEY_SLOT_LEN).map(decode_slot).collect::<Result<Vec<_>, _>>() else {
        return;
    };
    let _ = Unlock::Identities(identities()).content_key(&ARCHIVE_ID, &slots, DEFAULT_KDF_BUDGET);
    let _ = Unlock::KeyFile(key_file()).content_key(&ARCHIVE_ID, &slots, DEFAULT_KDF_BUDGET);
    if slots.iter().all(cheap) {
        let _ =
            Unlock::Password(&Password::from(PASSWORD)).content_key(&ARCHIVE_ID, &slots, DEFAULT_KDF_BUDGET);
    }
}

/// Whether `data` starts with a header and no password slot dearer than
/// [`cheap`] allows.
fn cheap_slots(data: &[u8]) -> bool {
    let Some(len) = slot_len(data) else { return false };
    let slots = data.get(HEADER_PREFIX_LEN..HEADER_PREFIX_LEN + KEY_SLOTS * len).unwrap_or_default();
    !slots.chunks(len).any(|s| matches!(decode_slot(s), Ok(slot) if !cheap(&slot)))
}

fn cheap(slot: &KeySlot) -> bool {
    match slot {
        KeySlot::Password(p) => p.m_kib <= 64 && p.t <= 2 && p.p <= 2,
        _ => true,
    }
}

#[cfg(test)]
mod recovery_tests {
    use std::path::PathBuf;

    use crate::crypto::{KdfParams, Password};
    use crate::session::CreateOptions;
    use crate::test_data::random;

    /// The `recovery` target over a real archive with a record, whole, cut
    /// and damaged, returns whatever the bytes.
    #[test]
    fn the_recovery_target_returns_on_real_and_damaged_archives() {
        let work = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join("d")).unwrap();
        std::fs::write(work.path().join("d/f"), random(300_000, 9)).unwrap();
        let archive = work.path().join("a.lbox");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).recovery(5);
        crate::file::create_archive(
            &archive,
            work.path(),
            &[PathBuf::from("d")],
            &Password::from("r"),
            options,
        )
        .unwrap();
        let bytes = std::fs::read(&archive).unwrap();
        let records = crate::recovery::records_view(std::io::Cursor::new(bytes.clone())).unwrap().unwrap();
        assert!(!records.is_damaged() && records.records.len() == 1);
        super::recovery(&bytes);
        for cut in [1, 100, 216 + 166, bytes.len() / 2] {
            super::recovery(&bytes[..bytes.len() - cut]);
        }
        for at in (0..bytes.len()).step_by(bytes.len() / 50) {
            let mut damaged = bytes.clone();
            damaged[at..(at + 5000).min(bytes.len())].fill(0xA5);
            super::recovery(&damaged);
        }
    }
}
