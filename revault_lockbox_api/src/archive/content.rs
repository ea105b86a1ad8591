//! Walking file contents through the data pages in one ordered pass: the
//! shared engine of extraction and verification.
//!
//! The visitor hands out file spans in ascending data-stream order as it
//! walks the entries; the engine reads the pages those spans need (every
//! page, for verification) in order, opens them on worker threads with
//! bounded read-ahead, and delivers each span's bytes and, at its end, the
//! digest of its content, hashed on the workers. Memory is the pages in
//! flight and the spans they cover, whatever the archive's size.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{no_page, Archive};
use crate::error::{Error, Result};
use crate::format::{malformed_error, PageRecord, PagesLeaf, Table, DIGEST_LEN};
use crate::index::{page_key, read_sealed_into, LeafCursor};
use crate::pipeline::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

/// One file's bytes in the data stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) size: u64,
}

impl Span {
    fn end(&self) -> u64 {
        self.start + self.size
    }
}

/// A span the visitor wants: its name, its bytes, and the hasher of the
/// entry's content (which knows a sparse file's holes).
pub(crate) type SpanRequest = (usize, Span, ContentHasher);

/// Feeds spans to the engine and receives their bytes. `token` is the
/// visitor's own name for a span.
pub(crate) trait ContentVisitor {
    /// The next span, at or after the end of the one before; `None` when
    /// there are no more.
    fn next_span(&mut self) -> Result<Option<SpanRequest>>;
    /// The next bytes of span `token`, authenticated, in order. An empty
    /// span gets one call with no bytes.
    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()>;
    /// All of span `token` was delivered; `digest` is what its hasher
    /// made of the bytes.
    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()>;
    /// A page holding bytes of span `token` failed; return `true` to go on
    /// with the other spans, `false` to stop with `error`.
    fn damaged(&mut self, token: usize, error: &Error) -> bool;
    /// Page `number` was opened, or failed with `error`.
    fn page(&mut self, _number: u64, _error: Option<&Error>) {}
}

/// A span waiting for its bytes.
struct Pending {
    token: usize,
    span: Span,
    written: u64,
}

/// The page records in order, from a starting leaf, through each session's
/// pages tree in turn, with the table's continuity checked: page numbers
/// and stream offsets follow on, and each session's pages start at the
/// page the sessions table says.
struct PageRecords<'a, S> {
    archive: &'a Archive<S>,
    session: usize,
    cursor: LeafCursor<'a>,
    tree: crate::index::TreeReader<'a>,
    leaf: Option<PagesLeaf>,
    index: usize,
    /// Next page number and stream offset expected.
    next: Option<(u64, u64)>,
}

impl<S: ReadAt> PageRecords<'_, S> {
    fn next(&mut self) -> Result<Option<(u64, PageRecord, u64)>> {
        loop {
            if let Some(leaf) = &self.leaf {
                if let Some(record) = leaf.pages.get(self.index) {
                    let (number, start) = self.next.expect("set with the leaf");
                    self.index += 1;
                    self.next = Some((number + 1, start + u64::from(record.plain_len)));
                    return Ok(Some((number, *record, start)));
                }
            }
            let Some(next) = self.cursor.next() else {
                if !self.next_session()? {
                    return Ok(None);
                }
                continue;
            };
            let (id, child) = next?;
            let leaf = PagesLeaf::decode(&self.tree.node(&id, &child)?)?;
            if page_key(leaf.first_offset) != child.first_key
                || self.next.is_some_and(|n| n != (leaf.first_page, leaf.first_offset))
            {
                return Err(malformed_error("page table", "leaves do not follow on"));
            }
            self.next = Some((leaf.first_page, leaf.first_offset));
            self.leaf = Some(leaf);
            self.index = 0;
        }
    }

    /// Where the walk stands: the next page number and stream offset.
    fn position(&self) -> Option<(u64, u64)> {
        self.next
    }

    /// Moves on to the next session's pages tree; `false` after the last.
    fn next_session(&mut self) -> Result<bool> {
        let sessions = &self.archive.root.sessions;
        if self.session + 1 >= sessions.len() {
            return Ok(false);
        }
        self.session += 1;
        let first_page = sessions[self.session].first_page;
        if self.next.is_some_and(|(page, _)| page != first_page) {
            return Err(malformed_error("page table", "a session's pages do not start where the root says"));
        }
        self.tree = self.archive.tree_of(self.session, Table::Pages);
        self.cursor = self.tree.leaves(self.archive.root.pages_of(self.session));
        Ok(true)
    }
}

/// Spans handed out and waiting for their pages, past which no further
/// page is read ahead: a bound on the walk's memory (and the visitor's)
/// that does not depend on how small the files are.
const MAX_WAITING_SPANS: usize = 16 << 10;

