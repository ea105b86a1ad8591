//! Issue 50, item 1: every writer ends its sessions with a recovery record
//! when asked (FORMAT.md §3.12), readers walk chains that mix sessions with
//! and without one, and the records written repair what they protect.

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::archive::{Archive, OpenOptions};
use crate::crypto::{KdfParams, Password};
use crate::error::Error;
use crate::file::{create_archive, ArchiveUpdater, UpdateOptions};
use crate::format::{Trailer, TRAILER_LEN};
use crate::keys::SigningKey;
use crate::recovery::{locate_records, repair, LocatedRecord, StoredParity, SHARD_LEN};
use crate::session::{ArchiveWriter, CreateOptions};
use crate::test_data::random;

fn password() -> Password {
    Password::from("parity")
}

fn create_options() -> CreateOptions {
    CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS)
}

/// A tree of `len` random bytes in three files, and an archive of it
/// created with `options`.
fn archive_of(dir: &Path, len: usize, options: CreateOptions) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for (i, part) in random(len, 1).chunks(len / 3 + 1).enumerate() {
        std::fs::write(src.join(format!("f{i}")), part).unwrap();
    }
    let path = dir.join("a.lbox");
    create_archive(&path, dir, &["src".into()], &password(), options).unwrap();
    path
}

fn records(path: &Path) -> Vec<LocatedRecord> {
    let file = File::open(path).unwrap();
    locate_records(&file, file.metadata().unwrap().len()).unwrap()
}

fn open(path: &Path) -> Archive<File> {
    Archive::open_with(File::open(path).unwrap(), &password(), OpenOptions::new()).unwrap()
}

fn verified(path: &Path) -> crate::archive::VerifyReport {
    open(path).verify().unwrap()
}

fn add(path: &Path, dir: &Path, name: &str, content: &[u8], options: UpdateOptions) {
    std::fs::write(dir.join("src").join(name), content).unwrap();
    let updater = ArchiveUpdater::open(path, &password(), options).unwrap();
    updater.add(dir, &[format!("src/{name}").into()]).unwrap();
}

/// Damages `run` bytes of the protected range of `record` at `offset` in
/// it, repairs them from the stored record, and checks that the bytes
/// come back as they were.
fn damage_and_repair(bytes: &[u8], record: &LocatedRecord, offset: u64, run: usize) {
    let start = (record.footer.protected_start + offset) as usize;
    let mut damaged = bytes.to_vec();
    damaged[start..start + run].fill(0xEE);
    let source = Cursor::new(damaged.clone());
    let mut parity = StoredParity::new(&source, record.record_at(), &record.footer);
    let protected_start = record.footer.protected_start;
    let report =
        repair(&source, protected_start, &record.footer.layout, 1 << 20, &mut parity, |index, shard| {
            let at = (protected_start + index * SHARD_LEN as u64) as usize;
            damaged[at..at + shard.len()].copy_from_slice(shard);
            Ok(())
        })
        .unwrap();
    assert!(report.unrepairable.is_empty() && report.rebuilt > 0, "{report:?}");
    assert!(damaged == bytes, "the repaired archive is the one written");
}

#[test]
fn records_round_trip_on_create_add_update_rm_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive_of(dir.path(), 3 << 20, create_options().recovery(5));
    let first = records(&path);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].footer.percent, 5);
    assert_eq!(first[0].session_end(), std::fs::metadata(&path).unwrap().len());
    assert!(verified(&path).is_ok());
    let bytes = std::fs::read(&path).unwrap();
    let run = (first[0].footer.layout.len * 5 / 100) as usize;
    damage_and_repair(&bytes, &first[0], 0, run);
    damage_and_repair(&bytes, &first[0], first[0].footer.layout.len - run as u64, run);

    // An add with a record, one without (the walk from the end stops at
    // it), an update and an rm with records again.
    add(&path, dir.path(), "g", &random(200_000, 2), UpdateOptions::new().recovery(10));
    assert_eq!(records(&path).len(), 2);
    add(&path, dir.path(), "h", b"no parity", UpdateOptions::new());
    assert!(records(&path).is_empty(), "the last session has none");
    assert!(verified(&path).is_ok(), "a chain that mixes sessions with and without records");
    std::fs::write(dir.path().join("src/f0"), b"changed").unwrap();
    let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new().recovery(5)).unwrap();
    updater.update(dir.path(), &["src".into()], false).unwrap();
    let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new().recovery(1)).unwrap();
    updater.remove(&[b"src/g".to_vec()]).unwrap();
    let found = records(&path);
    assert_eq!(found.iter().map(|r| r.footer.percent).collect::<Vec<_>>(), vec![5, 1]);
    let report = verified(&path);
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.files, 4);
    let bytes = std::fs::read(&path).unwrap();
    for record in &found {
        damage_and_repair(&bytes, record, 0, 100);
    }

    // A compaction with a record writes one over the compacted archive;
    // without, none.
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new().recovery(5)).unwrap();
    let compacted = records(&path);
    assert_eq!(compacted.len(), 1);
    assert!(compacted[0].footer.owner.first_session);
    assert!(verified(&path).is_ok());
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new()).unwrap();
    assert!(records(&path).is_empty());
    assert!(verified(&path).is_ok());
}

