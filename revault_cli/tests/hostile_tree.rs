//! `create` on trees that fight back, through the real `lockbox` binary:
//! symbolic links given as PATHs, `-h`, files that grow, vanish, are
//! swapped or cannot be read, `--strict`, and names carrying terminal
//! escapes.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use tempfile::TempDir;

use crate::util::{as_nobody, code, create_cmd, is_root, lockbox, ok, run, stderr, CHEAP};

/// A name that retitles and clears a terminal, with a byte that is not UTF-8.
const HOSTILE: &[u8] = b"x\x1b]0;pwned\x07\x1b[2J\xff";
/// How `HOSTILE` is shown: as `ls -b` and GNU tar quote it.
const HOSTILE_QUOTED: &str = r"x\033]0;pwned\a\033[2J\377";

/// Longest a create may take here: a hang fails the test instead.
const TIMEOUT: Duration = Duration::from_secs(120);

/// `create -o ARCHIVE -C DIR EXTRA... INPUT`.
fn create(archive: &Path, dir: &Path, input: impl AsRef<OsStr>, extra: &[&str]) -> Output {
    run(create_cmd(archive, dir, input, extra).timeout(TIMEOUT))
}

/// The stored names, from `list -0`.
fn names(archive: &Path) -> Vec<Vec<u8>> {
    let out = ok(run(lockbox().args(["list", "-0"]).arg(archive)));
    let mut names: Vec<Vec<u8>> = out.stdout.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    assert_eq!(names.pop(), Some(vec![]), "every name ends with a NUL");
    names
}

fn extract(archive: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    ok(run(lockbox().arg("extract").arg(archive).arg("-C").arg(dst)));
}

/// Files in `dir` whose names start with a dot and end in `.tmp`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with('.') && n.ends_with(".tmp")
        })
        .collect()
}

#[test]
fn symlinked_path_round_trips_as_a_symlink() {
    let work = TempDir::new().unwrap();
    fs::create_dir(work.path().join("real")).unwrap();
    fs::write(work.path().join("real/a.txt"), b"content").unwrap();
    symlink("real", work.path().join("docs")).unwrap();
    let archive = work.path().join("b.lbox");
    ok(create(&archive, work.path(), "docs", &[]));
    assert_eq!(names(&archive), [b"docs".to_vec()], "the link itself, nothing below it");
    ok(run(lockbox().arg("verify").arg(&archive)));
    let dst = work.path().join("out");
    extract(&archive, &dst);
    assert_eq!(fs::read_link(dst.join("docs")).unwrap(), Path::new("real"));

    let followed = work.path().join("h.lbox");
    ok(create(&followed, work.path(), "docs", &["-h"]));
    assert_eq!(names(&followed), [b"docs".to_vec(), b"docs/a.txt".to_vec()]);
    let dst = work.path().join("out-h");
    extract(&followed, &dst);
    assert!(fs::symlink_metadata(dst.join("docs")).unwrap().is_dir(), "-h stores what the link points to");
    assert_eq!(fs::read(dst.join("docs/a.txt")).unwrap(), b"content");
}

#[test]
fn dereference_stops_at_a_loop() {
    let work = TempDir::new().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("sub/f"), b"f").unwrap();
    symlink("..", tree.join("sub/up")).unwrap();
    let archive = work.path().join("a.lbox");
    let out = create(&archive, work.path(), "tree", &["--dereference"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("lockbox: tree/sub/up: file system loop detected"), "{}", stderr(&out));
    assert_eq!(names(&archive), [b"tree".to_vec(), b"tree/sub".to_vec(), b"tree/sub/f".to_vec()]);
}

