//! Writes the seed corpora in `fuzz/corpus/<target>/` from real archives:
//! `cargo run --bin make_seeds [TARGET...]` (inside `fuzz/`; only the
//! targets named, when any are). Only the public API and
//! `revault_lockbox_api::fuzz` are used: archives are written with
//! `ArchiveWriter` and cut into the pieces each target reads; index seeds
//! are the decrypted root and node plaintexts of those archives. Archives
//! draw random ids, salts and keys, so each run writes different bytes of
//! the same shapes; the committed seeds are one such run.

use std::fs;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::fuzz::{
    self, HEADER_PREFIX_LEN, INDEX_ENTRIES_LEAF, INDEX_INTERNAL, INDEX_PAGES_LEAF, INDEX_ROOT, TRAILER_LEN,
};
use revault_lockbox_api::keys::SigningKey;
use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KdfParams, Password};

const PAGE_SIZE: usize = 4096;
/// Largest seed written: AFL++ reads inputs up to 1 MiB, but small seeds
/// mutate faster. Every archive is at least 64 KiB (its key-slot table).
const MAX_SEED_LEN: usize = 256 << 10;

/// One archive shape, and whether the whole archive is an `archive` seed
/// (the large ones are kept only for their pieces).
struct Shape {
    name: &'static str,
    bytes: Vec<u8>,
    whole: bool,
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for target in TARGETS {
        if wanted(target) {
            remove_generated(&root.join(target));
        }
    }
    let shapes = [
        Shape { name: "no-entries", bytes: build(|_| {}), whole: true },
        Shape { name: "one-file", bytes: one_file(), whole: true },
        Shape { name: "small-tree", bytes: small_tree(), whole: true },
        Shape { name: "raw-pages", bytes: raw_pages(), whole: true },
        Shape { name: "many-files", bytes: many_files(), whole: true },
        Shape { name: "long-paths", bytes: long_paths(), whole: false },
        Shape { name: "many-pages", bytes: many_pages(), whole: false },
    ];
    for shape in &shapes {
        let (name, bytes) = (shape.name, &shape.bytes[..]);
        if shape.whole {
            write(&root, "archive", name, bytes);
        }
        let at = bytes.len() - TRAILER_LEN;
        let trailer = [&(at as u64).to_le_bytes()[..], &bytes[at..]].concat();
        write(&root, "trailer", name, &trailer);
        for (kind, n, plain) in index_seeds(bytes) {
            write(&root, "index", &format!("{name}-{kind}-{n}"), &plain);
        }
    }
    write(&root, "recovery_footer", "tiny", &fuzz::recovery_footer_seed());
    // Header prefixes and slots differ between archives only in random bytes.
    let bytes = &shapes[0].bytes;
    write(&root, "header", "prefix", &bytes[..HEADER_PREFIX_LEN]);
    let len = fuzz::slot_len(bytes).expect("a valid header");
    let slot = |i: usize| &bytes[HEADER_PREFIX_LEN + i * len..HEADER_PREFIX_LEN + (i + 1) * len];
    write(&root, "key_slots", "password", trim_zeros(slot(0)));
    write(&root, "key_slots", "empty", trim_zeros(slot(1)));

    // Key targets: a slot table with every kind of slot, each recipient body.
    let (table, bodies) = fuzz::key_seeds().expect("key seeds");
    write(&root, "slot_table", "every-kind", trim_zeros(&table));
    for (kind, body) in bodies {
        write(&root, "recipient_slot", &kind, &body);
    }
    for (name, seed) in fuzz::sealed_seeds().expect("sealed seeds") {
        write(&root, "sealed", &name, &seed);
    }

    // Format v3's units, from a signed archive; the scanner gets whole
    // archives and archives cut in the middle of a unit.
    let signed = signed();
    for (target, (name, seed)) in fuzz::v3_seeds(&signed, &password()).expect("v3 seeds") {
        write(&root, target, &name, &seed);
    }
    for (name, bytes) in [("signed", &signed[..]), ("small-tree", &shapes[2].bytes[..])] {
        write(&root, "salvage", name, bytes);
        write(&root, "salvage", &format!("{name}-cut"), &bytes[..bytes.len() * 2 / 3]);
    }

