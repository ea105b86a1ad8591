//! Chunked files (FORMAT.md §3.5c) through every reader but `open_file`:
//! archives built as a key holder could, with the chunk ids computed under
//! a content key the test chooses, so that the readers' own checks decide.

use std::io::Cursor;

use sha2::Digest;

use crate::archive::{Archive, Members};
use crate::chunk::{ChunkIdHasher, ChunkKeys};
use crate::crypto::{ContentKey, KdfParams, Password};
use crate::error::Error;
use crate::extract::ExtractOptions;
use crate::format::{encode_chunk_list, ChunkRef, Entry, EntryKind, Extent, ARCHIVE_ID_LEN};
use crate::keys::KeySet;
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

pub(crate) fn password() -> Password {
    Password::from("chunked")
}

const ARCHIVE_ID: [u8; ARCHIVE_ID_LEN] = [9; ARCHIVE_ID_LEN];
const CONTENT_KEY: [u8; 32] = [7; 32];

/// The keys the test archives' chunk ids are made with.
pub(crate) fn chunk_keys() -> ChunkKeys {
    ChunkKeys::derive(&ContentKey::from_bytes(&CONTENT_KEY), &ARCHIVE_ID)
}

/// Bytes that compress badly, so that a few KiB fill several pages.
pub(crate) fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0; len];
    corpora::Rng::new(seed).fill(&mut bytes);
    bytes
}

/// A writer of 4 KiB pages under the fixed keys.
pub(crate) fn writer() -> ArchiveWriter<Vec<u8>> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
    let keys: KeySet = (&password()).into();
    let content_key = ContentKey::from_bytes(&CONTENT_KEY);
    ArchiveWriter::with_known_keys(Vec::new(), &keys, options, (ARCHIVE_ID, &content_key)).unwrap()
}

pub(crate) fn meta() -> Metadata {
    Metadata::new(0o644, 0, 0, 1_700_000_000, 0)
}

/// The records naming `ranges` (offset, length) of the stream, with their
/// ids computed from `stream`, the stream's bytes so far.
pub(crate) fn records(stream: &[u8], ranges: &[(u64, u32)]) -> Vec<ChunkRef> {
    let keys = chunk_keys();
    ranges
        .iter()
        .map(|&(offset, len)| {
            let bytes = &stream[offset as usize..offset as usize + len as usize];
            ChunkRef { offset, len, id: *ChunkIdHasher::id_of(&keys, bytes).as_bytes() }
        })
        .collect()
}

/// The content `chunks` name in `stream`.
pub(crate) fn content_of(stream: &[u8], chunks: &[ChunkRef]) -> Vec<u8> {
    chunks.iter().flat_map(|c| &stream[c.offset as usize..c.end() as usize]).copied().collect()
}

/// Writes a chunked file at `path` whose list is `chunks` and whose entry
/// says it holds `content`, after the stream's bytes so far, `stream`.
pub(crate) fn write_chunked(
    w: &mut ArchiveWriter<Vec<u8>>,
    path: &str,
    stream: &mut Vec<u8>,
    chunks: &[ChunkRef],
    content: &[u8],
) {
    let list = encode_chunk_list(chunks);
    w.add_file(path, &meta(), list.len() as u64, &list[..]).unwrap();
    w.chunk_last_file(content.len() as u64, sha2::Sha256::digest(content).into());
    stream.extend_from_slice(&list);
}

/// An archive of `a` (the bytes `base`, stored whole), `b` (chunked: the
/// ranges of `a` the records `edit` makes of `ranges` name) and `c` (a
/// small file stored whole after `b`'s list); with `b`'s content.
pub(crate) fn chunked_archive(
    base: &[u8],
    ranges: &[(u64, u32)],
    edit: impl FnOnce(&mut Vec<ChunkRef>),
) -> (Vec<u8>, Vec<u8>) {
    chunked_archive_then(base, ranges, edit, |_| {})
}

