//! The conformance vectors (issue 46's "Checks"): one hostile or damaged
//! archive per row of docs/CONFORMANCE.md, kept as files under
//! `tests/vectors/conformance/` so that the CLI's `conformance` test runs
//! the real binary on each with every command and compares the exit code
//! and message class with the table. Password `chain`, the cheapest
//! Argon2id cost. The writer's raw hooks exist only in these unit tests,
//! hence the files.

use std::io::Cursor;
use std::path::Path;

use super::chain_tests::{add, forged_trailer, options, password, shaped};
use crate::archive::Archive;
use crate::format::{Entry, EntryKind, SessionKind, SparseMap, SESSION_HEADER_CLEAR_LEN};
use crate::session::{ArchiveWriter, Metadata, SessionStart};

fn meta() -> Metadata {
    Metadata::new(0o644, 0, 0, 1_700_000_000, 0)
}

/// An archive of one sparse file `a` of `size` bytes whose map is `map`
/// (4 stored bytes at each segment), then what `more` adds.
fn sparse(
    map: &SparseMap,
    size: u64,
    linked: bool,
    more: impl FnOnce(&mut ArchiveWriter<Vec<u8>>),
) -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options()).unwrap();
    let stored = vec![b's'; map.stored_len() as usize];
    w.add_sparse_file("a", &meta(), map.clone(), size, linked, &stored[..]).unwrap();
    more(&mut w);
    w.finish().unwrap()
}

/// B2: a hard link `h` to the sparse file `a` whose map differs from `a`'s.
fn link_with_another_map() -> Vec<u8> {
    let map = SparseMap::new(vec![(0, 4), (100, 4)], 200).unwrap();
    let bytes = sparse(&map, 200, true, |_| {});
    let file = Archive::open(Cursor::new(bytes), &password()).unwrap().find(b"a").unwrap().unwrap();
    let (size, sha256) = file.content().map(|(n, d)| (n, *d)).unwrap();
    let other = SparseMap::new(vec![(0, 4), (50, 4)], 200).unwrap();
    sparse(&map, 200, true, |w| {
        let link = EntryKind::Hardlink { target: b"a".to_vec(), size, sha256 };
        w.push_raw(Entry { path: b"h".to_vec(), kind: link, sparse: Some(other), ..file.clone() }).unwrap();
    })
}

/// A small file `a` and a sparse file `s` of 9 MiB (longer than `cat`
/// checks before writing) whose content authenticates but does not match
/// its SHA-256.
fn wrong_digests() -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options()).unwrap();
    w.add_file("a", &meta(), 4, &b"aaaa"[..]).unwrap();
    w.misdigest_last_file();
    let map = SparseMap::new(vec![(0, 4)], 9 << 20).unwrap();
    w.add_sparse_file("s", &meta(), map, 9 << 20, false, &b"ssss"[..]).unwrap();
    w.misdigest_last_file();
    w.finish().unwrap()
}

/// An archive of two sessions (files `a`, then `b`), through a file.
fn two_sessions() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, shaped(|s| s)).unwrap();
    add(&path, "b").unwrap();
    std::fs::read(&path).unwrap()
}

/// B4: `a`, then `b` added in a session whose record says compaction
/// (holding state 5), which only a first record may be.
fn compaction_not_first() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, shaped(|s| s)).unwrap();
    super::update::SHAPE_NEXT_SESSION.set(Some(|s| SessionStart {
        kind: SessionKind::Compaction,
        state: 5,
        ..s
    }));
    add(&path, "b").unwrap();
    std::fs::read(&path).unwrap()
}

