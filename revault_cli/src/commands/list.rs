//! `list`: the stored paths, quoted, long (`-l`), raw (`-0`) or as JSON.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome};
use crate::flags::ListArgs;
use crate::output;

pub fn run(a: ListArgs) -> Result<Outcome> {
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::Balanced)?;
    let reading = || format!("reading the index of {name}");
    let entries = archive.entries().with_context(reading)?.map(|e| e.with_context(reading));
    output::entries(entries, a.format.json, a.long, a.null)?;
    Ok(Outcome::Success)
}
