//! Work that must run in page order, done by whichever worker holds each
//! page: a file's SHA-256 runs through its pages one after another, but not
//! on the thread that reads or writes the file, which was the bottleneck
//! for large files (one core hashing while the others waited).
//!
//! Each job takes a ticket (0, 1, 2, ... in submission order) and waits for
//! its turn; workers take jobs from one queue in that order, so the oldest
//! ticket is always held by a worker that is not waiting, and the turns
//! always move on.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// A value that jobs update one at a time, in ticket order.
pub(crate) struct InTurn<T> {
    state: Mutex<Turn<T>>,
    next_changed: Condvar,
}

struct Turn<T> {
    /// The ticket whose turn it is.
    next: u64,
    value: T,
}

impl<T> InTurn<T> {
    pub(crate) fn new(value: T) -> InTurn<T> {
        InTurn { state: Mutex::new(Turn { next: 0, value }), next_changed: Condvar::new() }
    }

    /// Waits for turn `ticket`, runs `f` on the value, and passes the turn
    /// on (also when `f` panics, so that later tickets do not wait forever).
    pub(crate) fn take_turn<R>(&self, ticket: u64, f: impl FnOnce(&mut T) -> R) -> R {
        let mut state = self.wait_for(|next| next == ticket);
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(&mut state.value)));
        state.next += 1;
        drop(state);
        self.next_changed.notify_all();
        result.unwrap_or_else(|payload| panic::resume_unwind(payload))
    }

    /// Runs `f` on the value once the first `tickets` turns have run.
    pub(crate) fn after<R>(&self, tickets: u64, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.wait_for(|next| next >= tickets).value)
    }

    fn wait_for(&self, ready: impl Fn(u64) -> bool) -> MutexGuard<'_, Turn<T>> {
        // A panic inside a turn passed the turn on before unwinding: the
        // value is as that turn left it.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !ready(state.next) {
            state = self.next_changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::pipeline::ordered::OrderedWorkers;

    #[test]
    fn turns_run_in_ticket_order_on_any_worker() {
        let log = Arc::new(InTurn::new(Vec::new()));
        let shared = Arc::clone(&log);
        let mut workers = OrderedWorkers::new("turns", 3, 8, move |ticket: u64| {
            // Later tickets finish their own work first.
            std::thread::sleep(std::time::Duration::from_micros((64 - ticket) * 30));
            shared.take_turn(ticket, |log| log.push(ticket));
        })
        .unwrap();
        for ticket in 0..64 {
            if !workers.has_room() {
                workers.pop();
            }
            workers.submit(ticket);
        }
        while workers.pop().is_some() {}
        assert_eq!(log.after(64, |log| log.clone()), (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_turn_passes_the_turn_on() {
        let turns = InTurn::new(0u32);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| turns.take_turn(0, |_| panic!("boom"))));
        assert!(caught.is_err());
        turns.take_turn(1, |n| *n += 1);
        assert_eq!(turns.after(2, |n| *n), 1);
    }
}
