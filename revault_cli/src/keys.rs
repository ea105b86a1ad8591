//! Public keys on the command line: recipients for `create -r/-R`,
//! identities for `-i`, and `keygen`.

use std::fs::OpenOptions;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use revault_lockbox_api::{parse_recipients, read_recipients_file, Identity, KeySet, Password};

use crate::password::{self, Purpose};
use crate::{CreateArgs, GlobalArgs, UsageError};

/// What a new archive is locked with: the recipients given, else a
/// password (asked twice on a terminal).
pub fn lock(g: &GlobalArgs, a: &CreateArgs) -> Result<KeySet> {
    let mut recipients = Vec::new();
    for (i, text) in a.recipients.iter().enumerate() {
        let parsed = parse_recipients(text, &format!("-r argument {}", i + 1))
            .map_err(|e| UsageError(e.to_string()))?;
        recipients.extend(parsed);
    }
    for file in &a.recipients_files {
        recipients.extend(read_recipients_file(file).map_err(|e| UsageError(e.to_string()))?);
    }
    if !a.recipients_files.is_empty() && recipients.is_empty() {
        return Err(UsageError("the recipients files name no recipient".into()).into());
    }
    if recipients.is_empty() {
        let password = password::get(g.password_file.as_deref(), Purpose::Create)?;
        return Ok(KeySet::new().password(&password));
    }
    let keys = KeySet::new().recipients(recipients).allow_mixed_recipients(a.allow_mixed_recipients);
    Ok(keys)
}

/// The identities in `files`; a passphrase-protected file asks on the
/// terminal.
pub fn identities(files: &[PathBuf]) -> Result<Vec<Identity>> {
    let mut all = Vec::new();
    for file in files {
        let mut ask = |prompt: &str| -> Option<Password> {
            if !std::io::stdin().is_terminal() {
                return None;
            }
            rpassword::prompt_password(format!("{prompt}: ")).ok().map(Password::from)
        };
        all.extend(
            Identity::read_file(file, &mut ask)
                .with_context(|| format!("reading identity file {}", file.display()))?,
        );
    }
    Ok(all)
}

/// Writes a new identity to `output` (mode 0600, never over an existing
/// file) or stdout, and prints its recipient.
pub fn keygen(output: Option<&Path>, pq: bool) -> Result<ExitCode> {
    let (identity, recipient) = revault_lockbox_api::keygen(pq).context("generating an identity")?;
    match output {
        Some(path) => {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("creating {}", path.display()))?;
            file.write_all(identity.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", path.display()))?;
            println!("{recipient}");
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(identity.as_bytes()).and_then(|()| out.flush()).context("writing to stdout")?;
            eprintln!("Public key: {recipient}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