    let text = text(3 * PAGE_SIZE);
    for (name, plain) in [("text", &text[..]), ("empty", &[][..]), ("zeros", &[0u8; PAGE_SIZE][..])] {
        let mut seed = (plain.len() as u32).to_le_bytes().to_vec();
        seed.extend(zstd::bulk::compress(plain, 3).expect("zstd"));
        write(&root, "page", name, &seed);
    }
}

const TARGETS: [&str; 15] = [
    "archive",
    "header",
    "key_slots",
    "trailer",
    "recovery_footer",
    "index",
    "page",
    "recipient_slot",
    "slot_table",
    "sealed",
    "session_header",
    "frame",
    "signature_block",
    "sessions",
    "salvage",
];

/// Whether the command line names `target`, or names none.
fn wanted(target: &str) -> bool {
    let named: Vec<String> = std::env::args().skip(1).collect();
    named.is_empty() || named.iter().any(|n| n == target)
}

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) {
    if !wanted(target) {
        return;
    }
    assert!(bytes.len() <= MAX_SEED_LEN, "{target}/{name} is {} bytes", bytes.len());
    let dir = root.join(target);
    fs::create_dir_all(&dir).expect("corpus dir");
    fs::write(dir.join(name), bytes).expect("writing a seed");
}

/// Removes the seeds a previous run wrote to `dir`, keeping the inputs
/// AFL++ found that were copied there by hand (named `afl-<id>`).
fn remove_generated(dir: &Path) {
    let Ok(read) = fs::read_dir(dir) else { return };
    for entry in read {
        let path = entry.expect("reading a corpus dir").path();
        // A fuzzer's inputs, and the conformance vectors' (written by the
        // library's `write_conformance_fuzz_seeds`), stay.
        let kept = |n: &std::ffi::OsStr| ["afl-", "conformance-"].iter().any(|p| n.to_string_lossy().starts_with(p));
        if !path.file_name().is_some_and(kept) {
            fs::remove_file(&path).expect("removing an old seed");
        }
    }
}

/// A key slot without its zero padding (the `key_slots` target pads it
/// back), but never shorter than its kind and length fields.
fn trim_zeros(slot: &[u8]) -> &[u8] {
    let end = slot.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &slot[..end.max(3)]
}

/// The root and node plaintexts of `bytes`, each named by its kind and its
/// position among the nodes of that kind.
fn index_seeds(bytes: &[u8]) -> Vec<(&'static str, usize, Vec<u8>)> {
    let plaintexts = fuzz::index_plaintexts(bytes, &password()).expect("own archive");
    let mut counts = [0usize; 4];
    plaintexts
        .into_iter()
        .map(|plain| {
            let kind = match plain[0] {
                INDEX_ENTRIES_LEAF => "entries-leaf",
                INDEX_PAGES_LEAF => "pages-leaf",
                INDEX_INTERNAL => "internal",
                INDEX_ROOT => "root",
                other => panic!("unknown index seed kind {other}"),
            };
            let n = counts[usize::from(plain[0])];
            counts[usize::from(plain[0])] += 1;
            (kind, n, plain)
        })
        .collect()
}

fn password() -> Password {
    Password::from(fuzz::PASSWORD)
}

fn meta(mode: u32) -> Metadata {
    Metadata::new(mode, 1000, 1000, 1_700_000_000, 123_456_789)
}

fn build(add: impl FnOnce(&mut ArchiveWriter<Vec<u8>>)) -> Vec<u8> {
    build_with(CreateOptions::new(), add)
}

/// The small tree's archive, signed by a fresh signing key.
fn signed() -> Vec<u8> {
    let key = std::sync::Arc::new(SigningKey::generate().expect("a signing key"));
    build_with(CreateOptions::new().sign(key), |w| {
        w.add_symlink("link", &meta(0o777), "signed.txt").unwrap();
        w.add_file("signed.txt", &meta(0o644), 7, &b"signed\n"[..]).unwrap();
    })
}

