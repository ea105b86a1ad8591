//! The atomic write as the real binary, with real signals: SIGINT, SIGTERM,
//! SIGHUP and `kill -9` sent to `lockbox create` while it writes leave
//! nothing beside the target (an existing one untouched); a piped archive's
//! spool leaves nothing in `$TMPDIR`; a temporary name of ours that a
//! killed writer left is removed by the next write, a live writer's kept;
//! a full disk (a tmpfs mounted as root) names the write and the archive.

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use crate::util::{code, have_root, lockbox, skip, stderr, Need, CHEAP};

/// `lockbox create -o ARCHIVE -C SRC INPUT` at the cheap KDF cost.
fn create(archive: &Path, src: &Path, input: &str) -> std::process::Output {
    lockbox()
        .args(["create", "-q", "-o"])
        .arg(archive)
        .args(CHEAP)
        .arg("-C")
        .arg(src)
        .arg(input)
        .output()
        .unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// A ustar header for a regular file `name` of `size` bytes.
fn tar_header(name: &str, size: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |h: &mut [u8; 512], at: usize, len: usize, value: u64| {
        let text = format!("{value:0width$o}\0", width = len - 1);
        h[at..at + len].copy_from_slice(text.as_bytes());
    };
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, size);
    octal(&mut h, 136, 12, 1_600_000_000);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// Whether `pid` holds a file open in `dir` that has no name (an
/// `O_TMPFILE` inode shows as `DIR/#INODE (deleted)`), or any file there.
fn writes_in(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().filter_map(|fd| fs::read_link(fd.path()).ok()).any(|target| target.starts_with(dir))
}

/// `lockbox create --from-tar - -o ARCHIVE EXTRA…`, fed the start of a
/// 1 GiB file and then nothing, until it holds its output open in `dir`.
fn stalled_create(dir: &Path, archive: &Path, extra: &[&str]) -> (Child, ChildStdin) {
    stalled(StdCommand::new(env!("CARGO_BIN_EXE_lockbox")), dir, archive, extra)
}

/// [`stalled_create`] run by `cmd`.
fn stalled(mut cmd: StdCommand, dir: &Path, archive: &Path, extra: &[&str]) -> (Child, ChildStdin) {
    let mut child = cmd
        .env("LOCKBOX_PASSWORD", crate::util::PASSWORD)
        .args(["create", "-q", "--from-tar", "-", "-o"])
        .arg(archive)
        .args(CHEAP)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&tar_header("big", 1 << 30)).unwrap();
    stdin.write_all(&vec![7u8; 4 << 20]).unwrap();
    let started = Instant::now();
    while !writes_in(child.id(), dir) {
        assert!(started.elapsed() < Duration::from_secs(30), "lockbox never opened its output");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, stdin)
}

fn signal(child: &Child, sig: Signal) {
    kill_process(Pid::from_child(child), sig).unwrap();
}

#[test]
fn a_signal_mid_create_leaves_nothing_beside_the_target() {
    for (sig, number) in [(Signal::INT, 2), (Signal::TERM, 15), (Signal::HUP, 1), (Signal::KILL, 9)] {
        for overwrite in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let archive = dir.path().join("a.lbox");
            fs::write(dir.path().join("keep"), b"keep").unwrap();
            if overwrite {
                fs::write(&archive, b"old").unwrap();
            }
            let extra: &[&str] = if overwrite { &["--overwrite"] } else { &[] };
            let (child, stdin) = stalled_create(dir.path(), &archive, extra);
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            drop(stdin);
            // Ended by the signal itself: the shell shows 128 + its number.
            assert_eq!(out.status.signal(), Some(number), "{sig:?}: {:?} {}", out.status, stderr(&out));
            let mut expected = vec!["keep".to_string()];
            if overwrite {
                expected.insert(0, "a.lbox".into());
                assert_eq!(fs::read(&archive).unwrap(), b"old", "{sig:?}");
            }
            assert_eq!(names(dir.path()), expected, "{sig:?} overwrite={overwrite}");
        }
    }
}

