//! `--threads N` through the real binary: one worker or three store and
//! restore the same bytes, every command that seals or opens pages takes
//! it, it sets the workers the library starts (counted in /proc while
//! lockbox waits on a full pipe), and a count that is none is a usage
//! error before anything is written.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{code, lockbox, ok, run, stderr, CHEAP, PASSWORD};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `lockbox ARGS`, which must succeed.
fn done(args: &[&str]) -> Output {
    ok(run(lockbox().args(args)))
}

/// `dir/src`: text and random bytes over several pages each, and small
/// files that share pages.
fn tree(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(src.join("small")).unwrap();
    corpora::write_text_file(&src.join("text"), 1, 3 << 20).unwrap();
    corpora::write_random_file(&src.join("random"), 2, (2 << 20) + 12_345).unwrap();
    for i in 0..300 {
        fs::write(src.join(format!("small/{i:03}")), format!("small file {i}\n").repeat(i % 50 + 1)).unwrap();
    }
    src
}

/// Every file under `root`, by path relative to it, with its bytes.
fn contents(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.insert(path.strip_prefix(root).unwrap().to_path_buf(), fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// `create --threads THREADS` of `src`'s `text`, `random` and `small`.
fn create(archive: &Path, src: &Path, threads: &str) {
    let args =
        ["create", "-q", "--threads", threads, "-o", s(archive), "-C", s(src), "text", "random", "small"];
    done(&[&args[..], &CHEAP].concat());
}

#[test]
fn one_thread_or_three_store_and_restore_the_same_bytes() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let stored = contents(&src);
    for created in ["1", "3"] {
        let archive = work.path().join(format!("{created}.lbox"));
        create(&archive, &src, created);
        for read in ["1", "3"] {
            done(&["verify", "-q", "--threads", read, s(&archive)]);
            let out = work.path().join(format!("out-{created}-{read}"));
            fs::create_dir(&out).unwrap();
            done(&["extract", "-q", "--threads", read, s(&archive), "-C", s(&out)]);
            let restored = contents(&out);
            assert_eq!(restored.keys().collect::<Vec<_>>(), stored.keys().collect::<Vec<_>>());
            assert!(restored == stored, "created with {created} threads, extracted with {read}: other bytes");
        }
    }
}

#[test]
fn every_command_that_seals_or_opens_pages_takes_threads() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let archive = work.path().join("a.lbox");
    create(&archive, &src, "2");
    let a = s(&archive);
    let listed = String::from_utf8(done(&["list", "--threads", "2", a]).stdout).unwrap();
    assert!(listed.lines().any(|l| l == "random"), "{listed}");
    done(&["info", "--threads", "0", a]);
    assert_eq!(done(&["cat", "--threads", "2", a, "text"]).stdout, fs::read(src.join("text")).unwrap());
    let tar = done(&["export", "--threads", "1", a, "-o", "-"]).stdout;
    assert!(tar.len() > 5 << 20, "a tar stream of every file: {} bytes", tar.len());
    fs::write(src.join("new"), b"new\n").unwrap();
    done(&["add", "-q", "--threads", "2", "-C", s(&src), a, "new"]);
    let diff = run(lockbox().args(["diff", "--threads", "2", a, "--from", "1"]));
    assert_eq!(code(&diff), 1, "state 1 lacks `new`: {}", stderr(&diff));
    fs::write(src.join("small/000"), b"changed\n").unwrap();
    done(&["update", "-q", "--threads", "0", "-C", s(&src), a, "small"]);
    done(&["rm", "-q", "--threads", "1", a, "new"]);
    done(&["compact", "-q", "--threads", "2", a]);
    done(&["repair", "-q", "--threads", "2", a]);
    done(&["verify", "-q", "--threads", "2", a]);
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    done(&["extract", "-q", "--threads", "2", a, "-C", s(&out)]);
    fs::remove_file(src.join("new")).unwrap();
    assert!(contents(&out) == contents(&src), "the archive holds the tree as changed");
}

/// Threads of process `pid` whose name starts with `prefix` (Linux cuts
/// names to 15 bytes: every page sealer is `lockbox-sealer-`).
fn threads_named(pid: u32, prefix: &str) -> usize {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    let names = tasks.filter_map(|t| fs::read_to_string(t.unwrap().path().join("comm")).ok());
    names.filter(|name| name.starts_with(prefix)).count()
}

