//! The chunked write path's digest stage: the keyed ids of a file's
//! chunks and the file's SHA-256, on a thread of their own, so that the
//! thread reading the file only reads it, finds the cut points and stores
//! what comes back. Both hashes must see every byte of the file, reused
//! chunks too, so the page workers (which see only the new chunks' bytes)
//! cannot run them; on the reading thread they made it the bottleneck of
//! a large file's create (SHA-256 alone is about 0.7 s of one core a GiB
//! here), with the sealers waiting on it.
//!
//! One worker: a file's SHA-256 is one chain, so its buffers are hashed in
//! order, and one thread keeps that order with no hand-offs. (The gear
//! scan, also one chain, stays on the reading thread: moved here too, the
//! reading thread read into buffers the other core had just read, and the
//! kernel's copies cost more than the scan saved: docs/BENCHMARKS.md.)

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use super::ordered::OrderedWorkers;
use crate::chunk::{ChunkIdHasher, ChunkKeys};
use crate::error::Result;
use crate::format::CHUNK_ID_LEN;

/// A buffer of one file's bytes for the digest worker.
pub(crate) struct DigestJob {
    /// The file's bytes from the start of a chunk on.
    pub(crate) buf: Vec<u8>,
    /// Where each whole chunk in `buf` ends (the first starts at 0, each
    /// next one where the one before ends).
    pub(crate) ends: Vec<usize>,
    /// The bytes of `buf` the file's SHA-256 has not seen yet.
    pub(crate) new: Range<usize>,
    /// Room for the ids (emptied first): a recycled list.
    pub(crate) ids: Vec<[u8; CHUNK_ID_LEN]>,
    /// The file's first buffer: its SHA-256 starts afresh.
    pub(crate) first: bool,
    /// The file's last buffer: its SHA-256 is finished.
    pub(crate) last: bool,
}

/// A buffer back from the digest worker.
pub(crate) struct Digested {
    pub(crate) buf: Vec<u8>,
    pub(crate) ends: Vec<usize>,
    /// The keyed id of each chunk `ends` closes.
    pub(crate) ids: Vec<[u8; CHUNK_ID_LEN]>,
    /// The file's SHA-256, with its last buffer.
    pub(crate) sha256: Option<[u8; 32]>,
}

/// The digest worker, and the buffers that go round it.
pub(crate) struct Digester {
    worker: OrderedWorkers<DigestJob, Digested>,
    keys: Arc<ChunkKeys>,
    free: Vec<Vec<u8>>,
    /// Emptied lists of ends and ids, so that a buffer allocates nothing.
    free_lists: Vec<(Vec<usize>, Vec<[u8; CHUNK_ID_LEN]>)>,
}

/// Names the chunks of `job` and runs its new bytes through `sha`, the
/// file's SHA-256 (started afresh with its first buffer, finished with its
/// last).
fn digest(keys: &ChunkKeys, sha: &mut Sha256, job: DigestJob) -> Digested {
    let mut hasher = ChunkIdHasher::new(keys);
    let mut start = 0;
    let mut ids = job.ids;
    ids.clear();
    ids.extend(job.ends.iter().map(|&end| {
        hasher.update(&job.buf[start..end]);
        start = end;
        *hasher.finish_chunk().as_bytes()
    }));
    if job.first {
        sha.reset();
    }
    sha.update(&job.buf[job.new]);
    let sha256 = job.last.then(|| sha.finalize_reset().into());
    Digested { buf: job.buf, ends: job.ends, ids, sha256 }
}

impl Digester {
    /// Starts the worker, with room for `depth` buffers in flight.
    pub(crate) fn new(keys: Arc<ChunkKeys>, depth: usize) -> Result<Digester> {
        // Only the one worker ever takes it: the lock is never contended.
        let sha = Mutex::new(Sha256::new());
        let shared = Arc::clone(&keys);
        let worker = OrderedWorkers::new("lockbox-digest", 1, depth, move |job: DigestJob| {
            digest(&shared, &mut sha.lock().unwrap_or_else(PoisonError::into_inner), job)
        })?;
        Ok(Digester { worker, keys, free: Vec::new(), free_lists: Vec::new() })
    }

    /// Digests a file shorter than one read, its one buffer, on this
    /// thread: handing it over would only add a wait (nothing else is in
    /// flight).
    pub(crate) fn digest_here(&self, job: DigestJob) -> Digested {
        assert!(job.first && job.last && self.worker.in_flight() == 0, "a whole file, alone");
        digest(&self.keys, &mut Sha256::new(), job)
    }

