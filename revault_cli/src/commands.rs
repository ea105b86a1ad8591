//! One function per subcommand: gather the password and options, call the
//! library, print what it returns.

use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::limits::{MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES};
use revault_lockbox_api::{
    create_archive, create_archive_from_tar, write_archive, write_archive_from_tar, Archive, CreateOptions,
    CreateReport, Error, ExtractOptions, KdfParams, OpenOptions, Quoted, ReadAt, WorkloadProfile,
};

use crate::location::{create_object, ArchiveLocation};
use crate::progress::{self, Job};
use crate::{json, keys, select, source};
use crate::{
    listing, CatArgs, CreateArgs, ExtractArgs, GlobalArgs, InfoArgs, KeygenArgs, ListArgs, UsageError,
    VerifyArgs, EXIT_AUTH,
};

pub fn create(g: &GlobalArgs, a: CreateArgs) -> Result<ExitCode> {
    let kdf = kdf_params(&a)?;
    let to_stdout = source::is_stdout(&a.output, "an archive")?;
    if to_stdout && a.json {
        return Err(UsageError("--json writes to stdout, which `-o -` uses for the archive".into()).into());
    }
    // An existing archive and missing inputs are reported before the
    // password is asked for.
    if !to_stdout && !a.overwrite && std::fs::symlink_metadata(&a.output).is_ok() {
        return Err(Error::AlreadyExists { path: a.output.clone() })
            .with_context(|| format!("creating {}", Quoted::path(&a.output)));
    }
    let tar = a.from_tar.as_deref().map(|p| source::open_input(p, "--from-tar")).transpose()?;
    let selection = select::selection(&a.select)?;
    let paths = select::paths(&a.select, &a.paths)?;
    let directory = &a.input.directory;
    for p in &paths {
        let full = if directory == Path::new(".") { p.clone() } else { directory.join(p) };
        let exists = if a.dereference { std::fs::metadata(&full) } else { std::fs::symlink_metadata(&full) };
        exists.with_context(|| format!("cannot archive {}", Quoted::path(&full)))?;
    }
    // An existing object is refused before the password is asked for.
    let object = match ArchiveLocation::parse(&a.output)? {
        ArchiveLocation::Object(location) => {
            Some((create_object(&location, &g.s3, a.overwrite, a.input.profile)?, location))
        }
        ArchiveLocation::Local(_) => None,
    };
    let lock = keys::lock(g, &a)?;
    let mut options = CreateOptions::new()
        .profile(a.input.profile)
        .kdf(kdf)
        .dereference(a.dereference)
        .strict(a.strict)
        .overwrite(a.overwrite)
        .xattrs(a.xattrs)
        .selection(selection);
    if let Some(level) = a.input.level {
        options = options.zstd_level(level);
    }
    // A tar stream's size is not known before it is read: no progress bar.
    let roots: Vec<PathBuf> = paths.iter().map(|p| directory.join(p)).collect();
    let follow = a.dereference;
    let display = if tar.is_some() {
        None
    } else {
        progress::maybe_start(g.quiet, Job::Create, move || input_bytes(&roots, follow))
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
                Some(tar) => write_archive_from_tar(tar, writer, lock, options),
                None => write_archive(writer, directory, &paths, lock, options),
            }
            .with_context(creating)?;
            writer.finish().with_context(creating)?;
            report
        }
        (Some(tar), None, true) => stream_to_stdout(|out| write_archive_from_tar(tar, out, lock, options))?,
        (Some(tar), None, false) => {
            create_archive_from_tar(&a.output, tar, lock, options).with_context(creating)?
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
    if a.json {
        let mut lines = json::Lines::stdout();
        for w in &report.warnings {
            lines.write(&json::warning(&w.to_string())).context("writing to stdout")?;
        }
        lines.write(&json::create_summary(&a.output, &report)).context("writing to stdout")?;
        lines.flush().context("writing to stdout")?;
    } else {
        for w in &report.warnings {
            eprintln!("lockbox: {w}");
        }
    }
    // As tar: the archive is valid, but misses or holds a changed copy of
    // something asked for.
    if report.has_failures() {
        if !a.json {
            eprintln!(
                "lockbox: creating {}: some files were skipped or changed while read",
                Quoted::path(&a.output)
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
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
    let too_big = || {
        UsageError(format!(
            "KDF cost above what readers accept: at most {} MiB, {MAX_KDF_PASSES} passes, {MAX_KDF_LANES} lanes",
            MAX_KDF_MEMORY_KIB / 1024
        ))
    };
    let m_kib = match a.kdf_memory {
        Some(mib) => mib.checked_mul(1024).ok_or_else(too_big)?,
        None => d.m_kib,
    };
    let params = KdfParams { m_kib, t: a.kdf_passes.unwrap_or(d.t), p: a.kdf_lanes.unwrap_or(d.p) };
    if !params.within_limits() {
        return Err(too_big().into());
    }
    Ok(params)
}

/// Total size of the regular files under `roots`, for the progress bar.
/// Unreadable parts count as nothing: the create itself reports them.
/// `follow` (`-h`): through symbolic links, each directory once (a loop
/// must not keep the estimate going).
pub(crate) fn input_bytes(roots: &[PathBuf], follow: bool) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut stack: Vec<PathBuf> = roots.to_vec();
    let mut seen_dirs = std::collections::HashSet::new();
    let mut total = 0u64;
    while let Some(path) = stack.pop() {
        let md = if follow { std::fs::metadata(&path) } else { std::fs::symlink_metadata(&path) };
        let Ok(md) = md else { continue };
        if md.is_file() {
            total += md.len();
        } else if md.is_dir() && (!follow || seen_dirs.insert((md.dev(), md.ino()))) {
            if let Ok(dir) = std::fs::read_dir(&path) {
                stack.extend(dir.filter_map(|d| d.ok().map(|d| d.path())));
            }
        }
    }
    total
}

/// Opens the archive argument (a file, `-` or `s3://BUCKET/KEY`) with the
/// key the global options give; returns it and how messages name it.
pub(crate) fn open_archive(
    arg: &Path,
    g: &GlobalArgs,
    profile: WorkloadProfile,
) -> Result<(Archive<Box<dyn ReadAt>>, String)> {
    let (src, name): (Box<dyn ReadAt>, String) = match ArchiveLocation::parse(arg)? {
        location @ ArchiveLocation::Object(_) => {
            (location.open_reader(&g.s3)?, Quoted::path(arg).to_string())
        }
        ArchiveLocation::Local(_) => {
            let input = source::open(arg)?;
            (Box::new(input.file), input.name)
        }
    };
    let options = OpenOptions::new().profile(profile);
    // A spooled copy may be deleted now: the open file keeps its bytes.
    let archive = keys::with_key(g, |key| Archive::open_with(src, key, options))
        .with_context(|| format!("opening {name}"))?;
    Ok((archive, name))
}

pub fn list(g: &GlobalArgs, a: ListArgs) -> Result<ExitCode> {
    let (archive, name) = open_archive(&a.archive, g, WorkloadProfile::Balanced)?;
    let reading = || format!("reading the index of {}", name);
    if a.json {
        let mut lines = json::Lines::stdout();
        let mut counts = json::ListCounts::default();
        for e in archive.entries().with_context(reading)? {
            let e = e.with_context(reading)?;
            counts.add(&e);
            lines.write(&json::entry(&e)).context("writing to stdout")?;
        }
        lines.write(&counts.summary()).and_then(|()| lines.flush()).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for e in archive.entries().with_context(reading)? {
        let e = e.with_context(reading)?;
        let e = &e;
        if a.long {
            listing::write_long(&mut out, e, a.null)
        } else {
            listing::write_name(&mut out, &e.path, a.null)
        }
        .and_then(|()| out.write_all(if a.null { b"\0" } else { b"\n" }))
        .context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn extract(g: &GlobalArgs, a: ExtractArgs) -> Result<ExitCode> {
    // Refused before anything is read or asked for, as GNU tar would fail
    // at its first chown.
    let root = rustix::process::geteuid().is_root();
    if a.same_owner && !root {
        return Err(
            UsageError("--same-owner needs root: only root may give files to other users".into()).into()
        );
    }
    raise_open_file_limit();
    let profile = a.profile.unwrap_or(WorkloadProfile::ExtractMany);
    let (archive, name) = open_archive(&a.archive, g, profile)?;
    let only: Vec<Vec<u8>> = a.paths.into_iter().map(|p| filter_path(p.into_vec())).collect();
    let mut options = ExtractOptions::new()
        .overwrite(a.overwrite)
        .sync(!a.no_sync)
        .keep_going(a.keep_going)
        .same_permissions(a.same_permissions)
        .same_owner(a.same_owner || (root && !a.no_same_owner))
        .numeric_owner(a.numeric_owner)
        .xattrs(a.xattrs)
        .only(only);
    // All of the content for a whole extraction; at most that for a part.
    let total = archive.content_bytes();
    let display = progress::maybe_start(g.quiet, Job::Extract, move || total);
    if let Some((counters, _)) = &display {
        options = options.progress(Arc::clone(counters));
    }
    let report = archive
        .extract(&a.directory, &options)
        .with_context(|| format!("extracting {} into {}", name, Quoted::path(&a.directory)))?;
    if let Some((_, display)) = display {
        display.finish();
    }
    if a.json {
        let mut lines = json::Lines::stdout();
        for d in &report.damaged {
            lines.write(&json::damaged(d)).context("writing to stdout")?;
        }
        for w in &report.warnings {
            lines.write(&json::extract_warning(w)).context("writing to stdout")?;
        }
        let summary = json::extract_summary(report.entries, report.bytes, report.damaged.len());
        lines.write(&summary).and_then(|()| lines.flush()).context("writing to stdout")?;
    }
    if !a.json {
        for w in &report.warnings {
            eprintln!("lockbox: warning: {}: {}", w.path, w.reason);
        }
    }
    if report.damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    if !a.json {
        for d in &report.damaged {
            eprintln!("lockbox: damaged, not restored: {}: {}", d.path, d.reason);
        }
    }
    eprintln!(
        "lockbox: extracting {}: {} damaged entries not restored, {} restored",
        name,
        report.damaged.len(),
        report.entries
    );
    Ok(ExitCode::from(EXIT_AUTH))
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

/// A PATH argument as the stored paths spell it: no leading `./`, no
/// trailing `/`.
pub(crate) fn filter_path(mut p: Vec<u8>) -> Vec<u8> {
    while p.len() > 1 && p.ends_with(b"/") {
        p.pop();
    }
    while p.starts_with(b"./") {
        p.drain(..2);
    }
    p
}

pub fn cat(g: &GlobalArgs, a: CatArgs) -> Result<ExitCode> {
    let (archive, name) = open_archive(&a.archive, g, WorkloadProfile::RandomRead)?;
    let path = a.path.into_vec();
    let what = || format!("reading {} from {}", Quoted::bytes(&path), name);
    let mut reader = archive.open_file(&path).with_context(what)?;
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A checksum mismatch arrives as an `io::Error` wrapping the
            // library's error; `crate::library_error` finds it there.
            Err(e) => return Err(e).with_context(what),
        };
        out.write_all(&buf[..n]).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn info(g: &GlobalArgs, a: InfoArgs) -> Result<ExitCode> {
    let (archive, name) = open_archive(&a.archive, g, WorkloadProfile::Balanced)?;
    let info = archive.info().with_context(|| format!("reading {}", name))?;
    if a.json {
        let mut lines = json::Lines::stdout();
        lines.write(&json::info_summary(&info)).and_then(|()| lines.flush()).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = listing::info_text(&info);
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn verify(g: &GlobalArgs, a: VerifyArgs) -> Result<ExitCode> {
    let (archive, name) = open_archive(&a.archive, g, WorkloadProfile::ExtractMany)?;
    let report = archive.verify().with_context(|| format!("verifying {}", name))?;
    if a.json {
        let mut lines = json::Lines::stdout();
        for d in &report.damaged {
            lines.write(&json::damaged(d)).context("writing to stdout")?;
        }
        for p in &report.damaged_pages {
            lines.write(&json::damaged_page(p)).context("writing to stdout")?;
        }
        lines
            .write(&json::verify_summary(&report))
            .and_then(|()| lines.flush())
            .context("writing to stdout")?;
    } else {
        for d in &report.damaged {
            eprintln!("lockbox: damaged: {}: {}", d.path, d.reason);
        }
    }
    if report.torn_tail_bytes > 0 {
        eprintln!(
            "lockbox: warning: {}: {} bytes after the last committed trailer, ignored (an interrupted \
             add, update or rm; lockbox repair cuts them off)",
            Quoted::path(&a.archive),
            report.torn_tail_bytes
        );
    }
    if report.is_ok() {
        if !g.quiet && !a.json {
            eprintln!(
                "{}: OK: {} files, {} bytes, {} pages authenticated",
                name, report.files, report.bytes, report.pages
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "lockbox: verifying {}: {} damaged entries, {} damaged pages",
        name,
        report.damaged.len(),
        report.damaged_pages.len()
    );
    Ok(ExitCode::from(EXIT_AUTH))
}

pub fn keygen(a: KeygenArgs) -> Result<ExitCode> {
    keys::keygen(a.output.as_deref(), a.pq, a.symmetric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_paths_are_normalised() {
        assert_eq!(filter_path(b"./a/b/".to_vec()), b"a/b");
        assert_eq!(filter_path(b"a//".to_vec()), b"a");
        assert_eq!(filter_path(b"/".to_vec()), b"/");
        assert_eq!(filter_path(b"a\xff".to_vec()), b"a\xff");
    }
}
