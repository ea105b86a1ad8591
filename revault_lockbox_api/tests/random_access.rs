//! Reading only what is needed: one file, a subtree, and salvaging what is
//! intact from a damaged archive.

use std::fs;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Archive, ArchiveWriter, ExtractOptions};

use crate::util::*;

/// Counts the bytes read through it, and the ranges the reader says it
/// will read soon (`will_read`, which the S3 reader fetches ahead).
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
    hinted: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    fn new(inner: R, read: &Arc<AtomicU64>) -> Counting<R> {
        Counting { inner, read: Arc::clone(read), hinted: Arc::default() }
    }
}

impl<R: ReadAt> ReadAt for Counting<R> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        self.hinted.fetch_add(ranges.len() as u64, Ordering::Relaxed);
    }
}

#[test]
fn one_small_file_reads_little_of_a_large_archive() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    w.add_file("a-before.bin", &meta(0o644), 1 << 30, corpora::RandomReader::new(1, 1 << 30)).unwrap();
    let small: Vec<u8> = {
        let mut v = Vec::new();
        corpora::TextReader::new(2, 10 << 10).read_to_end(&mut v).unwrap();
        v
    };
    w.add_file("b-small.txt", &meta(0o644), small.len() as u64, &small[..]).unwrap();
    w.add_file("c-after.bin", &meta(0o644), 64 << 20, corpora::RandomReader::new(3, 64 << 20)).unwrap();
    let bytes = w.finish().unwrap();
    assert!(bytes.len() as u64 >= 1 << 30);

    let read = Arc::new(AtomicU64::new(0));
    let archive = Archive::open(Counting::new(Cursor::new(bytes), &read), &password()).unwrap();
    let mut got = Vec::new();
    archive.open_file("b-small.txt").unwrap().read_to_end(&mut got).unwrap();
    assert_eq!(got, small);
    let read = read.load(Ordering::Relaxed);
    assert!(read <= 2 << 20, "read {read} bytes to get a 10 KiB file");
}

/// A lookup reads the trailer, the root, the index nodes on the way to
/// the path and the file's pages: at most 1.5 MiB of a 200 MB archive of
/// 50,000 entries with the default profile (1 MiB pages).
#[test]
fn cat_of_one_file_reads_little_of_an_archive_of_many_entries() {
    const FILES: u64 = 50_000;
    const SIZE: u64 = 4_000;
    let mut w = ArchiveWriter::new(Vec::with_capacity(210 << 20), &password(), cheap()).unwrap();
    for i in 0..FILES {
        if i % 500 == 0 {
            w.add_dir(format!("d{:03}", i / 500), &meta(0o644)).unwrap();
        }
        let path = format!("d{:03}/file-{i:05}.bin", i / 500);
        w.add_file(path, &meta(0o644), SIZE, corpora::RandomReader::new(i, SIZE)).unwrap();
    }
    let bytes = w.finish().unwrap();
    assert!(bytes.len() >= 200_000_000, "{} bytes", bytes.len());
    let read = Arc::new(AtomicU64::new(0));
    let archive = Archive::open(Counting::new(Cursor::new(bytes), &read), &password()).unwrap();
    assert_eq!(archive.entry_count(), FILES + 100);
    let mut got = Vec::new();
    archive.open_file("d061/file-30555.bin").unwrap().read_to_end(&mut got).unwrap();
    let mut expected = Vec::new();
    corpora::RandomReader::new(30_555, SIZE).read_to_end(&mut expected).unwrap();
    assert_eq!(got, expected);
    let read = read.load(Ordering::Relaxed);
    eprintln!("cat of one 4 KB file read {read} bytes of a {FILES}-file archive");
    assert!(read <= 1536 << 10, "read {read} bytes to get a 4 KB file");
}

/// Many small files over many 16 KiB pages.
fn many_files(root: &Path) -> Vec<String> {
    let dir = root.join("t");
    fs::create_dir_all(dir.join("sub")).unwrap();
    let mut names = Vec::new();
    for i in 0..120 {
        let name = if i % 3 == 0 { format!("t/sub/f{i:03}") } else { format!("t/f{i:03}") };
        let mut content = Vec::new();
        corpora::RandomReader::new(i, 2000 + i * 97).read_to_end(&mut content).unwrap();
        fs::write(root.join(&name), content).unwrap();
        names.push(name);
    }
    fs::hard_link(root.join("t/f001"), root.join("t/sub/link-to-f001")).unwrap();
    names
}

