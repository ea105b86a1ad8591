//! `keygen`: a new age identity (or, `--symmetric`, a key file), written to
//! a file of mode 0600 (never over an existing one) or stdout, and its
//! recipient printed; `-y FILE` prints an existing key's public side.
//! `--sign` keys are `keygen_sign`'s.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result};
use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{KeyFile, VerifyingKey};
use revault_lockbox_api::Quoted;

use super::Outcome;
use crate::exit::UsageError;
use crate::flags::KeygenArgs;
use crate::{keys, output};

pub fn run(a: KeygenArgs) -> Result<Outcome> {
    if let (Some(path), false) = (&a.fingerprint_of, a.sign) {
        for line in public_of(path, a.passphrase_file.as_deref())? {
            output::line(&line);
        }
        return Ok(Outcome::Success);
    }
    if a.sign {
        return super::keygen_sign::run(a);
    }
    if a.passphrase_file.is_some() {
        return Err(UsageError("--passphrase-file goes with --sign or -y (a signing key's)".into()).into());
    }
    let (identity, recipient) = if a.symmetric {
        let key = KeyFile::generate().context("generating a key")?;
        (key.to_text(), String::new())
    } else {
        revault_lockbox_api::keys::keygen(a.pq).context("generating an identity")?
    };
    match &a.output {
        Some(path) => {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("creating {}", Quoted::path(path)))?;
            file.write_all(identity.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", Quoted::path(path)))?;
            if !a.symmetric {
                output::line(&recipient);
            }
        }
        None => {
            output::raw(identity.as_bytes())?;
            if !a.symmetric {
                eprintln!("Public key: {recipient}");
            }
        }
    }
    Ok(Outcome::Success)
}

/// `-y FILE`: an age identity file's recipients, as `age-keygen -y` prints
/// them, else a signing key's (or `.pub` file's) fingerprint.
fn public_of(path: &Path, passphrase_file: Option<&Path>) -> Result<Vec<String>> {
    // A `.pub` file first: it is not secret, so not warned about.
    if let Ok(public) = VerifyingKey::read_file(path) {
        return Ok(vec![public.fingerprint().to_string()]);
    }
    let identities = match keys::read_identity_file(path) {
        Ok(identities) => identities,
        Err(e @ (KeyError::Io { .. } | KeyError::WrongPassphrase)) => {
            return Err(keys::identity_error(path, e))
        }
        // Not an identity file: a signing key, then.
        Err(not_identity) => {
            return match super::keygen_sign::fingerprint_of(path, passphrase_file) {
                Ok(fingerprint) => Ok(vec![fingerprint]),
                Err(e) if e.downcast_ref::<UsageError>().is_some() => Err(UsageError(format!(
                    "{}: not an age identity file nor a signing key ({not_identity})",
                    Quoted::path(path)
                ))
                .into()),
                Err(e) => Err(e),
            };
        }
    };
    identities
        .iter()
        .map(|id| match (id.to_recipient(), id.plugin()) {
            (Some(recipient), _) => Ok(recipient.to_string()),
            (None, plugin) => Err(UsageError(format!(
                "{}: the recipient of a plugin identity is known only to its plugin (age-plugin-{})",
                Quoted::path(path),
                plugin.unwrap_or("NAME")
            ))
            .into()),
        })
        .collect()
}
