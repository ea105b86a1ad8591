//! `create`: a new archive from paths or a tar stream, to a file (an
//! unnamed inode, named when complete), to stdout or to an object.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::create::AtomicFile;
use revault_lockbox_api::create::Selection;
use revault_lockbox_api::create::{write_archive, CreateReport};
use revault_lockbox_api::error::KdfError;
use revault_lockbox_api::{create_archive, CreateOptions, EntryLog, KdfParams, KeySet, Password, Quoted};

use super::Outcome;
use crate::exit::UsageError;
use crate::flags::CreateArgs;
use crate::location::{create_object, ArchiveLocation};
use crate::output::verbose::Verbose;
use crate::progress::{self, input_bytes};
use crate::{keys, output, select, signing, source};

pub fn run(a: CreateArgs) -> Result<Outcome> {
    let kdf = kdf_params(&a)?;
    let to_stdout = source::is_stdout(&a.output, "an archive")?;
    if to_stdout && a.format.json {
        return Err(UsageError("--json writes to stdout, which `-o -` uses for the archive".into()).into());
    }
    let streamed = to_stdout || matches!(ArchiveLocation::parse(&a.output)?, ArchiveLocation::Object(_));
    if streamed && a.recovery.recovery.is_some() {
        return Err(UsageError(
            "--recovery needs the archive as a file: a recovery record is computed by reading the session \
             back, and an archive streamed to stdout or uploaded to an object store is not read back"
                .into(),
        )
        .into());
    }
    // An existing archive and missing inputs are reported before the
    // password is asked for.
    if !to_stdout {
        AtomicFile::refuse_existing(&a.output, a.overwrite)
            .with_context(|| format!("creating {}", Quoted::path(&a.output)))?;
    }
    let tar = a.from_tar.as_deref().map(|p| source::open_input(p, "--from-tar")).transpose()?;
    let selection = select::selection(&a.walk, Some(&a.filters))?;
    let directory = &a.input.directory;
    // As GNU tar: a PATH that does not exist is warned about, the others
    // are archived, and the exit code is 2.
    let (paths, missing) = existing_paths(select::paths(&a.walk, &a.paths)?, directory, a.walk.dereference)?;
    output::missing_paths(&missing, a.format.json)?;
    let missing = (!missing.is_empty()).then_some(Outcome::MissingInput);
    if a.dry_run.dry_run {
        return Ok(missing.unwrap_or(dry_run(&a, tar, &paths, selection)?));
    }
    // An existing object is refused before the password is asked for.
    let object = match ArchiveLocation::parse(&a.output)? {
        ArchiveLocation::Object(location) => {
            Some((create_object(&location, &a.s3, a.overwrite, a.input.profile)?, location))
        }
        ArchiveLocation::Local(_) => None,
    };
    // A bad signing key is refused before the password is asked for.
    let signing_keys = signing::signing_keys(&a.sign)?;
    let lock = keys::lock(&a.lock, &a.recipients, &Quoted::path(&a.output).to_string())?;
    let verbose = Verbose::start(a.verbose.verbose, to_stdout || a.format.json);
    let mut options = options(&a, kdf, selection, verbose.as_ref());
    if streamed && options.tuning().recovery_percent != 0 {
        // The profile's record, not asked for by name: the archive still
        // goes where it was told, without one.
        output::warn(format_args!(
            "no recovery record: the archive is streamed, not read back (the profile's {} %)",
            options.tuning().recovery_percent
        ));
        options = options.recovery(0);
    }
    for key in signing_keys {
        options = options.sign(key);
    }
    // A tar stream's size is not known before it is read: no progress bar.
    let roots: Vec<PathBuf> = paths.iter().map(|p| directory.join(p)).collect();
    let follow = a.walk.dereference;
    let display = if tar.is_some() {
        None
    } else {
        progress::maybe_start(a.quiet.quiet || verbose.is_some(), move || input_bytes(&roots, follow))
    };
    if let Some((counters, _)) = &display {
        options = options.progress(Arc::clone(counters));
    }
    let creating = || format!("creating {}", Quoted::path(&a.output));
    let report = match (tar, object, to_stdout) {
        (tar, Some((writer, location)), _) => {
            // The upload completes (the object appears) only after the whole
            // archive was written; on an error the writer is dropped and aborts.
            let creating = || format!("creating {location}");
            let (writer, report) = match tar {
                Some(tar) => revault_lockbox_api::tar::write_archive(writer, tar, lock, options),
                None => write_archive(writer, directory, &paths, lock, options),
            }
            .with_context(creating)?;
            // The last parts may take a while to go up: the bar says so.
            if let Some((_, display)) = &display {
                display.note(format!("uploading {location}"));
            }
            writer.finish().with_context(creating)?;
            if let Some((_, display)) = &display {
                display.note(format!("uploaded to {location}"));
            }
            report
        }
        (Some(tar), None, true) => {
            stream_to_stdout(|out| revault_lockbox_api::tar::write_archive(out, tar, lock, options))?
        }
        (Some(tar), None, false) => {
            revault_lockbox_api::tar::create_archive(&a.output, tar, lock, options).with_context(creating)?
        }
        (None, None, true) => {
            // `create -o - . > x.lbox` must not archive x.lbox into itself.
            if let Ok(md) = std::fs::metadata("/dev/stdout") {
                use std::os::unix::fs::MetadataExt;
                if md.is_file() {
                    options = options.skip_file(md.dev(), md.ino());
                }
            }
            stream_to_stdout(|out| write_archive(out, directory, &paths, lock, options))?
        }
        (None, None, false) => {
            create_archive(&a.output, directory, &paths, lock, options).with_context(creating)?
        }
    };
    if let Some((_, display)) = display {
        display.finish();
    }
    if let Some(log) = &verbose {
        log.finish()?;
    }
    // After the work, so that a failure stays one line.
    output::leading_slash_note(&paths, a.quiet.quiet);
    output::created(&a.output, &report, a.format.json)?;
    // As tar: the archive is valid, but misses or holds a changed copy of
    // something asked for.
    Ok(missing.unwrap_or(if report.has_failures() { Outcome::Incomplete } else { Outcome::Success }))
}

