//! Hostile and damaged archives of the commit rule, the states' numbering
//! and the rewrites (issue 46: B1, B3, B5, B7, B8): every reader agrees on
//! what is committed, `verify` passes only a chain whose every state
//! opens, state numbers never wrap, a rewrite costs what is stored, and
//! the remedy a writer names at a limit works.

use std::io::Cursor;
use std::path::Path;

use crate::archive::{Archive, AsOf, OpenOptions, Salvage};
use crate::crypto::{KdfParams, Password, SessionKeys};
use crate::error::Error;
use crate::file::{ArchiveUpdater, UpdateOptions};
use crate::format::{SessionKind, Trailer, SESSION_HEADER_CLEAR_LEN, TRAILER_LEN};
use crate::keys::KeySet;
use crate::session::{ArchiveWriter, CreateOptions, Metadata, SessionStart};

pub(super) fn password() -> Password {
    Password::from("chain")
}

pub(super) fn options() -> CreateOptions {
    CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096)
}

/// An archive of one small file whose first session `shape` makes.
pub(super) fn shaped(shape: impl FnOnce(SessionStart) -> SessionStart) -> Vec<u8> {
    let keys = KeySet::from(&password());
    let mut w = ArchiveWriter::with_keys_shaped(Vec::new(), &keys, options(), shape).unwrap();
    w.add_file("a", &Metadata::new(0o644, 0, 0, 1_700_000_000, 0), 3, &b"abc"[..]).unwrap();
    w.finish().unwrap()
}

/// Adds a file `name` to the archive at `path` in a session of its own.
pub(super) fn add(path: &Path, name: &str) -> crate::error::Result<()> {
    let src = path.with_extension("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join(name), name).unwrap();
    let updater = ArchiveUpdater::open(path, &password(), UpdateOptions::new())?;
    updater.add(&src, &[name.into()]).map(drop)
}

/// `bytes` with the last trailer changed by `lie` and tagged again under
/// its session's key: what anyone holding the key can write.
pub(super) fn forged_trailer(bytes: &[u8], lie: impl FnOnce(&mut Trailer)) -> Vec<u8> {
    let a = Archive::open(Cursor::new(bytes.to_vec()), &password()).unwrap();
    let (_, content_key, _) = a.append_point();
    let at = bytes.len() - TRAILER_LEN;
    let mut trailer = Trailer::parse(bytes[at..].try_into().unwrap()).unwrap();
    lie(&mut trailer);
    trailer.tag = SessionKeys::derive(content_key, &trailer.session_salt).trailer_tag(&trailer.body());
    let mut forged = bytes.to_vec();
    forged[at..].copy_from_slice(&trailer.encode());
    forged
}

#[test]
fn a_salvaged_archive_never_verifies_even_when_the_scan_proves_every_entry() {
    let bytes = shaped(|s| s);
    let intact = Salvage::scan(Cursor::new(bytes.clone()), &password(), OpenOptions::new()).unwrap();
    assert!(intact.verify().unwrap().is_ok(), "an intact archive's scan loses nothing");
    // What §6.1 checks of a trailer that authenticates (B1's cases).
    type Lie = fn(&mut Trailer);
    let lies: [(&str, Lie); 2] = [
        ("root_hash", |t| t.root_hash[0] ^= 1),
        ("previous_hash of a first session", |t| t.previous_hash[0] ^= 1),
    ];
    for (name, lie) in lies {
        let forged = forged_trailer(&bytes, lie);
        let err = Archive::open(Cursor::new(forged.clone()), &password()).unwrap_err();
        assert!(err.is_authentication(), "{name}: {err}");
        let salvage = Salvage::scan(Cursor::new(forged), &password(), OpenOptions::new()).unwrap();
        assert_eq!(salvage.entries().len(), 1, "{name}: the scan proves the file");
        let report = salvage.verify().unwrap();
        assert!(!report.is_ok(), "{name}: verify of a salvage passed: {report:?}");
        assert!(report.lost[0].contains(&err.to_string()), "{name}: {:?} without {err}", report.lost);
        let dest = tempfile::tempdir().unwrap();
        let extracted = salvage.extract(dest.path(), &crate::extract::ExtractOptions::new().sync(false));
        assert!(!extracted.unwrap().lost.is_empty(), "{name}: extract --keep-going reported nothing lost");
    }
}

#[test]
fn a_header_hash_that_lies_reads_as_a_damaged_session_header() {
    // The session's keys come from its trailer's salt: a header that is
    // not the one the trailer commits to is damage, reported, and the
    // state reads through the trailer and its record (FORMAT.md §6.1 step 6).
    let forged = forged_trailer(&shaped(|s| s), |t| t.header_hash[0] ^= 1);
    let a = Archive::open(Cursor::new(forged), &password()).unwrap();
    assert!(a.session_header_damage().unwrap().contains("hash differs"), "{:?}", a.session_header_damage());
    assert_eq!(a.entry_count(), 1);
    let report = a.verify().unwrap();
    assert!(report.lost.iter().any(|l| l.contains("session header")), "{:?}", report.lost);
}

#[test]
fn verify_opens_every_session_header_the_chain_commits_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, shaped(|s| s)).unwrap();
    add(&path, "b").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let a = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
    assert!(a.verify().unwrap().is_ok());
    assert!(a.at(AsOf::State(1)).is_ok());
    // B3: one byte of the first session's sealed header body, no key
    // needed: the last state is proven, the damage reported.
    let mut flipped = bytes;
    flipped[a.data_start() as usize + SESSION_HEADER_CLEAR_LEN + 1] ^= 1;
    let a = Archive::open(Cursor::new(flipped), &password()).unwrap();
    // The first state still opens, through its trailer and record.
    let first = a.at(AsOf::State(1)).unwrap();
    assert!(first.session_header_damage().is_some());
    assert_eq!(first.entry_count(), 1);
    let report = a.verify().unwrap();
    assert!(!report.is_ok(), "verify passed a chain whose first state does not open");
    assert!(report.lost.iter().any(|l| l.contains("session header")), "{:?}", report.lost);
}