#[test]
fn escape_sequence_names_are_quoted_in_list_and_messages() {
    let work = TempDir::new().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join(OsStr::from_bytes(HOSTILE)), b"x").unwrap();
    let archive = work.path().join("a.lbox");
    ok(create(&archive, work.path(), "tree", &[]));

    for args in [&["list"][..], &["list", "-l"]] {
        let out = ok(run(lockbox().args(args).arg(&archive)));
        let text = String::from_utf8(out.stdout).expect("quoted output is UTF-8");
        assert!(text.contains(&format!("tree/{HOSTILE_QUOTED}\n")), "{args:?}: {text}");
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{args:?}: {text:?}");
    }
    assert!(names(&archive).contains(&[b"tree/", HOSTILE].concat()), "list -0 gives the raw bytes");

    // A stored name in an error message.
    let missing = [HOSTILE, b"-missing"].concat();
    let out = run(lockbox().arg("cat").arg(&archive).arg(OsStr::from_bytes(&missing)));
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains(&format!("{HOSTILE_QUOTED}-missing")) && !err.contains('\x1b'), "{err:?}");
    // A file-system path in an I/O error.
    let out = run(lockbox().arg("list").arg(work.path().join(OsStr::from_bytes(&missing))));
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains(&format!("{HOSTILE_QUOTED}-missing: ")) && !err.contains('\x1b'), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // A path in a create warning.
    mkfifo(&tree.join(OsStr::from_bytes(&[HOSTILE, b".fifo"].concat())));
    let out = create(&work.path().join("b.lbox"), work.path(), "tree", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("lockbox: tree/{HOSTILE_QUOTED}.fifo: FIFO ignored")), "{err:?}");
    assert!(!err.contains('\x1b'), "{err:?}");
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::from_bits_truncate(0o644)).unwrap();
}

#[test]
fn growing_file_is_stored_at_its_size_when_opened_and_exits_1() {
    let work = TempDir::new().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let log = tree.join("log");
    fs::write(&log, vec![b'a'; 16 << 20]).unwrap();
    let start = fs::metadata(&log).unwrap().len();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (done, log) = (Arc::clone(&done), log.clone());
        thread::spawn(move || {
            use std::io::Write;
            let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
            // Bounded: at most 256 MiB, and only while create runs.
            for _ in 0..4096 {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                f.write_all(&[b'b'; 64 << 10]).unwrap();
                thread::sleep(Duration::from_millis(1));
            }
        })
    };
    thread::sleep(Duration::from_millis(20));
    let archive = work.path().join("a.lbox");
    let out = create(&archive, work.path(), "tree", &[]);
    done.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("lockbox: tree/log: file changed as we read it"), "{}", stderr(&out));
    ok(run(lockbox().arg("verify").arg(&archive)));
    let stored = ok(run(lockbox().arg("cat").arg(&archive).arg("tree/log"))).stdout;
    let end = fs::metadata(&log).unwrap().len();
    assert!(
        stored.len() as u64 >= start && (stored.len() as u64) < end,
        "{start} <= {} < {end}",
        stored.len()
    );
    assert_eq!(stored, fs::read(&log).unwrap()[..stored.len()], "a prefix of the file");
}

