//! Append sessions on real files: add, update, remove, compact, repair;
//! what readers see after each, what a crash or a truncation leaves, and
//! bad input refused before anything is written.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use revault_lockbox_api::{Archive, ArchiveUpdater, EntryKind, Error, Password, UpdateOptions};

use crate::util::*;

fn updater(archive: &Path) -> ArchiveUpdater {
    ArchiveUpdater::open(archive, &password(), UpdateOptions::new().threads(2)).unwrap()
}

fn names(archive: &Path) -> Vec<String> {
    entries(&open(archive)).into_iter().map(|e| String::from_utf8(e.path).unwrap()).collect()
}

fn content(archive: &Path, path: &str) -> Vec<u8> {
    let a = open(archive);
    let mut r = a.open_file(path).unwrap();
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut r, &mut out).unwrap();
    out
}

fn verified(archive: &Path) {
    let a = open(archive);
    let report = a.verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(a.torn_tail_bytes(), 0);
}

/// The session salts of every trailer in the chain, newest first: each
/// trailer's salt (bytes 28..60) and where the previous one ends (156..164).
pub fn trailer_salts(bytes: &[u8]) -> Vec<[u8; 32]> {
    let mut salts = Vec::new();
    let mut end = bytes.len();
    while end > 0 {
        let t = &bytes[end - TRAILER_LEN..end];
        assert_eq!(&t[..8], b"LBOXTAIL");
        salts.push(t[28..60].try_into().unwrap());
        end = u64::from_le_bytes(t[156..164].try_into().unwrap()) as usize;
    }
    salts
}

fn tree(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(src.join("docs/old")).unwrap();
    fs::write(src.join("docs/a.txt"), b"alpha\n").unwrap();
    fs::write(src.join("docs/old/x.txt"), b"x".repeat(5000)).unwrap();
    fs::write(src.join("docs/z.bin"), (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>())
        .unwrap();
    fs::write(src.join("top.txt"), b"top\n").unwrap();
    src
}

#[test]
fn add_replaces_and_extends_remove_hides_subtrees() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs", "top.txt"], cheap());
    let before = fs::read(&archive).unwrap();

    fs::write(src.join("docs/a.txt"), b"alpha, changed\n").unwrap();
    fs::write(src.join("docs/new.txt"), b"new\n").unwrap();
    let report = updater(&archive).add(&src, &["docs/a.txt".into(), "docs/new.txt".into()]).unwrap();
    assert_eq!((report.stored, report.entries), (2, 7));
    let after = fs::read(&archive).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "an append never rewrites committed bytes");
    assert_eq!(
        names(&archive),
        ["docs", "docs/a.txt", "docs/new.txt", "docs/old", "docs/old/x.txt", "docs/z.bin", "top.txt"]
    );
    assert_eq!(content(&archive, "docs/a.txt"), b"alpha, changed\n");
    assert_eq!(content(&archive, "docs/z.bin").len(), 800_000);
    verified(&archive);

    let report = updater(&archive).remove(&[b"docs/old".to_vec(), b"top.txt".to_vec()]).unwrap();
    assert_eq!((report.deleted, report.entries), (2, 4));
    assert_eq!(names(&archive), ["docs", "docs/a.txt", "docs/new.txt", "docs/z.bin"]);
    assert!(
        open(&archive).find("docs/old/x.txt").unwrap().is_none(),
        "a deleted directory hides its subtree"
    );
    verified(&archive);

    // Stored again below a deleted directory: only what is stored shows.
    fs::write(src.join("docs/old/y.txt"), b"y\n").unwrap();
    updater(&archive).add(&src, &["docs/old/y.txt".into()]).unwrap();
    assert_eq!(names(&archive), ["docs", "docs/a.txt", "docs/new.txt", "docs/old/y.txt", "docs/z.bin"]);
    verified(&archive);

    // Extraction of the merged view gives what the tree now holds.
    let out = extract_to(&archive, dir.path(), "out");
    assert_eq!(fs::read(out.join("docs/a.txt")).unwrap(), b"alpha, changed\n");
    assert_eq!(fs::read(out.join("docs/z.bin")).unwrap(), fs::read(src.join("docs/z.bin")).unwrap());
    assert!(!out.join("top.txt").exists() && !out.join("docs/old/x.txt").exists());

    let salts = trailer_salts(&fs::read(&archive).unwrap());
    assert_eq!(salts.len(), 4);
    assert_eq!(salts.iter().collect::<HashSet<_>>().len(), 4, "every session has its own salt");
}

