//! Criterion benches of lockbox's hot paths, through the public API:
//!
//! - `page`: sealing and opening 64 KiB and 1 MiB pages on one worker
//!   (compress + SHA-256 + ChaCha20-Poly1305 and back), text and random;
//! - `aead`: the primitives under `page` alone on one core, 64 KiB and
//!   1 MiB buffers: ChaCha20-Poly1305 on both of the library's AEAD
//!   backends (RustCrypto's, the label naming the chacha20 backend that
//!   ran, and ring's; `crypto::aead` picks one by CPU), SHA-256 (`sha2`,
//!   the content hash, and ring's beside it) and BLAKE3 (format v3's unit
//!   hash);
//! - `zstd`: one page at each profile's page size and level;
//! - `kdf`: the default Argon2id cost (m=64 MiB, t=3, p=4);
//! - `small_tree`: create and extract of `small-tree` at size factor 0.1;
//! - `list`: opening an archive of 50,000 entries and walking its index;
//! - `read_one`: one 64 KiB file out of a 256 MiB archive;
//! - `chunker`: the keyed content-defined chunker (1 MiB average) on
//!   32 MiB of random input on one core, fed whole, in 1 MiB and in 64 KiB
//!   slices (what resuming a scan across slices costs), and with chunk ids
//!   (keyed BLAKE3) on the way; and at the default sizes (256 KiB average);
//! - `recovery`: recovery records' parity (Reed-Solomon, 4 KiB shards,
//!   groups of 1,024) over 64 MiB on one core at 1, 5 and 10 %, shard
//!   checksums included, and the repair of 5 % contiguous damage.
//!
//! Everything except `kdf` uses [`KdfParams::INSECURE_FOR_TESTS`] so that
//! the KDF does not hide what is measured. Files go under Cargo's
//! target tmp dir (a real disk: syncing costs what it costs). The whole run
//! takes about three minutes on a 2-core machine.
//!
//! ```text
//! cargo bench -p revault_lockbox_api --bench performance [-- FILTER]
//! ```

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{
    create_archive, Archive, ArchiveWriter, CreateOptions, ExtractOptions, KdfParams, Password,
    WorkloadProfile,
};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

fn password() -> Password {
    Password::from("performance bench")
}

fn cheap() -> CreateOptions {
    CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS)
}

fn meta() -> Metadata {
    Metadata::new(0o644, 0, 0, 1_700_000_000, 0)
}

fn text(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    corpora::TextReader::new(seed, len as u64).read_to_end(&mut out).expect("text generator");
    out
}

fn random(seed: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    corpora::Rng::new(seed).fill(&mut out);
    out
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("lockbox-perf-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("creating a scratch directory")
}

/// An archive holding `data` as one file `f`, written in `page`-byte pages.
fn one_file_archive(data: &[u8], options: CreateOptions) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + MIB);
    write_one_file_archive(&mut out, data, options);
    out
}

/// [`one_file_archive`] into `out`, emptied first. Reused from one
/// iteration to the next, as a file's pages are by the page cache, so the
/// time is the writer's, not the page faults of a fresh buffer (28 % of
/// the seal of a random page when each iteration had its own).
fn write_one_file_archive(out: &mut Vec<u8>, data: &[u8], options: CreateOptions) {
    out.clear();
    let mut w = ArchiveWriter::new(out, &password(), options).unwrap();
    w.add_file("f", &meta(), data.len() as u64, data).unwrap();
    w.finish().unwrap();
}

/// Reads all of file `path` with large reads; returns its length.
fn read_file<R: ReadAt>(archive: &Archive<R>, path: &str, buf: &mut [u8]) -> u64 {
    let mut r = archive.open_file(path).unwrap();
    let mut total = 0;
    loop {
        match r.read(buf).unwrap() {
            0 => return total,
            n => total += n as u64,
        }
    }
}

