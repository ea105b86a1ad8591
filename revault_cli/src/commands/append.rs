//! `add`, `update` and `rm`: one write session appended to an archive in
//! place, through the library's updater (they share opening it, its
//! options and what its report shows). Each holds the archive's writer
//! lock; `--wait` waits for another writer instead of failing; `-n` does
//! the whole change into nothing and leaves the archive as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::update::UpdateReport;
use revault_lockbox_api::{ArchiveUpdater, EntryLog, Error, Progress, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::exit::library_error;
use crate::flags::{AddArgs, AppendArgs, RmArgs, UnlockArgs, UpdateArgs};
use crate::output::verbose::Verbose;
use crate::output::Change;
use crate::progress::{self, input_bytes};
use crate::{keys, output, select, signing};

/// What shows an append's work: progress counters (their display starts
/// once the archive is open) or `-v` lines.
struct Shown {
    counters: Option<Arc<Progress>>,
    verbose: Option<Arc<Verbose>>,
}

/// The options of `add` and `update`, and what shows their work.
fn options(a: &AppendArgs) -> Result<(UpdateOptions, Shown)> {
    let label = a.label.message.clone().unwrap_or_default();
    let options = UpdateOptions::new()
        .profile(a.input.profile)
        .wait(a.lock.wait)
        .label(label)
        .dry_run(a.dry_run.dry_run)
        .selection(select::selection(&a.walk, None)?)
        .dereference(a.walk.dereference)
        .xattrs(a.walk.xattrs)
        .strict(a.walk.strict)
        .recorded_rules(!a.no_recorded_rules);
    let mut options = signing::update_options(options, &a.sign)?;
    if let Some(level) = a.input.level {
        options = options.zstd_level(level);
    }
    if let Some(threads) = a.input.threads.count() {
        options = options.threads(threads);
    }
    if let Some(percent) = a.recovery.recovery {
        options = options.recovery(percent);
    }
    let quiet = a.quiet.quiet || a.verbose.verbose > 0;
    Ok(shown(options, a.verbose.verbose, a.format.json, quiet))
}

/// `options` telling `-v`'s lines of each entry (on stderr under
/// `--json`) and counting progress, as asked.
fn shown(options: UpdateOptions, count: u8, json: bool, quiet: bool) -> (UpdateOptions, Shown) {
    let verbose = Verbose::start(count, json);
    let mut options = match &verbose {
        Some(log) => options.log(Arc::clone(log) as Arc<dyn EntryLog>),
        None => options,
    };
    let counters = progress::counters(quiet);
    if let Some(c) = &counters {
        options = options.progress(Arc::clone(c));
    }
    (options, Shown { counters, verbose })
}

/// The archive opened for a change; `signs` says whether the change is
/// signed (an unsigned change of a signed archive is warned of).
fn open(unlock: &UnlockArgs, archive: &Path, options: UpdateOptions, signs: bool) -> Result<ArchiveUpdater> {
    let options = options.kdf_budget(unlock.kdf_budget());
    let name = Quoted::path(archive).to_string();
    let opened = keys::with_key(unlock, keys::Target::file(archive, &name), |key| {
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
    })?;
    if opened.is_signed() && !signs {
        output::warn(format_args!(
            "{name} is signed and this change is not: readers that trust only its signers (--signer) \
             will refuse it; give --sign KEY to sign it"
        ));
    }
    Ok(opened)
}

/// Runs `change` on the opened archive with the progress display of
/// `shown` (its total from the input tree under `roots`, when given, links
/// followed with `follow`), then reports what it did.
fn run(
    opened: ArchiveUpdater,
    shown: Shown,
    roots: Option<Vec<PathBuf>>,
    follow: bool,
    change: impl FnOnce(ArchiveUpdater) -> Result<UpdateReport>,
    what: Change<'_>,
) -> Result<Outcome> {
    let display = progress::show(shown.counters.as_ref(), roots.map(|r| move || input_bytes(&r, follow)));
    let report = change(opened)?;
    if let Some(display) = display {
        display.finish();
    }
    if let Some(log) = shown.verbose {
        log.finish()?;
    }
    output::updated(&what, &report)?;
    // As tar and `create`: the change is committed, but misses or holds a
    // changed copy of something asked for.
    Ok(if report.warnings.iter().any(|w| w.is_failure()) { Outcome::Incomplete } else { Outcome::Success })
}

/// `add` or `update` (`command`) of `paths` (PATHs and `-T`'s):
/// `change` run on the archive of `a`.
fn appended(
    a: &AppendArgs,
    paths: &[PathBuf],
    command: &'static str,
    change: impl FnOnce(ArchiveUpdater) -> Result<UpdateReport>,
) -> Result<Outcome> {
    in_place(&a.archive, command)?;
    let (options, shown) = options(a)?;
    let opened = open(&a.unlock, &a.archive, options, !a.sign.key.keys.is_empty())?;
    // `add` stores every input, so their bytes are its total; `update`
    // stores only what changed, which the walk finds as it goes: no total
    // (a bar of the whole tree would sit near 0 % with an ETA in weeks).
    let roots = (command == "add").then(|| paths.iter().map(|p| a.input.directory.join(p)).collect());
    let what = Change {
        command,
        archive: &a.archive,
        json: a.format.json,
        dry_run: a.dry_run.dry_run,
        quiet: a.quiet.quiet,
    };
    let outcome = run(opened, shown, roots, a.walk.dereference, change, what)?;
    output::leading_slash_note(paths, a.quiet.quiet);
    Ok(outcome)
}

pub fn add(a: AddArgs) -> Result<Outcome> {
    let a = a.append;
    let paths = select::paths(&a.walk, &a.paths)?;
    let adding = || format!("adding to {}", Quoted::path(&a.archive));
    appended(&a, &paths, "add", |u| u.add(&a.input.directory, &paths).with_context(adding))
}

pub fn update(u: UpdateArgs) -> Result<Outcome> {
    let a = u.append;
    let paths = select::paths(&a.walk, &a.paths)?;
    let updating = || format!("updating {}", Quoted::path(&a.archive));
    appended(&a, &paths, "update", |up| {
        up.update(&a.input.directory, &paths, u.delete_missing).with_context(updating)
    })
}

pub fn rm(a: RmArgs) -> Result<Outcome> {
    use std::os::unix::ffi::OsStringExt;
    in_place(&a.archive, "rm")?;
    let paths: Vec<Vec<u8>> = a.paths.into_iter().map(|p| p.into_vec()).collect();
    let options = UpdateOptions::new()
        .wait(a.lock.wait)
        .label(a.label.message.clone().unwrap_or_default())
        .dry_run(a.dry_run.dry_run);
    let mut options = signing::update_options(options, &a.sign)?;
    if let Some(threads) = a.threads.count() {
        options = options.threads(threads);
    }
    if let Some(percent) = a.recovery.recovery {
        options = options.recovery(percent);
    }
    let quiet = a.quiet.quiet || a.verbose.verbose > 0;
    let (options, shown) = shown(options, a.verbose.verbose, a.format.json, quiet);
    let opened = open(&a.unlock, &a.archive, options, !a.sign.key.keys.is_empty())?;
    let what = Change {
        command: "rm",
        archive: &a.archive,
        json: a.format.json,
        dry_run: a.dry_run.dry_run,
        quiet: a.quiet.quiet,
    };
    run(
        opened,
        shown,
        None,
        false,
        |u| u.remove(&paths).with_context(|| format!("removing from {}", Quoted::path(&a.archive))),
        what,
    )
}
