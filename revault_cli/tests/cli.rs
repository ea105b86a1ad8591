//! Runs the real `lockbox` binary on temporary trees.
//!
//! Archives are made with the cheapest Argon2id cost (`CHEAP`), which is
//! stored in the archive, so opening them is cheap too; one test checks the
//! default cost.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, File, FileTimes};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use assert_cmd::Command;
use tempfile::TempDir;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr, CHEAP, PASSWORD};

/// 2001-09-09 01:46:40 UTC.
const T0: u64 = 1_000_000_000;
const NON_UTF8: &[u8] = b"caf\xe9.txt";

fn set_mtime(path: &Path, secs: u64, nanos: u32) {
    let t = UNIX_EPOCH + Duration::new(secs, nanos);
    File::open(path).unwrap().set_times(FileTimes::new().set_modified(t)).unwrap();
}

fn write(path: &Path, content: &[u8], mode: u32, secs: u64) {
    fs::write(path, content).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    set_mtime(path, secs, 123_456_789);
}

/// `root/tree`: files of several sizes and modes, an empty file, an empty
/// directory, a symbolic link, a hard link, a non-UTF-8 name, fixed mtimes.
fn make_tree(root: &Path) -> PathBuf {
    let tree = root.join("tree");
    for d in ["tree", "tree/bin", "tree/emptydir", "tree/sub", "tree/sub/deep"] {
        fs::create_dir(root.join(d)).unwrap();
    }
    write(&tree.join("a.txt"), b"hello\n", 0o640, T0);
    write(&tree.join("bin/run.sh"), b"#!/bin/sh\necho hi\n", 0o755, T0 + 1);
    write(&tree.join("empty"), b"", 0o600, T0 + 2);
    write(&tree.join(OsStr::from_bytes(NON_UTF8)), b"caf\xc3\xa9\n", 0o644, T0 + 3);
    corpora::write_text_file(&tree.join("sub/deep/note.txt"), 7, 300_000).unwrap();
    fs::set_permissions(tree.join("sub/deep/note.txt"), fs::Permissions::from_mode(0o604)).unwrap();
    set_mtime(&tree.join("sub/deep/note.txt"), T0 + 4, 5);
    std::os::unix::fs::symlink("a.txt", tree.join("link")).unwrap();
    fs::hard_link(tree.join("a.txt"), tree.join("hard")).unwrap();
    // Directories last, deepest first: adding entries changes their mtime.
    fs::set_permissions(tree.join("emptydir"), fs::Permissions::from_mode(0o750)).unwrap();
    for (i, d) in ["tree/sub/deep", "tree/sub", "tree/emptydir", "tree/bin", "tree"].iter().enumerate() {
        set_mtime(&root.join(d), T0 + 10 + i as u64, 0);
    }
    tree
}

/// Everything `ls -l` would tell about a tree, keyed by relative path.
fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let md = fs::symlink_metadata(&path).unwrap();
        let rel = path.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
        let common = format!("mode={:o} mtime={}.{:09}", md.mode() & 0o7777, md.mtime(), md.mtime_nsec());
        let desc = if md.file_type().is_symlink() {
            format!("link -> {:?}", fs::read_link(&path).unwrap())
        } else if md.is_dir() {
            stack.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            format!("dir {common}")
        } else {
            let content = fs::read(&path).unwrap();
            format!(
                "file {common} nlink={} len={} content={:x?}",
                md.nlink(),
                content.len(),
                &content[..content.len().min(64)]
            ) + &format!(" sum={}", content.iter().map(|&b| u64::from(b)).sum::<u64>())
        };
        out.insert(rel, desc);
    }
    out
}

/// Paths of everything under `root` that is not a directory.
fn non_dirs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// `lockbox create` at the cheap KDF cost, with `extra` flags; must succeed.
fn create(archive: &Path, dir: &Path, input: &str, extra: &[&str]) {
    create_cmd(archive, dir, input, extra).assert().success();
}

/// A temp dir holding `tree` and its archive `tree.lbox`.
fn archived_tree() -> (TempDir, PathBuf) {
    let work = TempDir::new().unwrap();
    make_tree(work.path());
    let archive = work.path().join("tree.lbox");
    create(&archive, work.path(), "tree", &[]);
    (work, archive)
}

