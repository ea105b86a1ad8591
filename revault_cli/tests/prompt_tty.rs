//! The password prompt on a real terminal (a pseudo-terminal made the
//! controlling terminal of `lockbox` by `setsid -c`): echo is off while it
//! asks, and back on however the prompt ends, a signal included.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcgetattr, LocalModes};

use crate::util::{skip, Need, CHEAP};

fn echo_on(tty: &File) -> bool {
    tcgetattr(tty).unwrap().local_modes.contains(LocalModes::ECHO)
}

/// Waits up to 20 s for `condition`.
fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `lockbox list` of a fresh archive, on a new terminal, at its prompt
/// with echo off: the child, the terminal, its master end (to type into)
/// and what the prompt has written so far.
struct AtPrompt {
    child: std::process::Child,
    slave: File,
    master: File,
    said: mpsc::Receiver<Vec<u8>>,
    _work: tempfile::TempDir,
}

/// `None` (skipped, see `skip`) where no pseudo-terminal can be opened.
fn at_prompt() -> Option<AtPrompt> {
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("a.lbox");
    std::fs::write(work.path().join("note"), b"x").unwrap();
    let made = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", "pw")
        .arg("create")
        .args(CHEAP)
        .arg("-o")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("note")
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));

    let master = match openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY) {
        Ok(master) => master,
        Err(e) => {
            skip(Need::Tty, format!("no pseudo-terminal can be opened here ({e})"));
            return None;
        }
    };
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = File::options().read(true).write(true).open(Path::new(name.to_str().unwrap())).unwrap();
    assert!(echo_on(&slave), "a new terminal echoes");

    // What the terminal shows, read off the master as it comes.
    let (said_tx, said) = mpsc::channel();
    let master = File::from(master);
    let mut from_master = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = from_master.read(&mut buf) {
            if n == 0 || said_tx.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    let child = Command::new("setsid")
        .arg("-c")
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .arg("list")
        .arg(&archive)
        .env_remove("LOCKBOX_PASSWORD")
        .stdin(slave.try_clone().unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut shown = Vec::new();
    wait_for("the prompt", || {
        shown.extend(said.try_iter().flatten());
        shown.windows(10).any(|w| w == b"Password: ")
    });
    wait_for("echo off", || !echo_on(&slave));
    Some(AtPrompt { child, slave, master, said, _work: work })
}

#[test]
fn echo_is_off_while_typing_and_back_on_after() {
    let Some(mut at) = at_prompt() else { return };
    at.master.write_all(b"hunter2\n").unwrap();
    let status = at.child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "a wrong password");
    assert!(echo_on(&at.slave), "echo left off after the prompt");
    let shown: Vec<u8> = at.said.try_iter().flatten().collect();
    assert!(!shown.windows(7).any(|w| w == b"hunter2"), "the password was echoed");
}

#[test]
fn echo_is_restored_when_the_prompt_is_interrupted() {
    for signal in ["INT", "TERM", "HUP"] {
        let Some(mut at) = at_prompt() else { return };
        let killed =
            Command::new("kill").arg(format!("-{signal}")).arg(at.child.id().to_string()).status().unwrap();
        assert!(killed.success());
        let status = at.child.wait().unwrap();
        assert!(status.signal().is_some(), "SIG{signal} ends the process as it did: {status:?}");
        assert!(echo_on(&at.slave), "echo left off after SIG{signal} at the prompt");
    }
}
