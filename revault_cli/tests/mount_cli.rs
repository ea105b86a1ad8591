//! `lockbox mount` and `umount` with a real FUSE mount (root and
//! `/dev/fuse`; else a skip, a failure under `LOCKBOX_REQUIRE_FUSE=1`):
//! a tree read back through the mount with std::fs and the real `diff -r`,
//! `ls`, `find` and `getfattr`; a damaged page an EIO for its file only;
//! every write EROFS; bad input refused before anything is mounted; the
//! archive bytes one small file's read costs.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

const EIO: i32 = 5;
const EROFS: i32 = 30;

/// Whether a FUSE mount can be made here; prints the skip when not.
pub fn have_fuse() -> bool {
    let can = is_root() && Path::new("/dev/fuse").exists();
    if !can {
        skip(Need::Fuse, "a FUSE mount needs root and /dev/fuse");
    }
    can
}

fn is_mounted(point: &Path) -> bool {
    let table = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let point = point.to_str().unwrap();
    table.lines().any(|l| l.split(' ').nth(4) == Some(point))
}

/// A `lockbox mount` child serving `archive` at a fresh directory;
/// unmounted with `lockbox umount` when dropped, which must end the child
/// with exit 0.
pub struct Mounted {
    child: Option<Child>,
    pub point: PathBuf,
    stderr: PathBuf,
}

impl Mounted {
    fn new(archive: &Path, work: &Path) -> Mounted {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbox"));
        cmd.env("LOCKBOX_PASSWORD", PASSWORD).arg("mount").arg(archive);
        Mounted::spawn(cmd, work)
    }

    /// Runs `cmd` (`lockbox [OPTIONS] mount ARCHIVE`) with `work/mnt`
    /// added as the mount point, and waits for the mount.
    pub fn spawn(mut cmd: Command, work: &Path) -> Mounted {
        let point = work.join("mnt");
        fs::create_dir_all(&point).unwrap();
        let stderr = work.join("mount.err");
        let child =
            cmd.arg(&point).stdin(Stdio::null()).stderr(fs::File::create(&stderr).unwrap()).spawn().unwrap();
        let mut m = Mounted { child: Some(child), point, stderr };
        let start = Instant::now();
        while !is_mounted(&m.point) {
            if let Some(status) = m.child.as_mut().unwrap().try_wait().unwrap() {
                m.child = None;
                panic!("lockbox mount ended with {status}: {}", m.errors());
            }
            assert!(start.elapsed() < Duration::from_secs(20), "not mounted after 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    fn errors(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends `kill -SIGNAL` and waits up to 20 s for the mount to end; a
    /// mount still there then is unmounted (lazily) before failing.
    fn signal(mut self, signal: &str) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        assert!(Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success());
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                still_mounted(&self.point);
                panic!("lockbox mount still runs 20 s after SIG{signal}: {}", self.errors());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let out =
            Command::new(env!("CARGO_BIN_EXE_lockbox")).arg("umount").arg(&self.point).output().unwrap();
        let status = child.wait().unwrap();
        if !std::thread::panicking() {
            assert!(out.status.success(), "umount: {}", String::from_utf8_lossy(&out.stderr));
            assert!(status.success(), "lockbox mount: {status}: {}", self.errors());
            assert!(!is_mounted(&self.point));
        }
    }
}

/// Whether `point` is still mounted; if so, it is unmounted (lazily), so
/// that a failing test leaves no mount behind.
fn still_mounted(point: &Path) -> bool {
    let left = is_mounted(point);
    if left {
        let _ = Command::new("umount").arg("-l").arg(point).status();
    }
    left
}

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every path below `root` with what a round trip keeps: kind, mode,
/// owner, mtime to the nanosecond, size, link target.
fn described(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for item in fs::read_dir(&dir).unwrap() {
            let path = item.unwrap().path();
            let md = fs::symlink_metadata(&path).unwrap();
            let target = fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
            let size = if md.is_dir() { 0 } else { md.size() };
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            out.push(format!(
                "{rel} {:o} {}:{} {}.{:09} {size} {target}",
                md.mode(),
                md.uid(),
                md.gid(),
                md.mtime(),
                md.mtime_nsec()
            ));
            if md.is_dir() {
                todo.push(path);
            }
        }
    }
    out.sort();
    out
}

fn archive_of(work: &Path, src: &Path, inputs: &[&str], extra: &[&str]) -> PathBuf {
    let archive = work.join("a.lbox");
    let mut cmd = create_cmd(&archive, src, inputs[0], extra);
    cmd.args(&inputs[1..]);
    ok(run(&mut cmd));
    archive
}

/// A fresh work directory holding `a.lbox`, an archive of one file.
fn archive_of_one_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join(name), bytes).unwrap();
    let archive = archive_of(work.path(), &src, &[name], &[]);
    (work, archive)
}

