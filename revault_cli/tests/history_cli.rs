//! Issue 25's check, through the real binary: a tree changed over 20
//! sessions (files added, edited in place, renamed, removed, replaced by
//! symbolic links, permissions stored with `add`, `update` finding the
//! rest), a GNU tar snapshot after each. Every state extracts as its
//! snapshot, `diff --from N --to N+1` lists exactly the change made, `--at`
//! finds each state by its time, and `diff -C` against the live tree lists
//! exactly what changed since the last session. Then the bad input.

use std::collections::BTreeMap;
use std::fs::{self, File, FileTimes};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output};
use std::time::{Duration, UNIX_EPOCH};

use crate::util::{code, lockbox, stderr, CHEAP};

fn run(args: &[&str]) -> Output {
    lockbox().args(args).output().expect("runs lockbox")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes `content` to `path` with a modification time of its own.
fn write(path: &Path, content: &str, secs: u64) {
    fs::write(path, content).unwrap();
    set_mtime(path, secs);
}

fn set_mtime(path: &Path, secs: u64) {
    let t = UNIX_EPOCH + Duration::new(secs, 123_456_789);
    File::options().write(true).open(path).unwrap().set_times(FileTimes::new().set_modified(t)).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn tar(args: &[&str]) {
    let out =
        Process::new("tar").args(args).output().expect("GNU tar is installed (scripts/test.sh installs it)");
    assert!(out.status.success(), "tar {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Every path below `root`: kind, mode, content or link target, a file's
/// mtime to the nanosecond, and the first path sharing its inode. A
/// directory's mtime is left out (an `add` below it does not store it
/// again) and so is a symbolic link's mode.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut first_of_inode = BTreeMap::new();
    let mut all = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let mut names: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for path in names {
            let md = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let what = if md.is_dir() {
                dirs.push(path.clone());
                format!("dir {:o}", md.mode() & 0o7777)
            } else if md.file_type().is_symlink() {
                format!("symlink to {:?}", fs::read_link(&path).unwrap())
            } else {
                let first = first_of_inode.entry(md.ino()).or_insert_with(|| rel.clone()).clone();
                let content = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
                let mtime = format!("{}.{:09}", md.mtime(), md.mtime_nsec());
                format!("file {:o} {content:?} mtime {mtime} inode of {first:?}", md.mode() & 0o7777)
            };
            all.insert(rel, what);
        }
    }
    all
}

/// Makes change `n` (2 to 20) to the tree under `base` and stores it in
/// `archive`; returns the lines `diff --from n-1 --to n` must print.
fn change(n: u64, base: &Path, archive: &str) -> Vec<&'static str> {
    let t = base.join("tree");
    let at = |p: &str| t.join(p);
    let secs = 1_700_000_000 + n * 1000;
    let update = |extra: &[&str]| {
        let mut args = vec!["update", "-q", archive, "-C", s(base)];
        args.extend(extra);
        args.push("tree");
        ok(&args);
    };
    let add = |path: &str| ok(&["add", "-q", archive, "-C", s(base), path]);
    match n {
        2 => {
            write(&at("new1.txt"), "new one\n", secs);
            add("tree/new1.txt");
            vec!["+ tree/new1.txt"]
        }
        3 => {
            write(&at("a.txt"), "alpha, edited in place\n", secs);
            update(&[]);
            vec!["M tree/a.txt  content, mtime"]
        }
        4 => {
            fs::rename(at("b.txt"), at("b2.txt")).unwrap();
            update(&["--delete-missing"]);
            vec!["- tree/b.txt", "+ tree/b2.txt"]
        }
        5 => {
            fs::remove_file(at("sub/c.txt")).unwrap();
            ok(&["rm", archive, "tree/sub/c.txt"]);
            vec!["- tree/sub/c.txt"]
        }
        6 => {
            fs::remove_file(at("keep.txt")).unwrap();
            symlink("a.txt", at("keep.txt")).unwrap();
            update(&[]);
            vec!["T tree/keep.txt  file -> symbolic link"]
        }
        7 => {
            chmod(&at("a.txt"), 0o600);
            add("tree/a.txt");
            vec!["M tree/a.txt  mode"]
        }
        8 => {
            fs::create_dir(at("newdir")).unwrap();
            write(&at("newdir/x.txt"), "x\n", secs);
            write(&at("newdir/y.txt"), "why\n", secs + 1);
            add("tree/newdir");
            vec!["+ tree/newdir", "+ tree/newdir/x.txt", "+ tree/newdir/y.txt"]
        }
        9 => {
            write(&at("sub/d.bin"), "dddd\n", secs);
            add("tree/sub/d.bin");
            vec!["M tree/sub/d.bin  content, mtime"]
        }
        10 => {
            fs::remove_dir_all(at("newdir")).unwrap();
            update(&["--delete-missing"]);
            vec!["- tree/newdir", "- tree/newdir/x.txt", "- tree/newdir/y.txt"]
        }
        11 => {
            fs::remove_file(at("keep.txt")).unwrap();
            symlink("b2.txt", at("keep.txt")).unwrap();
            update(&[]);
            vec!["M tree/keep.txt  mtime, target"]
        }
        12 => {
            fs::remove_file(at("keep.txt")).unwrap();
            fs::create_dir(at("keep.txt")).unwrap();
            write(&at("keep.txt/inner.txt"), "inside\n", secs);
            update(&[]);
            vec!["T tree/keep.txt  symbolic link -> directory", "+ tree/keep.txt/inner.txt"]
        }
        13 => {
            fs::remove_dir_all(at("sub")).unwrap();
            write(&at("sub"), "sub is a file now\n", secs);
            update(&["--delete-missing"]);
            vec!["T tree/sub  directory -> file", "- tree/sub/d.bin"]
        }
        14 => {
            write(&at("empty"), "", secs);
            update(&[]);
            vec!["+ tree/empty"]
        }
        15 => {
            write(&at("b2.txt"), "bravo, longer than before\n", secs);
            update(&[]);
            vec!["M tree/b2.txt  content, mtime"]
        }
        16 => {
            chmod(&at("keep.txt"), 0o700);
            add("tree/keep.txt");
            vec!["M tree/keep.txt  mode"]
        }
        17 => {
            // Both names in one session: a link is recorded within a session
            // (`update` alone would store the new name as a file of its own,
            // as tar -u does, the old name being unchanged).
            fs::hard_link(at("a.txt"), at("hl")).unwrap();
            ok(&["add", "-q", archive, "-C", s(base), "tree/a.txt", "tree/hl"]);
            vec!["+ tree/hl"]
        }
        18 => {
            fs::remove_file(at("a.txt")).unwrap();
            ok(&["rm", archive, "tree/a.txt"]);
            vec!["- tree/a.txt"]
        }
        19 => {
            fs::create_dir_all(at("deep/er")).unwrap();
            write(&at("deep/er/f"), "deep file\n", secs);
            add("tree/deep");
            vec!["+ tree/deep", "+ tree/deep/er", "+ tree/deep/er/f"]
        }
        20 => {
            write(&at("deep/er/f"), "deep file, edited\n", secs);
            ok(&["update", "-q", "-m", "last", archive, "-C", s(base), "tree"]);
            vec!["M tree/deep/er/f  content, mtime"]
        }
        _ => unreachable!(),
    }
}

fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

fn diff(args: &[&str]) -> (i32, String) {
    let out = run(args);
    (code(&out), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn twenty_sessions_each_read_back_as_its_tar_snapshot_and_diffed_exactly() {
    let work = tempfile::tempdir().unwrap();
    let base = work.path().join("base");
    let t = base.join("tree");
    fs::create_dir_all(t.join("sub")).unwrap();
    for (name, content) in [("a.txt", "alpha\n"), ("b.txt", "bravo\n"), ("keep.txt", "kept\n")] {
        write(&t.join(name), content, 1_600_000_000);
    }
    write(&t.join("sub/c.txt"), "charlie\n", 1_600_000_001);
    write(&t.join("sub/d.bin"), "delta\n", 1_600_000_002);
    let archive = work.path().join("a.lbox");
    let a = s(&archive);
    let mut create = vec!["create", "-q", "-o", a, "-C", s(&base), "tree"];
    create.extend(CHEAP);
    ok(&create);

    let snap = |n: u64| {
        let dir = work.path().join(format!("snap{n}"));
        fs::create_dir(&dir).unwrap();
        let tarball = work.path().join(format!("snap{n}.tar"));
        tar(&["--format=posix", "-cf", s(&tarball), "-C", s(&base), "tree"]);
        tar(&["-xpf", s(&tarball), "-C", s(&dir)]);
        dir
    };
    let mut snapshots = vec![snap(1)];
    let mut expected = Vec::new();
    for n in 2..=20 {
        expected.push(change(n, &base, a));
        snapshots.push(snap(n));
    }

    // 20 states; one merge session among them (the 17th append found 16 runs).
    let log = ok(&["log", "--json", a]);
    let sessions: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let states: Vec<&serde_json::Value> = sessions.iter().filter(|v| v["state"].is_u64()).collect();
    assert_eq!(states.len(), 20, "{log}");
    assert!(sessions.iter().any(|v| v["kind"] == "merge"), "{log}");

    for n in 1..=20u64 {
        let out = work.path().join(format!("out{n}"));
        fs::create_dir(&out).unwrap();
        let state = n.to_string();
        ok(&["extract", "-q", "-p", "--session", &state, a, "-C", s(&out)]);
        assert_eq!(snapshot(&out), snapshot(&snapshots[n as usize - 1]), "state {n}");

        // --at the state's own time reads it; a nanosecond earlier, the one before.
        let ns = states[n as usize - 1]["created_ns"].as_i64().unwrap();
        let at = |ns: i64| format!("@{}.{:09}", ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        let listed = ok(&["list", "-l", "--session", &state, a]);
        assert_eq!(ok(&["list", "-l", "--at", &at(ns), a]), listed, "--at state {n}");
        if n > 1 {
            let before = ok(&["list", "-l", "--session", &(n - 1).to_string(), a]);
            assert_eq!(ok(&["list", "-l", "--at", &at(ns - 1), a]), before, "--at before state {n}");

            let (status, text) = diff(&["diff", a, "--from", &(n - 1).to_string(), "--to", &state]);
            let mut want: Vec<String> = expected[n as usize - 2].iter().map(|l| l.to_string()).collect();
            want.sort();
            assert_eq!((status, sorted(&text)), (1, want), "diff --from {} --to {n}", n - 1);
        }
        let (status, text) = diff(&["diff", a, "--from", &state, "--to", &state]);
        assert_eq!((status, text.as_str()), (0, ""), "a state equals itself");
    }
    // --to defaults to the last state, negative numbers count back.
    assert_eq!(diff(&["diff", a, "--from", "19"]), diff(&["diff", a, "--from", "-2", "--to", "-1"]));

    let (status, json) = diff(&["diff", "--json", a, "--from", "3", "--to", "4"]);
    assert_eq!(status, 1, "{json}");
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values.len(), 3, "{json}");
    assert_eq!(
        (values[0]["type"].as_str(), values[0]["path"].as_str()),
        (Some("removed"), Some("tree/b.txt"))
    );
    assert_eq!(values[0]["old"]["kind"], "file");
    assert_eq!(
        (values[1]["type"].as_str(), values[1]["path"].as_str()),
        (Some("added"), Some("tree/b2.txt"))
    );
    assert_eq!(values[1]["new"]["size"], 6);
    let summary = &values[2];
    assert_eq!((summary["added"].as_u64(), summary["removed"].as_u64()), (Some(1), Some(1)));
    assert_eq!((summary["changed"].as_u64(), summary["equal"].as_bool()), (Some(0), Some(false)));
    let (_, json) = diff(&["diff", "--json", a, "--from", "6", "--to", "7"]);
    let changed: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(changed["changes"], serde_json::json!(["mode"]));
    assert_eq!(
        (changed["old"]["mode"].as_u64(), changed["new"]["mode"].as_u64()),
        (Some(0o644), Some(0o600))
    );

    // Against the live tree: equal right after the last session...
    let (status, text) = diff(&["diff", a, "-C", s(&base)]);
    assert_eq!((status, text.as_str()), (0, ""), "nothing changed since the last session");
    // ...then exactly what changed since: an edit, a file added, one
    // removed, and a same-size edit with its mtime put back, which only
    // the SHA-256 comparison sees.
    write(&t.join("b2.txt"), "bravo, edited after the last session\n", 1_800_000_000);
    write(&t.join("zz.txt"), "zulu\n", 1_800_000_000);
    fs::remove_file(t.join("empty")).unwrap();
    let mtime = fs::metadata(t.join("deep/er/f")).unwrap().mtime() as u64;
    write(&t.join("deep/er/f"), "deep file, EDITED\n", mtime);
    let full =
        ["M tree/b2.txt  content, mtime", "M tree/deep/er/f  content", "- tree/empty", "+ tree/zz.txt"];
    let want = |lines: &[&str]| {
        let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        v.sort();
        v
    };
    let (status, text) = diff(&["diff", a, "-C", s(&base)]);
    assert_eq!((status, sorted(&text)), (1, want(&full)), "{text}");
    let (status, text) = diff(&["diff", "--quick", a, "-C", s(&base)]);
    let quick = ["M tree/b2.txt  content, mtime", "- tree/empty", "+ tree/zz.txt"];
    assert_eq!((status, sorted(&text)), (1, want(&quick)), "--quick: size and mtime only");
    let (status, text) = diff(&["diff", a, "-C", s(&base), "tree/b2.txt", "tree/deep"]);
    assert_eq!((status, sorted(&text)), (1, want(&full[..2])), "PATHs: those subtrees only");
    // A state before the live edits: the edits since it as well.
    let (status, text) = diff(&["diff", "--session", "19", a, "-C", s(&base), "tree/deep"]);
    assert_eq!((status, text.as_str()), (1, "M tree/deep/er/f  content, mtime\n"));
}

/// An archive of three states made a moment apart.
fn three_states(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), "one\n").unwrap();
    let archive = dir.join("a.lbox");
    let mut create = vec!["create", "-q", "-o", s(&archive), "-C", s(&src), "f"];
    create.extend(CHEAP);
    ok(&create);
    for content in ["two\n", "three\n"] {
        fs::write(src.join("f"), content).unwrap();
        ok(&["add", "-q", s(&archive), "-C", s(&src), "f"]);
    }
    archive
}

/// One line on stderr, exit `want`, and the line.
fn fails(args: &[&str], tz: Option<&str>, want: i32) -> String {
    let mut cmd = lockbox();
    if let Some(tz) = tz {
        cmd.env("TZ", tz);
    }
    let out = cmd.args(args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), want, "lockbox {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", String::from_utf8_lossy(&out.stdout));
    err
}

