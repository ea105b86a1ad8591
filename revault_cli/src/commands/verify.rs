//! `verify`: every check extract runs, every page authenticated, every
//! file's SHA-256 compared; with `--signer`, every session's signature;
//! nothing written.

use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{recovery, Archive, WorkloadProfile};

use super::{open_counted, open_or_salvage, OnDamage, Outcome, Readable, Records};
use crate::flags::VerifyArgs;
use crate::progress::Opening;
use crate::progress::{self, during as shown};
use crate::{output, select, signing};

pub fn run(a: VerifyArgs) -> Result<Outcome> {
    let members = select::members(&a.members, &a.names)?;
    let counters = progress::counters(a.quiet.quiet);
    let profile = WorkloadProfile::ExtractMany;
    let threads = a.threads.count();
    let (report, name, bytes) = if members.is_everything() {
        let (readable, name, bytes) = open_or_salvage(
            &a.archive,
            &a.read,
            profile,
            threads,
            OnDamage { salvage: true, records: Records::AsTheyAre },
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
        (report.with_context(|| format!("verifying {name}"))?, name, bytes)
    } else {
        let (archive, name) = open_counted(
            &a.archive,
            &a.read,
            profile,
            threads,
            counters.as_ref(),
            Opening::unless(a.quiet.quiet),
            Records::AsTheyAre,
        )?;
        check_signers(&archive, &a, &name)?;
        let report = shown(counters.as_ref(), || archive.verify_members(&members));
        let bytes = Arc::clone(archive.source());
        (report.with_context(|| format!("verifying {name}"))?, name, bytes)
    };
    output::verified(&a.archive, &name, &report, a.format.json, a.quiet.quiet)?;
    if !report.is_ok() {
        // Only on damage: an undamaged archive costs no scan of its shards.
        match recovery::records_view(bytes) {
            Ok(Some(records)) => output::recovery::verified(&name, &records.runs),
            Ok(None) => {}
            Err(e) => output::say(format_args!("{name}: {e}")),
        }
    }
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
