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
//!
//! A chunked file (FORMAT.md §3.5c) is handed out as one span and walked
//! as a run of spans, one a chunk in list order: its list is read (and
//! held) when its turn comes, its SHA-256 carries on from chunk to chunk
//! on the workers, and a chunk that goes back begins a new pass like any
//! span that does. The visitor sees one file: its bytes in content
//! order, each chunk announced ([`ContentVisitor::chunk`]), one end.

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use super::{no_page, Archive};
use crate::error::{Error, Result};
use crate::format::{ChunkRef, Extent, PageRecord, DIGEST_LEN};
use crate::index::{read_unit_into, reread_unit};
use crate::pipeline::{HashedSpan, OpenedPage, PageOpener, PageToOpen, SpanDigest};
use crate::sparse::ContentHasher;
use crate::storage::ReadAt;

mod ahead;
mod records;

pub(crate) use ahead::ReadAhead;
use records::PageRecords;
#[cfg(test)]
pub(crate) mod chunked_tests;
#[cfg(test)]
mod tests;

/// One file's bytes in the data stream: `size` bytes from `start`, or,
/// for a chunked file (`chunks > 0`), `size` bytes in the chunks its list
/// at `start` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) chunks: u32,
}

impl Span {
    /// Bytes stored whole.
    pub(crate) fn whole(start: u64, size: u64) -> Span {
        Span { start, size, chunks: 0 }
    }

    /// The content `extent` names.
    pub(crate) fn of(extent: &Extent) -> Span {
        Span { start: extent.offset, size: extent.size, chunks: extent.chunks }
    }

    /// The extent a chunked span's list is read by.
    pub(crate) fn extent(&self) -> Extent {
        Extent { chunks: self.chunks, ..Extent::whole(self.start, self.size, false) }
    }

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
    /// The bytes of chunked file `token` that follow, up to the next call,
    /// are `chunk`'s (all of them, unless the file is damaged first).
    fn chunk(&mut self, _token: usize, _chunk: &ChunkRef) {}
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
    /// The chunk it is, of a chunked file.
    chunk: Option<ChunkRef>,
    /// Whether its file ends with it.
    last: bool,
}

/// A span as the engine walks it: a whole file, or one chunk of one.
pub(crate) struct Part {
    pub(crate) token: usize,
    pub(crate) span: Span,
    /// The file's hasher, with its first part.
    pub(crate) hasher: Option<ContentHasher>,
    /// Whether the file ends with this part.
    pub(crate) last: bool,
    pub(crate) chunk: Option<ChunkRef>,
}

/// The chunked file whose chunks are being handed out, with its list.
struct Chunked {
    token: usize,
    chunks: Vec<ChunkRef>,
    next: usize,
    hasher: Option<ContentHasher>,
}

/// Reads a chunked span's list: every check of FORMAT.md §3.5c.
pub(crate) type ReadList<'a> = &'a dyn Fn(&Span) -> Result<Vec<ChunkRef>>;

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
        // The page holding the last list read: the lists of files chunked
        // one after the other share pages, and the page cache is a
        // reader's by lookup (filling it here cost a walk the cache's
        // size in memory).
        let list_page: RefCell<Option<(u64, Arc<Vec<u8>>)>> = RefCell::new(None);
        let lists = |span: &Span| -> Result<Vec<ChunkRef>> {
            let mut page = |number: u64, record: &PageRecord| -> Result<Arc<Vec<u8>>> {
                if let Some((held, plain)) = &*list_page.borrow() {
                    if *held == number {
                        return Ok(Arc::clone(plain));
                    }
                }
                let plain = self.page_uncached(number, record)?;
                *list_page.borrow_mut() = Some((number, Arc::clone(&plain)));
                Ok(plain)
            };
            Ok(self.chunk_list_through(&span.extent(), &mut page)?.expect("a chunked span"))
        };
        let mut pass = Pass::new(visitor, &lists);
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
            let reread = |number, record: &PageRecord| self.reread_page(number, record);
            let Some(OpenedPage { number, start, end, plain, digests }) = pool.pop(&reread) else { break };
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
        let sealed = read_unit_into(&self.src, record.offset, record.unit_len(), what, pool.buffer());
        let keys = Arc::clone(self.keys_for(number)?);
        let archive_id = self.archive_id;
        pool.submit(PageToOpen { number, start, record, keys, archive_id, sealed, spans });
        Ok(())
    }
}

