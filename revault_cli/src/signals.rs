//! The signals that end the process: SIGINT (Ctrl-C), SIGTERM, SIGHUP and
//! SIGQUIT. One thread takes them, and nothing else in the process does:
//! two watchers of one signal race (the first to act wins). By default it
//! puts back the terminal modes of a password prompt under way, removes
//! the temporary names the library has made
//! ([`revault_lockbox_api::temporary::remove_all`]), then lets the signal
//! end the process by its default action: the shell sees 128 plus the
//! signal's number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), as
//! `exit.rs` documents, and nothing the command was writing is left.
//! A file being written without a name (`O_TMPFILE`) needs no cleaning:
//! it goes with the process, also on `kill -9`.
//!
//! A command that ends in its own way when asked to stop (`mount`
//! unmounts, then exits 0) hands the thread what to do instead with
//! [`stop_with`], for as long as it needs it.

use std::sync::{Mutex, MutexGuard};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::emulate_default_handler;

use crate::password;

/// The signals whose default action ends the process, and that a user or
/// a supervisor sends to stop lockbox.
pub const ENDING: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// Starts the thread that takes [`ENDING`] signals, once, before any
/// command runs.
pub fn watch() -> Result<()> {
    let mut signals = Signals::new(ENDING).context("watching for signals")?;
    std::thread::Builder::new()
        .name("lockbox-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if signal != SIGQUIT {
                    if let Some(stop) = stop().as_mut() {
                        stop();
                        continue;
                    }
                }
                password::restore_echo();
                revault_lockbox_api::temporary::remove_all();
                let _ = emulate_default_handler(signal);
            }
        })
        .context("watching for signals")?;
    Ok(())
}

/// What SIGINT, SIGTERM and SIGHUP do instead of ending the process.
type Stop = Box<dyn FnMut() + Send>;

fn stop() -> MutexGuard<'static, Option<Stop>> {
    static STOP: Mutex<Option<Stop>> = Mutex::new(None);
    // A poisoned lock still holds what to do.
    STOP.lock().unwrap_or_else(|e| e.into_inner())
}

/// While the returned guard lives, SIGINT, SIGTERM and SIGHUP run `stop`
/// on the signal thread (each time one comes) instead of ending the
/// process; SIGQUIT still ends it. Dropping the guard waits for a `stop`
/// under way.
#[must_use = "the signals end the process again once the guard is dropped"]
pub fn stop_with(stop_instead: impl FnMut() + Send + 'static) -> Stopping {
    *stop() = Some(Box::new(stop_instead));
    Stopping(())
}

/// See [`stop_with`].
pub struct Stopping(());

impl Drop for Stopping {
    fn drop(&mut self) {
        stop().take();
    }
}
