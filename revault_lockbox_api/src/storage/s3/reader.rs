//! [`S3Reader`]: positioned reads of one object by ranged GETs, through the
//! range cache (`cache.rs`), with several GETs in flight.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::cache::{RangeCache, Slot, Why};
use super::trace::Trace;
use super::{io_error, S3Error, S3Store};
use crate::storage::ReadAt;

/// Bytes fetched when the object opens, from its end: the trailer, the
/// index root and, in most archives, the upper index nodes, so that a
/// lookup then needs only a leaf or two.
pub const TAIL_FETCH: u64 = 256 << 10;

/// Requests sent and bytes received, for measurements and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct S3Stats {
    /// GET requests sent (ranged or not).
    pub gets: u64,
    /// Body bytes those GETs returned.
    pub bytes: u64,
}

#[derive(Default)]
struct Counters {
    gets: AtomicU64,
    bytes: AtomicU64,
    in_flight: AtomicUsize,
}

/// One object read by byte range; see the module docs of `cache.rs` for how
/// reads are merged and read ahead.
pub struct S3Reader {
    store: S3Store,
    len: u64,
    /// Every GET asks for this version: an object replaced mid-read fails
    /// instead of mixing two archives.
    etag: Option<String>,
    cache: Mutex<RangeCache>,
    counters: Arc<Counters>,
    /// `LOCKBOX_S3_TRACE`: see `trace.rs`.
    trace: Option<Arc<Trace>>,
}

impl std::fmt::Debug for S3Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Reader").field("location", self.store.location()).field("len", &self.len).finish()
    }
}

impl S3Reader {
    pub(super) fn open(store: S3Store) -> Result<S3Reader, S3Error> {
        let path = store.location().object_path();
        let counters = Arc::new(Counters::default());
        counters.gets.fetch_add(1, Ordering::Relaxed);
        let options = GetOptions { range: Some(GetRange::Suffix(TAIL_FETCH)), ..GetOptions::default() };
        let tail = store.block_on(async {
            let result = store.object_store().get_opts(&path, options).await?;
            let (meta, range) = (result.meta.clone(), result.range.clone());
            Ok::<_, object_store::Error>((meta, range, result.bytes().await?))
        });
        let (meta, range, bytes) = match tail {
            Ok(tail) => tail,
            // An empty object has no last bytes to ask for.
            Err(e @ object_store::Error::NotFound { .. }) => return Err(store.request_error("opening", e)),
            Err(e) => match store.block_on(store.object_store().head(&path)) {
                Ok(meta) if meta.size == 0 => (meta, 0..0, Bytes::new()),
                _ => return Err(store.request_error("opening", e)),
            },
        };
        if range.end - range.start != bytes.len() as u64 || range.end != meta.size {
            let source = object_store::Error::Generic {
                store: "S3",
                source: format!("asked for the last bytes, got {range:?} of {} bytes", meta.size).into(),
            };
            return Err(store.request_error("opening", source));
        }
        counters.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let mut cache = RangeCache::new(meta.size, store.requests_in_flight());
        if !bytes.is_empty() {
            cache.insert(range.start, bytes);
        }
        let trace = Trace::from_env().map(Arc::new);
        Ok(S3Reader { len: meta.size, etag: meta.e_tag, cache: Mutex::new(cache), counters, store, trace })
    }

    /// Requests and bytes so far, the opening GET included.
    pub fn stats(&self) -> S3Stats {
        S3Stats {
            gets: self.counters.gets.load(Ordering::Relaxed),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
        }
    }

    /// Starts the GET of `range` on the store's runtime; its bytes go to
    /// `slot`.
    fn fetch(&self, range: Range<u64>, slot: Arc<Slot>, why: Why) {
        // The task holds the client, not the store: the runtime must never
        // be dropped by one of its own tasks.
        let client = self.store.object_store().clone();
        let location = self.store.location().clone();
        let counters = Arc::clone(&self.counters);
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.etag.clone(),
            ..GetOptions::default()
        };
        counters.gets.fetch_add(1, Ordering::Relaxed);
        let in_flight = counters.in_flight.fetch_add(1, Ordering::Relaxed);
        let trace = self.trace.clone();
        let started = trace.as_ref().map_or(0, |t| t.now());
        self.store.handle().spawn(async move {
            let path = location.object_path();
            let got = match client.get_opts(&path, options).await {
                Ok(result) => result.bytes().await,
                Err(e) => Err(e),
            };
            let result = match got {
                Ok(bytes) if bytes.len() as u64 == range.end - range.start => {
                    counters.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    Ok(bytes)
                }
                Ok(bytes) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("reading {location}: asked for bytes {range:?}, got {}", bytes.len()),
                )),
                Err(object_store::Error::Precondition { .. }) => Err(io_error(S3Error::Changed { location })),
                Err(error) => {
                    Err(io_error(S3Error::Request { action: "reading", location, error: Box::new(error) }))
                }
            };
            counters.in_flight.fetch_sub(1, Ordering::Relaxed);
            if let Some(t) = trace {
                let len = range.end - range.start;
                let why = why.letter();
                t.line(format_args!("get {started} {} {} {len} {in_flight} {why}", t.now(), range.start));
            }
            slot.fill(result);
        });
    }
}

impl ReadAt for S3Reader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&end| end <= self.len);
        let Some(end) = end else { return Err(io::ErrorKind::UnexpectedEof.into()) };
        if buf.is_empty() {
            return Ok(());
        }
        let started = self.trace.as_ref().map(|t| t.now());
        let plan = {
            let mut cache = self.cache.lock().map_err(|_| io::Error::other("range cache poisoned"))?;
            let in_flight = self.counters.in_flight.load(Ordering::Relaxed);
            cache.plan(offset..end, self.store.requests_in_flight().saturating_sub(in_flight))
        };
        for (range, slot, why) in plan.fetches {
            self.fetch(range, slot, why);
        }
        let (pieces, mut missed, mut waited) = (plan.pieces.len(), 0, 0);
        let kind = if plan.hinted { 'h' } else { '-' };
        for (slot, chunk_start, part) in plan.pieces {
            // Only a trace asks whether the bytes are in (a lock per piece).
            let wait_from = self.trace.as_ref().filter(|_| slot.state().is_none()).map(|t| t.now());
            let got = slot.wait();
            if let (Some(t), Some(from)) = (&self.trace, wait_from) {
                missed += 1;
                waited += t.now() - from;
            }
            let bytes = match got {
                Ok(bytes) => bytes,
                Err(e) => {
                    if let Ok(mut cache) = self.cache.lock() {
                        cache.forget(chunk_start);
                    }
                    return Err(e);
                }
            };
            let from = (part.start - chunk_start) as usize;
            let to = (part.end - chunk_start) as usize;
            let dest = (part.start - offset) as usize;
            buf[dest..dest + (to - from)].copy_from_slice(&bytes[from..to]);
        }
        if let (Some(t), Some(started)) = (&self.trace, started) {
            let len = buf.len();
            t.line(format_args!(
                "read {started} {} {offset} {len} {pieces} {missed} {waited} {kind}",
                t.now()
            ));
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.hint(ranges.iter().map(|&(offset, len)| offset..offset.saturating_add(u64::from(len))));
        }
    }
}
