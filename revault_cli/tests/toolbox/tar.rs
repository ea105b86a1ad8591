//! Tar streams in (`create --from-tar`) and out (`export`), against real
//! GNU tar, and the malformed streams that must fail cleanly.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, File, FileTimes};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use super::*;

fn set_times(path: &Path, secs: u64, nanos: u32) {
    let t = UNIX_EPOCH + Duration::new(secs, nanos);
    File::open(path).unwrap().set_times(FileTimes::new().set_modified(t)).unwrap();
}

/// A tree with what tar round trips must keep: modes, nanosecond mtimes,
/// an empty file and directory, a symbolic link, hard links, a name that
/// is not UTF-8, and names and a link target longer than 100 bytes.
fn rich_tree(root: &Path) -> std::path::PathBuf {
    let tree = root.join("tree");
    let long = "n".repeat(120);
    for d in ["", "bin", "empty", "sub", "sub/deeper"] {
        fs::create_dir(tree.join(d)).unwrap();
    }
    let deep = tree.join("sub/deeper").join(&long);
    fs::create_dir(&deep).unwrap();
    let files: [(&Path, &[u8], u32); 5] = [
        (&tree.join("bin/tool"), b"#!/bin/sh\necho hi\n", 0o755),
        (&tree.join("secret.txt"), b"only me\n", 0o600),
        (&tree.join("empty.txt"), b"", 0o644),
        (&deep.join("file-with-a-long-path.txt"), b"far down\n", 0o640),
        (&tree.join("sub").join(OsStr::from_bytes(NON_UTF8)), &[0xff; 3000], 0o644),
    ];
    for (path, content, mode) in files {
        fs::write(path, content).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        set_times(path, 1_000_000_000, 123_456_789);
    }
    fs::hard_link(tree.join("bin/tool"), tree.join("sub/tool-again")).unwrap();
    fs::hard_link(tree.join("bin/tool"), tree.join("a-first-link")).unwrap();
    std::os::unix::fs::symlink("../bin/tool", tree.join("sub/link")).unwrap();
    std::os::unix::fs::symlink(format!("deeper/{long}/file-with-a-long-path.txt"), tree.join("sub/longlink"))
        .unwrap();
    fs::set_permissions(tree.join("sub"), fs::Permissions::from_mode(0o750)).unwrap();
    for d in ["bin", "empty", "sub/deeper"] {
        set_times(&tree.join(d), 1_100_000_000, 5);
    }
    tree
}

/// Every path below `root`: kind, mode, content or link target, mtime
/// (nanoseconds kept or dropped), and which other path shares its inode.
fn snapshot(root: &Path, nanos: bool) -> BTreeMap<Vec<u8>, String> {
    let mut inodes: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut all = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut items: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        items.sort();
        for path in items {
            let md = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
            let what = if md.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if md.file_type().is_symlink() {
                format!("link {:?}", fs::read_link(&path).unwrap())
            } else {
                let first = inodes.entry(md.ino()).or_insert_with(|| rel.clone()).clone();
                format!("file {:x?} same-as {:?}", fs::read(&path).unwrap(), String::from_utf8_lossy(&first))
            };
            let mtime =
                if nanos { format!("{}.{}", md.mtime(), md.mtime_nsec()) } else { md.mtime().to_string() };
            // A symbolic link's own mtime is not something tar sets everywhere.
            let mtime = if md.file_type().is_symlink() { String::new() } else { mtime };
            all.insert(rel, format!("{what} mode {:o} mtime {mtime}", md.mode() & 0o7777));
        }
    }
    all
}

fn gnu_tar(args: &[&str], cwd: &Path, input: Option<Vec<u8>>) -> Vec<u8> {
    let mut child = Process::new("tar")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("GNU tar is installed (scripts/test.sh installs it)");
    let mut stdin = child.stdin.take().unwrap();
    if let Some(bytes) = input {
        stdin.write_all(&bytes).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "tar {args:?} failed");
    out.stdout
}

#[test]
fn gnu_tar_round_trip_keeps_the_tree() {
    let work = tempfile::tempdir().unwrap();
    let tree = rich_tree(work.path());
    for (format, nanos) in [("gnu", false), ("posix", true)] {
        let stream = gnu_tar(&[&format!("--format={format}"), "-c", "-C", "tree", "."], work.path(), None);
        let archive = work.path().join(format!("{format}.lbox"));
        let out = run(lockbox()
            .arg("create")
            .args(CHEAP)
            .arg("--from-tar")
            .arg("-")
            .arg("-o")
            .arg(&archive)
            .write_stdin(stream));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let exported = run(lockbox().args(["export", "-o", "-"]).arg(&archive));
        assert_eq!(code(&exported), 0, "{}", stderr(&exported));
        let dest = work.path().join(format!("out-{format}"));
        fs::create_dir(&dest).unwrap();
        gnu_tar(&["-x", "-C", dest.to_str().unwrap()], work.path(), Some(exported.stdout));
        assert_eq!(snapshot(&tree, nanos), snapshot(&dest, nanos), "format {format}");
    }
}