fn empty_dir(work: &TempDir, name: &str) -> PathBuf {
    let d = work.path().join(name);
    fs::create_dir(&d).unwrap();
    d
}

#[test]
fn round_trip_restores_the_tree_exactly() {
    let (work, archive) = archived_tree();
    let listed = run(lockbox().args(["list", "-0"]).arg(&archive));
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let mut expected: Vec<Vec<u8>> = [
        "tree",
        "tree/a.txt",
        "tree/bin",
        "tree/bin/run.sh",
        "tree/empty",
        "tree/emptydir",
        "tree/hard",
        "tree/link",
        "tree/sub",
        "tree/sub/deep",
        "tree/sub/deep/note.txt",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    expected.push([b"tree/", NON_UTF8].concat());
    let mut lines: Vec<Vec<u8>> = listed.stdout.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    assert_eq!(lines.pop(), Some(vec![]), "output ends with a NUL");
    lines.sort();
    expected.sort();
    assert_eq!(lines, expected, "list -0 writes raw bytes, each name ended by a NUL");

    let dst = empty_dir(&work, "dst");
    lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).assert().success();
    assert_eq!(snapshot(&dst.join("tree")), snapshot(&work.path().join("tree")));
    let (a, hard) =
        (fs::metadata(dst.join("tree/a.txt")).unwrap(), fs::metadata(dst.join("tree/hard")).unwrap());
    assert_eq!(a.ino(), hard.ino(), "hard link restored as a hard link");
}

#[test]
fn list_long_shows_mode_owner_size_mtime_and_link_targets() {
    let (_work, archive) = archived_tree();
    let out = run(lockbox().args(["list", "-l", "--utc", "--full-time"]).arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12, "{text}");
    // Owner names as `id` gives them: the tree belongs to whoever runs this.
    let id = |flag: &str| {
        let out = std::process::Command::new("id").arg(flag).output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let owner = format!("{}/{}", id("-un"), id("-gn"));
    let line = |suffix: &str| {
        let l = lines.iter().find(|l| l.ends_with(suffix)).unwrap_or_else(|| panic!("no {suffix} in {text}"));
        l.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert_eq!(line(" tree/a.txt"), format!("-rw-r----- {owner} 6 2001-09-09T01:46:40+00:00 tree/a.txt"));
    assert_eq!(
        line(" tree/bin/run.sh"),
        format!("-rwxr-xr-x {owner} 18 2001-09-09T01:46:41+00:00 tree/bin/run.sh")
    );
    assert_eq!(line(" tree/empty"), format!("-rw------- {owner} 0 2001-09-09T01:46:42+00:00 tree/empty"));
    assert_eq!(
        line(" tree/sub/deep/note.txt"),
        format!("-rw----r-- {owner} 300000 2001-09-09T01:46:44+00:00 tree/sub/deep/note.txt")
    );
    assert_eq!(
        line(" tree/emptydir"),
        format!("drwxr-x--- {owner} 0 2001-09-09T01:46:52+00:00 tree/emptydir")
    );
    assert!(line(" tree/link -> a.txt").starts_with("lrwxrwxrwx "), "{text}");
    assert!(line(" tree/hard -> tree/a.txt").starts_with("hrw-r----- "), "{text}");
    for l in &lines {
        let fields: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(fields[0].len(), 10, "mode column in {l:?}");
        assert_eq!(fields[1], owner, "owner column in {l:?}");
        assert!(fields[2].parse::<u64>().is_ok(), "size column in {l:?}");
        assert_eq!(fields[3].len(), 25, "ISO date and time column in {l:?}");
        let date_at = |l: &str| l.find(l.split_whitespace().nth(3).unwrap()).unwrap();
        assert_eq!(date_at(l), date_at(lines[0]), "aligned columns: {text}");
    }
    assert!(line(r" tree/caf\351.txt").starts_with("-rw-r--r-- "), "invalid UTF-8 quoted as octal: {text}");
    assert!(!out.stdout.windows(NON_UTF8.len()).any(|w| w == NON_UTF8), "no raw non-UTF-8 bytes");
}

#[test]
fn wrong_password_exits_3_and_writes_nothing() {
    let (work, archive) = archived_tree();
    let dst = empty_dir(&work, "dst");
    let out =
        run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg("extract").arg(&archive).arg("-C").arg(&dst));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("wrong password"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "one line: {}", stderr(&out));
    assert_eq!(fs::read_dir(&dst).unwrap().count(), 0, "nothing written");
    for cmd in ["list", "info"] {
        let out = run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg(cmd).arg(&archive));
        assert_eq!(code(&out), 3, "{cmd}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{cmd} printed nothing");
    }
}

