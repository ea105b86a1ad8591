//! `key list`, `key add`, `key remove`: an archive's key slots, read or
//! rewritten in place without touching the data.

use anyhow::{Context, Result};
use revault_lockbox_api::{slots, KdfParams, Quoted, UpdateOptions};

use super::{archive_bytes, in_place, Outcome};
use crate::exit::UsageError;
use crate::flags::{KeyAddArgs, KeyListArgs, KeyRemoveArgs};
use crate::{keys, output, password, signing};

/// `key list`: one line per slot in use.
pub fn list(a: KeyListArgs) -> Result<Outcome> {
    // Read-only: the header and slot table by position, so an object store
    // serves it as well as a file.
    let (src, name) = archive_bytes(&a.archive, &a.s3)?;
    let slots = slots::read(&*src).with_context(|| format!("reading {name}"))?;
    output::slots(&slots, a.format.json)?;
    Ok(Outcome::Success)
}

/// `key add`: new password and recipient slots; a rewrite (a key larger
/// than the slots) signed with `--sign`.
pub fn add(a: KeyAddArgs) -> Result<Outcome> {
    in_place(&a.archive, "key add")?;
    let name = Quoted::path(&a.archive).to_string();
    let mut new = keys::recipients(&a.recipients)?;
    let adds_password = a.password || a.new_password_file.is_some();
    // Labels that do not pair are refused before the new password is asked.
    let given = new.key_count() + usize::from(adds_password) + usize::from(a.new_key_file.is_some());
    keys::check_labels(given, &a.recipients)?;
    if adds_password {
        new = new.password(&password::get_new(a.new_password_file.as_deref(), &name)?);
    }
    if let Some(path) = &a.new_key_file {
        new = new.key_file(&keys::key_file(path)?);
    }
    if !new.has_keys() {
        return Err(UsageError("nothing to add: give --password, --new-key-file, -r or -R".into()).into());
    }
    let new = keys::labelled(new, &a.recipients)?;
    let signing = !a.sign.key.keys.is_empty();
    let options = signing::update_options(UpdateOptions::new().kdf_budget(a.unlock.kdf_budget()), &a.sign)?;
    let target = keys::Target::file(&a.archive, &name);
    let added = keys::with_key(&a.unlock, target, |key| {
        slots::add_with_options(&a.archive, key, &new, KdfParams::default(), &options)
    })
    .with_context(|| format!("adding keys to {}", Quoted::path(&a.archive)))?;
    let slots: Vec<String> = added.slots.iter().map(usize::to_string).collect();
    output::say(format_args!("{}: added slot {}", Quoted::path(&a.archive), slots.join(", ")));
    match (added.rewritten, signing) {
        (true, true) => output::say(
            "the key needed larger slots: the archive was rewritten, every state kept, into signed sessions",
        ),
        (true, false) => output::warn(
            "the key needed larger slots: the archive was rewritten, every state kept, into unsigned \
             sessions (earlier signatures are gone; --signer refuses them until a signed session \
             follows; key add --sign KEY signs such a rewrite)",
        ),
        (false, true) => output::say(
            "the slots were written in place: nothing was signed, and every signature still holds \
             (signatures leave the key slots out)",
        ),
        (false, false) => {}
    }
    Ok(Outcome::Success)
}

/// `key remove`: one slot, overwritten.
pub fn remove(a: KeyRemoveArgs) -> Result<Outcome> {
    in_place(&a.archive, "key remove")?;
    let budget = a.unlock.kdf_budget();
    let name = Quoted::path(&a.archive).to_string();
    keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        slots::remove_with_budget(&a.archive, key, a.slot, budget)
    })
    .with_context(|| format!("removing slot {} of {}", a.slot, Quoted::path(&a.archive)))?;
    Ok(Outcome::Success)
}