/// Seal of whole pages on one sealer thread, and their open with the
/// default read tuning (the file read through with `open_file`, its pages
/// opened ahead on the page workers): 8 MiB per iteration,
/// so per-archive costs (header, index, thread start) are small next to the
/// pages. Text pages are compressed (level 3); random ones are detected
/// and stored raw, so they measure hashing and the AEAD alone.
fn pages(c: &mut Criterion) {
    let len = 8 * MIB;
    let inputs = [("text", text(1, len)), ("random", random(2, len))];
    let mut g = c.benchmark_group("page");
    g.throughput(Throughput::Bytes(len as u64)).sample_size(10).measurement_time(Duration::from_secs(3));
    let mut buf = vec![0u8; 256 * KIB];
    for page in [64 * KIB, MIB] {
        let options = cheap().page_size(page).threads(1);
        for (kind, data) in &inputs {
            let label = format!("{kind}/{}KiB", page / KIB);
            let mut out = Vec::with_capacity(data.len() + MIB);
            g.bench_function(BenchmarkId::new("seal", &label), |b| {
                b.iter(|| write_one_file_archive(&mut out, data, options.clone()))
            });
            let archive = one_file_archive(data, options.clone());
            g.bench_function(BenchmarkId::new("open", &label), |b| {
                b.iter(|| {
                    let a = Archive::open(Cursor::new(&archive[..]), &password()).unwrap();
                    assert_eq!(read_file(&a, "f", &mut buf), len as u64);
                })
            });
        }
    }
    g.finish();
}

/// The primitives the `page` bench pays for, alone: what sealing and
/// opening a random (raw) page could cost at best on one core. Sealing is
/// in place, as the codec seals; opening is in place on a fresh copy of
/// the sealed buffer each iteration (the copy is not timed).
fn aead(c: &mut Criterion) {
    use chacha20poly1305::aead::{AeadInOut, KeyInit};
    use chacha20poly1305::{ChaCha20Poly1305, Nonce, Tag};
    use ring::aead::{Aad, LessSafeKey, Nonce as RingNonce, UnboundKey, CHACHA20_POLY1305};
    use sha2::{Digest, Sha256};

    let key = [7u8; 32];
    let ours = ChaCha20Poly1305::new(&key.into());
    let ring_key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &key).unwrap());
    let nonce = [1u8; 12];
    let backend = revault_lockbox_api::ChaChaBackend::detect();
    let mut g = c.benchmark_group("aead");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    for len in [64 * KIB, MIB] {
        let data = random(4, len);
        let size = format!("{}KiB", len / KIB);
        g.throughput(Throughput::Bytes(len as u64));
        let mut buf = data.clone();
        g.bench_function(BenchmarkId::new(format!("seal/chacha20poly1305-{backend}"), &size), |b| {
            b.iter(|| {
                ours.encrypt_inout_detached(&Nonce::from(nonce), b"", buf.as_mut_slice().into()).unwrap()
            })
        });
        let mut sealed = data.clone();
        let tag =
            ours.encrypt_inout_detached(&Nonce::from(nonce), b"", sealed.as_mut_slice().into()).unwrap();
        g.bench_function(BenchmarkId::new(format!("open/chacha20poly1305-{backend}"), &size), |b| {
            b.iter_batched_ref(
                || sealed.clone(),
                |buf| {
                    let tag = Tag::from(tag);
                    ours.decrypt_inout_detached(&Nonce::from(nonce), b"", buf.as_mut_slice().into(), &tag)
                        .unwrap()
                },
                BatchSize::LargeInput,
            )
        });
        g.bench_function(BenchmarkId::new("seal/ring", &size), |b| {
            b.iter(|| {
                ring_key
                    .seal_in_place_separate_tag(
                        RingNonce::assume_unique_for_key(nonce),
                        Aad::empty(),
                        &mut buf,
                    )
                    .unwrap()
            })
        });
        let mut ring_sealed = data.clone();
        ring_key
            .seal_in_place_append_tag(RingNonce::assume_unique_for_key(nonce), Aad::empty(), &mut ring_sealed)
            .unwrap();
        g.bench_function(BenchmarkId::new("open/ring", &size), |b| {
            b.iter_batched_ref(
                || ring_sealed.clone(),
                |buf| {
                    ring_key
                        .open_in_place(RingNonce::assume_unique_for_key(nonce), Aad::empty(), buf)
                        .unwrap()
                        .len()
                },
                BatchSize::LargeInput,
            )
        });
        g.bench_function(BenchmarkId::new("sha256", &size), |b| b.iter(|| Sha256::digest(&data)));
        g.bench_function(BenchmarkId::new("sha256/ring", &size), |b| {
            b.iter(|| ring::digest::digest(&ring::digest::SHA256, &data))
        });
        g.bench_function(BenchmarkId::new("blake3", &size), |b| b.iter(|| blake3::hash(&data)));
    }
    g.finish();
}

