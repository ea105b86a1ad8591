//! Secrets through the real `lockbox` binary: where passwords come from
//! (long ones through a slow pipe, too long ones refused), memory that may
//! not be locked, and key changes killed with SIGKILL at many points.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::util::{lockbox_without_password as lockbox, ok, CHEAP};

const CONTENT: &[u8] = b"for your eyes only\n";

/// `work/src/note.txt` archived to `work/a.lbox` with `password` at a cheap
/// KDF cost.
fn create(work: &Path, password: &str) -> PathBuf {
    fs::create_dir_all(work.join("src")).unwrap();
    fs::write(work.join("src/note.txt"), CONTENT).unwrap();
    let archive = work.join("a.lbox");
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", password)
        .args(["create", "-o"])
        .arg(&archive)
        .arg("-C")
        .arg(work.join("src"))
        .args(CHEAP)
        .arg("note.txt")
        .output()
        .unwrap());
    archive
}

fn cat(archive: &Path, password: &str) -> Output {
    lockbox().env("LOCKBOX_PASSWORD", password).arg("cat").arg(archive).arg("note.txt").output().unwrap()
}

/// `passwd` reading the old and the new password from one pipe, a line
/// each: the first read leaves the second line for the second.
#[test]
fn two_passwords_on_one_pipe() {
    let work = TempDir::new().unwrap();
    let archive = create(work.path(), "old");
    let mut passwd = lockbox()
        .arg("passwd")
        .arg(&archive)
        .args(["--password-file", "/dev/stdin", "--new-password-file", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    passwd.stdin.take().unwrap().write_all(b"old\nnew\n").unwrap();
    ok(passwd.wait_with_output().unwrap());
    assert_eq!(ok(cat(&archive, "new")).stdout, CONTENT);
    assert_eq!(cat(&archive, "old").status.code(), Some(3));
}

/// A 4000-byte password written to `lockbox`'s stdin a few bytes at a time,
/// read with `--password-file /dev/stdin` (the buffer must not be sized by
/// the first read), then the same through a file; one byte more than the
/// limit is refused naming the file, and nothing is written.
#[test]
fn long_password_through_a_slow_pipe() {
    let work = TempDir::new().unwrap();
    fs::create_dir_all(work.path().join("src")).unwrap();
    fs::write(work.path().join("src/note.txt"), CONTENT).unwrap();
    let password: String = (0..4000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let archive = work.path().join("a.lbox");
    let mut child = lockbox()
        .args(["--password-file", "/dev/stdin", "create", "-o"])
        .arg(&archive)
        .arg("-C")
        .arg(work.path().join("src"))
        .args(CHEAP)
        .arg("note.txt")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for chunk in format!("{password}\n").as_bytes().chunks(700) {
        stdin.write_all(chunk).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    ok(child.wait_with_output().unwrap());
    assert_eq!(ok(cat(&archive, &password)).stdout, CONTENT);
    let file = work.path().join("pw");
    fs::write(&file, format!("{password}\r\n")).unwrap();
    let read = lockbox().arg("--password-file").arg(&file).arg("cat").arg(&archive).arg("note.txt").output();
    assert_eq!(ok(read.unwrap()).stdout, CONTENT);

    let too_long = work.path().join("too-long");
    fs::write(&too_long, "x".repeat(4097)).unwrap();
    let refused = lockbox()
        .arg("--password-file")
        .arg(&too_long)
        .args(["create", "-o"])
        .arg(work.path().join("b.lbox"))
        .arg(work.path().join("src"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("lockbox: reading password file ") && stderr.contains("longer than 4096"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!work.path().join("b.lbox").exists());
}

/// `VmLck` of process `pid`, in KiB.
fn locked_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmLck:"))?.split_whitespace().next()?.parse().ok()
}

/// The real binary holds the password from `LOCKBOX_PASSWORD` in locked
/// memory, and has wiped it from `/proc/PID/environ`: seen while it waits
/// to open an archive that is a FIFO nobody writes to; without the right to
/// lock, nothing is locked.
#[test]
fn password_is_held_in_locked_memory() {
    let work = TempDir::new().unwrap();
    let fifo = work.path().join("waiting.lbox");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let watch = |mut cmd: Command| {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut seen, mut running_since, mut environ) = (None, None, Vec::new());
        while Instant::now() < deadline {
            // Under setpriv and prlimit, lockbox is the process they exec into;
            // it takes the password first thing, then blocks opening the FIFO.
            let named = fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap_or_default();
            if named.trim() == "lockbox" {
                seen = locked_kib(child.id());
                environ = fs::read(format!("/proc/{}/environ", child.id())).unwrap_or_default();
                let since = *running_since.get_or_insert_with(Instant::now);
                if seen.is_some_and(|kib| kib > 0) || since.elapsed() > Duration::from_millis(500) {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait().unwrap();
        (seen, String::from_utf8_lossy(&environ).into_owned())
    };
    let mut plain = lockbox();
    plain.env("LOCKBOX_PASSWORD", "in locked memory").arg("cat").arg(&fifo).arg("x");
    let (locked, environ) = watch(plain);
    assert!(locked.is_some_and(|kib| kib >= 4), "VmLck {locked:?}");
    assert!(environ.contains("LOCKBOX_PASSWORD="), "the name stays, {environ:?}");
    assert!(!environ.contains("in locked memory"), "the value is wiped from /proc/PID/environ");
    let mut refused = Command::new("setpriv");
    refused
        .args(["--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "prlimit", "--memlock=0:0"])
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", "in ordinary memory")
        .arg("cat")
        .arg(&fifo)
        .arg("x");
    assert_eq!(watch(refused).0, Some(0));
}

/// With no right to lock memory (no CAP_IPC_LOCK, RLIMIT_MEMLOCK 0), keys
/// and passwords stay in ordinary memory and every command still works.
#[test]
fn no_memory_lock_allowed_still_works() {
    let work = TempDir::new().unwrap();
    fs::create_dir_all(work.path().join("src")).unwrap();
    fs::write(work.path().join("src/note.txt"), CONTENT).unwrap();
    let locked_out = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "prlimit", "--memlock=0:0"])
            .arg(env!("CARGO_BIN_EXE_lockbox"))
            .args(args)
            .env("LOCKBOX_PASSWORD", "pw")
            .current_dir(work.path());
        cmd.output().expect("setpriv and prlimit (util-linux) are needed")
    };
    let create: Vec<&str> =
        ["create", "-o", "a.lbox", "-C", "src"].into_iter().chain(CHEAP).chain(["note.txt"]).collect();
    ok(locked_out(&create));
    assert_eq!(ok(locked_out(&["cat", "a.lbox", "note.txt"])).stdout, CONTENT);
    let recipient = String::from_utf8(ok(locked_out(&["keygen", "-o", "id.txt"])).stdout).unwrap();
    let add = ["key", "add", "a.lbox", "-r", recipient.trim()];
    ok(locked_out(&add));
    assert_eq!(ok(locked_out(&["-i", "id.txt", "cat", "a.lbox", "note.txt"])).stdout, CONTENT);
}

/// One key change, and the slot listing and secrets before and after it.
struct Change {
    /// The command, then the archive, then `rest`.
    args: Vec<String>,
    rest: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// A password that opens the archive before the change but may not after.
    old: Option<String>,
    /// A password that opens it after the change but may not before.
    new: Option<String>,
}

fn run_change(archive: &Path, change: &Change) -> Command {
    let mut cmd = lockbox();
    cmd.args(&change.args).arg(archive).args(&change.rest);
    for (k, v) in &change.env {
        cmd.env(k, v);
    }
    cmd
}

fn listing(archive: &Path) -> Vec<String> {
    let out = ok(lockbox().args(["key", "list"]).arg(archive).output().unwrap());
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

fn opens(archive: &Path, password: &str) -> bool {
    let out = cat(archive, password);
    match out.status.code() {
        Some(0) => {
            assert_eq!(out.stdout, CONTENT, "content intact");
            true
        }
        Some(3) => false,
        _ => panic!("cat failed: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// `key add`, `passwd` and `key remove` killed with SIGKILL at delays
/// spread over a run (new slots at the default Argon2id cost, so a run
/// lasts long enough to be cut anywhere): after each kill the archive's
/// slots are those before or after the change (`passwd` writes the new slot
/// to a spare place, copies it over the old one and clears the spare, so
/// a spare may be there beside the old or the new; `key add` writes the
/// header copies first, so an added key may open through them before the
/// primary table lists it), the base password and the content are intact,
/// and the old or the new password opens it.
#[test]
fn key_changes_killed_at_any_point_leave_old_or_new_slots() {
    let work = TempDir::new().unwrap();
    let archive = create(work.path(), "base");
    let started = Instant::now();
    let mut extra: Option<(String, String)> = None; // (password, its slot number)
    let rounds = 12;
    let mut outcomes = [0usize; 3]; // undone, midway, done
    for round in 0..rounds {
        let fresh = format!("extra-{round}");
        let change = match &extra {
            None => Change {
                args: vec!["key".into(), "add".into()],
                rest: vec!["--password".into()],
                env: vec![("LOCKBOX_PASSWORD", "base".into()), ("LOCKBOX_NEW_PASSWORD", fresh.clone())],
                old: None,
                new: Some(fresh.clone()),
            },
            Some((pw, _)) if round % 4 == 1 || round % 4 == 2 => Change {
                args: vec!["passwd".into()],
                rest: vec![],
                env: vec![("LOCKBOX_PASSWORD", pw.clone()), ("LOCKBOX_NEW_PASSWORD", fresh.clone())],
                old: Some(pw.clone()),
                new: Some(fresh.clone()),
            },
            Some((pw, slot)) => Change {
                args: vec!["key".into(), "remove".into()],
                rest: vec![slot.clone()],
                env: vec![("LOCKBOX_PASSWORD", "base".into())],
                old: Some(pw.clone()),
                new: None,
            },
        };
        // The change run to its end on a copy: the listing after it, and how long it takes.
        let copy = work.path().join("copy.lbox");
        fs::copy(&archive, &copy).unwrap();
        let before = listing(&archive);
        let timer = Instant::now();
        ok(run_change(&copy, &change).output().unwrap());
        let full = timer.elapsed();
        let after = listing(&copy);
        if change.args[0] == "passwd" {
            // passwd keeps the slot's number and cost: only the passwords tell.
            let (old, new) = (change.old.as_deref().unwrap(), change.new.as_deref().unwrap());
            assert!(opens(&copy, new) && !opens(&copy, old), "round {round}: passwd changes the password");
        } else {
            assert_ne!(before, after, "round {round}: the change changes the slots");
        }

        // The same change on the archive, killed at a point spread over the
        // run: most near its end, where the KDF work is done and slots are written.
        let fraction =
            if round < 3 { 0.2 * round as f64 } else { 0.6 + 0.5 * (round - 3) as f64 / (rounds - 4) as f64 };
        let delay = full.mul_f64(fraction);
        let mut child =
            run_change(&archive, &change).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        child.wait().unwrap();

        let now = listing(&archive);
        for line in &now {
            assert!(
                before.contains(line) || after.contains(line),
                "round {round}: slot {line:?} is neither old nor new"
            );
        }
        assert!(opens(&archive, "base"), "round {round}: the base password still opens");
        let old_opens = change.old.as_deref().map(|pw| opens(&archive, pw));
        let new_opens = change.new.as_deref().map(|pw| opens(&archive, pw));
        let done = now == after && new_opens != Some(false) && old_opens != Some(true);
        let undone = now == before && old_opens != Some(false) && new_opens != Some(true);
        // passwd between its writes: the new slot in a spare place beside
        // the old one (both passwords open), or already copied over the old
        // one with the spare not yet cleared (only the new one opens).
        //
        // key add between its writes: the new slot in every session's
        // header copy, not yet in the primary table that `key list` reads;
        // the new key opens through a copy (read when no primary slot
        // opens), as lockbox's slots.rs says.
        let added_to_copies =
            change.old.is_none() && now == before && old_opens.is_none() && new_opens == Some(true);
        let midway = (now.len() == before.len() + 1 && new_opens == Some(true)) || added_to_copies;
        assert!(done || undone || midway, "round {round}: before {before:?}, after {after:?}, now {now:?}");
        outcomes[if undone {
            0
        } else if midway {
            1
        } else {
            2
        }] += 1;
        let number = |line: &String| line.split_whitespace().next().unwrap().to_string();
        if added_to_copies {
            // Run the add again: it takes the same free slot in the
            // primary and the copies, and the slots agree.
            ok(run_change(&archive, &change).output().unwrap());
            assert_eq!(listing(&archive).len(), before.len() + 1, "round {round}: the add run again");
        } else if midway {
            // Finish the interrupted passwd's work by hand: clear the spare.
            let before_numbers: Vec<String> = before.iter().map(number).collect();
            let spare = now.iter().map(number).find(|n| !before_numbers.contains(n)).unwrap();
            let remove = lockbox()
                .env("LOCKBOX_PASSWORD", "base")
                .args(["key", "remove"])
                .arg(&archive)
                .arg(spare)
                .output();
            ok(remove.unwrap());
        }
        let new_opens = change.new.as_deref().map(|pw| opens(&archive, pw));
        let old_opens = change.old.as_deref().map(|pw| opens(&archive, pw));
        extra = match (&extra, new_opens) {
            // passwd keeps the slot's number.
            (Some((_, slot)), Some(true)) if change.args[0] == "passwd" => {
                Some((fresh.clone(), slot.clone()))
            }
            (_, Some(true)) => {
                let now = listing(&archive);
                let slot = now.iter().find(|l| !before.contains(l)).or_else(|| now.last()).unwrap();
                Some((fresh.clone(), number(slot)))
            }
            _ if change.new.is_none() && old_opens == Some(false) => None,
            _ => extra,
        };
    }
    eprintln!("after the kills: {outcomes:?} (undone, midway, done) in {:?}", started.elapsed());
}
