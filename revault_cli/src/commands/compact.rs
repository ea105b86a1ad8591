//! `compact`: the archive rewritten without what later sessions replaced
//! or removed, beside the old one, synced and renamed over it; with `-n`,
//! the whole rewrite counted instead of written.

use anyhow::{Context, Result};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::flags::CompactArgs;
use crate::output::Change;
use crate::progress;
use crate::{keys, output, signing};

pub fn run(c: CompactArgs) -> Result<Outcome> {
    let a = c.maintain;
    in_place(&a.archive, "compact")?;
    let options = UpdateOptions::new()
        .wait(a.lock.wait)
        .label(c.label.message.unwrap_or_default())
        .kdf_budget(a.unlock.kdf_budget())
        .dry_run(c.dry_run);
    let mut options = signing::update_options(options, &c.sign)?;
    let counters = progress::counters(a.quiet.quiet);
    if let Some(counters) = &counters {
        options = options.progress(std::sync::Arc::clone(counters));
    }
    let before = std::fs::metadata(&a.archive).map(|m| m.len()).unwrap_or(0);
    let name = Quoted::path(&a.archive).to_string();
    let after = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        // The key is read (a prompt is done) by now.
        progress::during(counters.as_ref(), || ArchiveUpdater::compact(&a.archive, key, options))
    })
    .with_context(|| format!("compacting {}", Quoted::path(&a.archive)))?;
    let what = Change {
        command: "compact",
        archive: &a.archive,
        json: a.format.json,
        dry_run: c.dry_run,
        quiet: a.quiet.quiet,
    };
    output::compacted(&what, before, after)?;
    Ok(Outcome::Success)
}