/// A tree of one small file and one incompressible file large enough for
/// pages of its own (64 KiB pages with `random-read`).
fn archived_two_files() -> (TempDir, PathBuf) {
    let work = TempDir::new().unwrap();
    fs::create_dir(work.path().join("d")).unwrap();
    fs::write(work.path().join("d/a.txt"), b"small and intact\n").unwrap();
    corpora::write_random_file(&work.path().join("d/big.bin"), 42, 400_000).unwrap();
    let archive = work.path().join("d.lbox");
    create(&archive, work.path(), "d", &["--profile", "random-read"]);
    (work, archive)
}

/// The trailer's length and where data pages start (FORMAT.md §2, §3).
const TRAILER_LEN: u64 = 216;
const DATA_START: u64 = 32 + 16 * 256;

/// The middle of the data pages of an archive `len` bytes long.
fn mid_data(len: u64) -> u64 {
    DATA_START + (len - DATA_START) / 2
}

fn flip(archive: &Path, at: u64) -> Vec<u8> {
    let original = fs::read(archive).unwrap();
    let mut bytes = original.clone();
    bytes[at as usize] ^= 0x01;
    fs::write(archive, &bytes).unwrap();
    original
}

#[test]
fn flipped_byte_exits_3_and_leaves_no_files() {
    let (work, archive) = archived_two_files();
    let len = fs::metadata(&archive).unwrap().len();
    let trailer = TRAILER_LEN;
    let bytes = fs::read(&archive).unwrap();
    // The header copy before the trailer (FORMAT.md §3.11).
    let copy = 32 + 16 * u64::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    // Index root, trailer: the archive does not open, nothing is written.
    for (n, at) in [len - trailer - copy - 8, len - trailer + 20, len - 1].into_iter().enumerate() {
        let original = flip(&archive, at);
        let dst = empty_dir(&work, &format!("dst{n}"));
        let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst));
        assert_eq!(code(&out), 3, "byte {at} of {len}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("lockbox: "), "{}", stderr(&out));
        assert_eq!(fs::read_dir(&dst).unwrap().count(), 0, "byte {at}: nothing written");
        fs::write(&archive, original).unwrap();
    }
    // The magic: read through the header copy, with a warning; every file.
    let original = flip(&archive, 2);
    let dst = empty_dir(&work, "dst-magic");
    let out = ok(run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst)));
    assert!(stderr(&out).contains("read from their copy"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(dst.join("d")).unwrap().count(), 2);
    fs::write(&archive, original).unwrap();
    // A data page of big.bin: extraction stops; big.bin never appears, not
    // even partly or under a temporary name.
    flip(&archive, mid_data(len));
    let dst = empty_dir(&work, "dst-page");
    let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("page"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--keep-going"), "hint: {}", stderr(&out));
    let left: Vec<PathBuf> = non_dirs(&dst).into_iter().filter(|p| !p.ends_with("d/a.txt")).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let cat = run(lockbox().args(["cat"]).arg(&archive).arg("d/big.bin"));
    assert_eq!(code(&cat), 3, "{}", stderr(&cat));
}

#[test]
fn keep_going_restores_intact_files_and_lists_damaged_ones() {
    let (work, archive) = archived_two_files();
    let len = fs::metadata(&archive).unwrap().len();
    flip(&archive, mid_data(len));
    let dst = empty_dir(&work, "dst");
    let out = run(lockbox().arg("extract").arg("--keep-going").arg(&archive).arg("-C").arg(&dst));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("d/big.bin"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("d/a.txt"), "{}", stderr(&out));
    assert_eq!(fs::read(dst.join("d/a.txt")).unwrap(), b"small and intact\n");
    assert!(!dst.join("d/big.bin").exists());
}

#[test]
fn existing_file_is_refused_unless_overwrite() {
    let (work, archive) = archived_tree();
    let dst = empty_dir(&work, "dst");
    lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).assert().success();
    let target = dst.join("tree/a.txt");
    fs::write(&target, b"changed since\n").unwrap();

    let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--overwrite"), "hint: {}", stderr(&out));
    assert_eq!(fs::read(&target).unwrap(), b"changed since\n", "left unchanged");

    lockbox().arg("extract").arg("--overwrite").arg(&archive).arg("-C").arg(&dst).assert().success();
    assert_eq!(fs::read(&target).unwrap(), b"hello\n");
}

