//! Public keys on the command line: recipients for `create -r/-R`,
//! identities for `-i`, and `keygen`.

use std::fs::OpenOptions;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use revault_lockbox_api::{
    add_keys, change_password, parse_recipients, read_key_slots, read_recipients_file, remove_key_slot,
    Error, Identity, KdfParams, KeyError, KeyFile, KeySet, Password, Quoted, ReadAt, Recipient, SlotKind,
    Unlock,
};

use crate::location::ArchiveLocation;
use crate::password::{self, Purpose};
use crate::{
    CreateArgs, GlobalArgs, KeyAddArgs, KeyListArgs, KeyRemoveArgs, PasswdArgs, RecipientArgs, UsageError,
};

/// What a new archive is locked with: the recipients given, else a
/// password (asked twice on a terminal).
pub fn lock(g: &GlobalArgs, a: &CreateArgs) -> Result<KeySet> {
    let keys = recipients(&a.recipients)?;
    if let Some(path) = &g.key_file {
        return Ok(keys.key_file(&key_file(path)?));
    }
    if !keys.has_keys() {
        let password = password::get(g.password_file.as_deref(), Purpose::Create)?;
        return Ok(KeySet::new().password(&password));
    }
    Ok(keys)
}

/// The recipients of `-r` arguments and `-R` files, as a key set; a bad one
/// is a usage error naming where it is.
fn recipients(a: &RecipientArgs) -> Result<KeySet> {
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

fn key_file(path: &Path) -> Result<KeyFile> {
    warn_if_readable_by_others(path);
    KeyFile::read(path).with_context(|| format!("reading key file {}", Quoted::path(path)))
}

/// Like ssh: a secret key file that others may read gets a warning.
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(md) = std::fs::metadata(path) {
        let mode = md.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            eprintln!(
                "lockbox: warning: {} is readable by others (mode {mode:04o}); keep secret keys at 0600",
                Quoted::path(path)
            );
        }
    }
}

/// Runs `f` with the key that opens an existing archive: the key file, the
/// identities of `-i`, else the password.
pub fn with_key<T>(
    g: &GlobalArgs,
    f: impl FnOnce(Unlock<'_>) -> revault_lockbox_api::Result<T>,
) -> Result<T> {
    if let Some(path) = &g.key_file {
        let key = key_file(path)?;
        Ok(f(Unlock::KeyFile(&key))?)
    } else if g.identities.is_empty() {
        let password = password::get(g.password_file.as_deref(), Purpose::Open)?;
        Ok(f(Unlock::Password(&password))?)
    } else {
        let ids = identities(&g.identities)?;
        Ok(f(Unlock::Identities(&ids))?)
    }
}

/// `key list`: one line per slot in use.
pub fn list(g: &GlobalArgs, a: KeyListArgs) -> Result<ExitCode> {
    // Read-only: the header and slot table by position, so an object store
    // serves it as well as a file.
    let (src, name): (Box<dyn ReadAt>, String) = match ArchiveLocation::parse(&a.archive)? {
        location @ ArchiveLocation::Object(_) => {
            (location.open_reader(&g.s3)?, Quoted::path(&a.archive).to_string())
        }
        ArchiveLocation::Local(_) => {
            let input = crate::source::open(&a.archive)?;
            (Box::new(input.file), input.name)
        }
    };
    let slots = read_key_slots(&*src).with_context(|| format!("reading {name}"))?;
    if a.json {
        let mut lines = crate::json::Lines::stdout();
        for slot in &slots {
            lines.write(&crate::json::slot(slot)).context("writing to stdout")?;
        }
        let summary = crate::json::slots_summary(slots.len());
        lines.write(&summary).and_then(|()| lines.flush()).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for slot in slots {
        let what = match &slot.kind {
            SlotKind::Password(k) => {
                format!("password   Argon2id {} MiB, {} passes, {} lanes", k.m_kib as f64 / 1024.0, k.t, k.p)
            }
            SlotKind::Recipient(types) => format!("recipient  {}", types.join(", ")),
            SlotKind::KeyFile => "key file".into(),
            _ => "unknown".into(),
        };
        writeln!(out, "{:>2}  {what}", slot.index).context("writing to stdout")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `key add`: new password and recipient slots.
pub fn add(g: &GlobalArgs, a: KeyAddArgs) -> Result<ExitCode> {
    let mut keys = recipients(&a.recipients)?;
    if a.password || a.new_password_file.is_some() {
        keys = keys.password(&password::get_new(a.new_password_file.as_deref())?);
    }
    if let Some(path) = &a.new_key_file {
        keys = keys.key_file(&key_file(path)?);
    }
    if !keys.has_keys() {
        return Err(UsageError("nothing to add: give --password, --new-key-file, -r or -R".into()).into());
    }
    let written = with_key(g, |key| add_keys(&a.archive, key, &keys, KdfParams::default()))
        .with_context(|| format!("adding keys to {}", Quoted::path(&a.archive)))?;
    let slots: Vec<String> = written.iter().map(usize::to_string).collect();
    eprintln!("lockbox: {}: added slot {}", Quoted::path(&a.archive), slots.join(", "));
    Ok(ExitCode::SUCCESS)
}

/// `key remove`: one slot, overwritten.
pub fn remove(g: &GlobalArgs, a: KeyRemoveArgs) -> Result<ExitCode> {
    with_key(g, |key| remove_key_slot(&a.archive, key, a.slot))
        .with_context(|| format!("removing slot {} of {}", a.slot, Quoted::path(&a.archive)))?;
    Ok(ExitCode::SUCCESS)
}

/// `passwd`: the password slot the current password opens, replaced.
pub fn passwd(g: &GlobalArgs, a: PasswdArgs) -> Result<ExitCode> {
    let old = password::get(g.password_file.as_deref(), Purpose::Open)?;
    let new = password::get_new(a.new_password_file.as_deref())?;
    change_password(&a.archive, &old, &new, KdfParams::default())
        .with_context(|| format!("changing the password of {}", Quoted::path(&a.archive)))?;
    Ok(ExitCode::SUCCESS)
}

/// The identities in `files`; a passphrase-protected file asks on the
/// terminal.
pub fn identities(files: &[PathBuf]) -> Result<Vec<Identity>> {
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

/// Writes a new identity (or, `symmetric`, a key file) to `output` (mode
/// 0600, never over an existing file) or stdout, and prints its recipient.
pub fn keygen(output: Option<&Path>, pq: bool, symmetric: bool) -> Result<ExitCode> {
    let (identity, recipient) = if symmetric {
        let key = KeyFile::generate().context("generating a key")?;
        (key.to_text(), String::new())
    } else {
        revault_lockbox_api::keygen(pq).context("generating an identity")?
    };
    match output {
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
            if !symmetric {
                println!("{recipient}");
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(identity.as_bytes()).and_then(|()| out.flush()).context("writing to stdout")?;
            if !symmetric {
                eprintln!("Public key: {recipient}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
