//! Every exit code `lockbox --help` lists (its footer is rendered from
//! `exit.rs`'s table, as the man page's EXIT STATUS and README's table
//! are), reached through the real binary: a code listed with no case here
//! fails the test. A signal's code is what a shell shows for a process the
//! signal ended (128 plus its number), after lockbox's own handler ran.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{kill_process, Pid, Signal};

use crate::util::{create_cmd, lockbox, PASSWORD};

/// The codes of the `--help` footer: "Exit codes: 0 ok, 1 failure, …".
fn listed_codes() -> Vec<i32> {
    let help = lockbox().arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let line = help.lines().find_map(|l| l.strip_prefix("Exit codes: ")).expect("an exit-code footer");
    let codes: Vec<i32> =
        line.split(", ").map(|item| item.split(' ').next().unwrap().parse().unwrap()).collect();
    assert!(codes.len() >= 4, "{line}");
    codes
}

/// The code a shell shows for `status`.
fn shell_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).expect("exited or was signalled")
}

/// `lockbox create --from-tar -` blocked on a stdin that never ends, then
/// sent `signal` (no core file: `ulimit -c 0`).
fn signalled(dir: &std::path::Path, signal: Signal) -> std::process::Output {
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -c 0 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_lockbox")])
        .args(["create", "-q", "--from-tar", "-", "-o"])
        .arg(dir.join("stalled.lbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Past its start (the signal thread watching), waiting on stdin.
    std::thread::sleep(Duration::from_millis(400));
    kill_process(Pid::from_child(&child), signal).unwrap();
    let stdin = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(!dir.join("stalled.lbox").exists(), "no archive after a signal");
    out
}

/// Incompressible bytes (a linear congruential sequence).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u32 = 12345;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn every_listed_exit_code_is_reached() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("big"), noise(4 << 20)).unwrap();
    let archive = dir.join("a.lbox");
    assert!(create_cmd(&archive, dir, "big", &["-q"]).output().unwrap().status.success());
    let a = archive.to_str().unwrap();
    for code in listed_codes() {
        let out = match code {
            0 => lockbox().args(["list", a]).output().unwrap(),
            1 => lockbox().args(["rm", a, "not-stored"]).output().unwrap(),
            2 => lockbox().args(["list", "--no-such-flag", a]).output().unwrap(),
            3 => lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["list", a]).output().unwrap(),
            // The archive's reader is gone before lockbox writes to it.
            141 => lockbox_on_a_closed_pipe(dir).wait_with_output().unwrap(),
            129 => signalled(dir, Signal::HUP),
            130 => signalled(dir, Signal::INT),
            131 => signalled(dir, Signal::QUIT),
            143 => signalled(dir, Signal::TERM),
            other => panic!("exit code {other} is listed, and no test here reaches it"),
        };
        assert_eq!(
            shell_code(out.status),
            code,
            "{:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `lockbox create -o - big` whose stdout is a pipe closed at once.
fn lockbox_on_a_closed_pipe(dir: &std::path::Path) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .args(["create", "-q", "--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1", "-o", "-", "-C"])
        .arg(dir)
        .arg("big")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child
}
