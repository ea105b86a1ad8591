//! Export and contents alone through the content walk: order, content,
//! sparse files, hard links, damage, missing names and the pause.

use std::io::{Cursor, Read};

use super::header::pax_time;
use super::writer::{write_stream, MAX_QUEUED};
use super::*;
use crate::crypto::{KdfParams, Password};
use crate::format::SparseMap;
use crate::session::{ArchiveWriter, CreateOptions, Metadata};
use crate::test_data::content;

const PAGE: usize = 4096;

fn password() -> Password {
    Password::from("export")
}

/// An archive (4 KiB pages) whose entries interleave, in path order,
/// files of many pages, small and empty files, a sparse file, links
/// and directories: each entry after a file waits for its content.
fn archive() -> Vec<u8> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE).threads(2);
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    let big = content(40 * PAGE + 123, 2);
    w.add_linked_file("a-big", &meta, big.len() as u64, &big[..]).unwrap();
    w.add_file("b-empty", &meta, 0, &b""[..]).unwrap();
    w.add_dir("c-dir", &meta).unwrap();
    w.add_file("c-dir/small", &meta, 100, &content(100, 1)[..]).unwrap();
    w.add_hardlink("d-link", &meta, "a-big").unwrap();
    let size = 30 * PAGE as u64;
    let map = SparseMap::new(vec![(PAGE as u64, 3 * PAGE as u64), (20 * PAGE as u64, 5 * PAGE as u64)], size)
        .unwrap();
    w.add_sparse_file("e-sparse", &meta, map, size, false, &content(8 * PAGE, 3)[..]).unwrap();
    w.add_file("f-empty", &meta, 0, &b""[..]).unwrap();
    w.add_symlink("g-symlink", &meta, "a-big").unwrap();
    w.add_file("h-two-pages", &meta, 6000, &content(6000, 4)[..]).unwrap();
    w.finish().unwrap()
}

/// Each tar entry: its path, type, link target and content.
fn read_tar(stream: &[u8]) -> Vec<(String, tar::EntryType, Option<String>, Vec<u8>)> {
    let mut tar = tar::Archive::new(stream);
    let mut got = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let kind = entry.header().entry_type();
        let link = entry.link_name().unwrap().map(|l| l.to_string_lossy().into_owned());
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        got.push((path, kind, link, bytes));
    }
    got
}

#[test]
fn every_entry_goes_out_in_order_with_its_content() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let (stream, report) = export(Vec::new(), &a, &Members::all()).unwrap();
    assert!(stream.ends_with(&[0; 1024]), "the end-of-archive blocks");
    let got = read_tar(&stream);
    let names: Vec<&str> = got.iter().map(|(p, ..)| p.as_str()).collect();
    let want = ["a-big", "b-empty", "c-dir", "c-dir/small", "d-link", "e-sparse", "f-empty", "g-symlink"];
    assert_eq!(names, [&want[..], &["h-two-pages"]].concat());
    for (path, kind, link, bytes) in &got {
        match kind {
            tar::EntryType::Regular => {
                // The file read through the archive's own reader.
                let mut want = Vec::new();
                a.open_file(path).unwrap().read_to_end(&mut want).unwrap();
                assert!(bytes == &want, "{path}: {} bytes, {} wanted", bytes.len(), want.len());
            }
            tar::EntryType::Link => {
                assert_eq!((path.as_str(), link.as_deref()), ("d-link", Some("a-big")))
            }
            tar::EntryType::Symlink => assert_eq!(link.as_deref(), Some("a-big")),
            tar::EntryType::Directory => assert_eq!(path, "c-dir"),
            other => panic!("{path}: {other:?}"),
        }
    }
    let sparse = &got[5].3;
    assert_eq!(sparse.len(), 30 * PAGE, "the sparse file's holes go out as zeros");
    assert!(
        sparse[..PAGE].iter().all(|&b| b == 0) && sparse[PAGE..4 * PAGE] == content(8 * PAGE, 3)[..3 * PAGE]
    );
    let sizes = [40 * PAGE + 123, 0, 100, 30 * PAGE, 0, 6000];
    assert_eq!(report, ExportReport { entries: 9, content_bytes: sizes.iter().sum::<usize>() as u64 });
}

#[test]
fn contents_alone_are_the_files_and_hard_links_one_after_another() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let (out, report) = write_contents(Vec::new(), &a, &Members::all()).unwrap();
    let mut want = Vec::new();
    for path in ["a-big", "b-empty", "c-dir/small", "d-link", "e-sparse", "f-empty", "h-two-pages"] {
        a.open_file(path).unwrap().read_to_end(&mut want).unwrap();
    }
    assert!(out == want, "{} bytes, {} wanted", out.len(), want.len());
    assert_eq!(report, ExportReport { entries: 7, content_bytes: want.len() as u64 });
}

