//! Helpers the CLI tests share: running the real binary (with the test
//! password, without any, or as an unprivileged user), reading what it
//! did, and the skip rule (`skip`).
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

// The library's tests define the skip rule; both crates follow the same one.
#[path = "../../../revault_lockbox_api/tests/util/skip.rs"]
mod skip;

pub use skip::{have_root, is_root, skip, Need};

/// The password `lockbox()` sets in the environment.
pub const PASSWORD: &str = "correct horse battery staple";
/// The cheapest Argon2id cost: stored in the archive, so opening is cheap too.
pub const CHEAP: [&str; 6] = ["--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1"];
/// `setpriv` arguments that make the command after them run as user and
/// group 65534 (nobody), with no supplementary groups.
pub const NOBODY: [&str; 4] = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];

/// The `lockbox` binary with `LOCKBOX_PASSWORD` set.
pub fn lockbox() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env("LOCKBOX_PASSWORD", PASSWORD);
    cmd
}

/// The `lockbox` binary with no password from the environment (neither
/// `LOCKBOX_PASSWORD` nor `LOCKBOX_NEW_PASSWORD`), as a standard command
/// (`Command::from_std` makes it an `assert_cmd` one).
pub fn lockbox_without_password() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env_remove("LOCKBOX_PASSWORD").env_remove("LOCKBOX_NEW_PASSWORD");
    cmd
}

/// `program` run as user 65534 through `setpriv` (util-linux), with
/// `LOCKBOX_PASSWORD` set: root reads and writes anything, so what an
/// ordinary user may not do needs someone who cannot.
pub fn as_nobody(program: impl AsRef<OsStr>) -> std::process::Command {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(NOBODY).arg(program).env("LOCKBOX_PASSWORD", PASSWORD);
    cmd
}

/// `lockbox create` at the cheap KDF cost: `-o ARCHIVE -C DIR EXTRA... INPUT`.
pub fn create_cmd(archive: &Path, dir: &Path, input: impl AsRef<OsStr>, extra: &[&str]) -> Command {
    let mut cmd = lockbox();
    cmd.arg("create").args(CHEAP).args(extra).arg("-o").arg(archive).arg("-C").arg(dir).arg(input);
    cmd
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("runs lockbox")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `out`, which must be a success (exit 0).
pub fn ok(out: Output) -> Output {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// `len` incompressible bytes (xorshift from `seed`, which must not be 0).
pub fn noise(mut x: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Every path under `dir`, directories included, each directory's
/// contents before it.
pub fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(walk(&p));
        }
        all.push(p);
    }
    all
}
