//! Writes the seed corpora in `fuzz/corpus/<target>/` from real archives:
//! `cargo run --bin make_seeds` (inside `fuzz/`). Archives draw random ids,
//! salts and keys, so each run writes different bytes of the same shapes;
//! the committed seeds are one such run.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use revault_lockbox_api::format::{
    self, ArchiveId, Codec, FileLocation, Header, Index, KeySlot, PageRecord, Session, HEADER_PREFIX_LEN,
    TRAILER_LEN,
};
use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, EntryKind, KdfParams, Metadata, Password};

const PAGE_SIZE: usize = 4096;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let archives = [
        ("small-tree", small_tree()),
        ("one-file", one_file()),
        ("no-entries", build(|_| {})),
        ("raw-pages", raw_pages()),
    ];
    for (name, bytes) in &archives {
        write(&root, "archive", name, bytes);
        let (_, slots_len) = Header::decode_prefix(bytes).expect("own header");
        let header_end = HEADER_PREFIX_LEN + slots_len;
        write(&root, "header", name, &bytes[..header_end]);
        write(&root, "key_slots", name, &bytes[HEADER_PREFIX_LEN..header_end]);
        let at = bytes.len() - TRAILER_LEN;
        let mut trailer = (at as u64).to_le_bytes().to_vec();
        trailer.extend_from_slice(&bytes[at..]);
        write(&root, "trailer", name, &trailer);
        write(&root, "index", name, &index_of(bytes).encode());
    }

    let other_slots = Header {
        version: format::VERSION,
        flags: 0,
        archive_id: ArchiveId([7; format::ARCHIVE_ID_LEN]),
        slots: vec![
            KeySlot::Unknown { kind: 200, body: b"a later slot kind".to_vec() },
            header_of(&archives[0].1).slots.remove(0),
        ],
    }
    .encode();
    write(&root, "header", "unknown-slot-first", &other_slots);
    write(&root, "key_slots", "unknown-slot-first", &other_slots[HEADER_PREFIX_LEN..]);
    write(&root, "index", "two-sessions-raw-page", &two_sessions().encode());

    let text = text(3 * PAGE_SIZE);
    for (name, plain) in [("text", &text[..]), ("empty", &[][..]), ("zeros", &[0u8; PAGE_SIZE][..])] {
        let mut seed = (plain.len() as u32).to_le_bytes().to_vec();
        seed.extend(zstd::bulk::compress(plain, 3).expect("zstd"));
        write(&root, "page", name, &seed);
    }
}

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) {
    assert!(bytes.len() < 64 * 1024, "{target}/{name} is {} bytes", bytes.len());
    let dir = root.join(target);
    fs::create_dir_all(&dir).expect("corpus dir");
    fs::write(dir.join(name), bytes).expect("writing a seed");
}

fn meta(mode: u32) -> Metadata {
    Metadata { mode, uid: 1000, gid: 1000, mtime_secs: 1_700_000_000, mtime_nanos: 123_456_789 }
}

fn build(add: impl FnOnce(&mut ArchiveWriter<Vec<u8>>)) -> Vec<u8> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(PAGE_SIZE).threads(1);
    let mut w = ArchiveWriter::new(Vec::new(), &Password::from(revault_lockbox_api::fuzz::PASSWORD), options)
        .expect("writer");
    add(&mut w);
    let bytes = w.finish().expect("finish");
    let mut opened = Archive::open(Cursor::new(&bytes), &Password::from(revault_lockbox_api::fuzz::PASSWORD))
        .expect("open");
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

fn small_tree() -> Vec<u8> {
    build(|w| {
        w.add_dir("d", &meta(0o755)).unwrap();
        w.add_file("d/a.txt", &meta(0o644), 13, &b"hello, world\n"[..]).unwrap();
        w.add_file("d/empty", &meta(0o600), 0, &b""[..]).unwrap();
        w.add_symlink("d/link", &meta(0o777), "a.txt").unwrap();
        w.add_hardlink("d/hard", &meta(0o644), "d/a.txt").unwrap();
        let big = text(2 * PAGE_SIZE + 1000);
        w.add_file("d/multi-page.txt", &meta(0o644), big.len() as u64, &big[..]).unwrap();
        w.add_file(b"d/not-utf8-\xff", &meta(0o640), 3, &b"abc"[..]).unwrap();
    })
}

