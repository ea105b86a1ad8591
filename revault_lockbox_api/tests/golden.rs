//! Frozen archives: one per format version, made once by `write_golden_v1`
//! (ignored) and read by every later build. A reader change that breaks
//! them breaks users' backups.

use std::io::Read;
use std::path::Path;

use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, EntryKind, KdfParams, Metadata, Password};

const V1: &str = "tests/golden/v1.lbox";
const PASSWORD: &str = "golden v1";

/// One entry of v1.lbox: path, kind, mode, mtime, content or link target.
type Expected = (&'static [u8], &'static str, u32, i64, Vec<u8>);

/// What v1.lbox holds.
fn expected() -> Vec<Expected> {
    let big: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
    vec![
        (b"docs", "dir", 0o755, 1_700_000_000, vec![]),
        (b"docs/readme.txt", "file", 0o644, 1_700_000_001, b"lockbox golden archive v1\n".to_vec()),
        (b"docs/empty", "file", 0o600, 1_700_000_002, vec![]),
        (b"docs/big.bin", "file", 0o644, 1_700_000_003, big),
        (b"docs/caf\xe9", "file", 0o644, 1_700_000_004, b"latin-1 name".to_vec()),
        (b"docs/link", "symlink", 0o777, 1_700_000_005, b"readme.txt".to_vec()),
        (b"docs/hard", "hardlink", 0o644, 1_700_000_006, b"docs/readme.txt".to_vec()),
        (b"run.sh", "file", 0o755, 1_700_000_007, b"#!/bin/sh\necho golden\n".to_vec()),
    ]
}

fn meta(mode: u32, mtime: i64) -> Metadata {
    Metadata { mode, uid: 1000, gid: 1000, mtime_secs: mtime, mtime_nanos: 123_456_789 }
}

#[test]
#[ignore = "writes the frozen v1 archive; run once, by hand, when version 1 is defined"]
fn write_golden_v1() {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(16 << 10);
    let mut w = ArchiveWriter::new(Vec::new(), &Password::from(PASSWORD), options).unwrap();
    for (path, kind, mode, mtime, data) in expected() {
        let m = meta(mode, mtime);
        match kind {
            "dir" => w.add_dir(path, &m).unwrap(),
            "file" => drop(w.add_file(path, &m, data.len() as u64, &data[..]).unwrap()),
            "symlink" => w.add_symlink(path, &m, &data).unwrap(),
            _ => w.add_hardlink(path, &m, &data).unwrap(),
        }
    }
    std::fs::write(V1, w.finish().unwrap()).unwrap();
}

#[test]
fn golden_v1_still_reads() {
    let file = std::fs::File::open(Path::new(V1)).expect("tests/golden/v1.lbox is committed");
    let mut archive = Archive::open(file, &Password::from(PASSWORD)).unwrap();
    assert!(archive.verify().unwrap().is_ok());
    let entries = archive.entries().to_vec();
    assert_eq!(entries.len(), expected().len());
    for (entry, (path, kind, mode, mtime, data)) in entries.iter().zip(expected()) {
        assert_eq!(entry.path, path);
        assert_eq!(
            (entry.mode, entry.mtime_secs, entry.mtime_nanos, entry.uid),
            (mode, mtime, 123_456_789, 1000)
        );
        match (&entry.kind, kind) {
            (EntryKind::Dir, "dir") => {}
            (EntryKind::File { size, .. }, "file") => {
                assert_eq!(*size, data.len() as u64);
                let mut got = Vec::new();
                archive.open_file(path).unwrap().read_to_end(&mut got).unwrap();
                assert_eq!(got, data, "{}", String::from_utf8_lossy(path));
            }
            (EntryKind::Symlink { target }, "symlink") | (EntryKind::Hardlink { target }, "hardlink") => {
                assert_eq!(target, &data)
            }
            (got, want) => panic!("{}: {got:?}, expected {want}", String::from_utf8_lossy(path)),
        }
    }
}
