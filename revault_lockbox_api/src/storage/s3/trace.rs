//! An optional trace of one reader's GETs and reads, for finding where
//! reads wait: `LOCKBOX_S3_TRACE=FILE` appends one line per event to FILE
//! (times in microseconds since the archive was opened; offsets within
//! the object read, the base or one of its parts):
//!
//! ```text
//! get START END OFFSET LEN IN_FLIGHT_AT_START WHY
//! read START END OFFSET LEN PIECES MISSED WAIT_US KIND
//! ```
//!
//! `WHY`: `r` a read needed it, `a` read-ahead, `h` a hint. `KIND`: `h`
//! for a read of a hinted range (an index leaf), `-` otherwise.
//! `MISSED`: pieces of the read whose bytes had not arrived when it looked
//! (a read with none is a hit); `WAIT_US`: time it spent waiting for them.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

/// The environment variable naming the trace file.
pub(super) const TRACE_VAR: &str = "LOCKBOX_S3_TRACE";

pub(super) struct Trace {
    origin: Instant,
    out: Mutex<File>,
}

impl Trace {
    /// The trace asked for by the environment, if any (a file that cannot
    /// be opened means no trace: it is a debugging aid, not an output).
    pub(super) fn from_env() -> Option<Trace> {
        let path = std::env::var_os(TRACE_VAR)?;
        let file = OpenOptions::new().create(true).append(true).open(path).ok()?;
        Some(Trace { origin: Instant::now(), out: Mutex::new(file) })
    }

    /// Microseconds since the trace started.
    pub(super) fn now(&self) -> u64 {
        self.origin.elapsed().as_micros() as u64
    }

    pub(super) fn line(&self, args: std::fmt::Arguments<'_>) {
        // One write a line, unbuffered: the trace is whole even if the
        // process exits without dropping the reader.
        let text = format!("{args}\n");
        if let Ok(mut out) = self.out.lock() {
            let _ = out.write_all(text.as_bytes());
        }
    }
}
