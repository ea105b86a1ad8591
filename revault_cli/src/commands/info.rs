//! `info`: facts about an archive (version, KDF cost, counts, sizes), and
//! with retention flags (`--keep-*`) what `compact` with them would
//! reclaim, and with several, what each alone would.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{compact, open_archive, Outcome, Records};
use crate::flags::InfoArgs;
use crate::output;

pub fn run(a: InfoArgs) -> Result<Outcome> {
    let policy = compact::retention(&a.keep)?;
    let rules = compact::each_rule(&a.keep)?;
    let (archive, name) =
        open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, a.threads.count(), Records::AsTheyAre)?;
    let info = archive.info().with_context(|| format!("reading {name}"))?;
    // All the rules together (what `compact` with them does), then each
    // alone when there are several.
    let mut reclaims = Vec::new();
    let alone = if rules.len() > 1 { rules } else { Vec::new() };
    for (retention, named) in policy.into_iter().chain(alone) {
        let mut reclaim = archive.reclaimable(&retention).with_context(|| format!("reading {name}"))?;
        if reclaim.kept.len() == 1 {
            // Keeping the last state alone is a plain compaction: the dead
            // bytes, counted from the chunk lists, bound it too, and
            // closer where chunked files make the index's bound loose.
            reclaim.bytes = reclaim.bytes.max(info.dead_bytes);
        }
        reclaims.push((named, reclaim));
    }
    output::info(&info, &reclaims, a.format.json)?;
    Ok(Outcome::Success)
}
