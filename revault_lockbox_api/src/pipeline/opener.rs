//! The reader's page pipeline: sealed data pages are opened (authenticated
//! and decompressed) on worker threads and come back in page order. The
//! workers also hash the files the pages hold, in page order
//! ([`InTurn`]), so that the thread writing the files does not. In the
//! steady state nothing is allocated per page: the buffers a page is read
//! into and decompressed into are recycled, and jobs travel by value
//! ([`OrderedWorkers`]). A page that fails to open is opened once more
//! by the thread taking the pages ([`PageOpener::pop`]), through whatever
//! its source rebuilt from recovery records, before its files are hashed.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::ordered::OrderedWorkers;
use super::turns::InTurn;
use crate::crypto::open_data_page_into;
use crate::crypto::SessionKeys;
use crate::error::{Error, Result};
use crate::format::{PageRecord, ARCHIVE_ID_LEN, DIGEST_LEN};
use crate::sparse::ContentHasher;

/// A file's bytes in the data stream, or one chunk of a chunked file's,
/// whose content hash the workers compute as its pages open.
pub(crate) struct HashedSpan {
    pub(crate) token: usize,
    pub(crate) start: u64,
    pub(crate) size: u64,
    /// The file's hasher, with its first span; a chunk after the first
    /// carries on with the hasher its file's span before it left.
    pub(crate) hasher: Option<ContentHasher>,
    /// Whether the file's content ends with this span: its digest is made.
    pub(crate) last: bool,
}

impl HashedSpan {
    /// The whole content of a file stored in one piece.
    pub(crate) fn whole(token: usize, start: u64, size: u64, hasher: ContentHasher) -> HashedSpan {
        HashedSpan { token, start, size, hasher: Some(hasher), last: true }
    }
}

/// The workers' hashing state, touched only in turn: the spans started and
/// not ended, oldest first, and the hasher a chunked file's span ended
/// with, for its next. One is enough: a file's chunks come before the
/// next file's, in stream order within a pass and in passes one after
/// another.
#[derive(Default)]
struct Hashing {
    open: VecDeque<HashedSpan>,
    carried: Option<(usize, ContentHasher)>,
}

/// A span's digest, or `None` when a page holding it failed.
pub(crate) type SpanDigest = (usize, Option<[u8; DIGEST_LEN]>);

/// A data page to open: where it sits in the data stream, its record, the
/// keys of the session that wrote it, its sealed bytes (or why they could
/// not be read), and the hashed spans that start in it.
pub(crate) struct PageToOpen {
    pub(crate) number: u64,
    pub(crate) start: u64,
    pub(crate) record: PageRecord,
    pub(crate) keys: Arc<SessionKeys>,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) sealed: Result<Vec<u8>>,
    /// Spans starting before this page ends not given with an earlier page,
    /// in stream order, from [`PageOpener::spans`].
    pub(crate) spans: Vec<HashedSpan>,
}

/// A page back from the workers: its plaintext, or why it failed.
pub(crate) struct OpenedPage {
    pub(crate) number: u64,
    /// The page's first and end data-stream offsets.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) plain: Result<Vec<u8>>,
    /// The hashed spans that end in this page (or that it damaged), in
    /// stream order.
    pub(crate) digests: Vec<SpanDigest>,
}

/// What a worker takes: the page, a spare buffer, its turn, and an empty
/// list for the digests.
type Job = (PageToOpen, Vec<u8>, u64, Vec<SpanDigest>);
/// What a worker gives back: the page, its spare buffer, and the emptied
/// span list.
type Done = (Opened, Vec<u8>, Vec<HashedSpan>);

/// A worker's page: opened (or failed for good, its files hashed), or
/// failed to open with its hashing turn left to [`PageOpener::pop`],
/// which may open it again from bytes a recovery view rebuilt.
enum Opened {
    Page(OpenedPage),
    Failed { page: PageToOpen, ticket: u64, digests: Vec<SpanDigest> },
}

/// Reads a page that failed to open again after its source rebuilt bytes
/// under it ([`crate::index::reread_unit`]): `None` when nothing was
/// rebuilt, and the failure stands.
pub(crate) type Reread<'a> = &'a dyn Fn(u64, &PageRecord) -> Option<Result<Vec<u8>>>;

/// Plaintext bytes a page in flight counts as at least: `capacity` pages
/// of up to this size are in flight at once, larger ones fewer, so that
/// memory stays near `capacity` MiB whatever the archive's page sizes.
const PAGE_IN_FLIGHT_BYTES: u64 = 1 << 20;

