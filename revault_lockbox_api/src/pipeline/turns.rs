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

/// Condition variables a ticket's waiter may sleep on: ticket `t` waits on
/// `t % WAKE_SLOTS`. With no more waiting workers than this, a turn wakes
/// only the worker whose turn comes next; more share slots and wake each
/// other spuriously, which costs time but not order.
const WAKE_SLOTS: usize = 8;

/// A value that jobs update one at a time, in ticket order.
pub(crate) struct InTurn<T> {
    state: Mutex<Turn<T>>,
    /// Where the holders of later tickets wait, by ticket.
    ticket_turns: [Condvar; WAKE_SLOTS],
    /// Where [`InTurn::after`] waits.
    turns_done: Condvar,
}

struct Turn<T> {
    /// The ticket whose turn it is.
    next: u64,
    /// Threads waiting in [`InTurn::after`]: a turn wakes them only when
    /// there are some.
    waiting_after: usize,
    value: T,
}

impl<T> InTurn<T> {
    pub(crate) fn new(value: T) -> InTurn<T> {
        InTurn {
            state: Mutex::new(Turn { next: 0, waiting_after: 0, value }),
            ticket_turns: std::array::from_fn(|_| Condvar::new()),
            turns_done: Condvar::new(),
        }
    }

    /// Waits for turn `ticket`, runs `f` on the value, and passes the turn
    /// on (also when `f` panics, so that later tickets do not wait forever).
    pub(crate) fn take_turn<R>(&self, ticket: u64, f: impl FnOnce(&mut T) -> R) -> R {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut state = wait(state, &self.ticket_turns[slot(ticket)], |next| next == ticket);
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(&mut state.value)));
        state.next += 1;
        let wake_after = state.waiting_after > 0;
        drop(state);
        // Only the next ticket's holder can go on; the slot's other
        // waiters, if any, see it is not their turn and sleep again.
        self.ticket_turns[slot(ticket + 1)].notify_all();
        if wake_after {
            self.turns_done.notify_all();
        }
        result.unwrap_or_else(|payload| panic::resume_unwind(payload))
    }

    /// Runs `f` on the value once the first `tickets` turns have run.
    pub(crate) fn after<R>(&self, tickets: u64, f: impl FnOnce(&mut T) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.next < tickets {
            state.waiting_after += 1;
            state = wait(state, &self.turns_done, |next| next >= tickets);
            state.waiting_after -= 1;
        }
        f(&mut state.value)
    }
}

/// Sleeps on `on` until `ready` holds for the ticket whose turn it is.
fn wait<'a, T>(
    mut state: MutexGuard<'a, Turn<T>>,
    on: &Condvar,
    ready: impl Fn(u64) -> bool,
) -> MutexGuard<'a, Turn<T>> {
    // A panic inside a turn passed the turn on before unwinding: the value
    // is as that turn left it.
    while !ready(state.next) {
        state = on.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
    state
}

/// The condition variable ticket `ticket` waits on.
fn slot(ticket: u64) -> usize {
    (ticket % WAKE_SLOTS as u64) as usize
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::pipeline::ordered::OrderedWorkers;

    /// Runs tickets 0..64 on `workers` workers, later tickets finishing
    /// their own work first, and returns the order their turns ran in, read
    /// by [`InTurn::after`] while the last turns may still be waiting.
    fn turn_order(workers: usize) -> Vec<u64> {
        let log = Arc::new(InTurn::new(Vec::new()));
        let shared = Arc::clone(&log);
        let mut pool = OrderedWorkers::new("turns", workers, 2 * workers, move |ticket: u64| {
            std::thread::sleep(std::time::Duration::from_micros((64 - ticket) * 30));
            shared.take_turn(ticket, |log| log.push(ticket));
        })
        .unwrap();
        for ticket in 0..64 {
            if !pool.has_room() {
                pool.pop();
            }
            pool.submit(ticket);
        }
        let order = log.after(64, |log| log.clone());
        while pool.pop().is_some() {}
        order
    }

    #[test]
    fn turns_run_in_ticket_order_on_any_worker() {
        assert_eq!(turn_order(3), (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn workers_sharing_a_wake_slot_still_take_turns_in_order() {
        assert_eq!(turn_order(WAKE_SLOTS + 4), (0..64).collect::<Vec<_>>());
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
