//! The flags of the commands that manage an archive's keys (`key list`,
//! `key add`, `key remove`, `passwd`) and make new ones (`keygen`).

use std::path::PathBuf;

use clap::Args;

use super::{JsonArgs, ObjectStoreArgs, PasswordArgs, RecipientArgs, SignArgs, UnlockArgs};

#[derive(Debug, Args)]
pub struct KeyListArgs {
    #[command(flatten)]
    pub format: JsonArgs,
    /// The archive: a file, `-` (read from stdin) or s3://BUCKET/KEY.
    pub archive: PathBuf,
    #[command(flatten)]
    pub s3: ObjectStoreArgs,
}

#[derive(Debug, Args)]
pub struct KeyAddArgs {
    /// The archive (a local file: key commands rewrite it in place).
    pub archive: PathBuf,
    /// Add a password slot; the new password comes from --new-password-file,
    /// else LOCKBOX_NEW_PASSWORD, else a prompt (asked twice). (A key-file
    /// slot: --new-key-file.)
    #[arg(long)]
    pub password: bool,
    /// Read the new password from the first line of FILE.
    #[arg(long, value_name = "FILE")]
    pub new_password_file: Option<PathBuf>,
    /// Add a slot for the key file FILE.
    #[arg(long, value_name = "FILE")]
    pub new_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub recipients: RecipientArgs,
    #[command(flatten)]
    pub unlock: UnlockArgs,
    // Signs the archive when a key too large for its slots makes key add
    // rewrite it (slots written in place sign nothing: signatures leave the
    // slot table out, and every one still holds).
    #[command(flatten)]
    pub sign: SignArgs,
}

#[derive(Debug, Args)]
pub struct KeyRemoveArgs {
    /// The archive (a local file: key commands rewrite it in place).
    pub archive: PathBuf,
    /// The slot's position, from `lockbox key list`.
    pub slot: usize,
    #[command(flatten)]
    pub unlock: UnlockArgs,
}

#[derive(Debug, Args)]
pub struct PasswdArgs {
    /// The archive (a local file: passwd rewrites it in place).
    pub archive: PathBuf,
    /// Read the new password from the first line of FILE (else
    /// LOCKBOX_NEW_PASSWORD, else a prompt, asked twice).
    #[arg(long, value_name = "FILE")]
    pub new_password_file: Option<PathBuf>,
    #[command(flatten)]
    pub password: PasswordArgs,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Write the identity to FILE (mode 0600; an existing file is refused)
    /// instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A post-quantum hybrid identity (ML-KEM-768 + X25519, age's
    /// `mlkem768x25519`).
    #[arg(long, conflicts_with = "symmetric")]
    pub pq: bool,
    /// A key file (a random 256-bit key for `--key-file`) instead of an
    /// age identity.
    #[arg(long)]
    pub symmetric: bool,
    /// A signing key (Ed25519 + ML-DSA-65, for `--sign`) instead of an age
    /// identity: needs `-o FILE`, writes the public key to `FILE.pub` and
    /// prints the key's fingerprint (`lbsig1…`).
    #[arg(long, conflicts_with_all = ["pq", "symmetric"])]
    pub sign: bool,
    /// Print the public side of FILE and write nothing, as `age-keygen -y`:
    /// an age identity file's recipients (one a line), a signing key's or
    /// `.pub` file's fingerprint (`lbsig1…`).
    #[arg(short = 'y', value_name = "FILE", conflicts_with_all = ["output", "pq", "symmetric", "passphrase"])]
    pub fingerprint_of: Option<PathBuf>,
    /// With `--sign -o`: protect the key with a passphrase (Argon2id at the
    /// slot defaults), asked twice on the terminal or read from
    /// `--passphrase-file`.
    #[arg(long, requires = "sign")]
    pub passphrase: bool,
    /// With `--sign` or `-y`: the signing key's passphrase is the first line
    /// of FILE (`--sign -o` then protects the key with it).
    #[arg(long, value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
}