impl<S: ReadAt> Archive<S> {
    /// Data page `number`'s sealed bytes again after it failed to open,
    /// when its source rebuilt some from recovery records
    /// ([`reread_unit`]).
    pub(crate) fn reread_page(&self, number: u64, record: &PageRecord) -> Option<Result<Vec<u8>>> {
        reread_unit(&self.src, record.offset, record.unit_len(), || format!("page {number}"))
    }
}

/// One pass of a content walk: the visitor's spans while they ascend,
/// a chunked file's expanded into its chunks. The first part that starts
/// before the last one ended is kept for the next pass; a visitor that
/// pauses also gets one.
pub(crate) struct Pass<'v> {
    inner: &'v mut dyn ContentVisitor,
    lists: ReadList<'v>,
    chunked: Option<Chunked>,
    /// Chunked files that a failed page damaged while parts of them were
    /// still to come: those parts are taken and dropped.
    damaged: HashSet<usize>,
    carry: Option<Part>,
    last_end: u64,
    stopped: bool,
    /// The visitor paused: another pass follows.
    resume: bool,
}

impl<'v> Pass<'v> {
    pub(crate) fn new(inner: &'v mut dyn ContentVisitor, lists: ReadList<'v>) -> Pass<'v> {
        Pass {
            inner,
            lists,
            chunked: None,
            damaged: HashSet::new(),
            carry: None,
            last_end: 0,
            stopped: false,
            resume: false,
        }
    }

    /// Hands out no more spans in this pass, and has another one follow
    /// from the next span.
    fn end_here(&mut self) {
        self.stopped = true;
        self.resume = true;
    }

    /// The next part of this pass.
    fn next_part(&mut self) -> Result<Option<Part>> {
        if self.stopped {
            return Ok(None);
        }
        let next = match self.carry.take() {
            Some(carried) => Some(carried),
            None => self.pull()?,
        };
        match next {
            Some(part) if part.span.start < self.last_end => {
                self.carry = Some(part);
                self.stopped = true;
                Ok(None)
            }
            Some(part) => {
                self.last_end = part.span.end();
                Ok(Some(part))
            }
            None => {
                if self.inner.paused() {
                    self.end_here();
                }
                Ok(None)
            }
        }
    }

    /// The next part in content order: the current chunked file's next
    /// chunk, or the visitor's next span (a chunked one's first chunk).
    pub(crate) fn pull(&mut self) -> Result<Option<Part>> {
        loop {
            if let Some(file) = self.chunked.as_mut() {
                let chunk = file.chunks[file.next];
                file.next += 1;
                let (token, hasher, last) = (file.token, file.hasher.take(), file.next == file.chunks.len());
                if last {
                    self.chunked = None;
                }
                let span = Span::whole(chunk.offset, chunk.len.into());
                return Ok(Some(Part { token, span, hasher, last, chunk: Some(chunk) }));
            }
            let Some((token, span, hasher)) = self.inner.next_span()? else { return Ok(None) };
            if span.chunks == 0 {
                return Ok(Some(Part { token, span, hasher: Some(hasher), last: true, chunk: None }));
            }
            match (self.lists)(&span) {
                Ok(chunks) => self.chunked = Some(Chunked { token, chunks, next: 0, hasher: Some(hasher) }),
                // A list in a page that fails loses its file, as a chunk's
                // page does; a list that breaks the format's rules is the
                // archive's error.
                Err(error) if is_page_damage(&error) => {
                    if !self.inner.damaged(token, &error) {
                        return Err(error);
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The next bytes of part `token`, dropped when its file is damaged.
    pub(crate) fn bytes(&mut self, token: usize, chunk: Option<&ChunkRef>, bytes: &[u8]) -> Result<()> {
        if self.damaged.contains(&token) {
            return Ok(());
        }
        if let Some(chunk) = chunk {
            self.inner.chunk(token, chunk);
        }
        self.inner.bytes(token, bytes)
    }

    /// Whether the file ending with part `token` was damaged before (and,
    /// since it ends, forgets it).
    fn was_damaged(&mut self, token: usize) -> bool {
        self.damaged.remove(&token)
    }

    /// File `token`'s last part was delivered and its content hashed to
    /// `digest`: the visitor hears of it unless the file was damaged.
    pub(crate) fn end(&mut self, token: usize, digest: [u8; DIGEST_LEN]) -> Result<()> {
        match self.was_damaged(token) {
            true => Ok(()),
            false => self.inner.end(token, digest),
        }
    }

    /// Page `number` was opened, or failed with `error`.
    pub(crate) fn page(&mut self, number: u64, error: Option<&Error>) {
        self.inner.page(number, error)
    }

    /// Whether the visitor paused (see [`ContentVisitor::paused`]).
    pub(crate) fn paused(&self) -> bool {
        self.inner.paused()
    }

    /// A page holding part `token` failed: the visitor hears of it once a
    /// file, however many of its chunks the page held.
    pub(crate) fn damaged(&mut self, token: usize, last: bool, error: &Error) -> bool {
        if self.damaged.contains(&token) {
            if last {
                self.damaged.remove(&token);
            }
            return true;
        }
        if !last {
            self.damaged.insert(token);
        }
        self.inner.damaged(token, error)
    }
}

/// Whether `error`, met reading a page, is the page's damage (one file's
/// loss, when a walk goes on) rather than a rule the archive breaks.
pub(crate) fn is_page_damage(error: &Error) -> bool {
    matches!(error, Error::DamagedPage { .. } | Error::Tampered { .. } | Error::StoredForm { .. })
}

/// Takes the next part from the pass into the queue, and its hasher
/// into the spans to hash; an empty span is delivered (and hashed) at once.
fn pull_span(
    visitor: &mut Pass<'_>,
    (queue, to_hash): (&mut VecDeque<Pending>, &mut VecDeque<HashedSpan>),
    done: &mut bool,
    last_end: &mut u64,
) -> Result<()> {
    match visitor.next_part()? {
        None => *done = true,
        Some(Part { token, span, hasher, last, chunk }) => {
            if span.start < *last_end {
                return Err(Error::malformed("index entry", "file contents overlap or are out of order"));
            }
            *last_end = span.end();
            if span.size == 0 {
                // Only a whole file is empty: a chunk has at least a byte.
                let hasher = hasher.expect("a whole file's part has its hasher");
                visitor.inner.bytes(token, &[])?;
                visitor.inner.end(token, hasher.finish_entry())?;
            } else {
                queue.push_back(Pending { token, span, written: 0, chunk, last });
                to_hash.push_back(HashedSpan { token, start: span.start, size: span.size, hasher, last });
            }
        }
    }
    Ok(())
}

/// Hands an opened page's bytes to the spans it holds, in order, and ends
/// the files it completes with their `digests` (the workers'); a failed
/// page damages every span it holds.
fn deliver(
    visitor: &mut Pass<'_>,
    queue: &mut VecDeque<Pending>,
    number: u64,
    (start, end): (u64, u64),
    plain: Result<&[u8]>,
    digests: &[SpanDigest],
) -> Result<()> {
    let page = match plain {
        Ok(page) => page,
        Err(error) => {
            visitor.inner.page(number, Some(&error));
            // Spans before this page completed at earlier pages, so those
            // it holds are the queue's front.
            while queue.front().is_some_and(|p| p.span.start < end) {
                let p = queue.pop_front().expect("front exists");
                if !visitor.damaged(p.token, p.last, &error) {
                    return Err(error);
                }
            }
            return Ok(());
        }
    };
    visitor.inner.page(number, None);
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
            let chunk = p.chunk.filter(|_| p.written == 0);
            p.written += to - from;
            let token = p.token;
            visitor.bytes(token, chunk.as_ref(), &page[(from - start) as usize..(to - start) as usize])?;
        }
        let p = queue.front().expect("still there");
        if p.written < p.span.size {
            break;
        }
        let (token, last) = (p.token, p.last);
        queue.pop_front();
        if !last || visitor.was_damaged(token) {
            continue;
        }
        // The workers ended the same files at the same page.
        let digest = digests.find(|(t, _)| *t == token).and_then(|(_, d)| *d);
        let digest = digest.ok_or_else(|| Error::malformed("page table", "a file's hash was lost"))?;
        visitor.inner.end(token, digest)?;
    }
    Ok(())
}