#[test]
fn keep_going_restores_every_intact_file_and_lists_the_rest() {
    let work = tempfile::tempdir().unwrap();
    let names = many_files(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap().page_size(16 << 10));
    let mut bytes = fs::read(&archive).unwrap();
    let info = open(&archive).info().unwrap();
    let data_end = DATA_START + info.stored_page_bytes as usize;
    bytes[(DATA_START + data_end) / 2] ^= 0x10;
    fs::write(&archive, &bytes).unwrap();

    // Without --keep-going: stops, nothing unauthenticated under a final name.
    let dest = work.path().join("strict");
    fs::create_dir(&dest).unwrap();
    let err = open(&archive).extract(&dest, &ExtractOptions::new().sync(false)).unwrap_err();
    assert!(err.is_authentication(), "{err}");

    let dest = work.path().join("salvage");
    fs::create_dir(&dest).unwrap();
    let report = open(&archive).extract(&dest, &ExtractOptions::new().sync(false).keep_going(true)).unwrap();
    let damaged: Vec<String> = report.damaged.iter().map(|d| d.path.to_string()).collect();
    assert!(!damaged.is_empty() && damaged.len() < 12, "one page holds a few files: {damaged:?}");
    assert!(report.damaged.iter().all(|d| d.reason.contains("page")), "{:?}", report.damaged);
    for name in &names {
        let restored = dest.join(name);
        if damaged.contains(name) {
            assert!(!restored.exists(), "{name} is damaged but was written");
        } else {
            assert_eq!(fs::read(&restored).unwrap(), fs::read(work.path().join(name)).unwrap(), "{name}");
        }
    }

    // verify reports the same entries, naming the page.
    let verified = open(&archive).verify().unwrap();
    assert!(!verified.is_ok());
    let mut by_verify: Vec<String> = verified.damaged.iter().map(|d| d.path.to_string()).collect();
    let mut by_extract = damaged.clone();
    by_verify.sort();
    by_extract.sort();
    assert_eq!(by_verify, by_extract);
    assert_eq!(verified.damaged_pages.len(), 1, "{:?}", verified.damaged_pages);
}

#[test]
fn verify_passes_an_intact_archive() {
    let work = tempfile::tempdir().unwrap();
    many_files(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap().page_size(16 << 10));
    let report = open(&archive).verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.files, 120);
    assert!(report.pages > 10);
}

#[test]
fn partial_extract_takes_only_the_named_paths() {
    let work = tempfile::tempdir().unwrap();
    many_files(work.path());
    let archive = archive_of(work.path(), work.path(), &["t"], cheap().page_size(16 << 10));
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    let only = vec![b"t/sub".to_vec(), b"t/f002".to_vec()];
    let a = open(&archive);
    let before = entries(&a);
    a.extract(&dest, &ExtractOptions::new().sync(false).only(only)).unwrap();
    assert_eq!(entries(&a), before, "extraction leaves the archive's index as it was");
    let mut got: Vec<String> = all_paths(&dest)
        .iter()
        .map(|p| p.strip_prefix(&dest).unwrap().to_string_lossy().into_owned())
        .collect();
    got.sort();
    assert_eq!(got.len(), 2 + 1 + 40 + 1, "{got:?}");
    assert!(got.iter().all(|p| p.starts_with("t/sub") || p == "t" || p == "t/f002"), "{got:?}");
    // The hard link's target was not selected: it comes back as a copy.
    assert_eq!(
        fs::read(dest.join("t/sub/link-to-f001")).unwrap(),
        fs::read(work.path().join("t/f001")).unwrap()
    );
    let err =
        open(&archive).extract(&dest, &ExtractOptions::new().only(vec![b"t/nope".to_vec()])).unwrap_err();
    assert!(err.to_string().contains("t/nope"), "{err}");
}

