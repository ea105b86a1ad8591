//! Keys on the command line: the recipients of `-r/-R`, the identities of
//! `-i`, key files, and the password, turned into what locks a new archive
//! or opens an existing one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{parse_recipients, read_recipients_file, Identity, KeyFile, Recipient};
use revault_lockbox_api::slots::{self, SlotInfo, SlotKind};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Error, KeySet, Password, Quoted, Unlock};

use crate::exit::UsageError;
use crate::flags::{LockArgs, RecipientArgs, UnlockArgs};
use crate::output;
use crate::password::{self, Purpose};
use crate::plugin_ui;

/// What the new archive `name` (as messages name it) is locked with: the
/// recipients given, else a password (asked twice on a terminal).
pub fn lock(lock: &LockArgs, recipient_args: &RecipientArgs, name: &str) -> Result<KeySet> {
    let keys = recipients(recipient_args)?;
    let password_file = lock.password.password_file.as_deref();
    if let Some(path) = &lock.key_file {
        if password_file.is_some() {
            // Never one dropped without a word: a slot holds one secret.
            return Err(UsageError(
                "--password-file and --key-file: give one (add the other later with `lockbox key add`)"
                    .into(),
            )
            .into());
        }
        return labelled(keys.key_file(&key_file(path)?), recipient_args);
    }
    if let (Some(file), true) = (password_file, keys.has_keys()) {
        // A password file given with recipients is a slot of its own
        // beside theirs (it was dropped without a word).
        check_labels(keys.key_count() + 1, recipient_args)?;
        let password = password::get(Some(file), Purpose::Create, name)?;
        return labelled(keys.password(&password), recipient_args);
    }
    if !keys.has_keys() {
        check_labels(1, recipient_args)?;
        let password = password::get(lock.password.password_file.as_deref(), Purpose::Create, name)?;
        return labelled(keys.password(&password), recipient_args);
    }
    labelled(keys, recipient_args)
}

/// `keys` with the `--key-label`s of `a`: one names every slot, several
/// the slots in the order written (a password or key file first, then the
/// recipients of `-r`, then of `-R` files, line by line); another count
/// than the keys' is a usage error, found before any password is asked.
pub fn labelled(keys: KeySet, a: &RecipientArgs) -> Result<KeySet> {
    check_labels(keys.key_count(), a)?;
    Ok(keys.labels(a.key_label.iter().cloned()))
}

/// The usage error of [`labelled`] for `keys_given` keys, before they are
/// all gathered.
pub fn check_labels(keys_given: usize, a: &RecipientArgs) -> Result<()> {
    let labels = a.key_label.len();
    if labels > 1 && labels != keys_given {
        return Err(UsageError(format!(
            "{labels} key labels for {}: give one --key-label for all, or one for each key \
             (a password or key file first, then the recipients in the order given)",
            output::count(keys_given as u64, "key", "keys")
        ))
        .into());
    }
    Ok(())
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
    let ui = plugin_ui::terminal();
    let all = all.into_iter().map(|r| r.with_plugin_ui(ui.clone()));
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

/// The archive a key is for: how messages name it, and its slot table
/// (not secret: read without a key; `None` where it cannot be read, and
/// opening then reports why).
pub struct Target<'a> {
    pub name: &'a str,
    pub slots: Box<dyn FnOnce() -> Option<Vec<SlotInfo>> + 'a>,
}

impl<'a> Target<'a> {
    /// The archive file at `path`, named `name`.
    pub fn file(path: &'a Path, name: &'a str) -> Target<'a> {
        Target { name, slots: Box::new(move || slots::list(path).ok()) }
    }

    /// The archive whose bytes `src` reads, named `name`; its slot table is
    /// read now, so that `src` can move on to open it.
    pub fn bytes(src: &dyn ReadAt, name: &'a str) -> Target<'a> {
        let table = slots::read(src).ok();
        Target { name, slots: Box::new(move || table) }
    }
}

