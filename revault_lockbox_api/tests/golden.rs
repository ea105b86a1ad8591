//! Frozen archives: format version 3, one per workload profile plus one
//! with small pages, made once by `write_golden_v3` (ignored) and read by
//! every later build (which writes version 4, and appends to a version 3
//! archive in version 3). A reader change that breaks them breaks users'
//! backups. One version-2 archive stays, to show it is refused clearly.

use std::io::Read;
use std::path::PathBuf;

use std::sync::Arc;

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::keys::{Fingerprint, SigningKey};
use revault_lockbox_api::read::SessionKind;
use revault_lockbox_api::{
    Archive, ArchiveWriter, CreateOptions, EntryKind, KdfParams, OpenOptions, Password, UpdateOptions,
    WorkloadProfile,
};

const PASSWORD: &str = "golden v3";

/// One entry: path, kind, mode, mtime, content or link target.
type Expected = (&'static [u8], &'static str, u32, i64, Vec<u8>);

/// What every v3 golden archive holds, in index order.
fn expected() -> Vec<Expected> {
    let big: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
    vec![
        (b"docs", "dir", 0o755, 1_700_000_000, vec![]),
        (b"docs/big.bin", "file", 0o644, 1_700_000_003, big),
        (b"docs/caf\xe9", "file", 0o644, 1_700_000_004, b"latin-1 name".to_vec()),
        (b"docs/empty", "file", 0o600, 1_700_000_002, vec![]),
        (b"docs/empty-dir", "dir", 0o700, 1_700_000_008, vec![]),
        (b"docs/link", "symlink", 0o777, 1_700_000_005, b"readme.txt".to_vec()),
        (b"docs/readme.txt", "linked", 0o644, 1_700_000_001, b"lockbox golden archive v3\n".to_vec()),
        (b"docs/zz-hard", "hardlink", 0o644, 1_700_000_006, b"docs/readme.txt".to_vec()),
        (b"run.sh", "file", 0o755, 1_700_000_007, b"#!/bin/sh\necho golden\n".to_vec()),
    ]
}

/// Each golden archive and how it was written.
fn goldens() -> Vec<(PathBuf, CreateOptions)> {
    let cheap = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
    let mut all: Vec<(PathBuf, CreateOptions)> = WorkloadProfile::ALL
        .iter()
        .map(|p| (PathBuf::from(format!("tests/golden/v3-{}.lbox", p.name())), cheap.clone().profile(*p)))
        .collect();
    all.push(("tests/golden/v3-16k-pages.lbox".into(), cheap.page_size(16 << 10)));
    all
}

fn meta(mode: u32, mtime: i64) -> Metadata {
    Metadata::new(mode, 1000, 1000, mtime, 123_456_789)
}

/// Adds the entries of [`expected`] to `w`.
fn write_expected(w: &mut ArchiveWriter<Vec<u8>>) {
    for (path, kind, mode, mtime, data) in expected() {
        let m = meta(mode, mtime);
        match kind {
            "dir" => w.add_dir(path, &m).unwrap(),
            "file" => drop(w.add_file(path, &m, data.len() as u64, &data[..]).unwrap()),
            "linked" => drop(w.add_linked_file(path, &m, data.len() as u64, &data[..]).unwrap()),
            "symlink" => w.add_symlink(path, &m, &data).unwrap(),
            _ => w.add_hardlink(path, &m, &data).unwrap(),
        }
    }
}

#[test]
#[ignore = "writes the frozen v3 archives; run once, by hand, when version 3 is defined"]
fn write_golden_v3() {
    for (path, options) in goldens() {
        let options = options.threads(1).label("golden v3");
        let mut w = ArchiveWriter::new(Vec::new(), &Password::from(PASSWORD), options).unwrap();
        write_expected(&mut w);
        std::fs::write(path, w.finish().unwrap()).unwrap();
    }
}

