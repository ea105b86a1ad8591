//! Where the password comes from: a file, the environment, or the terminal.
//!
//! Every source is read straight into a [`Password`]: a locked buffer of
//! [`MAX_PASSWORD_LEN`] bytes that never grows, so no partial copy is left
//! in freed memory, wiped on drop. The environment variables are taken out
//! of the process environment at start-up, before any thread exists, so
//! that nothing started later inherits them, and their values are wiped
//! from the block `/proc/PID/environ` shows. Nothing here prints a password.

use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};

use anyhow::{Context, Result};
use revault_lockbox_api::{Password, Quoted};
use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions, Termios};

use crate::exit::UsageError;

/// The environment variable holding the password.
pub const ENV_VAR: &str = "LOCKBOX_PASSWORD";
/// The environment variable holding a new password (`passwd`, `key add`).
pub const NEW_ENV_VAR: &str = "LOCKBOX_NEW_PASSWORD";
/// The environment variable holding the passphrase of `--sign` keys, for
/// signing where no terminal asks (cron).
pub const SIGN_ENV_VAR: &str = "LOCKBOX_SIGN_PASSPHRASE";
/// Longest password read from a file, a pipe or the terminal, in bytes.
pub const MAX_PASSWORD_LEN: usize = 4096;

/// The passwords taken from the environment by [`take_from_environment`].
struct FromEnvironment {
    password: Option<Password>,
    new_password: Option<Password>,
    sign_passphrase: Option<Password>,
}

static FROM_ENVIRONMENT: OnceLock<FromEnvironment> = OnceLock::new();

/// Moves `LOCKBOX_PASSWORD`, `LOCKBOX_NEW_PASSWORD` and
/// `LOCKBOX_SIGN_PASSPHRASE` out of the process environment into locked
/// memory. Must run first in `main`, before any
/// thread starts: changing the environment is sound only then.
pub fn take_from_environment() {
    let taken = FromEnvironment {
        password: take_var(ENV_VAR),
        new_password: take_var(NEW_ENV_VAR),
        sign_passphrase: take_var(SIGN_ENV_VAR),
    };
    let _ = FROM_ENVIRONMENT.set(taken);
}

fn take_var(name: &str) -> Option<Password> {
    let value = std::env::var_os(name)?;
    std::env::remove_var(name);
    // Best effort: where the kernel refuses, the value stays in /proc/PID/environ.
    let _ = scrub_initial_environment(name);
    // `Password::new` copies into locked memory and wipes this buffer.
    Some(Password::new(value.into_vec()))
}

/// Overwrites the value of `name` with zero bytes in the environment block
/// the kernel gave the process at `exec` (what `/proc/PID/environ` shows
/// other processes of the same user), through `/proc/self/mem`. Run only
/// after the variable was removed from the environment, so that nothing
/// refers to those bytes any more.
fn scrub_initial_environment(name: &str) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let bad = || std::io::Error::other("unexpected /proc/self/stat");
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which may hold spaces and parentheses)
    // start two bytes after its last ')', at field 3; env_start and env_end
    // are fields 50 and 51 (proc(5)).
    let rest = stat.get(stat.rfind(')').ok_or_else(bad)? + 2..).ok_or_else(bad)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).ok_or_else(bad);
    let (start, end) = (field(50)?, field(51)?);
    let len = usize::try_from(end.checked_sub(start).ok_or_else(bad)?).map_err(|_| bad())?;
    let mem = File::options().read(true).write(true).open("/proc/self/mem")?;
    let mut block = zeroize::Zeroizing::new(vec![0u8; len]);
    mem.read_exact_at(&mut block, start)?;
    let prefix = format!("{name}=");
    let mut at = 0;
    for entry in block.split(|&b| b == 0) {
        if let Some(value) = entry.strip_prefix(prefix.as_bytes()) {
            mem.write_all_at(&vec![0u8; value.len()], start + (at + prefix.len()) as u64)?;
        }
        at += entry.len() + 1;
    }
    Ok(())
}

fn from_environment(name: &str) -> Option<Password> {
    let taken = FROM_ENVIRONMENT.get()?;
    match name {
        ENV_VAR => taken.password.clone(),
        SIGN_ENV_VAR => taken.sign_passphrase.clone(),
        _ => taken.new_password.clone(),
    }
}

/// The passphrase of `--sign` keys given without a terminal: `file`'s
/// first line (`--sign-passphrase-file`), else `$LOCKBOX_SIGN_PASSPHRASE`.
pub fn sign_passphrase(file: Option<&Path>) -> Result<Option<Password>> {
    match file {
        Some(file) => read_passphrase(file).map(Some),
        None => Ok(from_environment(SIGN_ENV_VAR)),
    }
}

/// The first line of `file`, a signing key's passphrase; an empty one is
/// refused.
pub fn read_passphrase(file: &Path) -> Result<Password> {
    let reading = || format!("reading passphrase file {}", Quoted::path(file));
    let mut f = File::open(file).with_context(reading)?;
    let passphrase = Password::read_line(&mut f, MAX_PASSWORD_LEN).with_context(reading)?;
    if passphrase.is_empty() {
        return Err(UsageError(format!("{}: refusing an empty passphrase", reading())).into());
    }
    Ok(passphrase)
}

/// What the password is for: a new archive (asked twice, never empty), a
/// new password for an existing one (`passwd`, `key add`: the same), or
/// opening an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Create,
    New,
    Open,
}

/// How often a new password is asked for when its repeat does not match.
pub const TRIES: usize = 3;

/// Gets the password of `archive` (as messages name it): `file` (first
/// line), then `$LOCKBOX_PASSWORD`, then a no-echo prompt on the terminal.
pub fn get(file: Option<&Path>, purpose: Purpose, archive: &str) -> Result<Password> {
    from(file, ENV_VAR, purpose, archive)
}

