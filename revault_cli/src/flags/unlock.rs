//! How a command gets at an archive's key: the password source, the
//! identities and key file that open an archive, the keys a new one is
//! locked with, and `-q` (which only commands with a progress bar or a
//! closing line take).

use std::path::PathBuf;

use clap::Args;
use revault_lockbox_api::limits::DEFAULT_KDF_BUDGET;

use super::Given;

/// Where the password comes from (after `--password-file`,
/// `$LOCKBOX_PASSWORD`, then a prompt on a terminal).
#[derive(Debug, Args)]
pub struct PasswordArgs {
    /// Read the password from the first line of FILE (a trailing newline is
    /// not part of it).
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
}

impl PasswordArgs {
    pub(super) fn inherit(&mut self, before: &PasswordArgs, given: &Given<'_>) {
        given.take("password_file", &mut self.password_file, &before.password_file);
    }
}

/// What opens an existing archive: a key file, identities, else the
/// password.
#[derive(Debug, Args)]
pub struct UnlockArgs {
    #[command(flatten)]
    pub password: PasswordArgs,
    /// Open the archive with the age or SSH identities in FILE (repeatable)
    /// instead of a password: `AGE-SECRET-KEY-1…`, `AGE-SECRET-KEY-PQ-1…`,
    /// an age plugin's `AGE-PLUGIN-NAME-1…` (runs `age-plugin-NAME` from
    /// PATH), OpenSSH private keys; a passphrase-protected file asks for
    /// its passphrase on the terminal, and so does a plugin for a PIN.
    #[arg(short = 'i', long = "identity", value_name = "FILE")]
    pub identities: Vec<PathBuf>,
    /// Open the archive with the key file FILE (from `lockbox keygen
    /// --symmetric`; no password KDF).
    #[arg(long = "key-file", value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Let opening with a password spend up to N MiB × passes of Argon2id
    /// on the password slots, tried cheapest first [default: 1024]. The
    /// slot table is not authenticated before a slot opens, so whoever can
    /// change the file picks those costs; raise it only for an archive
    /// whose own slot costs more (`lockbox key list` shows the costs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    pub kdf_budget: Option<u64>,
}

impl UnlockArgs {
    pub(super) fn inherit(&mut self, before: &UnlockArgs, given: &Given<'_>) {
        self.password.inherit(&before.password, given);
        given.take("identities", &mut self.identities, &before.identities);
        given.take("key_file", &mut self.key_file, &before.key_file);
        given.take("kdf_budget", &mut self.kdf_budget, &before.kdf_budget);
    }

    /// The Argon2id work an open may spend, in KiB × passes.
    pub fn kdf_budget(&self) -> u64 {
        self.kdf_budget.map_or(DEFAULT_KDF_BUDGET, |mib| mib << 10)
    }
}

/// What a new archive is locked with, besides recipients: a key file, else
/// the password.
#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(flatten)]
    pub password: PasswordArgs,
    /// Lock the archive to the key file FILE (from `lockbox keygen
    /// --symmetric`; no password KDF) instead of a password.
    #[arg(long = "key-file", value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl LockArgs {
    pub(super) fn inherit(&mut self, before: &UnlockArgs, given: &Given<'_>) {
        self.password.inherit(&before.password, given);
        given.take("key_file", &mut self.key_file, &before.key_file);
    }
}

/// Public-key recipients, for `create` and `key add`.
#[derive(Debug, Args)]
pub struct RecipientArgs {
    /// A slot for this age recipient (`age1…`, `age1pq1…`, an age plugin's
    /// `age1NAME1…`, wrapped by `age-plugin-NAME` from PATH) or SSH public
    /// key (`ssh-ed25519 …`, `ssh-rsa …`); repeatable. With `create`,
    /// instead of a password, unless --password-file is given too (a
    /// password slot beside them); reading takes `-i IDENTITY_FILE`.
    #[arg(short = 'r', long = "recipient", value_name = "RECIPIENT")]
    pub recipients: Vec<String>,
    /// A slot for every recipient in FILE (one a line, `#` comments);
    /// repeatable.
    #[arg(short = 'R', long = "recipients-file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Allow post-quantum and classical-only recipients in one archive (it
    /// is then only as strong as its classical recipients).
    #[arg(long)]
    pub allow_mixed_recipients: bool,
    /// Name the key slots this command writes TEXT, shown by `key list`
    /// (kept in the clear, as the slot table is; without it a slot is known
    /// only by its kind). Once: every slot; repeated: one per key, in order
    /// (a password or key file first, then each recipient of -r, then of
    /// -R files, line by line), e.g. `-R team.txt --key-label alice
    /// --key-label bob`. UTF-8 without control characters, at most 255
    /// bytes.
    #[arg(long, value_name = "TEXT", value_parser = key_label_parser)]
    pub key_label: Vec<String>,
}

fn key_label_parser(text: &str) -> Result<String, String> {
    revault_lockbox_api::slots::check_slot_label(text).map(|()| text.to_owned()).map_err(str::to_owned)
}

/// `-q`, for the commands that draw a progress bar or print a closing line.
#[derive(Debug, Args)]
pub struct QuietArgs {
    /// Show no progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

impl QuietArgs {
    pub(super) fn inherit(&mut self, before: &QuietArgs, given: &Given<'_>) {
        given.take("quiet", &mut self.quiet, &before.quiet);
    }
}