#[test]
fn a_file_replaces_a_directory_and_its_subtree() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    fs::remove_dir_all(src.join("docs/old")).unwrap();
    fs::write(src.join("docs/old"), b"now a file").unwrap();
    updater(&archive).add(&src, &["docs/old".into()]).unwrap();
    assert_eq!(names(&archive), ["docs", "docs/a.txt", "docs/old", "docs/z.bin"]);
    assert_eq!(content(&archive, "docs/old"), b"now a file");
    verified(&archive);
    // And storing below that file is refused before anything is written.
    fs::remove_file(src.join("docs/old")).unwrap();
    fs::create_dir(src.join("docs/old")).unwrap();
    fs::write(src.join("docs/old/deep"), b"d").unwrap();
    let before = fs::read(&archive).unwrap();
    let err = updater(&archive).add(&src, &["docs/old/deep".into()]).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert_eq!(fs::read(&archive).unwrap(), before);
}

#[test]
fn update_stores_only_changes_and_deletes_what_vanished() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs", "top.txt"], cheap());
    let report = updater(&archive).update(&src, &["docs".into()], true).unwrap();
    assert_eq!((report.stored, report.deleted, report.bytes_written), (0, 0, 0), "nothing changed");
    assert_eq!(trailer_salts(&fs::read(&archive).unwrap()).len(), 1);

    fs::write(src.join("docs/a.txt"), b"alpha two\n").unwrap();
    fs::remove_dir_all(src.join("docs/old")).unwrap();
    fs::write(src.join("docs/b.txt"), b"b\n").unwrap();
    let report = updater(&archive).update(&src, &["docs".into()], false).unwrap();
    // docs itself changed (its mtime), a.txt changed, b.txt is new.
    assert_eq!((report.stored, report.deleted), (3, 0));
    assert!(names(&archive).contains(&"docs/old/x.txt".to_string()), "kept without --delete-missing");
    let report = updater(&archive).update(&src, &["docs".into()], true).unwrap();
    assert_eq!((report.stored, report.deleted), (0, 1));
    assert_eq!(names(&archive), ["docs", "docs/a.txt", "docs/b.txt", "docs/z.bin", "top.txt"]);
    assert_eq!(content(&archive, "docs/a.txt"), b"alpha two\n");
    verified(&archive);
}

#[test]
fn compaction_keeps_the_view_and_drops_dead_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs", "top.txt"], cheap());
    for round in 0..3u8 {
        fs::write(src.join("docs/z.bin"), vec![round; 300_000]).unwrap();
        updater(&archive).add(&src, &["docs/z.bin".into()]).unwrap();
    }
    updater(&archive).remove(&[b"docs/old".to_vec()]).unwrap();
    let before = open(&archive);
    let (view, info) = (entries(&before), before.info().unwrap());
    // Earlier runs, roots and trailers, and the pages of the replaced
    // copies that no live file shares.
    assert!(info.dead_bytes > 1000, "{info:?}");
    let len = ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new()).unwrap();
    assert_eq!(fs::metadata(&archive).unwrap().len(), len);
    assert!(len + info.dead_bytes <= info.archive_bytes, "compaction reclaims at least the dead bytes");
    let after = open(&archive);
    let kept: Vec<_> =
        entries(&after).into_iter().map(|e| (e.path, e.kind, e.meta.mode, e.meta.mtime_secs)).collect();
    let was: Vec<_> = view.into_iter().map(|e| (e.path, e.kind, e.meta.mode, e.meta.mtime_secs)).collect();
    assert_eq!(kept, was);
    assert_eq!(content(&archive, "docs/z.bin"), vec![2u8; 300_000]);
    let info = after.info().unwrap();
    assert_eq!((info.sessions, info.dead_bytes), (1, 0), "{info:?}");
    assert_eq!(trailer_salts(&fs::read(&archive).unwrap()).len(), 1);
    verified(&archive);
    // The compacted archive takes appends like any other.
    updater(&archive).add(&src, &["top.txt".into()]).unwrap();
    verified(&archive);
}