#[test]
fn export_writes_a_file_and_some_paths_only() {
    let (work, archive) = archived_tree();
    let tar = work.path().join("part.tar");
    let out =
        run(lockbox().arg("export").arg(&archive).arg("tree/sub/").arg("tree/a.txt").arg("-o").arg(&tar));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listing = String::from_utf8(gnu_tar(&["-tf", tar.to_str().unwrap()], work.path(), None)).unwrap();
    assert_eq!(listing, "tree/a.txt\ntree/sub\ntree/sub/b.log\ntree/sub/c.txt\n");
    // The file exists now: refused without --overwrite, replaced with it.
    let again = run(lockbox().arg("export").arg(&archive).arg("tree/a.txt").arg("-o").arg(&tar));
    assert_fails(&again, 1, "already exists (use --overwrite to replace it)");
    let again =
        run(lockbox().args(["export", "--overwrite"]).arg(&archive).arg("tree/a.txt").arg("-o").arg(&tar));
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(gnu_tar(&["-tf", tar.to_str().unwrap()], work.path(), None), b"tree/a.txt\n");
}

#[test]
fn hard_link_whose_target_is_not_exported_becomes_a_file() {
    let work = tempfile::tempdir().unwrap();
    let tree = rich_tree(work.path());
    let archive = work.path().join("a.lbox");
    let out = run(lockbox().arg("create").args(CHEAP).arg("-o").arg(&archive).arg("-C").arg(&tree).arg("."));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let exported = run(lockbox().arg("export").arg(&archive).args(["sub", "-o", "-"]));
    assert_eq!(code(&exported), 0, "{}", stderr(&exported));
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    gnu_tar(&["-x", "-C", dest.to_str().unwrap()], work.path(), Some(exported.stdout));
    assert_eq!(fs::read(dest.join("sub/tool-again")).unwrap(), b"#!/bin/sh\necho hi\n");
}

#[test]
fn export_failures_leave_nothing_behind() {
    let (work, archive) = archived_tree();
    let tar = work.path().join("x.tar");
    let out = run(lockbox().arg("export").arg(&archive).arg("tree/nope").arg("-o").arg(&tar));
    assert_fails(&out, 1, "tree/nope: not found in the archive");
    let mut bytes = fs::read(&archive).unwrap();
    // A byte of the small files' data page, which starts a few hundred
    // bytes after the slot table (4,128 bytes); the middle of so small an
    // archive is its chunk index, which export never reads.
    bytes[4128 + 700] ^= 0x40;
    let damaged = work.path().join("damaged.lbox");
    fs::write(&damaged, bytes).unwrap();
    let out = run(lockbox().arg("export").arg(&damaged).arg("-o").arg(&tar));
    assert_fails(&out, 3, "damaged.lbox");
    assert_eq!(dir_names(work.path()), ["a.lbox", "damaged.lbox", "tree"]);
    // The contents alone (the same walk, `read::write_contents`) stop the
    // same way.
    let out = run(lockbox().args(["extract", "-O"]).arg(&damaged));
    assert_fails(&out, 3, "damaged.lbox");
}

#[test]
fn export_selects_a_directory_stored_only_through_what_is_below_it_as_extract_does() {
    // A tar stream without the directory's own entry: `a` names a subtree
    // for export as it does for extract, however it is spelled.
    let work = tempfile::tempdir().unwrap();
    let bytes = stream(&[(ustar(b"a/b/f", b'0', b"", 2), b"hi")]);
    let out = from_tar(work.path(), bytes);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for path in ["a", "./a/b/"] {
        let exported = run(lockbox().current_dir(work.path()).args(["export", "x.lbox", path, "-o", "-"]));
        assert_eq!(code(&exported), 0, "{path}: {}", stderr(&exported));
        assert_eq!(gnu_tar(&["-t", "-f", "-"], work.path(), Some(exported.stdout)), b"a/b/f\n", "{path}");
    }
    let out = run(lockbox().current_dir(work.path()).args(["export", "x.lbox", "a/c", "-o", "-"]));
    assert_fails(&out, 1, "a/c: not found in the archive");
}

/// One ustar header block: `name`, type flag, `link`, content `size`.
/// `lockbox create --from-tar - -o x.lbox` in `dir`, the stream on stdin.
fn from_tar(dir: &Path, stream: Vec<u8>) -> std::process::Output {
    run(lockbox()
        .current_dir(dir)
        .arg("create")
        .args(CHEAP)
        .args(["--from-tar", "-", "-o", "x.lbox"])
        .write_stdin(stream))
}

