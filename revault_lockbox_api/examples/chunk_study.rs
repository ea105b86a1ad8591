//! The chunk-size study of docs/DEDUP.md: chunks successive versions of a
//! tree at several average sizes and reports, per version and size, the
//! chunk count, the distinct bytes, the bytes new against every earlier
//! version, those new bytes compressed (zstd level 3, one stream per
//! version, as pages would hold them), the chunk index at 48 bytes a
//! distinct chunk, and the version's own cost: its new bytes compressed
//! plus 48 bytes for each of its new chunks (its session's chunk index).
//!
//! ```text
//! cargo run --release -p revault_lockbox_api --example chunk_study -- [--avg KIB] [--state FILE] DIR1 [DIR2 ...]
//! ```
//!
//! Each DIR is one version; its regular files are read in path order
//! (symbolic links are not followed). Sizes: smallest = average / 4,
//! largest = average × 4, the default's proportions; `--avg KIB` studies
//! that average alone (256: the writer's default sizes). `--state FILE`
//! carries the chunks seen across runs, so that a tree changed in place
//! (scripts/series-bound.py's daily series) is studied one version a run:
//! FILE is read when it exists and written after the last DIR.

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
    format!("{:.3}", bytes as f64 / (1 << 20) as f64)
}

fn usage() -> ! {
    eprintln!(
        "usage: chunk_study [--avg KIB] [--state FILE] DIR1 [DIR2 ...] (successive versions of a tree)"
    );
    std::process::exit(2);
}

/// The studies' state as `--state` keeps it: per study its average, the
/// versions studied, its distinct bytes and the ids seen (little-endian
/// u64s, then 32-byte ids).
fn save_state(path: &Path, studies: &[Study], versions: u64) -> io::Result<()> {
    let mut out = io::BufWriter::new(File::create(path)?);
    for study in studies {
        for field in [study.params.avg() as u64, versions, study.distinct_bytes, study.seen.len() as u64] {
            out.write_all(&field.to_le_bytes())?;
        }
        for id in &study.seen {
            out.write_all(id)?;
        }
    }
    out.flush()
}

/// Loads `--state` into `studies` (same averages, in order); the versions
/// studied before.
fn load_state(path: &Path, studies: &mut [Study]) -> io::Result<u64> {
    let bytes = std::fs::read(path)?;
    let mut at = 0usize;
    let mut take = |n: usize| -> io::Result<&[u8]> {
        let got = bytes.get(at..at + n).ok_or_else(|| io::Error::other("state file cut short"))?;
        at += n;
        Ok(got)
    };
    let mut versions = 0;
    for study in studies.iter_mut() {
        let mut field =
            || -> io::Result<u64> { Ok(u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"))) };
        let (avg, done, distinct, count) = (field()?, field()?, field()?, field()?);
        if avg != study.params.avg() as u64 {
            return Err(io::Error::other("the state file was made with other averages"));
        }
        versions = done;
        study.distinct_bytes = distinct;
        for _ in 0..count {
            study.seen.insert(take(32)?.try_into().expect("32 bytes"));
        }
    }
    Ok(versions)
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let (mut averages, mut state, mut dirs) = (AVERAGES.to_vec(), None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--avg") => {
                let kib =
                    args.next().and_then(|a| a.to_str()?.parse::<usize>().ok()).unwrap_or_else(|| usage());
                averages = vec![kib << 10];
            }
            Some("--state") => state = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            _ => dirs.push(PathBuf::from(arg)),
        }
    }
    if dirs.is_empty() || (dirs.len() < 2 && state.is_none()) {
        usage();
    }
    let keys = ChunkKeys::from_key_bytes(&[0x5a; 32], &[0xa5; 16]);
    let mut studies: Vec<Study> = averages
        .iter()
        .map(|&avg| Study {
            params: ChunkParams::new(avg / 4, avg, avg * 4).unwrap_or_else(|e| panic!("average {avg}: {e}")),
            seen: HashSet::new(),
            distinct_bytes: 0,
        })
        .collect();
    let earlier = match &state {
        Some(path) if path.exists() => {
            load_state(path, &mut studies).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        }
        _ => 0,
    };
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
                earlier + n as u64 + 1,
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
        eprintln!(
            "version {} ({}): {:.1} s",
            earlier + n as u64 + 1,
            dir.display(),
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(path) = &state {
        let versions = earlier + dirs.len() as u64;
        save_state(path, &studies, versions).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