#[test]
fn a_damaged_page_stops_the_stream_before_its_file_ends() {
    let bytes = archive();
    let a = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
    let big = a.find(b"a-big").unwrap().unwrap();
    let start = big.extent.unwrap().offset;
    // A page well inside `a-big`, whose header is then out already.
    let leaf = a.pages_leaf_at(start).unwrap();
    let (number, record, _) = crate::archive::page_in(&leaf, start + 10 * PAGE as u64).unwrap();
    let mut damaged = bytes;
    damaged[record.offset as usize + 40] ^= 0x04;
    let a = Archive::open(Cursor::new(damaged), &password()).unwrap();
    let mut stream = Vec::new();
    let err = export(&mut stream, &a, &Members::all()).unwrap_err();
    assert!(matches!(err, Error::DamagedPage { number: n } if n == number), "{err:?}");
    // `a-big`'s header and the bytes before the damage, then nothing:
    // no end-of-archive blocks, so a reader of the stream fails too.
    assert!(!stream.ends_with(&[0; 1024]), "no end-of-archive blocks");
    let mut tar = tar::Archive::new(&stream[..]);
    let mut first = tar.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(first.path().unwrap().to_str(), Some("a-big"));
    let mut got = Vec::new();
    let _ = first.read_to_end(&mut got);
    assert!(got.len() < 40 * PAGE + 123, "its content is cut short: {} bytes", got.len());
    let err = write_contents(Vec::new(), &a, &Members::all()).unwrap_err();
    assert!(matches!(err, Error::DamagedPage { number: n } if n == number), "{err:?}");
}

#[test]
fn a_long_run_of_entries_after_a_file_pauses_the_walk_and_keeps_its_order() {
    // Whole files: the walk of chunked files is not what this tests.
    let options = CreateOptions::new()
        .kdf(KdfParams::INSECURE_FOR_TESTS)
        .page_size(PAGE)
        .threads(2)
        .chunk_sizes(crate::test_data::whole_below_1_mib());
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
    let meta = Metadata::new(0o755, 0, 0, 0, 0);
    let big = content(40 * PAGE, 6);
    let mut want = vec!["a".to_string()];
    w.add_file("a", &meta, big.len() as u64, &big[..]).unwrap();
    for i in 0..10 * MAX_QUEUED {
        let name = format!("d{i:04}");
        w.add_dir(&name, &meta).unwrap();
        want.push(name);
    }
    w.add_file("z", &meta, 3 * PAGE as u64, &content(3 * PAGE, 7)[..]).unwrap();
    want.push("z".into());
    let a = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
    let mut stream = Stream::Tar(tar::Builder::new(Gate { inner: Vec::new(), open: true }));
    let (report, most_queued) = write_stream(&mut stream, &a, &Members::all()).unwrap();
    assert!(most_queued <= MAX_QUEUED, "{most_queued} directories queued at once");
    let Stream::Tar(tar) = stream else { unreachable!() };
    let got = read_tar(&tar.into_inner().unwrap().inner);
    assert_eq!(got.iter().map(|(p, ..)| p.trim_end_matches('/')).collect::<Vec<_>>(), want);
    assert!(got[0].3 == big && got.last().unwrap().3 == content(3 * PAGE, 7));
    assert_eq!(report.entries, want.len() as u64);
}

#[test]
fn a_name_that_matches_nothing_writes_nothing() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let members = Members::paths(&[b"a-big".to_vec(), b"nope".to_vec()]);
    let mut stream = Vec::new();
    assert!(matches!(export(&mut stream, &a, &members), Err(Error::NotFound { .. })));
    assert!(matches!(write_contents(&mut stream, &a, &members), Err(Error::NotFound { .. })));
    assert!(stream.is_empty(), "{} bytes written", stream.len());
}

#[test]
fn a_hard_link_alone_goes_out_as_its_targets_content() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let want = content(40 * PAGE + 123, 2);
    let link = Members::paths(&[b"d-link".to_vec()]);
    let (stream, _) = export(Vec::new(), &a, &link).unwrap();
    let got = read_tar(&stream);
    assert_eq!((got.len(), got[0].0.as_str(), got[0].1), (1, "d-link", tar::EntryType::Regular));
    assert!(got[0].3 == want);
    let (contents, report) = write_contents(Vec::new(), &a, &link).unwrap();
    assert!(contents == want);
    assert_eq!(report.entries, 1);
}

#[test]
fn pax_times_round_trip_the_import_parser() {
    assert_eq!(pax_time(1_700_000_000, 0), "1700000000");
    assert_eq!(pax_time(1_700_000_000, 5), "1700000000.000000005");
    assert_eq!(pax_time(-2, 750_000_000), "-1.250000000");
}
