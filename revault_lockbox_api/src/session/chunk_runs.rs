//! Where a session's chunk entries go once its memory for them is full:
//! sorted runs in an unnamed temporary file (`$TMPDIR`), sealed a block at
//! a time under a key that lives only in memory ([`SpoolCipher`]), since
//! the offsets and lengths are the chunk boundaries the sealed pages hide.
//!
//! A run is searched through the first id of each of its blocks (kept in
//! memory: a 56-byte record per 85 entries) and one block read; runs of
//! one size are merged into a larger one when `FAN_IN` of them gather, so
//! a search reads a few blocks however many chunks the session stored.
//! (Merged runs' blocks stay in the file, dead, until the session ends:
//! it holds each entry about once per merge level, 44 bytes and a tag.) Most
//! searches are for new chunks, found nowhere: a filter of fixed size over
//! every spilled id answers those without a read.

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::crypto::SpoolCipher;
use crate::format::{ChunkEntry, ChunkKey, CHUNK_ENTRY_LEN, CHUNK_KEY_LEN, TAG_LEN};

/// Entries a sealed block holds: about 4 KiB, one read a search.
const BLOCK_ENTRIES: usize = 85;

/// Runs of one size merged into one when this many gather.
const FAN_IN: usize = 4;

/// Plaintext bytes written to the file at once.
const WRITE_LEN: usize = 64 << 10;

/// Bits of the filter: 8 MiB, made at the first spill. Three bits an id
/// send a search for a new chunk to disk 0.44 % of the time at 4 million
/// spilled chunks (1 TiB of new data at the default sizes), 13 % at 16
/// million: the filter never errs the other way, it only saves reads.
const FILTER_BITS: usize = 1 << 26;
const FILTER_PROBES: usize = 3;

/// Sorted runs of chunk entries, each id in at most one run.
pub(super) struct SpilledRuns {
    store: Store,
    tail: Tail,
    /// Oldest first; levels never rise along the list.
    runs: Vec<Run>,
    filter: Filter,
}

/// Which ids may be spilled: a Bloom filter whose bit positions are bytes
/// of the id itself (keyed BLAKE3 outputs are uniform already).
struct Filter(Vec<u64>);

impl Filter {
    fn positions(key: &ChunkKey) -> impl Iterator<Item = usize> {
        // Bytes 8..16 (the first eight place the key in `SessionChunks`'
        // table), as two hashes combined for each probe (Kirsch and
        // Mitzenmacher's double hashing).
        let h = u64::from_le_bytes(key[8..16].try_into().expect("eight bytes"));
        let (a, b) = (h as u32 as usize, (h >> 32) as usize | 1);
        (0..FILTER_PROBES).map(move |i| a.wrapping_add(i.wrapping_mul(b)) & (FILTER_BITS - 1))
    }

    fn insert(&mut self, id: &ChunkKey) {
        for bit in Filter::positions(id) {
            self.0[bit / 64] |= 1 << (bit % 64);
        }
    }

    fn may_hold(&self, id: &ChunkKey) -> bool {
        Filter::positions(id).all(|bit| self.0[bit / 64] & (1 << (bit % 64)) != 0)
    }
}

/// The sealed file: blocks are written once and read any number of times.
struct Store {
    file: File,
    cipher: SpoolCipher,
}

/// Where the next block goes.
struct Tail {
    /// Bytes written; the next block goes there.
    len: u64,
    /// The next block's number, its nonce under the store's cipher.
    next_block: u64,
}

struct Run {
    /// How many merges made it: a run of level `l` holds about
    /// `FAN_IN^l` spills.
    level: u32,
    blocks: Vec<Block>,
}

#[derive(Clone, Copy)]
struct Block {
    first: ChunkKey,
    offset: u64,
    number: u64,
    count: u32,
}

impl SpilledRuns {
    pub(super) fn new() -> io::Result<SpilledRuns> {
        Ok(SpilledRuns {
            store: Store { file: tempfile::tempfile()?, cipher: SpoolCipher::random()? },
            tail: Tail { len: 0, next_block: 0 },
            runs: Vec::new(),
            filter: Filter(vec![0; FILTER_BITS / 64]),
        })
    }

    /// Adds a run of `entries`, sorted by id and in no run yet; then
    /// merges the newest runs while `FAN_IN` of one level gather.
    pub(super) fn add(&mut self, entries: &[ChunkEntry]) -> io::Result<()> {
        for entry in entries {
            self.filter.insert(&entry.key);
        }
        let blocks = self.tail.write_run(&self.store, entries.iter().map(|e| Ok(*e)))?;
        self.runs.push(Run { level: 0, blocks });
        while let Some(level) = self.full_level() {
            let merged = self.runs.split_off(self.runs.len() - FAN_IN);
            let readers = merged.iter().map(|run| RunReader::of_run(&self.store, run)).collect();
            let blocks = self.tail.write_run(&self.store, Merge::new(readers))?;
            self.runs.push(Run { level: level + 1, blocks });
        }
        Ok(())
    }