#[test]
fn keep_going_skips_hard_links_to_damaged_files() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap().page_size(16 << 10)).unwrap();
    w.add_linked_file("a", &meta(0o644), 200_000, corpora::RandomReader::new(7, 200_000)).unwrap();
    w.add_hardlink("b", &meta(0o644), "a").unwrap();
    w.add_file("c", &meta(0o644), 5, &b"fine\n"[..]).unwrap();
    let mut bytes = w.finish().unwrap();
    bytes[DATA_START + 40_000] ^= 1;
    let work = tempfile::tempdir().unwrap();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let report = archive.extract(work.path(), &ExtractOptions::new().sync(false).keep_going(true)).unwrap();
    let damaged: Vec<String> = report.damaged.iter().map(|d| d.path.to_string()).collect();
    assert_eq!(damaged, ["a", "b"]);
    assert!(!work.path().join("a").exists() && !work.path().join("b").exists());
    assert_eq!(fs::read(work.path().join("c")).unwrap(), b"fine\n");
}

/// More files than one sync batch holds: every batch is synced and renamed.
#[test]
fn synced_extraction_places_every_batch() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    w.add_dir("d", &meta(0o644)).unwrap();
    for i in 0..4500u32 {
        let body = format!("file {i}\n");
        w.add_file(format!("d/{i:05}"), &meta(0o644), body.len() as u64, body.as_bytes()).unwrap();
    }
    let bytes = w.finish().unwrap();
    let work = tempfile::tempdir().unwrap();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let report = archive.extract(work.path(), &ExtractOptions::new()).unwrap();
    assert_eq!(report.entries, 4501);
    let names = fs::read_dir(work.path().join("d")).unwrap().count();
    assert_eq!(names, 4500, "no temporary files left, none missing");
    assert_eq!(fs::read_to_string(work.path().join("d/04499")).unwrap(), "file 4499\n");
}

/// Issue 51: a lookup told the source it would read every leaf after its
/// own under the same node, and the S3 reader fetched them all (a dozen
/// GETs for one `cat`). A lookup hints nothing; a walk that goes on past
/// two leaves, and a walk of everything, hint the leaves that follow.
#[test]
fn a_lookup_hints_no_leaves_and_a_walk_that_goes_on_does() {
    // Paths of about 400 bytes: about 150 entries a 64 KiB leaf, so the
    // 1,500 entries fill about ten leaves.
    let long = "a_long_name_that_widens_every_index_key_".repeat(5);
    let name = |d: usize, f: usize| format!("{long}{d}/{long}{f:04}");
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    for d in 0..3 {
        w.add_dir(format!("{long}{d}"), &meta(0o755)).unwrap();
        for f in 0..500 {
            w.add_file(name(d, f), &meta(0o644), 3, &b"abc"[..]).unwrap();
        }
    }
    let bytes = w.finish().unwrap();
    let source = Counting::new(Cursor::new(bytes), &Arc::default());
    let hinted = Arc::clone(&source.hinted);
    let browser = revault_lockbox_api::read::Browser::new(Archive::open(source, &password()).unwrap());
    let archive = browser.archive();

    for (d, f) in [(0, 0), (1, 250), (2, 499)] {
        let mut got = Vec::new();
        archive.open_file(name(d, f)).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abc");
        assert_eq!(hinted.load(Ordering::Relaxed), 0, "the lookup of {d}/{f} hinted leaves");
    }
    // One name of the top: the listing reads the first leaf and the one
    // where the next name would start, and hints nothing.
    let top = browser.children(b"", None, 1).unwrap();
    assert_eq!(top.len(), 1);
    assert_eq!(hinted.load(Ordering::Relaxed), 0, "a listing of one name hinted leaves");
    // A directory listed whole goes on through several leaves.
    let all = browser.children(format!("{long}1").as_bytes(), None, 1000).unwrap();
    assert_eq!(all.len(), 500);
    let after_listing = hinted.load(Ordering::Relaxed);
    assert!(after_listing > 0, "a listing through several leaves hinted none");
    assert_eq!(archive.entries().unwrap().count(), 1503);
    assert!(hinted.load(Ordering::Relaxed) > after_listing, "a walk of every entry hinted no leaf");
}