/// The local time `secs` since the epoch shows in zone `tz`, by GNU date.
fn local_text(secs: i64, tz: &str) -> String {
    let out = Process::new("date")
        .env("TZ", tz)
        .args([format!("-d@{secs}").as_str(), "+%Y-%m-%d %H:%M:%S"])
        .output();
    String::from_utf8(out.expect("GNU date runs").stdout).unwrap().trim().to_owned()
}

#[test]
fn at_reads_times_in_the_local_zone_and_refuses_one_before_the_first_state() {
    let dir = tempfile::tempdir().unwrap();
    let archive = three_states(dir.path());
    let a = s(&archive);
    let log = ok(&["log", "--json", a]);
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let first_secs = first["created_ns"].as_i64().unwrap().div_euclid(1_000_000_000);

    // A second before the first state, written in Tokyo's local time
    // (UTC+9, no daylight saving): before the first state there, but nine
    // hours later (after every state) read as UTC.
    let text = local_text(first_secs - 1, "Asia/Tokyo");
    let err = fails(&["cat", "--at", &text, a, "f"], Some("Asia/Tokyo"), 2);
    assert!(err.contains("no state at or before") && err.contains("the first is at"), "{err}");
    let mut utc = lockbox();
    let out = utc.env("TZ", "UTC").args(["cat", "--at", &text, a, "f"]).output().unwrap();
    assert_eq!((code(&out), out.stdout.clone()), (0, b"three\n".to_vec()), "{}", stderr(&out));
    // A time after the last state is the last state; "now" too.
    let later = local_text(first_secs + 3600, "Asia/Tokyo");
    let out = lockbox().env("TZ", "Asia/Tokyo").args(["cat", "--at", &later, a, "f"]).output().unwrap();
    assert_eq!(out.stdout, b"three\n");
    assert_eq!(ok(&["cat", "--at", "now", a, "f"]), "three\n");

    let err = fails(&["list", "--at", "@0", a], None, 2);
    assert!(err.contains("no state at or before 1970-01-01T00:00:00Z"), "{err}");
    fails(&["extract", "--at", "@0", a, "-C", s(dir.path())], None, 2);
    fails(&["info", "--at", "@0", a], None, 2);
    fails(&["verify", "--at", "@0", a], None, 2);
    fails(&["export", "--at", "@0", a, "-o", "-"], None, 2);
    fails(&["log", "--at", "@0", a], None, 2);
    // clap's own errors: exit 2, with its usage lines.
    let out = run(&["list", "--at", "soonish", a]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid date 'soonish'"), "{}", stderr(&out));
    assert_eq!(code(&run(&["list", "--at", "now", "--session", "1", a])), 2);
    let err = fails(&["list", "--session", "4", a], None, 2);
    assert!(err.contains("no state 4: the archive holds states 1 to 3"), "{err}");
}

#[test]
fn diff_refuses_bad_input_with_one_line_and_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let archive = three_states(dir.path());
    let a = s(&archive);
    let missing = dir.path().join("no-such-dir");
    let err = fails(&["diff", a, "-C", s(&missing)], None, 2);
    assert!(err.contains("reading the directory") && err.contains("no-such-dir"), "{err}");
    let err = fails(&["diff", a, "-C", s(&archive)], None, 2);
    assert!(err.contains("reading the directory"), "a file is not a directory: {err}");
    let err = fails(&["diff", a, "--from", "9"], None, 2);
    assert!(err.contains("no state 9: the archive holds states 1 to 3"), "{err}");
    fails(&["diff", a, "--from", "1", "--to", "0"], None, 2);
    fails(&["diff", a, "--from", "1", "--session", "2"], None, 2);
    assert_eq!(code(&run(&["diff", a])), 2, "neither --from nor -C");
    fails(&["diff", s(&dir.path().join("nope.lbox")), "--from", "1"], None, 2);
    let wrong = lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["diff", a, "--from", "1"]).output().unwrap();
    assert_eq!(code(&wrong), 3, "{}", stderr(&wrong));
    // A damaged archive (a byte of the last root, before the header copy
    // and the trailer) is exit 3 as everywhere.
    let mut bytes = fs::read(&archive).unwrap();
    let end = bytes.len();
    let copy = 32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    bytes[end - 216 - copy - 5] ^= 1;
    let damaged = dir.path().join("damaged.lbox");
    fs::write(&damaged, &bytes).unwrap();
    let out = run(&["diff", s(&damaged), "--from", "1"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // The archive inside the directory compared is left out, as a create
    // leaves it out.
    let inside = dir.path().join("src/a.lbox");
    let mut create = vec!["create", "-q", "-o", s(&inside), "-C", s(dir.path()), "src"];
    create.extend(CHEAP);
    ok(&create);
    assert_eq!(diff(&["diff", s(&inside), "-C", s(dir.path())]), (0, String::new()));
    // Between states: 0 when equal, 1 when not.
    assert_eq!(diff(&["diff", a, "--from", "2", "--to", "2"]), (0, String::new()));
    assert_eq!(diff(&["diff", a, "--from", "1"]), (1, "M f  content, mtime\n".to_string()));
}