    /// The level of the last `FAN_IN` runs, if they share one.
    fn full_level(&self) -> Option<u32> {
        let last = &self.runs[self.runs.len().checked_sub(FAN_IN)?..];
        last.iter().all(|run| run.level == last[0].level).then_some(last[0].level)
    }

    /// Where the chunk `id` is, if a run holds it: one block read per run.
    pub(super) fn find(&self, id: &ChunkKey) -> io::Result<Option<ChunkEntry>> {
        if !self.filter.may_hold(id) {
            return Ok(None);
        }
        let mut buf = Vec::new();
        for run in &self.runs {
            let Some(at) = run.blocks.partition_point(|b| b.first <= *id).checked_sub(1) else { continue };
            let entries = self.store.read_block(&run.blocks[at], &mut buf)?;
            if let Ok(i) = entries.binary_search_by(|e| e.key.cmp(id)) {
                return Ok(Some(entries[i]));
            }
        }
        Ok(None)
    }

    /// Every entry of every run, merged in id order, with the sorted
    /// `newest` last (of equal ids, the oldest run's is kept).
    pub(super) fn merged_with<'a>(
        &'a self,
        newest: &'a [ChunkEntry],
    ) -> impl Iterator<Item = io::Result<ChunkEntry>> + 'a {
        let mut readers: Vec<RunReader<'a>> =
            self.runs.iter().map(|run| RunReader::of_run(&self.store, run)).collect();
        readers.push(RunReader { store: None, blocks: &[], held: Cow::Borrowed(newest), at: 0 });
        Merge::new(readers)
    }
}

impl Tail {
    /// Writes `entries` (sorted) as a run of sealed blocks; returns them.
    fn write_run(
        &mut self,
        store: &Store,
        entries: impl Iterator<Item = io::Result<ChunkEntry>>,
    ) -> io::Result<Vec<Block>> {
        let mut blocks = Vec::new();
        let mut pending: Vec<u8> = Vec::with_capacity(WRITE_LEN + BLOCK_LEN);
        let mut block: Vec<u8> = Vec::with_capacity(BLOCK_LEN);
        let mut count = 0u32;
        let mut first = [0; CHUNK_KEY_LEN];
        let mut entries = entries.peekable();
        while let Some(entry) = entries.next() {
            let entry = entry?;
            if count == 0 {
                first = entry.key;
            }
            block.extend_from_slice(&entry.key);
            block.extend_from_slice(&entry.offset.to_le_bytes());
            block.extend_from_slice(&entry.len.to_le_bytes());
            count += 1;
            let last = entries.peek().is_none();
            if count as usize == BLOCK_ENTRIES || last {
                let offset = self.len + pending.len() as u64;
                blocks.push(Block { first, offset, number: self.next_block, count });
                store.cipher.seal(self.next_block, &mut block);
                self.next_block += 1;
                pending.extend_from_slice(&block);
                block.clear();
                count = 0;
            }
            if pending.len() >= WRITE_LEN || last {
                store.file.write_all_at(&pending, self.len)?;
                self.len += pending.len() as u64;
                pending.clear();
            }
        }
        Ok(blocks)
    }
}

impl Store {
    /// Reads and opens `block` through `buf`; returns its entries.
    fn read_block(&self, block: &Block, buf: &mut Vec<u8>) -> io::Result<Vec<ChunkEntry>> {
        buf.resize(block.count as usize * CHUNK_ENTRY_LEN + TAG_LEN, 0);
        self.file.read_exact_at(buf, block.offset)?;
        self.cipher
            .open(block.number, buf)
            .map_err(|_| io::Error::other("the temporary chunk index file was changed while in use"))?;
        Ok(buf.chunks_exact(CHUNK_ENTRY_LEN).map(decode_entry).collect())
    }
}

/// Bytes of a sealed block at most.
const BLOCK_LEN: usize = BLOCK_ENTRIES * CHUNK_ENTRY_LEN + TAG_LEN;

fn decode_entry(bytes: &[u8]) -> ChunkEntry {
    let (id, rest) = bytes.split_at(CHUNK_KEY_LEN);
    let (offset, len) = rest.split_at(8);
    ChunkEntry {
        key: id.try_into().expect("an entry's key"),
        offset: u64::from_le_bytes(offset.try_into().expect("an entry's offset")),
        len: u32::from_le_bytes(len.try_into().expect("an entry's length")),
    }
}

