//! A file read through from its start, its pages opened ahead on the
//! workers: the same bytes as page by page, a damaged page or a content
//! hash that does not match refused, a seek back to page by page.

use std::io::{Cursor, Read, Seek, SeekFrom};

use crate::archive::Archive;
use crate::crypto::{KdfParams, Password};
use crate::error::Error;
use crate::format::{EntryKind, SparseMap};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};
use crate::test_data::content;

const PAGE: usize = 4096;

fn password() -> Password {
    Password::from("ahead")
}

/// An archive (4 KiB pages) of a small file, `big` (40 pages at least),
/// a sparse file whose data spans pages, and a file after them.
fn archive() -> Vec<u8> {
    let options = CreateOptions::new()
        .kdf(KdfParams::INSECURE_FOR_TESTS)
        .page_size(PAGE)
        .threads(2)
        .chunk_sizes(crate::test_data::whole_below_1_mib());
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    w.add_file("a", &meta, 100, &content(100, 1)[..]).unwrap();
    let big = content(40 * PAGE + 123, 2);
    w.add_file("big", &meta, big.len() as u64, &big[..]).unwrap();
    let size = 30 * PAGE as u64;
    let map = SparseMap::new(vec![(0, 3 * PAGE as u64), (20 * PAGE as u64, 5 * PAGE as u64)], size).unwrap();
    w.add_sparse_file("sparse", &meta, map, size, false, &content(8 * PAGE, 3)[..]).unwrap();
    w.add_file("z", &meta, 5000, &content(5000, 4)[..]).unwrap();
    let hole = SparseMap::new(vec![(5 * PAGE as u64, 3 * PAGE as u64)], 10 * PAGE as u64).unwrap();
    w.add_sparse_file("zhole", &meta, hole, 10 * PAGE as u64, false, &content(3 * PAGE, 5)[..]).unwrap();
    w.finish().unwrap()
}

/// `sparse`'s logical bytes.
fn sparse_bytes() -> Vec<u8> {
    let data = content(8 * PAGE, 3);
    let mut logical = vec![0u8; 30 * PAGE];
    logical[..3 * PAGE].copy_from_slice(&data[..3 * PAGE]);
    logical[20 * PAGE..25 * PAGE].copy_from_slice(&data[3 * PAGE..]);
    logical
}

#[test]
fn a_file_read_through_is_read_ahead_and_matches() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    for (path, want) in [("big", content(40 * PAGE + 123, 2)), ("sparse", sparse_bytes())] {
        for chunk in [1000, PAGE, 64 << 10] {
            let mut reader = a.open_file(path).unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0u8; chunk];
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                assert!(reader.ahead.is_some(), "{path}: from its first read, the reader reads ahead");
            }
            assert!(got == want, "{path} read in {chunk}-byte reads");
        }
    }
    // Within one page: read on this thread, no workers started.
    let mut small = a.open_file("a").unwrap();
    let mut head = [0u8; 10];
    small.read_exact(&mut head).unwrap();
    assert!(small.ahead.is_none(), "a file within one page is not read ahead");
    let mut rest = Vec::new();
    small.read_to_end(&mut rest).unwrap();
    assert_eq!([&head[..], &rest].concat(), content(100, 1));
}

#[test]
fn only_a_file_going_on_past_its_first_page_reads_ahead_from_its_first_read() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let mut kinds = (false, false);
    for path in ["a", "big", "sparse", "z"] {
        let extent = a.find(path.as_bytes()).unwrap().unwrap().extent.unwrap();
        let leaf = a.pages_leaf_at(extent.offset).unwrap();
        let (_, record, page_start) = super::page_in(&leaf, extent.offset).unwrap();
        let past = extent.offset + extent.size > page_start + u64::from(record.plain_len);
        let mut reader = a.open_file(path).unwrap();
        reader.read_exact(&mut [0u8; 1]).unwrap();
        assert_eq!(reader.ahead.is_some(), past, "{path}");
        kinds = (kinds.0 || past, kinds.1 || !past);
    }
    assert_eq!(kinds, (true, true), "files of both kinds");
}

#[test]
fn a_sparse_file_that_starts_with_a_hole_reads_ahead_from_its_data() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let mut reader = a.open_file("zhole").unwrap();
    let mut got = vec![0xff; 5 * PAGE + 1];
    reader.read_exact(&mut got[..5 * PAGE]).unwrap();
    assert!(reader.ahead.is_none(), "a hole reads no page");
    reader.read_exact(&mut got[5 * PAGE..]).unwrap();
    assert!(reader.ahead.is_some(), "its data spans pages");
    reader.read_to_end(&mut got).unwrap();
    let mut want = vec![0u8; 10 * PAGE];
    want[5 * PAGE..8 * PAGE].copy_from_slice(&content(3 * PAGE, 5));
    assert!(got == want);
}