/// zstd on one text page at each profile's page size and level (profiles
/// sharing both are measured once). Level 19 runs at about 1 MB/s, so the
/// `archival` bench compresses the first 2 MiB of its 8 MiB page: a whole
/// page would take minutes at criterion's minimum of 10 samples.
fn zstd_levels(c: &mut Criterion) {
    let mut g = c.benchmark_group("zstd");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).sampling_mode(SamplingMode::Flat);
    let mut seen = HashSet::new();
    for profile in WorkloadProfile::ALL {
        let t = profile.create_tuning();
        if !seen.insert((t.page_size, t.zstd_level)) {
            continue;
        }
        let len = if t.zstd_level >= 10 { t.page_size.min(2 * MIB) } else { t.page_size };
        let page = text(3, len);
        let label = if len < t.page_size {
            format!("{}/{}KiB-of-{}KiB/level{}", profile.name(), len / KIB, t.page_size / KIB, t.zstd_level)
        } else {
            format!("{}/{}KiB/level{}", profile.name(), len / KIB, t.zstd_level)
        };
        g.throughput(Throughput::Bytes(page.len() as u64));
        let mut compressor = zstd::bulk::Compressor::new(t.zstd_level).unwrap();
        let frame = compressor.compress(&page).unwrap();
        g.bench_function(BenchmarkId::new("compress", &label), |b| {
            b.iter(|| compressor.compress(&page).unwrap())
        });
        let mut decompressor = zstd::bulk::Decompressor::new().unwrap();
        g.bench_function(BenchmarkId::new("decompress", &label), |b| {
            b.iter(|| decompressor.decompress(&frame, page.len()).unwrap())
        });
    }
    g.finish();
}

/// The default password KDF, as paid by every create (wrapping the content
/// key) and every open (unwrapping it).
fn kdf(c: &mut Criterion) {
    let mut g = c.benchmark_group("kdf");
    g.sample_size(10).measurement_time(Duration::from_secs(4)).sampling_mode(SamplingMode::Flat);
    let p = KdfParams::default();
    let label = format!("argon2id-m{}MiB-t{}-p{}", p.m_kib / 1024, p.t, p.p);
    g.bench_function(BenchmarkId::new("new_archive", label), |b| {
        b.iter(|| ArchiveWriter::new(io::sink(), &password(), CreateOptions::new()).unwrap())
    });
    g.finish();
}

