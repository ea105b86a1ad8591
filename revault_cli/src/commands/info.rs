//! `info`: facts about an archive (version, KDF cost, counts, sizes), and
//! with `--keep-sessions`/`--keep-within` what `compact` with that flag
//! would reclaim.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{compact, open_archive, Outcome};
use crate::flags::InfoArgs;
use crate::output;

pub fn run(a: InfoArgs) -> Result<Outcome> {
    let policy = compact::retention(&a.keep)?;
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, a.threads.count())?;
    let info = archive.info().with_context(|| format!("reading {name}"))?;
    let reclaim = match policy {
        Some((retention, named)) => {
            Some((named, archive.reclaimable(retention).with_context(|| format!("reading {name}"))?))
        }
        None => None,
    };
    output::info(&info, reclaim.as_ref().map(|(n, r)| (n.as_str(), r)), a.format.json)?;
    Ok(Outcome::Success)
}