fn build_with(options: CreateOptions, add: impl FnOnce(&mut ArchiveWriter<Vec<u8>>)) -> Vec<u8> {
    let options = options.kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE_SIZE).threads(1);
    let mut w = ArchiveWriter::new(Vec::new(), &password(), options).expect("writer");
    add(&mut w);
    let bytes = w.finish().expect("finish");
    let opened = Archive::open(Cursor::new(&bytes), &password()).expect("open");
    assert!(opened.verify().expect("verify").is_ok(), "seed archive verifies");
    bytes
}

/// Compressible bytes, different on every line.
fn text(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u32;
    while out.len() < len {
        out.extend_from_slice(format!("line {i}: the quick brown fox jumps over the lazy dog\n").as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// Bytes zstd cannot shrink, so their pages are stored raw.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn one_file() -> Vec<u8> {
    build(|w| {
        w.add_file("only", &meta(0o644), 5, &b"only\n"[..]).unwrap();
    })
}

/// Every entry kind: a directory, files (empty, linked, over three pages,
/// a non-UTF-8 name), a hard link and a symlink.
fn small_tree() -> Vec<u8> {
    build(|w| {
        w.add_dir("d", &meta(0o755)).unwrap();
        w.add_linked_file("d/a.txt", &meta(0o644), 13, &b"hello, world\n"[..]).unwrap();
        w.add_file("d/empty", &meta(0o600), 0, &b""[..]).unwrap();
        w.add_hardlink("d/hard", &meta(0o644), "d/a.txt").unwrap();
        w.add_symlink("d/link", &meta(0o777), "a.txt").unwrap();
        let big = text(2 * PAGE_SIZE + 1000);
        w.add_file("d/multi-page.txt", &meta(0o644), big.len() as u64, &big[..]).unwrap();
        w.add_file(b"d/not-utf8-\xff", &meta(0o640), 3, &b"abc"[..]).unwrap();
    })
}

fn raw_pages() -> Vec<u8> {
    build(|w| {
        let noise = noise(PAGE_SIZE + 100, 0x9e37_79b9_7f4a_7c15);
        w.add_file("after", &meta(0o644), 6, &b"after\n"[..]).unwrap();
        w.add_file("noise.bin", &meta(0o644), noise.len() as u64, &noise[..]).unwrap();
    })
}

/// Enough small files (sharing pages) to fill several entries leaves.
fn many_files() -> Vec<u8> {
    build(|w| {
        w.add_dir("many", &meta(0o755)).unwrap();
        for i in 0..2000 {
            let content = format!("file {i}\n");
            let path = format!("many/{i:04}.txt");
            w.add_file(path, &meta(0o644), content.len() as u64, content.as_bytes()).unwrap();
        }
    })
}

/// Paths of nearly the longest length, so that a few entries fill a leaf:
/// five entries leaves, then short symlinks.
fn long_paths() -> Vec<u8> {
    build(|w| {
        // Components are at most 255 bytes: 63 of them, 16,126 bytes
        // with the suffix below.
        let long = format!("{}/{}", vec!["l".repeat(255); 62].join("/"), "l".repeat(250));
        for i in 0..16 {
            let path = format!("{long}-{i:02}");
            w.add_file(path, &meta(0o644), 2, &b"x\n"[..]).unwrap();
        }
        for i in 0..600 {
            w.add_symlink(format!("short-{i:03}"), &meta(0o777), "target").unwrap();
        }
    })
}

/// Enough 4 KiB pages (of zeros, so the archive stays small) to fill two
/// page-table leaves.
fn many_pages() -> Vec<u8> {
    build(|w| {
        let size = 5000 * PAGE_SIZE;
        w.add_file("zeros", &meta(0o644), size as u64, std::io::repeat(0).take(size as u64)).unwrap();
    })
}
