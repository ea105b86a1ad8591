//! The signals that end the process: SIGINT (Ctrl-C), SIGTERM, SIGHUP and
//! SIGQUIT. A thread takes them, puts back the terminal modes of a password
//! prompt under way, removes the temporary names the library has made
//! ([`revault_lockbox_api::temporary::remove_all`]), then lets the signal
//! end the process by its default action: the shell sees 128 plus the
//! signal's number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), as
//! `exit.rs` documents, and nothing the command was writing is left.
//! A file being written without a name (`O_TMPFILE`) needs no cleaning:
//! it goes with the process, also on `kill -9`.

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
                password::restore_echo();
                revault_lockbox_api::temporary::remove_all();
                let _ = emulate_default_handler(signal);
            }
        })
        .context("watching for signals")?;
    Ok(())
}
