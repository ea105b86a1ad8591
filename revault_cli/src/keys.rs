//! Keys on the command line: the recipients of `-r/-R`, the identities of
//! `-i`, key files, and the password, turned into what locks a new archive
//! or opens an existing one.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{parse_recipients, read_recipients_file, Identity, KeyFile, Recipient};
use revault_lockbox_api::{Error, KeySet, Password, Quoted, Unlock};

use crate::exit::UsageError;
use crate::flags::{LockArgs, RecipientArgs, UnlockArgs};
use crate::output;
use crate::password::{self, Purpose};

/// What a new archive is locked with: the recipients given, else a
/// password (asked twice on a terminal).
pub fn lock(lock: &LockArgs, recipient_args: &RecipientArgs) -> Result<KeySet> {
    let keys = recipients(recipient_args)?;
    if let Some(path) = &lock.key_file {
        return Ok(keys.key_file(&key_file(path)?));
    }
    if !keys.has_keys() {
        let password = password::get(lock.password.password_file.as_deref(), Purpose::Create)?;
        return Ok(KeySet::new().password(&password));
    }
    Ok(keys)
}

/// The recipients of `-r` arguments and `-R` files, as a key set; a bad one
/// is a usage error naming where it is.
pub fn recipients(a: &RecipientArgs) -> Result<KeySet> {
    let (texts, files) = (&a.recipients, &a.files);
    let mut all: Vec<Recipient> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let parsed = parse_recipients(text, &format!("-r argument {}", i + 1))
            .map_err(|e| UsageError(e.to_string()))?;
        all.extend(parsed);
    }
    for file in files {
        all.extend(read_recipients_file(file).map_err(|e| UsageError(e.to_string()))?);
    }
    if !files.is_empty() && all.is_empty() {
        return Err(UsageError("the recipients files name no recipient".into()).into());
    }
    Ok(KeySet::new().recipients(all).allow_mixed_recipients(a.allow_mixed_recipients))
}

pub fn key_file(path: &Path) -> Result<KeyFile> {
    warn_if_readable_by_others(path);
    KeyFile::read(path).with_context(|| format!("reading key file {}", Quoted::path(path)))
}

/// Like ssh: a secret key file that others may read gets a warning.
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(md) = std::fs::metadata(path) {
        let mode = md.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            output::warn(format_args!(
                "{} is readable by others (mode {mode:04o}); keep secret keys at 0600",
                Quoted::path(path)
            ));
        }
    }
}

/// Runs `f` with the key that opens an existing archive: the key file, the
/// identities of `-i`, else the password.
pub fn with_key<T>(
    unlock: &UnlockArgs,
    f: impl FnOnce(Unlock<'_>) -> revault_lockbox_api::Result<T>,
) -> Result<T> {
    if let Some(path) = &unlock.key_file {
        let key = key_file(path)?;
        Ok(f(Unlock::KeyFile(&key))?)
    } else if unlock.identities.is_empty() {
        let password = password::get(unlock.password.password_file.as_deref(), Purpose::Open)?;
        Ok(f(Unlock::Password(&password))?)
    } else {
        let ids = identities(&unlock.identities)?;
        Ok(f(Unlock::Identities(&ids))?)
    }
}

/// The identities in `files`; a passphrase-protected file asks on the
/// terminal.
fn identities(files: &[PathBuf]) -> Result<Vec<Identity>> {
    let mut all = Vec::new();
    for file in files {
        warn_if_readable_by_others(file);
        let mut ask = |prompt: &str| -> Option<Password> {
            if !std::io::stdin().is_terminal() {
                return None;
            }
            password::ask(prompt).ok()
        };
        all.extend(Identity::read_file(file, &mut ask).map_err(|e| identity_error(file, e))?);
    }
    Ok(all)
}

/// A malformed identity file is the caller's input, like a bad recipient:
/// a usage error (exit 2); a wrong passphrase is an authentication failure
/// (exit 3); a file that cannot be read, an I/O error.
fn identity_error(file: &Path, e: KeyError) -> anyhow::Error {
    let what = format!("reading identity file {}", Quoted::path(file));
    match e {
        KeyError::Io { .. } => anyhow::Error::new(e).context(what),
        KeyError::WrongPassphrase => anyhow::Error::new(Error::Key(e)).context(what),
        e => UsageError(format!("{what}: {e}")).into(),
    }
}
