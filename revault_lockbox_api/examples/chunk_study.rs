//! The chunk-size study of docs/DEDUP.md: chunks successive versions of a
//! tree at several average sizes and reports, per version and size, the
//! chunk count, the distinct bytes, the bytes new against every earlier
//! version, those new bytes compressed (zstd level 3, one stream per
//! version, as pages would hold them), the chunk index at 48 bytes a
//! distinct chunk, and the version's own cost: its new bytes compressed
//! plus 48 bytes for each of its new chunks (its session's chunk index).
//!
//! ```text
//! cargo run --release -p revault_lockbox_api --example chunk_study -- DIR1 DIR2 [DIR3 ...]
//! ```
//!
//! Each DIR is one version; its regular files are read in path order
//! (symbolic links are not followed). Sizes: smallest = average / 4,
//! largest = average × 4, the default's proportions.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use revault_lockbox_api::chunk::{ChunkIdHasher, ChunkKeys, ChunkParams, ChunkSink, Chunker};

const AVERAGES: [usize; 5] = [256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20];
const INDEX_BYTES_PER_CHUNK: u64 = 48;

/// Counts what goes through it.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One chunk size's state across versions.
struct Study {
    params: ChunkParams,
    seen: HashSet<[u8; 32]>,
    distinct_bytes: u64,
}

/// One version at one size: a sink holding the current chunk's bytes until
/// its id says whether it is new.
struct VersionSink<'a> {
    study: &'a mut Study,
    hasher: ChunkIdHasher,
    chunk: Vec<u8>,
    chunks: u64,
    new_chunks: u64,
    new_bytes: u64,
    compressed: zstd::stream::Encoder<'static, Counter>,
}

impl ChunkSink for VersionSink<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.chunk.extend_from_slice(bytes);
    }

    fn end(&mut self, _end: u64) {
        let id = self.hasher.finish_chunk();
        self.chunks += 1;
        if self.study.seen.insert(*id.as_bytes()) {
            self.study.distinct_bytes += self.chunk.len() as u64;
            self.new_chunks += 1;
            self.new_bytes += self.chunk.len() as u64;
            self.compressed.write_all(&self.chunk).expect("counting writer");
        }
        self.chunk.clear();
    }
}

fn files_of(dir: &Path) -> Vec<PathBuf> {
    let walk = walkdir::WalkDir::new(dir).follow_links(false).sort_by_file_name();
    walk.into_iter()
        .map(|e| e.unwrap_or_else(|e| panic!("walking {}: {e}", dir.display())))
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.len() < 2 {
        eprintln!("usage: chunk_study DIR1 DIR2 [DIR3 ...] (successive versions of a tree)");
        std::process::exit(2);
    }
    let keys = ChunkKeys::from_key_bytes(&[0x5a; 32], &[0xa5; 16]);
    let mut studies: Vec<Study> = AVERAGES
        .iter()
        .map(|&avg| Study {
            params: ChunkParams::new(avg / 4, avg, avg * 4).expect("valid sizes"),
            seen: HashSet::new(),
            distinct_bytes: 0,
        })
        .collect();
    println!("| version | avg chunk | files | bytes (MiB) | chunks | distinct (MiB) | new (MiB) | new, zstd -3 (MiB) | new chunks | index at 48 B/chunk (MiB) | version's cost: new zstd + 48 B/new chunk (MiB) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut buf = vec![0u8; 1 << 20];
    for (n, dir) in dirs.iter().enumerate() {
        let files = files_of(dir);
        let started = Instant::now();
        let mut sinks: Vec<VersionSink> = studies
            .iter_mut()
            .map(|study| VersionSink {
                hasher: ChunkIdHasher::new(&keys),
                study,
                chunk: Vec::new(),
                chunks: 0,
                new_chunks: 0,
                new_bytes: 0,
                compressed: zstd::stream::Encoder::new(Counter(0), 3).expect("zstd encoder"),
            })
            .collect();
        let mut total = 0u64;
        for path in &files {
            let mut file = File::open(path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
            let mut chunkers: Vec<Chunker> =
                sinks.iter().map(|s| Chunker::new(&keys, s.study.params)).collect();
            loop {
                let got = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(got) => got,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => panic!("reading {}: {e}", path.display()),
                };
                total += got as u64;
                for (chunker, sink) in chunkers.iter_mut().zip(sinks.iter_mut()) {
                    chunker.feed(&buf[..got], sink);
                }
            }
            for (chunker, sink) in chunkers.into_iter().zip(sinks.iter_mut()) {
                chunker.finish(sink);
            }
        }
        for sink in sinks {
            let compressed = sink.compressed.finish().expect("zstd finish").0;
            let index = sink.study.seen.len() as u64 * INDEX_BYTES_PER_CHUNK;
            println!(
                "| {} | {} KiB | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                n + 1,
                sink.study.params.avg() >> 10,
                files.len(),
                mib(total),
                sink.chunks,
                mib(sink.study.distinct_bytes),
                mib(sink.new_bytes),
                mib(compressed),
                sink.new_chunks,
                mib(index),
                mib(compressed + sink.new_chunks * INDEX_BYTES_PER_CHUNK),
            );
        }
        eprintln!("version {} ({}): {:.1} s", n + 1, dir.display(), started.elapsed().as_secs_f64());
    }
}