#[test]
fn runs_past_the_bound_are_merged_into_one() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    let mut merged = 0;
    for i in 0..20 {
        fs::write(src.join(format!("f{i:02}")), format!("{i}")).unwrap();
        let report = updater(&archive).add(&src, &[format!("f{i:02}").into()]).unwrap();
        merged += u32::from(report.runs_merged);
    }
    assert_eq!(merged, 1, "16 runs at most: one merge in 20 adds");
    let names = names(&archive);
    assert_eq!(names.len(), 5 + 20);
    assert_eq!(content(&archive, "f07"), b"7");
    verified(&archive);
}

#[test]
fn every_truncation_of_a_session_opens_as_the_old_state() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    let old = fs::read(&archive).unwrap();
    let old_names = names(&archive);
    fs::write(
        src.join("docs/big.bin"),
        (0..100_000u32).flat_map(|i| (i * 7).to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    updater(&archive).add(&src, &["docs/big.bin".into(), "docs/a.txt".into()]).unwrap();
    let new = fs::read(&archive).unwrap();
    let cut = dir.path().join("cut.lbox");
    let span = new.len() - old.len();
    let lengths: Vec<usize> = (0..250).map(|i| old.len() + i * span / 250).chain([new.len() - 1]).collect();
    for len in lengths {
        fs::write(&cut, &new[..len]).unwrap();
        let a = open(&cut);
        assert_eq!(a.torn_tail_bytes(), (len - old.len()) as u64, "length {len}");
        let got: Vec<String> = entries(&a).into_iter().map(|e| String::from_utf8(e.path).unwrap()).collect();
        assert_eq!(got, old_names, "length {len}");
    }
    // Repair cuts the tail; the next add after a torn tail cuts it too.
    fs::write(&cut, &new[..old.len() + span / 2]).unwrap();
    assert_eq!(
        ArchiveUpdater::repair(&cut, &password(), UpdateOptions::new()).unwrap().torn_tail_bytes,
        (span / 2) as u64
    );
    assert_eq!(fs::read(&cut).unwrap(), old);
    assert_eq!(ArchiveUpdater::repair(&cut, &password(), UpdateOptions::new()).unwrap().torn_tail_bytes, 0);
    fs::write(&cut, &new[..old.len() + span / 3]).unwrap();
    let report = updater(&cut).add(&src, &["top.txt".into()]).unwrap();
    assert_eq!(report.torn_tail_cut, (span / 3) as u64);
    verified(&cut);
    let salts = trailer_salts(&fs::read(&cut).unwrap());
    let first_try = trailer_salts(&new)[0];
    assert!(!salts.contains(&first_try), "a retried session draws a fresh salt");
}

#[test]
fn copies_appended_to_separately_use_different_salts() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    let copy = dir.path().join("copy.lbox");
    fs::copy(&archive, &copy).unwrap();
    updater(&archive).add(&src, &["top.txt".into()]).unwrap();
    updater(&copy).add(&src, &["top.txt".into()]).unwrap();
    let (a, b) = (trailer_salts(&fs::read(&archive).unwrap()), trailer_salts(&fs::read(&copy).unwrap()));
    assert_eq!(a[1], b[1], "the shared first session");
    assert_ne!(a[0], b[0], "each copy's append has its own salt");
}

#[test]
fn bad_input_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    let before = fs::read(&archive).unwrap();
    let unchanged = || assert_eq!(fs::read(&archive).unwrap(), before);

    let wrong = ArchiveUpdater::open(&archive, &Password::from("wrong"), UpdateOptions::new()).unwrap_err();
    assert!(matches!(wrong, Error::WrongPassword), "{wrong}");
    unchanged();

    let err = updater(&archive).remove(&[b"docs/nope".to_vec()]).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    unchanged();

    let err = updater(&archive).add(&src, &["missing".into()]).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    unchanged();

    // A second writer fails at once while the first holds the lock.
    let first = updater(&archive);
    let err = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    drop(first);

    // A damaged trailer (the last byte of its tag): nothing authenticates.
    let mut damaged = before.clone();
    *damaged.last_mut().unwrap() ^= 1;
    fs::write(&archive, &damaged).unwrap();
    let err = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap_err();
    assert!(err.is_authentication(), "{err}");
    assert_eq!(fs::read(&archive).unwrap(), damaged);
}

