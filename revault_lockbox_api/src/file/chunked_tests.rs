//! Rewrites and `info` of archives holding chunked files (FORMAT.md
//! §3.5c): a rewrite stores a chunked file's content again through the
//! writer, and `info` counts the pages its chunks lie in as live.
//! [`chunked_archive`](crate::archive::chunked_tests::chunked_archive)
//! builds them.

use std::path::{Path, PathBuf};

use crate::archive::chunked_tests::{chunked_archive_then, meta, noise, password, RANGES};
use crate::archive::{Archive, Retention};
use crate::error::Error;
use crate::extract::ExtractOptions;
use crate::file::{ArchiveUpdater, UpdateOptions};
use crate::format::ChunkRef;
use crate::session::ArchiveWriter;

/// `chunked_archive` of 20,000 bytes, its chunks as `edit` leaves
/// `RANGES`, then `d` (12,000 bytes on pages of its own), written to
/// `dir`; with `b`'s content.
fn archive_file(dir: &Path, edit: impl FnOnce(&mut Vec<ChunkRef>)) -> (PathBuf, Vec<u8>) {
    let d = noise(12_000, 12);
    let more = |w: &mut ArchiveWriter<Vec<u8>>| {
        w.add_file("d", &meta(), 12_000, &d[..]).unwrap();
    };
    let (bytes, content) = chunked_archive_then(&noise(20_000, 11), RANGES, edit, more);
    let path = dir.join("x.lbox");
    std::fs::write(&path, bytes).unwrap();
    (path, content)
}

fn open(path: &Path) -> Archive<std::fs::File> {
    Archive::open(std::fs::File::open(path).unwrap(), &password()).unwrap()
}

/// Flips a byte in the middle of the sealed page holding stream offset
/// `at` of the archive at `path`.
fn damage_page_at(path: &Path, at: u64) {
    let archive = open(path);
    let leaf = archive.pages_leaf_at(at).unwrap();
    let (_, record, _) = crate::archive::page_in(&leaf, at).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[(record.offset + u64::from(record.unit_len()) / 2) as usize] ^= 1;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn repair_rewrites_a_chunked_file_from_what_a_salvage_proves() {
    let dir = tempfile::tempdir().unwrap();
    let (path, content) = archive_file(dir.path(), |_| {});
    // A page of `d` alone: `b`'s list and chunks survive.
    damage_page_at(&path, 28_000);
    let report = ArchiveUpdater::repair(&path, &password(), UpdateOptions::new()).unwrap();
    let damaged: Vec<&[u8]> = report.damaged.iter().map(|d| &d.path.0[..]).collect();
    assert_eq!(damaged, [&b"d"[..]], "{report:?}");
    let repaired = open(&path);
    assert!(repaired.verify().unwrap().is_ok());
    let out = tempfile::tempdir().unwrap();
    repaired.extract(out.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(out.path().join("b")).unwrap(), content);
    assert_eq!(std::fs::read(out.path().join("c")).unwrap(), b"after");
}

#[test]
fn repair_refuses_a_chunk_after_its_list_and_leaves_the_archive_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = archive_file(dir.path(), |chunks| chunks[2].offset = 20_000);
    damage_page_at(&path, 28_000);
    let before = std::fs::read(&path).unwrap();
    let error = ArchiveUpdater::repair(&path, &password(), UpdateOptions::new()).unwrap_err();
    assert!(matches!(error, Error::Malformed(_)), "{error}");
    assert!(error.to_string().contains("a chunk that does not lie before its list"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn compaction_stores_a_chunked_file_again() {
    let dir = tempfile::tempdir().unwrap();
    let (path, content) = archive_file(dir.path(), |_| {});
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new()).unwrap();
    let compacted = open(&path);
    assert!(compacted.verify().unwrap().is_ok());
    let out = tempfile::tempdir().unwrap();
    compacted.extract(out.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(out.path().join("b")).unwrap(), content);
}

/// `a` and its copy `b` (300,000 bytes of noise), both chunked by the
/// writer (small chunks), so that `b`'s chunks are `a`'s; the archive's
/// path.
fn copies_archive(dir: &Path) -> PathBuf {
    use crate::chunk::ChunkParams;
    use crate::crypto::KdfParams;
    use crate::file::create_archive;
    use crate::session::CreateOptions;

    let src = dir.join("src");
    std::fs::create_dir(&src).unwrap();
    let content = noise(300_000, 11);
    std::fs::write(src.join("a"), &content).unwrap();
    std::fs::write(src.join("b"), &content).unwrap();
    let path = dir.join("x.lbox");
    let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params);
    create_archive(&path, &src, &["a".into(), "b".into()], &password(), options).unwrap();
    path
}

/// [`copies_archive`]: removing `a` leaves its pages live through `b`'s
/// list. `compact -n`'s bound reads no data page: it still answers with
/// `b`'s list's page damaged.
#[test]
fn info_counts_the_pages_of_chunks_a_list_names_and_reclaim_reads_no_data_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = copies_archive(dir.path());
    let info = open(&path).info().unwrap();
    assert!(info.stored_page_bytes < 400_000, "b's chunks are a's: {info:?}");
    assert!(info.dead_bytes < 64, "a new archive: {} dead bytes", info.dead_bytes);
    let page_bytes = info.stored_page_bytes;
    ArchiveUpdater::open(&path, &password(), UpdateOptions::new()).unwrap().remove(&[b"a".to_vec()]).unwrap();
    let archive = open(&path);
    let info = archive.info().unwrap();
    assert_eq!(info.stored_page_bytes, page_bytes, "the removal wrote no data page");
    // A removal's session (a header, an entries leaf, a root, a trailer)
    // and the first session's header copy (4,128 bytes, FORMAT.md §3.11)
    // are all that is not in use: `a`'s chunks are `b`'s.
    assert!(info.dead_bytes < 2048 + 4128, "{} dead bytes", info.dead_bytes);
    let reclaim = archive.reclaimable(&Retention::latest()).unwrap();
    assert!(reclaim.bytes < 4096, "{reclaim:?}");
    let list_at = archive.find(b"b").unwrap().unwrap().extent.unwrap().offset;
    drop(archive);
    damage_page_at(&path, list_at);
    let damaged = open(&path);
    assert_eq!(damaged.reclaimable(&Retention::latest()).unwrap().bytes, reclaim.bytes);
    // Two states: `info` reads the lists, for the latest state's figures.
    let err = damaged.info().unwrap_err();
    assert!(err.to_string().contains("failed authentication"), "{err}");
}

/// With one state, every chunk the chunk index lists is one of its files',
/// so `info` takes the live pages from the index and reads no data page
/// (on `s3://`, each would be a GET: the Linux tree's archive took 310
/// requests, issue 51): it answers the same with `b`'s list's page damaged.
#[test]
fn info_of_an_archive_of_one_state_reads_no_data_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = copies_archive(dir.path());
    let archive = open(&path);
    let info = archive.info().unwrap();
    assert!(info.stored_page_bytes < 400_000, "b's chunks are a's: {info:?}");
    assert!(info.dead_bytes < 64, "a new archive: {} dead bytes", info.dead_bytes);
    let list_at = archive.find(b"b").unwrap().unwrap().extent.unwrap().offset;
    drop(archive);
    damage_page_at(&path, list_at);
    assert_eq!(open(&path).info().unwrap(), info);
}
