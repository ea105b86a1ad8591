//! The flags of `mount` and `umount`.

use std::path::PathBuf;

use clap::Args;

use super::{ReadArgs, ThreadsArgs};

#[derive(Debug, Args)]
pub struct MountArgs {
    /// The archive: a file or s3://BUCKET/KEY.
    pub archive: PathBuf,
    /// An existing directory to mount it on.
    pub mountpoint: PathBuf,
    /// Show every entry as owned by this user id instead of the stored one.
    #[arg(long, value_name = "UID")]
    pub uid: Option<u32>,
    /// Show every entry as owned by this group id instead of the stored one.
    #[arg(long, value_name = "GID")]
    pub gid: Option<u32>,
    /// Show every state side by side: a directory @1 (the create) to @N at
    /// the top, numbered as `lockbox log` numbers them, each the archive as
    /// it was right after that state.
    #[arg(long, conflicts_with_all = ["session", "at"])]
    pub all_sessions: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub threads: ThreadsArgs,
}

#[derive(Debug, Args)]
pub struct UmountArgs {
    /// Where an archive is mounted (by `lockbox mount`).
    pub mountpoint: PathBuf,
}