#[test]
fn strict_fails_and_leaves_the_old_archive_and_no_temporary_file() {
    let work = TempDir::new().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("a"), b"a").unwrap();
    let archive = work.path().join("a.lbox");
    ok(create(&archive, work.path(), "tree", &[]));
    let before = fs::read(&archive).unwrap();
    mkfifo(&tree.join("pipe"));
    let out = create(&archive, work.path(), "tree", &["--strict", "--overwrite"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        format!("lockbox: creating {}: tree/pipe: FIFO ignored; stopping (strict)", archive.display())
    );
    assert_eq!(fs::read(&archive).unwrap(), before, "the old archive is untouched");
    assert!(temp_files(work.path()).is_empty(), "{:?}", temp_files(work.path()));
    // Without --strict the FIFO is a warning, not a failure (tar: "socket ignored").
    let out = create(&archive, work.path(), "tree", &["--overwrite"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(names(&archive), [b"tree".to_vec(), b"tree/a".to_vec()]);
}

/// Runs `create` as an unprivileged user: root reads anything, so an
/// unreadable file needs someone who cannot.
fn unprivileged() -> Command {
    if !is_root() {
        return lockbox();
    }
    let mut cmd = Command::from_std(as_nobody(env!("CARGO_BIN_EXE_lockbox")));
    cmd.timeout(TIMEOUT);
    cmd
}

#[test]
fn unreadable_file_and_directory_are_skipped_with_exit_1() {
    let mut cmd = unprivileged();
    let work = TempDir::new().unwrap();
    fs::set_permissions(work.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let tree = work.path().join("tree");
    fs::create_dir_all(tree.join("closed")).unwrap();
    fs::write(tree.join("closed/inside"), b"i").unwrap();
    fs::write(tree.join("open"), b"o").unwrap();
    fs::write(tree.join("secret"), b"s").unwrap();
    fs::set_permissions(tree.join("secret"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(tree.join("closed"), fs::Permissions::from_mode(0o000)).unwrap();
    let archive = work.path().join("a.lbox");
    let out = cmd.arg("create").args(CHEAP).arg("-o").arg(&archive).arg("-C").arg(work.path()).arg("tree");
    let out = run(out);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("lockbox: tree/secret: cannot read: Permission denied"), "{err}");
    assert!(err.contains("lockbox: tree/closed: cannot read: Permission denied"), "{err}");
    assert_eq!(names(&archive), [b"tree".to_vec(), b"tree/open".to_vec()]);
    ok(run(lockbox().arg("verify").arg(&archive)));
}

#[test]
fn racing_swaps_never_store_a_file_from_outside_the_tree() {
    const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-TREE-0123456789";
    const FILES: usize = 200;
    let work = TempDir::new().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(work.path().join("secret"), SECRET).unwrap();
    for i in 0..FILES {
        fs::write(tree.join(format!("f{i:03}")), vec![b'.'; SECRET.len()]).unwrap();
    }
    // Swap every file in turn, atomically by rename, for a decoy file, a
    // symlink to the secret, and a FIFO.
    let done = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (done, tree) = (Arc::clone(&done), tree.clone());
        let secret = work.path().join("secret");
        let decoy = work.path().join("decoy");
        fs::write(&decoy, vec![b'.'; SECRET.len()]).unwrap();
        thread::spawn(move || {
            let mut swaps = 0u64;
            while !done.load(Ordering::Relaxed) && swaps < 2_000_000 {
                for i in 0..FILES {
                    let target = tree.join(format!("f{i:03}"));
                    let tmp = tree.join(format!(".swap{i:03}"));
                    let _ = fs::remove_file(&tmp);
                    let _ = match swaps % 3 {
                        0 => fs::hard_link(&decoy, &tmp),
                        1 => symlink(&secret, &tmp),
                        _ => rustix::fs::mkfifoat(rustix::fs::CWD, &tmp, rustix::fs::Mode::RUSR)
                            .map_err(std::io::Error::from),
                    };
                    let _ = fs::rename(&tmp, &target);
                    swaps += 1;
                }
            }
            swaps
        })
    };
    // CI runs 25 creates in at most 20 s; LOCKBOX_RACE_RUNS=N runs longer.
    let max_runs = std::env::var("LOCKBOX_RACE_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(25);
    let deadline = Instant::now() + Duration::from_secs(if max_runs > 25 { 3600 } else { 20 });
    let mut runs = 0;
    let (mut replaced, mut vanished) = (0, 0);
    while runs < max_runs && Instant::now() < deadline {
        let archive = work.path().join(format!("a{runs}.lbox"));
        let out = create(&archive, work.path(), "tree", &[]);
        assert!([0, 1].contains(&code(&out)), "{}", stderr(&out));
        replaced += stderr(&out).matches("replaced or changed kind").count();
        vanished += stderr(&out).matches("removed before we read it").count();
        let dst = work.path().join(format!("out{runs}"));
        extract(&archive, &dst);
        for e in fs::read_dir(dst.join("tree")).unwrap() {
            let path = e.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_file() {
                assert_ne!(fs::read(&path).unwrap(), SECRET, "{} holds the secret", path.display());
            }
        }
        runs += 1;
    }
    done.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{runs} creates, {swaps} swaps; files skipped: {replaced} replaced, {vanished} vanished");
    assert!(runs >= 3 && swaps > 0, "the race ran: {runs} creates, {swaps} swaps");
}
