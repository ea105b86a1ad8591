//! Exact round trips: content, kinds, modes, mtimes, links, odd names.

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use filetime::FileTime;
use revault_lockbox_api::create::write_archive;
use revault_lockbox_api::{Archive, EntryKind, WorkloadProfile};

use crate::util::*;

fn set_mtime(path: &Path, secs: i64, nanos: u32) {
    filetime::set_symlink_file_times(
        path,
        FileTime::from_unix_time(secs, nanos),
        FileTime::from_unix_time(secs, nanos),
    )
    .unwrap();
}

/// A tree with every kind of entry the format stores.
fn build_tree(root: &Path) {
    let t = root.join("tree");
    fs::create_dir_all(t.join("sub/deeper/still")).unwrap();
    fs::create_dir(t.join("empty-dir")).unwrap();
    fs::write(t.join("empty-file"), b"").unwrap();
    fs::write(t.join("hello.txt"), b"hello world\n").unwrap();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    fs::write(t.join("sub/big.bin"), &big).unwrap();
    fs::write(t.join("sub/text.txt"), "lorem ipsum dolor sit amet\n".repeat(50_000)).unwrap();
    fs::write(t.join("sub/deeper/still/leaf"), b"leaf").unwrap();
    fs::write(t.join(OsStr::from_bytes(b"not-utf8-\xff\xfe.txt")), b"odd name").unwrap();
    fs::hard_link(t.join("hello.txt"), t.join("sub/hello-again.txt")).unwrap();
    symlink("hello.txt", t.join("link-to-file")).unwrap();
    symlink("sub/deeper", t.join("link-to-dir")).unwrap();
    symlink("/nonexistent/\u{e9}", t.join("dangling")).unwrap();
    fs::set_permissions(t.join("hello.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::write(t.join("script.sh"), b"#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(t.join("script.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(t.join("read-only"), b"ro").unwrap();
    fs::set_permissions(t.join("read-only"), fs::Permissions::from_mode(0o444)).unwrap();
    for (i, item) in walkdir::WalkDir::new(&t).contents_first(true).into_iter().enumerate() {
        set_mtime(item.unwrap().path(), 1_600_000_000 + i as i64 * 1000, 123_456_789 + i as u32);
    }
    fs::set_permissions(t.join("sub/deeper"), fs::Permissions::from_mode(0o555)).unwrap();
}

#[test]
fn every_entry_kind_round_trips_exactly() {
    let work = tempfile::tempdir().unwrap();
    build_tree(work.path());
    // Small pages so that files span and share pages.
    let archive = archive_of(work.path(), work.path(), &["tree"], cheap().page_size(64 << 10));
    let out = extract_to(&archive, work.path(), "out");
    assert_eq!(snapshot(&work.path().join("tree")), snapshot(&out.join("tree")));
    let names: Vec<Vec<u8>> = entries(&open(&archive)).into_iter().map(|e| e.path).collect();
    assert!(names.contains(&b"tree/not-utf8-\xff\xfe.txt".to_vec()));
    fs::set_permissions(out.join("tree/sub/deeper"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(work.path().join("tree/sub/deeper"), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn every_profile_round_trips() {
    let work = tempfile::tempdir().unwrap();
    build_tree(work.path());
    for profile in WorkloadProfile::ALL {
        let dir = work.path().join(profile.name());
        fs::create_dir(&dir).unwrap();
        let options = cheap().profile(profile).zstd_level(if profile == WorkloadProfile::Archival {
            3
        } else {
            profile.create_tuning().zstd_level
        });
        let archive = archive_of(&dir, work.path(), &["tree"], options);
        let out = extract_to(&archive, &dir, "out");
        assert_eq!(snapshot(&work.path().join("tree")), snapshot(&out.join("tree")), "{}", profile.name());
    }
    fs::set_permissions(work.path().join("tree/sub/deeper"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// A real tree: the time zone database, with hundreds of symbolic links.
/// `scripts/test.sh` installs it; a machine without it skips this test
/// (unless `LOCKBOX_REQUIRE_TOOLS` is set).
#[test]
fn real_system_tree_round_trips() {
    let zoneinfo = Path::new("/usr/share/zoneinfo");
    if !zoneinfo.is_dir() {
        return skip(Need::Tools, "/usr/share/zoneinfo is missing (install tzdata, or run scripts/test.sh)");
    }
    let work = tempfile::tempdir().unwrap();
    let archive = archive_of(work.path(), Path::new("/usr/share"), &["zoneinfo"], cheap());
    let out = extract_to(&archive, work.path(), "out");
    let original = snapshot(zoneinfo);
    assert!(original.0.values().filter(|d| d.starts_with("link")).count() > 10);
    assert!(original.0.len() > 500);
    assert_eq!(original, snapshot(&out.join("zoneinfo")));
}

#[test]
fn streamed_archive_equals_file_archive_in_content() {
    let work = tempfile::tempdir().unwrap();
    build_tree(work.path());
    let (bytes, _) = write_archive(Vec::new(), work.path(), &["tree".into()], &password(), cheap()).unwrap();
    let archive = Archive::open(std::io::Cursor::new(bytes), &password()).unwrap();
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    archive.extract(&out, &revault_lockbox_api::ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(snapshot(&work.path().join("tree")), snapshot(&out.join("tree")));
    fs::set_permissions(work.path().join("tree/sub/deeper"), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn one_file_reads_and_seeks() {
    let work = tempfile::tempdir().unwrap();
    build_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["tree"], cheap().page_size(64 << 10));
    let a = open(&archive);
    let expected = fs::read(work.path().join("tree/sub/big.bin")).unwrap();
    let mut r = a.open_file("tree/sub/big.bin").unwrap();
    assert_eq!(r.len(), expected.len() as u64);
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(got, expected);
    // A zero-length read mid-file is not the end of the file.
    let mut r = a.open_file("tree/sub/big.bin").unwrap();
    let mut head = vec![0; 1000];
    r.read_exact(&mut head).unwrap();
    assert_eq!(r.read(&mut []).unwrap(), 0);
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert_eq!([head, rest].concat(), expected);
    r.seek(SeekFrom::Start(1_000_000)).unwrap();
    let mut chunk = vec![0; 200_000];
    r.read_exact(&mut chunk).unwrap();
    assert_eq!(chunk, expected[1_000_000..1_200_000]);
    r.seek(SeekFrom::End(-10)).unwrap();
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, expected[expected.len() - 10..]);
    // Hard links read their target.
    let mut linked = Vec::new();
    a.open_file("tree/sub/hello-again.txt").unwrap().read_to_end(&mut linked).unwrap();
    assert_eq!(linked, b"hello world\n");
    assert!(a.open_file("tree/sub").is_err(), "a directory is not a file");
    assert!(a.open_file("tree/missing").is_err());
    fs::set_permissions(work.path().join("tree/sub/deeper"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// A file of several GiB spans thousands of pages and crosses the 4 GiB
/// mark where 32-bit offsets would wrap. The source is sparse (zeros with
/// marks), so the test costs CPU time, not disk space.
#[test]
fn multi_gib_file_round_trips() {
    const SIZE: u64 = (4 << 30) + (64 << 20) + 12345;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("big");
    fs::create_dir(&dir).unwrap();
    let path = dir.join("huge.img");
    let mut f = fs::File::create(&path).unwrap();
    f.set_len(SIZE).unwrap();
    let marks = [1u64, 1 << 20, (4 << 30) - 8, 4 << 30, SIZE - 7];
    for &at in &marks {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&at.to_le_bytes()[..7]).unwrap();
    }
    drop(f);
    let archive = archive_of(work.path(), work.path(), &["big"], cheap());
    assert!(fs::metadata(&archive).unwrap().len() < 64 << 20, "zeros compress");
    let a = open(&archive);
    let EntryKind::File { size, .. } = a.find("big/huge.img").unwrap().unwrap().kind else {
        panic!("not a file")
    };
    assert_eq!(size, SIZE);
    // Stream the whole file through its reader: checks every page and the
    // SHA-256 at the end.
    let mut r = a.open_file("big/huge.img").unwrap();
    let copied = std::io::copy(&mut r, &mut std::io::sink()).unwrap();
    assert_eq!(copied, SIZE);
    for &at in &marks {
        r.seek(SeekFrom::Start(at)).unwrap();
        let mut got = [0u8; 7];
        r.read_exact(&mut got).unwrap();
        assert_eq!(got, at.to_le_bytes()[..7]);
    }
}
