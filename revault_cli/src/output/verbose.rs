//! `-v` and `-vv`, as tar's: each entry's name as it is stored or
//! restored, or its `tar -tv` line; on stdout, unless stdout carries the
//! archive or JSON (then on stderr).

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use revault_lockbox_api::{Entry, EntryLog, Quoted};

use super::text::{write_name, LongLines};
use crate::dates::Clock;

/// The `-v` lines of one command.
pub struct Verbose {
    to_stderr: bool,
    /// With `-vv`: the long lines' state (their growing column width).
    long: Option<Mutex<LongLines>>,
    /// The first failed write, reported when the command ends.
    failed: Mutex<Option<io::Error>>,
}

impl Verbose {
    /// The log `-v` given `count` times asks for, if any; `to_stderr`
    /// when stdout carries something else.
    pub fn start(count: u8, to_stderr: bool) -> Option<Arc<Verbose>> {
        (count > 0).then(|| {
            let long = (count > 1).then(|| Mutex::new(LongLines::new(Clock::new(false, false))));
            Arc::new(Verbose { to_stderr, long, failed: Mutex::new(None) })
        })
    }

    fn line(&self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if failed.is_some() {
            return;
        }
        let result = if self.to_stderr {
            let mut err = io::stderr().lock();
            write(&mut err).and_then(|()| err.write_all(b"\n"))
        } else {
            let mut out = io::stdout().lock();
            write(&mut out).and_then(|()| out.write_all(b"\n"))
        };
        *failed = result.err();
    }

    /// The first write that failed, as the command's error.
    pub fn finish(&self) -> Result<()> {
        match self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e).context(if self.to_stderr { "writing to stderr" } else { super::STDOUT }),
            None => Ok(()),
        }
    }
}

impl EntryLog for Verbose {
    fn entry(&self, entry: &Entry) {
        match &self.long {
            Some(long) => {
                let mut long = long.lock().unwrap_or_else(|p| p.into_inner());
                self.line(|out| long.write(&mut WriteRef(out), entry, false));
            }
            None => self.line(|out| write_name(&mut WriteRef(out), &entry.path, false)),
        }
    }

    fn removed(&self, path: &[u8]) {
        self.line(|out| write!(out, "removed {}", Quoted::bytes(path)));
    }
}

/// A `&mut dyn Write` as a sized `Write`, for the text helpers.
struct WriteRef<'w>(&'w mut dyn Write);

impl Write for WriteRef<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
