//! The reader's page pipeline: sealed data pages are opened (authenticated
//! and decompressed) on worker threads and come back in page order. The
//! workers also hash the files the pages hold, in page order
//! ([`InTurn`]), so that the thread writing the files does not. In the
//! steady state nothing is allocated per page: the buffers a page is read
//! into and decompressed into are recycled, and jobs travel by value
//! ([`OrderedWorkers`]).

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
type Done = (OpenedPage, Vec<u8>, Vec<HashedSpan>);

/// Plaintext bytes a page in flight counts as at least: `capacity` pages
/// of up to this size are in flight at once, larger ones fewer, so that
/// memory stays near `capacity` MiB whatever the archive's page sizes.
const PAGE_IN_FLIGHT_BYTES: u64 = 1 << 20;

/// Opens data pages on worker threads ([`workers_for`]), at most
/// `capacity` in flight, and no more plaintext than `capacity` pages of
/// [`PAGE_IN_FLIGHT_BYTES`] unless only one is.
pub(crate) struct PageOpener {
    workers: OrderedWorkers<Job, Done>,
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
        let skip = Arc::clone(&cancelled);
        let workers =
            OrderedWorkers::new("lockbox-opener", workers_for(threads, spare), capacity, move |job| {
                open(job, &hashing, &skip)
            })?;
        Ok(PageOpener {
            workers,
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
    /// page is in flight.
    pub(crate) fn pop(&mut self) -> Option<OpenedPage> {
        let (page, spare, spans) = self.workers.pop()?;
        self.bytes_in_flight -= counted_bytes(page.end - page.start);
        self.recycle(spare);
        self.free_spans.push(spans);
        Some(page)
    }
}

impl Drop for PageOpener {
    /// A reader that stops in the middle of a file (a seek, an error,
    /// `cat | head`) waits for the workers to finish: only for the pages
    /// they have started, not for every page in flight.
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
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
fn open((page, spare, ticket, mut digests): Job, hashing: &InTurn<Hashing>, cancelled: &AtomicBool) -> Done {
    let PageToOpen { number, start, record, keys, archive_id, sealed, mut spans } = page;
    let end = start + u64::from(record.plain_len);
    // The turn is taken whatever happens, or later pages would wait for it.
    let opened = panic::catch_unwind(AssertUnwindSafe(|| match sealed {
        _ if cancelled.load(Ordering::Relaxed) => (Err(not_wanted()), spare),
        Ok(sealed) => open_data_page_into(&keys, &archive_id, number, &record, sealed, spare),
        Err(e) => (Err(e), spare),
    }));
    let plain = opened.as_ref().ok().and_then(|(plain, _)| plain.as_deref().ok());
    hashing.take_turn(ticket, |state| {
        state.open.extend(spans.drain(..));
        hash_page(state, (start, end), plain, &mut digests);
    });
    let (plain, spare) = opened.unwrap_or_else(|payload| panic::resume_unwind(payload));
    (OpenedPage { number, start, end, plain, digests }, spare, spans)
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
        while let Some(page) = pool.pop() {
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
        let opened = pool.pop().unwrap();
        assert_eq!(opened.plain.unwrap(), plain);
        assert!(matches!(opened.digests[..], [(7, Some(_))]));

        pool.cancelled.store(true, Ordering::Relaxed);
        let mut page = sealed_page(&plain);
        page.spans.push(span());
        pool.submit(page);
        let skipped = pool.pop().unwrap();
        match skipped.plain {
            Err(Error::Stream { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::Interrupted),
            other => panic!("a page opened after the opener was cancelled: {:?}", other.map(|p| p.len())),
        }
        assert!(matches!(skipped.digests[..], [(7, None)]));
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
