//! `repair`: what an interrupted `add`, `update` or `rm` left after the
//! last commit, cut off; an archive whose trailer, root or index is
//! damaged rewritten from what a salvage scan proves.

use anyhow::{Context, Result};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::flags::MaintainArgs;
use crate::{keys, output};

pub fn run(a: MaintainArgs) -> Result<Outcome> {
    in_place(&a.archive, "repair")?;
    let name = Quoted::path(&a.archive).to_string();
    let report = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        ArchiveUpdater::repair(
            &a.archive,
            key,
            UpdateOptions::new().wait(a.lock.wait).kdf_budget(a.unlock.kdf_budget()),
        )
    })
    .with_context(|| format!("repairing {}", Quoted::path(&a.archive)))?;
    let archive = Quoted::path(&a.archive);
    if let Some(damage) = &report.salvaged {
        for l in &report.lost {
            output::say(format_args!("lost: {l}"));
        }
        for d in &report.damaged {
            output::say(format_args!("damaged, left out: {}: {}", d.path, d.reason));
        }
        output::say(format_args!(
            "{archive}: {damage}: rewritten from what a scan proves: {} entries kept, {} left out",
            report.entries,
            report.damaged.len()
        ));
        return Ok(Outcome::Damaged);
    }
    match report.torn_tail_bytes {
        0 => output::note(a.quiet.quiet, format_args!("{archive}: whole, nothing to cut")),
        n => output::note(a.quiet.quiet, format_args!("{archive}: cut off a torn tail of {n} bytes")),
    }
    Ok(Outcome::Success)
}
