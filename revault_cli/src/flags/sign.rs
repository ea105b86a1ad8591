//! Signing flags: `--sign KEY` for the commands that write a session, and
//! the trusted signers (`--signer`, `--signers FILE`) that writers and
//! readers take.

use std::path::PathBuf;

use clap::Args;

/// `--sign KEY`, for `create`.
#[derive(Debug, Args)]
pub struct SignKeyArgs {
    /// Sign the session with the signing key in KEY (from `lockbox keygen
    /// --sign`; see --sign-passphrase-file for a protected one); repeatable
    /// for co-signers, up to 12. Readers check it with --signer.
    #[arg(long = "sign", value_name = "KEY")]
    pub keys: Vec<PathBuf>,
    /// The passphrase of the --sign keys is the first line of FILE (else
    /// $LOCKBOX_SIGN_PASSPHRASE, else a prompt on the terminal): for
    /// signing from cron.
    #[arg(long, value_name = "FILE", requires = "keys")]
    pub sign_passphrase_file: Option<PathBuf>,
}

/// `--sign KEY` and the chain rule's flags, for the commands that append
/// to an archive or rewrite it (`key add`, when its keys need larger slots).
#[derive(Debug, Args)]
pub struct SignArgs {
    #[command(flatten)]
    pub key: SignKeyArgs,
    /// With --sign: also accept earlier sessions signed by this key (a
    /// fingerprint `lbsig1…` or a `.pub` file); repeatable. Without it,
    /// every earlier session must be signed by a --sign key.
    #[arg(long = "signer", value_name = "FPR|FILE.pub", requires = "keys")]
    pub signers: Vec<String>,
    /// With --sign: also accept earlier sessions signed by a signer listed
    /// in FILE (as readers' --signers reads it); repeatable.
    #[arg(long = "signers", value_name = "FILE", requires = "keys")]
    pub signers_files: Vec<PathBuf>,
    /// With --sign: sign even though earlier sessions are unsigned or signed
    /// by other keys, vouching for them (recorded in the signature).
    #[arg(long, requires = "keys")]
    pub adopt_unsigned: bool,
}
