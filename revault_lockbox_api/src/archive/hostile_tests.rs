//! Archives an attacker who holds the key could craft: every one is
//! refused (or listed, where it is harmless) in time and memory linear in
//! its size, with an error that counts as an authentication failure (exit
//! code 3 in the CLI), and extraction writes nothing for any of them.

use std::io::Cursor;
use std::time::Instant;

use sha2::Digest;

use crate::archive::Archive;
use crate::crypto::{KdfParams, Password};
use crate::error::Error;
use crate::extract::ExtractOptions;
use crate::format::{Entry, EntryKind, Extent, SparseMap, Xattr};
use crate::read::{Browser, Place};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

fn password() -> Password {
    Password::from("hostile")
}

fn writer() -> ArchiveWriter<Vec<u8>> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
    ArchiveWriter::new(Vec::new(), &password(), options).unwrap()
}

fn meta() -> Metadata {
    Metadata::new(0o644, 0, 0, 1_700_000_000, 0)
}

fn file(path: &[u8], offset: u64, size: u64) -> Entry {
    Entry {
        path: path.to_vec(),
        kind: EntryKind::File { size, sha256: [0; 32] },
        meta: Metadata::new(0o644, 0, 0, 0, 0),
        extent: Some(Extent::whole(offset, size, false)),
        sparse: None,
    }
}

fn symlink(path: &[u8]) -> Entry {
    Entry { kind: EntryKind::Symlink { target: b"/etc".to_vec() }, extent: None, ..file(path, 0, 0) }
}

/// Lists, verifies and extracts `bytes`; returns the first error. Each
/// step's time goes to stderr (`--nocapture`) for the benchmark notes.
fn refused(name: &str, bytes: Vec<u8>) -> Error {
    let len = bytes.len();
    let started = Instant::now();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let listed: Result<Vec<Entry>, Error> = archive.entries().unwrap().collect();
    let verified = archive.verify().map(drop);
    let dest = tempfile::tempdir().unwrap();
    let extracted = archive.extract(dest.path(), &ExtractOptions::new().sync(false)).map(drop);
    eprintln!("hostile archive {name}: {len} bytes, list + verify + extract in {:?}", started.elapsed());
    let written: Vec<_> = std::fs::read_dir(dest.path()).unwrap().collect();
    assert!(written.is_empty(), "{name}: extraction wrote {written:?}");
    let err = extracted.unwrap_err();
    assert!(err.is_authentication(), "{name}: {err}");
    assert!(verified.is_err_and(|e| e.is_authentication()), "{name}: verify passed or failed otherwise");
    assert!(listed.is_err(), "{name}: list passed");
    err
}

#[test]
fn overlapping_file_contents_are_refused() {
    let mut w = writer();
    w.add_file("a", &meta(), 300, &[7u8; 300][..]).unwrap();
    // Many entries on the same bytes: v1 extracted them all, so that an
    // 885-byte archive could write 300 MiB.
    for i in 0..100u32 {
        w.push_raw(file(format!("b{i:03}").as_bytes(), 0, 300)).unwrap();
    }
    refused("overlapping ranges", w.finish().unwrap());
}

#[test]
fn duplicate_paths_are_refused() {
    let mut w = writer();
    w.add_file("t", &meta(), 1, &b"x"[..]).unwrap();
    w.push_raw(symlink(b"t")).unwrap();
    refused("duplicate path in one leaf", w.finish().unwrap());
    // The v1 panic: a symbolic link `t`, a file `t`, a hard link to `t`.
    let mut w = writer();
    w.add_symlink("t", &meta(), "/etc").unwrap();
    w.push_raw(file(b"t", 0, 0)).unwrap();
    let link = EntryKind::Hardlink { target: b"t".to_vec(), size: 0, sha256: [0; 32] };
    w.push_raw(Entry { kind: link, ..file(b"u", 0, 0) }).unwrap();
    refused("symlink, file and hard link named t", w.finish().unwrap());
    // The same path at the end of one leaf and the start of the next.
    let mut w = writer();
    // Long paths (components of at most 255 bytes) fill a leaf quickly.
    let long = [&[b'p'; 255][..], b"/"].concat().repeat(31);
    for i in 0..20u8 {
        let mut path = long.clone();
        path.push(b'a' + i);
        w.add_file(&path, &meta(), 0, &b""[..]).unwrap();
    }
    let last = w.last_path().unwrap().to_vec();
    w.push_raw(file(&last, 0, 0)).unwrap();
    refused("duplicate path across leaves", w.finish().unwrap());
}

