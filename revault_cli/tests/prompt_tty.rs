//! The password prompt on a real terminal (a pseudo-terminal made the
//! controlling terminal of `lockbox` by `setsid -c`): echo is off while it
//! asks, and back on however the prompt ends, a signal included; the
//! prompt comes on the terminal also when stdin is a pipe carrying data.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcgetattr, InputModes, LocalModes};

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

/// A command run by `sh -c` on a new terminal (its controlling terminal,
/// made so by `setsid -c`; the shell's pipes give `lockbox` a stdin of its
/// own): the child, the terminal, its master end (to type into) and what
/// the terminal has shown so far.
pub struct OnTerminal {
    child: std::process::Child,
    slave: File,
    master: File,
    /// The terminal's device (`/dev/pts/N`).
    device: std::path::PathBuf,
    said: mpsc::Receiver<Vec<u8>>,
    shown: Vec<u8>,
}

impl OnTerminal {
    /// `None` (skipped, see `skip`) where no pseudo-terminal can be opened.
    /// `script` runs in `dir` with `$LOCKBOX` the binary; stdout is kept.
    pub fn start(dir: &Path, script: &str) -> Option<OnTerminal> {
        OnTerminal::launch(dir, script, false)
    }

    /// As [`OnTerminal::start`], with the terminal's output stopped (as
    /// Ctrl-S stops it) before the command starts: its first write to the
    /// terminal blocks until [`OnTerminal::resume_output`].
    pub fn start_with_output_stopped(dir: &Path, script: &str) -> Option<OnTerminal> {
        OnTerminal::launch(dir, script, true)
    }

