//! Helpers the CLI test files share: running the real binary and reading
//! what it did.

use std::process::Output;

use assert_cmd::Command;

/// The password `lockbox()` sets in the environment.
pub const PASSWORD: &str = "correct horse battery staple";
/// The cheapest Argon2id cost: stored in the archive, so opening is cheap too.
pub const CHEAP: [&str; 6] = ["--kdf-memory", "1", "--kdf-passes", "1", "--kdf-lanes", "1"];

/// The `lockbox` binary with `LOCKBOX_PASSWORD` set.
pub fn lockbox() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env("LOCKBOX_PASSWORD", PASSWORD);
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
