//! The sessions tree on real files: what one more session costs however
//! many came before, and every session's record read back.

use std::fs;
use std::path::Path;

use revault_lockbox_api::{ArchiveUpdater, UpdateOptions};

use crate::util::*;

/// Adds one small file `name` in a session of its own; returns the
/// session's bytes.
fn add_one(archive: &Path, src: &Path, name: &str) -> u64 {
    fs::write(src.join(name), name.as_bytes()).unwrap();
    let updater = ArchiveUpdater::open(archive, &password(), UpdateOptions::new().threads(2)).unwrap();
    updater.add(src, &[name.into()]).unwrap().bytes_written
}

/// The most bytes one of 17 single-file adds writes (17: one of them
/// writes a full sessions leaf) once the archive holds `sessions`.
fn costliest_add_after(archive: &Path, src: &Path, sessions: u64, next: &mut u32) -> u64 {
    while open(archive).sessions() < sessions {
        add_one(archive, src, &format!("f{next:04}"));
        *next += 1;
    }
    (0..17)
        .map(|_| {
            *next += 1;
            add_one(archive, src, &format!("f{:04}", *next - 1))
        })
        .max()
        .unwrap()
}

#[test]
fn a_one_file_add_writes_a_bounded_amount_whatever_the_session_count() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("first"), b"first").unwrap();
    let archive = archive_of(dir.path(), &src, &["first"], cheap());
    let mut next = 0;
    let at_10 = costliest_add_after(&archive, &src, 10, &mut next);
    let at_300 = costliest_add_after(&archive, &src, 300, &mut next);
    eprintln!("the costliest one-file add writes {at_10} bytes at 10 sessions, {at_300} at 300");
    // Listing every session in the root would add ~60 bytes a session:
    // 17 KB more at 300 sessions than at 10.
    assert!(at_300 <= at_10 + 1024, "{at_300} bytes at 300 sessions, {at_10} at 10");
    let a = open(&archive);
    assert!(a.sessions() >= 300);
    assert_eq!(a.entry_count(), 1 + u64::from(next));
    let report = a.verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
}
