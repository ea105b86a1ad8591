//! `verify`: every check extract runs, every page authenticated, every
//! file's SHA-256 compared; with `--signer`, every session's signature;
//! nothing written.

use anyhow::{Context, Result};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Archive, WorkloadProfile};

use super::{open_counted, open_or_salvage, Outcome, Readable};
use crate::flags::VerifyArgs;
use crate::progress::Opening;
use crate::progress::{self, during as shown};
use crate::{output, select, signing};

pub fn run(a: VerifyArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.names)?;
    let counters = progress::counters(a.quiet.quiet);
    let profile = WorkloadProfile::ExtractMany;
    let threads = a.threads.count();
    let (report, name) = if members.is_everything() {
        let (readable, name) = open_or_salvage(
            &a.archive,
            &a.read,
            profile,
            threads,
            true,
            counters.as_ref(),
            Opening::unless(a.quiet.quiet),
        )?;
        let report = match readable {
            Readable::Indexed(archive) => {
                check_signers(&archive, &a, &name)?;
                shown(counters.as_ref(), || archive.verify())
            }
            Readable::Salvaged(salvage, _) => shown(counters.as_ref(), || salvage.verify()),
        };
        (report.with_context(|| format!("verifying {name}"))?, name)
    } else {
        let (archive, name) = open_counted(
            &a.archive,
            &a.read,
            profile,
            threads,
            counters.as_ref(),
            Opening::unless(a.quiet.quiet),
        )?;
        check_signers(&archive, &a, &name)?;
        let report = shown(counters.as_ref(), || archive.verify_members(&members));
        (report.with_context(|| format!("verifying {name}"))?, name)
    };
    output::verified(&a.archive, &name, &report, a.format.json, a.quiet.quiet)?;
    Ok(if report.is_ok() { Outcome::Success } else { Outcome::Damaged })
}

/// With `--signer` or `--signers`: every session's signature, back along
/// the hash chain.
fn check_signers<S: ReadAt>(archive: &Archive<S>, a: &VerifyArgs, name: &str) -> Result<()> {
    if !a.read.trusts_signers() {
        return Ok(());
    }
    let trusted = signing::trusted(&a.read.signers, &a.read.signers_files)?;
    let signers = archive.check_signers(&trusted).with_context(|| format!("verifying {name}"))?;
    output::signers(&signers, a.format.json, a.quiet.quiet)
}