/// The threads named `prefix` of `lockbox ARGS` writing to a pipe read
/// no further than its first byte: lockbox then waits for room with its
/// workers up. Counted until there are `expected` (a thread takes its name
/// when it first runs, which on busy cores may be later) or for 10 s; the
/// pipe is closed after the count.
fn workers_while_waiting(args: &[&str], prefix: &str, expected: usize) -> usize {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let first = out.read_exact(&mut [0u8; 1]);
    let started = Instant::now();
    let mut counted = threads_named(child.id(), prefix);
    while first.is_ok() && counted != expected && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        counted = threads_named(child.id(), prefix);
    }
    drop(out);
    let status = child.wait().unwrap();
    assert!(first.is_ok(), "lockbox {args:?} wrote nothing: {status:?}");
    counted
}

#[test]
fn threads_set_the_workers_that_seal_and_open_pages() {
    let work = tempfile::tempdir().unwrap();
    // Random bytes: 8 MiB of pages to write or read, far past what the
    // pipe and lockbox's buffers hold (and not under 8 MiB, which `cat`
    // would read whole before writing a byte).
    corpora::write_random_file(&work.path().join("big"), 3, 8 << 20).unwrap();
    let archive = work.path().join("a.lbox");
    let dir = s(work.path());
    done(&[&["create", "-q", "-o", s(&archive), "-C", dir, "big"][..], &CHEAP].concat());
    // Names enough to fill the pipe `extract -v` lists them to.
    let names = work.path().join("names");
    fs::create_dir(&names).unwrap();
    for i in 0..3000 {
        fs::write(names.join(format!("{i:04}-a-name-long-enough-that-3000-of-them-fill-a-pipe")), b"x")
            .unwrap();
    }
    let many = work.path().join("many.lbox");
    done(&[&["create", "-q", "-o", s(&many), "-C", s(&names), "."][..], &CHEAP].concat());
    for threads in [1, 3] {
        let n = threads.to_string();
        let create = [&["create", "-q", "--threads", &n, "-o", "-", "-C", dir, "big"][..], &CHEAP].concat();
        let sealers = workers_while_waiting(&create, "lockbox-sealer", threads);
        assert_eq!(sealers, threads, "create --threads {n}");
        let cat = ["cat", "--threads", &n, s(&archive), "big"];
        let openers = workers_while_waiting(&cat, "lockbox-opener", threads);
        assert_eq!(openers, threads, "cat --threads {n}");
        // An extraction writes files while its pages open: two workers or
        // more get one spare (ReadTuning::threads). `-v` lists each file on
        // stdout as the walk reaches it, and waits there.
        let spare = usize::from(threads >= 2);
        let out = work.path().join(format!("out-{n}"));
        fs::create_dir(&out).unwrap();
        let extract = ["extract", "-v", "--threads", &n, s(&many), "-C", s(&out)];
        let openers = workers_while_waiting(&extract, "lockbox-opener", threads + spare);
        assert_eq!(openers, threads + spare, "extract --threads {n}");
    }
}

/// `out` is the usage error for `--threads BAD`: exit 2, the one line
/// that names the value and the flag.
fn refused(out: &Output, bad: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 2, "--threads {bad:?}: {err}");
    let first = format!(
        "lockbox: invalid value '{bad}' for '--threads <N>': expected a number of threads from 1 to 1024, or 0 \
         for one per core"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines, [first.as_str()], "--threads {bad:?}");
}

#[test]
fn a_thread_count_that_is_no_count_is_a_usage_error_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), b"f\n").unwrap();
    let archive = work.path().join("a.lbox");
    done(&[&["create", "-q", "-o", s(&archive), "-C", s(&src), "f"][..], &CHEAP].concat());
    let bytes = fs::read(&archive).unwrap();
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    let new = work.path().join("new.lbox");
    for bad in ["abc", "-1", "1.5", "", "1025"] {
        let create = ["create", "-q", "--threads", bad, "-o", s(&new), "-C", s(&src), "f"];
        refused(&run(lockbox().args(create).args(CHEAP)), bad);
        assert!(!new.exists(), "create --threads {bad:?} left an archive");
        refused(&run(lockbox().args(["add", "-q", "--threads", bad, "-C", s(&src), s(&archive), "f"])), bad);
        assert!(fs::read(&archive).unwrap() == bytes, "add --threads {bad:?} changed the archive");
        refused(&run(lockbox().args(["extract", "-q", "--threads", bad, s(&archive), "-C", s(&out)])), bad);
        assert_eq!(fs::read_dir(&out).unwrap().count(), 0, "extract --threads {bad:?} wrote");
    }
    let mut left: Vec<_> = fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["a.lbox", "out", "src"], "no temporary file is left");
}