/// Create and extract of `small-tree` at size factor 0.1 (200 files of
/// about 1 KiB), syncing as the defaults do.
fn small_tree(c: &mut Criterion) {
    let dir = scratch();
    let corpus = corpora::find("small-tree").unwrap().generate(&dir.path().join("src"), 0.1).unwrap();
    let archive = dir.path().join("small-tree.lbox");
    create_archive(&archive, &corpus.root, &corpus.inputs, &password(), cheap()).unwrap();

    let mut g = c.benchmark_group("small_tree");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(corpus.files));
    g.bench_function("create", |b| {
        b.iter(|| {
            let options = cheap().overwrite(true);
            create_archive(&archive, &corpus.root, &corpus.inputs, &password(), options).unwrap()
        })
    });
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // Extractions are deleted only at the end: on ext4, creating files soon
    // after deleting many costs a scan for inodes not recently freed.
    let mut done = Vec::new();
    g.bench_function("extract", |b| {
        b.iter_batched(
            || tempfile::tempdir_in(&out).unwrap(),
            |dest| {
                let a = Archive::open(File::open(&archive).unwrap(), &password()).unwrap();
                a.extract(dest.path(), &ExtractOptions::new()).unwrap();
                done.push(dest);
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    drop(done);
}

/// Listing reads only the index: open an archive of 50,000 tiny files in
/// 500 directories and walk every entry.
fn list(c: &mut Criterion) {
    const FILES: usize = 50_000;
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    let (m, d) = (meta(), Metadata::new(0o755, 0, 0, 1_700_000_000, 0));
    for i in 0..FILES {
        if i % 100 == 0 {
            w.add_dir(format!("dir-{:03}", i / 100), &d).unwrap();
        }
        let body = format!("file {i}\n");
        w.add_file(format!("dir-{:03}/file-{i:05}.txt", i / 100), &m, body.len() as u64, body.as_bytes())
            .unwrap();
    }
    let archive = w.finish().unwrap();

    let mut g = c.benchmark_group("list");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(FILES as u64));
    g.bench_function("open_and_walk/50k_entries", |b| {
        b.iter(|| {
            let a = Archive::open(Cursor::new(&archive[..]), &password()).unwrap();
            a.entries().unwrap().map(|e| e.unwrap().path.len()).sum::<usize>()
        })
    });
    g.finish();
}

/// One 64 KiB file out of a 256 MiB archive (4,096 such files of text,
/// `Balanced` pages). Each iteration reads a different file on a page not
/// in the reader's cache, so every read opens a page from disk.
fn read_one(c: &mut Criterion) {
    const FILES: usize = 4096;
    const FILE_LEN: usize = 64 * KIB;
    let dir = scratch();
    let path = dir.path().join("large.lbox");
    let mut w =
        ArchiveWriter::new(io::BufWriter::new(File::create(&path).unwrap()), &password(), cheap()).unwrap();
    let mut data = vec![0u8; FILE_LEN];
    for i in 0..FILES {
        let mut r = corpora::TextReader::new(1000 + i as u64, FILE_LEN as u64);
        r.read_exact(&mut data).unwrap();
        w.add_file(name(i), &meta(), FILE_LEN as u64, &data[..]).unwrap();
    }
    w.finish().unwrap();
    fn name(i: usize) -> String {
        format!("data/part-{i:04}.txt")
    }
    // Consecutive picks are 37 files (more than two 1 MiB pages) apart.
    let pick = |n: usize| name(n * 37 % FILES);

    let mut g = c.benchmark_group("read_one");
    g.sample_size(30).measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Bytes(FILE_LEN as u64));
    let mut buf = vec![0u8; 256 * KIB];
    let archive = Archive::open(File::open(&path).unwrap(), &password()).unwrap();
    let mut n = 0;
    g.bench_function("open_file/64KiB_of_256MiB", |b| {
        b.iter(|| {
            n += 1;
            assert_eq!(read_file(&archive, &pick(n), &mut buf), FILE_LEN as u64);
        })
    });
    g.bench_function("open_archive_and_file/64KiB_of_256MiB", |b| {
        b.iter(|| {
            n += 1;
            let a = Archive::open(File::open(&path).unwrap(), &password()).unwrap();
            assert_eq!(read_file(&a, &pick(n), &mut buf), FILE_LEN as u64);
        })
    });
    g.finish();
    drop(archive);
}

/// The chunker on random input at a 1 MiB average: the cut points alone
/// (fed whole, then in 1 MiB and 64 KiB slices, where a chunk's scan
/// resumes across slices), and with each chunk's id; the cut points at
/// the default sizes.
fn chunker(c: &mut Criterion) {
    use revault_lockbox_api::chunk::{ChunkIds, ChunkKeys, ChunkParams, Chunker, CutPoints};

    let len = 32 * MIB;
    let data = random(6, len);
    let keys = ChunkKeys::from_key_bytes(&[3; 32], &[4; 16]);
    let avg_1mib = ChunkParams::new(256 * KIB, MIB, 4 * MIB).unwrap();
    let mut g = c.benchmark_group("chunker");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).throughput(Throughput::Bytes(len as u64));
    for (name, params, slice) in [
        ("cut/whole", avg_1mib, len),
        ("cut/1MiB_slices", avg_1mib, MIB),
        ("cut/64KiB_slices", avg_1mib, 64 * KIB),
        ("cut/default_sizes_1MiB_slices", ChunkParams::default(), MIB),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut cuts = CutPoints::default();
                let mut chunker = Chunker::new(&keys, params);
                data.chunks(slice).for_each(|part| chunker.feed(part, &mut cuts));
                chunker.finish(&mut cuts);
                cuts.0.len()
            })
        });
    }
    g.bench_function("cut_and_ids/1MiB_slices", |b| {
        b.iter(|| {
            let mut ids = ChunkIds::new(&keys);
            let mut chunker = Chunker::new(&keys, avg_1mib);
            data.chunks(MIB).for_each(|part| chunker.feed(part, &mut ids));
            chunker.finish(&mut ids);
            ids.chunks.len()
        })
    });
    g.finish();
}