impl<S: ReadAt> Archive<S> {
    fn page_records_from(&self, at: u64) -> Result<PageRecords<'_, S>> {
        let session = self.session_at(at);
        let tree = self.tree_of(session, Table::Pages);
        let cursor = tree.leaves_from(self.root.pages_of(session), &page_key(at))?;
        Ok(PageRecords { archive: self, session, cursor, tree, leaf: None, index: 0, next: None })
    }

    /// Delivers the bytes of every span `visitor` hands out. With
    /// `every_page`, also opens the pages no span needs (verification) and
    /// checks that the page table covers the whole data stream.
    ///
    /// Spans come in index order; after appends, files of a later session
    /// sit later in the data stream than paths around them. The walk runs
    /// in passes, each over ascending spans: a span that starts before the
    /// previous one ended begins the next pass (its pages are read again).
    pub(crate) fn walk_content(&self, visitor: &mut dyn ContentVisitor, every_page: bool) -> Result<()> {
        let mut pass = Pass { inner: visitor, carry: None, last_end: 0, stopped: false };
        let mut first = true;
        loop {
            self.walk_pass(&mut pass, every_page && first)?;
            first = false;
            if pass.carry.is_none() {
                return Ok(());
            }
            pass.stopped = false;
            pass.last_end = 0;
        }
    }

    fn walk_pass(&self, visitor: &mut dyn ContentVisitor, every_page: bool) -> Result<()> {
        let mut queue: VecDeque<Pending> = VecDeque::new();
        // Spans pulled and not yet handed to the workers with a page.
        let mut to_hash: VecDeque<HashedSpan> = VecDeque::new();
        let mut spans_done = false;
        let mut pages: Option<PageRecords<'_, S>> = None;
        let mut pool = PageOpener::new(self.tuning.threads, self.tuning.pages_in_flight)?;
        let mut pages_done = false;
        // The last span the visitor gave, for the order check.
        let mut last_end = 0u64;
        loop {
            // Pages in flight are bounded, and so are the spans waiting for
            // them: a page of tiny files holds thousands.
            let room = |pool: &PageOpener, queue: &VecDeque<Pending>| {
                pool.in_flight() == 0
                    || (pool.in_flight() < self.tuning.pages_in_flight && queue.len() < MAX_WAITING_SPANS)
            };
            while !pages_done && room(&pool, &queue) {
                if pages.is_none() {
                    let from = if every_page {
                        0
                    } else {
                        pull_span(visitor, (&mut queue, &mut to_hash), &mut spans_done, &mut last_end)?;
                        match queue.back() {
                            Some(p) => p.span.start,
                            None if spans_done => {
                                pages_done = true;
                                break;
                            }
                            None => continue,
                        }
                    };
                    pages = Some(self.page_records_from(from)?);
                }
                let records = pages.as_mut().expect("set above");
                let Some((number, record, start)) = records.next()? else {
                    pages_done = true;
                    break;
                };
                let end = start + u64::from(record.plain_len);
                // Know every span that starts before this page ends.
                while !spans_done && queue.back().is_none_or(|p| p.span.start < end) {
                    pull_span(visitor, (&mut queue, &mut to_hash), &mut spans_done, &mut last_end)?;
                }
                let wanted = every_page || queue.iter().any(|p| p.span.start < end && p.span.end() > start);
                if !wanted {
                    if spans_done && queue.iter().all(|p| p.span.end() <= start) {
                        pages_done = true;
                    }
                    continue;
                }
                let what = || format!("page {number}");
                let sealed =
                    read_sealed_into(&self.src, record.offset, record.stored_len, what, pool.buffer());
                let keys = Arc::clone(self.keys_for(number));
                let mut spans = pool.spans();
                while to_hash.front().is_some_and(|s| s.start < end) {
                    spans.extend(to_hash.pop_front());
                }
                let archive_id = self.archive_id;
                pool.submit(PageToOpen { number, start, record, keys, archive_id, sealed, spans });
            }
            let Some(OpenedPage { number, start, end, plain, digests }) = pool.pop() else { break };
            match plain {
                Ok(page) => {
                    deliver(visitor, &mut queue, number, (start, end), Ok(&page), &digests)?;
                    pool.recycle(page);
                }
                Err(error) => deliver(visitor, &mut queue, number, (start, end), Err(error), &digests)?,
            }
            pool.recycle_digests(digests);
        }
        // Spans no page held, and empty spans past the last page.
        while !spans_done {
            pull_span(visitor, (&mut queue, &mut to_hash), &mut spans_done, &mut last_end)?;
        }
        if !queue.is_empty() {
            return Err(no_page());
        }
        if every_page {
            let position = pages.as_ref().and_then(PageRecords::position).unwrap_or((0, 0));
            if position != (self.root.page_count, self.root.stream_len) {
                return Err(malformed_error("page table", "does not cover the data stream"));
            }
        }
        Ok(())
    }
}

/// One pass of a content walk: the visitor's spans while they ascend. The
/// first span that starts before the last one ended is kept for the next
/// pass.
struct Pass<'v> {
    inner: &'v mut dyn ContentVisitor,
    carry: Option<SpanRequest>,
    last_end: u64,
    stopped: bool,
}

