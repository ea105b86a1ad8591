//! Bad input: wrong passwords, damaged and truncated archives, hostile
//! paths, existing files, missing inputs. Each fails cleanly and writes
//! nothing it should not.

use std::fs;
use std::io::Cursor;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use revault_lockbox_api::error::KdfError;
use revault_lockbox_api::{
    create_archive, Archive, ArchiveWriter, Error, ExtractOptions, KdfParams, Password,
};

use crate::util::*;

fn small_tree(root: &Path) {
    fs::create_dir_all(root.join("t/d")).unwrap();
    fs::write(root.join("t/a.txt"), b"alpha alpha alpha").unwrap();
    fs::write(root.join("t/d/b.txt"), b"bravo").unwrap();
    symlink("a.txt", root.join("t/l")).unwrap();
}

/// Opens `bytes` and extracts into `dest`: the whole reading path.
fn open_and_extract(bytes: Vec<u8>, dest: &Path, password: &Password) -> Result<(), Error> {
    let a = Archive::open(Cursor::new(bytes), password)?;
    a.extract(dest, &ExtractOptions::new().sync(false)).map(|_| ())
}

#[test]
fn wrong_password_says_so_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap());
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    let err = open_and_extract(fs::read(&archive).unwrap(), &dest, &Password::from("nope")).unwrap_err();
    assert!(matches!(err, Error::WrongPassword), "{err}");
    assert!(err.is_authentication());
    assert_eq!(err.to_string(), "wrong password or corrupted key slot");
    assert!(all_paths(&dest).is_empty());
}

/// Regular files under `dest` are all byte-identical to their originals
/// under `src`, and no temporary file is left: whatever an interrupted
/// extraction left behind was authenticated.
fn only_authentic_files(dest: &Path, src: &Path) {
    for path in all_paths(dest) {
        let rel = path.strip_prefix(dest).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy();
        assert!(!name.starts_with(".lockbox-"), "temporary file left: {rel:?}");
        if fs::symlink_metadata(&path).unwrap().is_file() {
            assert_eq!(fs::read(&path).unwrap(), fs::read(src.join(rel)).unwrap(), "{rel:?}");
        }
    }
}

/// A work dir with `small_tree`, the archive's bytes, and an empty
/// extraction destination.
fn small_archive() -> (tempfile::TempDir, Vec<u8>, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap());
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    (work, fs::read(&archive).unwrap(), dest)
}

/// The offsets a flip test visits: every byte but those deep inside the
/// empty key slots, where every slot's first 64 bytes and last byte stand
/// for the rest (all of it is zero padding, checked by one rule).
fn offsets(len: usize) -> impl Iterator<Item = usize> {
    const SLOT: usize = 256;
    (0..len).filter(|&at| {
        let in_empty_slot = (32 + SLOT..DATA_START).contains(&at);
        !in_empty_slot || (at - 32) % SLOT < 64 || (at - 32) % SLOT == SLOT - 1
    })
}

/// Whether damage to `bytes` is noticed: opening or extracting fails, or
/// the reader says it read around a damaged header, slot table or session
/// header (FORMAT.md §3.11, §6.1 steps 4 and 6: every file extracted then),
/// or `verify` fails (a damaged header copy).
fn noticed(bytes: Vec<u8>, dest: &Path, password: &Password) -> bool {
    let Ok(a) = Archive::open(Cursor::new(bytes), password) else { return true };
    let read_around = a.header_damage().is_some() || a.session_header_damage().is_some();
    match a.extract(dest, &ExtractOptions::new().sync(false)) {
        Err(_) => !read_around,
        Ok(_) => read_around || !a.verify().unwrap().is_ok(),
    }
}

/// Every single-bit flip at every byte offset is detected, and no file
/// that failed authentication ends up under its final name.
#[test]
fn every_flipped_byte_is_detected() {
    let (work, original, dest) = small_archive();
    for offset in offsets(original.len()) {
        for bit in [0x01u8, 0x80] {
            let mut bytes = original.clone();
            bytes[offset] ^= bit;
            assert!(
                noticed(bytes, &dest, &password()),
                "flip {bit:#x} at {offset} of {} went unnoticed",
                original.len()
            );
            only_authentic_files(&dest, work.path());
            fs::remove_dir_all(&dest).unwrap();
            fs::create_dir(&dest).unwrap();
        }
    }
    open_and_extract(original, &dest, &password()).unwrap();
}

#[test]
fn every_truncation_is_detected() {
    let (_work, original, dest) = small_archive();
    for len in 0..original.len() {
        let err = open_and_extract(original[..len].to_vec(), &dest, &password()).unwrap_err();
        assert!(err.is_authentication(), "truncated to {len}: {err}");
    }
    assert!(all_paths(&dest).is_empty());
}