#[test]
fn millions_of_declared_entries_cost_nothing() {
    let mut w = writer();
    w.add_file("a", &meta(), 1, &b"x"[..]).unwrap();
    w.claim_entries(2_000_000);
    let err = refused("2M declared entries", w.finish().unwrap());
    assert!(err.to_string().contains("entry count"), "{err}");
}

#[test]
fn thousands_of_pages_list_and_verify_in_linear_time() {
    // Whole files, so that the 30 files make 3000 pages.
    let options = CreateOptions::new()
        .kdf(KdfParams::INSECURE_FOR_TESTS)
        .page_size(4096)
        .chunk_sizes(crate::test_data::whole_below_1_mib());
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
    let data: Vec<u8> = (0..3000 * 4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for i in 0..30u32 {
        let chunk = &data[i as usize * 409_600..(i as usize + 1) * 409_600];
        w.add_file(format!("f{i:02}"), &meta(), chunk.len() as u64, chunk).unwrap();
    }
    let bytes = w.finish().unwrap();
    let started = Instant::now();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    assert_eq!(archive.entries().unwrap().count(), 30);
    let report = archive.verify().unwrap();
    assert!(report.is_ok() && report.pages >= 3000, "{report:?}");
    eprintln!("3000 pages: open, list and verify in {:?}", started.elapsed());
}

#[test]
fn deep_paths_past_path_max_are_listed_and_extracted() {
    let mut w = writer();
    let deep: Vec<u8> = b"a/".repeat(2047).into_iter().chain(*b"f").collect();
    assert!(deep.len() >= 4095);
    w.add_file(&deep, &meta(), 1, &b"x"[..]).unwrap();
    let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
    assert_eq!(archive.entries().unwrap().next().unwrap().unwrap().path, deep);
    assert!(archive.verify().unwrap().is_ok());
    let dest = tempfile::tempdir().unwrap();
    // Past PATH_MAX no path could name it, but descriptors reach it.
    archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    let mut dir = std::fs::File::open(dest.path()).unwrap();
    for _ in 0..2047 {
        dir = rustix::fs::openat(&dir, "a", rustix::fs::OFlags::DIRECTORY, 0.into()).unwrap().into();
    }
    let f = rustix::fs::openat(&dir, "f", rustix::fs::OFlags::RDONLY, 0.into()).unwrap();
    assert_eq!(std::io::read_to_string(std::fs::File::from(f)).unwrap(), "x");
}

#[test]
fn entries_below_a_symlink_or_file_are_refused() {
    let mut w = writer();
    w.add_symlink("evil", &meta(), "/etc").unwrap();
    w.push_raw(file(b"evil/passwd", 0, 0)).unwrap();
    let err = refused("below a symlink", w.finish().unwrap());
    assert!(matches!(err, Error::UnsafePath { .. }), "{err}");
    let mut w = writer();
    w.add_file("f", &meta(), 1, &b"x"[..]).unwrap();
    w.push_raw(file(b"f/x", 1, 0)).unwrap();
    refused("below a file", w.finish().unwrap());
}

#[test]
fn entries_extraction_could_not_create_are_refused() {
    let long_name = [&b"d/"[..], &[b'n'; 256]].concat();
    let mut w = writer();
    w.push_raw(file(&long_name, 0, 0)).unwrap();
    refused("a 256-byte name", w.finish().unwrap());
    for (name, target) in [("NUL in a link target", &b"a\0b"[..]), ("a 4096-byte link target", &[b'x'; 4096])]
    {
        let mut w = writer();
        let link = EntryKind::Symlink { target: target.to_vec() };
        w.push_raw(Entry { kind: link, extent: None, ..file(b"l", 0, 0) }).unwrap();
        refused(name, w.finish().unwrap());
    }
}

#[test]
fn unsafe_paths_are_refused() {
    for path in [&b"../x"[..], b"/etc/x", b"a/../../x", b"a/./b", b"a//b"] {
        let mut w = writer();
        w.push_raw(file(path, 0, 0)).unwrap();
        refused(&String::from_utf8_lossy(path), w.finish().unwrap());
    }
}

#[test]
fn contents_past_the_data_and_bad_hard_links_are_refused() {
    let mut w = writer();
    w.add_file("a", &meta(), 1, &b"x"[..]).unwrap();
    w.push_raw(file(b"b", 1, 1 << 40)).unwrap();
    refused("content past the data pages", w.finish().unwrap());
    for (name, target) in
        [("to a later path", &b"z"[..]), ("to a file not marked linked", b"a"), ("to itself", b"h")]
    {
        let mut w = writer();
        w.add_file("a", &meta(), 1, &b"x"[..]).unwrap();
        let link = EntryKind::Hardlink { target: target.to_vec(), size: 1, sha256: [0; 32] };
        w.push_raw(Entry { kind: link, ..file(b"h", 0, 1) }).unwrap();
        refused(name, w.finish().unwrap());
    }
}

/// A file entry on `content`'s bytes at `offset`, with their true digest:
/// a lookup that read it would find nothing wrong with its content.
fn file_on(path: &[u8], offset: u64, content: &[u8]) -> Entry {
    let sha256 = sha2::Sha256::digest(content).into();
    let size = content.len() as u64;
    Entry { kind: EntryKind::File { size, sha256 }, ..file(path, offset, size) }
}

/// Archives whose entry at the path named a lookup (`cat`, `open_file`,
/// partial `extract`) printed before, where a walk refused them: each
/// entry's content and digest are true, what is wrong is on the way to it
/// or beside it (issue 27, case 4).
fn lookup_vectors() -> Vec<(&'static str, &'static [u8], Vec<u8>)> {
    let mut below_link = writer();
    below_link.add_symlink("d", &meta(), "/elsewhere").unwrap();
    below_link.push_raw(file_on(b"d/x", 0, b"")).unwrap();
    let mut below_file = writer();
    below_file.add_file("f", &meta(), 2, &b"xy"[..]).unwrap();
    below_file.push_raw(file_on(b"f/x", 0, b"xy")).unwrap();
    let mut later = writer();
    later.add_file("a", &meta(), 1, &b"x"[..]).unwrap();
    let sha256 = sha2::Sha256::digest(b"x").into();
    let link = EntryKind::Hardlink { target: b"z".to_vec(), size: 1, sha256 };
    later.push_raw(Entry { kind: link, ..file(b"h", 0, 1) }).unwrap();
    let mut overlap = writer();
    overlap.add_file("a", &meta(), 300, &[7u8; 300][..]).unwrap();
    overlap.push_raw(file_on(b"b", 0, &[7u8; 300])).unwrap();
    let mut descending = writer();
    descending.add_file("a", &meta(), 2, &b"xy"[..]).unwrap();
    descending.push_raw(file_on(b"c", 1, b"y")).unwrap();
    descending.push_raw(file_on(b"d", 0, b"x")).unwrap();
    vec![
        ("lookup-below-symlink", b"d/x", below_link.finish().unwrap()),
        ("lookup-below-file", b"f/x", below_file.finish().unwrap()),
        ("lookup-link-to-later", b"h", later.finish().unwrap()),
        ("lookup-overlap", b"b", overlap.finish().unwrap()),
        ("lookup-descending", b"d", descending.finish().unwrap()),
    ]
}

#[test]
fn a_lookup_refuses_what_the_walk_refuses_on_its_way() {
    for (name, path, bytes) in lookup_vectors() {
        let archive = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
        let err = archive.open_file(path).map(drop).unwrap_err();
        assert!(err.is_authentication(), "{name}: {err}");
        assert!(archive.find(path).is_err(), "{name}: find");
        refused(name, bytes);
    }
}

#[test]
fn a_browser_asked_by_place_refuses_what_a_lookup_of_the_path_refuses() {
    // The records of each vector's one leaf, in order: a place of run 0,
    // leaf 0 is its slot. A browser checks a whole leaf at the first place
    // asked; its answers must still be each path's own lookup's.
    let slots: [&[&[u8]]; 5] =
        [&[b"d", b"d/x"], &[b"f", b"f/x"], &[b"a", b"h"], &[b"a", b"b"], &[b"a", b"c", b"d"]];
    let vectors = lookup_vectors();
    assert_eq!(vectors.len(), slots.len(), "one list of records per vector");
    for ((name, _, bytes), paths) in vectors.into_iter().zip(slots) {
        let open = || Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
        let archive = open();
        let asked_in_order = Browser::new(open());
        let asked_in_reverse = Browser::new(open());
        let answers = |b: &Browser<_>, slot: usize| {
            b.node(Place::from_number(slot as u64).unwrap()).map(|n| n.entry).ok()
        };
        let mut in_reverse: Vec<_> = (0..paths.len()).rev().map(|i| answers(&asked_in_reverse, i)).collect();
        in_reverse.reverse();
        for (slot, path) in paths.iter().enumerate() {
            let expected = archive.find(path).ok().flatten();
            let alone = answers(&Browser::new(open()), slot);
            let why = format!("{name}: {}", String::from_utf8_lossy(path));
            assert_eq!(alone, expected, "{why}, asked first");
            assert_eq!(answers(&asked_in_order, slot), expected, "{why}, asked in order");
            assert_eq!(in_reverse[slot], expected, "{why}, asked in reverse");
        }
    }
}

/// Eight files 1,024 directories deep, no directory listed: 8,192
/// directories to make from a few KB (issue 27, case 6).
fn implicit_parents() -> Vec<u8> {
    let mut w = writer();
    for i in 0..8 {
        let deep: Vec<u8> =
            format!("t{i}/").into_bytes().into_iter().chain(b"a/".repeat(1023)).chain(*b"f").collect();
        w.add_file(&deep, &meta(), 1, &b"x"[..]).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn implicit_parents_are_bounded_by_the_archive_size() {
    let bytes = implicit_parents();
    assert!(bytes.len() < 16 << 10, "{} bytes", bytes.len());
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let dest = tempfile::tempdir().unwrap();
    let err = archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap_err();
    assert!(matches!(err, Error::TooManyImplicitDirs { limit: 4096 }), "{err}");
    assert_eq!(std::fs::read_dir(dest.path()).unwrap().count(), 0, "nothing written");
    let allowed = ExtractOptions::new().sync(false).implicit_dirs(8192);
    assert_eq!(archive.extract(dest.path(), &allowed).unwrap().entries, 8);
}

#[test]
fn every_walk_checks_the_roots_page_and_byte_counts() {
    let mut w = writer();
    w.add_file("a", &meta(), 5000, &[1u8; 5000][..]).unwrap();
    let bytes = w.finish().unwrap();
    for lie in [(1, 0), (0, 1), (0, u64::MAX - 5000)] {
        let mut archive = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
        archive.root.page_count += lie.0;
        archive.root.stream_len = archive.root.stream_len.wrapping_add(lie.1);
        let err = archive.entries().map(drop).unwrap_err();
        assert!(err.to_string().contains("page or byte count"), "{lie:?}: {err}");
        let dest = tempfile::tempdir().unwrap();
        assert!(archive.extract(dest.path(), &ExtractOptions::new().sync(false)).is_err(), "{lie:?}");
        assert!(archive.verify().is_err(), "{lie:?}");
    }
}

/// Archives `extract` refuses, kept as files for the CLI tests (which
/// cannot reach the writer's raw hooks); see `tests/vectors/hostile/`.
fn hostile_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let mut below = writer();
    below.add_symlink("evil", &meta(), "/tmp").unwrap();
    below.push_raw(file(b"evil/planted", 0, 0)).unwrap();
    let mut nul = writer();
    let link = EntryKind::Symlink { target: b"/etc\0passwd".to_vec() };
    nul.push_raw(Entry { kind: link, extent: None, ..file(b"link", 0, 0) }).unwrap();
    let mut xattr = writer();
    let huge = Xattr { name: b"user.huge".to_vec(), value: vec![b'x'; (64 << 10) + 1] };
    xattr.push_raw(Entry { meta: meta().with_xattrs(vec![huge]), ..file(b"f", 0, 0) }).unwrap();
    let sparse = |segments: Vec<(u64, u64)>, size: u64| {
        let mut w = writer();
        w.add_file("a", &meta(), 4, &b"abcd"[..]).unwrap();
        let map = SparseMap::unchecked(segments);
        let mut e = file(b"b", 0, size);
        e.extent = Some(Extent::whole(0, map.stored_len(), false));
        e.sparse = Some(map);
        w.push_raw(e).unwrap();
        w.finish().unwrap()
    };
    let mut vectors = vec![
        ("below-symlink", below.finish().unwrap()),
        ("nul-in-link-target", nul.finish().unwrap()),
        ("oversized-xattr", xattr.finish().unwrap()),
        ("sparse-overlap", sparse(vec![(0, 2), (1, 2)], 10)),
        ("sparse-past-size", sparse(vec![(0, 2), (9, 2)], 10)),
    ];
    vectors.extend(lookup_vectors().into_iter().map(|(name, _, bytes)| (name, bytes)));
    vectors
}

#[test]
#[ignore = "writes the missing tests/vectors/hostile/*.lbox; run by hand when the cases change"]
fn write_implicit_parents_vector() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/hostile/implicit-parents.lbox");
    if !path.exists() {
        std::fs::write(path, implicit_parents()).unwrap();
    }
}

#[test]
fn hostile_vectors_are_refused_as_made_and_as_stored() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/hostile");
    for (name, bytes) in hostile_vectors() {
        let stored = std::fs::read(dir.join(format!("{name}.lbox"))).unwrap();
        refused(name, stored);
        refused(name, bytes);
    }
}

