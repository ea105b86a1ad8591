//! The writer's page pipeline: full pages go to worker threads that
//! compress and seal them, and come back sealed in page order. In the
//! steady state nothing is allocated per page: page buffers are recycled,
//! jobs travel by value through bounded channels, and pages that finish
//! early wait in a fixed ring.

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::codec::{page_buffer_capacity, seal_data_page, Sealed};
use crate::crypto::SessionKeys;
use crate::format::ARCHIVE_ID_LEN;
use crate::{Error, Result};

/// A full page for the workers, with a spare buffer for its zstd frame.
struct Job {
    number: u64,
    plain: Vec<u8>,
    spare: Vec<u8>,
}

/// A page back from a worker; `sealed` is `None` when sealing panicked.
struct Done {
    number: u64,
    sealed: Option<Sealed>,
    spare: Vec<u8>,
}

/// What every worker needs to seal a page of this session.
#[derive(Clone)]
pub(crate) struct SealingKeys {
    pub(crate) keys: Arc<SessionKeys>,
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    pub(crate) zstd_level: i32,
}

/// Seals data pages on `threads` workers, at most `capacity` in flight.
pub(crate) struct PageSealer {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
    /// Pages sealed before an older one, at `number % capacity`.
    early: Vec<Option<Done>>,
    next_out: u64,
    in_flight: usize,
    /// Cleared buffers, each with room for any sealed page.
    free: Vec<Vec<u8>>,
    buffer_capacity: usize,
}

impl PageSealer {
    /// Starts the workers; the first page submitted must be `first_page`,
    /// and pages must follow in order.
    pub(crate) fn new(
        keys: SealingKeys,
        page_size: usize,
        threads: usize,
        capacity: usize,
        first_page: u64,
    ) -> Result<PageSealer> {
        let capacity = capacity.max(1);
        let (jobs, job_queue) = mpsc::sync_channel::<Job>(capacity);
        // Never full: at most `capacity` pages are out at once.
        let (done_tx, done) = mpsc::sync_channel::<Done>(capacity);
        let job_queue = Arc::new(Mutex::new(job_queue));
        let mut sealer = PageSealer {
            jobs: Some(jobs),
            done,
            workers: Vec::new(),
            early: (0..capacity).map(|_| None).collect(),
            next_out: first_page,
            in_flight: 0,
            free: Vec::new(),
            buffer_capacity: page_buffer_capacity(page_size),
        };
        for i in 0..threads.max(1) {
            let (job_queue, done_tx, keys) = (Arc::clone(&job_queue), done_tx.clone(), keys.clone());
            let worker = std::thread::Builder::new()
                .name(format!("lockbox-sealer-{i}"))
                .spawn(move || seal_pages(&job_queue, &done_tx, &keys))
                .map_err(Error::stream("starting a worker thread"))?;
            sealer.workers.push(worker);
        }
        Ok(sealer)
    }

    /// An empty buffer with room for a full page: a recycled one when
    /// there is one.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(self.buffer_capacity))
    }

    /// Gives back a buffer (a written page's) for later pages.
    pub(crate) fn recycle(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        self.free.push(buffer);
    }

    /// Pages submitted and not yet popped.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues page `number` (the one after the last submitted); blocks
    /// while every worker is busy. The caller keeps at most `capacity`
    /// pages in flight.
    pub(crate) fn submit(&mut self, number: u64, plain: Vec<u8>) {
        assert!(self.in_flight < self.early.len(), "more pages in flight than the sealer's capacity");
        let spare = self.buffer();
        self.in_flight += 1;
        let jobs = self.jobs.as_ref().expect("the sealer is open");
        jobs.send(Job { number, plain, spare }).expect("sealing workers outlive the sealer");
    }

    /// The oldest page submitted, sealed, waiting for it; `None` when no
    /// page is in flight.
    pub(crate) fn pop(&mut self) -> Option<Sealed> {
        if self.in_flight == 0 {
            return None;
        }
        let slot = (self.next_out % self.early.len() as u64) as usize;
        let done = match self.early[slot].take() {
            Some(done) => done,
            None => loop {
                let done = self.done.recv().expect("sealing workers outlive the sealer");
                if done.number == self.next_out {
                    break done;
                }
                let at = (done.number % self.early.len() as u64) as usize;
                self.early[at] = Some(done);
            },
        };
        self.next_out += 1;
        self.in_flight -= 1;
        self.recycle(done.spare);
        Some(done.sealed.expect("a page sealing worker panicked"))
    }
}

/// A worker: seals pages until the sealer closes its queue.
fn seal_pages(jobs: &Mutex<Receiver<Job>>, done: &SyncSender<Done>, keys: &SealingKeys) {
    loop {
        let job = match jobs.lock().map(|queue| queue.recv()) {
            Ok(Ok(job)) => job,
            _ => return,
        };
        let number = job.number;
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            seal_data_page(&keys.keys, &keys.archive_id, number, job.plain, job.spare, keys.zstd_level)
        }));
        let done_page = match result {
            Ok((sealed, spare)) => Done { number, sealed: Some(sealed), spare },
            Err(_) => Done { number, sealed: None, spare: Vec::new() },
        };
        if done.send(done_page).is_err() {
            return;
        }
    }
}

impl Drop for PageSealer {
    fn drop(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::ContentKey;
    use crate::format::{PageRecord, SESSION_SALT_LEN};
    use crate::pipeline::open_data_page;

    #[test]
    fn pages_come_back_sealed_in_order_and_open() {
        let content_key = ContentKey::random().unwrap();
        let keys = Arc::new(SessionKeys::derive(&content_key, &[7; SESSION_SALT_LEN]));
        let archive_id = [3; ARCHIVE_ID_LEN];
        let sealing = SealingKeys { keys: Arc::clone(&keys), archive_id, zstd_level: 3 };
        let mut sealer = PageSealer::new(sealing, 4096, 3, 4, 10).unwrap();
        let page = |n: u64| -> Vec<u8> {
            // Text-like pages compress; odd ones are pseudo-random.
            let mut state = n.wrapping_mul(0x9e3779b97f4a7c15) | 1;
            (0..4096u64)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if n % 2 == 0 {
                        b"lockbox "[(i % 8) as usize]
                    } else {
                        state as u8
                    }
                })
                .collect()
        };
        let mut opened = Vec::new();
        let mut check = |sealed: Sealed, number: u64| {
            let record = PageRecord {
                offset: 0,
                stored_len: sealed.bytes.len() as u32,
                plain_len: sealed.plain_len,
                codec: sealed.codec,
            };
            let plain = open_data_page(&keys, &archive_id, number, &record, sealed.bytes).unwrap();
            assert_eq!(plain, page(number));
            opened.push(number);
        };
        let mut next_out = 10;
        for number in 10..40 {
            let mut buffer = sealer.buffer();
            buffer.extend_from_slice(&page(number));
            sealer.submit(number, buffer);
            while sealer.in_flight() >= 4 {
                check(sealer.pop().unwrap(), next_out);
                next_out += 1;
            }
        }
        while let Some(sealed) = sealer.pop() {
            check(sealed, next_out);
            next_out += 1;
        }
        assert_eq!(opened, (10..40).collect::<Vec<_>>());
    }
}
