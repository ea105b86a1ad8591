//! `repair`: what an interrupted `add`, `update` or `rm` left after the
//! last commit, cut off; an archive whose trailer, root or index is
//! damaged rewritten from what a salvage scan proves.

use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::flags::MaintainArgs;
use crate::output::Change;
use crate::{keys, output, progress};

pub fn run(a: MaintainArgs) -> Result<Outcome> {
    in_place(&a.archive, "repair")?;
    let name = Quoted::path(&a.archive).to_string();
    let mut options = UpdateOptions::new().wait(a.lock.wait).kdf_budget(a.unlock.kdf_budget());
    if let Some(threads) = a.threads.count() {
        options = options.threads(threads);
    }
    if let Some(percent) = a.recovery.recovery {
        options = options.recovery(percent);
    }
    let counters = progress::counters(a.quiet.quiet);
    if let Some(counters) = &counters {
        options = options.progress(Arc::clone(counters));
    }
    let report = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        progress::during(counters.as_ref(), || ArchiveUpdater::repair(&a.archive, key, options))
    })
    .with_context(|| format!("repairing {}", Quoted::path(&a.archive)))?;
    let what = Change {
        command: "repair",
        archive: &a.archive,
        json: a.format.json,
        dry_run: false,
        quiet: a.quiet.quiet,
    };
    output::repaired(&what, &report)?;
    Ok(if report.salvaged.is_some() { Outcome::Damaged } else { Outcome::Success })
}