#[test]
fn other_files_and_versions_are_refused_clearly() {
    let err = Archive::open(Cursor::new(b"just some text, not an archive at all".to_vec()), &password())
        .unwrap_err();
    assert!(err.to_string().contains("not a lockbox archive"), "{err}");
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let mut bytes = fs::read(archive_of(work.path(), work.path(), &["t"], cheap())).unwrap();
    // A prefix alone that names another version is damage: the last
    // session's trailer and header copy say 4, and the copy is read.
    let mut prefix_only = bytes.clone();
    prefix_only[8..10].copy_from_slice(&9u16.to_le_bytes());
    let read_around = Archive::open(Cursor::new(prefix_only), &password()).unwrap();
    assert!(read_around.header_damage().unwrap().contains("version 9"), "{:?}", read_around.header_damage());
    bytes_of_version(&mut bytes, 9);
    let err = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { found: 9, oldest: 3, newest: 4 }), "{err}");
    bytes_of_version(&mut bytes, 5);
    let err = Archive::open(Cursor::new(bytes), &password()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported archive format version 5 (this lockbox reads versions 3 and 4; written by a newer lockbox?)"
    );
}

/// `bytes` claiming format `version` in the header prefix and the last
/// trailer, as an archive of that version would.
fn bytes_of_version(bytes: &mut [u8], version: u16) {
    bytes[8..10].copy_from_slice(&version.to_le_bytes());
    let trailer = bytes.len() - 216;
    bytes[trailer + 8..trailer + 10].copy_from_slice(&version.to_le_bytes());
}

/// Entries below a symbolic link or a file of the archive are refused by
/// the writer (readers refuse crafted ones: see the library's unit tests).
#[test]
fn writer_refuses_unsafe_and_unordered_paths() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    w.add_symlink("evil", &meta(0o644), "/etc").unwrap();
    let err = w.add_file("evil/x", &meta(0o644), 1, &b"x"[..]).unwrap_err();
    assert!(matches!(err, Error::UnsafePath { .. }), "{err}");
    for bad in ["../x", "/abs", "a/./b", "a//b"] {
        let err = w.add_file(bad, &meta(0o644), 1, &b"x"[..]).unwrap_err();
        assert!(matches!(err, Error::UnsafePath { .. }), "{bad}: {err}");
    }
    w.add_file("f", &meta(0o644), 1, &b"x"[..]).unwrap();
    let err = w.add_dir("f", &meta(0o644)).unwrap_err();
    assert!(matches!(err, Error::OutOfOrder { .. }), "{err}");
    let err = w.add_dir("e", &meta(0o644)).unwrap_err();
    assert!(matches!(err, Error::OutOfOrder { .. }), "{err}");
    let err = w.add_hardlink("g", &meta(0o644), "f").unwrap_err();
    assert!(matches!(err, Error::BadHardLink { .. }), "{err}");
}

#[test]
fn symlink_planted_in_destination_is_not_followed() {
    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("dest");
    let outside = work.path().join("outside");
    fs::create_dir_all(dest.join("real")).unwrap();
    fs::create_dir(&outside).unwrap();
    symlink(&outside, dest.join("sub")).unwrap();
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    w.add_file("sub/x", &meta(0o644), 1, &b"x"[..]).unwrap();
    let err = open_and_extract(w.finish().unwrap(), &dest, &password()).unwrap_err();
    assert!(matches!(err, Error::UnsafePath { .. }), "{err}");
    assert!(all_paths(&outside).is_empty());
}

#[test]
fn existing_files_are_refused_unless_overwrite() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap());
    let dest = work.path().join("out");
    fs::create_dir_all(dest.join("t")).unwrap();
    fs::write(dest.join("t/a.txt"), b"mine").unwrap();
    let err = open(&archive).extract(&dest, &ExtractOptions::new()).unwrap_err();
    assert!(matches!(&err, Error::AlreadyExists { path } if path.ends_with("t/a.txt")), "{err}");
    assert_eq!(fs::read(dest.join("t/a.txt")).unwrap(), b"mine");
    assert!(!dest.join("t/d").exists(), "refused before writing anything");
    open(&archive).extract(&dest, &ExtractOptions::new().overwrite(true)).unwrap();
    assert_eq!(fs::read(dest.join("t/a.txt")).unwrap(), b"alpha alpha alpha");
    assert_eq!(fs::read_link(dest.join("t/l")).unwrap(), Path::new("a.txt"));
}