/// Opens data pages on worker threads ([`workers_for`]), at most
/// `capacity` in flight, and no more plaintext than `capacity` pages of
/// [`PAGE_IN_FLIGHT_BYTES`] unless only one is.
pub(crate) struct PageOpener {
    workers: OrderedWorkers<Job, Done>,
    /// The workers' hashing turns, for a failed page's taken in [`Self::pop`].
    hashing: Arc<InTurn<Hashing>>,
    /// Plaintext bytes of the pages in flight, each counted as at least
    /// [`PAGE_IN_FLIGHT_BYTES`], and their bound.
    bytes_in_flight: u64,
    byte_budget: u64,
    next_ticket: u64,
    /// Cleared buffers from pages already delivered.
    free: Vec<Vec<u8>>,
    free_spans: Vec<Vec<HashedSpan>>,
    free_digests: Vec<Vec<SpanDigest>>,
    /// Set when the pages in flight are no longer wanted: the workers
    /// hand back the pages they have not started unopened.
    cancelled: Arc<AtomicBool>,
}

impl PageOpener {
    /// Starts the workers for `threads` cores, with a `spare` one when the
    /// thread taking the pages has work of its own for each ([`workers_for`]).
    pub(crate) fn new(threads: usize, capacity: usize, spare: bool) -> Result<PageOpener> {
        // The spans being hashed, oldest first; only the worker whose turn
        // it is touches them.
        let hashing = Arc::new(InTurn::new(Hashing::default()));
        let cancelled = Arc::new(AtomicBool::new(false));
        let (skip, turns) = (Arc::clone(&cancelled), Arc::clone(&hashing));
        let workers =
            OrderedWorkers::new("lockbox-opener", workers_for(threads, spare), capacity, move |job| {
                open(job, &turns, &skip)
            })?;
        Ok(PageOpener {
            workers,
            hashing,
            bytes_in_flight: 0,
            byte_budget: capacity as u64 * PAGE_IN_FLIGHT_BYTES,
            next_ticket: 0,
            free: Vec::new(),
            free_spans: Vec::new(),
            free_digests: Vec::new(),
            cancelled,
        })
    }

    /// A buffer to read a sealed page into: a recycled one (of any
    /// length) when there is one.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// An empty list for [`PageToOpen::spans`]: a recycled one when there
    /// is one.
    pub(crate) fn spans(&mut self) -> Vec<HashedSpan> {
        self.free_spans.pop().unwrap_or_default()
    }

    /// Gives back a buffer (a delivered page's) for later pages. It keeps
    /// its length: the next read or decryption into it overwrites every
    /// byte it uses, so a length it already had costs no zeroing.
    pub(crate) fn recycle(&mut self, buffer: Vec<u8>) {
        self.free.push(buffer);
    }

    /// Gives back a delivered page's digest list.
    pub(crate) fn recycle_digests(&mut self, mut digests: Vec<SpanDigest>) {
        digests.clear();
        self.free_digests.push(digests);
    }

    /// Pages submitted and not yet popped.
    pub(crate) fn in_flight(&self) -> usize {
        self.workers.in_flight()
    }

    /// Whether another page fits in flight.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight() == 0 || (self.workers.has_room() && self.bytes_in_flight < self.byte_budget)
    }

    /// Queues a page; blocks while every worker is busy. The caller keeps
    /// fewer than `capacity` pages in flight.
    pub(crate) fn submit(&mut self, page: PageToOpen) {
        let spare = self.buffer();
        let digests = self.free_digests.pop().unwrap_or_default();
        self.bytes_in_flight += counted_bytes(page.record.plain_len.into());
        self.workers.submit((page, spare, self.next_ticket, digests));
        self.next_ticket += 1;
    }

    /// The oldest page submitted, opened, waiting for it; `None` when no
    /// page is in flight. A page that failed to open is read again with
    /// `reread` and opened here, then its files hashed: the workers behind
    /// it wait for that turn.
    pub(crate) fn pop(&mut self, reread: Reread<'_>) -> Option<OpenedPage> {
        let (opened, spare, spans) = self.workers.pop()?;
        self.free_spans.push(spans);
        let page = match opened {
            Opened::Page(page) => {
                self.recycle(spare);
                page
            }
            Opened::Failed { page, ticket, digests } => {
                let PageToOpen { number, start, record, keys, archive_id, sealed, mut spans } = page;
                let failed = sealed.expect_err("a failed page holds why");
                let opened = panic::catch_unwind(AssertUnwindSafe(|| match reread(number, &record) {
                    Some(Ok(sealed)) => {
                        open_data_page_into(&keys, &archive_id, number, &record, sealed, spare)
                    }
                    Some(Err(e)) => (Err(e), spare),
                    None => (Err(failed), spare),
                }));
                let range = (start, start + u64::from(record.plain_len));
                let (page, spare) =
                    hash_in_turn(&self.hashing, (ticket, number), &mut spans, range, opened, digests);
                self.recycle(spare);
                self.free_spans.push(spans);
                page
            }
        };
        self.bytes_in_flight -= counted_bytes(page.end - page.start);
        Some(page)
    }
}