#[test]
fn a_seek_while_reading_ahead_goes_back_to_page_by_page() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let want = content(40 * PAGE + 123, 2);
    let mut reader = a.open_file("big").unwrap();
    let mut head = vec![0u8; 10 * PAGE];
    reader.read_exact(&mut head).unwrap();
    assert!(reader.ahead.is_some());
    reader.seek(SeekFrom::Start(3 * PAGE as u64 + 5)).unwrap();
    assert!(reader.ahead.is_none(), "a seek ends the read-ahead");
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(head == want[..10 * PAGE] && rest == want[3 * PAGE + 5..]);
}

#[test]
fn a_damaged_page_ahead_is_refused_after_the_bytes_before_it() {
    let bytes = archive();
    let a = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap();
    let big = a.find(b"big").unwrap().unwrap();
    let start = big.extent.unwrap().offset;
    // The file's fourth page: well past the first, so read ahead.
    let leaf = a.pages_leaf_at(start).unwrap();
    let (number, record, page_start) = super::page_in(&leaf, start + 3 * PAGE as u64).unwrap();
    let mut damaged = bytes;
    damaged[record.offset as usize + 40] ^= 0x04;
    let a = Archive::open(Cursor::new(damaged), &password()).unwrap();
    let mut reader = a.open_file("big").unwrap();
    let mut got = Vec::new();
    let err = reader.read_to_end(&mut got).unwrap_err();
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<Error>());
    assert!(matches!(inner, Some(Error::DamagedPage { number: n }) if *n == number), "{err:?}");
    assert_eq!(got.len() as u64, page_start - start, "every byte before the damaged page, none of it");
    assert!(got == content(40 * PAGE + 123, 2)[..got.len()]);
}

#[test]
fn a_content_hash_that_does_not_match_is_refused_at_the_end() {
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    for path in [&b"big"[..], b"sparse"] {
        let mut entry = a.find(path).unwrap().unwrap();
        match &mut entry.kind {
            EntryKind::File { sha256, .. } => sha256[0] ^= 1,
            other => panic!("{other:?}"),
        }
        let mut reader = a.content_reader(&entry, None).unwrap().reading_ahead();
        reader.read_exact(&mut [0u8; 2 * PAGE + 1]).unwrap();
        assert!(reader.ahead.is_some(), "the digest comes from the workers");
        let err = reader.read_to_end(&mut Vec::new()).unwrap_err();
        let inner = err.get_ref().and_then(|e| e.downcast_ref::<Error>());
        assert!(matches!(inner, Some(Error::ChecksumMismatch { .. })), "{err:?}");
    }
}

#[test]
fn a_reader_reading_ahead_can_move_to_another_thread() {
    fn send<T: Send>(_: &T) {}
    let a = Archive::open(Cursor::new(archive()), &password()).unwrap();
    let mut reader = a.open_file("big").unwrap();
    reader.read_exact(&mut [0u8; 3 * PAGE]).unwrap();
    send(&reader);
    let rest = std::thread::scope(|s| {
        s.spawn(move || {
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).map(|_| rest)
        })
        .join()
        .unwrap()
    })
    .unwrap();
    assert!(rest == content(40 * PAGE + 123, 2)[3 * PAGE..]);
}

/// An archive (4 KiB pages, 1/4/16 KiB chunks) of `one` (about 50
/// chunks) and `two`, which repeats `one`'s second half, then its first,
/// then bytes of its own: its list names chunks back and forth.
fn chunked_archive() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let params = crate::chunk::ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE).chunk_sizes(params);
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    let one = crate::test_data::random(200 << 10, 7);
    let mut two = one[100 << 10..].to_vec();
    two.extend_from_slice(&one[..100 << 10]);
    two.extend_from_slice(&crate::test_data::random(30 << 10, 8));
    w.add_file("one", &meta, one.len() as u64, &one[..]).unwrap();
    w.add_file("two", &meta, two.len() as u64, &two[..]).unwrap();
    (w.finish().unwrap(), one, two)
}