#[test]
fn a_tree_reads_back_through_the_mount() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let t = src.display();
    fs::create_dir_all(src.join("docs/deep/er")).unwrap();
    fs::write(src.join("docs/a.txt"), b"alpha\n").unwrap();
    fs::write(
        src.join("docs/deep/er/x.bin"),
        (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    fs::write(src.join("run.sh"), b"#!/bin/sh\n").unwrap();
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::set_permissions(src.join("docs/deep"), fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("../run.sh", src.join("docs/link")).unwrap();
    fs::hard_link(src.join("docs/a.txt"), src.join("docs/same.txt")).unwrap();
    sh(&format!(
        "truncate -s 5M {t}/sparse && printf end >> {t}/sparse && chown 1234:5678 {t}/docs/a.txt \
         && touch -h -d '2021-03-04 05:06:07.123456789' {t}/docs/link {t}/docs/a.txt {t}/docs/deep"
    ));
    let xattrs =
        Command::new("setfattr").args(["-n", "user.note", "-v", "hello"]).arg(src.join("run.sh")).status();
    if !xattrs.is_ok_and(|s| s.success()) {
        return skip(Need::Xattrs, "setfattr is missing or the file system takes no user xattrs");
    }
    let archive = archive_of(work.path(), &src, &["docs", "run.sh", "sparse"], &["--xattrs"]);
    let m = Mounted::new(&archive, work.path());
    let mnt = &m.point;

    assert_eq!(described(mnt), described(&src));
    sh(&format!("diff -r --no-dereference {t} {}", mnt.display()));
    let (file, link) =
        (fs::metadata(mnt.join("docs/a.txt")).unwrap(), fs::metadata(mnt.join("docs/same.txt")).unwrap());
    assert_eq!(file.ino(), link.ino(), "hard links are one inode");
    assert!(file.nlink() >= 2);
    assert_ne!(file.ino(), fs::metadata(mnt.join("run.sh")).unwrap().ino());
    let sparse = fs::metadata(mnt.join("sparse")).unwrap();
    assert_eq!(sparse.len(), 5 * 1024 * 1024 + 3);
    assert!(sparse.blocks() < 64, "holes take no blocks: {}", sparse.blocks());
    assert_eq!(sh(&format!("getfattr -n user.note --only-values {}/run.sh", mnt.display())), "hello");
    let listed = sh(&format!("ls -lR {} | wc -l", mnt.display()));
    assert!(listed.trim().parse::<u32>().unwrap() > 10);
    let found = sh(&format!("find {} -mindepth 1 | wc -l", mnt.display()));
    let stored = String::from_utf8(ok(run(lockbox().arg("list").arg(&archive))).stdout).unwrap();
    assert_eq!(found.trim().parse::<usize>().unwrap(), stored.lines().count());
    drop(m);
}

/// README: SIGINT, SIGTERM and SIGHUP each unmount and exit 0, no mount
/// left behind. (A second watcher of signals in `mount` raced the one
/// that ends the process, which often won and left the mount.)
#[test]
fn sigint_sigterm_and_sighup_each_unmount_and_exit_0() {
    if !have_fuse() {
        return;
    }
    let (work, archive) = archive_of_one_file("note", b"kept\n");
    for signal in ["INT", "TERM", "HUP"] {
        let m = Mounted::new(&archive, work.path());
        assert_eq!(fs::read(m.point.join("note")).unwrap(), b"kept\n");
        let (point, errors) = (m.point.clone(), m.stderr.clone());
        let status = m.signal(signal);
        let errors = fs::read_to_string(errors).unwrap_or_default();
        let left = still_mounted(&point);
        assert_eq!(status.code(), Some(0), "SIG{signal}: {status}: {errors}");
        assert!(!left, "SIG{signal} left the mount behind");
    }
}

/// A directory of more names than a listing step (256) and than the
/// browser keeps nodes (4,096), with a subdirectory among them and hard
/// links across them: every name listed once, in order, each file's
/// content and inode right, whether read in listing order or backwards
/// (after the first names have left the cache).
#[test]
fn a_directory_of_thousands_of_names_lists_and_reads_each_once() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("big/m-sub")).unwrap();
    fs::write(src.join("big/m-sub/inner"), b"inner\n").unwrap();
    let names: Vec<String> = (0..5000).map(|i| format!("f{i:05}-{}", "x".repeat(i % 37))).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(src.join("big").join(name), format!("{i}\n")).unwrap();
    }
    fs::hard_link(src.join("big").join(&names[10]), src.join("big/z-link")).unwrap();
    let archive = archive_of(work.path(), &src, &["big"], &[]);
    let m = Mounted::new(&archive, work.path());
    let big = m.point.join("big");

    // Unsorted, as readdir gives them: a name given twice or skipped shows.
    let names_in = |dir: &Path| {
        sh(&format!("find {} -mindepth 1 -maxdepth 1 -printf '%f\\n' | LC_ALL=C sort", dir.display()))
    };
    let (listed, expected) = (names_in(&big), names_in(&src.join("big")));
    assert!(
        listed == expected,
        "{} names listed, {} stored",
        listed.lines().count(),
        expected.lines().count()
    );
    for (i, name) in names.iter().enumerate().chain(names.iter().enumerate().rev()) {
        assert_eq!(fs::read_to_string(big.join(name)).unwrap(), format!("{i}\n"), "{name}");
    }
    let (file, link) =
        (fs::metadata(big.join(&names[10])).unwrap(), fs::metadata(big.join("z-link")).unwrap());
    assert_eq!((file.ino(), fs::read(big.join("z-link")).unwrap()), (link.ino(), b"10\n".to_vec()));
    assert_ne!(file.ino(), fs::metadata(big.join(&names[11])).unwrap().ino());
    assert_eq!(fs::read(big.join("m-sub/inner")).unwrap(), b"inner\n");
    drop(m);
}