/// One run read in order, a block at a time (or entries in memory).
struct RunReader<'a> {
    store: Option<&'a Store>,
    blocks: &'a [Block],
    held: Cow<'a, [ChunkEntry]>,
    at: usize,
}

impl<'a> RunReader<'a> {
    fn of_run(store: &'a Store, run: &'a Run) -> RunReader<'a> {
        RunReader { store: Some(store), blocks: &run.blocks, held: Cow::Borrowed(&[]), at: 0 }
    }

    fn peek(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<ChunkEntry>> {
        while self.at == self.held.len() {
            let (Some(store), Some((block, rest))) = (self.store, self.blocks.split_first()) else {
                return Ok(None);
            };
            self.held = Cow::Owned(store.read_block(block, buf)?);
            self.blocks = rest;
            self.at = 0;
        }
        Ok(Some(self.held[self.at]))
    }
}

/// The entries of several runs in id order, each id once: of equal ids
/// the first run's (the oldest: the first place noted).
struct Merge<'a> {
    readers: Vec<RunReader<'a>>,
    last: Option<ChunkKey>,
    buf: Vec<u8>,
}

impl<'a> Merge<'a> {
    fn new(readers: Vec<RunReader<'a>>) -> Merge<'a> {
        Merge { readers, last: None, buf: Vec::new() }
    }
}

impl Iterator for Merge<'_> {
    type Item = io::Result<ChunkEntry>;

    fn next(&mut self) -> Option<io::Result<ChunkEntry>> {
        loop {
            let mut pick: Option<(usize, ChunkEntry)> = None;
            for (i, reader) in self.readers.iter_mut().enumerate() {
                match reader.peek(&mut self.buf) {
                    Err(e) => return Some(Err(e)),
                    Ok(Some(e)) if pick.is_none_or(|(_, p)| e.key < p.key) => pick = Some((i, e)),
                    Ok(_) => {}
                }
            }
            let (i, entry) = pick?;
            self.readers[i].at += 1;
            if self.last.replace(entry.key) != Some(entry.key) {
                return Some(Ok(entry));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u32) -> ChunkEntry {
        // Ids spread over the id space, in no order of `n`.
        ChunkEntry {
            key: crate::format::chunk_key(blake3::hash(&n.to_le_bytes()).as_bytes()),
            offset: u64::from(n) << 8,
            len: n + 1,
        }
    }

    #[test]
    fn runs_merged_by_level_find_every_entry_and_merge_in_id_order() {
        const RUN: u32 = 200;
        let mut runs = SpilledRuns::new().unwrap();
        // 21 spills: one run of 16 (two merge levels), one of 4, one spill.
        for spill in 0..21 {
            let mut entries: Vec<ChunkEntry> = (spill * RUN..(spill + 1) * RUN).map(entry).collect();
            entries.sort();
            runs.add(&entries).unwrap();
        }
        let levels: Vec<u32> = runs.runs.iter().map(|run| run.level).collect();
        assert_eq!(levels, [2, 1, 0]);
        for n in (0..21 * RUN).step_by(37).chain([0, 21 * RUN - 1]) {
            assert_eq!(runs.find(&entry(n).key).unwrap(), Some(entry(n)), "entry {n}");
        }
        assert_eq!(runs.find(&entry(21 * RUN).key).unwrap(), None);
        // The newest entries, one of them an id a run holds: the run's is kept.
        let mut newest: Vec<ChunkEntry> = (21 * RUN..22 * RUN).map(entry).collect();
        newest.push(ChunkEntry { offset: 1, ..entry(5) });
        newest.sort();
        let merged: Vec<ChunkEntry> = runs.merged_with(&newest).map(Result::unwrap).collect();
        let mut want: Vec<ChunkEntry> = (0..22 * RUN).map(entry).collect();
        want.sort();
        assert_eq!(merged, want);
    }

    #[test]
    fn a_run_changed_on_disk_is_refused() {
        let mut runs = SpilledRuns::new().unwrap();
        let mut entries: Vec<ChunkEntry> = (0..100).map(entry).collect();
        entries.sort();
        runs.add(&entries).unwrap();
        let mut byte = [0];
        runs.store.file.read_exact_at(&mut byte, 10).unwrap();
        runs.store.file.write_all_at(&[byte[0] ^ 1], 10).unwrap();
        let err = runs.find(&entries[0].key).unwrap_err();
        assert_eq!(err.to_string(), "the temporary chunk index file was changed while in use");
        assert!(runs.merged_with(&[]).any(|e| e.is_err()));
    }
}
