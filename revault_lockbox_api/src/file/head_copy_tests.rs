//! Issue 50, item 2: no single damaged byte of an archive's first bytes
//! loses it. One flipped bit in the header prefix, a key slot or the first
//! session header, or in the last session's header copy, leaves every file
//! readable (FORMAT.md §3.11, §6.1 steps 4 and 6); `verify` reports the
//! damage; copies that lie are refused.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use crate::archive::{Archive, OpenOptions};
use crate::crypto::{KdfParams, Password};
use crate::extract::ExtractOptions;
use crate::file::{ArchiveUpdater, UpdateOptions};
use crate::format::{Trailer, WalkRecord, SESSION_HEADER_CLEAR_LEN, TRAILER_LEN};
use crate::keys::{KeyFile, KeySet, Unlock};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

pub(super) fn password() -> Password {
    Password::from("copy")
}

/// The files of [`two_sessions`]: three in the create, one appended.
pub(super) const FILES: [(&str, &[u8]); 4] =
    [("a", b"alpha"), ("b", b"bravo bravo"), ("c", b"charlie"), ("d", b"delta, appended")];

/// An archive at `dir/a.lbox` locked with [`password`] and a key file, of
/// two sessions (each ends with a header copy), whose first session header
/// is longer than 4 KiB (walk rules), so that its first 8 KiB are the
/// header, the slot table and that session header.
pub(super) fn two_sessions(dir: &Path) -> (PathBuf, KeyFile) {
    let path = dir.join("a.lbox");
    let key_file = KeyFile::generate().unwrap();
    let keys = KeySet::new().password(&password()).key_file(&key_file);
    let rules = WalkRecord { excludes: vec!["x".repeat(4000)], ..WalkRecord::default() };
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
    let options = options.with_walk_record(&rules).unwrap();
    let mut w = ArchiveWriter::with_keys(std::fs::File::create(&path).unwrap(), &keys, options).unwrap();
    for (name, content) in &FILES[..3] {
        let meta = Metadata::new(0o644, 0, 0, 1_700_000_000, 0);
        w.add_file(*name, &meta, content.len() as u64, *content).unwrap();
    }
    w.finish().unwrap();
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("d"), FILES[3].1).unwrap();
    let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["d".into()]).unwrap();
    (path, key_file)
}

/// Where each session's header copy starts, oldest first.
pub(super) fn copies(bytes: &[u8]) -> Vec<usize> {
    let mut at = bytes.len() - TRAILER_LEN;
    let mut found = Vec::new();
    loop {
        let trailer = Trailer::parse(bytes[at..at + TRAILER_LEN].try_into().unwrap()).unwrap();
        assert_ne!(trailer.copy_slot_len, 0, "a version 4 session ends with a copy");
        found.insert(0, trailer.header_copy_offset() as usize);
        if trailer.previous_trailer == 0 {
            return found;
        }
        at = trailer.previous_trailer as usize - TRAILER_LEN;
    }
}

/// `bytes` with bit `bit` of byte `at` flipped.
pub(super) fn flipped(bytes: &[u8], at: usize, bit: u8) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    bytes[at] ^= 1 << bit;
    bytes
}

/// Opens `bytes` with `key`, lists it, reads every file and extracts it:
/// every file of [`FILES`] comes back. Returns the archive.
fn restores_every_file<'k>(
    what: &str,
    bytes: Vec<u8>,
    key: impl Into<Unlock<'k>>,
) -> Archive<Cursor<Vec<u8>>> {
    let archive = Archive::open(Cursor::new(bytes), key).unwrap_or_else(|e| panic!("{what}: {e}"));
    let listed: Vec<Vec<u8>> = archive.entries().unwrap().map(|e| e.unwrap().path).collect();
    assert_eq!(listed, FILES.iter().map(|(n, _)| n.as_bytes().to_vec()).collect::<Vec<_>>(), "{what}");
    for (name, content) in FILES {
        let mut read = Vec::new();
        archive.open_file(name).unwrap().read_to_end(&mut read).unwrap();
        assert_eq!(read, content, "{what}: {name}");
    }
    let dest = tempfile::tempdir().unwrap();
    let report = archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert!(report.damaged.is_empty(), "{what}: {:?}", report.damaged);
    for (name, content) in FILES {
        assert_eq!(std::fs::read(dest.path().join(name)).unwrap(), content, "{what}: {name} extracted");
    }
    archive
}

