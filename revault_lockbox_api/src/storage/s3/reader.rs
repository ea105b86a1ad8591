//! [`ObjectReader`]: positioned reads of one object by ranged GETs, through
//! the range cache (`cache.rs`), with several GETs in flight. An archive
//! is one object or several joined (`joined.rs`); each is read by one of
//! these.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::cache::{RangeCache, Slot, Why};
use super::trace::Trace;
use super::{io_error, S3Error, S3Location, S3Store};
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
pub(super) struct Counters {
    gets: AtomicU64,
    bytes: AtomicU64,
    in_flight: AtomicUsize,
}

/// One object read by byte range; see the module docs of `cache.rs` for how
/// reads are merged and read ahead.
pub(super) struct ObjectReader {
    store: S3Store,
    /// The object read: the archive's key, or one of its parts.
    location: S3Location,
    len: u64,
    /// Every GET asks for this version: an object replaced mid-read fails
    /// instead of mixing two archives.
    etag: Option<String>,
    cache: Mutex<RangeCache>,
    counters: Arc<Counters>,
    /// `LOCKBOX_S3_TRACE`: see `trace.rs`.
    trace: Option<Arc<Trace>>,
}

impl std::fmt::Debug for ObjectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectReader").field("location", &self.location).field("len", &self.len).finish()
    }
}

/// What the opening GET of an object's last bytes returned: its metadata,
/// the range and the bytes.
pub(super) type Tail = (object_store::ObjectMeta, Range<u64>, Bytes);

/// The opening GET of the last [`TAIL_FETCH`] bytes of `location` (a HEAD
/// after it for an empty object, which has no last bytes to ask for).
pub(super) async fn fetch_tail(store: &S3Store, location: &S3Location) -> Result<Tail, S3Error> {
    let path = location.object_path();
    let client = store.object_store();
    let error = |e| S3Error::Request { action: "opening", location: location.clone(), error: Box::new(e) };
    let options = GetOptions { range: Some(GetRange::Suffix(TAIL_FETCH)), ..GetOptions::default() };
    let tail = async {
        let result = client.get_opts(&path, options).await?;
        let (meta, range) = (result.meta.clone(), result.range.clone());
        Ok::<_, object_store::Error>((meta, range, result.bytes().await?))
    };
    let (meta, range, bytes) = match tail.await {
        Ok(tail) => tail,
        Err(e @ object_store::Error::NotFound { .. }) => return Err(error(e)),
        Err(e) => match client.head(&path).await {
            Ok(meta) if meta.size == 0 => (meta, 0..0, Bytes::new()),
            _ => return Err(error(e)),
        },
    };
    if range.end - range.start != bytes.len() as u64 || range.end != meta.size {
        return Err(error(object_store::Error::Generic {
            store: "S3",
            source: format!("asked for the last bytes, got {range:?} of {} bytes", meta.size).into(),
        }));
    }
    Ok((meta, range, bytes))
}

impl ObjectReader {
    /// The object whose last bytes `tail` holds (one GET counted).
    pub(super) fn with_tail(
        store: S3Store,
        location: S3Location,
        tail: Tail,
        trace: Option<Arc<Trace>>,
    ) -> Self {
        let (meta, range, bytes) = tail;
        let reader = ObjectReader::known(store, location, meta.size, meta.e_tag, trace);
        reader.counters.gets.fetch_add(1, Ordering::Relaxed);
        reader.counters.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if !bytes.is_empty() {
            if let Ok(mut cache) = reader.cache.lock() {
                cache.insert(range.start, bytes);
            }
        }
        reader
    }

    /// An object whose length and version a listing gave: nothing fetched
    /// yet.
    pub(super) fn known(
        store: S3Store,
        location: S3Location,
        len: u64,
        etag: Option<String>,
        trace: Option<Arc<Trace>>,
    ) -> Self {
        let cache = RangeCache::new(len, store.requests_in_flight());
        let counters = Arc::new(Counters::default());
        ObjectReader { store, location, len, etag, cache: Mutex::new(cache), counters, trace }
    }

    /// Drops the cached bytes already read (`RangeCache::trim`).
    pub(super) fn trim(&self) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.trim();
        }
    }

    /// The object's length in bytes.
    pub(super) fn size(&self) -> u64 {
        self.len
    }

    /// Requests and bytes so far, the opening GET included.
    pub(super) fn stats(&self) -> S3Stats {
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
        let location = self.location.clone();
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

impl ReadAt for ObjectReader {
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

    fn at_hand(&self, offset: u64, len: u64) -> bool {
        let end = offset.saturating_add(len).min(self.len);
        self.cache.lock().is_ok_and(|cache| cache.holds(offset..end))
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.hint(ranges.iter().map(|&(offset, len)| offset..offset.saturating_add(u64::from(len))));
        }
    }
}