/// Runs `f` with the key that opens the archive `target`: the key file,
/// the identities of `-i`, else the password. An unlock of a kind the
/// archive has no slot for is refused first, with how it is locked.
pub fn with_key<T>(
    unlock: &UnlockArgs,
    target: Target<'_>,
    f: impl FnOnce(Unlock<'_>) -> revault_lockbox_api::Result<T>,
) -> Result<T> {
    let given = if unlock.key_file.is_some() {
        Given::KeyFile
    } else if unlock.identities.is_empty() {
        Given::Password
    } else {
        Given::Identities
    };
    // A malformed key file is reported as such, whatever the archive holds.
    let key = unlock.key_file.as_deref().map(key_file).transpose()?;
    if let Some(slots) = (target.slots)() {
        refuse_wrong_kind(given, &slots, target.name)?;
    }
    match (&key, given) {
        (Some(key), _) => Ok(f(Unlock::KeyFile(key))?),
        (None, Given::Password) => {
            let password =
                password::get(unlock.password.password_file.as_deref(), Purpose::Open, target.name)?;
            Ok(f(Unlock::Password(&password))?)
        }
        (None, _) => {
            let ids = identities(&unlock.identities)?;
            Ok(f(Unlock::Identities(&ids))?)
        }
    }
}

/// The kind of unlock given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Given {
    Password,
    Identities,
    KeyFile,
}

/// A usage error when `slots` has no slot `given` can open, saying how the
/// archive is locked and what opens it.
fn refuse_wrong_kind(given: Given, slots: &[SlotInfo], name: &str) -> Result<()> {
    let of = |g: Given| {
        slots.iter().any(|s| match &s.kind {
            SlotKind::Password(_) => g == Given::Password,
            SlotKind::Recipient(_) => g == Given::Identities,
            SlotKind::KeyFile => g == Given::KeyFile,
            _ => false,
        })
    };
    if slots.is_empty() || of(given) {
        return Ok(());
    }
    let not = match given {
        Given::Password => "a password",
        Given::Identities => "a recipient (-i)",
        Given::KeyFile => "a key file",
    };
    let mut ways = Vec::new();
    if of(Given::Identities) {
        ways.push("-i IDENTITY_FILE");
    }
    if of(Given::KeyFile) {
        ways.push("--key-file FILE");
    }
    if of(Given::Password) {
        ways.push("its password (--password-file, LOCKBOX_PASSWORD or the prompt)");
    }
    Err(UsageError(format!(
        "{name} is locked with {}, not {not}: open it with {}",
        output::locked_with(slots),
        ways.join(" or ")
    ))
    .into())
}

/// The identities in `files`; a passphrase-protected file asks on the
/// terminal (`/dev/tty`, whatever stdin is), and so do age plugins.
fn identities(files: &[PathBuf]) -> Result<Vec<Identity>> {
    let mut all = Vec::new();
    let ui = plugin_ui::terminal();
    for file in files {
        let read = read_identity_file(file).map_err(|e| identity_error(file, e))?;
        all.extend(read.into_iter().map(|i| i.with_plugin_ui(ui.clone())));
    }
    Ok(all)
}

/// The identities in `file`, warned about when others may read it; a
/// passphrase-protected file asks on the terminal (`/dev/tty`).
pub fn read_identity_file(file: &Path) -> Result<Vec<Identity>, KeyError> {
    warn_if_readable_by_others(file);
    let mut ask = |what: &str| -> Option<Password> {
        if !password::have_terminal() {
            return None;
        }
        password::ask(&format!("Passphrase for {what}")).ok()
    };
    Identity::read_file(file, &mut ask)
}

/// A malformed identity file is the caller's input, like a bad recipient:
/// a usage error (exit 2); a wrong passphrase is an authentication failure
/// (exit 3); a file that cannot be read, an I/O error.
pub fn identity_error(file: &Path, e: KeyError) -> anyhow::Error {
    let what = format!("reading identity file {}", Quoted::path(file));
    match e {
        KeyError::Io { .. } => anyhow::Error::new(e).context(what),
        KeyError::WrongPassphrase => anyhow::Error::new(Error::Key(e)).context(what),
        e => UsageError(format!("{what}: {e}")).into(),
    }
}