#[test]
fn a_record_costs_its_percentage_and_its_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let plain = archive_of(&dir.path().join("plain"), 6 << 20, create_options());
    let parity = archive_of(&dir.path().join("parity"), 6 << 20, create_options().recovery(5));
    let (plain, parity) =
        (std::fs::metadata(plain).unwrap().len(), std::fs::metadata(&parity).unwrap().len());
    let ratio = parity as f64 / plain as f64;
    // 5 %, the rounding and the one more shard of a group (0.3 % here),
    // the checksum lists twice (0.4 %): FORMAT.md §3.12.
    assert!((1.05..1.058).contains(&ratio), "{plain} -> {parity}: {ratio}");
}

#[test]
fn a_session_cut_inside_its_record_leaves_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive_of(dir.path(), 1 << 20, create_options());
    add(&path, dir.path(), "g", &random(300_000, 3), UpdateOptions::new().recovery(5));
    let bytes = std::fs::read(&path).unwrap();
    let last = Trailer::parse(bytes[bytes.len() - TRAILER_LEN..].try_into().unwrap()).unwrap();
    // A crash after the first trailer, while the record was written.
    let cut = last.record_offset() as usize + 5000;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let archive = open(&path);
    assert_eq!(archive.entry_count(), 4, "the create's state: src and its three files");
    assert_eq!(archive.torn_tail_bytes(), (cut - last.previous_trailer as usize) as u64);
    // The second trailer lost, the record whole: the session reads through
    // its first trailer, and the damage is reported.
    let mut damaged = bytes.clone();
    let second = damaged.len() - TRAILER_LEN;
    damaged[second + 100] ^= 1;
    std::fs::write(&path, &damaged).unwrap();
    let archive = open(&path);
    assert_eq!(archive.entry_count(), 5);
    assert!(archive.record_damage().unwrap().contains("second copy"), "{:?}", archive.record_damage());
    assert!(!archive.verify().unwrap().is_ok());
}

#[test]
fn a_signed_session_with_a_record_verifies_and_a_changed_record_byte_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let key = Arc::new(SigningKey::generate().unwrap());
    let path = archive_of(dir.path(), 1 << 20, create_options().recovery(5).sign(Arc::clone(&key)));
    let archive = open(&path);
    archive.check_signers(&[key.fingerprint()]).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    let record = records(&path)[0];
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[record.record_at() as usize + 4200] ^= 0x80;
    std::fs::write(&path, &bytes).unwrap();
    let archive = open(&path);
    archive.check_signers(&[key.fingerprint()]).unwrap();
    let report = archive.verify().unwrap();
    assert!(report.lost.iter().any(|l| l.contains("does not match its footer's hash")), "{report:?}");
}

#[test]
fn a_footer_from_another_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive_of(dir.path(), 500_000, create_options().recovery(5));
    add(&path, dir.path(), "g", &random(500_000, 4), UpdateOptions::new().recovery(5));
    let found = records(&path);
    let bytes = std::fs::read(&path).unwrap();
    // The first session's footer copied over the second's: it decodes at
    // its own place only, and never against the second's trailer.
    let (from, to) = (found[0].footer_at as usize, found[1].footer_at as usize);
    let mut moved = bytes.clone();
    moved.copy_within(from..from + crate::format::FOOTER_LEN, to);
    std::fs::write(&path, &moved).unwrap();
    let archive = open(&path);
    assert!(archive.record_damage().unwrap().contains("not usable"), "{:?}", archive.record_damage());
    assert_eq!(archive.entry_count(), 5, "the state reads all the same");
}

#[test]
fn a_stream_or_a_version_3_archive_refuses_a_record() {
    let options = create_options().recovery(5);
    let e = ArchiveWriter::new(Vec::new(), &password(), options).err().unwrap();
    assert!(matches!(e, Error::RecoveryUnavailable { .. }), "{e}");
    assert!(e.to_string().contains("stream"), "{e}");
    let e = ArchiveWriter::new(Vec::new(), &password(), create_options().recovery(51)).err().unwrap();
    assert!(matches!(e, Error::InvalidRecovery { percent: 51 }), "{e}");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v3-balanced.lbox");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.lbox");
    std::fs::copy(golden, &path).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/new"), b"new").unwrap();
    let key = Password::from("golden v3");
    let updater = ArchiveUpdater::open(&path, &key, UpdateOptions::new().recovery(5)).unwrap();
    let e = updater.add(dir.path(), &["src/new".into()]).err().unwrap();
    assert!(e.to_string().contains("format version 3"), "{e}");
}
