//! The chunker's throughput in CPU time, for machines where other work
//! makes criterion's wall-clock figures (benches/performance.rs, group
//! `chunker`) wander: the thread's own time on the CPU
//! (`/proc/thread-self/schedstat`) while it chunks random input.
//!
//! ```text
//! cargo run --profile bench -p revault_lockbox_api --example chunk_speed -- [MIB] [SLICE_KIB] [AVG_KIB]
//! ```
//!
//! Defaults: 256 MiB of input (BLAKE3 XOF, made before the clock starts),
//! 1024 KiB slices, the default sizes (AVG_KIB gives min = avg/4, max =
//! 4·avg). Prints the cut points alone, then with chunk ids, five rounds
//! each, and the best and median throughput.

use std::time::Duration;

use revault_lockbox_api::chunk::{ChunkIds, ChunkKeys, ChunkParams, ChunkSink, Chunker, CutPoints};

/// This thread's time on the CPU so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("reading schedstat");
    let ns = stat.split_whitespace().next().and_then(|f| f.parse().ok()).expect("schedstat's first field");
    Duration::from_nanos(ns)
}

fn arg(n: usize, default: usize) -> usize {
    std::env::args().nth(n).map_or(default, |a| a.parse().expect("a whole number"))
}

fn main() {
    let (len, slice) = (arg(1, 256) << 20, arg(2, 1024) << 10);
    let params = match std::env::args().nth(3) {
        None => ChunkParams::default(),
        Some(avg) => {
            let avg: usize = avg.parse::<usize>().expect("a whole number") << 10;
            ChunkParams::new(avg / 4, avg, avg * 4).unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let mut data = vec![0u8; len];
    blake3::Hasher::new().update(b"chunk_speed").finalize_xof().fill(&mut data);
    let keys = ChunkKeys::from_key_bytes(&[3; 32], &[4; 16]);
    println!("{} MiB in {} KiB slices, sizes {params}", len >> 20, slice >> 10);
    for ids in [false, true] {
        let mut rates = Vec::new();
        let mut chunks = 0;
        for _ in 0..5 {
            let mut cuts = CutPoints::default();
            let mut named = ChunkIds::new(&keys);
            let sink: &mut dyn ChunkSink = if ids { &mut named } else { &mut cuts };
            let started = cpu_time();
            let mut chunker = Chunker::new(&keys, params);
            data.chunks(slice).for_each(|part| chunker.feed(part, sink));
            chunker.finish(sink);
            let spent = cpu_time() - started;
            chunks = cuts.0.len().max(named.chunks.len());
            rates.push(len as f64 / spent.as_secs_f64() / 1e9);
        }
        rates.sort_by(f64::total_cmp);
        let what = if ids { "cut points and ids" } else { "cut points" };
        println!(
            "{what}: {chunks} chunks, best {:.2} GB/s, median {:.2} GB/s of CPU time",
            rates[4], rates[2]
        );
    }
}