/// [`chunked_archive`], with what `more` adds after `c`.
pub(crate) fn chunked_archive_then(
    base: &[u8],
    ranges: &[(u64, u32)],
    edit: impl FnOnce(&mut Vec<ChunkRef>),
    more: impl FnOnce(&mut ArchiveWriter<Vec<u8>>),
) -> (Vec<u8>, Vec<u8>) {
    let mut w = writer();
    w.add_file("a", &meta(), base.len() as u64, base).unwrap();
    let mut stream = base.to_vec();
    let mut chunks = records(&stream, ranges);
    let content = content_of(&stream, &chunks);
    edit(&mut chunks);
    write_chunked(&mut w, "b", &mut stream, &chunks, &content);
    w.add_file("c", &meta(), 5, &b"after"[..]).unwrap();
    more(&mut w);
    (w.finish().unwrap(), content)
}

/// Out of order, a chunk repeated, chunks across pages of 4 KiB.
pub(crate) const RANGES: &[(u64, u32)] =
    &[(5000, 3000), (0, 5000), (5000, 3000), (12_000, 8000), (8000, 4000)];

fn open(bytes: Vec<u8>) -> Archive<Cursor<Vec<u8>>> {
    Archive::open(Cursor::new(bytes), &password()).unwrap()
}

#[test]
fn a_chunked_file_reads_back_through_extract_verify_and_export() {
    let base = noise(20_000, 1);
    let (bytes, content) = chunked_archive(&base, RANGES, |_| {});
    let archive = open(bytes);
    let report = archive.verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.files, 3);
    assert_eq!(report.bytes, (base.len() + content.len() + 5) as u64);

    let dest = tempfile::tempdir().unwrap();
    let extracted = archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert!(extracted.damaged.is_empty(), "{extracted:?}");
    assert_eq!(std::fs::read(dest.path().join("a")).unwrap(), base);
    assert_eq!(std::fs::read(dest.path().join("b")).unwrap(), content);
    assert_eq!(std::fs::read(dest.path().join("c")).unwrap(), b"after");

    let (tar, _) = crate::tarstream::export(Vec::new(), &archive, &Members::all()).unwrap();
    let mut files = tar::Archive::new(&tar[..]);
    let exported: Vec<(String, Vec<u8>)> = files
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    let b = exported.iter().find(|(p, _)| p == "b").expect("b exported");
    assert_eq!(b.1, content);
}

#[test]
fn files_chunked_alone_follow_one_another_in_one_walk() {
    // Two chunked files in a row, the second's first chunk behind the
    // first's last: the hasher each carries stays its own.
    let base = noise(9000, 2);
    let mut w = writer();
    w.add_file("a", &meta(), base.len() as u64, &base[..]).unwrap();
    let mut stream = base.clone();
    let first = records(&stream, &[(0, 4000), (6000, 3000)]);
    write_chunked(&mut w, "b", &mut stream, &first, &content_of(&base, &first));
    let second = records(&stream, &[(4000, 2000), (100, 50), (100, 50)]);
    write_chunked(&mut w, "c", &mut stream, &second, &content_of(&base, &second));
    let archive = open(w.finish().unwrap());
    let report = archive.verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.files, 3);
    let dest = tempfile::tempdir().unwrap();
    archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(dest.path().join("b")).unwrap(), content_of(&stream, &first));
    assert_eq!(std::fs::read(dest.path().join("c")).unwrap(), content_of(&stream, &second));
}

#[test]
fn a_wrong_chunk_id_is_damage_naming_the_file() {
    let (bytes, content) = chunked_archive(&noise(20_000, 3), RANGES, |chunks| chunks[3].id[0] ^= 1);
    let archive = open(bytes);
    let report = archive.verify().unwrap();
    assert!(!report.is_ok());
    let [damage] = &report.damaged[..] else { panic!("{report:?}") };
    assert_eq!(damage.path.0, b"b");
    assert!(
        damage.reason.starts_with("chunk id mismatch for b: the chunk at data-stream offset 12000"),
        "{damage:?}"
    );
    // Extraction checks the file's SHA-256, which the content still has.
    let dest = tempfile::tempdir().unwrap();
    archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(dest.path().join("b")).unwrap(), content);
}

/// Verify and extraction both refuse `bytes` as malformed, and extraction
/// writes nothing; returns verify's error.
fn refused(bytes: Vec<u8>) -> Error {
    let archive = open(bytes);
    let verified = archive.verify().unwrap_err();
    let dest = tempfile::tempdir().unwrap();
    let extracted = archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap_err();
    assert!(matches!(verified, Error::Malformed(_)), "{verified}");
    assert_eq!(verified.to_string(), extracted.to_string());
    let written: Vec<_> = std::fs::read_dir(dest.path()).unwrap().collect();
    assert!(written.is_empty(), "extraction wrote {written:?}");
    verified
}

