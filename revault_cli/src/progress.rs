//! A progress bar on stderr, fed by polling the library's [`Progress`]
//! counters from a thread: the library stays free of terminal code and pays
//! only for a few relaxed atomic adds. Every job shows the same things:
//! elapsed time, bytes (of the total, once known), throughput, ETA and
//! entries. A command makes its counters before it opens the archive and
//! starts the display after (a password prompt must not share the line
//! with a spinner).
//!
//! Before a job has entries to count, a stage shows the same line with
//! what it does instead: opening an archive (the unlock and the reads of
//! its header, trailer and root: seconds on `s3://`, and before a mount),
//! counted by [`CountedReads`]; a create to `s3://` says when it is
//! uploading its last parts. An age plugin that talks to the user while a
//! bar is drawn does so with the bar out of the way ([`suspended`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::Progress;

use crate::output;

const POLL: Duration = Duration::from_millis(100);

/// The bar on screen, if any: what must not share its line (an age
/// plugin's message or question, asked in the middle of opening) is
/// written with it out of the way ([`suspended`]).
static ON_SCREEN: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn on_screen() -> std::sync::MutexGuard<'static, Option<ProgressBar>> {
    ON_SCREEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` (which writes to the terminal) with the bar on screen, if
/// any, cleared first and drawn again after.
pub fn suspended<T>(f: impl FnOnce() -> T) -> T {
    let bar = on_screen().clone();
    match bar {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// A running display; dropping it stops and clears the bar.
pub struct Display {
    stop: Option<mpsc::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
    /// Said after the entries while a job finishes ("uploading …").
    note: Arc<Mutex<Option<String>>>,
}

/// Whether to draw at all: only on a terminal and without `--quiet`.
fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

impl Display {
    /// Starts drawing `counters`. `total`, when given, runs on a thread of
    /// its own (it may walk the input tree) and returns the expected
    /// content bytes; without it, the library sets them when it knows
    /// them. Until a total is known, a spinner shows.
    pub fn start(counters: Arc<Progress>, total: Option<impl FnOnce() -> u64 + Send + 'static>) -> Display {
        Display::drawing(counters, total, None)
    }

    /// A stage (see the module docs): `what` in place of the entries, and
    /// cleared when it ends, for the job's own bar to follow.
    fn stage(counters: Arc<Progress>, what: String) -> Display {
        Display::drawing(counters, LIBRARY_TOTAL, Some(what))
    }

    fn drawing(
        counters: Arc<Progress>,
        total: Option<impl FnOnce() -> u64 + Send + 'static>,
        stage: Option<String>,
    ) -> Display {
        let (tx, rx) = mpsc::channel::<bool>();
        let note = Arc::new(Mutex::new(None::<String>));
        let noted = Arc::clone(&note);
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{elapsed:>4} {spinner} {bytes} {binary_bytes_per_sec} {msg}")
                .expect("valid template"),
        );
        if let Some(what) = &stage {
            bar.set_message(what.clone());
        }
        // Drawn and on screen before this returns, so that whatever asks
        // on the terminal next (an age plugin's PIN) comes after it and
        // finds it to step aside from.
        bar.tick();
        bar.enable_steady_tick(POLL);
        *on_screen() = Some(bar.clone());
        let thread = std::thread::spawn(move || {
            let mut has_total = false;
            let mut update = |bar: &ProgressBar| {
                let total = counters.total_bytes.load(Ordering::Relaxed);
                if !has_total && total > 0 {
                    bar.set_style(bar_style());
                    bar.set_length(total);
                    has_total = true;
                }
                bar.set_position(counters.bytes_in.load(Ordering::Relaxed));
                let entries = counters.entries.load(Ordering::Relaxed);
                // One vocabulary for every job: entries, bytes, throughput, ETA.
                let mut message = match &stage {
                    Some(what) => what.clone(),
                    None => output::count(entries, "entry", "entries"),
                };
                if let Some(note) = noted.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
                    message = format!("{message}, {note}");
                }
                bar.set_message(message);
            };
            // The total may take a while (a walk of the input tree): compute
            // it aside, so that stopping never waits for it.
            if let Some(total) = total {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || counters.total_bytes.store(total(), Ordering::Relaxed));
            }
            let success = loop {
                update(&bar);
                match rx.recv_timeout(POLL) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    Ok(success) => break success,
                    Err(RecvTimeoutError::Disconnected) => break false,
                }
            };
            on_screen().take();
            if success && stage.is_none() {
                update(&bar);
                bar.abandon();
                // The last frame ends its line: what follows (the shell's
                // prompt, a report) starts on a line of its own.
                if !bar.is_hidden() {
                    eprintln!();
                }
            } else {
                bar.finish_and_clear();
            }
        });
        Display { stop: Some(tx), thread: Some(thread), note }
    }

    /// Says `note` after the entries from now on ("uploading s3://…").
    pub fn note(&self, note: String) {
        *self.note.lock().unwrap_or_else(|e| e.into_inner()) = Some(note);
    }

    /// Stops and leaves the final state of the bar on screen.
    pub fn finish(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        self.join();
    }

    fn join(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.join();
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{elapsed:>4} {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
    )
    .expect("valid template")
}

/// Starts a display when [`wanted`].
pub fn maybe_start(
    quiet: bool,
    total: impl FnOnce() -> u64 + Send + 'static,
) -> Option<(Arc<Progress>, Display)> {
    let counters = counters(quiet)?;
    let display = Display::start(Arc::clone(&counters), Some(total));
    Some((counters, display))
}

/// Counters for a job's library call when a display is [`wanted`]; the
/// display starts later, with [`show`].
pub fn counters(quiet: bool) -> Option<Arc<Progress>> {
    wanted(quiet).then(|| Arc::new(Progress::default()))
}

/// A display of `counters` (made by [`counters`]), whose total the library
/// sets, or `total` computes aside.
pub fn show(
    counters: Option<&Arc<Progress>>,
    total: Option<impl FnOnce() -> u64 + Send + 'static>,
) -> Option<Display> {
    counters.map(|c| Display::start(Arc::clone(c), total))
}

/// Runs `job` with a display of `counters` (when there are any; the
/// library sets the total) until it returns; its last state stays on
/// screen after a success, none after a failure.
pub fn during<T, E>(counters: Option<&Arc<Progress>>, job: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let display = show(counters, LIBRARY_TOTAL);
    let result = job();
    if let (Some(display), Ok(_)) = (display, &result) {
        display.finish();
    }
    result
}

/// When an archive's opening is shown as a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// Never (`-q`).
    Quiet,
    /// For an archive on `s3://`, where opening takes round trips.
    Remote,
    /// Always (`mount`, whose startup is all opening).
    Shown,
}