#[test]
fn golden_v3_archives_still_read() {
    for (golden, _) in goldens() {
        let file = std::fs::File::open(&golden).expect("the golden archives are committed");
        let archive = Archive::open(file, &Password::from(PASSWORD)).unwrap();
        assert!(archive.verify().unwrap().is_ok(), "{}", golden.display());
        let session = archive.last_session();
        assert_eq!(
            (session.number, session.kind, session.label.as_str()),
            (0, SessionKind::Change, "golden v3")
        );
        assert!(session.tool.starts_with("revault_lockbox_api "), "{}", session.tool);
        let entries = archive.entries().unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(entries.len(), expected().len());
        for (entry, (path, kind, mode, mtime, data)) in entries.iter().zip(expected()) {
            assert_eq!(entry.path, path);
            assert_eq!(
                (entry.meta.mode, entry.meta.mtime_secs, entry.meta.mtime_nanos, entry.meta.uid),
                (mode, mtime, 123_456_789, 1000)
            );
            match (&entry.kind, kind) {
                (EntryKind::Dir, "dir") => {}
                (EntryKind::File { size, .. }, "file" | "linked") => {
                    assert_eq!(*size, data.len() as u64);
                    let mut got = Vec::new();
                    archive.open_file(path).unwrap().read_to_end(&mut got).unwrap();
                    assert_eq!(got, data, "{}", String::from_utf8_lossy(path));
                }
                (EntryKind::Symlink { target, .. }, "symlink")
                | (EntryKind::Hardlink { target, .. }, "hardlink") => {
                    assert_eq!(target, &data)
                }
                (got, want) => panic!("{}: {got:?}, expected {want}", String::from_utf8_lossy(path)),
            }
        }
    }
}

/// An archive of format version 2 (unreleased, no longer read) is refused
/// with a message that says an earlier lockbox made it, whatever the key.
#[test]
fn a_version_2_archive_is_refused_clearly() {
    let file = std::fs::File::open("tests/golden/v2-balanced.lbox").expect("the v2 sample is committed");
    let err = Archive::open(file, &Password::from("golden v2")).unwrap_err();
    assert!(
        matches!(err, revault_lockbox_api::Error::UnsupportedVersion { found: 2, oldest: 3, newest: 4 }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("version 2: made by an earlier lockbox, not readable by this one"), "{message}");
    assert!(message.ends_with("(it reads versions 3 and 4)"), "{message}");
}

/// The format version fields of an archive's bytes: the header prefix's,
/// then each session's (its header's, its trailer's), last first, read by
/// FORMAT.md's layout along the trailers' `previous_trailer` links.
fn versions_of(bytes: &[u8]) -> (u16, Vec<(u16, u16)>) {
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
    let data_start = 32 + 16 * usize::from(u16_at(30));
    let mut sessions = Vec::new();
    let mut end = bytes.len();
    loop {
        let trailer = end - 216;
        assert_eq!(&bytes[trailer..trailer + 8], b"LBOXTAIL");
        let previous = u64::from_le_bytes(bytes[trailer + 156..trailer + 164].try_into().unwrap()) as usize;
        let start = if previous == 0 { data_start } else { previous };
        assert_eq!(&bytes[start..start + 8], b"LBOXSESS");
        sessions.push((u16_at(start + 8), u16_at(trailer + 8)));
        if previous == 0 {
            return (u16_at(8), sessions);
        }
        end = previous;
    }
}

#[test]
fn a_new_archive_is_version_4() {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).threads(1);
    let mut w = ArchiveWriter::new(Vec::new(), &Password::from(PASSWORD), options).unwrap();
    write_expected(&mut w);
    let bytes = w.finish().unwrap();
    assert_eq!(versions_of(&bytes), (4, vec![(4, 4)]));
    let archive = Archive::open(std::io::Cursor::new(bytes), &Password::from(PASSWORD)).unwrap();
    assert_eq!(archive.info().unwrap().version, 4);
}

/// DEDUP.md's rule: an append to a version 3 archive writes a version 3
/// session (the archive keeps reading as version 3, by older builds too);
/// `compact` rewrites it as version 4, its key slots kept byte for byte.
#[test]
fn a_golden_v3_archive_takes_a_v3_append_and_compacts_to_v4() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.lbox");
    let golden = std::fs::read("tests/golden/v3-balanced.lbox").unwrap();
    std::fs::write(&path, &golden).unwrap();
    let password = Password::from(PASSWORD);
    assert_eq!(versions_of(&golden), (3, vec![(3, 3)]));

    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("new.txt"), b"appended to a v3 archive").unwrap();
    let updater = revault_lockbox_api::ArchiveUpdater::open(&path, &password, UpdateOptions::new()).unwrap();
    updater.add(&src, &["new.txt".into()]).unwrap();
    let appended = std::fs::read(&path).unwrap();
    assert_eq!(&appended[..golden.len()], &golden[..], "an append leaves the v3 bytes as they were");
    assert_eq!(versions_of(&appended), (3, vec![(3, 3), (3, 3)]));
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    assert_eq!(archive.info().unwrap().version, 3);
    assert_eq!(archive.entries().unwrap().count(), expected().len() + 1);

    revault_lockbox_api::ArchiveUpdater::compact(&path, &password, UpdateOptions::new()).unwrap();
    let compacted = std::fs::read(&path).unwrap();
    assert_eq!(versions_of(&compacted), (4, vec![(4, 4)]));
    let slots = 32..32 + 16 * usize::from(u16::from_le_bytes([golden[30], golden[31]]));
    assert_eq!(compacted[slots.clone()], golden[slots], "the key slots are kept byte for byte");
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    assert_eq!(archive.info().unwrap().version, 4);
    let mut got = Vec::new();
    archive.open_file(b"new.txt").unwrap().read_to_end(&mut got).unwrap();
    assert_eq!(got, b"appended to a v3 archive");
    assert_eq!(archive.entries().unwrap().count(), expected().len() + 1);
}