/// The offset of the slot of `kind` (1 password, 3 key file) and the
/// table's slot size.
fn slot_of(bytes: &[u8], kind: u8) -> usize {
    let slot_len = usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    (0..16).map(|i| 32 + i * slot_len).find(|&at| bytes[at] == kind).unwrap()
}

#[test]
fn one_flipped_bit_in_the_header_a_slot_or_the_first_session_header_loses_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, key_file) = two_sessions(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let data_start = 32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    let password_slot = slot_of(&bytes, 1);
    let key_file_slot = slot_of(&bytes, 3);
    // (what, offset, bit, opens with the key file rather than the password,
    // what `verify` names)
    let cases = [
        ("magic", 1, 0, false, "byte 0"),
        ("version", 8, 0, false, "byte 0"),
        ("flags (\"unknown flags\")", 10, 3, false, "byte 0"),
        ("archive id", 20, 5, false, "byte 0"),
        ("slot size", 30, 1, false, "byte 0"),
        ("password slot's wrapped key", password_slot + 3 + 40 + 5, 2, false, "byte 0"),
        ("password slot's kind", password_slot, 1, false, "byte 0"),
        ("key-file slot's wrapped key", key_file_slot + 3 + 30, 7, true, "byte 0"),
        ("first session header's salt", data_start + 30, 4, false, "session header"),
        (
            "first session header's body",
            data_start + SESSION_HEADER_CLEAR_LEN + 9,
            6,
            false,
            "session header",
        ),
    ];
    for (what, at, bit, with_key_file, named) in cases {
        let damaged = flipped(&bytes, at, bit);
        let archive = match with_key_file {
            true => restores_every_file(what, damaged, &key_file),
            false => restores_every_file(what, damaged, &password()),
        };
        let report = archive.verify().unwrap();
        assert!(!report.is_ok(), "{what}: verify passed");
        assert!(report.lost.iter().any(|l| l.contains(named)), "{what}: {:?}", report.lost);
    }
    // The copy is the last session's: damage to it alone costs nothing
    // a reader needs, and verify says it differs.
    let last_copy = *copies(&bytes).last().unwrap();
    let damaged = flipped(&bytes, last_copy + password_slot - 32 + 50, 0);
    let report = restores_every_file("last copy", damaged, &password()).verify().unwrap();
    assert!(report.lost.iter().any(|l| l.contains("copy")), "{:?}", report.lost);
    assert!(restores_every_file("undamaged", bytes, &password()).verify().unwrap().is_ok());
}

#[test]
fn a_bit_flipped_at_every_61st_byte_of_the_first_8_kib_loses_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = two_sessions(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let first_unit = {
        let data_start = 32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
        let body = u32::from_le_bytes(bytes[data_start + 60..data_start + 64].try_into().unwrap());
        data_start + SESSION_HEADER_CLEAR_LEN + body as usize
    };
    assert!(first_unit > 8192, "the first 8 KiB are header, slots and session header ({first_unit})");
    let mut tried = 0;
    for at in (0..8192).step_by(61) {
        let damaged = flipped(&bytes, at, (at % 8) as u8);
        let what = format!("bit {} of byte {at}", at % 8);
        let archive = restores_every_file(&what, damaged, &password());
        assert!(!archive.verify().unwrap().is_ok(), "{what}: verify passed");
        tried += 1;
    }
    assert_eq!(tried, 135);
}

