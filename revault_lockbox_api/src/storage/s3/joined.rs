//! [`S3Reader`]: an archive on object storage as one run of bytes, joined
//! from its objects (docs/SCALE.md, "Appends on an object store").
//!
//! An archive is its base object `KEY` followed by one object per session
//! appended since, `KEY.parts/s0000000001`, `KEY.parts/s0000000002`, ...
//! (ten digits, so that a listing returns them in order), each holding
//! exactly the bytes a local append would have written at that offset.
//! Opening sends the GET of the base's last bytes and one LIST of
//! `KEY.parts/` at once, then, when there are parts, the GET of the last
//! part's last bytes; reads then go to the object holding each byte, a
//! range that crosses a boundary being a GET on each side.
//!
//! Other names under the prefix are not the archive's: an upload being
//! staged (`u...`) and generations (`g...`), which no writer makes yet.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use object_store::ObjectStore;

use super::reader::{fetch_tail, ObjectReader};
use super::trace::Trace;
use super::{S3Error, S3Location, S3Stats, S3Store};
use crate::storage::ReadAt;

/// The letter of a session part's name, before its ten-digit number.
const SESSION_PART: char = 's';
/// The letter of a staging object's name (`append.rs`), before 16 random
/// hexadecimal digits.
pub(super) const STAGING_PART: char = 'u';
/// Digits of a part's number.
const PART_DIGITS: usize = 10;
/// A staging object older than this (a day, in seconds) is no writer's in
/// flight.
const STALE_AFTER_SECS: i64 = 24 * 60 * 60;
/// The most parts an archive may have: ten digits' worth, far above any
/// listing anyone would wait for.
const MAX_PARTS: u64 = 9_999_999_999;

/// The name of session part `number` of the archive at `location`.
pub(super) fn part_location(location: &S3Location, number: u64) -> S3Location {
    location.beside(&format!("{SESSION_PART}{number:0width$}", width = PART_DIGITS))
}

/// The number of a session part's name (the last segment of its key), if
/// it is one.
fn part_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(SESSION_PART)?;
    let number = (digits.len() == PART_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u64>().ok())??;
    (1..=MAX_PARTS).contains(&number).then_some(number)
}

/// One archive's objects read as one run of bytes; see the module docs.
pub struct S3Reader {
    store: S3Store,
    /// Each object with the offset of its first byte in the archive, in order.
    objects: Vec<(u64, ObjectReader)>,
    len: u64,
    /// The object read last: when reads move on, its cache drops what was
    /// read, so that memory stays about that of one object's cache however
    /// many objects a run of reads goes through.
    last_read: AtomicUsize,
    /// Staging objects (`append.rs`) the listing found over a day old.
    stale: Vec<S3Location>,
}

impl std::fmt::Debug for S3Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Reader").field("objects", &self.objects.len()).field("len", &self.len).finish()
    }
}

impl S3Reader {
    /// Opens the archive at the store's location: the base's last bytes
    /// and the listing of its parts, two requests sent at once.
    pub(super) fn open(store: S3Store) -> Result<S3Reader, S3Error> {
        let base = store.location().clone();
        let prefix = base.parts_prefix().object_path();
        let (tail, listed) = store.block_on(async {
            let list = store.object_store().list_with_delimiter(Some(&prefix));
            tokio::join!(fetch_tail(&store, &base), list)
        });
        let tail = tail?;
        let listed = listed.map_err(|e| S3Error::Request {
            action: "listing the parts of",
            location: base.clone(),
            error: Box::new(e),
        })?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let day_ago = now.as_secs() as i64 - STALE_AFTER_SECS;
        let mut parts = Vec::new();
        let mut stale = Vec::new();
        for meta in listed.objects {
            let Some(name) = meta.location.filename() else { continue };
            if let Some(number) = part_number(name) {
                parts.push((number, meta));
            } else if name.starts_with(STAGING_PART) && meta.last_modified.timestamp() < day_ago {
                stale.push(base.beside(name));
            }
        }
        parts.sort_by_key(|(number, _)| *number);
        let trace = Trace::from_env().map(Arc::new);
        let base_reader = ObjectReader::with_tail(store.clone(), base.clone(), tail, trace.clone());
        let mut len = base_reader.size();
        let mut objects = vec![(0, base_reader)];
        let count = parts.len() as u64;
        for (expected, (number, meta)) in (1..).zip(parts) {
            let location = part_location(&base, number);
            if number != expected || meta.size == 0 {
                let what = if number != expected { "missing" } else { "empty" };
                let part = part_location(&base, if number != expected { expected } else { number });
                return Err(S3Error::Parts {
                    location: base,
                    reason: format!("part {} is {what}", part.key),
                });
            }
            // The last part's tail, as the base's: the last trailer, the
            // root, the header copy (FORMAT.md §6.1 step 4) in one GET
            // rather than one GET for each read back from its end.
            let reader = if expected == count {
                let tail = store.block_on(fetch_tail(&store, &location))?;
                if tail.0.size != meta.size || tail.0.e_tag != meta.e_tag {
                    return Err(S3Error::Changed { location });
                }
                ObjectReader::with_tail(store.clone(), location, tail, trace.clone())
            } else {
                ObjectReader::known(store.clone(), location, meta.size, meta.e_tag, trace.clone())
            };
            objects.push((len, reader));
            len += meta.size;
        }
        Ok(S3Reader { store, objects, len, last_read: AtomicUsize::new(0), stale })
    }

