//! Cases a machine may be unable to run: each says `skipped: <why>` and
//! passes, unless the `LOCKBOX_REQUIRE_<WHAT>` switch of what it lacks is
//! set, which says this machine must have it and turns the skip into a
//! failure (`.ci/run` sets them all). One file for both crates' tests: the
//! CLI's include it by path.
#![allow(dead_code)]

use std::fmt::Display;

/// What a case needs from the machine.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// Root: chown, mount, become another user (`LOCKBOX_REQUIRE_ROOT`).
    Root,
    /// The tools `scripts/test.sh` installs: gpg, GNU tar, age,
    /// ssh-keygen, setfattr, setfacl, zsh, fish, tzdata
    /// (`LOCKBOX_REQUIRE_TOOLS`).
    Tools,
    /// A temporary directory whose file system takes user and trusted
    /// extended attributes and ACLs (`LOCKBOX_REQUIRE_XATTRS`).
    Xattrs,
    /// Mount points: mounting a tmpfs (as root), a writable `/dev/shm` on
    /// a file system of its own (`LOCKBOX_REQUIRE_MOUNTS`).
    Mounts,
    /// A pseudo-terminal (`LOCKBOX_REQUIRE_TTY`).
    Tty,
    /// A real S3-compatible server, moto (`LOCKBOX_REQUIRE_S3_SERVER`).
    S3Server,
    /// A real FUSE mount: `/dev/fuse` and root (`LOCKBOX_REQUIRE_FUSE`).
    Fuse,
}

impl Need {
    /// The environment switch that makes this need a must.
    pub fn switch(self) -> &'static str {
        match self {
            Need::Root => "LOCKBOX_REQUIRE_ROOT",
            Need::Tools => "LOCKBOX_REQUIRE_TOOLS",
            Need::Xattrs => "LOCKBOX_REQUIRE_XATTRS",
            Need::Mounts => "LOCKBOX_REQUIRE_MOUNTS",
            Need::Tty => "LOCKBOX_REQUIRE_TTY",
            Need::S3Server => "LOCKBOX_REQUIRE_S3_SERVER",
            Need::Fuse => "LOCKBOX_REQUIRE_FUSE",
        }
    }

    /// Whether the switch is set (to anything but empty or `0`).
    pub fn required(self) -> bool {
        std::env::var_os(self.switch()).is_some_and(|v| !v.is_empty() && v != "0")
    }
}

/// Reports a case that cannot run here: prints `skipped: <why>`, or fails
/// the test when `need`'s switch says this machine must be able to run it.
/// The caller returns right after.
#[track_caller]
pub fn skip(need: Need, why: impl Display) {
    assert!(!need.required(), "{} is set, and {why}", need.switch());
    eprintln!("skipped: {why} (set {}=1 to make this a failure)", need.switch());
}

/// Whether this process runs as root; prints the skip when it does not
/// (see [`skip`]).
#[track_caller]
pub fn have_root() -> bool {
    let root = is_root();
    if !root {
        skip(Need::Root, "this case needs root");
    }
    root
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
