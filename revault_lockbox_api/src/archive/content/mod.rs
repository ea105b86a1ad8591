//! Walking file contents through the data pages in ordered passes: the
//! shared engine of extraction, verification and export.
//!
//! The visitor hands out file spans as it walks the entries, within a
//! pass in ascending data-stream order (a span that goes back begins the
//! next pass, see [`Archive::walk_content`]); the engine reads the pages
//! those spans need (every page, for verification) in order, opens them
//! on worker threads with bounded read-ahead, and delivers each span's
//! bytes and, at its end, the digest of its content, hashed on the
//! workers. Memory is the pages in flight and the spans they cover,
//! whatever the archive's size.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{no_page, Archive};
use crate::error::{Error, Result};
use crate::format::{PageRecord, DIGEST_LEN};
use crate::index::read_sealed_into;
use crate::pipeline::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

mod ahead;
mod records;

pub(crate) use ahead::ReadAhead;
use records::PageRecords;
#[cfg(test)]
mod tests;

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
    /// The next span; `None` when there are no more (or, when
    /// [`paused`](Self::paused), none for now). One that starts before the
    /// end of the one before begins a new pass.
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
    /// Whether taking the bytes is work of its own (writing files or a
    /// stream), done on the walk's thread while the workers open pages: the
    /// walk then starts a spare page opener ([`PageOpener::new`]).
    fn writes_bytes_out(&self) -> bool {
        false
    }
    /// Whether the last `None` from [`next_span`](Self::next_span) meant
    /// "not now" rather than "no more": the visitor holds as much as it
    /// will while spans are in flight. The walk delivers what it handed
    /// out, then asks again in a new pass.
    fn paused(&self) -> bool {
        false
    }
}

impl<S: ReadAt> Archive<S> {
    /// Reads and checks the whole index without any data page: every
    /// entries leaf (the walk's checks) and every pages leaf (following on,
    /// covering the root's counts). What `extract --keep-going` and
    /// `repair` run to choose between the index and a salvage scan.
    pub fn check_index(&self) -> Result<()> {
        for entry in self.entries()? {
            entry?;
        }
        let mut pages = self.page_records_from(0)?;
        while pages.next()?.is_some() {}
        if pages.position().unwrap_or((0, 0)) != (self.root.page_count, self.root.stream_len) {
            return Err(Error::malformed("page table", "does not cover the data stream"));
        }
        Ok(())
    }
}

/// Where a content walk reads from: an archive through its index, or
/// what a salvage scan proved (`salvage/`). Extraction takes either.
pub(crate) trait ContentSource {
    /// Delivers the bytes of every span `visitor` hands out (see
    /// [`Archive::walk_content`]).
    fn walk_content(&self, visitor: &mut dyn ContentVisitor, every_page: bool) -> Result<()>;
}

impl<S: ReadAt> ContentSource for Archive<S> {
    fn walk_content(&self, visitor: &mut dyn ContentVisitor, every_page: bool) -> Result<()> {
        Archive::walk_content(self, visitor, every_page)
    }
}

/// A span waiting for its bytes.
struct Pending {
    token: usize,
    span: Span,
    written: u64,
}

/// Spans handed out and waiting for their pages: a bound on the walk's
/// memory (and the visitor's) that depends neither on how small the files
/// are nor on how many there are. Past it no further page is read ahead,
/// and a page holding more spans than that (a 4 MiB page of 100-byte
/// files holds 40,000) ends the pass: the next pass reads it again for
/// the rest of its spans.
const MAX_WAITING_SPANS: usize = 16 << 10;

impl<S: ReadAt> Archive<S> {
    /// Delivers the bytes of every span `visitor` hands out. With
    /// `every_page`, also opens the pages no span needs (verification) and
    /// checks that the page table covers the whole data stream.
    ///
    /// Spans come in index order; after appends, files of a later session
    /// sit later in the data stream than paths around them. The walk runs
    /// in passes, each over ascending spans: a span that starts before the
    /// previous one ended begins the next pass (its pages are read again),
    /// and so does the span after a visitor's pause
    /// ([`ContentVisitor::paused`]). The passes share one set of page
    /// workers and their buffers: memory stays what one pass takes, however
    /// many passes there are.
    pub(crate) fn walk_content(&self, visitor: &mut dyn ContentVisitor, every_page: bool) -> Result<()> {
        let spare = visitor.writes_bytes_out();
        let mut pool = PageOpener::new(self.tuning.threads, self.tuning.pages_in_flight, spare)?;
        let mut pass = Pass { inner: visitor, carry: None, last_end: 0, stopped: false, resume: false };
        let mut first = true;
        loop {
            self.walk_pass(&mut pass, &mut pool, every_page && first)?;
            first = false;
            if pass.carry.is_none() && !std::mem::take(&mut pass.resume) {
                return Ok(());
            }
            pass.stopped = false;
            pass.last_end = 0;
        }
    }

