//! The commands that change an archive in place: `add`, `update`, `rm`,
//! `compact`, `repair`. Each holds the archive's writer lock; `--wait`
//! waits for another writer instead of failing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::{
    compact_archive, repair_archive, ArchiveUpdater, Quoted, UpdateOptions, UpdateReport,
};

use crate::commands::{filter_path, input_bytes};
use crate::progress::{self, Job};
use crate::{keys, AddArgs, AppendArgs, GlobalArgs, MaintainArgs, RmArgs, UpdateArgs};

/// The options of `add` and `update`, and a progress display when asked.
fn options(g: &GlobalArgs, a: &AppendArgs) -> (UpdateOptions, Option<progress::Display>) {
    let mut options = UpdateOptions::new().profile(a.input.profile).wait(a.lock.wait);
    if let Some(level) = a.input.level {
        options = options.zstd_level(level);
    }
    let roots: Vec<PathBuf> = a.paths.iter().map(|p| a.input.directory.join(p)).collect();
    let display =
        progress::maybe_start(g.quiet, Job::Create, move || input_bytes(&roots, false)).map(|(c, d)| {
            options = options.clone().progress(Arc::clone(&c));
            d
        });
    (options, display)
}

fn open(g: &GlobalArgs, archive: &std::path::Path, options: UpdateOptions) -> Result<ArchiveUpdater> {
    keys::with_key(g, |key| ArchiveUpdater::open(archive, key, options))
        .with_context(|| format!("opening {} to change it", Quoted::path(archive)))
}

fn done(report: &UpdateReport, display: Option<progress::Display>) -> Result<ExitCode> {
    if let Some(display) = display {
        display.finish();
    }
    if report.torn_tail_cut > 0 {
        eprintln!("lockbox: cut off {} bytes an interrupted change had left", report.torn_tail_cut);
    }
    for w in &report.warnings {
        eprintln!("lockbox: {w}");
    }
    // As tar and `create`: the change is committed, but misses or holds a
    // changed copy of something asked for.
    if report.warnings.iter().any(|w| w.is_failure()) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn add(g: &GlobalArgs, a: AddArgs) -> Result<ExitCode> {
    let a = a.append;
    let (options, display) = options(g, &a);
    let report = open(g, &a.archive, options)?
        .add(&a.input.directory, &a.paths)
        .with_context(|| format!("adding to {}", Quoted::path(&a.archive)))?;
    done(&report, display)
}

pub fn update(g: &GlobalArgs, u: UpdateArgs) -> Result<ExitCode> {
    let a = u.append;
    let (options, display) = options(g, &a);
    let report = open(g, &a.archive, options)?
        .update(&a.input.directory, &a.paths, u.delete_missing)
        .with_context(|| format!("updating {}", Quoted::path(&a.archive)))?;
    done(&report, display)
}

pub fn rm(g: &GlobalArgs, a: RmArgs) -> Result<ExitCode> {
    use std::os::unix::ffi::OsStringExt;
    let paths: Vec<Vec<u8>> = a.paths.into_iter().map(|p| filter_path(p.into_vec())).collect();
    let report = open(g, &a.archive, UpdateOptions::new().wait(a.lock.wait))?
        .remove(&paths)
        .with_context(|| format!("removing from {}", Quoted::path(&a.archive)))?;
    done(&report, None)
}

pub fn compact(g: &GlobalArgs, a: MaintainArgs) -> Result<ExitCode> {
    let options = UpdateOptions::new().wait(a.lock.wait);
    let before = std::fs::metadata(&a.archive).map(|m| m.len()).unwrap_or(0);
    let after = keys::with_key(g, |key| compact_archive(&a.archive, key, options))
        .with_context(|| format!("compacting {}", Quoted::path(&a.archive)))?;
    if !g.quiet {
        eprintln!("{}: {before} bytes before, {after} after", Quoted::path(&a.archive));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn repair(g: &GlobalArgs, a: MaintainArgs) -> Result<ExitCode> {
    let cut = keys::with_key(g, |key| repair_archive(&a.archive, key, a.lock.wait))
        .with_context(|| format!("repairing {}", Quoted::path(&a.archive)))?;
    if !g.quiet {
        match cut {
            0 => eprintln!("{}: whole, nothing to cut", Quoted::path(&a.archive)),
            n => eprintln!("{}: cut off a torn tail of {n} bytes", Quoted::path(&a.archive)),
        }
    }
    Ok(ExitCode::SUCCESS)
}