fn one_file() -> Vec<u8> {
    build(|w| {
        w.add_file("only", &meta(0o644), 5, &b"only\n"[..]).unwrap();
    })
}

fn raw_pages() -> Vec<u8> {
    build(|w| {
        let noise = noise(PAGE_SIZE + 100, 0x9e37_79b9_7f4a_7c15);
        w.add_file("noise.bin", &meta(0o644), noise.len() as u64, &noise[..]).unwrap();
        w.add_file("after", &meta(0o644), 6, &b"after\n"[..]).unwrap();
    })
}

fn header_of(bytes: &[u8]) -> Header {
    let (mut header, slots_len) = Header::decode_prefix(bytes).expect("own header");
    header.slots = format::decode_key_slots(&bytes[HEADER_PREFIX_LEN..HEADER_PREFIX_LEN + slots_len])
        .expect("own key slots");
    header
}

/// The index plaintext of `bytes`, rebuilt from its entries: the page table
/// is not public, so it is laid out as the writer lays it (full pages from
/// the end of the header, each stored a little shorter than its plaintext).
fn index_of(bytes: &[u8]) -> Index {
    let opened = Archive::open(Cursor::new(bytes), &Password::from(revault_lockbox_api::fuzz::PASSWORD))
        .expect("open");
    let page_count = opened
        .entries()
        .iter()
        .filter_map(|e| match e.kind {
            EntryKind::File { size, location, .. } if size > 0 => {
                Some(location.first_page + (u64::from(location.offset) + size).div_ceil(PAGE_SIZE as u64))
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let start = (HEADER_PREFIX_LEN + Header::decode_prefix(bytes).expect("own header").1) as u64;
    let pages = (0..page_count)
        .map(|i| PageRecord {
            offset: start + i * 1000,
            stored_len: 1000,
            plain_len: PAGE_SIZE as u32,
            codec: Codec::Zstd,
        })
        .collect();
    let at = bytes.len() - TRAILER_LEN;
    let trailer =
        format::Trailer::decode(bytes[at..].try_into().expect("trailer"), at as u64).expect("trailer");
    Index {
        sessions: vec![Session { first_page: 0, salt: trailer.session_salt }],
        pages,
        entries: opened.entries().to_vec(),
    }
}

/// An index of an archive appended to once: two sessions, a raw page.
fn two_sessions() -> Index {
    let entry = |path: &[u8], kind| revault_lockbox_api::Entry {
        path: path.to_vec(),
        kind,
        mode: 0o644,
        uid: 0,
        gid: 0,
        mtime_secs: -1,
        mtime_nanos: 999_999_999,
    };
    Index {
        sessions: vec![
            Session { first_page: 0, salt: [1; format::SESSION_SALT_LEN] },
            Session { first_page: 1, salt: [2; format::SESSION_SALT_LEN] },
        ],
        pages: vec![
            PageRecord { offset: 127, stored_len: 60, plain_len: 4096, codec: Codec::Zstd },
            PageRecord { offset: 187, stored_len: 4112, plain_len: 4096, codec: Codec::Raw },
        ],
        entries: vec![
            entry(
                b"a",
                EntryKind::File {
                    size: 5000,
                    location: FileLocation { first_page: 0, offset: 100 },
                    sha256: [3; 32],
                },
            ),
            entry(b"b", EntryKind::Hardlink { target: b"a".to_vec() }),
            entry(b"c", EntryKind::Symlink { target: b"/abs/../x".to_vec() }),
            entry(
                b"e",
                EntryKind::File {
                    size: 0,
                    location: FileLocation { first_page: 2, offset: 0 },
                    sha256: [0; 32],
                },
            ),
            entry(b"z", EntryKind::Dir),
        ],
    }
}