    /// A buffer of `len` bytes, recycled when one is free (its bytes are
    /// room, not content).
    pub(crate) fn buffer(&mut self, len: usize) -> Vec<u8> {
        let mut buf = self.free.pop().unwrap_or_default();
        buf.resize(len, 0);
        buf
    }

    /// Empty lists for a job's chunk ends and ids, recycled when some are
    /// free.
    pub(crate) fn lists(&mut self) -> (Vec<usize>, Vec<[u8; CHUNK_ID_LEN]>) {
        self.free_lists.pop().unwrap_or_default()
    }

    /// Gives a digested buffer and its lists back for later reads.
    pub(crate) fn recycle(&mut self, done: Digested) {
        let Digested { buf, mut ends, mut ids, .. } = done;
        self.free.push(buf);
        ends.clear();
        ids.clear();
        self.free_lists.push((ends, ids));
    }

    /// Whether another buffer fits in flight.
    pub(crate) fn has_room(&self) -> bool {
        self.worker.has_room()
    }

    /// Queues `job` behind the buffers in flight; the caller keeps at most
    /// `depth` in flight.
    pub(crate) fn submit(&mut self, job: DigestJob) {
        self.worker.submit(job);
    }

    /// The oldest buffer in flight, digested; `None` when none is.
    pub(crate) fn pop(&mut self) -> Option<Digested> {
        self.worker.pop()
    }

    /// Takes back every buffer in flight, unread (a file that failed).
    pub(crate) fn discard(&mut self) {
        while let Some(done) = self.pop() {
            self.recycle(done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `file` through `digester` as the writer does: buffers of
    /// `new_len` new bytes after the open chunk's, chunks of `chunk_len`;
    /// returns the ids and the SHA-256, or nothing when `abandon` stops
    /// half way.
    fn digest_file(
        digester: &mut Digester,
        file: &[u8],
        new_len: usize,
        chunk_len: usize,
        abandon: bool,
    ) -> Option<(Vec<[u8; CHUNK_ID_LEN]>, [u8; 32])> {
        let (mut ids, mut sha) = (Vec::new(), None);
        let (mut at, mut carry, mut first) = (0, 0, true);
        loop {
            let new = (file.len() - at).min(new_len);
            let mut buf = digester.buffer(carry + new);
            buf.copy_from_slice(&file[at - carry..at + new]);
            let last = new == 0;
            let whole = if last { buf.len() } else { buf.len() / chunk_len * chunk_len };
            let (mut ends, room) = digester.lists();
            ends.extend((1..=whole.div_ceil(chunk_len)).map(|k| (k * chunk_len).min(whole)));
            if !digester.has_room() {
                let done = digester.pop().unwrap();
                ids.extend_from_slice(&done.ids);
                digester.recycle(done);
            }
            digester.submit(DigestJob { buf, ends, new: carry..carry + new, ids: room, first, last });
            if abandon && at > file.len() / 2 {
                digester.discard();
                return None;
            }
            if last {
                break;
            }
            (at, carry, first) = (at + new, carry + new - whole, false);
        }
        while let Some(done) = digester.pop() {
            ids.extend_from_slice(&done.ids);
            sha = sha.or(done.sha256);
            digester.recycle(done);
        }
        Some((ids, sha.expect("the last buffer's")))
    }

    #[test]
    fn ids_and_the_file_hash_match_one_pass_over_the_file() {
        let keys = Arc::new(ChunkKeys::from_key_bytes(&[5; 32], &[6; 16]));
        let mut file = vec![0u8; 200_000];
        blake3::Hasher::new().update(b"digest").finalize_xof().fill(&mut file);
        let mut digester = Digester::new(Arc::clone(&keys), 2).unwrap();
        // A file abandoned half way first: the next file's hash must not
        // see its bytes.
        assert!(digest_file(&mut digester, &file[..150_000], 70_000, 30_000, true).is_none());
        let (ids, sha) = digest_file(&mut digester, &file, 70_000, 30_000, false).unwrap();
        let want: Vec<_> = file.chunks(30_000).map(|c| *ChunkIdHasher::id_of(&keys, c).as_bytes()).collect();
        assert_eq!(ids, want);
        assert_eq!(sha, <[u8; 32]>::from(Sha256::digest(&file)));
    }
}