#[test]
fn no_writer_wraps_the_state_count() {
    // B5: a compaction holding the last state there is. A change after it
    // would be state 0: `compact` then kept an archive nothing opened.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    let at_the_last = |s| SessionStart { kind: SessionKind::Compaction, state: u64::MAX, ..s };
    std::fs::write(&path, shaped(at_the_last)).unwrap();
    let a = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert_eq!(a.history().unwrap()[0].state, Some(u64::MAX));
    let before = std::fs::read(&path).unwrap();
    let err = add(&path, "b").unwrap_err();
    assert!(matches!(err, Error::Malformed(_)), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the refused add left nothing behind");
}

#[test]
fn compact_at_the_session_limit_renumbers_and_the_archive_changes_again() {
    // B8: the last session number there is. `add` names `compact` as the
    // remedy; `compact` refused in the same words, so nothing could ever
    // change the archive again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, shaped(|s| SessionStart { number: u32::MAX, ..s })).unwrap();
    let err = add(&path, "b").unwrap_err();
    assert!(matches!(err, Error::TooManySessions { .. }), "{err}");
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new()).unwrap();
    let a = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert_eq!(a.last_session().number, 0, "renumbered from 0");
    assert_eq!(a.history().unwrap()[0].state, Some(1), "the state kept keeps its number");
    add(&path, "b").unwrap();
    let a = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    assert_eq!((a.last_session().number, a.entry_count()), (1, 2));
    assert!(a.verify().unwrap().is_ok());
}

#[test]
fn compact_of_a_huge_sparse_file_costs_what_is_stored() {
    // B7: 4.7 KB declaring a 1 PiB sparse file kept `compact` (and
    // `key add`'s rewrite, the same copy) reading zeros for hours.
    let (size, far) = (1u64 << 50, 1u64 << 49);
    let map = crate::format::SparseMap::new(vec![(0, 4), (far, 4)], size).unwrap();
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options()).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 1_700_000_000, 0);
    w.add_sparse_file("huge", &meta, map, size, false, &b"headtail"[..]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    let (done, compacted) = std::sync::mpsc::channel();
    let compacting = path.clone();
    std::thread::spawn(move || {
        let _ = done.send(ArchiveUpdater::compact(&compacting, &password(), UpdateOptions::new()).map(drop));
    });
    // Minutes for what takes milliseconds: it went on through the holes.
    let result = compacted.recv_timeout(std::time::Duration::from_secs(120));
    result.expect("compact still running after 120 s: it reads the holes").unwrap();
    let a = Archive::open(std::fs::File::open(&path).unwrap(), &password()).unwrap();
    let entry = a.find(b"huge").unwrap().unwrap();
    assert_eq!(entry.sparse_map().map(|m| m.segments().to_vec()), Some(vec![(0, 4), (far, 4)]));
    assert_eq!(a.content_bytes(), 8);
    assert!(a.verify().unwrap().is_ok());
}

