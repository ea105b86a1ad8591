//! The ordered worker pool: closures run on every core while results come
//! back in submission order; callers bound how many are in flight, so
//! memory stays flat whatever the input size.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send>;

/// Runs closures on worker threads; [`pop`](Self::pop) returns their results
/// in the order they were submitted.
pub(crate) struct OrderedPool<T> {
    jobs: Option<SyncSender<Job>>,
    workers: Vec<JoinHandle<()>>,
    pending: VecDeque<Receiver<T>>,
}

impl<T: Send + 'static> OrderedPool<T> {
    /// Starts `threads` workers (at least one). Fails when the system
    /// refuses a thread.
    pub(crate) fn new(threads: usize) -> Result<OrderedPool<T>> {
        let (tx, rx) = mpsc::sync_channel::<Job>(threads.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let mut pool = OrderedPool { jobs: Some(tx), workers: Vec::new(), pending: VecDeque::new() };
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let worker = std::thread::Builder::new()
                .name(format!("lockbox-worker-{i}"))
                .spawn(move || loop {
                    let job = rx.lock().map(|rx| rx.recv());
                    match job {
                        Ok(Ok(job)) => job(),
                        _ => return,
                    }
                })
                .map_err(Error::stream("starting a worker thread"))?;
            pool.workers.push(worker);
        }
        Ok(pool)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order() {
        let mut pool = OrderedPool::new(3).unwrap();
        for i in 0..50u64 {
            pool.submit(move || {
                std::thread::sleep(std::time::Duration::from_micros((50 - i) * 20));
                i
            });
        }
        let got: Vec<u64> = std::iter::from_fn(|| pool.pop()).collect();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
    }
}
