//! `list`: the stored paths, all or those NAMEs select, quoted, long
//! (`-l`), raw (`-0`) or as JSON.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome, Records};
use crate::dates::Clock;
use crate::flags::ListArgs;
use crate::{output, select};

pub fn run(a: ListArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.names)?;
    let (archive, name) =
        open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, a.threads.count(), Records::Repair)?;
    let reading = || format!("reading the index of {name}");
    super::refuse_missing_names(&archive, &members).with_context(reading)?;
    let long = a.long.then(|| output::text::LongLines::new(Clock::new(a.times.utc, a.times.full_time)));
    let mut selected = members.entries(&archive).with_context(reading)?;
    output::entries(selected.by_ref().map(|e| e.with_context(reading)), a.format.json, long, a.null)?;
    selected.all_matched().with_context(reading)?;
    Ok(Outcome::Success)
}
