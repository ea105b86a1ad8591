//! `repair`: what an interrupted `add`, `update` or `rm` left after the
//! last commit, cut off.

use anyhow::{Context, Result};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::flags::MaintainArgs;
use crate::{keys, output};

pub fn run(a: MaintainArgs) -> Result<Outcome> {
    in_place(&a.archive, "repair")?;
    let name = Quoted::path(&a.archive).to_string();
    let cut = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        ArchiveUpdater::repair(&a.archive, key, UpdateOptions::new().wait(a.lock.wait))
    })
    .with_context(|| format!("repairing {}", Quoted::path(&a.archive)))?;
    let archive = Quoted::path(&a.archive);
    match cut {
        0 => output::note(a.quiet.quiet, format_args!("{archive}: whole, nothing to cut")),
        n => output::note(a.quiet.quiet, format_args!("{archive}: cut off a torn tail of {n} bytes")),
    }
    Ok(Outcome::Success)
}