impl Drop for PageOpener {
    /// A reader that stops in the middle of a file (a seek, an error,
    /// `cat | head`) waits for the workers to finish: only for the pages
    /// they have started, not for every page in flight. A failed page's
    /// hashing turn is taken here, or the workers behind it would wait
    /// for it forever.
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
        while let Some(done) = self.workers.pop_settled() {
            if let Some((Opened::Failed { ticket, .. }, ..)) = done {
                self.hashing.take_turn(ticket, |_| ());
            }
        }
    }
}

/// Workers for `threads` cores. A worker that has opened its page and
/// waits for its turn at the file hashes holds no core. When the thread
/// taking the pages writes them out (extraction, export), one worker
/// more than `threads` opens the next page meanwhile, so that the cores
/// stay busy; when it only reads them (`verify`, `cat` of one file),
/// the spare takes cores from the worker whose turn it is, and reading
/// is slower with it (docs/BENCHMARKS.md, "The spare opener only where
/// files are written"). One worker takes every turn in order and never
/// waits.
fn workers_for(threads: usize, spare: bool) -> usize {
    if spare && threads >= 2 {
        threads + 1
    } else {
        threads.max(1)
    }
}

/// What a page of `plain_len` bytes counts for against the byte budget.
fn counted_bytes(plain_len: u64) -> u64 {
    plain_len.max(PAGE_IN_FLIGHT_BYTES)
}

/// A worker's job: opens the page into whichever of its two buffers the
/// codec needs (returning the other), then, in its turn, hashes the spans'
/// bytes the page holds. Once the opener is `cancelled` the page is handed
/// back unopened, and its spans unhashed.
fn open((page, spare, ticket, digests): Job, hashing: &InTurn<Hashing>, cancelled: &AtomicBool) -> Done {
    let PageToOpen { number, start, record, keys, archive_id, sealed, mut spans } = page;
    let (read, skip) = (sealed.is_ok(), cancelled.load(Ordering::Relaxed));
    let opened = panic::catch_unwind(AssertUnwindSafe(|| match sealed {
        _ if skip => (Err(not_wanted()), spare),
        Ok(sealed) => open_data_page_into(&keys, &archive_id, number, &record, sealed, spare),
        Err(e) => (Err(e), spare),
    }));
    let opened = match opened {
        // Read, and failed its check: [`PageOpener::pop`] takes it from
        // here (its turn included), with what a recovery view rebuilds.
        Ok((Err(failed), spare)) if read && !skip => {
            let page = PageToOpen { number, start, record, keys, archive_id, sealed: Err(failed), spans };
            return (Opened::Failed { page, ticket, digests }, spare, Vec::new());
        }
        opened => opened,
    };
    let range = (start, start + u64::from(record.plain_len));
    let (page, spare) = hash_in_turn(hashing, (ticket, number), &mut spans, range, opened, digests);
    (Opened::Page(page), spare, spans)
}

/// A page opened (or not: `opened` is the opening's outcome, a panic
/// included) hashed in its turn `ticket` (page `number`): `spans` join the open ones and
/// the page's bytes feed them. The turn is taken whatever happens, or
/// later pages would wait for it; a panic goes on after it.
fn hash_in_turn(
    hashing: &InTurn<Hashing>,
    (ticket, number): (u64, u64),
    spans: &mut Vec<HashedSpan>,
    (start, end): (u64, u64),
    opened: std::thread::Result<(Result<Vec<u8>>, Vec<u8>)>,
    mut digests: Vec<SpanDigest>,
) -> (OpenedPage, Vec<u8>) {
    let plain = opened.as_ref().ok().and_then(|(plain, _)| plain.as_deref().ok());
    hashing.take_turn(ticket, |state| {
        state.open.extend(spans.drain(..));
        hash_page(state, (start, end), plain, &mut digests);
    });
    let (plain, spare) = opened.unwrap_or_else(|payload| panic::resume_unwind(payload));
    (OpenedPage { number, start, end, plain, digests }, spare)
}