#[test]
fn a_damaged_page_gives_eio_for_its_file_only() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    // b.bin is chunked, its list after its last byte: 4 MB, so that its
    // second page can be damaged without its list's.
    let noise = |seed| noise(seed, if seed == 1 { 2_000_000 } else { 4_000_000 });
    fs::write(src.join("a.bin"), noise(1)).unwrap();
    fs::write(src.join("b.bin"), noise(2)).unwrap();
    let archive = archive_of(work.path(), &src, &["a.bin", "b.bin"], &[]);
    let mut bytes = fs::read(&archive).unwrap();
    // Incompressible, so stored as they are: 3.6 MB in lies in b.bin, past its first page.
    bytes[4096 + 3_600_000] ^= 1;
    fs::write(&archive, bytes).unwrap();

    let m = Mounted::new(&archive, work.path());
    assert_eq!(fs::read(m.point.join("a.bin")).unwrap(), noise(1));
    let err = fs::read(m.point.join("b.bin")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(EIO), "{err}");
    let mut head = vec![0u8; 4096];
    fs::File::open(m.point.join("b.bin")).unwrap().read_exact(&mut head).unwrap();
    assert_eq!(head, noise(2)[..4096], "pages before the damage still read");
    assert_eq!(fs::read(m.point.join("a.bin")).unwrap(), noise(1), "the rest of the mount keeps working");
    let errors = m.errors();
    assert!(errors.contains("b.bin") && !errors.contains("a.bin"), "{errors}");
    assert_eq!(errors.lines().count(), 1, "{errors}");
}

