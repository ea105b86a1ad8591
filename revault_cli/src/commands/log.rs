//! `log`: every write session of an archive, from the sessions tree alone
//! (no entry, page or session header is read).

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome};
use crate::flags::LogArgs;
use crate::output;

pub fn run(a: LogArgs) -> Result<Outcome> {
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, None)?;
    let history = archive.history().with_context(|| format!("reading the sessions of {name}"))?;
    output::log(&history, archive.torn_tail_bytes(), a.format.json, a.utc)?;
    Ok(Outcome::Success)
}