    /// One pass, ending with every page it submitted to `pool` delivered.
    fn walk_pass(&self, visitor: &mut Pass<'_>, pool: &mut PageOpener, every_page: bool) -> Result<()> {
        let mut queue: VecDeque<Pending> = VecDeque::new();
        // Spans pulled and not yet handed to the workers with a page.
        let mut to_hash: VecDeque<HashedSpan> = VecDeque::new();
        let mut spans_done = false;
        let mut pages: Option<PageRecords<'_, S>> = None;
        let mut pages_done = false;
        // The last span the visitor gave, for the order check.
        let mut last_end = 0u64;
        loop {
            // Pages in flight are bounded, and so are the spans waiting for
            // them: a page of tiny files holds thousands.
            let room = |pool: &PageOpener, queue: &VecDeque<Pending>| {
                pool.in_flight() == 0 || (pool.has_room() && queue.len() < MAX_WAITING_SPANS)
            };
            while !pages_done && room(pool, &queue) {
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
                // Know every span that starts before this page ends, or as
                // many as may wait: the pass then ends with this page. (A
                // pass over every page reads them all anyway: verification
                // keeps a page's spans instead of reading pages again.)
                while !spans_done && queue.back().is_none_or(|p| p.span.start < end) {
                    if queue.len() >= MAX_WAITING_SPANS && !every_page {
                        visitor.end_here();
                    }
                    pull_span(visitor, (&mut queue, &mut to_hash), &mut spans_done, &mut last_end)?;
                }
                let wanted = every_page || queue.iter().any(|p| p.span.start < end && p.span.end() > start);
                if !wanted {
                    if spans_done && queue.iter().all(|p| p.span.end() <= start) {
                        pages_done = true;
                    }
                    continue;
                }
                let mut spans = pool.spans();
                while to_hash.front().is_some_and(|s| s.start < end) {
                    spans.extend(to_hash.pop_front());
                }
                self.submit_page(pool, (number, record, start), spans)?;
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
                return Err(Error::malformed("page table", "does not cover the data stream"));
            }
        }
        Ok(())
    }
}

impl<S: ReadAt> Archive<S> {
    /// Reads data page `number`'s sealed bytes (or why they could not be
    /// read) and gives them to the workers, with the hashed spans that
    /// start in it: the one way a page reaches them, for a walk and for a
    /// file read ahead.
    fn submit_page(
        &self,
        pool: &mut PageOpener,
        (number, record, start): (u64, PageRecord, u64),
        spans: Vec<HashedSpan>,
    ) -> Result<()> {
        let what = || format!("page {number}");
        let sealed = read_sealed_into(&self.src, record.offset, record.unit_len(), what, pool.buffer());
        let keys = Arc::clone(self.keys_for(number)?);
        let archive_id = self.archive_id;
        pool.submit(PageToOpen { number, start, record, keys, archive_id, sealed, spans });
        Ok(())
    }
}

/// One pass of a content walk: the visitor's spans while they ascend. The
/// first span that starts before the last one ended is kept for the next
/// pass; a visitor that pauses also gets one.
struct Pass<'v> {
    inner: &'v mut dyn ContentVisitor,
    carry: Option<SpanRequest>,
    last_end: u64,
    stopped: bool,
    /// The visitor paused: another pass follows.
    resume: bool,
}

impl Pass<'_> {
    /// Hands out no more spans in this pass, and has another one follow
    /// from the next span.
    fn end_here(&mut self) {
        self.stopped = true;
        self.resume = true;
    }
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
            None => {
                if self.inner.paused() {
                    self.end_here();
                }
                Ok(None)
            }
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

    fn writes_bytes_out(&self) -> bool {
        self.inner.writes_bytes_out()
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
                return Err(Error::malformed("index entry", "file contents overlap or are out of order"));
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
        let digest = digest.ok_or_else(|| Error::malformed("page table", "a file's hash was lost"))?;
        visitor.end(token, digest)?;
    }
    Ok(())
}