#[test]
fn a_copy_that_lies_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = two_sessions(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let slot_len = usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    // A damaged primary, and copies whose prefixes name another version
    // than their trailers: not used; the primary's error stands.
    let mut lying = flipped(&bytes, 10, 0);
    for copy in copies(&bytes) {
        lying[copy + 16 * slot_len + 8] = 3;
    }
    let err = Archive::open(Cursor::new(lying), &password()).unwrap_err();
    assert!(err.to_string().contains("unknown flags"), "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");
    // A trailer, tagged by a key holder, whose copy flag claims slots
    // larger than there is room for before it (its length past the root):
    // it does not decode, and no earlier one authenticates.
    let one = super::chain_tests::shaped(|s| s);
    let past = super::chain_tests::forged_trailer(&one, |t| t.copy_slot_len = 4096);
    let err = Archive::open(Cursor::new(past), &super::chain_tests::password()).unwrap_err();
    assert!(err.is_authentication(), "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");
    // A wrong password with an undamaged archive is a wrong password.
    let err = Archive::open(Cursor::new(bytes), &Password::from("wrong")).unwrap_err();
    assert!(matches!(err, crate::error::Error::WrongPassword), "{err}");
}

#[test]
fn an_earlier_state_and_a_salvage_read_through_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = two_sessions(dir.path());
    let bytes = flipped(&std::fs::read(&path).unwrap(), 10, 3);
    std::fs::write(&path, &bytes).unwrap();
    let first = OpenOptions::new().session(1);
    let state = Archive::open_with(Cursor::new(bytes.clone()), &password(), first).unwrap();
    assert_eq!(state.entry_count(), 3);
    assert!(state.header_damage().is_some());
    let salvage = crate::archive::Salvage::scan(Cursor::new(bytes), &password(), OpenOptions::new()).unwrap();
    assert_eq!(salvage.entries().len(), 4);
    // repair writes the primary again from the copy, in place: every state
    // stays.
    let report = ArchiveUpdater::repair(&path, &password(), UpdateOptions::new()).unwrap();
    assert!(report.header_rewritten.is_some() && report.salvaged.is_none(), "{report:?}");
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert!(archive.header_damage().is_none());
    assert!(archive.verify().unwrap().is_ok());
    assert_eq!(archive.sessions(), 2);
    // compact too, from the copy, as it rewrites.
    std::fs::write(&path, flipped(&std::fs::read(&path).unwrap(), 12, 0)).unwrap();
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new()).unwrap();
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert!(archive.header_damage().is_none());
    assert!(archive.verify().unwrap().is_ok());
}

/// A copy counts only when the trailer right after it authenticates under
/// the key its slot gave (FORMAT.md §6.1 step 4): the last session's copy,
/// before a damaged trailer, still holds the key file `key remove` took out
/// of every copy it could reach, and that key file must not open the
/// archive through it.
#[test]
fn a_removed_key_does_not_open_through_the_copy_before_a_damaged_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let (path, key_file) = two_sessions(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    // The last trailer's tag: it still decodes, and no longer
    // authenticates, so the committed state is the first session's.
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let key_file_slot = (slot_of(&bytes, 3) - 32) / usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    crate::file::slots::remove(&path, &password(), key_file_slot).unwrap();
    let after = std::fs::read(&path).unwrap();
    let last_copy = *copies(&bytes[..bytes.len()]).last().unwrap();
    assert_eq!(after[last_copy..], bytes[last_copy..], "the copy behind the damaged trailer was not reached");
    let refused = Archive::open(Cursor::new(after.clone()), &key_file).map(|_| ()).unwrap_err();
    assert!(matches!(refused, crate::error::Error::WrongKeyFile), "{refused}");
    Archive::open(Cursor::new(after), &password()).unwrap();
}

