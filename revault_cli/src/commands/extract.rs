//! `extract`: restore entries under a directory, all or some.

use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::read::ExistingFiles;
use revault_lockbox_api::{EntryLog, ExtractOptions, Quoted, WorkloadProfile};

use super::{open_archive, open_or_salvage, OnDamage, Outcome, Readable, Records};
use crate::exit::UsageError;
use crate::flags::ExtractArgs;
use crate::output::verbose::Verbose;
use crate::progress;
use crate::progress::Opening;
use crate::{output, select};

pub fn run(a: ExtractArgs) -> Result<Outcome> {
    // Refused before anything is read or asked for, as GNU tar would fail
    // at its first chown.
    let root = rustix::process::geteuid().is_root();
    if a.same_owner && !root {
        return Err(
            UsageError("--same-owner needs root: only root may give files to other users".into()).into()
        );
    }
    let members = select::members(&a.members, &a.paths)?;
    raise_open_file_limit();
    let profile = a.profile.unwrap_or(WorkloadProfile::ExtractMany);
    let threads = a.threads.count();
    if a.to_stdout {
        let (archive, name) = open_archive(&a.archive, &a.read, profile, threads, Records::Repair)?;
        super::write_contents(&archive, &name, &members)?;
        return Ok(Outcome::Success);
    }
    let existing = match (a.overwrite, a.existing.skip_old_files, a.existing.keep_newer_files) {
        (true, _, _) => ExistingFiles::Replace,
        (_, true, _) => ExistingFiles::Skip,
        (_, _, true) => ExistingFiles::KeepNewer,
        _ => ExistingFiles::Refuse,
    };
    let mut options = ExtractOptions::new()
        .existing(existing)
        .strip_components(a.existing.strip_components)
        .dry_run(a.dry_run.dry_run)
        .sync(!a.no_sync)
        .keep_going(a.keep_going)
        // As GNU tar: -p is the superuser's default.
        .same_permissions(a.same_permissions || (root && !a.no_same_permissions))
        .same_owner(a.same_owner || (root && !a.no_same_owner))
        .numeric_owner(a.numeric_owner)
        .xattrs(a.xattrs)
        .members(members);
    if let Some(limit) = a.max_implicit_dirs {
        options = options.implicit_dirs(limit);
    }
    let verbose = Verbose::start(a.verbose.verbose, a.format.json);
    if let Some(log) = &verbose {
        options = options.log(Arc::clone(log) as Arc<dyn EntryLog>);
    }
    // Only --keep-going salvages: without it, damage stops the extraction.
    let opening = Opening::unless(a.quiet.quiet);
    let on_damage = OnDamage { salvage: a.keep_going, records: Records::Repair };
    let (readable, name, _) =
        open_or_salvage(&a.archive, &a.read, profile, threads, on_damage, None, opening)?;
    // All of the content for a whole extraction; at most that for a part.
    let total = match &readable {
        Readable::Indexed(archive) => archive.content_bytes(),
        Readable::Salvaged(..) => 0,
    };
    let quiet = a.quiet.quiet || verbose.is_some() || a.dry_run.dry_run;
    let display = progress::maybe_start(quiet, move || total);
    if let Some((counters, _)) = &display {
        options = options.progress(Arc::clone(counters));
    }
    // A missing DIR is made (as restic does), once the archive opened: a
    // wrong password leaves nothing behind; a dry run makes nothing.
    if !a.dry_run.dry_run && !a.directory.exists() {
        std::fs::create_dir_all(&a.directory)
            .with_context(|| format!("creating the directory {}", Quoted::path(&a.directory)))?;
    }
    let report = match &readable {
        Readable::Indexed(archive) => archive.extract(&a.directory, &options),
        Readable::Salvaged(salvage, _) => salvage.extract(&a.directory, &options),
    }
    .with_context(|| format!("extracting {} into {}", name, Quoted::path(&a.directory)))?;
    if let Some((_, display)) = display {
        display.finish();
    }
    if let Some(log) = &verbose {
        log.finish()?;
    }
    output::extracted(&name, &report, a.format.json)?;
    if a.dry_run.dry_run && !a.format.json {
        let would = output::count(report.entries, "entry", "entries");
        eprintln!("dry run: {would} would be restored from {name}; nothing written");
    }
    Ok(if report.damaged.is_empty() && report.lost.is_empty() { Outcome::Success } else { Outcome::Damaged })
}

/// Lifts the soft open-file limit to the hard one: extraction keeps each
/// file of a sync batch open until the batch is synced, and sizes its
/// batches to the limit it finds. Failing leaves smaller batches, no error.
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let _ = setrlimit(Resource::Nofile, Rlimit { current: limit.maximum, maximum: limit.maximum });
    }
}