#[test]
fn a_chunk_after_its_list_is_refused() {
    // The list lies right after `a`'s 20,000 bytes.
    let error = refused(chunked_archive(&noise(20_000, 4), RANGES, |chunks| chunks[1].offset = 20_000).0);
    assert!(error.to_string().contains("a chunk that does not lie before its list"), "{error}");
}

#[test]
fn a_list_whose_lengths_miss_the_size_is_refused() {
    let error = refused(chunked_archive(&noise(20_000, 5), RANGES, |chunks| chunks[0].len -= 1).0);
    assert!(error.to_string().contains("do not add up"), "{error}");
}

#[test]
fn a_list_past_the_stream_is_refused() {
    let mut w = writer();
    w.add_file("a", &meta(), 100, &noise(100, 6)[..]).unwrap();
    let entry = Entry {
        path: b"b".to_vec(),
        kind: EntryKind::File { size: 10, sha256: [0; 32] },
        meta: meta(),
        extent: Some(Extent { chunks: 2, ..Extent::whole(100, 10, false) }),
        sparse: None,
    };
    w.push_raw(entry).unwrap();
    let error = refused(w.finish().unwrap());
    assert!(error.to_string().contains("content lies outside the data pages"), "{error}");
}

/// `bytes` with a byte flipped in the sealed data page that holds stream
/// offset `at`.
fn damage_page_at(mut bytes: Vec<u8>, at: u64) -> Vec<u8> {
    let archive = open(bytes.clone());
    let leaf = archive.pages_leaf_at(at).unwrap();
    let (_, record, _) = crate::archive::page_in(&leaf, at).unwrap();
    bytes[(record.offset + u64::from(record.unit_len()) / 2) as usize] ^= 1;
    bytes
}

#[test]
fn a_damaged_page_loses_the_chunked_files_it_holds_a_chunk_of_and_no_other() {
    // Page 3 of 4 KiB holds bytes 12,288.. of `a`, and `b`'s fourth chunk.
    let (bytes, _) = chunked_archive(&noise(20_000, 7), RANGES, |_| {});
    let archive = open(damage_page_at(bytes, 12_300));
    let report = archive.verify().unwrap();
    let damaged: Vec<&[u8]> = report.damaged.iter().map(|d| &d.path.0[..]).collect();
    assert_eq!(damaged, [&b"a"[..], b"b"], "{report:?}");
    assert_eq!(report.files, 1, "only c verified");
    let dest = tempfile::tempdir().unwrap();
    let extracted =
        archive.extract(dest.path(), &ExtractOptions::new().sync(false).keep_going(true)).unwrap();
    assert_eq!(extracted.damaged.len(), 2, "{extracted:?}");
    assert!(!dest.path().join("b").exists());
    assert_eq!(std::fs::read(dest.path().join("c")).unwrap(), b"after");
}

#[test]
fn salvage_restores_a_chunked_file_whose_list_and_chunks_authenticate() {
    let base = noise(20_000, 8);
    let (bytes, content) = chunked_archive(&base, RANGES, |_| {});
    let salvage = crate::archive::Salvage::scan(Cursor::new(bytes), &password(), Default::default()).unwrap();
    assert!(salvage.lost_entries().is_empty(), "{:?}", salvage.lost_entries());
    let report = salvage.verify().unwrap();
    assert!(report.damaged.is_empty(), "{report:?}");
    assert_eq!(report.files, 3);
    let dest = tempfile::tempdir().unwrap();
    salvage.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(dest.path().join("b")).unwrap(), content);
    assert_eq!(std::fs::read(dest.path().join("a")).unwrap(), base);
}