/// Where the file system has no unnamed files (here: no `/proc` to name
/// one through, in a mount namespace of its own), the archive is written
/// under a temporary name: a signal removes it, `kill -9` leaves it, and
/// the next write of the same archive removes it.
#[test]
fn without_o_tmpfile_a_signal_removes_the_temporary_name_and_the_next_write_a_killed_ones() {
    let dir = tempfile::tempdir().unwrap();
    if !have_root() {
        return skip(Need::Mounts, "a mount namespace without /proc needs root");
    }
    let probe = StdCommand::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", "umount -l /proc && test ! -d /proc/self/fd"])
        .output();
    if !probe.as_ref().is_ok_and(|p| p.status.success()) {
        return skip(Need::Mounts, format!("cannot unmount /proc in a mount namespace: {probe:?}"));
    }
    let archive = dir.path().join("a.lbox");
    let without_proc = || {
        let mut cmd = StdCommand::new("unshare");
        cmd.args(["-m", "--propagation", "private", "sh", "-c", "umount -l /proc && exec \"$0\" \"$@\""]);
        cmd.arg(env!("CARGO_BIN_EXE_lockbox"));
        cmd
    };
    let temporary = |dir: &Path| -> Vec<String> {
        names(dir).into_iter().filter(|n| n.starts_with(".a.lbox.lockbox-") && n.ends_with(".tmp")).collect()
    };
    let (child, stdin) = stalled(without_proc(), dir.path(), &archive, &[]);
    assert_eq!(temporary(dir.path()).len(), 1, "{:?}", names(dir.path()));
    signal(&child, Signal::TERM);
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.signal(), Some(15), "{:?} {}", out.status, stderr(&out));
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    let (child, stdin) = stalled(without_proc(), dir.path(), &archive, &[]);
    signal(&child, Signal::KILL);
    let _ = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(temporary(dir.path()).len(), 1, "kill -9 leaves it: {:?}", names(dir.path()));
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), b"content").unwrap();
    let out = create(&archive, &src, "f");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(names(dir.path()), ["a.lbox", "src"]);
}

#[test]
fn a_piped_archive_leaves_no_spool_in_tmpdir() {
    let dir = tempfile::tempdir().unwrap();
    let spools = dir.path().join("tmp");
    fs::create_dir(&spools).unwrap();
    for sig in [Signal::TERM, Signal::KILL] {
        let mut child = StdCommand::new(env!("CARGO_BIN_EXE_lockbox"))
            .env("LOCKBOX_PASSWORD", crate::util::PASSWORD)
            .env("TMPDIR", &spools)
            .args(["list", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&[0u8; 1 << 16]).unwrap();
        let started = Instant::now();
        while !writes_in(child.id(), &spools) {
            assert!(started.elapsed() < Duration::from_secs(30), "lockbox never spooled stdin");
            std::thread::sleep(Duration::from_millis(20));
        }
        signal(&child, sig);
        assert!(child.wait().unwrap().signal().is_some());
        assert!(names(&spools).is_empty(), "{sig:?}: {:?}", names(&spools));
    }
}

#[test]
fn a_killed_writers_temporary_name_is_removed_by_the_next_write_a_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), b"content").unwrap();
    let archive = dir.path().join("a.lbox");
    let stale = dir.path().join(".a.lbox.lockbox-00000000deadbeef.tmp");
    let live = dir.path().join(".a.lbox.lockbox-00000000feedface.tmp");
    // Not ours: another pattern, or another target's.
    let others = [
        ".a.lbox.XyZ123.tmp",
        ".a.lbox.lockbox-nothex00deadbeef.tmp",
        ".b.lbox.lockbox-00000000deadbeef.tmp",
    ];
    for name in others {
        fs::write(dir.path().join(name), b"theirs").unwrap();
    }
    fs::write(&stale, b"left by kill -9").unwrap();
    fs::write(&live, b"being written").unwrap();
    // flock(1) holds the lock a live writer holds.
    let mut holder = match StdCommand::new("flock").arg(&live).args(["sleep", "60"]).spawn() {
        Ok(child) => child,
        Err(e) => return skip(Need::Tools, format!("flock(1) is not installed: {e}")),
    };
    let started = Instant::now();
    while !writes_in(holder.id(), dir.path()) {
        assert!(started.elapsed() < Duration::from_secs(10), "flock never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = create(&archive, &src, "f");
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut expected: Vec<String> = others.iter().map(|n| n.to_string()).collect();
    expected.extend([".a.lbox.lockbox-00000000feedface.tmp".into(), "a.lbox".into(), "src".into()]);
    expected.sort();
    assert_eq!(names(dir.path()), expected);
}

/// A tmpfs of `size` mounted at `dir/small` for the test's length, or why not.
fn small_mount(dir: &Path, size: &str) -> Result<(PathBuf, impl Drop), String> {
    let mnt = dir.join("small");
    fs::create_dir(&mnt).unwrap();
    if !have_root() {
        return Err("mounting a tmpfs needs root".into());
    }
    let mounted = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .output();
    match mounted {
        Ok(m) if m.status.success() => {}
        Ok(m) => return Err(format!("cannot mount a tmpfs here: {}", stderr(&m).trim())),
        Err(e) => return Err(format!("cannot mount a tmpfs here: {e}")),
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = StdCommand::new("umount").arg(&self.0).status();
        }
    }
    Ok((mnt.clone(), Unmount(mnt)))
}