    fn launch(dir: &Path, script: &str, stopped: bool) -> Option<OnTerminal> {
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
        let device = std::path::PathBuf::from(name.to_str().unwrap());
        let slave = File::options().read(true).write(true).open(&device).unwrap();
        assert!(echo_on(&slave), "a new terminal echoes");
        let mut master = File::from(master);
        if stopped {
            assert!(tcgetattr(&slave).unwrap().input_modes.contains(InputModes::IXON), "flow control is on");
            master.write_all(b"\x13").unwrap();
        }
        // What the terminal shows, read off the master as it comes.
        let (said_tx, said) = mpsc::channel();
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
            .args(["-c", "sh", "-c", script])
            .current_dir(dir)
            .env("LOCKBOX", env!("CARGO_BIN_EXE_lockbox"))
            .env_remove("LOCKBOX_PASSWORD")
            .env_remove("LOCKBOX_NEW_PASSWORD")
            .stdin(slave.try_clone().unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Some(OnTerminal { child, slave, master, device, said, shown: Vec::new() })
    }

    /// Waits until the terminal has shown `text` (since the last wait),
    /// then for echo to be off when it is a prompt.
    pub fn wait_for(&mut self, text: &str) {
        self.wait_until_shown(text);
        if text.ends_with(": ") {
            wait_for("echo off", || !echo_on(&self.slave));
        }
    }

    /// Waits until the terminal has shown `text` (since the last wait).
    fn wait_until_shown(&mut self, text: &str) {
        let (said, shown) = (&self.said, &mut self.shown);
        wait_for(text, || {
            shown.extend(said.try_iter().flatten());
            shown.windows(text.len()).any(|w| w == text.as_bytes())
        });
        let at = shown.windows(text.len()).position(|w| w == text.as_bytes()).unwrap();
        shown.drain(..at + text.len());
    }

    /// What the terminal showed since the last wait, after `pause`.
    pub fn shown_within(&mut self, pause: Duration) -> String {
        std::thread::sleep(pause);
        self.shown.extend(self.said.try_iter().flatten());
        String::from_utf8_lossy(&std::mem::take(&mut self.shown)).into_owned()
    }

    pub fn type_line(&mut self, line: &str) {
        self.master.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    /// Restarts the terminal's output, as Ctrl-Q does.
    pub fn resume_output(&mut self) {
        self.master.write_all(b"\x11").unwrap();
    }

    /// Whether `lockbox` (past the shell's `exec`) sits in a write(2) to the
    /// terminal: its main thread's system call and first argument, from
    /// `/proc/PID/syscall`, and where that descriptor leads. (A write to
    /// another file, stderr on /dev/null say, caught while the process waits
    /// for a core, is not the prompt: a password typed then came before the
    /// switch to no-echo, which discards it, and the test waited for ever.)
    fn lockbox_is_writing(&self, write: u64) -> bool {
        let proc = Path::new("/proc").join(self.child.id().to_string());
        let comm = std::fs::read_to_string(proc.join("comm")).unwrap_or_default();
        let call = std::fs::read_to_string(proc.join("syscall")).unwrap_or_default();
        let mut fields = call.split(' ');
        let number = fields.next().and_then(|n| n.parse::<u64>().ok());
        let fd = fields.next().and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        let to = fd.and_then(|fd| std::fs::read_link(proc.join("fd").join(fd.to_string())).ok());
        let to_terminal = to.is_some_and(|to| to == self.device || to == Path::new("/dev/tty"));
        comm.trim_end() == "lockbox" && number == Some(write) && to_terminal
    }

    /// The exit code and stdout, once the command ends; fails (killing
    /// it) when it still runs after 20 s.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(20) {
                let _ = self.child.kill();
                panic!(
                    "still running after 20 s; the terminal showed {:?}",
                    self.shown_within(Duration::ZERO)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = self.child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A fresh archive `a.lbox` of one file `note`, with password `pw`.
fn archive() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note"), b"x").unwrap();
    let made = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", "pw")
        .arg("create")
        .args(CHEAP)
        .args(["-o", "a.lbox", "note"])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    work
}

/// `lockbox list a.lbox` at its prompt, echo off.
struct AtPrompt {
    child: std::process::Child,
    slave: File,
    master: File,
    said: mpsc::Receiver<Vec<u8>>,
    _work: tempfile::TempDir,
}

fn at_prompt() -> Option<AtPrompt> {
    let work = archive();
    let mut on = OnTerminal::start(work.path(), "exec \"$LOCKBOX\" list a.lbox")?;
    on.wait_for("Password for a.lbox: ");
    let OnTerminal { child, slave, master, said, .. } = on;
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

/// `write`'s system call number, where the test knows it.
const WRITE_SYSCALL: Option<u64> = if cfg!(target_arch = "x86_64") {
    Some(1)
} else if cfg!(target_arch = "aarch64") {
    Some(64)
} else {
    None
};

/// A password sent the moment the prompt appears (as `expect` sends it)
/// is taken and not echoed. Made exact with flow control: the terminal's
/// output is stopped before lockbox starts, so the prompt's write blocks;
/// with lockbox sitting in that write, the password is typed, then output
/// resumes. Echo must already be off then: turning it off discards what
/// was typed before, so a prompt written before it lost (and echoed) a
/// password sent as soon as it was seen.
#[test]
fn a_password_sent_the_moment_the_prompt_appears_is_taken() {
    let Some(write) = WRITE_SYSCALL else {
        return skip(Need::Tty, "this test knows write(2)'s number only on x86_64 and aarch64");
    };
    let work = archive();
    let script = "exec \"$LOCKBOX\" list a.lbox";
    let Some(mut on) = OnTerminal::start_with_output_stopped(work.path(), script) else { return };
    wait_for("lockbox to write its prompt", || on.lockbox_is_writing(write));
    on.type_line("pw");
    on.resume_output();
    // (Echo may be back on already: the password was there to read.)
    on.wait_until_shown("Password for a.lbox: ");
    let shown = on.shown_within(Duration::from_millis(200));
    assert!(!shown.contains("pw"), "the password was echoed: {shown:?}");
    assert_eq!(on.finish(), (Some(0), "note\n".to_owned()));
}

/// README's `cat a.lbox | lockbox list -`: stdin carries the archive, the
/// password comes from the terminal.
#[test]
fn the_password_of_an_archive_on_stdin_is_asked_on_the_terminal() {
    let work = archive();
    let Some(mut on) = OnTerminal::start(work.path(), "cat a.lbox | \"$LOCKBOX\" list -") else { return };
    on.wait_for("Password for archive on stdin: ");
    on.type_line("pw");
    assert_eq!(on.finish(), (Some(0), "note\n".to_owned()));
}

/// `find … | lockbox create -T - …`: a new password asked twice on the
/// terminal, again after a mismatch; the archive opens with it.
#[test]
fn a_mismatched_repeat_is_asked_again_with_the_list_on_stdin() {
    let work = archive();
    let script =
        "printf 'note\\n' | \"$LOCKBOX\" create --kdf-memory 1 --kdf-passes 1 --kdf-lanes 1 -T - -o b.lbox";
    let Some(mut on) = OnTerminal::start(work.path(), script) else { return };
    on.wait_for("Password for new archive b.lbox: ");
    on.type_line("first");
    on.wait_for("Repeat password for b.lbox: ");
    on.type_line("second");
    on.wait_for("the passwords do not match; try again");
    on.wait_for("Password for new archive b.lbox: ");
    on.type_line("pw2");
    on.wait_for("Repeat password for b.lbox: ");
    on.type_line("pw2");
    assert_eq!(on.finish().0, Some(0));
    let listed = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", "pw2")
        .args(["list", "b.lbox"])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "note\n");
}

/// `tar -c … | lockbox create --from-tar - …` with three mismatched
/// repeats: a usage error, and no archive left behind.
#[test]
fn three_mismatches_with_a_tar_stream_on_stdin_leave_nothing() {
    let work = archive();
    let script = "tar -cf - note | \"$LOCKBOX\" create --from-tar - -o c.lbox";
    let Some(mut on) = OnTerminal::start(work.path(), script) else { return };
    for round in 0..3 {
        on.wait_for("Password for new archive c.lbox: ");
        on.type_line(&format!("one{round}"));
        on.wait_for("Repeat password for c.lbox: ");
        on.type_line(&format!("two{round}"));
    }
    assert_eq!(on.finish().0, Some(2));
    let mut names: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["a.lbox", "note"], "nothing left behind");
}

/// `add --sign KEY` with a passphrase-protected signing key: the
/// passphrase is asked on the terminal (echo off), the change is signed;
/// a wrong one is exit 3 and writes nothing; without a terminal, a usage
/// error that says so.
#[test]
fn a_protected_signing_key_asks_its_passphrase_on_the_terminal() {
    let work = archive();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lockbox"))
            .env("LOCKBOX_PASSWORD", "pw")
            .args(args)
            .current_dir(work.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    std::fs::write(work.path().join("pass"), "sesame\n").unwrap();
    assert!(run(&["keygen", "--sign", "--passphrase-file", "pass", "-o", "me.key"]).status.success());
    let before = std::fs::read(work.path().join("a.lbox")).unwrap();
    let no_terminal = run(&["add", "--sign", "me.key", "a.lbox", "note"]);
    assert_eq!(no_terminal.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_terminal.stderr).contains("passphrase-protected"));

    let script = "LOCKBOX_PASSWORD=pw exec \"$LOCKBOX\" add --sign me.key --adopt-unsigned a.lbox note";
    let Some(mut on) = OnTerminal::start(work.path(), script) else { return };
    on.wait_for("Passphrase for the signing key: ");
    on.type_line("wrong");
    assert_eq!(on.finish().0, Some(3));
    assert_eq!(std::fs::read(work.path().join("a.lbox")).unwrap(), before, "nothing written");

    let Some(mut on) = OnTerminal::start(work.path(), script) else { return };
    on.wait_for("Passphrase for the signing key: ");
    on.type_line("sesame");
    assert_eq!(on.finish().0, Some(0));
    let verified = run(&["verify", "--signer", "me.key.pub", "a.lbox"]);
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
}

/// An age plugin's request for a secret (the test plugin's PIN, as a
/// hardware key asks) is asked on the terminal, echo off, named by the
/// plugin, also when stdin is not the terminal; the right PIN opens the
/// archive.
#[test]
fn an_age_plugin_asks_its_pin_on_the_terminal() {
    let bin = Path::new(env!("CARGO_BIN_EXE_lockbox")).parent().unwrap().to_owned();
    if !bin.join("age-plugin-lockboxtest").is_file() {
        return skip(Need::Tools, "age-plugin-lockboxtest is not built (`cargo test --workspace` builds it)");
    }
    let work = tempfile::tempdir().unwrap();
    let generated = Command::new(bin.join("age-plugin-lockboxtest")).arg("--generate").output().unwrap();
    let text = String::from_utf8(generated.stdout).unwrap();
    std::fs::write(work.path().join("id.txt"), &text).unwrap();
    let recipient = text.lines().find_map(|l| l.strip_prefix("# recipient: ")).unwrap();
    std::fs::write(work.path().join("note"), b"pinned\n").unwrap();
    let made = Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .args(["create", "-q", "-o", "a.lbox", "-r", recipient, "note"])
        .current_dir(work.path())
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let script = format!(
        "PATH='{}':\"$PATH\" LOCKBOXTEST_PIN=2468 exec \"$LOCKBOX\" -i id.txt cat a.lbox note < /dev/null",
        bin.display()
    );
    let Some(mut on) = OnTerminal::start(work.path(), &script) else { return };
    on.wait_for("age-plugin-lockboxtest: Enter the lockboxtest PIN: ");
    on.type_line("2468");
    assert_eq!(on.finish(), (Some(0), "pinned\n".to_owned()));
}