/// A PATH that could not be found, and why.
type Missing = (PathBuf, io::Error);

/// `paths` split into those that exist under `directory` and those that
/// do not (with why); none existing is refused in one line.
fn existing_paths(
    paths: Vec<PathBuf>,
    directory: &Path,
    follow: bool,
) -> Result<(Vec<PathBuf>, Vec<Missing>)> {
    let (mut found, mut missing) = (Vec::with_capacity(paths.len()), Vec::new());
    for p in paths {
        let full = if directory == Path::new(".") { p.clone() } else { directory.join(&p) };
        let exists = if follow { std::fs::metadata(&full) } else { std::fs::symlink_metadata(&full) };
        match exists {
            Ok(_) => found.push(p),
            Err(e) => missing.push((full, e)),
        }
    }
    if found.is_empty() && !missing.is_empty() {
        if let [(path, err)] = &missing[..] {
            return Err(UsageError(format!("cannot archive {}: {err}", Quoted::path(path))).into());
        }
        let names: Vec<String> = missing.iter().map(|(p, _)| Quoted::path(p).to_string()).collect();
        return Err(UsageError(format!("cannot archive {}: none of them exists", names.join(", "))).into());
    }
    Ok((found, missing))
}

/// The options of `a`, telling `verbose` of each entry when given.
fn options(
    a: &CreateArgs,
    kdf: KdfParams,
    selection: Selection,
    verbose: Option<&Arc<Verbose>>,
) -> CreateOptions {
    let mut options = CreateOptions::new()
        .profile(a.input.profile)
        .kdf(kdf)
        .dereference(a.walk.dereference)
        .strict(a.walk.strict)
        .overwrite(a.overwrite)
        .xattrs(a.walk.xattrs)
        .label(a.label.message.clone().unwrap_or_default())
        .selection(selection);
    if let Some(level) = a.input.level {
        options = options.zstd_level(level);
    }
    if let Some(threads) = a.input.threads.count() {
        options = options.threads(threads);
    }
    if let Some(percent) = a.recovery.recovery {
        options = options.recovery(percent);
    }
    if let Some(log) = verbose {
        options = options.log(Arc::clone(log) as Arc<dyn EntryLog>);
    }
    options
}