#[test]
fn create_on_a_full_disk_names_the_write_and_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let (mnt, _unmount) = match small_mount(dir.path(), "1m") {
        Ok(m) => m,
        Err(why) => return skip(Need::Mounts, why),
    };
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    corpora::write_random_file(&src.join("big.bin"), 1, 3 << 20).unwrap();
    let archive = mnt.join("c.lbox");
    let out = create(&archive, &src, "big.bin");
    let message = stderr(&out);
    assert_eq!(code(&out), 1, "{message}");
    let shown = format!("writing {}", archive.display());
    assert!(message.contains(&shown) && message.contains("No space left on device"), "{message}");
    // Not a read of the source, not the temporary file, no debug quoting.
    assert!(
        !message.contains("reading") && !message.contains(".c.lbox") && !message.contains('"'),
        "{message}"
    );
    assert!(names(&mnt).is_empty(), "{:?}", names(&mnt));
}

/// The directories below `dir` that are empty.
fn empty_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut empty = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if fs::symlink_metadata(&path).unwrap().is_dir() {
            if fs::read_dir(&path).unwrap().next().is_none() {
                empty.push(path);
            } else {
                empty.extend(empty_dirs(&path));
            }
        }
    }
    empty
}

#[test]
fn extract_on_a_full_disk_removes_the_directories_it_left_empty() {
    let dir = tempfile::tempdir().unwrap();
    let (mnt, _unmount) = match small_mount(dir.path(), "1m") {
        Ok(m) => m,
        Err(why) => return skip(Need::Mounts, why),
    };
    let src = dir.path().join("src");
    for i in 0..160 {
        let d = src.join(format!("t/d{i:03}"));
        fs::create_dir_all(&d).unwrap();
        corpora::write_random_file(&d.join("f"), i, 32 << 10).unwrap();
    }
    fs::create_dir(src.join("t/empty")).unwrap();
    let archive = dir.path().join("x.lbox");
    let out = create(&archive, &src, "t");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Synced in batches, nothing is placed before the disk fills; with
    // --no-sync, the first files are.
    for (extra, placed) in [(&[][..], false), (&["--no-sync"][..], true)] {
        let dest = mnt.join("dest");
        fs::create_dir(&dest).unwrap();
        let out = lockbox()
            .args(["extract", "-q"])
            .args(extra)
            .arg(&archive)
            .arg("-C")
            .arg(&dest)
            .output()
            .unwrap();
        let message = stderr(&out);
        assert_eq!(code(&out), 1, "{message}");
        assert!(message.contains("writing") && message.contains("No space left on device"), "{message}");
        // Which files come first depends on the writer threads' order
        // (under a loaded test run d000 may be the one that fills the
        // disk), so any placed file counts.
        let any_placed = (0..160).any(|i| dest.join(format!("t/d{i:03}/f")).is_file());
        assert_eq!(any_placed, placed, "{extra:?}: {message}");
        // No directory is left empty (the archive's own empty one
        // included: this extraction made it).
        assert_eq!(empty_dirs(&dest), Vec::<PathBuf>::new(), "{extra:?}: {message}");
        fs::remove_dir_all(&dest).unwrap();
    }
}

#[test]
fn extract_overwrite_refuses_a_symbolic_link_where_a_directory_goes_as_unsafe() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("t")).unwrap();
    fs::write(src.join("t/f"), b"content").unwrap();
    let archive = dir.path().join("x.lbox");
    let out = create(&archive, &src, "t");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (dest, elsewhere) = (dir.path().join("dest"), dir.path().join("elsewhere"));
    fs::create_dir(&dest).unwrap();
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dest.join("t")).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let out = lockbox()
            .args(["extract", "-q"])
            .args(extra)
            .arg(&archive)
            .arg("-C")
            .arg(&dest)
            .output()
            .unwrap();
        // docs/SECURITY.md: refused, exit 3, nothing written through it.
        assert_eq!(code(&out), 3, "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("a symbolic link stands where a directory goes"), "{}", stderr(&out));
        assert!(names(&elsewhere).is_empty());
        assert_eq!(names(&dest), ["t"]);
    }
}
