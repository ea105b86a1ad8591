//! The keys of the signing flags: the signing keys `--sign KEY` names (a
//! passphrase-protected key asks on the terminal) and the trusted signers
//! `--signer` names (a fingerprint `lbsig1…` or a `.pub` file) and
//! `--signers FILE` lists.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{read_signers_file, Fingerprint, SigningKey, VerifyingKey};
use revault_lockbox_api::{Error, Password, Quoted, UpdateOptions};

use crate::exit::UsageError;
use crate::flags::{SignArgs, SignKeyArgs};
use crate::password;

/// The signing key in `path`; its passphrase is `given`, else asked on
/// the terminal (`how` says how to give it when there is none).
pub fn read_signing_key(path: &Path, given: Option<&Password>, how: &str) -> Result<SigningKey> {
    let reading = || format!("reading signing key {}", Quoted::path(path));
    let mut ask = |prompt: &str| -> Option<Password> {
        match given {
            Some(passphrase) => Some(passphrase.clone()),
            None if std::io::stdin().is_terminal() => password::ask(prompt).ok(),
            None => None,
        }
    };
    match SigningKey::read_file(path, &mut ask) {
        Ok(key) => Ok(key),
        Err(KeyError::PassphraseRequired) => {
            Err(UsageError(format!("{}: the signing key is passphrase-protected: {how}", reading())).into())
        }
        Err(e @ KeyError::WrongPassphrase) => Err(anyhow::Error::new(Error::Key(e)).context(reading())),
        Err(e @ (KeyError::Io { .. } | KeyError::Kdf(_))) => Err(anyhow::Error::new(e).context(reading())),
        Err(e) => Err(UsageError(format!("{}: {e}", reading())).into()),
    }
}

/// The keys of every `--sign KEY`, a protected one opened with the
/// passphrase of `--sign-passphrase-file` or `$LOCKBOX_SIGN_PASSPHRASE`,
/// else asked on the terminal.
pub fn signing_keys(a: &SignKeyArgs) -> Result<Vec<Arc<SigningKey>>> {
    let given = match a.keys.is_empty() {
        true => None,
        false => password::sign_passphrase(a.sign_passphrase_file.as_deref())?,
    };
    let how = "give --sign-passphrase-file FILE or LOCKBOX_SIGN_PASSPHRASE, or run on a terminal";
    a.keys.iter().map(|p| read_signing_key(p, given.as_ref(), how).map(Arc::new)).collect()
}

/// The fingerprints of every `--signer` (`lbsig1…` as given, a `.pub`
/// file's key's otherwise) and of every signer the `--signers` files list.
pub fn trusted(given: &[String], files: &[PathBuf]) -> Result<Vec<Fingerprint>> {
    let mut all: Vec<Fingerprint> = given.iter().map(|s| signer(s)).collect::<Result<_>>()?;
    for file in files {
        // Every trouble with the list, a missing file included, is a usage
        // error (exit 2), as with a recipients file.
        let listed = read_signers_file(file).map_err(|e| {
            let reason = match &e {
                KeyError::Io { source, .. } => format!("{e}: {source}"),
                _ => e.to_string(),
            };
            UsageError(format!("--signers: {reason}"))
        })?;
        all.extend(listed);
    }
    Ok(all)
}

fn signer(given: &str) -> Result<Fingerprint> {
    if given.starts_with("lbsig1") && !Path::new(given).exists() {
        return given.parse().map_err(|e: KeyError| UsageError(format!("--signer: {e}")).into());
    }
    let path = Path::new(given);
    let reading = || format!("reading signer {}", Quoted::path(path));
    match VerifyingKey::read_file(path) {
        Ok(key) => Ok(key.fingerprint()),
        Err(e @ KeyError::Io { .. }) => Err(anyhow::Error::new(e).context(reading())),
        Err(e) => {
            Err(UsageError(format!("{}: {e} (give a fingerprint lbsig1… or a .pub file)", reading())).into())
        }
    }
}

/// `options` signing as `a` says: its keys, the earlier signers it
/// trusts, whether it adopts the earlier sessions.
pub fn update_options(options: UpdateOptions, a: &SignArgs) -> Result<UpdateOptions> {
    let trusted = trusted(&a.signers, &a.signers_files)?;
    let mut options = options.trust_earlier(trusted).adopt_unsigned(a.adopt_unsigned);
    for key in signing_keys(&a.key)? {
        options = options.sign(key);
    }
    Ok(options)
}