#[test]
#[ignore = "writes the missing tests/vectors/hostile/*.lbox; run by hand when the cases change"]
fn write_hostile_vectors() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/hostile");
    std::fs::create_dir_all(&dir).unwrap();
    // Only the missing ones: the others stay as the CLI tests know them.
    for (name, bytes) in hostile_vectors() {
        let path = dir.join(format!("{name}.lbox"));
        if !path.exists() {
            std::fs::write(path, bytes).unwrap();
        }
    }
}

#[test]
fn a_hard_link_whose_sparse_map_differs_from_its_files_is_refused() {
    // B2: the link's map put the file's bytes elsewhere; `verify` and
    // `extract` passed, `cat` of the link wrote 100 wrong bytes.
    let map = SparseMap::new(vec![(0, 4), (100, 4)], 200).unwrap();
    let linked_file = || {
        let mut w = writer();
        w.add_sparse_file("a", &meta(), map.clone(), 200, true, &b"headtail"[..]).unwrap();
        w
    };
    let a = Archive::open(Cursor::new(linked_file().finish().unwrap()), &password()).unwrap();
    let file = a.find(b"a").unwrap().unwrap();
    let (size, sha256) = file.content().map(|(n, d)| (n, *d)).unwrap();
    for (name, other) in [
        ("the file's map", map.clone()),
        ("another map", SparseMap::new(vec![(0, 4), (50, 4)], 200).unwrap()),
    ] {
        let mut w = linked_file();
        let link = EntryKind::Hardlink { target: b"a".to_vec(), size, sha256 };
        w.push_raw(Entry { path: b"h".to_vec(), kind: link, sparse: Some(other), ..file.clone() }).unwrap();
        let bytes = w.finish().unwrap();
        if name == "the file's map" {
            let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
            assert!(archive.verify().unwrap().is_ok(), "{name}");
            continue;
        }
        let archive = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
        assert!(archive.open_file("h").map(drop).unwrap_err().is_authentication(), "{name}: cat");
        refused(name, bytes);
    }
}

#[test]
fn a_size_no_file_system_can_hold_is_refused_by_every_reader() {
    // B6: a sparse file of 2^64 - 1 bytes verified, and `extract` failed
    // with "out of range integral type conversion attempted".
    for size in [u64::MAX, 1 << 63] {
        let mut w = writer();
        let map = SparseMap::new(vec![(0, 2)], size).unwrap();
        w.add_sparse_file("huge", &meta(), map, size, false, &b"ab"[..]).unwrap();
        let err = refused("a size of 2^63 or more", w.finish().unwrap());
        assert!(err.to_string().contains("2^63"), "{size}: {err}");
    }
}