/// What a page handed back unopened holds instead of its plaintext.
fn not_wanted() -> Error {
    Error::Stream { action: "opening a page", source: std::io::ErrorKind::Interrupted.into() }
}

/// Feeds the spans the bytes of the page at stream offsets `start..end`
/// (`None`: the page failed, and so do the spans it holds), and lists
/// the files whose last span ends in it. A file whose earlier span failed
/// has no hasher left: its last span's digest is `None` too.
fn hash_page(
    state: &mut Hashing,
    (start, end): (u64, u64),
    plain: Option<&[u8]>,
    digests: &mut Vec<SpanDigest>,
) {
    let Hashing { open, carried } = state;
    while let Some(span) = open.front_mut() {
        if span.start >= end {
            break;
        }
        if span.hasher.is_none() && carried.as_ref().is_some_and(|(token, _)| *token == span.token) {
            span.hasher = carried.take().map(|(_, hasher)| hasher);
        }
        let Some(page) = plain else {
            let span = open.pop_front().expect("front exists");
            if span.last {
                digests.push((span.token, None));
            }
            continue;
        };
        let span_end = span.start + span.size;
        let (from, to) = (span.start.max(start), span_end.min(end));
        if let Some(hasher) = span.hasher.as_mut().filter(|_| from < to) {
            hasher.update(&page[(from - start) as usize..(to - start) as usize]);
        }
        if span_end > end {
            break;
        }
        let span = open.pop_front().expect("front exists");
        match (span.last, span.hasher) {
            (true, hasher) => digests.push((span.token, hasher.map(ContentHasher::finish_entry))),
            (false, Some(hasher)) => *carried = Some((span.token, hasher)),
            (false, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{seal_data_page, AeadBackend};
    use crate::format::{Codec, HASH_LEN};

    /// A page that could not be read: the worker hands it back at once.
    fn unreadable(number: u64, plain_len: u32) -> PageToOpen {
        PageToOpen {
            number,
            start: number * u64::from(plain_len),
            record: PageRecord {
                offset: 0,
                stored_len: 16,
                plain_len,
                codec: Codec::Zstd,
                hash: [0; HASH_LEN],
            },
            keys: Arc::new(SessionKeys::from_raw_key(&[1; 32], AeadBackend::detect())),
            archive_id: [0; ARCHIVE_ID_LEN],
            sealed: Err(Error::DamagedPage { number }),
            spans: Vec::new(),
        }
    }

    /// How many pages of `plain_len` bytes go in flight before there is
    /// no room, with room for `capacity` pages.
    fn pages_admitted(capacity: usize, plain_len: u32) -> usize {
        let mut pool = PageOpener::new(1, capacity, false).unwrap();
        let mut admitted = 0;
        while pool.has_room() {
            pool.submit(unreadable(admitted as u64, plain_len));
            admitted += 1;
        }
        while let Some(page) = pool.pop(&|_, _| None) {
            assert!(page.plain.is_err());
        }
        assert!(pool.has_room());
        admitted
    }

    /// Page 5 of a session, sealed, with its record and keys.
    fn sealed_page(plain: &[u8]) -> PageToOpen {
        let keys = Arc::new(SessionKeys::from_raw_key(&[9; 32], AeadBackend::detect()));
        let archive_id = [4; ARCHIVE_ID_LEN];
        let (sealed, _) = seal_data_page(&keys, &archive_id, 5, plain.to_vec(), Vec::new(), 3);
        let record = sealed.page_record(0);
        let framed = [&sealed.frame[..], &sealed.bytes].concat();
        PageToOpen { number: 5, start: 0, record, keys, archive_id, sealed: Ok(framed), spans: Vec::new() }
    }

    #[test]
    fn a_cancelled_opener_hands_pages_back_unopened_and_unhashed() {
        let plain = b"lockbox ".repeat(4096);
        let mut pool = PageOpener::new(2, 4, true).unwrap();
        let span = || HashedSpan::whole(7, 0, plain.len() as u64, ContentHasher::new(None));
        let mut page = sealed_page(&plain);
        page.spans.push(span());
        pool.submit(page);
        let opened = pool.pop(&|_, _| None).unwrap();
        assert_eq!(opened.plain.unwrap(), plain);
        assert!(matches!(opened.digests[..], [(7, Some(_))]));

        pool.cancelled.store(true, Ordering::Relaxed);
        let mut page = sealed_page(&plain);
        page.spans.push(span());
        pool.submit(page);
        let skipped = pool.pop(&|_, _| None).unwrap();
        match skipped.plain {
            Err(Error::Stream { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::Interrupted),
            other => panic!("a page opened after the opener was cancelled: {:?}", other.map(|p| p.len())),
        }
        assert!(matches!(skipped.digests[..], [(7, None)]));
    }

    /// `page` with its sealed bytes changed in one place: it fails to open.
    fn damaged(mut page: PageToOpen) -> PageToOpen {
        if let Ok(sealed) = page.sealed.as_mut() {
            let last = sealed.len() - 1;
            sealed[last] ^= 1;
        }
        page
    }

    #[test]
    fn a_page_that_fails_is_opened_again_from_what_reread_gives_and_its_files_hashed() {
        let plain = b"recovered ".repeat(5000);
        let good = sealed_page(&plain).sealed.unwrap();
        let whole = || HashedSpan::whole(3, 0, plain.len() as u64, ContentHasher::new(None));
        let mut pool = PageOpener::new(2, 4, false).unwrap();
        for (reread, expect_plain) in [(Some(good.clone()), true), (None, false)] {
            let mut page = damaged(sealed_page(&plain));
            page.spans.push(whole());
            pool.submit(page);
            // A page behind it: its worker waits for the failed page's turn.
            let mut next = sealed_page(&plain);
            next.start = plain.len() as u64;
            next.spans.push(HashedSpan::whole(4, next.start, plain.len() as u64, ContentHasher::new(None)));
            pool.submit(next);
            let asked = std::cell::Cell::new(0);
            let again = |number: u64, _: &PageRecord| {
                assert_eq!(number, 5);
                asked.set(asked.get() + 1);
                reread.clone().map(Ok)
            };
            let opened = pool.pop(&again).unwrap();
            assert_eq!(asked.get(), 1);
            assert_eq!(opened.plain.is_ok(), expect_plain);
            assert_eq!(opened.digests.len(), 1);
            assert_eq!(opened.digests[0].1.is_some(), expect_plain, "hashed only from bytes that opened");
            let behind = pool.pop(&|_, _| panic!("the page behind opened")).unwrap();
            assert!(behind.plain.is_ok() && matches!(behind.digests[..], [(4, Some(_))]));
        }
    }

    #[test]
    fn an_opener_dropped_with_a_failed_page_in_flight_does_not_wait_for_its_turn() {
        let plain = b"x".repeat(10_000);
        let mut pool = PageOpener::new(1, 4, false).unwrap();
        pool.submit(damaged(sealed_page(&plain)));
        pool.submit(sealed_page(&plain));
        pool.submit(sealed_page(&plain));
        // Dropping without popping: the failed page's turn is taken in
        // `drop`, or its one worker would wait for it forever.
        drop(pool);
    }

    #[test]
    fn one_spare_worker_only_where_asked_and_turns_can_wait() {
        assert_eq!([0, 1, 2, 4].map(|threads| workers_for(threads, true)), [1, 1, 3, 5]);
        assert_eq!([0, 1, 2, 4].map(|threads| workers_for(threads, false)), [1, 1, 2, 4]);
    }

    #[test]
    fn pages_up_to_a_mib_fill_every_place_in_flight() {
        assert_eq!(pages_admitted(6, 4096), 6);
        assert_eq!(pages_admitted(6, 1 << 20), 6);
    }

    #[test]
    fn larger_pages_count_as_their_size_in_mib() {
        assert_eq!(pages_admitted(6, 2 << 20), 3);
        assert_eq!(pages_admitted(6, 4 << 20), 2);
        assert_eq!(pages_admitted(6, (4 << 20) + 1), 2);
    }

    #[test]
    fn one_page_goes_in_flight_whatever_its_size() {
        assert_eq!(pages_admitted(2, 16 << 20), 1);
        assert_eq!(pages_admitted(1, u32::MAX), 1);
    }
}
