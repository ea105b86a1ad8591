//! The writer's page pipeline: full pages go to worker threads that
//! compress and seal them, and come back sealed in page order. A file that
//! runs on past a page is hashed there too, by the workers in page order
//! ([`InTurn`]), so the thread reading the files does not also hash them.
//! In the steady state nothing is allocated per page: page buffers are
//! recycled, jobs travel by value ([`OrderedWorkers`]).

use std::sync::Arc;

use super::ordered::OrderedWorkers;
use super::turns::InTurn;
use crate::crypto::SessionKeys;
use crate::crypto::{page_buffer_capacity, seal_data_page, Sealed};
use crate::error::Result;
use crate::format::ARCHIVE_ID_LEN;
use crate::sparse::ContentHasher;

/// A full page for the workers, with a spare buffer for its zstd frame;
/// `hash` is the turn and offset from which the page's bytes go to the
/// handed-over file hasher.
struct Job {
    number: u64,
    plain: Vec<u8>,
    spare: Vec<u8>,
    hash: Option<(u64, usize)>,
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
    workers: OrderedWorkers<Job, (Sealed, Vec<u8>)>,
    /// The hasher of the file that runs across pages, while the workers
    /// have it.
    hashing: Arc<InTurn<Option<ContentHasher>>>,
    /// Turns handed out (jobs with bytes to hash).
    tickets: u64,
    /// Cleared buffers, each with room for any sealed page.
    free: Vec<Vec<u8>>,
    buffer_capacity: usize,
}

impl PageSealer {
    /// Starts the workers; pages must be submitted in page order.
    pub(crate) fn new(
        keys: SealingKeys,
        page_size: usize,
        threads: usize,
        capacity: usize,
    ) -> Result<PageSealer> {
        let hashing = Arc::new(InTurn::new(None::<ContentHasher>));
        let shared = Arc::clone(&hashing);
        let workers = OrderedWorkers::new("lockbox-sealer", threads, capacity, move |job: Job| {
            if let Some((ticket, from)) = job.hash {
                shared.take_turn(ticket, |hasher| {
                    hasher.as_mut().expect("handed over before its pages").update(&job.plain[from..])
                });
            }
            seal_data_page(&keys.keys, &keys.archive_id, job.number, job.plain, job.spare, keys.zstd_level)
        })?;
        let buffer_capacity = page_buffer_capacity(page_size);
        Ok(PageSealer { workers, hashing, tickets: 0, free: Vec::new(), buffer_capacity })
    }

    /// Hands the workers the hasher of a file whose bytes the next pages
    /// submitted with `hash_from` hold.
    pub(crate) fn hand_over(&mut self, hasher: ContentHasher) {
        self.hashing.after(self.tickets, |slot| *slot = Some(hasher));
    }

    /// Takes the hasher back once the pages submitted so far are hashed.
    pub(crate) fn take_back(&mut self) -> ContentHasher {
        self.hashing.after(self.tickets, |slot| slot.take().expect("handed over"))
    }

    /// A buffer with room for a full page: a recycled one, still holding
    /// old bytes (room to overwrite, not content), when there is one.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(self.buffer_capacity))
    }

    /// Gives back a buffer (a written page's) for later pages. It keeps
    /// its length, so that filling it again zeroes nothing.
    pub(crate) fn recycle(&mut self, buffer: Vec<u8>) {
        self.free.push(buffer);
    }

    /// Pages submitted and not yet popped.
    pub(crate) fn in_flight(&self) -> usize {
        self.workers.in_flight()
    }

    /// Queues page `number` (the one after the last submitted); blocks
    /// while every worker is busy. The caller keeps at most `capacity`
    /// pages in flight. With `hash_from`, the page's bytes from there on go
    /// to the handed-over hasher.
    pub(crate) fn submit(&mut self, number: u64, plain: Vec<u8>, hash_from: Option<usize>) {
        let spare = self.buffer();
        let hash = hash_from.map(|from| {
            self.tickets += 1;
            (self.tickets - 1, from)
        });
        self.workers.submit(Job { number, plain, spare, hash });
    }

    /// The oldest page submitted, sealed, waiting for it; `None` when no
    /// page is in flight.
    pub(crate) fn pop(&mut self) -> Option<Sealed> {
        let (sealed, spare) = self.workers.pop()?;
        self.recycle(spare);
        Some(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::open_data_page;
    use crate::crypto::ContentKey;
    use crate::format::SESSION_SALT_LEN;

    #[test]
    fn pages_come_back_sealed_in_order_and_open() {
        let content_key = ContentKey::random().unwrap();
        let keys = Arc::new(SessionKeys::derive(&content_key, &[7; SESSION_SALT_LEN]));
        let archive_id = [3; ARCHIVE_ID_LEN];
        let sealing = SealingKeys { keys: Arc::clone(&keys), archive_id, zstd_level: 3 };
        let mut sealer = PageSealer::new(sealing, 4096, 3, 4).unwrap();
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
            let record = sealed.page_record(0);
            let framed = [&sealed.frame[..], &sealed.bytes].concat();
            let plain = open_data_page(&keys, &archive_id, number, &record, framed).unwrap();
            assert_eq!(plain, page(number));
            opened.push(number);
        };
        let mut next_out = 10;
        for number in 10..40 {
            let mut buffer = sealer.buffer();
            buffer.clear();
            buffer.extend_from_slice(&page(number));
            sealer.submit(number, buffer, None);
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