/// Every row's archive, by the file name the table gives it.
pub(super) fn conformance_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let intact = two_sessions();
    let data_start = Archive::open(Cursor::new(intact.clone()), &password()).unwrap().data_start() as usize;
    // No key needed: a byte of the first session's sealed header (B3), a
    // byte of the first data page (its frame is 20 bytes), a cut in half.
    let first_header = data_start + SESSION_HEADER_CLEAR_LEN + 1;
    let flip = |at: usize| {
        let mut b = intact.clone();
        b[at] ^= 1;
        b
    };
    let header_len = {
        let clear: &[u8; SESSION_HEADER_CLEAR_LEN] =
            intact[data_start..data_start + SESSION_HEADER_CLEAR_LEN].try_into().unwrap();
        let clear = crate::format::HeaderClear::decode(clear).unwrap();
        SESSION_HEADER_CLEAR_LEN + clear.body_stored_len as usize
    };
    let first_page = data_start + header_len + 20 + 1;
    let one = shaped(|s| s);
    let last_state = |s| SessionStart { kind: SessionKind::Compaction, state: u64::MAX, ..s };
    let huge_hole = SparseMap::new(vec![(0, 4), (1 << 39, 4)], 1 << 40).unwrap();
    let too_big = SparseMap::new(vec![(0, 4)], u64::MAX).unwrap();
    vec![
        ("intact", intact.clone()),
        ("b1-header-hash", forged_trailer(&one, |t| t.header_hash[0] ^= 1)),
        ("b1-root-hash", forged_trailer(&one, |t| t.root_hash[0] ^= 1)),
        ("b1-previous-hash", forged_trailer(&one, |t| t.previous_hash[0] ^= 1)),
        ("b2-link-sparse-map", link_with_another_map()),
        ("b3-earlier-header-flipped", flip(first_header)),
        ("b4-compaction-not-first", compaction_not_first()),
        ("b5-last-state", shaped(last_state)),
        ("b6-size-2-64", sparse(&too_big, u64::MAX, false, |_| {})),
        // And a small file `b`, for `cat` (which writes every zero of `a`).
        (
            "b7-1-tib-hole",
            sparse(&huge_hole, 1 << 40, false, |w| {
                w.add_file("b", &meta(), 1, &b"b"[..]).unwrap();
            }),
        ),
        ("b8-session-limit", shaped(|s| SessionStart { number: u32::MAX, ..s })),
        ("page-byte-flipped", flip(first_page)),
        ("cut-in-half", intact[..intact.len() / 2].to_vec()),
        ("wrong-digest", wrong_digests()),
    ]
}

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/conformance")
}

#[test]
fn every_row_of_the_table_has_its_archive() {
    let table = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/CONFORMANCE.md"))
        .unwrap();
    for (name, _) in conformance_vectors() {
        assert!(dir().join(format!("{name}.lbox")).is_file(), "{name}: run write_conformance_vectors");
        assert!(table.contains(&format!("| `{name}` |")), "{name}: no row in docs/CONFORMANCE.md");
    }
}

#[test]
#[ignore = "writes the missing tests/vectors/conformance/*.lbox; run by hand when the rows change"]
fn write_conformance_vectors() {
    std::fs::create_dir_all(dir()).unwrap();
    // Only the missing ones: the others stay as the table knows them.
    for (name, bytes) in conformance_vectors() {
        let path = dir().join(format!("{name}.lbox"));
        if !path.exists() {
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// The conformance vectors' plaintexts as fuzz seeds, so that the
/// decoders B1-B8's fixes touched start from these shapes: of each
/// vector that opens, the root and every index node (`index`: B2's and
/// B6's sparse maps, B7's hole, B5's and B8's session records in the
/// root) and a sessions leaf and internal node of its last record
/// (`sessions`). `make_seeds` keeps them, as it keeps a fuzzer's `afl-*`.
#[cfg(feature = "fuzzing")]
#[test]
#[ignore = "writes fuzz/corpus/{index,sessions}/conformance-*; run by hand when the vectors change"]
fn write_conformance_fuzz_seeds() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut written = 0;
    for (name, _) in conformance_vectors() {
        let bytes = std::fs::read(dir().join(format!("{name}.lbox"))).unwrap();
        // Those that do not open (B1, B4, a cut) have no plaintext to give.
        let Ok(nodes) = crate::fuzz::index_plaintexts(&bytes, &password()) else { continue };
        for (n, plain) in nodes.iter().enumerate() {
            std::fs::write(corpus.join(format!("index/conformance-{name}-{n}")), plain).unwrap();
            written += 1;
        }
        for (target, (kind, seed)) in crate::fuzz::v3_seeds(&bytes, &password()).unwrap() {
            if target == "sessions" {
                std::fs::write(corpus.join(format!("sessions/conformance-{name}-{kind}")), seed).unwrap();
                written += 1;
            }
        }
    }
    assert!(written > 0);
}