/// A damaged last copy is damage `verify` reports, and `repair` writes it
/// again from the header it copies, in place: the archive comes back byte
/// for byte.
#[test]
fn repair_writes_a_damaged_last_copy_again() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = two_sessions(dir.path());
    let whole = std::fs::read(&path).unwrap();
    let last_copy = *copies(&whole).last().unwrap();
    std::fs::write(&path, flipped(&whole, last_copy + 40, 5)).unwrap();
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert!(!archive.verify().unwrap().is_ok(), "a damaged copy is damage");
    drop(archive);
    let report = ArchiveUpdater::repair(&path, &password(), UpdateOptions::new()).unwrap();
    let why = report.header_rewritten.as_deref().unwrap_or_default();
    assert!(
        why.contains(&format!("header copy at byte {last_copy}")) && report.salvaged.is_none(),
        "{report:?}"
    );
    assert!(std::fs::read(&path).unwrap() == whole, "repaired byte for byte");
}

/// An archive's bytes whose end, from `from`, is at hand (as an object
/// store's opening GET of the last bytes leaves them), each read's offset
/// noted.
struct EndAtHand {
    bytes: Cursor<Vec<u8>>,
    from: u64,
    reads: std::sync::Mutex<Vec<u64>>,
}

impl EndAtHand {
    fn new(bytes: Vec<u8>, from: usize) -> EndAtHand {
        EndAtHand { bytes: Cursor::new(bytes), from: from as u64, reads: Default::default() }
    }

    /// Whether a read started in the first `len` bytes.
    fn read_below(&self, len: usize) -> bool {
        self.reads.lock().unwrap().iter().any(|&at| at < len as u64)
    }
}

impl crate::storage::ReadAt for EndAtHand {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.reads.lock().unwrap().push(offset);
        crate::storage::ReadAt::read_exact_at(&self.bytes, buf, offset)
    }

    fn len(&self) -> std::io::Result<u64> {
        crate::storage::ReadAt::len(&self.bytes)
    }

    fn at_hand(&self, offset: u64, _len: u64) -> bool {
        offset >= self.from
    }
}

/// Issue 51: with the last session's copy at hand, opening reads the
/// header and slots from it, not the archive's first bytes; it accepts the
/// same keys, and `verify` still finds a damaged primary.
#[test]
fn a_copy_at_hand_is_read_instead_of_the_first_bytes_under_the_same_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (path, key_file) = two_sessions(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let data_start = 32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    let last_copy = *copies(&bytes).last().unwrap();
    let password_slot = slot_of(&bytes, 1);

    let src = EndAtHand::new(bytes.clone(), last_copy);
    let archive = Archive::open(&src, &password()).unwrap();
    assert!(!src.read_below(data_start), "the primary was read: {:?}", src.reads.lock().unwrap());
    assert!(archive.header_damage().is_none());
    assert!(archive.verify().unwrap().is_ok());
    let src = EndAtHand::new(bytes.clone(), last_copy);
    Archive::open(&src, &key_file).unwrap();
    assert!(!src.read_below(data_start));

    // A damaged primary is not read to open, and `verify` reports it.
    let damaged = flipped(&bytes, password_slot + 50, 0);
    let src = EndAtHand::new(damaged, last_copy);
    let archive = Archive::open(&src, &password()).unwrap();
    let report = archive.verify().unwrap();
    assert!(report.lost.iter().any(|l| l.contains("at byte 0 differ")), "{:?}", report.lost);

    // A damaged copy: the primary opens, and `verify` reports the copy.
    let damaged = flipped(&bytes, last_copy + password_slot - 32 + 50, 0);
    let src = EndAtHand::new(damaged, last_copy);
    let archive = Archive::open(&src, &password()).unwrap();
    assert!(src.read_below(data_start));
    let report = archive.verify().unwrap();
    assert!(report.lost.iter().any(|l| l.contains("header copy at byte")), "{:?}", report.lost);

    // A wrong key is refused as it is without the copy.
    let src = EndAtHand::new(bytes, last_copy);
    let err = Archive::open(&src, &Password::from("wrong")).expect_err("a wrong password opens nothing");
    assert!(matches!(err, crate::error::Error::WrongPassword), "{err}");
}
