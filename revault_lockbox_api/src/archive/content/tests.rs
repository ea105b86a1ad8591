//! The walk against a reference model: the data stream as one byte vector,
//! where a span's bytes are a slice of it and a damaged page damages
//! exactly the spans that overlap it.

use std::io::Cursor;

use proptest::collection::vec;
use proptest::prelude::*;

use sha2::Digest;

use super::*;
use crate::crypto::{KdfParams, Password};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

/// Hands out `spans` in order and records what each receives.
struct Recorder {
    spans: Vec<Span>,
    next: usize,
    got: Vec<Vec<u8>>,
    ended: Vec<bool>,
    damaged: Vec<bool>,
    digests: Vec<Option<[u8; DIGEST_LEN]>>,
    /// Spans ended so far, and the most handed out and not yet ended.
    ended_count: usize,
    most_waiting: usize,
}

impl ContentVisitor for Recorder {
    fn next_span(&mut self) -> Result<Option<SpanRequest>> {
        let Some(&span) = self.spans.get(self.next) else { return Ok(None) };
        self.next += 1;
        self.most_waiting = self.most_waiting.max(self.next - self.ended_count);
        Ok(Some((self.next - 1, span, ContentHasher::new(None))))
    }
    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        assert!(!self.ended[token] && !self.damaged[token], "bytes after the span's end");
        self.got[token].extend_from_slice(bytes);
        Ok(())
    }
    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        assert!(!self.ended[token], "ended twice");
        self.ended[token] = true;
        self.ended_count += 1;
        self.digests[token] = Some(digest);
        Ok(())
    }
    fn damaged(&mut self, token: usize, _: &Error) -> bool {
        self.damaged[token] = true;
        true
    }
}

/// A page's stream range (start, end) and its offset in the file.
type PageRange = (u64, u64, u64);

impl Recorder {
    fn new(spans: Vec<Span>) -> Recorder {
        let n = spans.len();
        Recorder {
            spans,
            next: 0,
            got: vec![Vec::new(); n],
            ended: vec![false; n],
            damaged: vec![false; n],
            digests: vec![None; n],
            ended_count: 0,
            most_waiting: 0,
        }
    }
}

/// An archive of files of `sizes` (4 KiB pages, so most files cross
/// pages); the data stream rebuilt from the files' extents, which must
/// tile it; and each page's stream range and file offset.
fn archive(sizes: &[usize]) -> (Vec<u8>, Vec<u8>, Vec<PageRange>) {
    let password = Password::from("model");
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096).threads(2);
    let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    for (i, &size) in sizes.iter().enumerate() {
        let content: Vec<u8> = (0..size).map(|j| (j * 31 + i * 7 + j / 97) as u8).collect();
        w.add_file(format!("f{i:03}"), &meta, size as u64, &content[..]).unwrap();
    }
    let bytes = w.finish().unwrap();
    let a = Archive::open(Cursor::new(bytes.clone()), &password).unwrap();
    let mut stream = vec![0u8; a.root.stream_len as usize];
    let mut covered = 0;
    for entry in a.entries().unwrap() {
        let entry = entry.unwrap();
        let extent = entry.extent.expect("a file");
        let mut file = a.open_file(&entry.path).unwrap();
        let at = extent.offset as usize;
        std::io::Read::read_exact(&mut file, &mut stream[at..at + extent.size as usize]).unwrap();
        covered += extent.size;
    }
    assert_eq!(covered, a.root.stream_len, "the files' extents tile the data stream");
    let mut pages = Vec::new();
    if a.root.page_count > 0 {
        let mut records = a.page_records_from(0).unwrap();
        while let Some((_, record, start)) = records.next().unwrap() {
            pages.push((start, start + u64::from(record.plain_len), record.offset));
        }
    }
    (bytes, stream, pages)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn spans_get_slices_of_the_stream_or_are_damaged_with_their_page(
        sizes in vec(0usize..14_000, 0..7),
        cuts in vec((0u64..9_000, 0u64..9_000), 0..12),
        damaged_page in proptest::option::of(0usize..16),
        every_page in any::<bool>(),
    ) {
        let (mut bytes, stream, pages) = archive(&sizes);
        let damaged = damaged_page.and_then(|k| pages.get(k)).copied();
        if let Some((_, _, offset)) = damaged {
            bytes[offset as usize + 1] ^= 0x40;
        }
        // Spans in ascending order with gaps, some empty, all inside the stream.
        let mut spans = Vec::new();
        let mut at = 0u64;
        for (gap, size) in cuts {
            let start = at + gap % 3_000;
            if start + size > stream.len() as u64 {
                break;
            }
            spans.push(Span::whole(start, size));
            at = start + size;
        }
        let mut visitor = Recorder::new(spans.clone());
        let a = Archive::open(Cursor::new(bytes), &Password::from("model")).unwrap();
        a.walk_content(&mut visitor, every_page).unwrap();
        for (i, span) in spans.iter().enumerate() {
            let hit = damaged.is_some_and(|(s, e, _)| span.size > 0 && span.start < e && span.end() > s);
            if hit {
                prop_assert!(visitor.damaged[i] && !visitor.ended[i], "span {i} {span:?}");
            } else {
                prop_assert!(visitor.ended[i] && !visitor.damaged[i], "span {i} {span:?}");
                let want = &stream[span.start as usize..span.end() as usize];
                prop_assert_eq!(&visitor.got[i][..], want);
                let digest: [u8; DIGEST_LEN] = sha2::Sha256::digest(want).into();
                prop_assert_eq!(visitor.digests[i], Some(digest), "span {} hashed on the workers", i);
            }
        }
    }
}

