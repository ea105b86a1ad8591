//! `verify`: every check extract runs, every page authenticated, every
//! file's SHA-256 compared; nothing written.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, open_or_salvage, Outcome, Readable};
use crate::flags::VerifyArgs;
use crate::{output, select};

pub fn run(a: VerifyArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.names)?;
    let report = if members.is_everything() {
        let (readable, name) = open_or_salvage(&a.archive, &a.read, WorkloadProfile::ExtractMany, true)?;
        let report = match readable {
            Readable::Indexed(archive) => archive.verify(),
            Readable::Salvaged(salvage, _) => salvage.verify(),
        };
        (report.with_context(|| format!("verifying {name}"))?, name)
    } else {
        let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::ExtractMany)?;
        (archive.verify_members(&members).with_context(|| format!("verifying {name}"))?, name)
    };
    let (report, name) = report;
    output::verified(&a.archive, &name, &report, a.format.json, a.quiet.quiet)?;
    Ok(if report.is_ok() { Outcome::Success } else { Outcome::Damaged })
}