impl ContentVisitor for Pass<'_> {
    fn next_span(&mut self) -> Result<Option<SpanRequest>> {
        if self.stopped {
            return Ok(None);
        }
        let next = match self.carry.take() {
            Some(carried) => Some(carried),
            None => self.inner.next_span()?,
        };
        match next {
            Some(request) if request.1.start < self.last_end => {
                self.carry = Some(request);
                self.stopped = true;
                Ok(None)
            }
            Some(request) => {
                self.last_end = request.1.end();
                Ok(Some(request))
            }
            None => Ok(None),
        }
    }

    fn bytes(&mut self, token: usize, bytes: &[u8]) -> Result<()> {
        self.inner.bytes(token, bytes)
    }

    fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        self.inner.end(token, digest)
    }

    fn damaged(&mut self, token: usize, error: &Error) -> bool {
        self.inner.damaged(token, error)
    }

    fn page(&mut self, number: u64, error: Option<&Error>) {
        self.inner.page(number, error)
    }
}

/// Takes the next span from the visitor into the queue, and its hasher
/// into the spans to hash; an empty span is delivered (and hashed) at once.
fn pull_span(
    visitor: &mut dyn ContentVisitor,
    (queue, to_hash): (&mut VecDeque<Pending>, &mut VecDeque<HashedSpan>),
    done: &mut bool,
    last_end: &mut u64,
) -> Result<()> {
    match visitor.next_span()? {
        None => *done = true,
        Some((token, span, hasher)) => {
            if span.start < *last_end {
                return Err(malformed_error("index entry", "file contents overlap or are out of order"));
            }
            *last_end = span.end();
            if span.size == 0 {
                visitor.bytes(token, &[])?;
                visitor.end(token, hasher.finish_entry())?;
            } else {
                queue.push_back(Pending { token, span, written: 0 });
                to_hash.push_back(HashedSpan { token, start: span.start, size: span.size, hasher });
            }
        }
    }
    Ok(())
}

/// Hands an opened page's bytes to the spans it holds, in order, and ends
/// the spans it completes with their `digests` (the workers'); a failed
/// page damages every span it holds.
fn deliver(
    visitor: &mut dyn ContentVisitor,
    queue: &mut VecDeque<Pending>,
    number: u64,
    (start, end): (u64, u64),
    plain: Result<&[u8]>,
    digests: &[SpanDigest],
) -> Result<()> {
    let page = match plain {
        Ok(page) => page,
        Err(error) => {
            visitor.page(number, Some(&error));
            // Spans before this page completed at earlier pages, so those
            // it holds are the queue's front.
            while queue.front().is_some_and(|p| p.span.start < end) {
                let p = queue.pop_front().expect("front exists");
                if !visitor.damaged(p.token, &error) {
                    return Err(error);
                }
            }
            return Ok(());
        }
    };
    visitor.page(number, None);
    // Spans end in stream order, and the digests come in that order: one
    // pass over them, however many tiny files the page holds.
    let mut digests = digests.iter();
    while let Some(p) = queue.front_mut() {
        if p.span.start >= end {
            break;
        }
        let from = (p.span.start + p.written).max(start);
        let to = p.span.end().min(end);
        if from < to {
            visitor.bytes(p.token, &page[(from - start) as usize..(to - start) as usize])?;
            p.written += to - from;
        }
        if p.written < p.span.size {
            break;
        }
        let token = p.token;
        queue.pop_front();
        // The workers ended the same spans at the same page.
        let digest = digests.find(|(t, _)| *t == token).and_then(|(_, d)| *d);
        let digest = digest.ok_or_else(|| malformed_error("page table", "a file's hash was lost"))?;
        visitor.end(token, digest)?;
    }
    Ok(())
}

/// The walk against a reference model: the data stream as one byte vector,
/// where a span's bytes are a slice of it and a damaged page damages
/// exactly the spans that overlap it.
#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use proptest::collection::vec;
    use proptest::prelude::*;

    use sha2::Digest;

    use super::*;
    use crate::crypto::{KdfParams, Password};
    use crate::write::{ArchiveWriter, CreateOptions, Metadata};

    /// Hands out `spans` in order and records what each receives.
    struct Recorder {
        spans: Vec<Span>,
        next: usize,
        got: Vec<Vec<u8>>,
        ended: Vec<bool>,
        damaged: Vec<bool>,
        digests: Vec<Option<[u8; DIGEST_LEN]>>,
    }

    impl ContentVisitor for Recorder {
        fn next_span(&mut self) -> Result<Option<SpanRequest>> {
            let Some(&span) = self.spans.get(self.next) else { return Ok(None) };
            self.next += 1;
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
                spans.push(Span { start, size });
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
        let past = Span { start: stream.len() as u64 - 10, size: 20 };
        let mut visitor = Recorder::new(vec![past]);
        assert!(a.walk_content(&mut visitor, false).is_err());
        assert!(!visitor.ended[0]);
        // Spans out of stream order (later sessions' files) are read in
        // passes, not refused.
        let mut visitor = Recorder::new(vec![Span { start: 100, size: 10 }, Span { start: 50, size: 10 }]);
        a.walk_content(&mut visitor, false).unwrap();
        assert!(visitor.ended.iter().all(|&e| e), "both spans delivered");
    }
}