#[test]
fn a_span_past_the_stream_is_refused() {
    let (bytes, stream, _) = archive(&[5000]);
    let a = Archive::open(Cursor::new(bytes), &Password::from("model")).unwrap();
    let past = Span::whole(stream.len() as u64 - 10, 20);
    let mut visitor = Recorder::new(vec![past]);
    assert!(a.walk_content(&mut visitor, false).is_err());
    assert!(!visitor.ended[0]);
    // Spans out of stream order (later sessions' files) are read in
    // passes, not refused.
    let mut visitor = Recorder::new(vec![Span::whole(100, 10), Span::whole(50, 10)]);
    a.walk_content(&mut visitor, false).unwrap();
    assert!(visitor.ended.iter().all(|&e| e), "both spans delivered");
}

/// A page holding more spans than may wait (64 KiB pages of 1-byte
/// files) is read again in as many passes as it takes: the spans waiting
/// never pass `MAX_WAITING_SPANS` however many a page holds, and each
/// still gets its byte and its digest. (Every span of a page was handed
/// out before the page was read: extraction's peak grew with the entries
/// until it held four pages' worth of 100-byte files.)
#[test]
fn a_page_of_more_spans_than_may_wait_is_read_in_passes() {
    let password = Password::from("spans");
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(65_536).threads(2);
    let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
    let content: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    w.add_file("f", &Metadata::new(0o644, 0, 0, 0, 0), content.len() as u64, &content[..]).unwrap();
    let a = Archive::open(Cursor::new(w.finish().unwrap()), &password).unwrap();
    let spans: Vec<Span> = (0..content.len() as u64).map(|start| Span::whole(start, 1)).collect();
    let mut visitor = Recorder::new(spans);
    a.walk_content(&mut visitor, false).unwrap();
    assert!(visitor.most_waiting <= MAX_WAITING_SPANS, "{} spans waited", visitor.most_waiting);
    for (i, byte) in content.iter().enumerate() {
        assert!(visitor.ended[i] && visitor.got[i] == [*byte], "span {i}");
        assert_eq!(visitor.digests[i], Some(sha2::Sha256::digest([*byte]).into()), "span {i}");
    }
}

/// Writes `files` (name, content, size hint) with pages of `page_size`
/// and `small_files_page_size`, checks that each reads back and that the
/// archive verifies; returns the pages' plaintext lengths.
fn page_lengths(
    page_size: usize,
    small_files_page_size: usize,
    files: &[(String, Vec<u8>, u64)],
) -> Vec<u32> {
    let password = Password::from("pages");
    let options = CreateOptions::new()
        .kdf(KdfParams::INSECURE_FOR_TESTS)
        .page_size(page_size)
        .small_files_page_size(small_files_page_size)
        .threads(2);
    let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    for (name, bytes, hint) in files {
        w.add_file(name, &meta, *hint, &bytes[..]).unwrap();
    }
    let a = Archive::open(Cursor::new(w.finish().unwrap()), &password).unwrap();
    for (name, want) in files.iter().map(|(name, bytes, _)| (name, bytes)) {
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut a.open_file(name).unwrap(), &mut read).unwrap();
        assert!(&read == want, "{name} reads back");
    }
    assert!(a.verify().unwrap().is_ok());
    let mut pages = Vec::new();
    let mut records = a.page_records_from(0).unwrap();
    while let Some((_, record, _)) = records.next().unwrap() {
        pages.push(record.plain_len);
    }
    pages
}

/// Small files fill pages of `small_files_page_size`; a large file
/// starts a page, and the pages holding its bytes are `page_size`.
#[test]
fn runs_of_small_files_fill_larger_pages_than_large_files() {
    // 24 small files (24,000 bytes), a large one (10,000 bytes: three
    // pages, its last partly filled by the small files after it), then
    // 12 small files more; the last file comes without a size hint.
    let sizes = [[1000; 24].as_slice(), &[10_000], &[1500; 12]].concat();
    let files: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let bytes: Vec<u8> = (0..size).map(|j| (j * 7 + i * 13 + j / 89) as u8).collect();
            let hint = if i + 1 == sizes.len() { 0 } else { size as u64 };
            (format!("f{i:02}"), bytes, hint)
        })
        .collect();
    // 16,384 of small files, 7,616 (the large file starts a page), the
    // large file's 4,096 + 4,096 + 1,808 then 2,288 of small files up
    // to 4,096, and the remaining 15,712 on a page of small files.
    assert_eq!(page_lengths(4096, 16_384, &files), [16_384, 7_616, 4_096, 4_096, 4_096, 15_712]);
}

/// A run of small files that does not compress keeps to `page_size`: a
/// larger page would save nothing and cost its readers more.
#[test]
fn runs_of_incompressible_small_files_keep_to_the_page_size() {
    // 40 files of 3,000 random bytes, then 40 of text.
    let mut files = Vec::new();
    for i in 0..40u64 {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut corpora::RandomReader::new(i, 3000), &mut bytes).unwrap();
        files.push((format!("a{i:02}"), bytes, 3000));
    }
    for i in 0..40 {
        let bytes = format!("line {i} of a text that compresses well\n").repeat(75).into_bytes();
        let hint = bytes.len() as u64;
        files.push((format!("b{i:02}"), bytes, hint));
    }
    let pages = page_lengths(16_384, 65_536, &files);
    // 120,000 random bytes in 16 KiB pages; the page where the text starts
    // (its first 16 KiB still random) and the text's pages grow.
    assert_eq!(&pages[..7], [16_384; 7], "{pages:?}");
    assert!(pages[7..].iter().any(|&len| len > 16_384), "{pages:?}");
}
