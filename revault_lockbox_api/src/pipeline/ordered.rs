//! Workers that take jobs by value and give results back in submission
//! order, allocating nothing per job: jobs and results travel through
//! bounded channels, and results that finish early wait in a fixed ring.
//! The one ordered pool: the writer's page sealer and chunk digester, the
//! reader's page opener, the index merge's leaf opening and extraction's
//! placing and syncing threads all run on it.

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// A result back from a worker; `None` when the job panicked.
type Done<R> = (u64, Option<R>);

/// Runs `work` on worker threads over jobs submitted in order; at most
/// `capacity` in flight.
pub(crate) struct OrderedWorkers<J, R> {
    jobs: Option<SyncSender<(u64, J)>>,
    done: Receiver<Done<R>>,
    workers: Vec<JoinHandle<()>>,
    /// Results that came back before an older one, at `seq % capacity`.
    early: Vec<Option<Done<R>>>,
    next_in: u64,
    next_out: u64,
}

impl<J: Send + 'static, R: Send + 'static> OrderedWorkers<J, R> {
    /// Starts `threads` workers (at least one) named `name-N`.
    pub(crate) fn new(
        name: &str,
        threads: usize,
        capacity: usize,
        work: impl Fn(J) -> R + Send + Sync + 'static,
    ) -> Result<OrderedWorkers<J, R>> {
        let capacity = capacity.max(1);
        let (jobs, job_queue) = mpsc::sync_channel::<(u64, J)>(capacity);
        // Never full: at most `capacity` jobs are out at once.
        let (done_tx, done) = mpsc::sync_channel::<Done<R>>(capacity);
        let job_queue = Arc::new(Mutex::new(job_queue));
        let work = Arc::new(work);
        let mut pool = OrderedWorkers {
            jobs: Some(jobs),
            done,
            workers: Vec::new(),
            early: (0..capacity).map(|_| None).collect(),
            next_in: 0,
            next_out: 0,
        };
        for i in 0..threads.max(1) {
            let (job_queue, done_tx, work) = (Arc::clone(&job_queue), done_tx.clone(), Arc::clone(&work));
            let worker = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || loop {
                    let (seq, job) = match job_queue.lock().map(|queue| queue.recv()) {
                        Ok(Ok(job)) => job,
                        _ => return,
                    };
                    let result = panic::catch_unwind(AssertUnwindSafe(|| work(job))).ok();
                    if done_tx.send((seq, result)).is_err() {
                        return;
                    }
                })
                .map_err(Error::stream("starting a worker thread"))?;
            pool.workers.push(worker);
        }
        Ok(pool)
    }

    /// Jobs submitted and not yet popped.
    pub(crate) fn in_flight(&self) -> usize {
        (self.next_in - self.next_out) as usize
    }

    /// Whether another job fits.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight() < self.early.len()
    }

    /// Queues `job`; blocks while every worker is busy and the queue is
    /// full. The caller keeps at most `capacity` jobs in flight.
    pub(crate) fn submit(&mut self, job: J) {
        assert!(self.has_room(), "more jobs in flight than the workers' capacity");
        let jobs = self.jobs.as_ref().expect("the workers are open");
        jobs.send((self.next_in, job)).expect("workers outlive the pool");
        self.next_in += 1;
    }

    /// The oldest job's result, waiting for it; `None` when nothing is in
    /// flight. Panics when that job panicked.
    pub(crate) fn pop(&mut self) -> Option<R> {
        Some(self.pop_settled()?.expect("a pipeline worker panicked"))
    }

    /// [`Self::pop`], a job that panicked giving `Some(None)`: for a pool
    /// being dropped, which must not panic again.
    pub(crate) fn pop_settled(&mut self) -> Option<Option<R>> {
        if self.in_flight() == 0 {
            return None;
        }
        let slot = (self.next_out % self.early.len() as u64) as usize;
        let (_, result) = match self.early[slot].take() {
            Some(done) => done,
            None => loop {
                let done = self.done.recv().expect("workers outlive the pool");
                if done.0 == self.next_out {
                    break done;
                }
                let at = (done.0 % self.early.len() as u64) as usize;
                self.early[at] = Some(done);
            },
        };
        self.next_out += 1;
        Some(result)
    }
}

impl<J, R> Drop for OrderedWorkers<J, R> {
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

    #[test]
    fn results_come_back_in_order_whatever_finishes_first() {
        let mut workers = OrderedWorkers::new("test", 3, 5, |i: u64| {
            std::thread::sleep(std::time::Duration::from_micros((40 - i) * 30));
            i * 2
        })
        .unwrap();
        let mut got = Vec::new();
        for i in 0..40u64 {
            if !workers.has_room() {
                got.push(workers.pop().unwrap());
            }
            workers.submit(i);
        }
        got.extend(std::iter::from_fn(|| workers.pop()));
        assert_eq!(got, (0..40).map(|i| i * 2).collect::<Vec<_>>());
    }
}