    /// The client this archive is read through.
    pub fn store(&self) -> &S3Store {
        &self.store
    }

    /// Session parts after the base: the next append creates part
    /// `parts() + 1`.
    pub fn parts(&self) -> u64 {
        self.objects.len() as u64 - 1
    }

    /// Deletes the staging objects over a day old that the opening's
    /// listing found (left by writers that died between staging a large
    /// session and committing it), best effort.
    pub fn delete_stale_staging(&self) {
        for location in &self.stale {
            self.store.delete(location);
        }
    }

    /// Requests and bytes so far, the opening GET included (the LIST is
    /// not a GET and is not counted).
    pub fn stats(&self) -> S3Stats {
        self.objects.iter().fold(S3Stats::default(), |sum, (_, object)| {
            let s = object.stats();
            S3Stats { gets: sum.gets + s.gets, bytes: sum.bytes + s.bytes }
        })
    }

    /// The objects holding `offset..offset + len`, each with the range
    /// within it and where its bytes go in the caller's buffer, each after
    /// its index.
    fn pieces(
        &self,
        offset: u64,
        len: u64,
    ) -> impl Iterator<Item = (usize, &ObjectReader, u64, u64, usize)> + '_ {
        let end = offset + len;
        let first = self.objects.partition_point(|(start, _)| *start <= offset).saturating_sub(1);
        self.objects[first..].iter().enumerate().take_while(move |(_, (start, _))| *start < end).filter_map(
            move |(i, (start, object))| {
                let from = offset.max(*start);
                let to = end.min(start + object.size());
                (from < to).then(|| (first + i, object, from - start, to - from, (from - offset) as usize))
            },
        )
    }
}

impl ReadAt for S3Reader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&end| end <= self.len);
        if end.is_none() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        for (index, object, at, len, dest) in self.pieces(offset, buf.len() as u64) {
            let before = self.last_read.swap(index, Ordering::Relaxed);
            if before != index {
                self.objects[before].1.trim();
            }
            object.read_exact_at(&mut buf[dest..dest + len as usize], at)?;
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn at_hand(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.len)
            && self.pieces(offset, len).all(|(_, object, at, len, _)| object.at_hand(at, len))
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        if let [(_, object)] = &self.objects[..] {
            return object.will_read(ranges);
        }
        for (start, object) in &self.objects {
            let end = start + object.size();
            let mine: Vec<(u64, u32)> = ranges
                .iter()
                .filter_map(|&(offset, len)| {
                    let from = offset.max(*start);
                    let to = (offset + u64::from(len)).min(end);
                    (from < to).then(|| (from - start, (to - from) as u32))
                })
                .collect();
            if !mine.is_empty() {
                object.will_read(&mine);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_sort_as_their_numbers_and_nothing_else_is_one() {
        let base = S3Location::parse("s3://bucket/dir/home.lbox").unwrap();
        assert_eq!(part_location(&base, 7).key, "dir/home.lbox.parts/s0000000007");
        assert_eq!(part_number("s0000000007"), Some(7));
        for other in ["s0000000000", "s000000007", "s00000000070", "g0000000001", "u1234", "s000000000x"] {
            assert_eq!(part_number(other), None, "{other}");
        }
        let mut names: Vec<String> = [12, 3, 100, 9].iter().map(|&n| part_location(&base, n).key).collect();
        names.sort();
        let numbers: Vec<u64> =
            names.iter().map(|n| part_number(n.rsplit('/').next().unwrap()).unwrap()).collect();
        assert_eq!(numbers, [3, 9, 12, 100]);
    }
}