#[test]
fn no_password_is_a_usage_error() {
    let (work, archive) = archived_tree();
    for args in [vec!["list", archive.to_str().unwrap()], vec!["create", "-o", "new.lbox", "tree"]] {
        let out = run(lockbox().env_remove("LOCKBOX_PASSWORD").current_dir(work.path()).args(&args));
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no password"), "{}", stderr(&out));
    }
    assert!(!work.path().join("new.lbox").exists());
}

#[test]
fn password_file_first_line_is_the_password() {
    let (work, archive) = archived_tree();
    let file = work.path().join("pw");
    fs::write(&file, format!("{PASSWORD}\r\nsecond line ignored\n")).unwrap();
    let out = run(lockbox()
        .env_remove("LOCKBOX_PASSWORD")
        .arg("--password-file")
        .arg(&file)
        .arg("list")
        .arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    fs::write(&file, "other\n").unwrap();
    let out = run(lockbox().arg("list").arg("--password-file").arg(&file).arg(&archive));
    assert_eq!(code(&out), 3, "the file wins over the environment: {}", stderr(&out));
}

/// `extract -C DIR` makes a missing DIR (as restic does; it refused one),
/// but only once the archive opened: a wrong password leaves nothing. A
/// DIR that cannot be made fails in one line naming it.
#[test]
fn extract_makes_a_missing_directory_once_the_archive_opens() {
    let (work, archive) = archived_tree();
    let dst = work.path().join("not-there/yet");
    let out =
        run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).env("LOCKBOX_PASSWORD", "wrong"));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!work.path().join("not-there").exists(), "a wrong password made the directory");
    let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(snapshot(&dst.join("tree")), snapshot(&work.path().join("tree")));
    let below_a_file = work.path().join("tree/a.txt/sub");
    let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&below_a_file));
    assert_ne!(code(&out), 0);
    let err = stderr(&out);
    assert!(err.starts_with("lockbox: ") && err.contains("a.txt/sub") && err.lines().count() == 1, "{err}");
}

#[test]
fn archive_streamed_to_stdout_extracts_to_the_same_tree() {
    let work = TempDir::new().unwrap();
    make_tree(work.path());
    let out = run(lockbox().arg("create").args(CHEAP).args(["-o", "-", "-C"]).arg(work.path()).arg("tree"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.starts_with(b"\x89LBOX"), "an archive on stdout");
    let archive = work.path().join("streamed.lbox");
    fs::write(&archive, &out.stdout).unwrap();
    let dst = empty_dir(&work, "dst");
    lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).assert().success();
    assert_eq!(snapshot(&dst.join("tree")), snapshot(&work.path().join("tree")));
}