/// Recovery records over 64 MiB of random bytes in memory: the encoder at
/// 1, 5 and 10 % (one pass, 16 MiB window, checksums of every shard), and
/// a repair of one contiguous run of 5 % (reading every shard's checksum,
/// decoding each group).
fn recovery(c: &mut Criterion) {
    use revault_lockbox_api::recovery::{
        encode, repair, Layout, ParitySource, RecoveryShards, ShardSum, SHARD_LEN,
    };

    struct Kept(Vec<(Vec<ShardSum>, Vec<u8>, Vec<ShardSum>)>);
    impl ParitySource for Kept {
        fn original_sums(&mut self, group: u32) -> io::Result<Vec<ShardSum>> {
            Ok(self.0[group as usize].0.clone())
        }
        fn recovery(&mut self, group: u32) -> io::Result<RecoveryShards> {
            let (_, shards, sums) = &self.0[group as usize];
            let shards = shards.chunks(SHARD_LEN).map(|s| Some(s.to_vec())).collect();
            Ok(RecoveryShards { shards, sums: sums.clone() })
        }
    }

    let len = 64 * MIB;
    let data = random(7, len);
    let window = 16 * MIB;
    let mut g = c.benchmark_group("recovery");
    g.sample_size(10).measurement_time(Duration::from_secs(4)).throughput(Throughput::Bytes(len as u64));
    for percent in [1u8, 5, 10] {
        let layout = Layout::new(len as u64, percent).unwrap();
        g.bench_function(format!("encode/{percent}%"), |b| {
            b.iter(|| {
                let mut parity = 0usize;
                encode(&Cursor::new(&data), 0, &layout, window, |group| {
                    parity += group.recovery.len();
                    Ok(())
                })
                .unwrap();
                parity
            })
        });
    }
    let layout = Layout::new(len as u64, 5).unwrap();
    let mut kept = Kept(Vec::new());
    encode(&Cursor::new(&data), 0, &layout, window, |group| {
        kept.0.push((group.original_sums.to_vec(), group.recovery.to_vec(), group.recovery_sums.to_vec()));
        Ok(())
    })
    .unwrap();
    let mut damaged = data.clone();
    damaged[len / 3..len / 3 + len / 20].fill(0);
    g.bench_function("repair/5%_contiguous", |b| {
        b.iter(|| {
            let report =
                repair(&Cursor::new(&damaged), 0, &layout, window, &mut kept, |_, _| Ok(())).unwrap();
            assert!(report.unrepairable.is_empty());
            report.rebuilt
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = pages, aead, zstd_levels, kdf, small_tree, list, read_one, chunker, recovery
}
criterion_main!(benches);
