//! What reading an `s3://` archive costs in requests, counted by the
//! server (every request moto logs for the bucket: GET, HEAD, LIST, PUT,
//! copy), on an archive whose entries index has two levels below its root:
//! `cat` of one small file, `log`, `key list`, `info` and a mount's first
//! `ls`. A lookup reads the nodes on its way and no leaf it does not use
//! (issue 51: it used to have the store fetch the rest of its node's
//! leaves, a dozen GETs for nothing); `info` reads the index and no data
//! page (it read every chunked file's list: 310 requests on the Linux
//! tree's archive).

use std::fs;
use std::path::Path;

use tempfile::TempDir;

use super::server::Moto;
use super::{create, lockbox, mount_command, server, url, BUCKET};
use crate::mount_cli::{have_fuse, Mounted};
use crate::util::{ok, run};

/// Directories, files in each, bytes of random content in each file.
const DIRS: usize = 32;
const FILES: usize = 500;
const FILE_LEN: u64 = 2048;
/// Bytes of the file stored as chunks (above the smallest chunk) last in
/// each directory: its list lies in a data page of its own, which `info`
/// must not read.
const CHUNKED_LEN: u64 = 96 << 10;

/// A component of about 200 bytes: paths of about 610 bytes make an
/// index key (and a leaf's entry) wide, so 64 KiB leaves hold about 100
/// entries and 64 KiB internal nodes about 100 children: the 16,000 files
/// fill about 165 leaves under two internal nodes, below the root's top.
/// Their random content spreads the leaves through 32 MiB of data pages,
/// as a real tree's do.
fn long(tag: &str, n: usize) -> String {
    format!("{}_{tag}{n:04}", "a_long_name_that_widens_every_index_key_".repeat(5))
}

fn tall_tree(root: &Path) {
    for d in 0..DIRS {
        let dir = root.join("tree").join(long("dir", d)).join(long("sub", d));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES {
            let seed = (d * FILES + f) as u64;
            corpora::write_random_file(&dir.join(long("file", f)), seed, FILE_LEN).unwrap();
        }
        let seed = (DIRS * FILES + d) as u64;
        corpora::write_random_file(&dir.join("zz_chunked"), seed, CHUNKED_LEN).unwrap();
    }
}

/// Requests the server logged for the bucket since `mark`
/// ([`Moto::requests`] before), each line kept for the failure message.
fn since(moto: &Moto, mark: usize) -> (usize, String) {
    let lines = moto.requests(BUCKET);
    (lines.len() - mark, lines[mark..].join("\n"))
}

/// Runs `args` on the archive; its output and the requests it made.
fn counted(moto: &Moto, args: &[&str]) -> (Vec<u8>, usize, String) {
    let mark = moto.requests(BUCKET).len();
    let out = ok(run(lockbox(&moto.endpoint()).args(args)));
    let (n, lines) = since(moto, mark);
    (out.stdout, n, lines)
}

/// A server holding the tall archive under `tall.lbox`, and the
/// directory whose `src` holds its tree; `None` (skipping) without moto.
fn tall_archive() -> Option<(Moto, TempDir)> {
    let moto = server()?;
    let tmp = TempDir::new().unwrap();
    tall_tree(&tmp.path().join("src"));
    ok(create(&moto.endpoint(), &url("tall.lbox"), &tmp.path().join("src"), "tree", &[]));
    Some((moto, tmp))
}