#[test]
fn hard_links_to_a_replaced_file_read_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("a"), b"shared").unwrap();
    fs::hard_link(src.join("a"), src.join("b")).unwrap();
    fs::hard_link(src.join("a"), src.join("c")).unwrap();
    let archive = archive_of(dir.path(), &src, &["a", "b", "c"], cheap());
    assert!(matches!(entries(&open(&archive))[1].kind, EntryKind::Hardlink { .. }));
    fs::remove_file(src.join("a")).unwrap();
    fs::write(src.join("a"), b"replaced").unwrap();
    updater(&archive).add(&src, &["a".into()]).unwrap();
    let view = entries(&open(&archive));
    assert!(matches!(view[1].kind, EntryKind::File { size: 6, .. }), "{:?}", view[1]);
    // Both links now read as files on the same bytes: §6.3's "never
    // overlap" is for entries stored as files (FORMAT.md §6.4).
    assert!(matches!(view[2].kind, EntryKind::File { size: 6, .. }), "{:?}", view[2]);
    assert_eq!(content(&archive, "b"), b"shared");
    assert_eq!(content(&archive, "c"), b"shared");
    verified(&archive);
    let out = extract_to(&archive, dir.path(), "out");
    assert_eq!(fs::read(out.join("a")).unwrap(), b"replaced");
    assert_eq!(fs::read(out.join("b")).unwrap(), b"shared");
    assert_eq!(fs::read(out.join("c")).unwrap(), b"shared");
    ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new()).unwrap();
    assert_eq!(content(&archive, "b"), b"shared");
    assert_eq!(content(&archive, "c"), b"shared");
    verified(&archive);
    let _ = Archive::open(fs::File::open(&archive).unwrap(), &password()).unwrap();
}

#[test]
fn a_directory_stored_again_over_a_file_does_not_bring_back_its_old_subtree() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("a")).unwrap();
    fs::write(src.join("a/x"), b"x").unwrap();
    fs::write(src.join("b"), b"b").unwrap();
    let archive = archive_of(dir.path(), &src, &["a", "b"], cheap());
    // Run 1: `a` becomes a file, hiding run 0's a/x.
    fs::remove_dir_all(src.join("a")).unwrap();
    fs::write(src.join("a"), b"file").unwrap();
    updater(&archive).add(&src, &["a".into()]).unwrap();
    // Run 2: `a` is a directory again, with a/y only.
    fs::remove_file(src.join("a")).unwrap();
    fs::create_dir(src.join("a")).unwrap();
    fs::write(src.join("a/y"), b"y").unwrap();
    updater(&archive).add(&src, &["a".into()]).unwrap();
    assert_eq!(names(&archive), ["a", "a/y", "b"]);
    let a = open(&archive);
    assert!(a.find("a/x").unwrap().is_none(), "hidden by run 1's file, whatever run 2 holds");
    assert_eq!(a.entry_count(), 3);
    verified(&archive);
    // A walk that starts inside `a` sees the same (extracting a subtree).
    let out = dir.path().join("part");
    fs::create_dir(&out).unwrap();
    let options = revault_lockbox_api::ExtractOptions::new().sync(false).only(vec![b"a".to_vec()]);
    a.extract(&out, &options).unwrap();
    assert!(out.join("a/y").exists() && !out.join("a/x").exists() && !out.join("b").exists());
}

/// Opening checks one link of the trailers' hash chain; `verify` follows
/// it to the first session, so a changed byte in an old trailer (which no
/// reader needs any more) is still found: reported as lost history, with
/// every file of the last state checked.
#[test]
fn verify_follows_the_hash_chain_to_the_first_session() {
    let dir = tempfile::tempdir().unwrap();
    let src = tree(dir.path());
    let archive = archive_of(dir.path(), &src, &["docs"], cheap());
    let first_end = fs::read(&archive).unwrap().len();
    updater(&archive).add(&src, &["top.txt".into()]).unwrap();
    updater(&archive).add(&src, &["docs/a.txt".into()]).unwrap();
    verified(&archive);
    let mut bytes = fs::read(&archive).unwrap();
    bytes[first_end - TRAILER_LEN + 140] ^= 1; // the first trailer's page count
    fs::write(&archive, &bytes).unwrap();
    let a = open(&archive);
    assert_eq!(entries(&a).len(), 6, "the state itself still reads");
    let report = a.verify().unwrap();
    assert!(!report.is_ok() && report.damaged.is_empty() && report.files == 4, "{report:?}");
    let at = first_end - TRAILER_LEN;
    assert!(
        matches!(&report.lost[..], [line] if line.contains(&format!("the trailer at byte {at}"))),
        "{:?}",
        report.lost
    );
}
