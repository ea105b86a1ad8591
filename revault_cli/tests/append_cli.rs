//! `lockbox add`, `update`, `rm`, `compact`, `repair` as the real binary,
//! with real faults: `kill -9` during an add, a full disk (a tmpfs this
//! test mounts as root), two writers at once (and `flock(1)` holding the
//! lock), bad passwords and damaged archives.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{code, have_root, lockbox, skip, stderr, Need, CHEAP, PASSWORD};

/// `lockbox ARGS`.
pub(crate) fn run(args: &[&str]) -> Output {
    lockbox().args(args).output().expect("runs lockbox")
}

/// `lockbox ARGS`, which must succeed.
pub(crate) fn ok(args: &[&str]) -> Output {
    let out = run(args);
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    out
}

pub(crate) fn list(archive: &Path) -> Vec<String> {
    let out = ok(&["list", archive.to_str().unwrap()]);
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `dir/src` with a few files (`d/one.txt`, `d/sub/two.txt`, `top.txt`),
/// archived into `dir/a.lbox`.
pub(crate) fn archived(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("src");
    fs::create_dir_all(src.join("d/sub")).unwrap();
    fs::write(src.join("d/one.txt"), b"one\n").unwrap();
    fs::write(src.join("d/sub/two.txt"), b"two\n").unwrap();
    fs::write(src.join("top.txt"), b"top\n").unwrap();
    let archive = dir.join("a.lbox");
    let mut args = vec!["create", "-q", "-o", s(&archive), "-C", s(&src), "d", "top.txt"];
    args.extend(CHEAP);
    ok(&args);
    (src, archive)
}

/// Session salts of the trailer chain, newest first (FORMAT.md §3.8).
fn trailer_salts(bytes: &[u8]) -> Vec<[u8; 32]> {
    let mut salts = Vec::new();
    let mut end = bytes.len();
    while end > 0 {
        let t = &bytes[end - 216..end];
        assert_eq!(&t[..8], b"LBOXTAIL");
        salts.push(t[28..60].try_into().unwrap());
        end = u64::from_le_bytes(t[156..164].try_into().unwrap()) as usize;
    }
    salts
}

#[test]
fn add_update_rm_compact_repair() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    fs::write(src.join("d/new.txt"), b"new\n").unwrap();
    ok(&["add", a, "-C", s(&src), "d/new.txt"]);
    assert_eq!(list(&archive), ["d", "d/new.txt", "d/one.txt", "d/sub", "d/sub/two.txt", "top.txt"]);
    ok(&["rm", a, "d/sub", "./top.txt"]);
    assert_eq!(list(&archive), ["d", "d/new.txt", "d/one.txt"]);
    let missing = run(&["rm", a, "nope"]);
    assert_eq!(code(&missing), 1);
    assert!(stderr(&missing).starts_with("lockbox: removing from") && stderr(&missing).contains("nope"));

    fs::write(src.join("d/one.txt"), b"one, longer\n").unwrap();
    fs::remove_file(src.join("d/new.txt")).unwrap();
    ok(&["update", a, "-C", s(&src), "--delete-missing", "d"]);
    assert!(!list(&archive).contains(&"d/new.txt".to_string()));
    let cat = ok(&["cat", a, "d/one.txt"]);
    assert_eq!(cat.stdout, b"one, longer\n");

    let info = ok(&["info", "--json", a]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["sessions"], 4);
    assert!(info["dead_bytes"].as_u64().unwrap() > 0);
    ok(&["verify", "-q", a]);

    let view = list(&archive);
    ok(&["compact", "-q", a]);
    assert_eq!(list(&archive), view);
    let info = ok(&["info", "--json", a]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!((info["sessions"].as_u64(), info["dead_bytes"].as_u64()), (Some(1), Some(0)));

    // A torn tail: ignored by readers, reported by verify, cut by repair.
    let whole = fs::read(&archive).unwrap();
    fs::write(&archive, [&whole[..], &[0xAB; 3000][..]].concat()).unwrap();
    assert_eq!(list(&archive), view);
    let verify = ok(&["verify", a]);
    assert!(stderr(&verify).contains("3000 bytes after the last committed trailer"), "{}", stderr(&verify));
    let repair = ok(&["repair", a]);
    assert!(stderr(&repair).contains("3000"), "{}", stderr(&repair));
    assert_eq!(fs::read(&archive).unwrap(), whole);
}

#[test]
fn bad_input_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    let before = fs::read(&archive).unwrap();
    let wrong = lockbox()
        .env("LOCKBOX_PASSWORD", "wrong")
        .args(["add", a, "-C", s(&src), "top.txt"])
        .output()
        .unwrap();
    assert_eq!(code(&wrong), 3, "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("wrong password"));
    assert_eq!(fs::read(&archive).unwrap(), before);

    // Below a stored file: refused before anything is written.
    fs::remove_file(src.join("top.txt")).unwrap();
    fs::create_dir(src.join("top.txt")).unwrap();
    fs::write(src.join("top.txt/inner"), b"x").unwrap();
    let below = run(&["add", a, "-C", s(&src), "top.txt/inner"]);
    assert_eq!(code(&below), 1, "{}", stderr(&below));
    assert!(
        stderr(&below).contains("top.txt: is a file or symbolic link in the archive"),
        "{}",
        stderr(&below)
    );
    assert_eq!(fs::read(&archive).unwrap(), before);

    // A damaged archive (the root's bytes): refused, nothing written.
    let mut damaged = before.clone();
    let n = damaged.len();
    damaged[n - 130] ^= 0x40;
    fs::write(&archive, &damaged).unwrap();
    let out = run(&["add", a, "-C", s(&src), "d"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("lockbox: opening"), "{}", stderr(&out));
    assert_eq!(fs::read(&archive).unwrap(), damaged);
}

#[test]
fn a_second_writer_fails_at_once_or_waits() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    let before = fs::read(&archive).unwrap();
    // flock(1) holds the archive's lock, as another lockbox would.
    let mut holder = StdCommand::new("flock").args([a, "sleep", "2"]).spawn().expect("flock(1) is installed");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let busy = run(&["add", a, "-C", s(&src), "top.txt"]);
    assert_eq!(code(&busy), 1, "{}", stderr(&busy));
    assert!(stderr(&busy).contains("another lockbox is changing this archive (--wait waits for it)"));
    assert!(started.elapsed() < Duration::from_secs(1), "fails at once");
    assert_eq!(fs::read(&archive).unwrap(), before);
    let waited = run(&["add", "--wait", a, "-C", s(&src), "top.txt"]);
    assert_eq!(code(&waited), 0, "{}", stderr(&waited));
    assert!(started.elapsed() >= Duration::from_millis(1500), "waited for the holder");
    holder.wait().unwrap();

    // Two real writers at once, both waiting: both changes land, in turn.
    for i in 0..4 {
        fs::write(src.join(format!("w{i}")), vec![i as u8; 300_000]).unwrap();
    }
    let writers: Vec<_> = (0..4)
        .map(|i| {
            StdCommand::new(env!("CARGO_BIN_EXE_lockbox"))
                .env("LOCKBOX_PASSWORD", PASSWORD)
                .args(["add", "-q", "--wait", a, "-C", s(&src), &format!("w{i}")])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in writers {
        let out = w.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let names = list(&archive);
    assert!((0..4).all(|i| names.contains(&format!("w{i}"))), "{names:?}");
    ok(&["verify", "-q", a]);
    assert_eq!(trailer_salts(&fs::read(&archive).unwrap()).len(), 6);
}

#[test]
fn a_full_disk_leaves_the_archive_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    fs::create_dir(&mnt).unwrap();
    if !have_root() {
        return;
    }
    let mounted = StdCommand::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", s(&mnt)]).output();
    if let Some(why) =
        mounted.map_or_else(|e| Some(e.to_string()), |m| (!m.status.success()).then(|| stderr(&m)))
    {
        return skip(Need::Mounts, format!("cannot mount a tmpfs here: {}", why.trim()));
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = StdCommand::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mnt);
    let (src, first) = archived(dir.path());
    let archive = mnt.join("a.lbox");
    fs::copy(&first, &archive).unwrap();
    let before = fs::read(&archive).unwrap();
    let mut noise = vec![0u8; 2 << 20];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    fs::write(src.join("big.bin"), &noise).unwrap();
    let out = run(&["add", s(&archive), "-C", s(&src), "big.bin"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("No space left on device"), "{}", stderr(&out));
    assert_eq!(fs::read(&archive).unwrap(), before, "cut back to the committed end");
    assert_eq!(list(&archive), ["d", "d/one.txt", "d/sub", "d/sub/two.txt", "top.txt"]);
    ok(&["verify", "-q", s(&archive)]);
}

/// `kill -9` of `lockbox add` at `points` moments spread over its run, each
/// on a fresh copy of the archive: afterwards the archive lists exactly the
/// old or the new entries, verifies, and takes the next add; no session
/// salt repeats across all of it.
fn kill_during_add(files: usize, file_len: usize, points: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (src, base) = archived(dir.path());
    let add_dir = src.join("bulk");
    fs::create_dir(&add_dir).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..files {
        let mut content = vec![0u8; file_len];
        for chunk in content.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        fs::write(add_dir.join(format!("f{i:04}")), content).unwrap();
    }
    let old = list(&base);
    let archive = dir.path().join("k.lbox");
    fs::copy(&base, &archive).unwrap();
    let started = Instant::now();
    ok(&["add", "-q", s(&archive), "-C", s(&src), "bulk"]);
    let full = started.elapsed();
    let new = list(&archive);
    let mut salts: HashSet<[u8; 32]> = HashSet::new();
    let (mut saw_old, mut saw_new) = (0, 0);
    for k in 0..points {
        fs::copy(&base, &archive).unwrap();
        // Spread over the run and a little past it, so that some land after
        // the commit.
        let at = full.mul_f64((k as f64 + 0.5) / points as f64 * 1.4);
        let mut child = StdCommand::new(env!("CARGO_BIN_EXE_lockbox"))
            .env("LOCKBOX_PASSWORD", PASSWORD)
            .args(["add", "-q", s(&archive), "-C", s(&src), "bulk"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let now = list(&archive);
        if now == old {
            saw_old += 1;
        } else {
            assert_eq!(now, new, "kill point {k}: neither the old nor the new state");
            saw_new += 1;
        }
        ok(&["verify", "-q", s(&archive)]);
        // The next add succeeds (cutting any torn tail) and commits anew.
        ok(&["add", "-q", s(&archive), "-C", s(&src), "bulk"]);
        assert_eq!(list(&archive), new);
        let mut chain = trailer_salts(&fs::read(&archive).unwrap());
        chain.pop(); // the create: the base every copy shares
        for salt in chain {
            assert!(salts.insert(salt), "kill point {k}: a session salt repeated");
        }
    }
    eprintln!("{points} kill points over {full:?}: {saw_old} left the old state, {saw_new} the new");
    assert!(saw_old > 0, "some kills landed before the commit");
}

#[test]
fn kill_9_during_add_leaves_old_or_new() {
    kill_during_add(80, 256 << 10, 25);
}

#[test]
#[ignore = "about 10 minutes: 120 kills of a 128 MiB add; run with --ignored, result in BENCHMARKS.md"]
fn kill_9_during_a_large_add_at_120_points() {
    kill_during_add(128, 1 << 20, 120);
}

#[test]
fn a_writer_waiting_while_the_archive_is_replaced_appends_to_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    // flock(1) holds the lock on the current file; meanwhile a new file is
    // renamed over it, as `compact` does; the waiting add must follow.
    let mut holder =
        StdCommand::new("flock").args([a, "sleep", "1.5"]).spawn().expect("flock(1) is installed");
    std::thread::sleep(Duration::from_millis(300));
    let waiting = StdCommand::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .args(["add", "-q", "--wait", a, "-C", s(&src), "top.txt"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let replacement = dir.path().join("replacement.lbox");
    fs::copy(&archive, &replacement).unwrap();
    fs::rename(&replacement, &archive).unwrap();
    holder.wait().unwrap();
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        trailer_salts(&fs::read(&archive).unwrap()).len(),
        2,
        "the add landed in the file at the path"
    );
    ok(&["verify", "-q", a]);
}

/// `-m TEXT` labels the session each command writes; `info` shows the last
/// one's number, time and label; a label the format cannot hold is a usage
/// error that writes nothing.
#[test]
fn sessions_carry_their_labels_and_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    let info = |archive: &str| -> serde_json::Value {
        serde_json::from_slice(&ok(&["info", "--json", archive]).stdout).unwrap()
    };
    assert_eq!(
        (info(a)["last_session"].as_u64(), info(a)["last_session_label"].as_str()),
        (Some(0), Some(""))
    );
    fs::write(src.join("d/new.txt"), b"new\n").unwrap();
    ok(&["add", a, "-m", "nightly: new.txt", "-C", s(&src), "d/new.txt"]);
    let after_add = info(a);
    assert_eq!((after_add["last_session"].as_u64(), after_add["state"].as_u64()), (Some(1), Some(2)));
    assert_eq!(after_add["last_session_label"], "nightly: new.txt");
    let started = after_add["last_session_created_ns"].as_i64().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    assert!((now - started).abs() < 600_000_000_000, "session time {started}, now {now}");
    assert_eq!(after_add["commit_hash"].as_str().unwrap().len(), 64);
    let text = String::from_utf8(ok(&["info", a]).stdout).unwrap();
    assert!(
        text.contains("\nlast written       ")
            && text.contains("nightly: new.txt")
            && !text.contains("#1")
            && text.contains("\nstate              2 (as lockbox log numbers it; --session 2 reads it)\n"),
        "{text}"
    );
    ok(&["rm", a, "--message", "drop top", "top.txt"]);
    assert_eq!(
        (info(a)["last_session"].as_u64(), info(a)["last_session_label"].as_str()),
        (Some(2), Some("drop top"))
    );
    ok(&["compact", "-q", "-m", "squashed", a]);
    let compacted = info(a);
    assert_eq!((compacted["sessions"].as_u64(), compacted["last_session"].as_u64()), (Some(1), Some(3)));
    assert_eq!(compacted["state"], 3, "a compaction keeping the last state holds its number");
    assert_eq!(compacted["last_session_label"], "squashed");

    let before = fs::read(&archive).unwrap();
    let bad = run(&["add", a, "-m", "bell\u{7}", "-C", s(&src), "d/new.txt"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("control character"), "{}", stderr(&bad));
    let long = "x".repeat(1025);
    let bad = run(&["add", a, "-m", &long, "-C", s(&src), "d/new.txt"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert_eq!(fs::read(&archive).unwrap(), before, "a refused label writes nothing");
}
