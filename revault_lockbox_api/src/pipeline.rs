//! Pages in parallel: a small worker pool that compresses and seals (or
//! opens and decompresses) pages on every core while results come back in
//! submission order, with a bounded number in flight so memory stays flat
//! whatever the input size.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::crypto::{PageNonce, SessionKeys};
use crate::format::{ArchiveId, Codec, PageAad, PageRecord};
use crate::{Error, Result};

type Job = Box<dyn FnOnce() + Send>;

/// Runs closures on worker threads; [`pop`](Self::pop) returns their results
/// in the order they were submitted.
pub(crate) struct OrderedPool<T> {
    jobs: Option<SyncSender<Job>>,
    workers: Vec<JoinHandle<()>>,
    pending: VecDeque<Receiver<T>>,
}

impl<T: Send + 'static> OrderedPool<T> {
    pub(crate) fn new(threads: usize) -> OrderedPool<T> {
        let (tx, rx) = mpsc::sync_channel::<Job>(threads.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let workers = (0..threads.max(1))
            .map(|i| {
                let rx = Arc::clone(&rx);
                std::thread::Builder::new()
                    .name(format!("lockbox-page-{i}"))
                    .spawn(move || loop {
                        let job = rx.lock().map(|rx| rx.recv());
                        match job {
                            Ok(Ok(job)) => job(),
                            _ => return,
                        }
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        OrderedPool { jobs: Some(tx), workers, pending: VecDeque::new() }
    }

    /// Queues `f`; blocks while every worker is busy and the queue is full.
    pub(crate) fn submit(&mut self, f: impl FnOnce() -> T + Send + 'static) {
        let (tx, rx) = mpsc::sync_channel(1);
        self.pending.push_back(rx);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        self.jobs.as_ref().expect("pool is open").send(job).expect("workers outlive the pool");
    }

    /// Results not yet taken.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The oldest result, waiting for it; `None` when nothing is pending.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let rx = self.pending.pop_front()?;
        Some(rx.recv().expect("a worker panicked"))
    }
}

impl<T> Drop for OrderedPool<T> {
    fn drop(&mut self) {
        self.jobs = None;
        self.pending.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// A data page compressed (or not) and sealed, ready to write.
pub(crate) struct SealedPage {
    pub(crate) number: u64,
    pub(crate) plain_len: u32,
    pub(crate) codec: Codec,
    pub(crate) bytes: Vec<u8>,
}

/// Compression that saves less than 1/32 of a page is not worth the
/// decompression time: such pages are stored raw.
const MIN_SAVING_DIVISOR: usize = 32;
/// Bytes of each probe taken to detect incompressible pages.
const PROBE_LEN: usize = 4096;

thread_local! {
    /// One compression context per level used on this thread: creating
    /// one costs more than compressing a small probe.
    static COMPRESSORS: RefCell<Vec<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(Vec::new()) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Whether three small probes (start, middle, end) of the page all fail to
/// compress at zstd's fastest level: random-looking data skips zstd
/// entirely, which costs a few microseconds instead of a full pass.
fn looks_incompressible(plain: &[u8]) -> bool {
    if plain.len() < 4 * PROBE_LEN {
        return false;
    }
    let starts = [0, plain.len() / 2 - PROBE_LEN / 2, plain.len() - PROBE_LEN];
    starts.iter().all(|&s| {
        let probe = &plain[s..s + PROBE_LEN];
        zstd_compress(probe, 1).is_none_or(|c| c.len() + PROBE_LEN / MIN_SAVING_DIVISOR >= PROBE_LEN)
    })
}

fn compress(plain: &[u8], level: i32) -> Option<Vec<u8>> {
    if looks_incompressible(plain) {
        return None;
    }
    let out = zstd_compress(plain, level)?;
    (out.len() + plain.len() / MIN_SAVING_DIVISOR < plain.len()).then_some(out)
}

fn zstd_compress(plain: &[u8], level: i32) -> Option<Vec<u8>> {
    COMPRESSORS.with(|cell| {
        let mut contexts = cell.borrow_mut();
        let i = match contexts.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                contexts.push((level, zstd::bulk::Compressor::new(level).ok()?));
                contexts.len() - 1
            }
        };
        contexts[i].1.compress(plain).ok()
    })
}

/// Compresses (when it pays) and seals data page `number`.
pub(crate) fn seal_data_page(
    keys: &SessionKeys,
    archive_id: &ArchiveId,
    number: u64,
    plain: Vec<u8>,
    level: i32,
) -> SealedPage {
    let plain_len = plain.len() as u32;
    let (codec, mut bytes) = match compress(&plain, level) {
        Some(c) => (Codec::Zstd, c),
        None => (Codec::Raw, plain),
    };
    let stored_len = (bytes.len() + crate::format::TAG_LEN) as u32;
    bytes.reserve_exact(crate::format::TAG_LEN);
    let aad = PageAad::encode(archive_id, number, codec, plain_len, stored_len);
    keys.seal_page(PageNonce::data(number), &aad, &mut bytes);
    SealedPage { number, plain_len, codec, bytes }
}

/// Opens and decompresses data page `number` read from the archive.
pub(crate) fn open_data_page(
    keys: &SessionKeys,
    archive_id: &ArchiveId,
    number: u64,
    record: &PageRecord,
    mut bytes: Vec<u8>,
) -> Result<Vec<u8>> {
    let aad = PageAad::encode(archive_id, number, record.codec, record.plain_len, record.stored_len);
    keys.open_page(PageNonce::data(number), &aad, &mut bytes)
        .map_err(|_| Error::tampered(format!("page {number}")))?;
    match record.codec {
        Codec::Raw if bytes.len() == record.plain_len as usize => Ok(bytes),
        Codec::Zstd => decompress(&bytes, record.plain_len as usize)
            .ok_or_else(|| Error::tampered(format!("page {number} (bad zstd frame)"))),
        Codec::Raw => Err(Error::tampered(format!("page {number} (length)"))),
    }
}

/// Decompresses exactly `len` bytes, never allocating more.
pub(crate) fn decompress(frame: &[u8], len: usize) -> Option<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Decompressor::new().ok()?);
        }
        let out = cell.as_mut()?.decompress(frame, len).ok()?;
        (out.len() == len).then_some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order() {
        let mut pool = OrderedPool::new(3);
        for i in 0..50u64 {
            pool.submit(move || {
                std::thread::sleep(std::time::Duration::from_micros((50 - i) * 20));
                i
            });
        }
        let got: Vec<u64> = std::iter::from_fn(|| pool.pop()).collect();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn incompressible_pages_skip_zstd() {
        let mut state = 0x9e3779b97f4a7c15u64;
        let random: Vec<u8> = (0..65536)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        assert!(looks_incompressible(&random));
        assert!(compress(&random, 3).is_none());
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(2000);
        assert!(!looks_incompressible(&text));
        let c = compress(&text, 3).unwrap();
        assert_eq!(decompress(&c, text.len()).unwrap(), text);
        assert!(decompress(&c, text.len() - 1).is_none());
    }
}