impl Opening {
    /// `Remote`, or `Quiet` with `-q`.
    pub fn unless(quiet: bool) -> Opening {
        if quiet {
            Opening::Quiet
        } else {
            Opening::Remote
        }
    }

    /// Counters for opening the archive `name`, when this stage is drawn:
    /// on a terminal, not `Quiet`, `Remote` only for an object.
    pub fn counters(self, remote: bool) -> Option<Arc<Progress>> {
        let shown = match self {
            Opening::Quiet => false,
            Opening::Remote => remote,
            Opening::Shown => true,
        };
        counters(!shown)
    }
}

/// The stage "opening NAME" of `counters` (from [`Opening::counters`]),
/// until it is dropped.
pub fn opening(counters: Option<&Arc<Progress>>, name: &str) -> Option<Display> {
    counters.map(|c| Display::stage(Arc::clone(c), format!("opening {name}")))
}

/// An archive's bytes, each read counted on `counters.bytes_in` (the
/// opening stage's bytes and throughput).
pub struct CountedReads {
    pub inner: Arc<dyn ReadAt>,
    pub counters: Arc<Progress>,
}

impl ReadAt for CountedReads {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        self.counters.bytes_in.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        self.inner.will_read(ranges);
    }
    fn at_hand(&self, offset: u64, len: u64) -> bool {
        self.inner.at_hand(offset, len)
    }

    fn read_unit_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_unit_at(buf, offset)?;
        self.counters.bytes_in.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn recheck(&self, offset: u64, len: u64) -> std::io::Result<bool> {
        self.inner.recheck(offset, len)
    }
}

/// No total from the caller: the library sets it.
pub const LIBRARY_TOTAL: Option<fn() -> u64> = None;

/// Total size of the regular files under `roots`, for the progress bar.
/// Unreadable parts count as nothing: the command itself reports them.
/// `follow` (`-h`): through symbolic links, each directory once (a loop
/// must not keep the estimate going).
pub fn input_bytes(roots: &[PathBuf], follow: bool) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut stack: Vec<PathBuf> = roots.to_vec();
    let mut seen_dirs = std::collections::HashSet::new();
    let mut total = 0u64;
    while let Some(path) = stack.pop() {
        let md = if follow { std::fs::metadata(&path) } else { std::fs::symlink_metadata(&path) };
        let Ok(md) = md else { continue };
        if md.is_file() {
            total += md.len();
        } else if md.is_dir() && (!follow || seen_dirs.insert((md.dev(), md.ino()))) {
            if let Ok(dir) = std::fs::read_dir(&path) {
                stack.extend(dir.filter_map(|d| d.ok().map(|d| d.path())));
            }
        }
    }
    total
}
