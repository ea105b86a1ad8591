//! The reader's page pipeline: sealed data pages are opened (authenticated
//! and decompressed) on worker threads and come back in page order. In the
//! steady state nothing is allocated per page: the buffers a page is read
//! into and decompressed into are recycled, and jobs travel by value
//! ([`OrderedWorkers`]).

use std::sync::Arc;

use super::codec::open_data_page_into;
use super::ordered::OrderedWorkers;
use crate::crypto::SessionKeys;
use crate::format::{PageRecord, ARCHIVE_ID_LEN};
use crate::Result;

/// A data page to open: where it sits in the data stream, its record, the
/// keys of the session that wrote it, and its sealed bytes (or why they
/// could not be read).
pub(crate) struct PageToOpen {
    pub(crate) number: u64,
    pub(crate) start: u64,
    pub(crate) record: PageRecord,
    pub(crate) keys: Arc<SessionKeys>,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) sealed: Result<Vec<u8>>,
}

/// A page back from the workers: its plaintext, or why it failed.
pub(crate) struct OpenedPage {
    pub(crate) number: u64,
    /// The page's first and end data-stream offsets.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) plain: Result<Vec<u8>>,
}

/// Opens data pages on `threads` workers, at most `capacity` in flight.
pub(crate) struct PageOpener {
    workers: OrderedWorkers<(PageToOpen, Vec<u8>), (OpenedPage, Vec<u8>)>,
    /// Cleared buffers from pages already delivered.
    free: Vec<Vec<u8>>,
}

impl PageOpener {
    pub(crate) fn new(threads: usize, capacity: usize) -> Result<PageOpener> {
        let workers =
            OrderedWorkers::new("lockbox-opener", threads, capacity, |(page, spare)| open(page, spare))?;
        Ok(PageOpener { workers, free: Vec::new() })
    }

    /// An empty buffer to read a sealed page into: a recycled one when
    /// there is one.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// Gives back a buffer (a delivered page's) for later pages.
    pub(crate) fn recycle(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        self.free.push(buffer);
    }

    /// Pages submitted and not yet popped.
    pub(crate) fn in_flight(&self) -> usize {
        self.workers.in_flight()
    }

    /// Queues a page; blocks while every worker is busy. The caller keeps
    /// fewer than `capacity` pages in flight.
    pub(crate) fn submit(&mut self, page: PageToOpen) {
        let spare = self.buffer();
        self.workers.submit((page, spare));
    }

    /// The oldest page submitted, opened, waiting for it; `None` when no
    /// page is in flight.
    pub(crate) fn pop(&mut self) -> Option<OpenedPage> {
        let (page, spare) = self.workers.pop()?;
        self.recycle(spare);
        Some(page)
    }
}

/// A worker's job: opens the page into whichever of its two buffers the
/// codec needs; returns the other.
fn open(page: PageToOpen, spare: Vec<u8>) -> (OpenedPage, Vec<u8>) {
    let end = page.start + u64::from(page.record.plain_len);
    let (plain, spare) = match page.sealed {
        Ok(sealed) => {
            open_data_page_into(&page.keys, &page.archive_id, page.number, &page.record, sealed, spare)
        }
        Err(e) => (Err(e), spare),
    };
    (OpenedPage { number: page.number, start: page.start, end, plain }, spare)
}