#[test]
fn missing_and_unreadable_inputs_fail_and_leave_old_archive_intact() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap());
    let before = fs::read(&archive).unwrap();
    // Replacing it is allowed: the failures, not the existing file, stop these.
    let replace = || cheap().overwrite(true);
    let err = create_archive(&archive, work.path(), &["t".into(), "missing".into()], &password(), replace())
        .unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    // /proc/self/mem opens but every read at offset 0 fails, even for root.
    let err =
        create_archive(&archive, Path::new("/"), &[PathBuf::from("proc/self/mem")], &password(), replace())
            .unwrap_err();
    // Named as given, relative to the base directory (as tar names inputs).
    assert!(matches!(&err, Error::Io { path, .. } if path == Path::new("proc/self/mem")), "{err}");
    assert_eq!(fs::read(&archive).unwrap(), before, "the old archive is untouched");
    let names: Vec<_> = fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
    let err = create_archive(
        &work.path().join("no/such/dir/a.lbox"),
        work.path(),
        &["t".into()],
        &password(),
        cheap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no/such/dir"), "{err}");
}

#[test]
fn missing_destination_is_a_clear_error() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap());
    let err = open(&archive).extract(&work.path().join("nope"), &ExtractOptions::new()).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn pages_swapped_or_taken_from_another_archive_are_detected() {
    let work = tempfile::tempdir().unwrap();
    fs::create_dir(work.path().join("t")).unwrap();
    // Two files of one page each, equal sizes: swapping is length-preserving.
    for name in ["one", "two"] {
        fs::write(work.path().join("t").join(name), name.repeat(40_000)).unwrap();
    }
    let options = || cheap().page_size(4096).zstd_level(1);
    let a = fs::read(archive_of(work.path(), work.path(), &["t"], options())).unwrap();
    let other_dir = work.path().join("other");
    fs::create_dir(&other_dir).unwrap();
    let b = fs::read(archive_of(&other_dir, work.path(), &["t"], options())).unwrap();
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    // Pages 0 and 1 hold the same text, so their units have one length
    // and swapping them keeps every other unit in place.
    let (p0, p1) = (data_page_unit(&a, 0), data_page_unit(&a, 1));
    assert_eq!(p0.len(), p1.len());
    let mut swapped = a.clone();
    swapped[p0.clone()].copy_from_slice(&a[p1.clone()]);
    swapped[p1.clone()].copy_from_slice(&a[p0.clone()]);
    let err = open_and_extract(swapped, &dest, &password()).unwrap_err();
    assert!(matches!(&err, Error::DamagedPage { number: 0 }), "{err}");
    only_authentic_files(&dest, work.path());
    let mut spliced = a.clone();
    let b1 = data_page_unit(&b, 1);
    assert_eq!(b1.len(), p1.len());
    spliced[p1].copy_from_slice(&b[b1]);
    let err = open_and_extract(spliced, &dest, &password()).unwrap_err();
    assert!(matches!(&err, Error::DamagedPage { number: 1 }), "{err}");
    only_authentic_files(&dest, work.path());
}

/// The index (nodes and root) and trailer, or the trailer alone, of another
/// archive made with the same password and the same content, spliced onto
/// this one.
#[test]
fn index_or_trailer_from_another_archive_is_detected() {
    let (work, a, dest) = small_archive();
    let other = work.path().join("other");
    fs::create_dir(&other).unwrap();
    let b = fs::read(archive_of(&other, work.path(), &["t"], cheap())).unwrap();
    // Same content, same pages; the sealed roots may differ by a byte or two.
    let pages = |bytes: &[u8]| {
        let info = Archive::open(Cursor::new(bytes.to_vec()), &password()).unwrap().info().unwrap();
        first_unit(bytes) + info.stored_page_bytes as usize
    };
    let cuts = [(pages(&a), pages(&b)), (a.len() - TRAILER_LEN, b.len() - TRAILER_LEN)];
    for (from_a, from_b) in cuts {
        let mut spliced = a[..from_a].to_vec();
        spliced.extend_from_slice(&b[from_b..]);
        let err = open_and_extract(spliced, &dest, &password()).unwrap_err();
        assert!(matches!(err, Error::Tampered { .. }), "splice at {from_a}: {err}");
        assert!(all_paths(&dest).is_empty());
    }
}

#[test]
fn unusable_kdf_parameters_are_refused_before_writing() {
    let refused = [
        (KdfParams { m_kib: 8, t: 0, p: 1 }, KdfError::Refused),
        (KdfParams { m_kib: 2 << 20, t: 1, p: 1 }, KdfError::AboveLimits),
    ];
    for (kdf, why) in refused {
        let err = ArchiveWriter::new(Vec::new(), &password(), cheap().kdf(kdf)).err().expect("refused");
        assert!(matches!(err, Error::InvalidKdf { reason, .. } if reason == why), "{err}");
        assert_eq!(kdf.check(), Err(why));
    }
}
