//! `info`: facts about an archive (version, KDF cost, counts, sizes).

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome};
use crate::flags::InfoArgs;
use crate::output;

pub fn run(a: InfoArgs) -> Result<Outcome> {
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::Balanced)?;
    let info = archive.info().with_context(|| format!("reading {name}"))?;
    output::info(&info, a.format.json)?;
    Ok(Outcome::Success)
}