#[test]
fn cat_writes_one_file() {
    let (work, archive) = archived_tree();
    let out = run(lockbox().arg("cat").arg(&archive).arg("tree/sub/deep/note.txt"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, fs::read(work.path().join("tree/sub/deep/note.txt")).unwrap());
    let out = run(lockbox().arg("cat").arg(&archive).arg("tree/hard"));
    assert_eq!(out.stdout, b"hello\n", "a hard link reads its target");
    let out = run(lockbox().arg("cat").arg(&archive).arg("tree/sub"));
    assert_eq!(code(&out), 1, "a directory is not a file: {}", stderr(&out));
    assert!(stderr(&out).contains("tree/sub"), "{}", stderr(&out));
}

#[test]
fn info_json_reports_counts_and_the_stored_kdf_cost() {
    let (_work, archive) = archived_tree();
    let out = run(lockbox().args(["info", "--json"]).arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("info --json is one JSON object");
    let n = |key: &str| json[key].as_u64().unwrap_or_else(|| panic!("{key} in {json}"));
    assert_eq!([n("version"), n("files"), n("dirs"), n("symlinks"), n("hardlinks")], [4, 5, 5, 1, 1]);
    let kdf = &json["kdf"][0];
    assert_eq!(kdf["algorithm"], "argon2id");
    assert_eq!([&kdf["memory_kib"], &kdf["passes"], &kdf["lanes"]], [1024, 1, 1]);
    // The session header: 64 clear bytes ending with its sealed body's length.
    let bytes = fs::read(&archive).unwrap();
    let at = DATA_START as usize + 60;
    let header = 64 + u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
    // The header copy before the trailer (FORMAT.md §3.11) repeats the
    // header and slot table.
    let parts = DATA_START + header + n("stored_page_bytes") + n("index_bytes") + DATA_START + TRAILER_LEN;
    assert_eq!(n("archive_bytes"), parts, "{json}");
    assert!(n("content_bytes") > 0 && n("pages") >= 1 && n("key_slots") == 1, "{json}");
    assert!(json["compression_ratio"].as_f64().is_some(), "{json}");
    let text = run(lockbox().arg("info").arg(&archive));
    assert!(String::from_utf8_lossy(&text.stdout).contains("compression ratio"));
}

#[test]
fn default_kdf_cost_is_rfc_9106_second_option() {
    let work = TempDir::new().unwrap();
    fs::write(work.path().join("f"), b"x").unwrap();
    let archive = work.path().join("f.lbox");
    lockbox().arg("create").arg("-o").arg(&archive).arg("-C").arg(work.path()).arg("f").assert().success();
    let out = run(lockbox().args(["info", "--json"]).arg(&archive));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kdf = &json["kdf"][0];
    assert_eq!([&kdf["memory_kib"], &kdf["passes"], &kdf["lanes"]], [65536, 3, 4], "{json}");
}

#[test]
fn kdf_cost_beyond_reader_limits_is_a_usage_error() {
    let work = TempDir::new().unwrap();
    fs::write(work.path().join("f"), b"x").unwrap();
    let archive = work.path().join("f.lbox");
    let out = run(lockbox()
        .args(["create", "--kdf-memory", "4096", "-o"])
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("f"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!archive.exists());
}

#[test]
fn extract_with_path_filter_extracts_only_that_subtree() {
    let (work, archive) = archived_tree();
    let dst = empty_dir(&work, "dst");
    lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).arg("tree/sub/").assert().success();
    let mut got: Vec<PathBuf> =
        non_dirs(&dst).into_iter().map(|p| p.strip_prefix(&dst).unwrap().to_path_buf()).collect();
    got.sort();
    assert_eq!(got, [PathBuf::from("tree/sub/deep/note.txt")]);
    assert!(!dst.join("tree/emptydir").exists());

    let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dst).arg("tree/nope"));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("tree/nope"), "{}", stderr(&out));
}

#[test]
fn closed_stdout_exits_quietly() {
    let work = TempDir::new().unwrap();
    corpora::write_text_file(&work.path().join("big.txt"), 1, 4 << 20).unwrap();
    let archive = work.path().join("big.lbox");
    create(&archive, work.path(), "big.txt", &[]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .arg("cat")
        .arg(&archive)
        .arg("big.txt")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.stderr.is_empty(), "no message: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "`lockbox cat x | head` is not a failure");
}

#[test]
fn created_archive_is_not_left_as_plain_text() {
    let (work, archive) = archived_tree();
    let bytes = fs::read(&archive).unwrap();
    let note = fs::read(work.path().join("tree/sub/deep/note.txt")).unwrap();
    assert!(!bytes.windows(32).any(|w| w == &note[1000..1032]), "content is encrypted");
    assert!(!bytes.windows(10).any(|w| w == b"tree/a.txt"), "names are encrypted");
}

#[test]
fn verify_passes_intact_and_names_damaged_entries() {
    let (work, archive) = archived_two_files();
    let out = run(lockbox().arg("verify").arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("OK: 2 files"), "{}", stderr(&out));
    let len = fs::metadata(&archive).unwrap().len();
    flip(&archive, mid_data(len));
    let before: Vec<_> = fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    let out = run(lockbox().arg("verify").arg(&archive));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("d/big.bin") && stderr(&out).contains("page"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("d/a.txt"), "{}", stderr(&out));
    let after: Vec<_> = fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before, after, "verify writes nothing");
}

#[test]
fn streaming_into_the_archived_tree_does_not_store_the_archive() {
    let work = TempDir::new().unwrap();
    make_tree(work.path());
    let archive = work.path().join("tree/self.lbox");
    let out = File::create(&archive).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .arg("create")
        .args(CHEAP)
        .args(["-o", "-", "-C"])
        .arg(work.path())
        .arg("tree")
        .stdout(out)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(String::from_utf8_lossy(&status.stderr).contains("self.lbox: file is the archive; not dumped"));
    let listed = run(lockbox().arg("list").arg(&archive));
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("self.lbox"));
}