#[test]
fn a_record_that_differs_from_its_session_header_is_refused() {
    // Defect 13: the record's time differed from the header's; `log`
    // showed the record's, `info` the header's, and every command read it.
    let keys = KeySet::from(&password());
    let mut w = ArchiveWriter::with_keys_shaped(Vec::new(), &keys, options(), |s| s).unwrap();
    w.add_file("a", &Metadata::new(0o644, 0, 0, 1_700_000_000, 0), 3, &b"abc"[..]).unwrap();
    w.misdate_record(1);
    let err = Archive::open(Cursor::new(w.finish().unwrap()), &password()).map(drop).unwrap_err();
    assert!(matches!(err, Error::Malformed(_)), "{err}");
    assert!(err.to_string().contains("differs from its session header"), "{err}");
}

/// A session whose header or trailer carries another version than the
/// archive's header is malformed, even when it authenticates: a writer
/// never mixes versions in one archive (FORMAT.md §9).
#[test]
fn a_session_of_another_version_than_the_header_is_malformed() {
    // The header says 4 (a new archive); the session was written as 3.
    let mixed = shaped(|s| SessionStart { version: 3, ..s });
    assert_eq!(mixed[8], 4);
    let err = Archive::open(Cursor::new(mixed.clone()), &password()).unwrap_err();
    assert!(matches!(&err, Error::Malformed(e) if e.what == "trailer"), "{err:?}");
    assert!(err.to_string().contains("format version differs from the archive header's"), "{err}");
    // The same session under a header that says 3 reads.
    let mut v3 = mixed;
    v3[8] = 3;
    let a = Archive::open(Cursor::new(v3.clone()), &password()).unwrap();
    assert!(a.verify().unwrap().is_ok());
    assert_eq!(a.version(), 3);
    // Its trailer retagged as version 4, under a header that says 4: the
    // session header (committed to by the trailer's hash) still says 3.
    let mut forged = forged_trailer(&v3, |t| t.version = 4);
    forged[8] = 4;
    let err = Archive::open(Cursor::new(forged), &password()).unwrap_err();
    assert!(matches!(&err, Error::Malformed(e) if e.what == "session header"), "{err:?}");
}

/// The chunked writer asks the session whether it may chunk: only in an
/// archive of version 4 or later.
#[test]
fn only_a_version_4_session_may_chunk() {
    let keys = KeySet::from(&password());
    for (version, allowed) in [(3, false), (4, true)] {
        let w =
            ArchiveWriter::with_keys_shaped(Vec::new(), &keys, options(), |s| SessionStart { version, ..s })
                .unwrap();
        assert_eq!(w.chunking_allowed(), allowed, "version {version}");
    }
}

/// A version 3 archive never holds a chunked file (FORMAT.md §9): one
/// whose entry says chunked is malformed before its list is read; the
/// same entry in a version 4 archive gets as far as its list.
#[test]
fn a_chunked_file_in_a_version_3_archive_is_malformed() {
    let chunked_entry = |version: u16| {
        let keys = KeySet::from(&password());
        let shape = |s| SessionStart { version, ..s };
        let mut w = ArchiveWriter::with_keys_shaped(Vec::new(), &keys, options(), shape).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 1_700_000_000, 0);
        w.add_file("a", &meta, 44, &[0u8; 44][..]).unwrap();
        let mut bytes = w.finish().unwrap();
        bytes[8] = version as u8;
        let a = Archive::open(Cursor::new(bytes), &password()).unwrap();
        let mut entry = a.find(b"a").unwrap().unwrap();
        entry.extent.as_mut().unwrap().chunks = 1;
        a.chunk_list(&entry).map(drop)
    };
    let err = chunked_entry(3).unwrap_err();
    assert!(err.to_string().contains("a chunked file in an archive of version 3"), "{err}");
    // Its list (44 zero bytes: one chunk of length 0) is read and refused.
    let err = chunked_entry(4).unwrap_err();
    assert!(!err.to_string().contains("version 3"), "{err}");
    assert!(matches!(&err, Error::Malformed(e) if e.what.contains("chunk")), "{err:?}");
}
