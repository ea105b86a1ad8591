//! The diff iterator on real files: a state against a directory (content by
//! SHA-256, a sparse file's digest made as the stored one, `quick`,
//! directories' mtimes only when asked) and two states of one archive
//! opened from one unlock.

use std::fs::{self, File, FileTimes};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use revault_lockbox_api::diff::{self, DiffOptions, Difference};
use revault_lockbox_api::read::AsOf;
use revault_lockbox_api::{ArchiveUpdater, UpdateOptions};

use crate::util::*;

fn set_mtime(path: &Path, secs: u64) {
    let t = UNIX_EPOCH + Duration::new(secs, 0);
    File::options().write(true).open(path).unwrap().set_times(FileTimes::new().set_modified(t)).unwrap();
}

/// `(sign, path, what changed)` of each difference.
fn shown(differences: diff::Diff<'_>) -> Vec<(char, String, String)> {
    differences
        .map(|d| {
            let d = d.unwrap();
            let path = String::from_utf8(d.path().to_vec()).unwrap();
            match d {
                Difference::Added(_) => ('+', path, String::new()),
                Difference::Removed(_) => ('-', path, String::new()),
                Difference::Changed { changes, .. } => ('M', path, format!("{changes:?}")),
                _ => unreachable!(),
            }
        })
        .collect()
}

/// A 4 MiB file with one byte of data at 1 MiB and holes elsewhere.
fn sparse_file(path: &Path) {
    let mut f = File::create(path).unwrap();
    f.set_len(4 << 20).unwrap();
    f.seek(SeekFrom::Start(1 << 20)).unwrap();
    f.write_all(b"x").unwrap();
}

#[test]
fn a_directory_compares_by_digest_sparse_files_included() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("t/d")).unwrap();
    sparse_file(&src.join("t/sparse"));
    fs::write(src.join("t/d/f"), b"same size").unwrap();
    for p in ["t/sparse", "t/d/f"] {
        set_mtime(&src.join(p), 1_700_000_000);
    }
    let archive = archive_of(dir.path(), &src, &["t"], cheap());
    let a = open(&archive);
    assert!(a.find("t/sparse").unwrap().unwrap().sparse_map().is_some(), "stored sparse");
    let compare = |options| shown(diff::directory(&a, &src, &[], options).unwrap());
    assert_eq!(compare(DiffOptions::new()), [], "a tree equals its archive");

    // The same logical content without holes: equal. A byte in a hole, or
    // an edit of the same size, mtimes put back: only the digest sees it.
    let plain = std::fs::read(src.join("t/sparse")).unwrap();
    fs::write(src.join("t/sparse"), &plain).unwrap();
    set_mtime(&src.join("t/sparse"), 1_700_000_000);
    assert_eq!(compare(DiffOptions::new()), [], "holes written as zeros are the same content");
    let f = File::options().write(true).open(src.join("t/sparse")).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"y", 3 << 20).unwrap();
    set_mtime(&src.join("t/sparse"), 1_700_000_000);
    fs::write(src.join("t/d/f"), b"SAME SIZE").unwrap();
    set_mtime(&src.join("t/d/f"), 1_700_000_000);
    let content =
        "Changes { kind: false, content: true, mode: false, owner: false, mtime: false, target: false, other: false }";
    assert_eq!(
        compare(DiffOptions::new()),
        [('M', "t/d/f".into(), content.into()), ('M', "t/sparse".into(), content.into())]
    );
    assert_eq!(compare(DiffOptions::new().quick(true)), [], "quick: size and mtime only");

    // A file added below a directory changes the directory's mtime on disk,
    // which only dir_mtimes reports.
    fs::write(src.join("t/d/new"), b"new").unwrap();
    let added = ('+', "t/d/new".to_string(), String::new());
    assert_eq!(compare(DiffOptions::new().quick(true)), std::slice::from_ref(&added));
    let dirs = compare(DiffOptions::new().quick(true).dir_mtimes(true));
    let mtime =
        "Changes { kind: false, content: false, mode: false, owner: false, mtime: true, target: false, other: false }";
    assert_eq!(dirs, [('M', "t/d".into(), mtime.into()), added]);
    // A name beside what was archived is not the archive's business; a path
    // given is compared even when only on disk.
    fs::write(src.join("other"), b"o").unwrap();
    assert_eq!(compare(DiffOptions::new().quick(true)).len(), 1);
    let other = shown(diff::directory(&a, &src, &[b"other".to_vec()], DiffOptions::new()).unwrap());
    assert_eq!(other, [('+', "other".into(), String::new())]);
}

#[test]
fn two_states_of_one_open_archive_compare_by_their_stored_digests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("t")).unwrap();
    fs::write(src.join("t/a"), b"one").unwrap();
    fs::write(src.join("t/b"), b"bee").unwrap();
    let archive = archive_of(dir.path(), &src, &["t"], cheap());
    fs::write(src.join("t/a"), b"two").unwrap();
    std::os::unix::fs::symlink("a", src.join("t/c")).unwrap();
    let updater = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["t/a".into(), "t/c".into()]).unwrap();
    ArchiveUpdater::open(&archive, &password(), UpdateOptions::new())
        .unwrap()
        .remove(&[b"t/b".to_vec()])
        .unwrap();

    let a = open(&archive);
    let (first, second) = (a.at(AsOf::State(1)).unwrap(), a.at(AsOf::State(-2)).unwrap());
    let between = shown(diff::states(&first, &second, DiffOptions::new()).unwrap());
    let (signs, paths): (Vec<char>, Vec<String>) = between.iter().map(|(s, p, _)| (*s, p.clone())).unzip();
    assert_eq!((signs, paths), (vec!['M', '+'], vec!["t/a".to_string(), "t/c".to_string()]));
    let to_last = shown(diff::states(&first, &a, DiffOptions::new()).unwrap());
    assert_eq!(to_last.iter().map(|d| d.1.as_str()).collect::<Vec<_>>(), ["t/a", "t/b", "t/c"]);
    assert_eq!(to_last[1].0, '-');
    assert!(shown(diff::states(&a, &a, DiffOptions::new()).unwrap()).is_empty());
    // A state the archive does not hold.
    assert!(matches!(
        a.at(AsOf::State(4)),
        Err(revault_lockbox_api::Error::NoSuchState { asked: 4, first: 1, states: 3 })
    ));
    let first_ns = a.history().unwrap()[0].created_ns;
    let before = a.at(AsOf::Time(first_ns - 1)).map(drop).unwrap_err();
    assert!(matches!(before, revault_lockbox_api::Error::NoStateAt { .. }), "{before}");
    assert_eq!(a.at(AsOf::Time(first_ns)).unwrap().entry_count(), 3);
}
