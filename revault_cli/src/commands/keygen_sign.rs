//! `keygen --sign`: a new signing key (Ed25519 + ML-DSA-65) in `FILE`
//! (mode 0600) and its public key in `FILE.pub`, neither over an existing
//! file, optionally under a passphrase; its fingerprint printed. With `-y
//! FILE`, the fingerprint of an existing key (or `.pub`) printed again.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{SigningKey, VerifyingKey};
use revault_lockbox_api::{KdfParams, Password, Quoted};

use super::Outcome;
use crate::exit::UsageError;
use crate::flags::KeygenArgs;
use crate::output;
use crate::password;
use crate::signing;

pub fn run(a: KeygenArgs) -> Result<Outcome> {
    if let Some(path) = &a.fingerprint_of {
        output::line(&fingerprint_of(path, a.passphrase_file.as_deref())?);
        return Ok(Outcome::Success);
    }
    let Some(path) = &a.output else {
        return Err(UsageError("keygen --sign needs -o FILE (the public key goes to FILE.pub)".into()).into());
    };
    let passphrase = match (&a.passphrase_file, a.passphrase) {
        (Some(file), _) => Some(password::read_passphrase(file)?),
        (None, true) => Some(ask_new_passphrase()?),
        (None, false) => None,
    };
    let key = SigningKey::generate().context("generating a signing key")?;
    let secret = key
        .to_file_text(passphrase.as_ref().map(|p| (p, KdfParams::default())))
        .context("protecting the signing key")?;
    let public_path = pub_path(path);
    write_new(path, 0o600, secret.as_bytes(), None)?;
    write_new(&public_path, 0o644, key.verifying_key().to_file_text().as_bytes(), Some(path))?;
    output::line(&key.fingerprint().to_string());
    Ok(Outcome::Success)
}

/// `FILE.pub` beside `FILE`.
fn pub_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".pub");
    PathBuf::from(name)
}

/// Creates `path` (never over an existing file) with `mode` and `bytes`,
/// synced. On failure nothing of it is left, nor `written_before` (the
/// secret key, when its `.pub` cannot be written).
fn write_new(path: &Path, mode: u32, bytes: &[u8], written_before: Option<&Path>) -> Result<()> {
    let created = OpenOptions::new().write(true).create_new(true).mode(mode).open(path);
    let written = created.and_then(|mut file| {
        let result = file.write_all(bytes).and_then(|()| file.sync_all());
        if result.is_err() {
            let _ = std::fs::remove_file(path);
        }
        result
    });
    written.map_err(|e| {
        if let Some(earlier) = written_before {
            let _ = std::fs::remove_file(earlier);
        }
        let hint = if e.kind() == std::io::ErrorKind::AlreadyExists { " (it already exists)" } else { "" };
        anyhow::Error::new(e).context(format!("creating {}{hint}", Quoted::path(path)))
    })
}

/// The fingerprint of a signing key file or a `.pub` file.
pub fn fingerprint_of(path: &Path, passphrase_file: Option<&Path>) -> Result<String> {
    let reading = || format!("reading signing key {}", Quoted::path(path));
    match VerifyingKey::read_file(path) {
        Ok(public) => return Ok(public.fingerprint().to_string()),
        Err(e @ KeyError::Io { .. }) => return Err(anyhow::Error::new(e).context(reading())),
        Err(_) => {} // not a .pub file: a secret key, then
    }
    let given = passphrase_file.map(password::read_passphrase).transpose()?;
    let how = "give --passphrase-file or run on a terminal";
    Ok(signing::read_signing_key(path, given.as_ref(), how)?.fingerprint().to_string())
}

/// A new passphrase from the terminal, asked twice.
fn ask_new_passphrase() -> Result<Password> {
    if !std::io::stdin().is_terminal() {
        return Err(
            UsageError("--passphrase asks on the terminal: give --passphrase-file instead".into()).into()
        );
    }
    let asking = "reading the passphrase from the terminal";
    let passphrase = password::ask("Passphrase for the signing key").context(asking)?;
    let repeat = password::ask("Repeat passphrase").context(asking)?;
    if !passphrase.ct_eq(&repeat) {
        return Err(UsageError("the passphrases do not match".into()).into());
    }
    if passphrase.is_empty() {
        return Err(UsageError("refusing an empty passphrase".into()).into());
    }
    Ok(passphrase)
}
