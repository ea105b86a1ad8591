//! Helpers the library's integration tests share: archives of temporary
//! trees with a test password and the cheapest KDF, snapshots of trees to
//! compare, and the skip rule (`skip`).
#![allow(dead_code)]

mod skip;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::{create_archive, Archive, CreateOptions, ExtractOptions, KdfParams, Password};

pub use skip::{skip, Need};

/// Where data pages start: after the 32-byte header prefix and the
/// 16 × 256-byte key-slot table of an archive locked with passwords or key
/// files (FORMAT.md §3.1).
pub const DATA_START: usize = 32 + 16 * 256;

/// Offset of the first data page of the archive `bytes`: the 32-byte header
/// prefix and 16 slots of the size it names at offset 30.
pub fn data_start(bytes: &[u8]) -> usize {
    32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]))
}
/// Offset of the first unit (data page or index node) of the archive
/// `bytes`: after its first session's header, whose clear part (64 bytes)
/// ends with the sealed body's length (FORMAT.md §3.9).
pub fn first_unit(bytes: &[u8]) -> usize {
    let s = data_start(bytes);
    s + 64 + u32::from_le_bytes(bytes[s + 60..s + 64].try_into().unwrap()) as usize
}

/// Where data page `number`'s unit (frame and sealed bytes) lies in the
/// first session, found by walking the frames from its first unit
/// (FORMAT.md §3.4): index leaves may lie between and before pages.
pub fn data_page_unit(bytes: &[u8], number: u64) -> std::ops::Range<usize> {
    let mut at = first_unit(bytes);
    loop {
        let kind = bytes[at];
        assert!(kind == 1 || kind == 2, "no data page {number} before the root");
        let len = 20 + u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
        if kind == 1 && u64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap()) == number {
            return at..at + len;
        }
        at += len;
    }
}

/// The fixed trailer at the end of every archive (FORMAT.md §3).
pub const TRAILER_LEN: usize = 216;

/// Entries of an open archive, in index order.
pub fn entries<S: revault_lockbox_api::storage::ReadAt>(a: &Archive<S>) -> Vec<revault_lockbox_api::Entry> {
    a.entries().unwrap().collect::<Result<_, _>>().unwrap()
}

pub fn password() -> Password {
    Password::from("test password")
}

/// Metadata of mode `mode`, owned by root, with a fixed mtime (2023-11-14).
pub fn meta(mode: u32) -> Metadata {
    Metadata::new(mode, 0, 0, 1_700_000_000, 0)
}

/// Options with the cheapest Argon2id cost: tests are about the format, not
/// about the KDF.
pub fn cheap() -> CreateOptions {
    CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS)
}

/// What a tree looks like: per relative path, kind, content digest or link
/// target, mode, mtime, and which hard-link group it is in.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot(pub BTreeMap<PathBuf, String>);

pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    let mut inodes: HashMap<(u64, u64), PathBuf> = HashMap::new();
    for item in walkdir::WalkDir::new(root).sort_by_file_name().min_depth(1) {
        let item = item.unwrap();
        let rel = item.path().strip_prefix(root).unwrap().to_path_buf();
        let md = fs::symlink_metadata(item.path()).unwrap();
        let ft = md.file_type();
        let mtime = format!("{}.{:09}", md.mtime(), md.mtime_nsec());
        let desc = if ft.is_symlink() {
            format!("link {:?} {mtime}", fs::read_link(item.path()).unwrap())
        } else if ft.is_dir() {
            format!("dir {:o} {mtime}", md.mode() & 0o7777)
        } else {
            let link = if md.nlink() > 1 {
                let first = inodes.entry((md.dev(), md.ino())).or_insert_with(|| rel.clone());
                format!(" linked-to {first:?}")
            } else {
                String::new()
            };
            let digest = sha256_hex(&fs::read(item.path()).unwrap());
            format!("file {:o} {} {digest} {mtime}{link}", md.mode() & 0o7777, md.len())
        };
        out.insert(rel, desc);
    }
    Snapshot(out)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Archives `inputs` of `base` into `dir/a.lbox` and returns its path.
pub fn archive_of(dir: &Path, base: &Path, inputs: &[&str], options: CreateOptions) -> PathBuf {
    let archive = dir.join("a.lbox");
    let inputs: Vec<PathBuf> = inputs.iter().map(PathBuf::from).collect();
    create_archive(&archive, base, &inputs, &password(), options).unwrap();
    archive
}

pub fn open(archive: &Path) -> Archive<fs::File> {
    Archive::open(fs::File::open(archive).unwrap(), &password()).unwrap()
}

/// Extracts into a new directory `dir/name` and returns it.
pub fn extract_to(archive: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    fs::create_dir(&out).unwrap();
    open(archive).extract(&out, &ExtractOptions::new().sync(false)).unwrap();
    out
}

/// Every file under `root` (recursively), for "nothing written" checks.
pub fn all_paths(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root).min_depth(1).into_iter().map(|e| e.unwrap().into_path()).collect()
}