/// `repair` of a cut version 3 archive writes what the salvage proves as
/// a version 4 archive, as every rewrite does, under the same key slots.
#[test]
fn a_cut_golden_v3_archive_is_repaired_as_v4() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.lbox");
    let golden = std::fs::read("tests/golden/v3-balanced.lbox").unwrap();
    std::fs::write(&path, &golden[..golden.len() - 100]).unwrap();
    let password = Password::from(PASSWORD);
    let report = revault_lockbox_api::ArchiveUpdater::repair(&path, &password, UpdateOptions::new()).unwrap();
    assert!(report.salvaged.is_some(), "{report:?}");
    let repaired = std::fs::read(&path).unwrap();
    assert_eq!(versions_of(&repaired), (4, vec![(4, 4)]));
    let archive = Archive::open(std::fs::File::open(&path).unwrap(), &password).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    assert_eq!(archive.entries().unwrap().count(), expected().len());
}

/// The signed golden archive: the v3 entries, signed by the key of the
/// signing vectors (docs/KEYS.md), whose fingerprint is `SIGNER`.
const SIGNED: &str = "tests/golden/v3-signed.lbox";
const SIGNER: &str = "lbsig1uzezh3v3ehrrx74j4crx9euau0cd70p57kkycuhqlyd7ez762cqqfptunp";
/// Its commit hash (FORMAT.md §10).
const SIGNED_COMMIT: &str = "94333f25858329ae45b7fc860ae4acfa697db5e735209e3b1c083b50879f55d1";

fn vector_key() -> SigningKey {
    let text = std::fs::read_to_string("tests/vectors/signing/hybrid-v1.txt").unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix("key line: ")).unwrap();
    SigningKey::parse_file(line.as_bytes(), &mut |_| None).unwrap()
}

#[test]
#[ignore = "writes the frozen signed archive; run once, by hand, when signing is defined"]
fn write_golden_signed() {
    let options =
        CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).threads(1).label("golden v3 signed");
    let mut w =
        ArchiveWriter::new(Vec::new(), &Password::from(PASSWORD), options.sign(Arc::new(vector_key())))
            .unwrap();
    write_expected(&mut w);
    std::fs::write(SIGNED, w.finish().unwrap()).unwrap();
}

/// The known-answer vector of FORMAT.md §10 for signatures: a fixed key, a
/// fixed archive; the block read by its documented layout, the Ed25519
/// half (deterministic) signed again over the documented message.
#[test]
fn golden_signed_archive_is_a_known_answer() {
    let bytes = std::fs::read(SIGNED).expect("the signed golden archive is committed");
    let signer: Fingerprint = SIGNER.parse().unwrap();
    let options = OpenOptions::new().trust([signer]);
    let archive =
        Archive::open_with(std::io::Cursor::new(bytes.clone()), &Password::from(PASSWORD), options).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    let commit: String = archive.commit_hash().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(commit, SIGNED_COMMIT);

    // trailer: signature_len u32 at 196; the block right before it.
    let trailer = &bytes[bytes.len() - 216..];
    let len = u32::from_le_bytes(trailer[196..200].try_into().unwrap()) as usize;
    assert_eq!(len, 8 + 1 + 2 + 4 + 32 + 4 + 1 + 1984 + 3373);
    let block = &bytes[bytes.len() - 216 - len..bytes.len() - 216];
    let key = vector_key();
    assert_eq!(&block[..11], b"LBOXSIGN\x01\x01\x00", "magic, count 1, scheme 1");
    assert_eq!(block[11..15], 32u32.to_le_bytes());
    assert_eq!(block[15..47], signer.0);
    assert_eq!(block[47..51], (1 + 1984 + 3373u32).to_le_bytes());
    assert_eq!(block[51], 0, "flags");
    assert_eq!(&block[52..52 + 1984], key.verifying_key().as_bytes());
    let archive_id: [u8; 16] = bytes[12..28].try_into().unwrap();
    let again = key.sign_commit(&archive_id, &archive.commit_hash(), 0).unwrap().to_bytes();
    assert_eq!(block[52 + 1984..52 + 1984 + 64], again[..64], "the Ed25519 half");
    let signers = archive.check_signers(&[signer]).unwrap();
    assert!(signers[0].signatures[0].valid);
}
