//! `compact`: the archive rewritten without what later sessions replaced
//! or removed, beside the old one, synced and renamed over it.

use anyhow::{Context, Result};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::flags::CompactArgs;
use crate::{keys, output, signing};

pub fn run(c: CompactArgs) -> Result<Outcome> {
    let a = c.maintain;
    in_place(&a.archive, "compact")?;
    let options = UpdateOptions::new()
        .wait(a.lock.wait)
        .label(c.label.message.unwrap_or_default())
        .kdf_budget(a.unlock.kdf_budget());
    let options = signing::update_options(options, &c.sign)?;
    let before = std::fs::metadata(&a.archive).map(|m| m.len()).unwrap_or(0);
    let name = Quoted::path(&a.archive).to_string();
    let after = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        ArchiveUpdater::compact(&a.archive, key, options)
    })
    .with_context(|| format!("compacting {}", Quoted::path(&a.archive)))?;
    output::note(
        a.quiet.quiet,
        format_args!("{}: {before} bytes before, {after} after", Quoted::path(&a.archive)),
    );
    Ok(Outcome::Success)
}
