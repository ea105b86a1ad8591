//! `verify`: every check extract runs, every page authenticated, every
//! file's SHA-256 compared; with `--signer`, every session's signature;
//! nothing written.

use anyhow::{Context, Result};
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome};
use crate::flags::VerifyArgs;
use crate::{output, select, signing};

pub fn run(a: VerifyArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.names)?;
    let (archive, name) = open_archive(&a.archive, &a.read, WorkloadProfile::ExtractMany)?;
    if !a.read.signers.is_empty() {
        // Every session's signature, back along the hash chain.
        let trusted = signing::signers(&a.read.signers)?;
        let signers = archive.check_signers(&trusted).with_context(|| format!("verifying {name}"))?;
        output::signers(&signers, a.format.json, a.quiet.quiet)?;
    }
    let report = archive.verify_members(&members).with_context(|| format!("verifying {name}"))?;
    output::verified(&a.archive, &name, &report, a.format.json, a.quiet.quiet)?;
    Ok(if report.is_ok() { Outcome::Success } else { Outcome::Damaged })
}