#[test]
fn reads_of_a_tall_index_on_s3_take_a_handful_of_requests() {
    let Some((moto, tmp)) = tall_archive() else { return };
    let (ep, src) = (moto.endpoint(), tmp.path().join("src"));
    let local = tmp.path().join("tall.lbox");
    fs::write(&local, moto.get(BUCKET, "tall.lbox").unwrap()).unwrap();
    let archive = url("tall.lbox");

    // In a directory under each internal node, its first file (the
    // directory's entry in the same leaf) and one further on (the
    // directory's entry in an earlier leaf, which the lookup reads to check
    // that no path above the file is a file).
    for (d, f, bound) in [(5, 0, 6), (5, 321, 7), (25, 0, 7), (25, 321, 8)] {
        let path = format!("tree/{}/{}/{}", long("dir", d), long("sub", d), long("file", f));
        let (bytes, n, lines) = counted(&moto, &["cat", &archive, &path]);
        eprintln!("cat of file {d}/{f}: {n} requests\n{lines}");
        assert_eq!(bytes, fs::read(src.join(&path)).unwrap());
        let from_file = ok(run(lockbox(&ep).arg("cat").arg(&local).arg(&path)));
        assert_eq!(bytes, from_file.stdout, "cat of the local copy");
        // The tail (trailer, root, the last internal node, the header
        // copy) and the LIST of the archive's parts, sent with it; the
        // archive's first 128 KiB (the first session's header, which
        // opening checks, and the first leaves: `tree`'s entry, and in
        // directory 5 the file's); the first internal node; the file's
        // leaf (directory 25) and the directory's (file 321); the page
        // table's leaf; the data page. Before issue 51's fix: 12, the lookup's node's
        // later leaves fetched ahead; then 7 and 8: the lookup's leaf read
        // in the first 128 KiB continued the header's reads as a stream
        // and read 100 KiB ahead.
        assert!(n <= bound, "cat of file {d}/{f}: {n} requests, at most {bound}:\n{lines}");
    }

    // Each open: one LIST of the parts (none here) beside the first GET.
    // `log`: the first 128 KiB, for the session header opening checks;
    // `key list` reads the slots from the header copy the tail brought.
    for (args, bound) in [(&["log"][..], 3), (&["key", "list"][..], 2)] {
        let (out, n, lines) = counted(&moto, &[args, &[archive.as_str()]].concat());
        eprintln!("{args:?}: {n} requests\n{lines}");
        let from_file = ok(run(lockbox(&ep).args(args).arg(&local)));
        assert_eq!(out, from_file.stdout, "{args:?} of the local copy");
        assert!(n <= bound, "{args:?}: {n} requests, at most {bound}:\n{lines}");
    }

    let (_, listed, _) = counted(&moto, &["list", &archive]);
    let trace = tmp.path().join("info.trace");
    let mark = moto.requests(BUCKET).len();
    let out = ok(run(lockbox(&ep).env("LOCKBOX_S3_TRACE", &trace).args(["info", &archive])));
    let (n, lines) = since(&moto, mark);
    eprintln!("info: {n} requests (list: {listed})\n{lines}");
    let from_file = ok(run(lockbox(&ep).arg("info").arg(&local)));
    assert_eq!(out.stdout, from_file.stdout, "info of the local copy");
    // Every entries leaf, as `list` reads them, and the chunk index and
    // page table (a leaf each, or in the tail), neighbours merged as
    // answers arrive (32 to 40 measured); no data page, not even the
    // chunked files' lists (63 requests, 36 MB, when it read them).
    assert!(n <= listed + 4, "info: {n} requests, list: {listed}:\n{lines}");
    let json = ok(run(lockbox(&ep).args(["info", "--json"]).arg(&local)));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let index = json["index_bytes"].as_u64().unwrap();
    let (gets, fetched) = traced_gets(&trace);
    // The index, the header, and a read that misses rounded up to 128
    // KiB: far below the 32 chunked files' pages (a MiB each).
    let bound = index + gets as u64 * (128 << 10);
    assert!(fetched <= bound, "info fetched {fetched} bytes in {gets} GETs, index {index}");
}

/// The GETs of a `LOCKBOX_S3_TRACE` file (`get START END OFFSET LEN
/// IN_FLIGHT WHY`; the opening GET of the tail is not among them): how
/// many, and the bytes asked for.
fn traced_gets(trace: &Path) -> (usize, u64) {
    let text = fs::read_to_string(trace).unwrap();
    let lens = text
        .lines()
        .filter(|l| l.starts_with("get "))
        .map(|l| l.split(' ').nth(4).and_then(|n| n.parse::<u64>().ok()).unwrap_or_else(|| panic!("{l}")));
    lens.fold((0, 0), |(n, bytes), len| (n + 1, bytes + len))
}

#[test]
fn a_mounts_first_ls_of_a_tall_index_on_s3_takes_a_handful_of_requests() {
    if !have_fuse() {
        return;
    }
    let Some((moto, tmp)) = tall_archive() else { return };
    let mark = moto.requests(BUCKET).len();
    let m = Mounted::spawn(mount_command(&moto.endpoint(), "tall.lbox"), tmp.path());
    let names: Vec<_> = fs::read_dir(&m.point).unwrap().map(|e| e.unwrap().file_name()).collect();
    let (n, lines) = since(&moto, mark);
    assert_eq!(names, ["tree"]);
    eprintln!("mount and its first ls: {n} requests\n{lines}");
    assert!(n <= 5, "mount and its first ls: {n} requests, at most 5 (a LIST among them):\n{lines}");
    drop(m);
}