#[test]
fn salvage_lists_a_chunked_file_lost_when_a_chunk_page_is_and_keeps_the_rest() {
    let (bytes, _) = chunked_archive(&noise(20_000, 9), RANGES, |_| {});
    let bytes = damage_page_at(bytes, 12_300);
    let salvage = crate::archive::Salvage::scan(Cursor::new(bytes), &password(), Default::default()).unwrap();
    let lost: Vec<(Vec<u8>, String)> =
        salvage.lost_entries().into_iter().map(|d| (d.path.0, d.reason)).collect();
    assert_eq!(lost.len(), 2, "{lost:?}");
    assert_eq!(lost[0].0, b"a");
    assert_eq!(lost[1], (b"b".to_vec(), "some of its chunks lie in pages that were lost".to_string()));
    let kept: Vec<&[u8]> = salvage.entries().iter().map(|e| &e.path[..]).collect();
    assert_eq!(kept, [&b"c"[..]]);
    let dest = tempfile::tempdir().unwrap();
    salvage.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(dest.path().join("c")).unwrap(), b"after");
}

/// Archives with chunked files, kept as files for the CLI tests (which
/// cannot reach the writer's test hooks); see `tests/vectors/chunked/`.
fn chunked_vectors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("chunked", chunked_archive(&noise(20_000, 21), RANGES, |_| {}).0),
        ("wrong-chunk-id", chunked_archive(&noise(20_000, 22), RANGES, |chunks| chunks[3].id[0] ^= 1).0),
        (
            "chunk-after-list",
            chunked_archive(&noise(20_000, 23), RANGES, |chunks| chunks[1].offset = 20_000).0,
        ),
    ]
}

fn vectors_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/chunked")
}

#[test]
fn chunked_vectors_read_as_made_and_as_stored() {
    for (name, made) in chunked_vectors() {
        let stored = std::fs::read(vectors_dir().join(format!("{name}.lbox"))).unwrap();
        for bytes in [made, stored] {
            let verified = open(bytes).verify();
            match name {
                "chunked" => assert!(verified.unwrap().is_ok(), "{name}"),
                "wrong-chunk-id" => assert_eq!(verified.unwrap().damaged.len(), 1, "{name}"),
                _ => assert!(matches!(verified, Err(Error::Malformed(_))), "{name}"),
            }
        }
    }
}

#[test]
#[ignore = "writes the missing tests/vectors/chunked/*.lbox; run by hand when the cases change"]
fn write_chunked_vectors() {
    std::fs::create_dir_all(vectors_dir()).unwrap();
    // Only the missing ones: the others stay as the CLI tests know them.
    for (name, bytes) in chunked_vectors() {
        let path = vectors_dir().join(format!("{name}.lbox"));
        if !path.exists() {
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// Writes, to the directory `LOCKBOX_CHUNKED_BENCH_DIR` names, archives to
/// time `lockbox verify` and `extract` on (docs/BENCHMARKS.md's way, with
/// `farm-bench`): `whole.lbox` holds `a`, 64 MiB of random bytes, stored
/// whole; `in-order.lbox` adds `b`, chunked into 256 KiB chunks of `a` in
/// order (one pass); `reversed.lbox` the same chunks last first (a pass a
/// chunk). Default page sizes; password `chunked`.
#[test]
#[ignore = "writes 200 MB of benchmark archives; run by hand with LOCKBOX_CHUNKED_BENCH_DIR set"]
fn write_chunked_bench_archives() {
    let dir = std::path::PathBuf::from(std::env::var_os("LOCKBOX_CHUNKED_BENCH_DIR").expect("a directory"));
    let base = noise(64 << 20, 31);
    let ranges: Vec<(u64, u32)> =
        (0..base.len() as u64).step_by(256 << 10).map(|at| (at, 256 << 10)).collect();
    let options = || CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
    let keys: KeySet = (&password()).into();
    let content_key = ContentKey::from_bytes(&CONTENT_KEY);
    for (name, order) in [("whole", None), ("in-order", Some(false)), ("reversed", Some(true))] {
        let mut w =
            ArchiveWriter::with_known_keys(Vec::new(), &keys, options(), (ARCHIVE_ID, &content_key)).unwrap();
        w.add_file("a", &meta(), base.len() as u64, &base[..]).unwrap();
        if let Some(reversed) = order {
            let mut stream = base.clone();
            let mut chunks = records(&stream, &ranges);
            if reversed {
                chunks.reverse();
            }
            let content = content_of(&stream, &chunks);
            write_chunked(&mut w, "b", &mut stream, &chunks, &content);
        }
        std::fs::write(dir.join(format!("{name}.lbox")), w.finish().unwrap()).unwrap();
    }
}