/// Gets a new password for `archive`: `file`, then `$LOCKBOX_NEW_PASSWORD`,
/// then a prompt asked twice; never empty.
pub fn get_new(file: Option<&Path>, archive: &str) -> Result<Password> {
    from(file, NEW_ENV_VAR, Purpose::New, archive)
}

fn from(file: Option<&Path>, env_var: &str, purpose: Purpose, archive: &str) -> Result<Password> {
    let password = if let Some(path) = file {
        read_file(path)?
    } else if let Some(password) = from_environment(env_var) {
        password
    } else {
        return prompt(purpose, archive, env_var);
    };
    if password.is_empty() && purpose != Purpose::Open {
        return Err(UsageError("refusing an empty password".into()).into());
    }
    Ok(password)
}

/// The first line of the file (or pipe) at `path`.
fn read_file(path: &Path) -> Result<Password> {
    let reading = || format!("reading password file {}", Quoted::path(path));
    let mut file = File::open(path).with_context(reading)?;
    Password::read_line(&mut file, MAX_PASSWORD_LEN).with_context(reading)
}

/// Whether a prompt can be shown: the process has a controlling terminal,
/// whatever its stdin is (as gpg and age: stdin may carry the archive).
pub fn have_terminal() -> bool {
    File::options().read(true).write(true).open("/dev/tty").is_ok()
}

/// Asks on the terminal; a new password twice, again when the two differ
/// or it is empty, up to [`TRIES`] times.
fn prompt(purpose: Purpose, archive: &str, env_var: &str) -> Result<Password> {
    if !have_terminal() {
        return Err(UsageError(format!(
            "no password for {archive}: use --password-file, {env_var}, or run on a terminal"
        ))
        .into());
    }
    let reading = "reading the password from the terminal";
    let (first, repeat) = match purpose {
        Purpose::Open => (format!("Password for {archive}"), String::new()),
        Purpose::Create => {
            (format!("Password for new archive {archive}"), format!("Repeat password for {archive}"))
        }
        Purpose::New => (format!("New password for {archive}"), format!("Repeat new password for {archive}")),
    };
    if purpose == Purpose::Open {
        return ask(&first).context(reading);
    }
    let mut why = "";
    for attempt in 1..=TRIES {
        if attempt > 1 {
            tell(&format!("{why}; try again")).context(reading)?;
        }
        let password = ask(&first).context(reading)?;
        why = if password.is_empty() {
            "an empty password is refused"
        } else if password.ct_eq(&ask(&repeat).context(reading)?) {
            return Ok(password);
        } else {
            "the passwords do not match"
        };
    }
    Err(UsageError(format!("no password for {archive} after {TRIES} tries: {why}")).into())
}

/// One line on the terminal, where the prompts are.
fn tell(line: &str) -> std::io::Result<()> {
    let mut tty = File::options().write(true).open("/dev/tty")?;
    writeln!(tty, "{line}")?;
    tty.flush()
}

/// Asks on the terminal (`/dev/tty`) with echo off: turns echo off, writes
/// `label: `, reads one line into a [`Password`], and restores the
/// terminal's modes, also when a signal (Ctrl-C, `kill`, a hang-up) ends
/// the process meanwhile.
///
/// Echo goes off before the prompt is written, as getpass(3) does: the
/// switch discards what was typed before it (`TCSAFLUSH`), so a line typed,
/// or sent by a script such as `expect`, the moment the prompt appears must
/// come after it, or it is lost (and echoed).
pub fn ask(label: &str) -> std::io::Result<Password> {
    let mut tty = File::options().read(true).write(true).open("/dev/tty")?;
    let saved = tcgetattr(&tty)?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    quiet.local_modes.insert(LocalModes::ECHONL);
    *echo_to_restore() = Some((tty.try_clone()?, saved.clone()));
    let read = tcsetattr(&tty, OptionalActions::Flush, &quiet).map_err(std::io::Error::from).and_then(|()| {
        write!(tty, "{label}: ")?;
        tty.flush()?;
        Password::read_line(&mut tty, MAX_PASSWORD_LEN)
    });
    // Under the lock, so that a signal now restores no stale modes later.
    let mut restore = echo_to_restore();
    restore.take();
    tcsetattr(&tty, OptionalActions::Now, &saved)?;
    drop(restore);
    read
}

/// While a prompt has echo off: the terminal and the modes to put back.
type EchoRestore = Option<(File, Termios)>;

fn echo_to_restore() -> MutexGuard<'static, EchoRestore> {
    static ECHO_TO_RESTORE: Mutex<EchoRestore> = Mutex::new(None);
    // A poisoned lock still holds the modes to put back.
    ECHO_TO_RESTORE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Puts back the modes of a prompt under way, if any: for the signal
/// thread ([`crate::signals`]) before a signal ends the process.
pub fn restore_echo() {
    if let Some((tty, saved)) = echo_to_restore().take() {
        let _ = tcsetattr(&tty, OptionalActions::Now, &saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_variable_is_gone_from_the_environment_of_children() {
        // A name of its own: tests run on threads of one process.
        const NAME: &str = "LOCKBOX_TEST_TAKEN_PASSWORD";
        std::env::set_var(NAME, "hunter2 in the environment");
        let taken = take_var(NAME).expect("the variable was set");
        assert!(taken.ct_eq(&Password::from("hunter2 in the environment")));
        assert!(std::env::var_os(NAME).is_none());
        let child = std::process::Command::new("cat").arg("/proc/self/environ").output().unwrap();
        assert!(child.status.success());
        assert!(!String::from_utf8_lossy(&child.stdout).contains(NAME));
        assert!(take_var(NAME).is_none());
    }
}
