//! `log`: every write session of an archive, from the sessions tree alone
//! (no entry, page or session header is read); with `--stats`, also what
//! each session's files reuse of earlier sessions' content, from its own
//! index run and chunk lists.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome, Records};
use crate::flags::LogArgs;
use crate::output;

pub fn run(a: LogArgs) -> Result<Outcome> {
    let (archive, name) =
        open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, None, Records::AsTheyAre)?;
    let history = archive.history().with_context(|| format!("reading the sessions of {name}"))?;
    let reused = match a.stats {
        true => Some(
            history
                .iter()
                .map(|s| archive.reused_bytes(s.number))
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("reading what the sessions of {name} reuse"))?,
        ),
        false => None,
    };
    output::log(&history, reused.as_deref(), archive.torn_tail_bytes(), a.format.json, a.utc)?;
    Ok(Outcome::Success)
}