#[test]
fn a_chunked_file_reads_through_its_list_with_seeks() {
    let (bytes, one, two) = chunked_archive();
    let a = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let entry = a.find("one").unwrap().unwrap();
    let chunks = a.chunk_list(&entry).unwrap().unwrap();
    assert!((30..90).contains(&chunks.len()), "{} chunks", chunks.len());
    for (path, want) in [("one", &one), ("two", &two)] {
        let mut got = Vec::new();
        let mut reader = a.open_file(path).unwrap();
        assert_eq!(reader.len(), want.len() as u64);
        // Odd read sizes cross chunk and page ends.
        let mut buf = vec![0u8; 1777];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert!(&got == want, "{path} reads as written");
        assert!(reader.ahead.is_none(), "a chunked file is read page by page");
        // Seeks anywhere: chunk starts, their last bytes, the end.
        let mut reader = a.open_file(path).unwrap();
        let ends = a.chunk_list(&a.find(path).unwrap().unwrap()).unwrap().unwrap();
        let mut at = 0u64;
        let mut places = vec![want.len() as u64 - 1, 5, 0];
        for c in ends.iter().step_by(7) {
            places.extend([at, at + u64::from(c.len) - 1]);
            at += u64::from(c.len);
        }
        for place in places {
            reader.seek(SeekFrom::Start(place)).unwrap();
            let mut part = vec![0u8; 5000];
            let n = reader.read(&mut part).unwrap();
            assert!(n > 0 && part[..n] == want[place as usize..place as usize + n], "{path} at {place}");
        }
        reader.seek(SeekFrom::End(-10)).unwrap();
        let mut tail = Vec::new();
        reader.read_to_end(&mut tail).unwrap();
        assert!(tail == want[want.len() - 10..]);
    }
}

#[test]
fn a_chunked_file_whose_content_hash_does_not_match_is_refused_at_the_end() {
    let (bytes, one, _) = chunked_archive();
    let a = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let mut entry = a.find("one").unwrap().unwrap();
    match &mut entry.kind {
        EntryKind::File { sha256, .. } => sha256[0] ^= 1,
        other => panic!("{other:?}"),
    }
    let mut reader = a.content_reader(&entry, None).unwrap().reading_ahead();
    let mut got = vec![0u8; one.len()];
    reader.read_exact(&mut got).unwrap();
    assert!(got == one);
    let err = reader.read(&mut [0u8; 1]).unwrap_err();
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<Error>());
    assert!(matches!(inner, Some(Error::ChecksumMismatch { .. })), "{err:?}");
}

/// Chunked entries an attacker holding the key could write: each list is
/// refused as malformed (exit 3) by `open_file`, before a byte is read.
#[test]
fn hostile_chunk_lists_are_refused_as_malformed() {
    use crate::format::{encode_chunk_list, ChunkRef, Entry, Extent, MAX_CHUNK_LEN};

    let chunk = |offset: u64, len: u32| ChunkRef { offset, len, id: [0; 32] };
    // Each case: the list's records, the count and size the entry claims,
    // and the message.
    let cases = [
        ("lengths over the size", vec![chunk(0, 100), chunk(100, 100)], (2, 150), "add up"),
        ("lengths under the size", vec![chunk(0, 100)], (1, 150), "add up"),
        (
            "a chunk too long",
            vec![chunk(0, MAX_CHUNK_LEN + 1)],
            (1, u64::from(MAX_CHUNK_LEN) + 1),
            "out of range",
        ),
        ("a chunk after its list", vec![chunk(0, 100), chunk(1 << 20, 100)], (2, 200), "before its list"),
        ("a list past the stream", vec![chunk(0, 100)], (1000, 100_000), "outside the data pages"),
    ];
    for (name, list, claim, message) in cases {
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE);
        let mut w = ArchiveWriter::new(Vec::new(), &password(), options).unwrap();
        let meta = Metadata::new(0o644, 0, 0, 0, 0);
        w.add_file("a", &meta, 3000, &content(3000, 1)[..]).unwrap();
        let at = w.append_raw(&encode_chunk_list(&list));
        let (count, size) = claim;
        let kind = EntryKind::File { size, sha256: [0; 32] };
        let extent = Some(Extent { offset: at, size, linked: false, chunks: count });
        w.push_raw(Entry { path: b"c".to_vec(), kind, meta, extent, sparse: None }).unwrap();
        let a = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
        let err = a.open_file("c").err().unwrap_or_else(|| panic!("{name}: opened"));
        assert!(err.is_authentication(), "{name}: {err}");
        assert!(err.to_string().contains(message), "{name}: {err}");
    }
}