/// `create -n`: the whole walk, read and compressed as for real, into
/// nothing: with `-v` what would be stored, the warnings, a summary. No
/// password is asked (the throwaway key protects nothing, hence the
/// cheapest KDF) and nothing is written.
fn dry_run(
    a: &CreateArgs,
    tar: Option<Box<dyn io::Read>>,
    paths: &[PathBuf],
    selection: Selection,
) -> Result<Outcome> {
    let verbose = Verbose::start(a.verbose.verbose, a.format.json);
    // Written to nothing, so nothing to read back: no recovery record.
    let options = options(a, KdfParams::INSECURE_FOR_TESTS, selection, verbose.as_ref()).recovery(0);
    let keys = KeySet::new().password(&Password::from("dry run: discarded"));
    let walking = || format!("trying out {}", Quoted::path(&a.output));
    let report = match tar {
        Some(tar) => revault_lockbox_api::tar::write_archive(io::sink(), tar, keys, options),
        None => write_archive(io::sink(), &a.input.directory, paths, keys, options),
    }
    .with_context(walking)?
    .1;
    if let Some(log) = &verbose {
        log.finish()?;
    }
    output::leading_slash_note(paths, a.quiet.quiet);
    output::dry_run_created(&a.output, &report, a.format.json)?;
    Ok(if report.has_failures() { Outcome::Incomplete } else { Outcome::Success })
}

type Stdout = BufWriter<io::StdoutLock<'static>>;

/// Runs `write` on buffered stdout and flushes it.
fn stream_to_stdout(
    write: impl FnOnce(Stdout) -> revault_lockbox_api::Result<(Stdout, CreateReport)>,
) -> Result<CreateReport> {
    let out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let (out, report) = write(out).context("writing the archive to stdout")?;
    let mut out = out.into_inner().map_err(|e| e.into_error()).context("writing the archive to stdout")?;
    out.flush().context("writing the archive to stdout")?;
    Ok(report)
}

/// The Argon2id cost: defaults, overridden flag by flag, within what
/// readers accept (an archive above the limits could never be opened).
fn kdf_params(a: &CreateArgs) -> Result<KdfParams> {
    let d = KdfParams::default();
    // The library owns the limits and their message.
    let too_big = || UsageError(format!("KDF cost {}", KdfError::AboveLimits));
    let m_kib = match a.kdf_memory {
        Some(mib) => mib.checked_mul(1024).ok_or_else(too_big)?,
        None => d.m_kib,
    };
    let params = KdfParams { m_kib, t: a.kdf_passes.unwrap_or(d.t), p: a.kdf_lanes.unwrap_or(d.p) };
    if let Err(KdfError::AboveLimits) = params.check() {
        return Err(too_big().into());
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::flags::{Cli, Command};

    /// `create --threads N` sets the workers of the options it hands the
    /// library; without it they are the profile's.
    #[test]
    fn threads_reach_the_create_options() {
        let profile = revault_lockbox_api::WorkloadProfile::Balanced.create_tuning();
        let cases: [(&[&str], usize); 3] =
            [(&["--threads", "3"], 3), (&["--threads", "1"], 1), (&[], profile.threads)];
        for (flags, expected) in cases {
            let args = [&["lockbox", "create"][..], flags, &["-o", "a.lbox", "p"]].concat();
            let Command::Create(a) = Cli::parse_from(args).command else { panic!("not create") };
            let options = options(&a, KdfParams::INSECURE_FOR_TESTS, Selection::new(), None);
            assert_eq!(options.tuning().threads, expected, "{flags:?}");
        }
    }
}