#[test]
fn every_write_is_refused_with_erofs() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    fs::write(src.join("d/f.txt"), b"keep\n").unwrap();
    let archive = archive_of(work.path(), &src, &["d"], &[]);
    let before = fs::read(&archive).unwrap();
    let m = Mounted::new(&archive, work.path());
    let d = m.point.join("d");
    let refused = |r: std::io::Result<()>, what: &str| {
        assert_eq!(r.unwrap_err().raw_os_error(), Some(EROFS), "{what}");
    };
    refused(fs::write(d.join("new.txt"), b"x"), "create");
    refused(fs::OpenOptions::new().append(true).open(d.join("f.txt")).map(drop), "open for writing");
    refused(fs::create_dir(d.join("sub")), "mkdir");
    refused(fs::remove_file(d.join("f.txt")), "unlink");
    refused(fs::rename(d.join("f.txt"), d.join("g.txt")), "rename");
    refused(fs::set_permissions(d.join("f.txt"), fs::Permissions::from_mode(0o600)), "chmod");
    refused(std::os::unix::fs::symlink("f.txt", d.join("l")), "symlink");
    refused(fs::hard_link(d.join("f.txt"), d.join("h")), "link");
    let setfattr = Command::new("setfattr").args(["-n", "user.x", "-v", "1"]).arg(d.join("f.txt")).output();
    if let Ok(out) = setfattr {
        assert!(String::from_utf8_lossy(&out.stderr).contains("Read-only file system"), "setfattr");
    }
    assert_eq!(fs::read(d.join("f.txt")).unwrap(), b"keep\n");
    drop(m);
    assert_eq!(fs::read(&archive).unwrap(), before, "the archive is untouched");
}

#[test]
fn bad_input_fails_before_anything_is_mounted() {
    if !have_fuse() {
        return;
    }
    let (work, archive) = archive_of_one_file("f", b"x");
    let point = work.path().join("mnt");
    fs::create_dir(&point).unwrap();
    let mount = |archive: &Path, point: &Path, password: &str| {
        let out = lockbox()
            .env("LOCKBOX_PASSWORD", password)
            .arg("mount")
            .arg(archive)
            .arg(point)
            .output()
            .unwrap();
        assert!(!is_mounted(point));
        out
    };
    let out = mount(&work.path().join("missing.lbox"), &point, PASSWORD);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("missing.lbox") && stderr(&out).lines().count() == 1, "{}", stderr(&out));
    let out = mount(&archive, &point, "wrong password");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("wrong password"), "{}", stderr(&out));
    let out = mount(&archive, &work.path().join("no-such-dir"), PASSWORD);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));
    let out = mount(&archive, &work.path().join("src/f"), PASSWORD);
    assert!(code(&out) == 1 && stderr(&out).contains("not a directory"), "{}", stderr(&out));
    let out = lockbox().arg("umount").arg(&point).output().unwrap();
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no lockbox archive is mounted"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(&point).unwrap().count(), 0, "nothing left in the mount point");
}

/// Bytes the process `pid` has read through read(2) and pread(2) so far.
fn bytes_read_by(pid: u32) -> u64 {
    let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    let line = io.lines().find(|l| l.starts_with("rchar:")).unwrap();
    line["rchar:".len()..].trim().parse().unwrap()
}

/// The bound of docs/BENCHMARKS.md: reading one small file through the
/// mount reads at most 1.5 MiB of the archive (the kernel looks up each
/// path component: the index nodes on the way, and the file's one page).
/// The count is every byte the mount process read, its FUSE requests
/// included, so it bounds the archive's share from above.
#[test]
fn one_small_file_costs_at_most_one_and_a_half_mib_of_reads() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    for d in 0..40 {
        let dir = src.join(format!("dir{d:02}/sub"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            fs::write(dir.join(format!("file{f:03}.txt")), format!("{d} {f} ").repeat(50)).unwrap();
        }
    }
    fs::write(src.join("big.bin"), noise(7, 6 << 20)).unwrap();
    let archive = archive_of(work.path(), &src, &["big.bin", "dir00"], &[]);
    let mut cmd = lockbox();
    cmd.arg("add").arg(&archive).arg("-C").arg(&src);
    for d in 1..40 {
        cmd.arg(format!("dir{d:02}"));
    }
    ok(run(&mut cmd));
    assert!(fs::metadata(&archive).unwrap().len() > 6 << 20);
    let m = Mounted::new(&archive, work.path());
    let before = bytes_read_by(m.pid());
    let got = fs::read(m.point.join("dir23/sub/file042.txt")).unwrap();
    let cost = bytes_read_by(m.pid()) - before;
    assert_eq!(got, "23 42 ".repeat(50).into_bytes());
    assert!(cost <= 3 << 19, "{cost} bytes read for one small file");
    eprintln!("one small file through the mount: {cost} bytes read");
}