fn ustar(name: &[u8], kind: u8, link: &[u8], size: usize) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"14000000000");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A stream of `entries` (header, then content padded to 512 bytes), with
/// the two zero blocks at its end.
fn stream(entries: &[(Vec<u8>, &[u8])]) -> Vec<u8> {
    let mut s = Vec::new();
    for (header, content) in entries {
        s.extend_from_slice(header);
        s.extend_from_slice(content);
        s.resize(s.len().next_multiple_of(512), 0);
    }
    s.resize(s.len() + 1024, 0);
    s
}

#[test]
fn malformed_tar_streams_fail_cleanly_and_write_nothing() {
    let good = stream(&[(ustar(b"ok.txt", b'0', b"", 3), b"abc"), (ustar(b"two.txt", b'0', b"", 2), b"de")]);
    let mut bad_checksum = good.clone();
    bad_checksum[1024 + 1] ^= 1; // a byte of the second header's name
    let noise: Vec<u8> = (0..1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let cases: [(&str, Vec<u8>, &str); 9] = [
        // Nothing at all on stdin (the upstream tar failed): GNU tar says
        // "This does not look like a tar archive" and so does lockbox.
        ("empty input", Vec::new(), "tar stream: the input is empty: this does not look like a tar archive"),
        ("noise", noise, "entry 1"),
        ("truncated header", good[..512 + 512 + 300].to_vec(), "entry 2"),
        (
            "truncated content",
            good[..512 + 1].to_vec(),
            "entry 1 (ok.txt): truncated: its content ends after 1 of 3 bytes",
        ),
        ("bad checksum", bad_checksum, "entry 2"),
        ("dot-dot name", stream(&[(ustar(b"a/../../etc/cron", b'0', b"", 1), b"x")]), "`..`"),
        (
            "absolute hard link",
            stream(&[(ustar(b"ok.txt", b'0', b"", 3), b"abc"), (ustar(b"pw", b'1', b"/etc/passwd", 0), b"")]),
            "entry 2 (pw): a hard link with an absolute target",
        ),
        ("dangling hard link", stream(&[(ustar(b"pw", b'1', b"nothing", 0), b"")]), "not a file earlier"),
        (
            "file below a symbolic link",
            stream(&[(ustar(b"d", b'2', b"/etc", 0), b""), (ustar(b"d/cron", b'0', b"", 1), b"x")]),
            "entry d/cron: lies below d, which is not a directory",
        ),
    ];
    for (what, bytes, needle) in cases {
        let work = tempfile::tempdir().unwrap();
        let out = from_tar(work.path(), bytes.clone());
        assert_fails(&out, 1, needle);
        assert!(stderr(&out).contains("tar stream"), "{what}: {}", stderr(&out));
        assert!(dir_names(work.path()).is_empty(), "{what}: left {:?}", dir_names(work.path()));
        // Streamed to stdout: not a byte of archive.
        let out =
            run(lockbox().arg("create").args(CHEAP).args(["--from-tar", "-", "-o", "-"]).write_stdin(bytes));
        assert_eq!(code(&out), 1, "{what}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{what}: wrote {} bytes", out.stdout.len());
    }
    let good_out =
        run(lockbox().arg("create").args(CHEAP).args(["--from-tar", "-", "-o", "-"]).write_stdin(good));
    assert_eq!(code(&good_out), 0, "{}", stderr(&good_out));
}

#[test]
fn an_empty_tar_archive_is_an_empty_lockbox_archive() {
    // Unlike an empty input, GNU tar's empty archive (its end-of-archive
    // blocks) is a valid stream, listed as nothing by tar and by lockbox.
    let work = tempfile::tempdir().unwrap();
    let empty = gnu_tar(&["-cf", "-", "-T", "/dev/null"], work.path(), None);
    assert!(!empty.is_empty());
    let out = from_tar(work.path(), empty);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = run(lockbox().current_dir(work.path()).args(["list", "x.lbox"]));
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(listed.stdout.is_empty(), "{:?}", String::from_utf8_lossy(&listed.stdout));
}

#[test]
fn from_tar_reads_a_file_and_refuses_missing_ones_and_paths() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let tar = work.path().join("in.tar");
    fs::write(&tar, gnu_tar(&["-c", "tree"], work.path(), None)).unwrap();
    let out = run(lockbox().current_dir(work.path()).arg("create").args(CHEAP).args([
        "--from-tar",
        "in.tar",
        "-o",
        "t.lbox",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = run(lockbox().current_dir(work.path()).args(["list", "t.lbox"]));
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 6);
    let out = run(lockbox().current_dir(work.path()).arg("create").args(CHEAP).args([
        "--from-tar",
        "missing.tar",
        "-o",
        "m.lbox",
    ]));
    assert_fails(&out, 1, "--from-tar: opening missing.tar");
    let out = run(lockbox().current_dir(work.path()).args([
        "create",
        "--from-tar",
        "in.tar",
        "-o",
        "m.lbox",
        "tree",
    ]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!work.path().join("m.lbox").exists());
}