/// `lockbox ARGS` run under umask `mask` (set by a shell, so that the
/// test process keeps its own).
pub(crate) fn under_umask(mask: &str, args: &[&OsStr]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.env("LOCKBOX_PASSWORD", PASSWORD)
        .arg("-c")
        .arg(format!("umask {mask} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .args(args);
    run(&mut cmd)
}

#[test]
fn extract_applies_the_umask_and_drops_setuid_unless_p() {
    let work = TempDir::new().unwrap();
    empty_dir(&work, "m");
    let modes =
        [("m/suid", 0o4755), ("m/open", 0o666), ("m/wide", 0o777), ("m/sticky", 0o1777), ("m/sgid", 0o2770)];
    for (path, mode) in modes {
        let full = work.path().join(path);
        if path.ends_with("suid") || path.ends_with("open") {
            write(&full, b"#!/bin/sh\n", mode, T0);
        } else {
            fs::create_dir(&full).unwrap();
            fs::set_permissions(&full, fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    let archive = work.path().join("m.lbox");
    create(&archive, work.path(), "m", &[]);
    // As root -p is the default (GNU tar's): the masked case asks for the
    // umask.
    for (flag, expected) in
        [("--no-same-permissions", [0o750, 0o640, 0o750, 0o750, 0o750]), ("-p", modes.map(|m| m.1))]
    {
        let dst = empty_dir(&work, if flag == "-p" { "exact" } else { "masked" });
        let args: Vec<&OsStr> =
            vec!["extract".as_ref(), archive.as_ref(), "-C".as_ref(), dst.as_ref(), flag.as_ref()];
        let out = under_umask("027", &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        for ((path, _), want) in modes.iter().zip(expected) {
            let got = fs::symlink_metadata(dst.join(path)).unwrap().mode() & 0o7777;
            assert_eq!(got, want, "{path} {flag:?}: {got:o} != {want:o}");
        }
    }
}

#[test]
fn verify_refuses_what_extract_refuses() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../revault_lockbox_api/tests/vectors/hostile");
    let work = TempDir::new().unwrap();
    let names =
        ["below-symlink", "nul-in-link-target", "oversized-xattr", "sparse-overlap", "sparse-past-size"];
    for name in names {
        let archive = vectors.join(format!("{name}.lbox"));
        for command in ["verify", "extract"] {
            let dst = work.path().join(format!("{name}-{command}"));
            fs::create_dir(&dst).unwrap();
            let mut cmd = lockbox();
            cmd.env("LOCKBOX_PASSWORD", "hostile").arg(command).arg(&archive);
            if command == "extract" {
                cmd.arg("-C").arg(&dst);
            }
            let out = run(&mut cmd);
            let err = stderr(&out);
            assert_eq!(code(&out), 3, "{name} {command}: {err}");
            assert!(err.starts_with("lockbox: ") && err.lines().count() == 1, "{name} {command}: {err}");
            assert_eq!(fs::read_dir(&dst).unwrap().count(), 0, "{name} {command} wrote something");
        }
    }
}

#[test]
fn an_unprivileged_user_extracts_the_tree_exactly() {
    // Root may name an O_TMPFILE inode in ways others may not; run the
    // extraction as `nobody` (the tests run as root; setpriv is util-linux).
    assert_eq!(fs::metadata("/proc/self").unwrap().uid(), 0, "this test runs as root");
    let (work, archive) = archived_tree();
    fs::set_permissions(work.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o644)).unwrap();
    let dst = empty_dir(&work, "dst");
    std::os::unix::fs::chown(&dst, Some(65534), Some(65534)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.env("LOCKBOX_PASSWORD", PASSWORD)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            "umask 022 && exec \"$0\" \"$@\"",
        ])
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .arg("extract")
        .arg(&archive)
        .arg("-C")
        .arg(&dst);
    let out = run(&mut cmd);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(snapshot(&dst.join("tree")), snapshot(&work.path().join("tree")));
    assert_eq!(fs::metadata(dst.join("tree/a.txt")).unwrap().uid(), 65534);
}
