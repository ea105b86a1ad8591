//! `add`, `update` and `rm`: one write session appended to an archive in
//! place, through the library's updater (they share opening it, its
//! options and what its report shows). Each holds the archive's writer
//! lock; `--wait` waits for another writer instead of failing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::update::UpdateReport;
use revault_lockbox_api::{ArchiveUpdater, EntryLog, Error, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::exit::library_error;
use crate::flags::{AddArgs, AppendArgs, RmArgs, UnlockArgs, UpdateArgs};
use crate::output::verbose::Verbose;
use crate::progress::{self, input_bytes};
use crate::{keys, output, signing};

/// What shows an append's work: a progress bar or `-v` lines.
struct Shown {
    display: Option<progress::Display>,
    verbose: Option<Arc<Verbose>>,
}

/// The options of `add` and `update`, and a progress display or `-v`
/// lines when asked.
fn options(a: &AppendArgs) -> Result<(UpdateOptions, Shown)> {
    let label = a.label.message.clone().unwrap_or_default();
    let options = UpdateOptions::new().profile(a.input.profile).wait(a.lock.wait).label(label);
    let mut options = signing::update_options(options, &a.sign)?;
    if let Some(level) = a.input.level {
        options = options.zstd_level(level);
    }
    let (options, verbose) = logged(options, a.verbose.verbose);
    let mut options = options;
    let roots: Vec<PathBuf> = a.paths.iter().map(|p| a.input.directory.join(p)).collect();
    let quiet = a.quiet.quiet || verbose.is_some();
    let display = progress::maybe_start(quiet, move || input_bytes(&roots, false)).map(|(c, d)| {
        options = options.clone().progress(Arc::clone(&c));
        d
    });
    Ok((options, Shown { display, verbose }))
}

/// `options` telling `-v`'s lines of each entry, when asked.
fn logged(options: UpdateOptions, count: u8) -> (UpdateOptions, Option<Arc<Verbose>>) {
    match Verbose::start(count, false) {
        Some(log) => (options.log(Arc::clone(&log) as Arc<dyn EntryLog>), Some(log)),
        None => (options, None),
    }
}

fn open(unlock: &UnlockArgs, archive: &std::path::Path, options: UpdateOptions) -> Result<ArchiveUpdater> {
    let options = options.kdf_budget(unlock.kdf_budget());
    let name = Quoted::path(archive).to_string();
    keys::with_key(unlock, keys::Target::file(archive, &name), |key| {
        ArchiveUpdater::open(archive, key, options)
    })
    .map_err(|e| match library_error(&e) {
        // The chain rule of --sign (the library says which session).
        Some(Error::Signature(_)) => e.context(format!(
            "refusing to sign a change of {} (every earlier session needs a signature by a --sign or \
             --signer key, or --adopt-unsigned)",
            Quoted::path(archive)
        )),
        _ => e.context(format!("opening {} to change it", Quoted::path(archive))),
    })
}

fn done(report: &UpdateReport, shown: Shown) -> Result<Outcome> {
    if let Some(display) = shown.display {
        display.finish();
    }
    if let Some(log) = shown.verbose {
        log.finish()?;
    }
    output::updated(report);
    // As tar and `create`: the change is committed, but misses or holds a
    // changed copy of something asked for.
    Ok(if report.warnings.iter().any(|w| w.is_failure()) { Outcome::Incomplete } else { Outcome::Success })
}

pub fn add(a: AddArgs) -> Result<Outcome> {
    let a = a.append;
    in_place(&a.archive, "add")?;
    let (options, shown) = options(&a)?;
    let report = open(&a.unlock, &a.archive, options)?
        .add(&a.input.directory, &a.paths)
        .with_context(|| format!("adding to {}", Quoted::path(&a.archive)))?;
    output::leading_slash_note(&a.paths, a.quiet.quiet);
    done(&report, shown)
}

pub fn update(u: UpdateArgs) -> Result<Outcome> {
    let a = u.append;
    in_place(&a.archive, "update")?;
    let (options, shown) = options(&a)?;
    let report = open(&a.unlock, &a.archive, options)?
        .update(&a.input.directory, &a.paths, u.delete_missing)
        .with_context(|| format!("updating {}", Quoted::path(&a.archive)))?;
    output::leading_slash_note(&a.paths, a.quiet.quiet);
    done(&report, shown)
}

pub fn rm(a: RmArgs) -> Result<Outcome> {
    use std::os::unix::ffi::OsStringExt;
    in_place(&a.archive, "rm")?;
    let paths: Vec<Vec<u8>> = a.paths.into_iter().map(|p| p.into_vec()).collect();
    let options = UpdateOptions::new().wait(a.lock.wait).label(a.label.message.clone().unwrap_or_default());
    let options = signing::update_options(options, &a.sign)?;
    let (options, verbose) = logged(options, a.verbose.verbose);
    let report = open(&a.unlock, &a.archive, options)?
        .remove(&paths)
        .with_context(|| format!("removing from {}", Quoted::path(&a.archive)))?;
    done(&report, Shown { display: None, verbose })
}
